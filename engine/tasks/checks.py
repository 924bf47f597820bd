"""Golden-task checks: the named assertions a ``task.yaml`` makes about a finished run.

A check is one ``{name: argument}`` item (or a bare name when it takes no argument). Each
reads the run's workspace, its rows in the store, or both, and returns a ``CheckResult`` whose
message says what was expected and what was found. ``validate_checks`` refuses unknown names
and malformed arguments before a run starts, naming the valid checks.

``resumed`` is proven from the store: the run has ``effect_resolved`` events (a later process
settled a call an earlier one left in flight), or an earlier process left the run unfinished
(``crashed`` or ``interrupted`` after K committed steps, read from the store between attempts)
and a later one committed more steps.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.store.base import RunReader
from engine.vocabulary.errors import UsageError
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import FINAL_ANSWER

logger = logging.getLogger(__name__)

COMMAND_TIMEOUT_S = 60.0
OUTPUT_TAIL_CHARS = 600
"""Output of a failed ``command_succeeds`` shown in its message."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One process's drive of a run, as read from the store when that process ended."""

    how: str
    """``subprocess`` (the first attempt of a task with faults) or ``in-process``."""
    status: str
    steps: int
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What a check may look at: the run's rows, its workspace, the task's folder."""

    store: RunReader
    run_id: str
    workspace: Path
    task_dir: Path
    fixture: Path
    attempts: Sequence[Attempt] = ()
    command_timeout_s: float = COMMAND_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict."""

    name: str
    """The check and its subject, e.g. ``file_contains inventory.py``."""
    ok: bool
    message: str
    """Expected vs found (on failure) or what was confirmed (on success)."""

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "message": self.message}


@dataclass(frozen=True, slots=True)
class _Check:
    fn: Callable[[CheckContext, Any], CheckResult]
    shape: str
    """The argument's form, shown in errors."""
    parse: Callable[[Any], Any]
    """Turns the YAML argument into the check's argument; ``ValueError`` when malformed."""
    takes_argument: bool = True


CheckFn = Callable[[CheckContext, Any], CheckResult]
CHECKS: dict[str, _Check] = {}
"""Every check by name; filled by ``@check`` below."""


def check(name: str, shape: str, parse: Callable[[Any], Any],
          takes_argument: bool = True) -> Callable[[CheckFn], CheckFn]:
    """Register ``fn`` as the check ``name`` whose argument ``parse`` validates."""
    def register(fn: CheckFn) -> CheckFn:
        CHECKS[name] = _Check(fn, shape, parse, takes_argument)
        return fn
    return register


# -- argument shapes ----------------------------------------------------------------------


def _text(value: Any) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool) or value == "":
        raise ValueError("a non-empty string")
    return str(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError("a number >= 0")
    return float(value)


def _flag(value: Any) -> bool:
    if value is not True:
        raise ValueError("true (or the bare name)")
    return True


def _mapping(required: Sequence[str], optional: Sequence[str] = (),
             one_of: Sequence[str] = ()) -> Callable[[Any], dict[str, Any]]:
    def parse(value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ValueError("a mapping")
        allowed = {*required, *optional, *one_of}
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ValueError(f"a mapping without {', '.join(map(repr, unknown))}")
        missing = [k for k in required if k not in value]
        if missing:
            raise ValueError(f"a mapping with {', '.join(map(repr, missing))}")
        if one_of and sum(k in value for k in one_of) != 1:
            raise ValueError(f"a mapping with exactly one of {' or '.join(one_of)}")
        return {k: _text(v) for k, v in value.items()}
    return parse


def _command(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {"command": _text(value)}
    if "command" not in value or set(value) - {"command", "timeout_s"}:
        raise ValueError("a command, or a mapping with 'command' and optionally 'timeout_s'")
    out: dict[str, Any] = {"command": _text(value["command"])}
    if "timeout_s" in value:
        out["timeout_s"] = _number(value["timeout_s"])
    return out


# -- checking -------------------------------------------------------------------------------


def check_names() -> list[str]:
    """Every check a task may use, sorted."""
    return sorted(CHECKS)


def parse_check(item: Any, where: str = "checks") -> tuple[str, Any]:
    """``(name, argument)`` of one ``checks`` item; ``UsageError`` naming the valid forms."""
    if isinstance(item, str):
        name, raw = item, True
    elif isinstance(item, Mapping) and len(item) == 1:
        ((name, raw),) = item.items()
    else:
        raise UsageError(f"{where}: each check is one `name: argument` mapping (or a bare "
                         f"name), got {item!r}")
    spec = CHECKS.get(str(name))
    if spec is None:
        raise UsageError(f"{where}: unknown check {name!r}; valid checks: "
                         f"{', '.join(check_names())}")
    if isinstance(item, str) and spec.takes_argument:
        raise UsageError(f"{where}: check {name!r} needs an argument: {name}: {spec.shape}")
    try:
        return str(name), spec.parse(raw)
    except ValueError as exc:
        raise UsageError(f"{where}: check {name!r} takes {exc} ({name}: {spec.shape}), "
                         f"got {raw!r}") from None


def validate_checks(items: Sequence[Any], where: str) -> list[tuple[str, Any]]:
    """Every item parsed, or ``UsageError`` for the first bad one (``where[i]`` in it)."""
    return [parse_check(item, f"{where}[{i}]") for i, item in enumerate(items)]


def run_checks(items: Sequence[Any], ctx: CheckContext, where: str = "checks") -> list[
        CheckResult]:
    """Run every check, in order; a check that raises is a failed check, not a crash."""
    results = []
    for name, arg in validate_checks(items, where):
        try:
            results.append(CHECKS[name].fn(ctx, arg))
        except Exception as exc:  # a broken check must not hide the other verdicts
            logger.debug("check %s raised", name, exc_info=True)
            results.append(CheckResult(name, False, f"the check could not run: "
                                                    f"{type(exc).__name__}: {exc}"))
    return results


def _ok(name: str, message: str) -> CheckResult:
    return CheckResult(name, True, message)


def _fail(name: str, expected: str, found: str) -> CheckResult:
    return CheckResult(name, False, f"expected {expected}; found {found}")


def _short(text: str, limit: int = 200) -> str:
    text = text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"
    return repr(text)


def _workspace_file(ctx: CheckContext, path: str) -> Path:
    target = (ctx.workspace / path).resolve()
    if not target.is_relative_to(ctx.workspace.resolve()):
        raise UsageError(f"check path {path!r} leaves the workspace")
    return target


def _read(ctx: CheckContext, path: str) -> bytes | None:
    target = _workspace_file(ctx, path)
    return target.read_bytes() if target.is_file() else None


# -- files ----------------------------------------------------------------------------------


@check("file_contains", "{path: FILE, text: TEXT}", _mapping(["path", "text"]))
def file_contains(ctx: CheckContext, arg: dict[str, str]) -> CheckResult:
    name = f"file_contains {arg['path']}"
    data = _read(ctx, arg["path"])
    if data is None:
        return _fail(name, f"{arg['path']} containing {_short(arg['text'])}", "no such file")
    text = data.decode("utf-8", "replace")
    if arg["text"] in text:
        return _ok(name, f"{arg['path']} contains {_short(arg['text'])}")
    return _fail(name, f"{arg['path']} containing {_short(arg['text'])}",
                 f"{len(text)} chars without it: {_short(text, 300)}")


@check("file_equals", "{path: FILE, text: TEXT | fixture_file: FILE}",
       _mapping(["path"], one_of=["text", "fixture_file"]))
def file_equals(ctx: CheckContext, arg: dict[str, str]) -> CheckResult:
    name = f"file_equals {arg['path']}"
    if "fixture_file" in arg:
        source = (ctx.task_dir / arg["fixture_file"])
        if not source.is_file():
            return _fail(name, f"the expected file {source}", "no such file")
        want, what = source.read_bytes(), f"the bytes of {arg['fixture_file']}"
    else:
        want, what = arg["text"].encode("utf-8"), _short(arg["text"])
    data = _read(ctx, arg["path"])
    if data is None:
        return _fail(name, f"{arg['path']} equal to {what}", "no such file")
    if data == want:
        return _ok(name, f"{arg['path']} equals {what}")
    return _fail(name, f"{arg['path']} equal to {what}",
                 f"{_short(data.decode('utf-8', 'replace'), 300)}{_first_difference(data, want)}")


def _first_difference(got: bytes, want: bytes) -> str:
    got_lines, want_lines = got.split(b"\n"), want.split(b"\n")
    for i, (g, w) in enumerate(zip(got_lines, want_lines, strict=False), 1):
        if g != w:
            return f" (first difference at line {i}: {w!r} expected, {g!r} found)"
    return f" ({len(got_lines)} lines instead of {len(want_lines)})"


@check("file_unchanged", "FILE", _text)
def file_unchanged(ctx: CheckContext, path: str) -> CheckResult:
    name = f"file_unchanged {path}"
    original = ctx.fixture / path
    if not original.is_file():
        return _fail(name, f"{path} in the fixture", "no such file in the fixture")
    want = original.read_bytes()
    data = _read(ctx, path)
    if data is None:
        return _fail(name, f"{path} unchanged", "the file was deleted")
    if data == want:
        return _ok(name, f"{path} has the fixture's bytes")
    return _fail(name, f"{path} unchanged from the fixture",
                 f"it changed{_first_difference(data, want)}")


# -- commands -------------------------------------------------------------------------------


@check("command_succeeds", "COMMAND | {command: COMMAND, timeout_s: SECONDS}", _command)
def command_succeeds(ctx: CheckContext, arg: dict[str, Any]) -> CheckResult:
    command = arg["command"]
    name = f"command_succeeds {command}"
    timeout = arg.get("timeout_s") or ctx.command_timeout_s
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGINE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = subprocess.run(["bash", "-c", command], cwd=ctx.workspace, env=env,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return _fail(name, f"`{command}` to exit 0 within {timeout:g} s", "it timed out")
    if proc.returncode == 0:
        return _ok(name, f"`{command}` exited 0")
    output = (proc.stdout + proc.stderr).strip()
    tail = output[-OUTPUT_TAIL_CHARS:] if output else "no output"
    return _fail(name, f"`{command}` to exit 0", f"exit code {proc.returncode}: {tail}")


# -- the run's rows -------------------------------------------------------------------------


@check("run_status", "completed | failed | interrupted | crashed | running", _text)
def run_status(ctx: CheckContext, status: str) -> CheckResult:
    info = ctx.store.get_run(ctx.run_id)
    name = f"run_status {status}"
    if info.status == status:
        return _ok(name, f"the run ended {status} in state {info.state}")
    error = f" (error: {info.error})" if info.error else ""
    return _fail(name, f"status {status}", f"{info.status} in state {info.state}{error}")


@check("max_steps", "N", _number)
def max_steps(ctx: CheckContext, limit: float) -> CheckResult:
    steps = ctx.store.get_run(ctx.run_id).steps
    name = f"max_steps {limit:g}"
    if steps <= limit:
        return _ok(name, f"{steps} steps")
    return _fail(name, f"at most {limit:g} steps", f"{steps} steps")


@check("max_cost_usd", "X", _number)
def max_cost_usd(ctx: CheckContext, limit: float) -> CheckResult:
    cost = ctx.store.get_run(ctx.run_id).cost_usd
    name = f"max_cost_usd {limit:g}"
    if cost is None:
        return _fail(name, f"a cost of at most ${limit:g}",
                     "an unknown cost (a model without a price in prices.yaml)")
    if cost <= limit:
        return _ok(name, f"${cost:.4f}")
    return _fail(name, f"a cost of at most ${limit:g}", f"${cost:.4f}")


@check("tool_denied", "TOOL", _text)
def tool_denied(ctx: CheckContext, tool: str) -> CheckResult:
    name = f"tool_denied {tool}"
    rows = ctx.store.audit(ctx.run_id)
    denied = [r for r in rows if r.tool == tool and r.decision == "deny"]
    if denied:
        return _ok(name, f"{tool} denied at step {denied[0].step}: {denied[0].reason}")
    return _fail(name, f"an audit row denying {tool}", _audit_summary(rows))


@check("audit_contains", "{tool: TOOL, decision: allow|deny, decided_by?: WHO, risk?: RISK}",
       _mapping(["tool", "decision"], ["decided_by", "risk"]))
def audit_contains(ctx: CheckContext, arg: dict[str, str]) -> CheckResult:
    wanted = ", ".join(f"{k}={v}" for k, v in arg.items())
    name = f"audit_contains {wanted}"
    rows = ctx.store.audit(ctx.run_id)
    for r in rows:
        if all(str(getattr(r, k)) == v for k, v in arg.items()):
            return _ok(name, f"step {r.step}: {r.tool} {r.decision} by {r.decided_by}")
    return _fail(name, f"an audit row with {wanted}", _audit_summary(rows))


def _audit_summary(rows: Sequence[Any]) -> str:
    if not rows:
        return "no audit rows"
    shown = "; ".join(f"{r.tool} {r.decision} by {r.decided_by} (risk {r.risk})"
                      for r in rows[:8])
    more = f"; and {len(rows) - 8} more" if len(rows) > 8 else ""
    return f"{len(rows)} audit row(s): {shown}{more}"


@check("tool_failed", "TOOL", _text)
def tool_failed(ctx: CheckContext, tool: str) -> CheckResult:
    name = f"tool_failed {tool}"
    events = ctx.store.events(ctx.run_id, (EventKind.TOOL_CALL,))
    failed = [e for e in events if e.payload.get("tool") == tool and e.payload.get("is_error")]
    if failed:
        return _ok(name, f"{tool} returned an error at step {failed[0].step}: "
                         f"{_short(str(failed[0].payload.get('content', '')), 120)}")
    calls = [f"{e.payload.get('tool')} {e.payload.get('outcome')}" for e in events]
    return _fail(name, f"a {tool} call that returned an error",
                 f"{len(calls)} tool call(s): {', '.join(calls) or 'none'}")


@check("compressed", "true", _flag, takes_argument=False)
def compressed(ctx: CheckContext, _: bool) -> CheckResult:
    events = ctx.store.events(ctx.run_id, (EventKind.CONTEXT_COMPRESSED,))
    if events:
        return _ok("compressed", f"{len(events)} context_compressed event(s), first at step "
                                 f"{events[0].step}")
    calls = len(ctx.store.events(ctx.run_id, (EventKind.MODEL_CALL,)))
    return _fail("compressed", "a context_compressed event",
                 f"none in {calls} model call(s)")


@check("resumed", "true", _flag, takes_argument=False)
def resumed(ctx: CheckContext, _: bool) -> CheckResult:
    settled = ctx.store.events(ctx.run_id, (EventKind.EFFECT_RESOLVED,))
    if settled:
        return _ok("resumed", f"{len(settled)} in-flight call(s) settled on resume: "
                              f"{settled[0].payload.get('message', '')}")
    info = ctx.store.get_run(ctx.run_id)
    unfinished = [a for a in ctx.attempts[:-1] if a.status in ("crashed", "interrupted")]
    if unfinished and info.steps > unfinished[0].steps:
        first = unfinished[0]
        return _ok("resumed", f"left {first.status} after {first.steps} steps by one process, "
                              f"continued to {info.steps} steps ({info.status}) by another")
    tried = ", ".join(f"{a.how}: {a.status} after {a.steps} steps" for a in ctx.attempts)
    return _fail("resumed", "an earlier process leaving the run unfinished and a later one "
                            "continuing it (or effect_resolved events)",
                 f"{len(ctx.attempts)} attempt(s) ({tried or 'none recorded'}), "
                 "no effect_resolved events")


@check("final_answer_contains", "TEXT", _text)
def final_answer_contains(ctx: CheckContext, text: str) -> CheckResult:
    name = f"final_answer_contains {text}"
    answer = final_answer(ctx.store, ctx.run_id)
    if answer is None:
        return _fail(name, f"a final answer containing {_short(text)}", "no final answer")
    if text in answer:
        return _ok(name, f"the final answer contains {_short(text)}")
    return _fail(name, f"a final answer containing {_short(text)}", _short(answer, 300))


def final_answer(store: RunReader, run_id: str) -> str | None:
    """The model's final answer: the run's ``final_answer``, else its last assistant text."""
    answer = FINAL_ANSWER.get(store.load_state(run_id).data)
    if isinstance(answer, str):
        return answer
    texts = [m.content for m in store.messages(run_id)
             if m.role == "assistant" and not m.meta.get("summary") and m.content]
    return texts[-1] if texts else None


__all__ = ["Attempt", "CheckContext", "CheckResult", "check_names", "final_answer",
           "parse_check", "run_checks", "validate_checks"]
