"""What an action may use while it runs: the run as of the last commit and the run's services.

Actions read ``run`` and return an ``Outcome``; they never write run state. Events (model
calls, tool calls, approvals) go through ``emit``, which persists them and shows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.state import RunState
from engine.tooling.registry import ToolRegistry

if TYPE_CHECKING:
    from engine.models.base import ModelClient
    from engine.permissions.approvals import Approver
    from engine.sandbox import Confinement
    from engine.spec.model import MachineSpec, StateSpec
    from engine.store.base import Store


class Observer(Protocol):
    """Receives everything worth showing live: persisted events and transient ones.

    Transient kinds (never persisted): ``text_delta``, ``tool_output``, ``step_begin``,
    ``step_commit``, ``run_end``.
    """

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None: ...


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


@dataclass
class Services:
    """The per-run collaborators, built once by the composition root (``engine.session``)."""

    store: Store
    tools: ToolRegistry
    approver: Approver
    model_factory: Callable[[], ModelClient]
    workspace: Path
    observer: Observer = _silent
    clock: Callable[[], float] = time.time
    policy: Any = None
    """The run's ``engine.permissions.policy.Policy``."""
    on_unknown_effect: str = "skip"
    interactive: bool = False
    confinement: Confinement | None = None
    """How the run's shell commands are confined (``engine.sandbox``), decided at its start."""
    start_events: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """Events the runner records and shows when it starts driving (once it holds the lease):
    how commands are confined."""
    fault: Callable[[str, str], None] = field(default=lambda point, state: None)
    """Fault injection hook (``engine.harness.faults.Faults``); a no-op unless ENGINE_FAULTS is
    set."""
    model_options: Mapping[str, Any] = field(default_factory=dict)
    """The run's ``--model-option`` settings: they override the machine's and the state's."""
    _model: ModelClient | None = field(default=None, repr=False)

    def started_model(self) -> ModelClient | None:
        """The run's model client if one was created (to preflight or close it), else None."""
        return self._model

    def model(self) -> ModelClient:
        """The run's model client, created on first use (a workflow may never need one)."""
        if self._model is None:
            self._model = self.model_factory()
        return self._model


@dataclass
class ActionContext:
    """One step's view of the run."""

    run: RunState
    machine: MachineSpec
    state: StateSpec
    services: Services
    resumed: bool = False
    """True when this step was left running by an earlier process and is being run again."""

    @property
    def step(self) -> int:
        return self.run.step

    @property
    def workspace(self) -> Path:
        return self.services.workspace

    def emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Persist an event of this step and show it."""
        s = self.services
        s.store.append_event(self.run.run_id, self.run.step, kind, payload, s.clock())
        s.observer(kind, payload)

    def show(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Show a transient event (streamed text, a shell output line) without persisting."""
        self.services.observer(kind, payload)
