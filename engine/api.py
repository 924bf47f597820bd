"""The Python API: load or build a machine, run it with Python tools and any model, from code.

A run started here is the same run the CLI starts (``engine.session`` wires both), stored in
the same SQLite database, resumable from Python or with ``python -m engine resume``. The
library never installs a signal handler: cancelling the task that awaits ``run`` or ``resume``
interrupts the run cleanly (status ``interrupted``, resumable), from any thread and any
asyncio or anyio event loop.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.tooling.functions import tool
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec

if TYPE_CHECKING:
    import anyio.abc
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from engine.core.runner import RunResult
    from engine.models.base import ModelClient
    from engine.permissions.approvals import Answer as _Answer
    from engine.permissions.approvals import PendingQuestion, Prompter
    from engine.spec.model import MachineSpec, StateSpec
    from engine.state import Message, RunInfo, StepRecord
    from engine.store.base import Event

DEFAULT_DB = Path(".engine") / "engine.db"
"""Where runs are stored unless ``db=`` says otherwise (the CLI's default too)."""


# -- machines ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """A checked machine: loaded from YAML (``load_machine``) or built in Python
    (``build_machine``); both go through the same validation."""

    spec: MachineSpec
    definition: Mapping[str, Any] | None = None
    """The Python values it was built from (None for a YAML file); stored with its runs."""
    tools: tuple[ToolSpec, ...] = ()
    """Tools given as objects in ``build_machine(tools=...)`` (run with every run)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def path(self) -> Path:
        return Path(self.spec.path)

    @property
    def states(self) -> Mapping[str, StateSpec]:
        return self.spec.states

    def render(self, fmt: Literal["mermaid", "dot"] = "mermaid") -> str:
        """The state diagram as Mermaid or Graphviz DOT text."""
        return render(self, fmt)


def load_machine(path: str | Path) -> Machine:
    """Read and check a machine file; ``SpecError`` lists every problem with its line."""
    from engine.actions.registry import ACTIONS
    from engine.spec import load_machine as load_spec

    return Machine(load_spec(path, ACTIONS))


def build_machine(*, name: str, initial: str, states: Mapping[str, Mapping[str, Any]],
                  tools: Sequence[str | ToolSpec | Callable[..., Any]] = (),
                  **fields: Any) -> Machine:
    """The machine a YAML file with these fields would declare, checked the same way.

    ``states`` maps each state to ``{"action": ..., "with": {...}, "on": {...}}`` or
    ``{"final": True}``; ``tools`` takes built-in names, ``module:function`` references and
    ``@tool`` functions. Other top-level fields (``limits``, ``context``, ``model``, ...) are
    passed by keyword.
    """
    from engine.actions.registry import ACTIONS
    from engine.spec import machine_from_definition
    from engine.tooling.functions import spec_of

    names: list[str] = []
    objects: list[ToolSpec] = []
    for entry in tools:
        if isinstance(entry, str):
            names.append(entry)
        else:
            found = spec_of(entry, repr(entry))
            objects.append(found)
            names.append(found.source.removeprefix("python:") if _importable(found)
                         else found.name)
    definition = {"name": name, "initial": initial, **fields, "tools": names,
                  "states": {k: dict(v) for k, v in states.items()}}
    shown = f"<machine {name}>"
    spec = machine_from_definition(definition, ACTIONS, shown)
    return Machine(spec, definition, tuple(s for s in objects if not _importable(s)))


def render(machine: Machine | str | Path, fmt: Literal["mermaid", "dot"] = "mermaid") -> str:
    """The machine's state diagram as Mermaid (default) or Graphviz DOT source."""
    from engine.ui.diagram import diagram_text

    return diagram_text(_machine(machine).spec, fmt)


def _machine(machine: Machine | str | Path) -> Machine:
    return machine if isinstance(machine, Machine) else load_machine(machine)


def _importable(spec: ToolSpec) -> bool:
    """A function tool a new process can import again (not one defined in ``__main__`` or
    inside a function)."""
    ref = spec.source.removeprefix("python:")
    return (spec.source.startswith("python:") and not ref.startswith("__main__:")
            and "<locals>" not in ref)


# -- events and approvals ---------------------------------------------------------------


@dataclass(frozen=True)
class RunEvent:
    """Something that happened in a run, as it happens.

    Kinds include ``step_begin`` and ``step_commit`` (every step), ``text_delta`` (the model's
    text as it streams), ``tool_call`` (a finished call with its result), ``approval_needed``
    (the approver is being asked), ``model_call`` and ``run_end`` (the last one, with
    ``status``).
    """

    kind: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class ApprovalRequest:
    """One tool call the policy leaves to the approver."""

    run_id: str
    call_id: str
    tool: str
    args: Mapping[str, Any]
    risk: str
    reason: str
    preview: str


Answer = bool | Literal["yes", "no", "always"]
"""``True``/``"yes"`` allows the call, ``"always"`` allows it and its kind for the rest of the
run, ``False``/``"no"`` (or anything else) denies it."""


class AsyncApprover(Protocol):
    """An approver object: ``approve`` may be a plain or an ``async`` method."""

    def approve(self, request: ApprovalRequest) -> Answer | Awaitable[Answer]: ...


Approver = Callable[[ApprovalRequest], Answer | Awaitable[Answer]] | AsyncApprover
EventHandler = Callable[[RunEvent], None]


def _prompter(approver: Approver, run_id: Callable[[], str],
              observer: Callable[[str, Mapping[str, Any]], None]) -> Prompter:
    """The engine's prompter, answered by the caller's approver, one call at a time."""
    decide = approver.approve if hasattr(approver, "approve") else approver

    async def ask(questions: Sequence[PendingQuestion]) -> list[_Answer]:
        answers: list[_Answer] = []
        for q in questions:
            request = ApprovalRequest(run_id(), q.call.id, q.call.name, dict(q.call.args),
                                      q.decision.risk, q.decision.reason, q.decision.preview)
            observer("approval_needed", {"call_id": request.call_id, "tool": request.tool,
                                         "risk": request.risk, "reason": request.reason})
            answer = decide(request)
            if inspect.isawaitable(answer):
                answer = await answer
            answers.append(_answer(answer))
        return answers

    return ask


def _answer(value: object) -> _Answer:
    if value is True or value == "yes":
        return "yes"
    if value == "always":
        return "always"
    return "no"  # anything unclear denies


# -- running ----------------------------------------------------------------------------


@dataclass
class _Wiring:
    """What ``run`` and ``resume`` share: the database, the observer, the approver."""

    db: Path
    on_event: EventHandler | None
    approver: Approver | None
    run_id: str = ""
    extra: list[Callable[[str, Mapping[str, Any]], None]] = field(default_factory=list)

    def observe(self, kind: str, payload: Mapping[str, Any]) -> None:
        event = RunEvent(kind, payload)
        if self.on_event is not None:
            self.on_event(event)
        for sink in self.extra:
            sink(kind, payload)

    def prompter(self) -> Prompter | None:
        if self.approver is None:
            return None
        return _prompter(self.approver, lambda: self.run_id, self.observe)


async def run(machine: Machine | str | Path, *, task: str,
              tools: Sequence[ToolSpec | Callable[..., Any]] = (),
              model: str | ModelClient | None = None, db: str | Path | None = None,
              workspace: str | Path | None = None, approver: Approver | None = None,
              approval: Literal["policy", "auto", "deny", "park"] | None = None,
              policy: str | Path | None = None, on_event: EventHandler | None = None,
              limits: Mapping[str, Any] | None = None,
              model_options: Mapping[str, Any] | None = None) -> RunResult:
    """Start a run of ``machine`` on ``task`` and drive it to its end.

    ``tools`` are ``@tool`` functions (or ``ToolSpec`` objects) offered beside the machine's;
    ``model`` is a spec (``"openai:gpt-4.1"``, ``"scripted:turns.yaml"``) or any object with
    the ``ModelClient`` protocol. With ``approver``, calls the policy would ask about go to it;
    otherwise ``approval`` (default ``policy``) decides. ``on_event`` sees every ``RunEvent``.
    Returns the run's ``RunResult`` (``status``: completed, failed, waiting_approval).
    """
    wiring = _Wiring(Path(db or DEFAULT_DB), on_event, approver)
    return await _start(wiring, _machine(machine), task=task, tools=tools, model=model,
                        workspace=workspace, approval=approval, policy=policy,
                        limits=limits, model_options=model_options)


async def resume(run_id: str, *, tools: Sequence[ToolSpec | Callable[..., Any]] = (),
                 model: str | ModelClient | None = None, db: str | Path | None = None,
                 approver: Approver | None = None,
                 approval: Literal["policy", "auto", "deny", "park"] | None = None,
                 on_event: EventHandler | None = None,
                 allow_changed_machine: bool = False) -> RunResult:
    """Continue an interrupted, failed or crashed run from its last committed step.

    Tools the machine names by import path are imported again; tools and a model object the
    run was started with in code are given again here (``ToolImportError`` or
    ``ModelConfigError`` says which is missing).
    """
    wiring = _Wiring(Path(db or DEFAULT_DB), on_event, approver)
    return await _continue(wiring, run_id, tools=tools, model=model, approval=approval,
                           allow_changed_machine=allow_changed_machine)


def run_sync(machine: Machine | str | Path, **kwargs: Any) -> RunResult:
    """``run`` for code without an event loop (a script, a worker thread)."""
    import anyio

    return anyio.run(partial(run, machine, **kwargs))


async def _start(wiring: _Wiring, machine: Machine, *, task: str,
                 tools: Sequence[ToolSpec | Callable[..., Any]],
                 model: str | ModelClient | None, workspace: str | Path | None,
                 approval: str | None, policy: str | Path | None,
                 limits: Mapping[str, Any] | None,
                 model_options: Mapping[str, Any] | None) -> RunResult:
    from engine.session import RunRequest, prepare_new

    given = (*machine.tools, *_specs(tools))
    model_spec, client = _model(model)
    mode = "interactive" if wiring.approver is not None else (approval or "policy")
    req = RunRequest(
        machine=machine.path if machine.definition else machine.path.resolve(), task=task,
        workspace=Path(workspace or Path.cwd()),
        model=model_spec, approval=mode,  # type: ignore[arg-type]
        policy=Path(policy) if policy else None, limits=dict(limits or {}),
        model_options=dict(model_options or {}), definition=machine.definition,
        tools=given, model_client=client)
    store = _open(wiring.db)
    try:
        prepared = prepare_new(req, store, db_path=wiring.db, observer=wiring.observe,
                               prompter=wiring.prompter())
        wiring.run_id = prepared.state.run_id
        return await _drive(prepared)
    finally:
        store.close()


async def _continue(wiring: _Wiring, run_id: str, *,
                    tools: Sequence[ToolSpec | Callable[..., Any]],
                    model: str | ModelClient | None, approval: str | None,
                    allow_changed_machine: bool) -> RunResult:
    from engine.session import prepare_resume

    model_spec, client = _model(model)
    mode = "interactive" if wiring.approver is not None else approval
    store = _open(wiring.db, must_exist=True)
    wiring.run_id = run_id
    try:
        prepared = prepare_resume(run_id, store, observer=wiring.observe,
                                  prompter=wiring.prompter(),
                                  overrides={"model": model_spec, "approval": mode},
                                  allow_changed_machine=allow_changed_machine,
                                  tools=_specs(tools), model_client=client)
        return await _drive(prepared)
    finally:
        store.close()


async def _drive(prepared: Any) -> RunResult:
    from engine.session import execute

    return await execute(prepared)


def _open(db: Path, *, must_exist: bool = False) -> Any:
    from engine.errors import UsageError
    from engine.store.sqlite import SqliteStore

    if must_exist and not db.exists():
        raise UsageError(f"{db}: no database yet")
    db.parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(db)


def _specs(tools: Sequence[ToolSpec | Callable[..., Any]]) -> tuple[ToolSpec, ...]:
    from engine.tooling.functions import spec_of

    return tuple(spec_of(t, repr(t)) for t in tools)


def _model(model: str | ModelClient | None) -> tuple[str | None, ModelClient | None]:
    if model is None or isinstance(model, str):
        return model, None
    return None, model


# -- streaming --------------------------------------------------------------------------


class RunStream:
    """``async with stream(...) as events: async for event in events: ...``

    The run is driven in the background while the caller reads its events; ``result`` holds
    the ``RunResult`` once the events are exhausted. Leaving the block early cancels the run
    (status ``interrupted``, resumable).
    """

    def __init__(self, start: Callable[[_Wiring], Awaitable[RunResult]], wiring: _Wiring) -> None:
        self._start = start
        self._wiring = wiring
        self.result: RunResult | None = None
        self._error: Exception | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._send: MemoryObjectSendStream[RunEvent] | None = None
        self._receive: MemoryObjectReceiveStream[RunEvent] | None = None

    async def __aenter__(self) -> RunStream:
        import anyio

        self._send, self._receive = anyio.create_memory_object_stream[RunEvent](math.inf)
        self._wiring.extra.append(self._forward)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._drive)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        assert self._tg is not None and self._receive is not None
        self._tg.cancel_scope.cancel()
        try:
            swallowed = await self._tg.__aexit__(kind, exc, tb)
        finally:
            self._receive.close()
        if self._error is not None and exc is None:
            raise self._error  # the run's own error, not wrapped in an exception group
        return swallowed

    def _forward(self, kind: str, payload: Mapping[str, Any]) -> None:
        assert self._send is not None
        self._send.send_nowait(RunEvent(kind, payload))

    async def _drive(self) -> None:
        assert self._send is not None
        async with self._send:
            try:
                self.result = await self._start(self._wiring)
            except Exception as exc:  # raised from __aexit__, once the events are read
                self._error = exc

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        assert self._receive is not None, "use: async with stream(...) as events"
        return self._receive.__aiter__()


def stream(machine: Machine | str | Path, *, task: str, **kwargs: Any) -> RunStream:
    """Start a run like ``run`` and read its events as they happen (an async iterator)."""
    db = kwargs.pop("db", None)
    approver = kwargs.pop("approver", None)
    wiring = _Wiring(Path(db or DEFAULT_DB), kwargs.pop("on_event", None), approver)
    spec = _machine(machine)
    defaults: dict[str, Any] = {"tools": (), "model": None, "workspace": None,
                                "approval": None, "policy": None, "limits": None,
                                "model_options": None}
    return RunStream(partial(_start, machine=spec, task=task, **{**defaults, **kwargs}),
                     wiring)


def stream_resume(run_id: str, **kwargs: Any) -> RunStream:
    """Resume a run like ``resume`` and read its events as they happen."""
    db = kwargs.pop("db", None)
    approver = kwargs.pop("approver", None)
    wiring = _Wiring(Path(db or DEFAULT_DB), kwargs.pop("on_event", None), approver)
    defaults: dict[str, Any] = {"tools": (), "model": None, "approval": None,
                                "allow_changed_machine": False}
    return RunStream(partial(_continue, run_id=run_id, **{**defaults, **kwargs}), wiring)


# -- reading the store ------------------------------------------------------------------


class RunStore:
    """The run database opened read-only: list runs, read a run's steps, messages, events
    and trace. Nothing here can change a run. ``with open_store(db) as runs: ...``"""

    def __init__(self, db: str | Path = DEFAULT_DB) -> None:
        from engine.errors import UsageError
        from engine.store.sqlite import SqliteStore

        if not Path(db).exists():
            raise UsageError(f"{db}: no database")
        self._store = SqliteStore(db, readonly=True)

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first."""
        return self._store.list_runs()

    def run(self, run_id: str) -> RunInfo:
        return self._store.get_run(run_id)

    def steps(self, run_id: str) -> list[StepRecord]:
        return self._store.steps(run_id)

    def messages(self, run_id: str) -> list[Message]:
        return self._store.messages(run_id)

    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        return self._store.events(run_id, kinds)

    def trace(self, run_id: str) -> dict[str, Any]:
        """The run's trace (spans of steps, model calls and tool calls), as JSON values."""
        from engine.tracing.trace import build_trace

        return build_trace(self._store, run_id)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(db: str | Path = DEFAULT_DB) -> RunStore:
    """Open the run database read-only."""
    return RunStore(db)


__all__ = [
    "Answer", "ApprovalRequest", "Approver", "AsyncApprover", "EventHandler",
    "Machine", "RunEvent", "RunStore", "RunStream", "ToolContext", "ToolResult", "ToolSpec",
    "build_machine", "load_machine", "open_store", "render", "resume", "run", "run_sync",
    "stream", "stream_resume", "tool",
]
