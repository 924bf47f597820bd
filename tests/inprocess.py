"""Runs built as ``python -m engine run`` builds them, driven in this process.

The one place the in-process tests construct a runner: through the composition root
(``engine.session.compose``) with a real SQLite file, the built-in tools and the scripted model, so
when the way a runner is built changes, only this module changes. No subprocess is started
for the engine itself (tools still run their commands).

An interruption here is in-process: ``crash_at`` raises ``Crash`` at a fault point (the
``ENGINE_FAULTS`` points), ``interrupt_at`` cancels the drive as Ctrl-C does. Unlike SIGKILL,
a ``Crash`` unwinds: the runner releases its lease and buffered rows are written, so the run
stays ``running`` with its step in flight and the ledger as it was at that instant. Tests
that need a process really killed stay subprocess tests (``test_runner``, ``test_recovery``).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from engine.actions.context import ActionContext
from engine.actions.registry import ACTIONS
from engine.cli.console import make_prompter
from engine.core.runner import RunResult
from engine.session.compose import Prepared, RunRequest, execute, prepare_new, prepare_resume
from engine.store.sqlite import SqliteStore
from engine.vocabulary.state import Message, Outcome, RunState, Usage

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "machines" / "coding_agent.yaml"
DEMO = ROOT / "golden_tasks" / "demo_fix_test"


class Crash(BaseException):
    """Stands for the process dying at a fault point (not an engine error: nothing catches it)."""


class _At:
    """Calls ``then`` the ``n``-th time the runner reaches ``point`` in ``state``."""

    def __init__(self, spec: str, then: Callable[[], None]) -> None:
        point, state, n = spec.split(":")
        self.key, self.n, self.then, self.seen = (point, state), int(n), then, 0

    def __call__(self, point: str, state: str) -> None:
        if (point, state) == self.key:
            self.seen += 1
            if self.seen == self.n:
                self.then()


def _crash() -> None:
    raise Crash


@dataclass(frozen=True)
class Started:
    """A run as the composition root prepared it; tests hold its id, the helper the rest."""

    run_id: str
    prepared: Prepared


class InProcess:
    """One database and the runs started on it; ``events`` is everything the runs showed."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.db = tmp / "engine.db"
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._store: SqliteStore | None = None

    # -- the store ----------------------------------------------------------------------

    @property
    def store(self) -> SqliteStore:
        """The open store (reopened after a crash, as the next process would)."""
        if self._store is None:
            self._store = SqliteStore(self.db)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- building runs ------------------------------------------------------------------

    def workspace(self, files: Mapping[str, str] | None = None, name: str = "ws") -> Path:
        """A workspace folder holding ``files``."""
        ws = self.tmp / name
        ws.mkdir(exist_ok=True)
        for rel, text in (files or {}).items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        return ws

    def start(self, turns: Sequence[Mapping[str, Any]] | None = None, *,
              task: str | None = "do the task", workspace: Path | None = None,
              machine: Path = AGENT, policy: str | None = None, approval: str = "policy",
              golden: Path | None = None, limits: Mapping[str, Any] | None = None
              ) -> Started:
        """A new run as ``run MACHINE --task ... --model scripted:TURNS`` prepares it (not yet
        written to the store: ``create`` or ``drive`` does that)."""
        model = None
        if turns is not None:
            path = self._file("turns.json", json.dumps(list(turns)))
            model = f"scripted:{path}"
        req = RunRequest(
            machine=machine, task=None if golden else task, golden=golden,
            workspace=None if golden else (workspace or self.workspace()), model=model,
            approval=approval,
            policy=self._file("policy.yaml", policy) if policy is not None else None,
            limits=dict(limits or {}))
        prepared = prepare_new(req, self.store, db_path=self.db, observer=self._observe,
                               prompter=None)
        return Started(prepared.state.run_id, prepared)

    def create(self, run: Started) -> RunState:
        """Write a prepared free-task run to the store without driving it."""
        prepared = run.prepared
        assert prepared.create is not None
        return prepared.runner.create(prepared.state.run_id, **prepared.create)

    def run(self, turns: Sequence[Mapping[str, Any]] | None = None, **kw: Any) -> RunResult:
        """Start and drive a run to its end."""
        result = self.drive(self.start(turns, **kw))
        assert result is not None
        return result

    # -- driving ------------------------------------------------------------------------

    def drive(self, run: Started, *, crash_at: str | None = None,
              interrupt_at: str | None = None) -> RunResult | None:
        """Drive ``run`` as the CLI does; None when ``crash_at`` or ``interrupt_at``
        (``POINT:STATE:N``, as in ``ENGINE_FAULTS``) stopped it."""
        prepared = run.prepared
        if crash_at:
            prepared.runner.parts.fault = _At(crash_at, _crash)
        try:
            if interrupt_at:
                return anyio.run(self._interruptible, prepared, interrupt_at)
            return anyio.run(lambda: execute(prepared))
        except BaseException as exc:
            if not _holds(exc, Crash):
                raise
            self.close()  # the next process opens the database afresh
            return None

    async def _interruptible(self, prepared: Prepared, at: str) -> RunResult | None:
        with anyio.CancelScope() as scope:
            prepared.runner.parts.fault = _At(at, scope.cancel)
            return await execute(prepared)
        return None

    def resume(self, run_id: str, *, approval: str | None = None, answers: str | None = None,
               crash_at: str | None = None) -> RunResult | None:
        """``resume RUN_ID`` (with ``--approval``); ``answers`` are what a person types at
        the prompts (one line each), read by the real interactive prompter."""
        with self._prompter(answers) as prompter:
            prepared = prepare_resume(run_id, self.store, observer=self._observe,
                                      prompter=prompter, overrides={"approval": approval})
            return self.drive(Started(run_id, prepared), crash_at=crash_at)

    # -- one action ---------------------------------------------------------------------

    def context(self, run: Started, state: str, *, data: Mapping[str, Any] | None = None,
                messages: Sequence[Message] = (), step: int = 1, usage: Usage | None = None,
                resumed: bool = False) -> ActionContext:
        """The context the runner gives ``state``'s action, for a run created in the store."""
        prepared = run.prepared
        base = prepared.state
        now = RunState(base.run_id, base.machine, state, step, tuple(messages),
                       {**base.data, **(data or {})}, usage or Usage())
        spec = prepared.machine.states[state]
        return ActionContext(now, prepared.machine, spec, prepared.runner.parts,
                             resumed=resumed)

    def act(self, ctx: ActionContext) -> Outcome:
        """Run the context's state's action with its validated ``with:`` params."""
        info = ACTIONS[ctx.state.action or ""]
        params = info.params.model_validate(dict(ctx.state.params))
        return anyio.run(info.fn, ctx, params)

    # -- reading back -------------------------------------------------------------------

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        """Payloads of the events of ``kind`` shown so far, in order."""
        return [p for k, p in self.events if k == kind]

    def tool_results(self, run_id: str) -> list[str]:
        return [m.content for m in self.store.messages(run_id) if m.role == "tool"]

    def _observe(self, kind: str, payload: Mapping[str, Any]) -> None:
        self.events.append((kind, dict(payload)))

    def _file(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text)
        return path

    @contextmanager
    def _prompter(self, answers: str | None) -> Iterator[Any]:
        if answers is None:
            yield None
            return
        fd = os.open(self._file("answers.txt", answers), os.O_RDONLY)
        try:
            yield make_prompter(Console(file=io.StringIO(), no_color=True), fd)
        finally:
            os.close(fd)


def _holds(exc: BaseException, kind: type[BaseException]) -> bool:
    """``exc`` is ``kind`` or an exception group with one somewhere inside."""
    if isinstance(exc, kind):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_holds(e, kind) for e in exc.exceptions)
    return _holds(exc.__cause__, kind) if exc.__cause__ is not None else False
