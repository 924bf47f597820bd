"""Replay: re-run a recorded run with the model's recorded outputs and compare its tool results.

``python -m engine replay RUN_ID`` builds a script from the run's committed model turns (its
assistant messages, plus the answers to context-compression calls), starts a fresh run of the
same golden task with that script (a fresh copy of the fixture, the task's setup, the same
machine, approval mode, policy, limits; the answers a person gave are given again, in order),
and compares the two runs' tool results one by one:
exactly, else after normalising what legitimately differs between runs (timestamps, durations,
workspace and temporary paths, run ids). It reports the first divergence with both sides, and
every tool whose version changed since the recording. A free task (``--task``) cannot be
replayed: its starting workspace was not recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from engine.permissions.approvals import Answer, ApprovalMode, PendingQuestion
from engine.store.base import RunReader, Store
from engine.tasks.golden import TASK_FILE
from engine.vocabulary.errors import UnknownRunError, UsageError
from engine.vocabulary.events import EventKind
from engine.vocabulary.state import Message, RunInfo

CONTENT_CHARS = 4000
"""Tool output compared per call: what a ``tool_call`` event keeps."""
SHOWN_CHARS = 600
"""Each side of a divergence shown around the first differing character."""
SETTLED = frozenset({"applied", "unknown", "conflict", "failed"})
"""``effect_resolved`` resolutions whose result was made up on resume, not produced by the
tool: counted in the sequence, never compared."""

_RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")
_ISO_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds)\b")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool result of a run, in the order the run produced them."""

    index: int
    step: int
    tool: str
    args: Mapping[str, Any]
    outcome: str
    """``ok``, ``error``, ``denied``, ``cancelled``, or ``settled:<resolution>``."""
    content: str
    version: str | None = None

    @property
    def comparable(self) -> bool:
        return not self.outcome.startswith("settled:")

    def label(self) -> str:
        args = json.dumps(dict(self.args), ensure_ascii=False, default=str)
        args = args if len(args) <= 120 else args[:117] + "..."
        version = f"@{self.version}" if self.version else ""
        return f"#{self.index + 1} {self.tool}{version} {args} (step {self.step}, {self.outcome})"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "step": self.step, "tool": self.tool,
                "args": dict(self.args), "outcome": self.outcome, "version": self.version,
                "content": self.content}


@dataclass(frozen=True, slots=True)
class VersionChange:
    """A tool whose version at recording differs from the current one."""

    tool: str
    recorded: str
    current: str | None
    """None: no built-in tool of that name any more."""

    def __str__(self) -> str:
        now = self.current or "no longer a built-in tool"
        return f"{self.tool}: {self.recorded} when recorded, now {now}"


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first tool result that differs, with both sides (normalised)."""

    index: int
    reason: str
    recorded: ToolOutcome | None
    replayed: ToolOutcome | None
    recorded_text: str
    replayed_text: str
    version_change: VersionChange | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "reason": self.reason,
                "recorded": self.recorded.to_json() if self.recorded else None,
                "replayed": self.replayed.to_json() if self.replayed else None,
                "version_change": str(self.version_change) if self.version_change else None}


@dataclass
class ReplayReport:
    """What a replay found."""

    run_id: str
    replay_run_id: str | None = None
    replay_status: str | None = None
    replay_error: str | None = None
    compared: int = 0
    normalised: int = 0
    """Results equal only after normalisation (timestamps, durations, paths, run ids)."""
    skipped: int = 0
    """Results settled on resume in the recording, not produced by the tool: not compared."""
    divergence: Divergence | None = None
    version_changes: list[VersionChange] = field(default_factory=list)
    kept: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "replay_run_id": self.replay_run_id,
                "replay_status": self.replay_status, "replay_error": self.replay_error,
                "compared": self.compared, "normalised": self.normalised,
                "skipped": self.skipped, "diverged": self.divergence is not None,
                "divergence": self.divergence.to_json() if self.divergence else None,
                "version_changes": [str(v) for v in self.version_changes], "kept": self.kept}


# -- what was recorded ----------------------------------------------------------------------


def recorded_turns(store: RunReader, run_id: str) -> list[dict[str, Any]]:
    """The run's committed model calls, in order, as a ``turns.yaml`` script.

    Assistant messages become ``{text, tool_calls}`` turns; context-compression summaries
    become ``{summary}`` turns (their text from the ``model_call`` events of purpose
    ``summary`` when those match one for one, else from the stored summary message).
    """
    messages = store.messages(run_id)
    summaries = [str(e.payload.get("text") or "")
                 for e in store.events(run_id, (EventKind.MODEL_CALL,))
                 if e.payload.get("purpose") == "summary"]
    summary_messages = [m for m in messages if m.meta.get("summary")]
    exact = len(summaries) == len(summary_messages)
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.meta.get("summary"):
            i = sum(1 for t in turns if "summary" in t)
            turns.append({"summary": summaries[i] if exact else _summary_text(m)})
        elif m.role == "assistant":
            turns.append({"text": m.content,
                          "tool_calls": [{"name": c.name, "args": dict(c.args)}
                                         for c in m.tool_calls]})
    return turns


def _summary_text(m: Message) -> str:
    return m.content.split("\n", 1)[1] if "\n" in m.content else m.content


def tool_outcomes(store: RunReader, run_id: str) -> list[ToolOutcome]:
    """Every tool result the run produced, in order: runs, denials, and calls settled on resume.

    A call whose outcome an earlier process left unknown and that resume settled without
    running it (``applied``, ``unknown``, ``conflict``) takes its place as ``settled:...``.
    """
    effects = {e.call_id: e for e in store.effects(run_id)}
    out: list[ToolOutcome] = []
    kinds = (EventKind.APPROVAL, EventKind.TOOL_CALL, EventKind.EFFECT_RESOLVED)
    for e in store.events(run_id, kinds):
        p = e.payload
        tool, args = str(p.get("tool") or ""), p.get("args") or {}
        if e.kind == EventKind.APPROVAL:
            if p.get("decision") == "deny":
                out.append(ToolOutcome(len(out), e.step, tool, args, "denied",
                                       str(p.get("reason") or "")))
        elif e.kind == EventKind.TOOL_CALL:
            out.append(ToolOutcome(len(out), e.step, tool, args, str(p.get("outcome")),
                                   str(p.get("content") or "")[:CONTENT_CHARS],
                                   p.get("version")))
        elif p.get("resolution") == "recorded" or p.get("resolution") in SETTLED:
            record = effects.get(str(p.get("call_id")))
            result = (record.result or {}) if record else {}
            outcome = "ok" if p.get("resolution") == "recorded" else f"settled:{p['resolution']}"
            if outcome == "ok" and result.get("is_error"):
                outcome = "error"
            out.append(ToolOutcome(len(out), e.step, tool, record.args if record else {},
                                   outcome, str(result.get("content") or "")[:CONTENT_CHARS],
                                   record.version if record else None))
    return out


@dataclass
class RecordedAnswers:
    """A person's recorded answers, given again to the replay: each question gets the first
    unused answer about the same tool and arguments; a question never answered is denied."""

    answers: list[tuple[str, dict[str, Any], Answer]]

    @classmethod
    def of_run(cls, store: RunReader, run_id: str) -> RecordedAnswers:
        answers: list[tuple[str, dict[str, Any], Answer]] = []
        for e in store.events(run_id, (EventKind.APPROVAL,)):
            p = e.payload
            by = p.get("decided_by")
            if by not in ("user", "user-always"):
                continue
            answer: Answer = "no" if p.get("decision") != "allow" else (
                "always" if by == "user-always" else "yes")
            answers.append((str(p.get("tool") or ""), dict(p.get("args") or {}), answer))
        return cls(answers)

    async def __call__(self, questions: Sequence[PendingQuestion]) -> list[Answer]:
        return [self._answer(q.call.name, dict(q.call.args)) for q in questions]

    def _answer(self, tool: str, args: dict[str, Any]) -> Answer:
        for i, (t, a, answer) in enumerate(self.answers):
            if (t, a) == (tool, args):
                del self.answers[i]
                return answer
        return "no"


def version_changes(outcomes: Sequence[ToolOutcome],
                    current: Mapping[str, str]) -> list[VersionChange]:
    """Tools whose recorded version differs from ``current`` (MCP tools are not checked)."""
    seen: dict[str, VersionChange] = {}
    for o in outcomes:
        if not o.version or o.tool in seen or o.tool.startswith("mcp__"):
            continue
        now = current.get(o.tool)
        if now != o.version:
            seen[o.tool] = VersionChange(o.tool, o.version, now)
    return list(seen.values())


def current_versions() -> dict[str, str]:
    """The built-in tools' versions in this checkout."""
    from engine.session.compose import builtin_tools

    return {s.name: s.version for s in builtin_tools()}


# -- comparing ------------------------------------------------------------------------------


def normalise(text: str, paths: Sequence[str] = ()) -> str:
    """``text`` with run-specific parts replaced: the runs' workspaces (``<workspace>``), other
    temporary paths (``<tmp>``), run ids, timestamps and durations."""
    for path in sorted((p for p in paths if p), key=len, reverse=True):
        text = text.replace(path, "<workspace>")
    tmp = re.escape(tempfile.gettempdir().rstrip("/"))
    text = re.sub(tmp + r"/[^\s'\":,)\]]+", "<tmp>", text)
    text = _RUN_ID.sub("<run-id>", text)
    text = _ISO_TIME.sub("<time>", text)
    text = _CLOCK.sub("<time>", text)
    return _DURATION.sub("<duration>", text)


def compare(recorded: Sequence[ToolOutcome], replayed: Sequence[ToolOutcome],
            paths: Sequence[str], report: ReplayReport,
            changes: Sequence[VersionChange] = ()) -> None:
    """Fill ``report`` with counts and the first divergence of ``replayed`` from ``recorded``."""
    by_tool = {c.tool: c for c in changes}
    for i in range(max(len(recorded), len(replayed))):
        rec = recorded[i] if i < len(recorded) else None
        new = replayed[i] if i < len(replayed) else None
        if rec is not None and not rec.comparable:
            report.skipped += 1
            continue
        if rec is not None and new is not None and rec.content == new.content and _same_call(
                rec, new):
            report.compared += 1
            continue
        divergence = _diverge(i, rec, new, paths)
        if divergence is None:
            report.compared += 1
            report.normalised += 1
            continue
        tool = (rec or new).tool  # type: ignore[union-attr]
        report.divergence = Divergence(*divergence, by_tool.get(tool))
        return


def _same_call(rec: ToolOutcome, new: ToolOutcome) -> bool:
    return (rec.tool, dict(rec.args), rec.outcome) == (new.tool, dict(new.args), new.outcome)


def _diverge(i: int, rec: ToolOutcome | None, new: ToolOutcome | None,
             paths: Sequence[str]) -> tuple[int, str, ToolOutcome | None, ToolOutcome | None,
                                            str, str] | None:
    """The divergence's fields, or None when the two results are equal once normalised."""
    if rec is None:
        assert new is not None
        return i, f"the replay made an extra call: {new.label()}", None, new, "", new.content
    if new is None:
        return i, f"the replay never made {rec.label()}", rec, None, rec.content, ""
    if (rec.tool, dict(rec.args)) != (new.tool, dict(new.args)):
        return (i, f"a different call: {rec.label()} recorded, {new.label()} replayed", rec,
                new, rec.content, new.content)
    a, b = normalise(rec.content, paths), normalise(new.content, paths)
    if rec.outcome != new.outcome:
        return i, f"{rec.tool} was {rec.outcome} when recorded, {new.outcome} now", rec, new, a, b
    if a == b:
        return None
    return i, f"{rec.tool} returned a different result", rec, new, a, b


# -- replaying ------------------------------------------------------------------------------


def replay_run(store: Store, run_id: str, *, work_dir: Path,
               versions: Mapping[str, str] | None = None) -> ReplayReport:
    """Replay ``run_id`` from ``store`` in a fresh database under ``work_dir`` and compare."""
    from engine.core.interrupts import drive_until_interrupted
    from engine.harness.evals import without_faults
    from engine.runs.service import Runs
    from engine.store.sqlite import SqliteStore

    info = store.get_run(run_id)
    config = info.config
    golden = config.get("golden")
    if not golden:
        raise UsageError(f"run {info.run_id} ran a free task (--task), whose starting workspace "
                         "was not recorded: replay needs a golden task (run --golden DIR)")
    if not (Path(golden) / TASK_FILE).exists():
        raise UsageError(f"run {info.run_id}: its golden task {golden} no longer exists")
    turns = recorded_turns(store, info.run_id)
    if not turns:
        raise UsageError(f"run {info.run_id} has no committed model turns to replay")
    recorded = tool_outcomes(store, info.run_id)
    answers = RecordedAnswers.of_run(store, info.run_id)
    approval: ApprovalMode = config.get("approval") or "policy"
    if answers.answers:
        approval = "interactive"  # the recorded answers stand in for the person
    report = ReplayReport(info.run_id)
    report.version_changes = version_changes(recorded, versions or current_versions())
    work_dir.mkdir(parents=True, exist_ok=True)
    turns_path = work_dir / "turns.yaml"
    turns_path.write_text(json.dumps(turns, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    db_path = work_dir / "engine.db"
    replay_store = SqliteStore(db_path)
    try:
        runs = Runs(replay_store)
        with without_faults():
            prepared = runs.prepare(
                Path(config["machine_path"]), golden=golden, model=f"scripted:{turns_path}",
                approval=approval, policy=config.get("policy"),
                limits=config.get("limits") or {}, context=config.get("context") or {},
                prompter=answers if answers.answers else None)
        result = anyio.run(partial(runs.drive, prepared, driver=drive_until_interrupted))
        new_info = replay_store.get_run(prepared.run_id)
        report.replay_run_id, report.replay_status = new_info.run_id, new_info.status
        report.replay_error = result.error
        replayed = tool_outcomes(replay_store, new_info.run_id)
    finally:
        replay_store.close()
    compare(recorded, replayed, [*lineage_workspaces(store, info), new_info.workspace],
            report, report.version_changes)
    return report


def lineage_workspaces(store: RunReader, info: RunInfo) -> list[str]:
    """The run's workspace, and for a fork those of the runs it came from: the results of the
    steps a fork copied name their folders."""
    folders = [info.workspace]
    while info.forked_from is not None and len(folders) < 100:
        try:
            info = store.get_run(info.forked_from.run_id)
        except UnknownRunError:  # that run is gone: its folder is not known
            break
        folders.append(info.workspace)
    return folders


def format_report(report: ReplayReport) -> str:
    """The report as lines for a terminal."""
    lines = [f"replayed run {report.run_id} as {report.replay_run_id} "
             f"({report.replay_status}): {report.compared} tool result(s) match"
             + (f", {report.normalised} after normalising times, durations and paths"
                if report.normalised else "")
             + (f", {report.skipped} settled on resume not compared" if report.skipped else "")]
    for change in report.version_changes:
        lines.append(f"tool version changed: {change}")
    d = report.divergence
    if d is None:
        lines.append("no divergence")
    else:
        lines.append(f"first divergence at tool result #{d.index + 1}: {d.reason}")
        if d.version_change:
            lines.append(f"  note: {d.version_change}")
        lines.append(f"  recorded: {d.recorded.label() if d.recorded else '(none)'}")
        lines.extend(_indent(_around(d.recorded_text, d.replayed_text)))
        lines.append(f"  replayed: {d.replayed.label() if d.replayed else '(none)'}")
        lines.extend(_indent(_around(d.replayed_text, d.recorded_text)))
    if report.replay_error:
        lines.append(f"replay run error: {report.replay_error}")
    if report.kept:
        lines.append(f"replay database kept: {report.kept}")
    return "\n".join(lines) + "\n"


def _around(text: str, other: str) -> str:
    """``text`` near its first difference from ``other``, at most ``SHOWN_CHARS`` long."""
    first = next((i for i, (a, b) in enumerate(zip(text, other, strict=False)) if a != b),
                 min(len(text), len(other)))
    start = max(0, first - SHOWN_CHARS // 3)
    cut = text[start:start + SHOWN_CHARS]
    return ("..." if start else "") + cut + ("..." if start + SHOWN_CHARS < len(text) else "")


def _indent(text: str) -> list[str]:
    return [f"    | {line}" for line in (text or "(empty)").split("\n")]


def replay_main(args: argparse.Namespace) -> int:
    """``python -m engine replay RUN_ID``: exit 0 without divergence, 1 with one."""
    from engine.store.sqlite import SqliteStore

    db = Path(getattr(args, "db", None) or _default_db())
    if not db.exists():
        raise UsageError(f"{db}: no database (pass --db PATH)")
    store = SqliteStore(db)
    work_dir = Path(tempfile.mkdtemp(prefix="turnstile-replay-"))
    try:
        report = replay_run(store, args.run_id, work_dir=work_dir)
    except BaseException:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise
    finally:
        store.close()
    if report.divergence is None and not getattr(args, "keep", False):
        shutil.rmtree(work_dir, ignore_errors=True)
    else:
        report.kept = str(work_dir / "engine.db")
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(report.to_json(), indent=2, default=str) + "\n")
    else:
        sys.stdout.write(format_report(report))
    return 0 if report.divergence is None else 1


def _default_db() -> Path:
    return Path(os.environ.get("ENGINE_DB") or Path(".engine") / "engine.db")


__all__ = ["Divergence", "RecordedAnswers", "ReplayReport", "ToolOutcome", "VersionChange",
           "compare", "current_versions", "format_report", "normalise", "recorded_turns",
           "replay_main", "replay_run", "tool_outcomes", "version_changes"]
