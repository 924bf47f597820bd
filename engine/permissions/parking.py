"""Parked approvals (``--approval park``): a call that needs a person waits in the store.

When the policy says ``ask`` and nobody is at a terminal, the run records one request per call
(arguments and their hash, the policy version, the preview, risk and rule), ends its step
``approval_requested`` and stops with status ``waiting_approval``: no lease, no process, no open
transaction. ``approve``/``deny`` (CLI or web console) record a decision bound to the arguments'
hash that was shown; the resumed step runs a call only when a matching ``allow`` is recorded.
Anything else (no decision, an unreadable one, a changed call or policy) is a deny.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Protocol

from engine.permissions.approvals import Approval, PendingQuestion, digest
from engine.permissions.policy import Policy
from engine.store.base import (
    ApprovalDecision,
    ApprovalRequest,
    Approvals,
    AuditRecord,
    RunReader,
    Store,
)
from engine.vocabulary.errors import DecisionRefusedError, RunParked
from engine.vocabulary.hints import command

CHANNELS = ("cli", "web", "api")
"""How a parked decision can come (the command line, the web console, a program through
``engine.approve``/``deny``); also its ``decided_by`` in the audit table."""

ALWAYS_RUN = "run"
"""``--always run``: grant the call's capability for the rest of this run."""


def policy_version(policy: Policy | None) -> str:
    """A digest of the policy as loaded: a decision made under another policy is not reused."""
    return digest(policy.to_data()) if policy is not None else digest("built-in defaults")


class ParkingStep(Protocol):
    """What parking needs of the step that asks: where requests are kept, which run and step,
    and the time (an action's ``ActionContext`` is one)."""

    @property
    def store(self) -> Approvals: ...

    @property
    def run_id(self) -> str: ...

    @property
    def step(self) -> int: ...

    def now(self) -> float: ...


class ParkedDecisions:
    """The ``ask`` of park mode: answers from recorded decisions, or parks the run."""

    def __init__(self, at: ParkingStep, policy: Policy | None) -> None:
        self.at = at
        self.version = policy_version(policy)

    async def __call__(self, questions: Sequence[PendingQuestion]) -> dict[str, Approval]:
        at, version = self.at, self.version
        known = {r.call_id: r for r in at.store.approval_requests(
            at.run_id, pending_only=False)}
        out: dict[str, Approval] = {}
        waiting: list[ApprovalRequest] = []
        for q in questions:
            req = known.get(q.call.id)
            if req is None or req.status == "pending":
                waiting.append(req or _request(at, q, version))
            elif req.policy_version != version:  # decided under another policy: ask again
                waiting.append(_request(at, q, version))
            else:
                out[q.call.id] = bound_approval(q, req, version)
        if waiting:
            raise RunParked(parked_line(at.run_id, waiting, at.store.location),
                            tuple(waiting))
        return out


def _request(at: ParkingStep, q: PendingQuestion, version: str) -> ApprovalRequest:
    d = q.decision
    return ApprovalRequest(
        run_id=at.run_id, call_id=q.call.id, step=at.step, tool=q.call.name,
        args=dict(q.call.args), args_hash=digest(dict(q.call.args)), policy_version=version,
        preview=d.preview, risk=d.risk, rule=d.rule, reason=d.reason, capability=d.capability,
        requested_at=at.now())


def bound_approval(q: PendingQuestion, req: ApprovalRequest, version: str) -> Approval:
    """The recorded decision, if it was made on this very call under this policy; else deny."""
    d = q.decision
    by = req.channel if req.channel in CHANNELS else "engine"
    if req.status not in ("allow", "deny") or by == "engine":
        return Approval(q.call.id, q.call.name, "deny", d.risk,
                        "the recorded decision is unreadable: denied", d.rule, "engine",
                        d.preview, d.capability)
    if req.args_hash != digest(dict(q.call.args)) or req.policy_version != version:
        what = "arguments" if req.args_hash != digest(dict(q.call.args)) else "policy"
        return Approval(q.call.id, q.call.name, "deny", d.risk,
                        f"the decision was made on other {what} than this call's: refused",
                        d.rule, "engine", d.preview, d.capability)
    if req.status == "deny":
        note = f": {req.note}" if req.note else ""
        return Approval(q.call.id, q.call.name, "deny", d.risk,
                        f"denied by {req.decided_by} via {by}{note}", d.rule, by, d.preview,
                        d.capability)
    return Approval(q.call.id, q.call.name, "allow", d.risk,
                    f"{d.reason} (approved by {req.decided_by} via {by})", d.rule,
                    f"{by}-always" if req.always else by, d.preview, d.capability)


def after_policy_change(approval: Approval, req: ApprovalRequest | None,
                        version: str) -> Approval:
    """A call the policy now decides by itself although a person decided it under another
    policy version: the same decision, its reason naming the change (the person's decision no
    longer applies)."""
    if req is None or req.status not in ("allow", "deny") or req.policy_version == version:
        return approval
    verb = "approved" if req.status == "allow" else "denied"
    note = (f"the policy changed since {req.decided_by} {verb} this call via {req.channel}; "
            f"the changed policy decides: {approval.decision}")
    return replace(approval, reason=f"{approval.reason} ({note})")


def call_outcome(store: RunReader, run_id: str, call_id: str) -> str:
    """What became of a decided call once its run went on: ran, denied (and why), or asked
    again; for ``approve --resume`` to report."""
    effects = [e for e in store.effects(run_id) if e.call_id == call_id]
    if effects:
        return f"call {call_id} ({effects[-1].tool}) ran: {effects[-1].status}"
    req = next((r for r in store.approval_requests(run_id, pending_only=False)
                if r.call_id == call_id), None)
    if req is not None and req.status == "pending":
        return (f"call {call_id} ({req.tool}) was not run: the policy changed since it was "
                "decided, so it is asked again")
    rows = [a for a in store.audit(run_id) if a.call_id == call_id]
    if rows and rows[-1].decision == "deny":
        return f"call {call_id} ({rows[-1].tool}) was not run: {rows[-1].reason}"
    return f"call {call_id} has not run yet"


def parked_line(run_id: str, requests: Sequence[ApprovalRequest],
                store: str | None = None) -> str:
    """The one line a parked run prints: the run, the calls, and how to decide (``store``:
    where the run is, as its store names itself)."""
    calls = ", ".join(f"{r.call_id} ({r.tool})" for r in requests)
    first = requests[0].call_id
    return (f"run {run_id} is waiting for approval of {calls}: decide with "
            f"`{command('approve', run_id, first, store=store)}` or "
            f"`{command('deny', run_id, first, store=store)}` (add --resume to continue)")


def record_decision(store: Store, run_id: str, call_id: str,
                    decision: Literal["allow", "deny"], *, channel: str, who: str | None = None,
                    note: str = "", always: str | None = None, args_hash: str | None = None,
                    at: float | None = None) -> ApprovalRequest:
    """Record one decision and its audit row (who, how, when); exit 2 on anything stale.

    ``args_hash`` is the hash of what the decider was shown (the web page sends it back);
    the CLI decides on the request as it reads it now.
    """
    if channel not in CHANNELS:  # a decision from elsewhere would later read as a deny
        raise DecisionRefusedError(f"channel {channel!r}: decisions come by "
                                   f"{', '.join(CHANNELS)}")
    info = store.get_run(run_id)
    req = next((r for r in store.approval_requests(info.run_id, pending_only=False)
                if r.call_id == call_id), None)
    if req is None:
        raise DecisionRefusedError(f"run {info.run_id} has no approval request for call "
                                   f"{call_id!r} (list them: "
                                   f"{command('approvals', store=store.location)})")
    if req.status == "pending" and not still_waiting(info, req):
        raise DecisionRefusedError(f"run {info.run_id} is not waiting for call {call_id} any "
                                   f"more (it is {info.status} at step {info.steps})")
    if always is not None and always not in (ALWAYS_RUN, req.capability):
        raise DecisionRefusedError(f"--always {always!r}: the scope is `run` or the call's "
                                   f"capability {req.capability!r}")
    who = who or _user()
    now = time.time() if at is None else at
    verb = "approved" if decision == "allow" else "denied"
    reason = f"{verb} by {who} via {channel}" + (f": {note}" if note else "")
    if always is not None and decision == "allow":
        reason += f"; always for {req.capability} in this run"
    audit = AuditRecord(
        run_id=info.run_id, step=req.step, call_id=call_id, tool=req.tool, decision=decision,
        risk=req.risk, rule=req.rule, reason=reason, decided_by=channel,
        args_digest=req.args_hash, preview_digest=digest(req.preview), at=now)
    return store.decide_approval(info.run_id, call_id, ApprovalDecision(
        decision=decision, args_hash=args_hash or req.args_hash, channel=channel, who=who,
        at=now, note=note, always=always if decision == "allow" else None), audit)


def pending(store: RunReader, now: float | None = None) -> list[dict[str, Any]]:
    """Every pending request across runs, with what a person needs to decide."""
    now = time.time() if now is None else now
    runs: dict[str, Any] = {}
    rows = []
    for r in store.approval_requests():
        if r.run_id not in runs:
            runs[r.run_id] = store.get_run(r.run_id)
        if still_waiting(runs[r.run_id], r):
            row = pending_json(r, now, Path(runs[r.run_id].workspace))
            row["parent_run_id"] = runs[r.run_id].parent_run_id
            rows.append(row)
    return rows


def still_waiting(info: Any, req: ApprovalRequest) -> bool:
    """The run is still at the request's step and not ended (a run resumed in another approval
    mode may have moved past a request nobody answered)."""
    return info.steps == req.step and info.status not in ("completed", "failed")


def parsed_command(args: Mapping[str, Any], workspace: Path | None) -> list[dict[str, Any]]:
    """For a shell call: each simple command with its argv, risk and the layer's decision."""
    command = args.get("command")
    if not isinstance(command, str) or workspace is None:
        return []
    from engine.permissions.shell import check_shell_json

    return [{k: c.get(k) for k in ("argv", "risk", "decision", "reason")}
            for c in check_shell_json(command, workspace).get("commands") or ()]


def pending_json(r: ApprovalRequest, now: float,
                 workspace: Path | None = None) -> dict[str, Any]:
    args: Mapping[str, Any] = r.args
    return {"run_id": r.run_id, "call_id": r.call_id, "step": r.step, "tool": r.tool,
            "arguments": dict(args), "args_hash": r.args_hash, "risk": r.risk,
            "preview": r.preview,
            "command": args.get("command") if isinstance(args.get("command"), str) else None,
            "parsed": parsed_command(args, workspace),
            "rule": r.rule, "reason": r.reason, "capability": r.capability,
            "policy_version": r.policy_version, "requested_at": r.requested_at,
            "age_s": round(max(0.0, now - r.requested_at), 1)}


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
