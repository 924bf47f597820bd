"""Parked approvals as the front door shows them: what waits for a person, and a decision.

A decision is bound to the hash of the arguments the decider was shown (``engine.permissions
.parking.record_decision``), whoever decides: the CLI's ``approve``/``deny``, the web console
and the Python API all record it through ``decide`` here, and then wake whatever drives the
run (a Temporal workflow waits for a signal; a run driven in a process is resumed by its
caller).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.permissions.parking import pending, record_decision, still_waiting
from engine.runs.children import root_run
from engine.store.base import Store

Wake = Callable[[Store, str], "str | None"]
"""Told after a decision was recorded on run ``run_id``: wakes the backend that drives it
and returns a line saying so, or None when no backend waits (a run driven in a process)."""


@dataclass(frozen=True)
class PendingApproval:
    """A parked tool call waiting for a person (``approvals --json`` has the same keys)."""

    run_id: str
    call_id: str
    step: int
    tool: str
    arguments: Mapping[str, Any]
    args_hash: str
    """The hash a decision is bound to: a call with other arguments is not run."""
    risk: str
    preview: str
    command: str | None
    """For a shell call: the command line."""
    rule: str | None
    reason: str
    capability: str
    """What ``approve(..., always=...)`` grants for the rest of the run."""
    policy_version: str
    requested_at: float
    age_s: float
    parsed: tuple[Mapping[str, Any], ...] = field(default=())
    """For a shell call: each simple command with its argv, risk and decision."""
    parent_run_id: str | None = None
    """For a child run's call: the run that started it (parked too; resume that one)."""

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> PendingApproval:
        return cls(**{**row, "parsed": tuple(row.get("parsed") or ())})

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "call_id": self.call_id, "step": self.step,
                "tool": self.tool, "arguments": dict(self.arguments),
                "args_hash": self.args_hash, "risk": self.risk, "preview": self.preview,
                "command": self.command, "parsed": [dict(p) for p in self.parsed],
                "rule": self.rule, "reason": self.reason, "capability": self.capability,
                "policy_version": self.policy_version, "requested_at": self.requested_at,
                "age_s": self.age_s, "parent_run_id": self.parent_run_id}


@dataclass(frozen=True)
class DecidedApproval:
    """A decision as recorded (the audit log has it too: who, how, when)."""

    run_id: str
    call_id: str
    tool: str
    decision: Literal["allow", "deny"]
    decided_by: str
    """Who decided (the user name, or what the caller said)."""
    channel: str
    """How: ``cli``, ``web`` or ``api``."""
    note: str = ""
    always: str | None = None
    notice: str | None = None
    """What the backend driving the run said when woken (None: the caller resumes it)."""
    still_pending: int = 0
    """Calls of the same run still waiting for a decision."""
    resume_run: str = ""
    """The run to resume for the decision to take effect: the topmost run above a child's
    call (resuming it resumes the child first), else the run itself."""


def pending_approvals(store: Store, run_id: str | None = None) -> list[PendingApproval]:
    """Every call still waiting for a decision (of one run, with ``run_id``)."""
    rows = [PendingApproval.from_json(r) for r in pending(store)]
    if run_id is None:
        return rows
    full = store.get_run(run_id).run_id
    return [r for r in rows if r.run_id == full]


def decide(store: Store, run_id: str, call_id: str, decision: Literal["allow", "deny"], *,
           channel: str, who: str | None = None, note: str = "", always: str | None = None,
           args_hash: str | None = None, wake: Wake | None = None) -> DecidedApproval:
    """Record one decision (``DecisionRefusedError``, exit 2, on anything stale) and wake the
    run's backend."""
    req = record_decision(store, run_id, call_id, decision, channel=channel, who=who,
                          note=note, always=always, args_hash=args_hash)
    info = store.get_run(req.run_id)
    left = sum(still_waiting(info, r) for r in store.approval_requests(req.run_id))
    notice = wake(store, req.run_id) if wake is not None else None
    return DecidedApproval(req.run_id, req.call_id, req.tool, decision,
                           req.decided_by or "", channel, note,
                           always if decision == "allow" else None, notice, left,
                           root_run(store, req.run_id))
