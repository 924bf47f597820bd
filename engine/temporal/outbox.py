"""The decision outbox: a decision recorded in the store reaches its run's workflow, now or
once Temporal is back, with no further command.

The outbox entry is the decided approval request itself: ``record_decision`` writes it and its
audit row in one transaction, so a decision is never told without being stored, nor stored
without being told. It is delivered twice over: the command that decided signals the workflow
at once (the fast path), and the workflow of a parked run reads the store every
``decision_poll_s`` (a timer and a local activity on a worker) for a decision that no signal
brought, because Temporal was down when it was recorded. Only a workflow that no longer runs
cannot read it; then the decider is told which command starts one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.permissions.parking import still_waiting
from engine.store.base import RunReader

Delivered = Literal["told", "later", "no_workflow"]


@dataclass(frozen=True)
class Delivery:
    """How a decision reached (or will reach) its run's workflow."""

    how: Delivered
    detail: str = ""
    """For ``later``: why Temporal could not be told now."""


def taken_up(store: RunReader, run_id: str) -> bool:
    """Whether a parked run's workflow may take its step again: the run is no longer parked,
    or no request of its parked step waits for a decision any more."""
    info = store.get_run(run_id)
    if info.status != "waiting_approval":
        return True
    return not any(still_waiting(info, r) for r in store.approval_requests(info.run_id))


async def deliver(target: object, run_id: str) -> Delivery:
    """Tell the run's workflow that a decision is recorded: ``told``; ``later`` when Temporal
    cannot be reached (the workflow reads the store once it is back); ``no_workflow`` when
    Temporal answers but the run has no running workflow."""
    from engine.temporal.client import Target, TemporalUnavailableError, signal_decided

    assert isinstance(target, Target)
    try:
        told = await signal_decided(target, run_id)
    except TemporalUnavailableError as exc:
        return Delivery("later", str(exc))
    return Delivery("told" if told else "no_workflow")
