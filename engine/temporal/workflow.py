"""The run's workflow: ask for one step after another until the run ends; wait when it parks.

Deterministic by construction: no I/O, clock or randomness, only activities, a signal and
continue-as-new. The workflow does not know the machine; each step's reply names the next
step and whether it has effects (a heartbeating activity) or not (a local activity).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from engine.temporal.refs import (
        DECIDED_SIGNAL,
        FAIL_ACTIVITY,
        STEP_ACTIVITY,
        WORKFLOW,
        FailRef,
        RunRef,
        StepRef,
        StepReply,
    )

RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=2.0,
                    maximum_interval=timedelta(seconds=5), maximum_attempts=20)
LOCAL_TIMEOUT = timedelta(minutes=10)


@workflow.defn(name=WORKFLOW)
class RunWorkflow:
    """One run of one machine, as a Temporal workflow."""

    def __init__(self) -> None:
        self._decisions = 0

    @workflow.signal(name=DECIDED_SIGNAL)
    def decided(self) -> None:
        """A parked call was approved or denied (the decision itself is in the store)."""
        self._decisions += 1

    @workflow.run
    async def run(self, ref: RunRef) -> StepReply:
        step, effects, resumed, taken = ref.step, ref.effects, ref.resumed, 0
        while True:
            seen = self._decisions  # a decision signalled while this step parks still counts
            try:
                reply = await self._step(ref, StepRef(ref.run_id, ref.store, step, resumed),
                                         effects)
            except ActivityError as exc:
                return await self._fail(ref, step, exc)
            resumed = False
            if reply.status == "waiting_approval":
                await workflow.wait_condition(lambda: self._decisions > seen)  # noqa: B023
                step, effects, resumed = reply.step, reply.effects, True
                continue
            if reply.status != "running":
                return reply
            step, effects, taken = reply.step, reply.effects, taken + 1
            if taken >= ref.continue_after or workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(dataclasses.replace(ref, step=step, effects=effects,
                                                             resumed=False))

    async def _step(self, ref: RunRef, args: StepRef, effects: bool) -> StepReply:
        if effects:
            reply: StepReply = await workflow.execute_activity(
                STEP_ACTIVITY, args, result_type=StepReply,
                start_to_close_timeout=timedelta(seconds=ref.step_timeout_s),
                heartbeat_timeout=timedelta(seconds=ref.heartbeat_timeout_s),
                retry_policy=RETRY)
            return reply
        local: StepReply = await workflow.execute_local_activity(
            STEP_ACTIVITY, args, result_type=StepReply, start_to_close_timeout=LOCAL_TIMEOUT,
            retry_policy=RETRY)
        return local

    async def _fail(self, ref: RunRef, step: int, exc: ActivityError) -> StepReply:
        cause = exc.cause or exc
        error = f"step {step} could not be taken: {cause}"
        await workflow.execute_local_activity(
            FAIL_ACTIVITY, FailRef(ref.run_id, ref.store, step, error),
            start_to_close_timeout=timedelta(minutes=1), retry_policy=RETRY)
        return StepReply("failed", step, "", False, error)
