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
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from engine.temporal.refs import (
        DECIDED_ACTIVITY,
        DECIDED_SIGNAL,
        FAIL_ACTIVITY,
        POLLS_PER_EXECUTION,
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
        if ref.parked:
            await self._await_decision(ref, ref.step, ref.effects, 0)
        while True:
            seen = self._decisions  # a decision signalled while this step parks still counts
            try:
                reply = await self._step(ref, StepRef(ref.run_id, ref.store, step, resumed),
                                         effects)
            except ActivityError as exc:
                return await self._fail(ref, step, exc)
            resumed = False
            if reply.status == "waiting_approval":
                await self._await_decision(ref, reply.step, reply.effects, seen)
                step, effects, resumed = reply.step, reply.effects, True
                continue
            if reply.status != "running":
                return reply
            step, effects, taken = reply.step, reply.effects, taken + 1
            if taken >= ref.continue_after or workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(dataclasses.replace(ref, step=step, effects=effects,
                                                             resumed=False, parked=False))

    async def _await_decision(self, ref: RunRef, step: int, effects: bool, seen: int) -> None:
        """Wait for the signal of a decision, reading the store every ``decision_poll_s`` for
        one the signal did not bring (Temporal was down when it was recorded: the outbox)."""
        polls = 0
        while True:
            try:
                await workflow.wait_condition(lambda: self._decisions > seen,
                                              timeout=timedelta(seconds=ref.decision_poll_s))
                return
            except TimeoutError:
                pass
            try:
                decided: bool = await workflow.execute_local_activity(
                    DECIDED_ACTIVITY, StepRef(ref.run_id, ref.store, step), result_type=bool,
                    start_to_close_timeout=timedelta(minutes=1), retry_policy=RETRY)
            except ActivityError:  # the store is out of reach: the run stays parked, and the
                decided = False   # next read (or the signal) finds the decision
            if decided:
                return
            polls += 1
            if polls >= POLLS_PER_EXECUTION or workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(dataclasses.replace(
                    ref, step=step, effects=effects, resumed=True, parked=True))

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
        try:
            await workflow.execute_local_activity(
                FAIL_ACTIVITY, FailRef(ref.run_id, ref.store, step, error),
                start_to_close_timeout=timedelta(minutes=1), retry_policy=RETRY)
        except ActivityError as lost:  # the store cannot be written: the workflow's failure
            raise ApplicationError(error, non_retryable=True) from lost  # carries the cause
        return StepReply("failed", step, "", False, error)
