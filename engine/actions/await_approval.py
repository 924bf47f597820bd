"""``await_approval``: decide every pending tool call before anything runs.

Decisions are written to the audit table as they are made, so a run that dies while a person
is being asked asks again on resume, and a decision already recorded in this step is honoured.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.actions.base import NoParams
from engine.actions.context import ActionContext
from engine.permissions.approvals import Approval, digest, granted_capabilities
from engine.permissions.parking import CHANNELS, ParkedDecisions, after_policy_change
from engine.store.base import AuditRecord
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import APPROVALS, GRANTED, PENDING_CALLS
from engine.vocabulary.state import Message, Outcome, ToolCall

logger = logging.getLogger(__name__)


async def await_approval(ctx: ActionContext, params: NoParams) -> Outcome:
    """Emits ``decided`` when at least one call may run, ``all_denied`` otherwise."""
    calls = [ToolCall.from_dict(c) for c in PENDING_CALLS.get(ctx.run.data)]
    approvals = await decide_calls(ctx, calls)
    # Only this turn's decisions live in the run's data (the audit table keeps them all), so
    # a step's cost and its checkpoint do not grow with the number of turns behind it.
    record = {a.call_id: a.to_dict() for a in approvals}
    updates: dict[str, Any] = {APPROVALS.name: record}
    granted = sorted(set(GRANTED.get(ctx.run.data)) | granted_capabilities(
        record.values()))
    if granted != list(GRANTED.get(ctx.run.data)):
        updates[GRANTED.name] = granted
    allowed = [a for a in approvals if a.decision == "allow"]
    note = ", ".join(f"{a.tool}: {a.decision} ({a.decided_by})" for a in approvals)
    if allowed:
        return Outcome("decided", updates=updates, note=note)
    denials = tuple(denial_message(a) for a in approvals)
    return Outcome("all_denied", updates={**updates, PENDING_CALLS.name: []},
                   messages=denials, note=note)


REPEATABLE_DECIDERS = frozenset({"policy", "auto", "always", "deny-mode"})
"""Who decided a call such that a rerun of the step decides it again the same way: the policy,
the approval mode, or a capability granted earlier in the run (in its data). A person's answer
("user", "user-always", a parked decision's channel) and the engine's own refusals are not in
it: such a step commits on its own."""


def decided_without_a_person(outcome: Outcome) -> bool:
    """True when every decision of the step came from ``REPEATABLE_DECIDERS``: the step may
    ride in the next step's transaction (``ActionInfo.rides_along_if``). A kill before that
    commit runs the step again with the same inputs; no tool has run in between, because a
    call with side effects starts in a transaction of its own (``engine.actions.ledger``)."""
    record = outcome.updates.get(APPROVALS.name)
    if not record:
        return False
    return all(a.get("decided_by") in REPEATABLE_DECIDERS for a in record.values())


async def decide_calls(ctx: ActionContext, calls: list[ToolCall]) -> list[Approval]:
    """Decide ``calls``, reusing decisions this step already recorded; audit the new ones."""
    store = ctx.store
    parked = ctx.approver.mode == "park"
    prior: dict[str, Approval] = {}
    if ctx.resumed:
        for row in store.audit(ctx.run.run_id):
            # A parked decision is checked against the call again (ParkedDecisions), never
            # taken from the audit table on trust.
            if row.step == ctx.step and not (parked and row.decided_by in CHANNELS):
                prior[row.call_id] = Approval(row.call_id, row.tool, row.decision,  # type: ignore[arg-type]
                                              row.risk, row.reason, row.rule, row.decided_by,
                                              "", "")
    open_calls = [c for c in calls if c.id not in prior]
    granted = set(GRANTED.get(ctx.run.data))
    deferred = ParkedDecisions(ctx, ctx.config.policy) if parked else None
    fresh = await ctx.approver.decide_batch(open_calls, ctx.tools, granted, ctx.run.data,
                                            deferred)
    if deferred is not None and ctx.resumed:  # a person's decision the policy overrode
        fresh = _name_policy_changes(ctx, fresh, deferred.version)
    for call, approval in zip(open_calls, fresh, strict=True):
        if approval.decided_by.removesuffix("-always") in CHANNELS:
            # approve/deny wrote its audit row when the person decided: show it, once.
            ctx.emit(EventKind.APPROVAL, {**approval.to_dict(), "args": dict(call.args)})
        else:
            _audit(ctx, call, approval)
    by_id = {**prior, **{a.call_id: a for a in fresh}}
    return [by_id[c.id] for c in calls]


def _name_policy_changes(ctx: ActionContext, fresh: list[Approval],
                         version: str) -> list[Approval]:
    """Calls the changed policy now decides by itself, although a person decided them while
    the run was parked: the reason says so."""
    requests = {r.call_id: r for r in ctx.store.approval_requests(ctx.run.run_id,
                                                                  pending_only=False)}
    return [a if a.decided_by.removesuffix("-always") in CHANNELS
            else after_policy_change(a, requests.get(a.call_id), version) for a in fresh]


def _audit(ctx: ActionContext, call: ToolCall, a: Approval) -> None:
    spec = ctx.tools.get(call.name)
    at = ctx.now()
    ctx.store.record_audit(AuditRecord(
        run_id=ctx.run.run_id, step=ctx.step, call_id=call.id, tool=call.name,
        decision=a.decision, risk=a.risk, rule=a.rule, reason=_with_sandbox(ctx, call, a),
        decided_by=a.decided_by, args_digest=digest(dict(call.args)),
        preview_digest=digest(a.preview), at=at,
        server=spec.server if spec else None, trust=spec.trust if spec else None))
    payload: dict[str, Any] = {**a.to_dict(), "args": dict(call.args)}
    ctx.emit(EventKind.APPROVAL, payload)


def _with_sandbox(ctx: ActionContext, call: ToolCall, a: Approval) -> str:
    """The audit reason, plus how the command will run when it is a shell command."""
    jail = ctx.config.confinement
    spec = ctx.tools.get(call.name)
    if jail is None or spec is None or spec.command_arg is None or a.decision != "allow":
        return a.reason
    return f"{a.reason} [{jail.summary(jail.network_for(a.risk))}]"


def denial_message(a: Approval | dict[str, Any]) -> Message:
    """The tool result the model sees for a denied call."""
    d = a.to_dict() if isinstance(a, Approval) else a
    text = (f"Permission denied for {d['tool']} (risk: {d['risk']}): {d['reason']}. "
            "Do not retry the same call; find another way or explain what you need.")
    return Message("tool", text, tool_call_id=d["call_id"], name=d["tool"], is_error=True)
