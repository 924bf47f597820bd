"""The values that cross Temporal: references to a run in its store and small results.

Never a message or a tool result: those stay in the store, so a payload's size does not grow
with the run and the workflow's history stays bounded by continue-as-new.
"""

from __future__ import annotations

from dataclasses import dataclass

WORKFLOW = "TurnstileRun"
STEP_ACTIVITY = "turnstile.step"
FAIL_ACTIVITY = "turnstile.fail"
DECIDED_ACTIVITY = "turnstile.decided"
DECIDED_SIGNAL = "decided"
DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK_QUEUE = "turnstile"
BACKEND_KEY = "backend"
TEMPORAL_KEY = "temporal"
"""A run's recorded config names its backend (``backend: temporal``) and where Temporal is."""
CONTINUE_AS_NEW_AFTER = 500
"""Steps one workflow execution takes before it continues as new (carrying only ``RunRef``)."""
DECISION_POLL_S = 30.0
"""How often the workflow of a parked run reads the store for a decision its signal did not
bring (the decision outbox: Temporal was down when the decision was recorded)."""
POLLS_PER_EXECUTION = 500
"""Store reads a parked workflow execution makes before it continues as new."""
HEARTBEAT_S = 1.0
"""How often a step with effects heartbeats; a worker gone silent for ``heartbeat_timeout_s``
has its step retried on another worker."""


def workflow_id(run_id: str) -> str:
    """One workflow id per run: ``approve``/``deny`` find the run's workflow by it."""
    return f"turnstile-{run_id}"


@dataclass(frozen=True)
class RunRef:
    """What a workflow execution starts from (and continues as new with)."""

    run_id: str
    store: str
    """Where the run's store is, as the workers open it (a SQLite path on shared storage)."""
    step: int = 0
    effects: bool = False
    """The step's action has effects (model, tool or MCP call): a heartbeating activity.
    Otherwise a local activity in the workflow's own worker."""
    resumed: bool = False
    """The first step was left running by an earlier process: settle it through the ledger."""
    continue_after: int = CONTINUE_AS_NEW_AFTER
    heartbeat_timeout_s: float = 10.0
    """A worker silent this long is taken for dead and its step retried on another. Ten
    heartbeats: a worker starved of CPU by a busy machine for a few seconds is not (at 3 s one
    was, and its step ran twice at once)."""
    step_timeout_s: float = 3600.0
    parked: bool = False
    """The run waits for a decision at ``step``: wait before taking it (continued as new
    while parked)."""
    decision_poll_s: float = DECISION_POLL_S


@dataclass(frozen=True)
class StepRef:
    """One step to take: the run, where its store is, which step the workflow expects."""

    run_id: str
    store: str
    step: int
    resumed: bool = False


@dataclass(frozen=True)
class StepReply:
    """Where the run stands after a step: its status, next step and state, and whether that
    step has effects. ``status`` is ``running`` while there are steps to take."""

    status: str
    step: int
    state: str
    effects: bool = False
    error: str | None = None


@dataclass(frozen=True)
class FailRef:
    """A run whose step could not be taken at all (e.g. its machine file changed)."""

    run_id: str
    store: str
    step: int
    error: str
