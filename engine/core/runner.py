"""The runner: the step protocol of DESIGN 4, one persisted step at a time.

``Runner.drive`` -> ``_run_step`` -> ``_execute_action`` -> ``_fire`` -> ``_commit_step``.
For each step: its pre-checkpoint row already exists (written with the previous commit), the
action runs and returns an ``Outcome``, the transition table names the destination, and one
transaction commits the step, its messages, the transition, the run's new state and the next
step's pre-checkpoint. Only then does the in-memory run move on.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from engine.actions.base import ActionInfo
from engine.actions.context import ActionContext, RunParts
from engine.actions.registry import ACTIONS
from engine.core.fsm import TransitionTable
from engine.spec.model import MachineSpec
from engine.store.base import Checkpoint, LeaseOwner, StepBegin, StepCommit
from engine.vocabulary.errors import (
    LimitExceededError,
    RunParked,
    StoreError,
    StoreLockedError,
    TurnstileError,
)
from engine.vocabulary.events import EventKind
from engine.vocabulary.hints import command
from engine.vocabulary.run_data import APPROVALS, PENDING_CALLS, check_updates
from engine.vocabulary.state import RunInfo, RunState, RunStatus

logger = logging.getLogger(__name__)

LEASE_TTL_S = 30.0
"""A lease held by a process on another host expires this long after its last renewal."""

YIELD_EVERY_S = 0.005
"""Steps that await nothing run this long at most before the runner lets other tasks run."""

FAILURE_STATES = frozenset({"failed", "failure", "error", "aborted", "exhausted", "refused"})
"""Final states with these names end a run as ``failed``; other final states as ``completed``."""


def new_owner() -> LeaseOwner:
    """The lease identity of this process's runner."""
    return LeaseOwner(socket.gethostname(), os.getpid(), uuid.uuid4().hex)


def final_status(state: str) -> RunStatus:
    return "failed" if state in FAILURE_STATES else "completed"


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a drive ended."""

    state: RunState
    status: RunStatus
    error: str | None = None

    @property
    def run_id(self) -> str:
        return self.state.run_id


class Runner:
    """Drives one run of one machine; holds the run's lease while it does."""

    def __init__(self, machine: MachineSpec, parts: RunParts, *,
                 actions: Mapping[str, ActionInfo] = ACTIONS,
                 owner: LeaseOwner | None = None, lease_ttl_s: float = LEASE_TTL_S) -> None:
        self.machine = machine
        self.parts = parts
        self.store = parts.store
        self.actions = actions
        self.table = TransitionTable(machine)
        self.owner = owner or new_owner()
        self.lease_ttl_s = lease_ttl_s
        self._latest: RunState | None = None
        self._params: dict[str, Any] = {}
        """Each state's validated ``with:`` params (validated once, not on every step)."""
        """The run as of its last commit in this drive (what an error or Ctrl-C ends)."""
        self.step_limit: int | None = None
        """Steps one ``drive`` may take before it returns ``running`` (None: no limit). A
        distributed backend drives one step per task with the same loop (``engine.temporal``);
        the lease stays held then (its owner takes the next step), so the run never shows as
        ``crashed`` between steps."""

    # -- creation -----------------------------------------------------------------------

    def create(self, run_id: str, *, workspace: str, config: Mapping[str, Any],
               data: Mapping[str, Any], parent_run_id: str | None = None,
               parent_step: int | None = None) -> RunState:
        """Persist a new run, its initial data and its first step's pre-checkpoint (a child
        run names the parent run and step that started it)."""
        now = self.parts.clock()
        spec = self.machine
        state = RunState(run_id, spec.name, spec.initial, 0, (), dict(data))
        info = RunInfo(run_id, spec.name, spec.path, spec.source_hash, "running", spec.initial,
                       workspace, now, now, 0, 0, 0, 0.0, dict(config),
                       parent_run_id=parent_run_id, parent_step=parent_step)
        self.store.create_run(info, state, self._begin(state, now))
        return state

    def current_step(self, start: RunState) -> int:
        """The step in flight (MCP events between steps are attributed to the next one)."""
        return (self._latest or start).step

    # -- the loop -----------------------------------------------------------------------

    async def drive(self, state: RunState, *, resumed: bool = False) -> RunResult:
        """Run steps until a final state, an error, a limit, or an interruption."""
        self.store.acquire_lease(state.run_id, self.owner, self.lease_ttl_s)
        try:
            result = await self._drive_leased(state, resumed)
        except StoreError:
            raise  # the database refuses writes now; the lease ends with this process
        except BaseException:
            with anyio.CancelScope(shield=True):
                self.store.release_lease(state.run_id, self.owner)
            raise
        if result.status != "running":  # a step-limited drive keeps it for the next step
            with anyio.CancelScope(shield=True):
                self.store.release_lease(state.run_id, self.owner)
        return result

    async def _drive_leased(self, state: RunState, resumed: bool) -> RunResult:
        self._latest = state
        self.store.begin_step(state.run_id, self._begin(state, self.parts.clock()))
        self._prepare_watchers()
        for kind, payload in self.parts.config.start_events:  # said once the lease is held
            self.store.append_event(state.run_id, state.step, kind, payload,
                                    self.parts.clock())
            self.parts.observer(kind, payload)
        timeout = self.machine.limits.timeout_s
        self.parts.deadline = time.monotonic() + timeout if timeout else None
        result: RunResult | None = None
        fault: StoreError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._renew_lease, state.run_id)
            try:
                with anyio.fail_after(timeout):
                    result = await self._loop(state, resumed)
            except TimeoutError:
                result = self._fail(state, f"timeout: the run exceeded timeout_s={timeout:g}")
            except RunParked as exc:
                result = self._park(self._latest or state, exc)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    self._interrupt(state)
                raise
            except StoreError as exc:
                fault = exc
                self._store_fault(self._latest or state, exc)
            except TurnstileError as exc:
                result = self._fail(self._latest or state, str(exc))
            finally:
                tg.cancel_scope.cancel()
        if fault is not None:  # raised out here, not wrapped in the task group's exception group
            resume = command("resume", state.run_id, store=self.store.location)
            raise type(fault)(f"{fault}; run {state.run_id} can be resumed: {resume}") from fault
        assert result is not None
        return result

    def _prepare_watchers(self) -> None:
        """The run's watched tools (shell commands) begin their one-time set-up now, beside
        the first steps, instead of inside the first command's step."""
        watchers = {id(spec.watcher): spec.watcher for spec in self.parts.tools
                    if spec.watcher is not None}
        for watcher in watchers.values():
            watcher.prepare(self.parts.config.workspace)

    async def _loop(self, state: RunState, resumed: bool) -> RunResult:
        taken = 0
        yielded = time.monotonic()
        while not self.table.is_final(state.state):
            if self.step_limit is not None and taken >= self.step_limit:
                return RunResult(state, "running")
            taken += 1
            limit = self.machine.limits.max_steps
            if limit and state.step >= limit:
                return self._fail(state, f"max_steps reached ({limit}) in state {state.state}")
            # A cancellation of the caller (an embedding program cancelling its task) takes
            # effect here at the latest, even when no step awaits anything; and other tasks
            # (the signal watcher of Ctrl-C, the lease, other runs) get the loop at least
            # every YIELD_EVERY_S: a round trip through the event loop per step would cost
            # more than a step that awaits nothing.
            if time.monotonic() - yielded >= YIELD_EVERY_S:
                await anyio.lowlevel.checkpoint()
                yielded = time.monotonic()
            else:
                await anyio.lowlevel.checkpoint_if_cancelled()
            state = await self._run_step(state, resumed)
            self._latest = state
            resumed = False
        status = final_status(state.state)
        self.parts.observer(EventKind.RUN_END, {"status": status, "state": state.state})
        return RunResult(state.evolve(status=status), status)

    async def _run_step(self, state: RunState, resumed: bool) -> RunState:
        spec = self.machine.states[state.state]
        info = self.actions[spec.action or ""]
        ctx = ActionContext(state, self.machine, spec, self.parts, resumed=resumed)
        self.parts.observer(EventKind.STEP_BEGIN, {"step": state.step, "state": state.state,
                                              "action": info.name, "resumed": resumed,
                                              "waits": info.waits})
        self.parts.fault("before", state.state)
        pace = self.parts.pace
        if pace is not None:
            await pace()
        outcome = await self._execute_action(ctx, info, spec.params)
        if pace is not None:
            await pace()
        check_updates(outcome.updates, info.writes, f"action {info.name} (state {state.state})")
        dest = self._fire(state.state, outcome.trigger)
        new_state = state.apply(outcome, dest)
        self._check_limits(state, new_state)
        self._commit_step(state, new_state, outcome, info)
        self.parts.observer(EventKind.STEP_COMMIT, {
            "step": state.step, "state": state.state, "trigger": outcome.trigger,
            "dest": dest, "note": outcome.note})
        self.parts.fault("after", state.state)
        return new_state

    async def _execute_action(self, ctx: ActionContext, info: ActionInfo,
                              params: Mapping[str, Any]) -> Any:
        state = ctx.state.name
        if state not in self._params:
            self._params[state] = info.params.model_validate(dict(params))
        return await info.fn(ctx, self._params[state])

    def _fire(self, state: str, trigger: str) -> str:
        return self.table.fire(state, trigger)

    def _check_limits(self, old: RunState, new: RunState) -> None:
        """Token and cost limits hold before a step commits: a step that would pass one is not
        committed (its tool calls never run) and the run fails with the numbers."""
        if new.usage == old.usage:
            return
        limits, usage = self.machine.limits, new.usage
        tokens = usage.input_tokens + usage.output_tokens
        where = f"step {old.step} ({old.state}) would bring the run to"
        if limits.max_tokens and tokens > limits.max_tokens:
            raise LimitExceededError(f"max_tokens {limits.max_tokens} exceeded: {where} "
                                     f"{tokens} tokens; the step was not committed")
        if limits.max_cost_usd and usage.cost_usd and usage.cost_usd > limits.max_cost_usd:
            raise LimitExceededError(f"max_cost_usd {limits.max_cost_usd:g} exceeded: {where} "
                                     f"${usage.cost_usd:.4f}; the step was not committed")

    def _commit_step(self, old: RunState, new: RunState, outcome: Any, info: ActionInfo) -> None:
        now = self.parts.clock()
        final = self.table.is_final(new.state)
        commit = StepCommit(
            seq=old.step, state=old.state, trigger=outcome.trigger, dest=new.state,
            ended_at=now, updates=outcome.updates, messages=outcome.messages,
            first_message_seq=len(old.messages), usage=new.usage, note=outcome.note,
            status=final_status(new.state) if final else "running",
            next_step=None if final else self._begin(new, now),
            snapshot=Checkpoint(new.run_id, old.step, new.state, now, new.data,
                                len(new.messages), new.usage) if info.snapshot else None)
        rides = info.rides_along or (info.rides_along_if is not None
                                     and info.rides_along_if(outcome))
        if rides and not final:  # safe to run again: no commit of its own
            self.store.commit_step(new.run_id, commit, defer=True)
        else:
            self.store.commit_step(new.run_id, commit)

    def _begin(self, state: RunState, now: float) -> StepBegin:
        spec = self.machine.states[state.state]
        if spec.final:
            return StepBegin(state.step, state.state, "", now)
        info = self.actions[spec.action or ""]
        plan = None
        if info.side_effects:
            plan = {"calls": list(PENDING_CALLS.get(state.data)),
                    "approvals": dict(APPROVALS.get(state.data))}
        return StepBegin(state.step, state.state, info.name, now, plan)

    # -- endings ------------------------------------------------------------------------

    def _fail(self, state: RunState, error: str) -> RunResult:
        now = self.parts.clock()
        self.store.end_step(state.run_id, state.step, "failed", error, now)
        self.store.set_status(state.run_id, "failed", error)
        self.parts.observer(EventKind.RUN_END, {"status": "failed", "state": state.state,
                                           "error": error})
        return RunResult(state.evolve(status="failed"), "failed", error)

    def _park(self, state: RunState, parked: RunParked) -> RunResult:
        """End the step ``approval_requested`` and the run ``waiting_approval`` (the lease is
        released on the way out): a person decides later, from any process."""
        now = self.parts.clock()
        self.store.park_run(state.run_id, state.step, parked.requests,  # type: ignore[arg-type]
                            str(parked), now)
        self.parts.observer(EventKind.RUN_END, {"status": "waiting_approval",
                                                   "state": state.state, "error": str(parked)})
        return RunResult(state.evolve(status="waiting_approval"), "waiting_approval",
                         str(parked))

    def _interrupt(self, state: RunState) -> None:
        latest = self._latest or state
        now = self.parts.clock()
        self.store.end_step(latest.run_id, latest.step, "interrupted", "interrupted", now)
        self.store.set_status(latest.run_id, "interrupted", None)
        self.parts.observer(EventKind.RUN_END, {"status": "interrupted", "state": latest.state})

    def _store_fault(self, state: RunState, exc: StoreError) -> None:
        """The database failed mid-run: record ``interrupted`` where it can still be written.
        Under another process's lock it cannot, and waiting again would only double the
        wait: the row stays ``running`` and shows as ``crashed`` once this process is gone.
        Either way ``resume`` continues from the last committed step."""
        if not isinstance(exc, StoreLockedError):
            try:
                self.store.set_status(state.run_id, "interrupted", str(exc))
            except StoreError:
                logger.info("run %s: could not record 'interrupted'", state.run_id)
        self.parts.observer(EventKind.RUN_END, {"status": "interrupted", "state": state.state,
                                           "error": str(exc)})

    async def _renew_lease(self, run_id: str) -> None:
        while True:
            await anyio.sleep(self.lease_ttl_s / 3)
            try:
                self.store.renew_lease(run_id, self.owner, self.lease_ttl_s)
            except StoreError as exc:  # the next commit meets the same fault and ends the run
                logger.info("run %s: lease not renewed: %s", run_id, exc)
