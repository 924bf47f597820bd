"""The activities: one step of a run (heartbeating when it has effects) and the run's failure.

Temporal retries an activity whose worker died; the retry is a resume of the step (the ledger
decides what may run again), never a blind repeat.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio
from temporalio import activity
from temporalio.exceptions import ApplicationError

from engine.store.url import parse_store_url
from engine.temporal.outbox import taken_up
from engine.temporal.refs import (
    DECIDED_ACTIVITY,
    FAIL_ACTIVITY,
    HEARTBEAT_S,
    STEP_ACTIVITY,
    FailRef,
    StepRef,
    StepReply,
)
from engine.temporal.step import POOL, drive_step, fail_run, same_location
from engine.vocabulary.errors import LeaseHeldError, StoreError, TurnstileError, UsageError

T = TypeVar("T")

RETRIED = (StoreError, LeaseHeldError)
"""Errors a later attempt can get past (a locked store, a lease about to lapse)."""


class StepActivities:
    """The worker's activities; ``only_store``: the one store this worker serves (its
    ``--store`` or ``--db``), or None to serve the store each run's reference names."""

    def __init__(self, only_store: str | None = None) -> None:
        self.served = parse_store_url(only_store) if only_store else None

    @activity.defn(name=STEP_ACTIVITY)
    async def step(self, ref: StepRef) -> StepReply:
        """Take one step; a retried attempt resumes the step an earlier attempt left
        running."""
        info = activity.info()
        resumed = ref.resumed or info.attempt > 1
        try:
            self._check_store(ref.store)
            if info.is_local:
                return await drive_step(ref, resumed=resumed, served=self.served)
            return await _heartbeating(drive_step(ref, resumed=resumed, served=self.served))
        except RETRIED:
            raise
        except TurnstileError as exc:  # bad config, changed machine: no retry can help
            raise ApplicationError(str(exc), type=type(exc).__name__,
                                   non_retryable=True) from exc

    @activity.defn(name=FAIL_ACTIVITY)
    async def fail(self, ref: FailRef) -> None:
        """Record that the run failed for a reason outside its steps (also on a worker that
        serves another store: the failure must reach the run's store, or nobody learns it)."""
        fail_run(ref, self.served)

    @activity.defn(name=DECIDED_ACTIVITY)
    async def decided(self, ref: StepRef) -> bool:
        """Whether the parked run's decisions are all recorded (the decision outbox)."""
        self._check_store(ref.store)
        store = POOL.acquire(ref.store, served=self.served)
        try:
            return taken_up(store, ref.run_id)
        finally:
            POOL.release(store)

    def _check_store(self, store: str) -> None:
        if self.served is not None and not same_location(self.served.url, store):
            raise UsageError(f"this worker serves the store {self.served.display} only, not "
                             f"{store} (give each store its own task queue)")


async def _heartbeating(work: Awaitable[T]) -> T:
    """Await ``work`` while heartbeating every ``HEARTBEAT_S``: a killed worker is noticed in
    seconds and the step is retried elsewhere."""
    result: list[T] = []

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(HEARTBEAT_S)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(beat)
            result.append(await work)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        leaves = group.exceptions
        if len(leaves) == 1:
            raise leaves[0] from None
        raise
    return result[0]
