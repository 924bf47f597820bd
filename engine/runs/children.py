"""Child runs: a run that a parent's step starts, narrowed in permissions and budget.

``Runs`` hands every run it prepares a ``Children`` (``RunParts.children``): ``run_machine``
and the ``delegate`` tool ask it for the child of their step. The child is composed by the same
front door (``Runs`` on the parent's open store), linked to the parent's run and step; its
policy is its own under every policy above it (``engine.permissions.narrowing``), its approval
mode the parent's (the same prompter, or parking), its limits no higher than what the parent
has left. A rerun of the step finds the child it started: resumed if it stopped, read if it
ended. A child that parks parks its parent; deciding the child's call and resuming the parent
(or ``approve --resume``, which resumes the topmost run) resumes the child first.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from engine.actions.context import ActionContext, ChildRequest, ChildResult
from engine.core.runner import RunResult
from engine.permissions.approvals import ApprovalMode, Prompter
from engine.runs.events import Approver
from engine.runs.prepared import PreparedRun
from engine.session.compose import ParentLink
from engine.spec.bundled import child_machine_path
from engine.store.base import Store
from engine.vocabulary.errors import RunParked
from engine.vocabulary.events import EventKind
from engine.vocabulary.hints import command
from engine.vocabulary.run_data import FILES_CHANGED, FINAL_ANSWER, RESULTS
from engine.vocabulary.state import RunInfo

logger = logging.getLogger(__name__)

ENDED = ("completed", "failed")


class FrontDoor(Protocol):
    """What a child needs of ``engine.runs.Runs`` (on the parent's open store)."""

    def child(self, machine: str, link: ParentLink, inputs: Mapping[str, Any], task: str,
              model: str | None, approval: ApprovalMode, prompter: Prompter | None,
              approver: Approver | None, workspace: Path, policy: str | None,
              limits: Mapping[str, Any]) -> PreparedRun: ...

    async def drive(self, prepared: PreparedRun) -> RunResult: ...

    async def resume_child(self, run_id: str, approval: ApprovalMode, prompter: Prompter | None,
                           approver: Approver | None) -> RunResult: ...


class Children:
    """The child runs of one run (``ChildRuns``), started through the front door."""

    def __init__(self, door: Callable[[Store], FrontDoor], prompter: Prompter | None,
                 approver: Approver | None = None) -> None:
        self.door = door
        """``Runs`` on a store already open (the parent's)."""
        self.prompter = prompter
        self.approver = approver
        """The parent's approver (a program's): it answers the child too."""

    async def run_child(self, ctx: ActionContext, request: ChildRequest) -> ChildResult:
        """The child of ``ctx``'s step (and ``request.call_id``): started, resumed or read."""
        store = ctx.store
        found = child_of(store, ctx.run_id, ctx.step, request.call_id)
        if found is not None and found.status in ENDED:
            return result_of(store, found)
        runs = self.door(store)
        mode = ctx.approver.mode
        if found is not None:
            ctx.emit(EventKind.CHILD_STARTED, {"child_run_id": found.run_id, "resumed": True,
                                               "machine": found.machine})
            result = await runs.resume_child(found.run_id, mode, self.prompter, self.approver)
            child_id = found.run_id
        else:
            path = child_machine_path(request.machine, ctx.machine.path)
            prepared = runs.child(
                str(path), self._link(ctx, store, request), request.inputs, request.task,
                _model(request.model, ctx), mode, self.prompter, self.approver, ctx.workspace,
                _policy(request.policy, ctx.machine.path) or _declared_policy(path)
                or _recorded_policy(ctx, store), request.limits)
            child_id = prepared.run_id
            ctx.emit(EventKind.CHILD_STARTED, {"child_run_id": child_id, "resumed": False,
                                               "machine": prepared.machine.name})
            try:
                result = await runs.drive(prepared)
            finally:
                prepared.close()
        if result.status == "waiting_approval":
            raise RunParked(_parked_line(ctx.run_id, child_id, store), ())
        info = store.get_run(child_id)
        ended = result_of(store, info)
        ctx.emit(EventKind.CHILD_ENDED, {"child_run_id": child_id, "status": ended.status,
                                         "error": ended.error})
        return ended

    def _link(self, ctx: ActionContext, store: Store, request: ChildRequest) -> ParentLink:
        """The parent link of a new child: the policies above it and the budget left."""
        parent = store.get_run(ctx.run_id)
        above = tuple((parent.config.get("parent") or {}).get("policies") or ())
        return ParentLink(ctx.run_id, ctx.step, (*above, parent.config.get("policy")),
                          caps=budget_left(ctx), call_id=request.call_id,
                          model=parent.config.get("model"))


def child_of(store: Store, run_id: str, step: int, call_id: str = "") -> RunInfo | None:
    """The child run that step ``step`` of ``run_id`` started (for ``call_id``), if any."""
    for child in store.child_runs(run_id):
        link = child.config.get("parent") or {}
        if child.parent_step == step and (link.get("call_id") or "") == call_id:
            return child
    return None


def budget_left(ctx: ActionContext) -> dict[str, Any]:
    """What the parent has left of each limit it sets: a child's limits are capped to it.
    The time left is that of the parent's current drive (its ``timeout_s`` counts from when it
    started or resumed), in whole milliseconds, rounded down."""
    limits, usage = ctx.machine.limits, ctx.run.usage
    left: dict[str, Any] = {}
    if limits.max_steps:
        left["max_steps"] = max(1, limits.max_steps - ctx.step)
    if limits.max_tokens:
        left["max_tokens"] = max(0, limits.max_tokens - usage.input_tokens
                                 - usage.output_tokens)
    if limits.max_cost_usd:
        left["max_cost_usd"] = max(0.0, limits.max_cost_usd - (usage.cost_usd or 0.0))
    if limits.timeout_s:
        deadline = ctx.parts.deadline
        left["timeout_s"] = limits.timeout_s if deadline is None else max(
            0.001, math.floor((deadline - time.monotonic()) * 1000) / 1000)
    return left


def result_of(store: Store, info: RunInfo) -> ChildResult:
    """How a child ended, from its stored state."""
    from engine.vocabulary.state import Usage

    data = store.load_state(info.run_id).data
    answer = FINAL_ANSWER.get(data) or _last_output(RESULTS.get(data))
    usage = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
    return ChildResult(info.run_id, info.status, answer or "", dict(FILES_CHANGED.get(data)),
                       usage, info.error, dict(info.config.get("limits") or {}))


def root_run(store: Store, run_id: str) -> str:
    """The topmost run above ``run_id`` (itself when it has no parent)."""
    seen = {run_id}
    info = store.get_run(run_id)
    while info.parent_run_id and info.parent_run_id not in seen:
        seen.add(info.parent_run_id)
        info = store.get_run(info.parent_run_id)
    return info.run_id


def _last_output(results: Mapping[str, Any]) -> str:
    """A workflow child's answer: its last state result's output."""
    for value in reversed(list(results.values())):
        if isinstance(value, Mapping) and isinstance(value.get("output"), str):
            return str(value["output"])
    return ""


def _parked_line(parent: str, child: str, store: Store) -> str:
    return (f"run {parent} waits for its child run {child}, which waits for approval: see "
            f"`{command('approvals', store=store.location)}`, then decide with --resume "
            f"(resuming {parent} resumes the child first)")


def _near(name: str, machine_path: str) -> str:
    """A relative file named by a machine, from the machine's folder when it is there."""
    path = Path(name)
    if not path.is_absolute():
        beside = Path(machine_path).parent / path
        if beside.exists():
            return str(beside.resolve())
    return name


def _policy(name: str | None, machine_path: str) -> str | None:
    return _near(name, machine_path) if name else None


def _declared_policy(path: Path) -> str | None:
    """The policy file the child machine declares (``policy:``), if any."""
    from engine.actions.registry import ACTIONS
    from engine.validation import load_machine

    machine = load_machine(path, ACTIONS)
    return str((path.parent / machine.policy).resolve()) if machine.policy else None


def _recorded_policy(ctx: ActionContext, store: Store) -> str | None:
    """A child without a policy of its own starts from its parent's (the built-in defaults
    would be stricter than the parent's file, which is not what delegating means)."""
    policy = store.get_run(ctx.run_id).config.get("policy")
    return str(policy) if policy else None


def _model(spec: str | None, ctx: ActionContext) -> str | None:
    """The child's model as its parent's state names it (a ``scripted:`` file beside the
    machine); None: the child machine's ``model:``, else the parent's (``ParentLink.model``)."""
    if spec is None:
        return None
    kind, sep, rest = spec.partition(":")
    if kind == "scripted" and sep and rest:
        return f"scripted:{_near(rest, ctx.machine.path)}"
    return spec
