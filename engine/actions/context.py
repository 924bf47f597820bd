"""What an action may use while it runs: the run as of the last commit, and a few narrow parts.

Actions read ``run`` and return an ``Outcome``; they never write run state. What they may call
is spelled out on ``ActionContext``: the store, the tool registry, the approval gate, the
model, the clock, the fault hook and the run's fixed configuration (``RunConfig``). Events
(model calls, tool calls, approvals) go through ``emit``, which persists them and shows them.
``RunParts`` bundles those parts for the runner; ``engine.session.wiring`` builds it, once per run.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import TextReader
from engine.vocabulary.state import RunState, ToolCall, Usage

if TYPE_CHECKING:
    from engine.models.base import ModelClient
    from engine.permissions.approvals import Approval, ApprovalMode, Deferred
    from engine.permissions.policy import Policy
    from engine.sandbox import Confinement
    from engine.spec.model import MachineSpec, StateSpec
    from engine.store.base import Store


class Observer(Protocol):
    """Receives everything worth showing live: persisted events and transient ones.

    Transient kinds (never persisted): ``text_delta``, ``tool_output``, ``step_begin``,
    ``step_commit``, ``run_end``.
    """

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None: ...


Clock = Callable[[], float]
"""Seconds since the epoch; a test may pass a fixed one."""

FaultPoint = Literal["before", "during", "after_effect", "after"]
FaultHook = Callable[[FaultPoint, str], None]
"""``(point, state)``: fault injection (``engine.core.faults.Faults``); a no-op unless armed."""

UnknownEffect = Literal["skip", "repeat", "fail"]
Pace = Callable[[], Awaitable[None]]


class ApprovalGate(Protocol):
    """Decides tool calls before they run (``engine.permissions.approvals.Approver``)."""

    @property
    def mode(self) -> ApprovalMode: ...

    async def decide_batch(self, calls: Sequence[ToolCall], tools: ToolRegistry,
                           granted: Iterable[str],
                           run_data: Mapping[str, Any] | None = None,
                           deferred: Deferred | None = None) -> list[Approval]: ...

    async def confirm_unknown(self, call: ToolCall, message: str) -> bool: ...


@dataclass(frozen=True)
class ChildRequest:
    """A child run a state asks for (``run_machine``, the ``delegate`` tool): what it runs."""

    machine: str
    """A machine file (relative to the parent's machine file) or a bundled machine's name."""
    task: str
    model: str | None = None
    """A model spec; None: the parent's."""
    policy: str | None = None
    """The child's own policy file (relative to the parent's machine file); it only narrows."""
    limits: Mapping[str, Any] = field(default_factory=dict)
    """The child's limits, capped by what the parent has left."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """Put in the child's run data under ``inputs``."""
    call_id: str = ""
    """The parent's tool call that asked (``delegate``); empty for a ``run_machine`` state."""


@dataclass(frozen=True)
class ChildResult:
    """How a child run ended, as its parent sees it."""

    run_id: str
    status: str
    """``completed`` or ``failed`` (a parked child parks its parent instead)."""
    answer: str
    """The child's final answer (empty for a workflow without one)."""
    files_changed: Mapping[str, Any]
    usage: Usage
    error: str | None = None
    limits: Mapping[str, Any] = field(default_factory=dict)
    """The limits the child ran under (after capping)."""


class ChildRuns(Protocol):
    """Starts a child run of a step, or resumes the one that step started before
    (``engine.runs.children``); the front door hands it to every run it prepares."""

    async def run_child(self, ctx: ActionContext, request: ChildRequest) -> ChildResult: ...


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def _no_fault(point: FaultPoint, state: str) -> None:
    return None


class ModelSource:
    """The run's model client, created on first use (a workflow may never need one)."""

    def __init__(self, factory: Callable[[], ModelClient],
                 client: ModelClient | None = None) -> None:
        self._factory = factory
        self._client = client

    def get(self) -> ModelClient:
        if self._client is None:
            self._client = self._factory()
        return self._client

    def started(self) -> ModelClient | None:
        """The client if one was created (to preflight or close it), else None."""
        return self._client

    def forget(self) -> None:
        """Drop a client that was closed, so the next ``get`` builds a fresh one (a worker
        keeps a run's parts between steps, and each step's ``execute`` closes the client)."""
        self._client = None


@dataclass(frozen=True)
class RunConfig:
    """What a run was configured with; fixed for the whole drive."""

    workspace: Path
    policy: Policy | None = None
    """None only where no policy applies (the permission layer then uses its defaults)."""
    interactive: bool = False
    """A person (or the embedding program's approver) answers ``ask`` decisions."""
    on_unknown_effect: UnknownEffect = "skip"
    model_options: Mapping[str, Any] = field(default_factory=dict)
    """The run's ``--model-option`` settings: they override the machine's and the state's."""
    confinement: Confinement | None = None
    """How the run's shell commands are confined (``engine.sandbox``), decided at its start."""
    start_events: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """Events the runner records and shows once it holds the lease (how commands are
    confined)."""


@dataclass
class RunParts:
    """The parts one run is wired from, built once by ``engine.session.wiring.build_parts``."""

    store: Store
    tools: ToolRegistry
    approver: ApprovalGate
    models: ModelSource
    config: RunConfig
    observer: Observer = _silent
    clock: Clock = time.time
    fault: FaultHook = _no_fault
    children: ChildRuns | None = None
    """Starts and resumes child runs (None where no front door prepared the run)."""
    pace: Pace | None = None
    """Awaited before each step's action and before its commit, when a host shows the run at
    its reader's pace (``engine.runs`` streams): the run goes on once the reader has seen
    what happened so far, so a reader that stops stops the run there."""
    read_text: TextReader | None = None
    """Where the run's tools read a file's text besides the disk (``ToolContext.read_text``):
    a host's, such as an editor's buffers (``engine.ide``); None: the disk only."""
    deadline: float | None = None
    """When (``time.monotonic``) this drive of the run reaches its ``timeout_s``; set by the
    runner. A child's time limit is what is left of it."""


@dataclass
class ActionContext:
    """One step's view of the run, and everything an action may call."""

    run: RunState
    machine: MachineSpec
    state: StateSpec
    parts: RunParts
    resumed: bool = False
    """True when this step was left running by an earlier process and is being run again."""

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def step(self) -> int:
        return self.run.step

    @property
    def config(self) -> RunConfig:
        return self.parts.config

    @property
    def workspace(self) -> Path:
        return self.parts.config.workspace

    @property
    def store(self) -> Store:
        return self.parts.store

    @property
    def tools(self) -> ToolRegistry:
        return self.parts.tools

    @property
    def approver(self) -> ApprovalGate:
        return self.parts.approver

    def model(self) -> ModelClient:
        return self.parts.models.get()

    def now(self) -> float:
        return self.parts.clock()

    def fault(self, point: FaultPoint) -> None:
        """Give fault injection its chance at ``point`` of this state."""
        self.parts.fault(point, self.state.name)

    def emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Persist an event of this step and show it."""
        self.parts.store.append_event(self.run.run_id, self.run.step, kind, payload, self.now())
        self.parts.observer(kind, payload)

    def show(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Show a transient event (streamed text, a shell output line) without persisting."""
        self.parts.observer(kind, payload)
