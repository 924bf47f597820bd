"""Approvals: turning the policy's ``ask`` into a decision, by a person or by the run's mode.

Modes: ``interactive`` (a person answers on the terminal: yes / no / always for this capability
in this run / details), ``policy`` (``ask`` becomes the policy file's ``default``, deny unless
configured), ``auto`` (``ask`` becomes allow; deny stays deny), ``deny`` (``ask`` becomes deny),
``park`` (``ask`` parks the run until a person decides: ``engine.permissions.parking``).
The policy's own ``deny`` is final in every mode. A command whose program the preview cannot
name (``$(cat x) -rf dir``) is only ever allowed by a person: ``deny`` in the other modes,
whatever the policy's ``default`` or an "always" answer says (a floor applied after the policy).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from engine.permissions.policy import Decision, PolicyContext, decide
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import PLANNED_FILES_KEY, SEEN_HASHES_KEY, FileChange
from engine.vocabulary.state import ToolCall

logger = logging.getLogger(__name__)

ApprovalMode = Literal["interactive", "policy", "auto", "deny", "park"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("interactive", "policy", "auto", "deny", "park")
Answer = Literal["yes", "no", "always"]


@dataclass(frozen=True, slots=True)
class Approval:
    """The decision for one tool call, as recorded in the audit table and the run's data."""

    call_id: str
    tool: str
    decision: Literal["allow", "deny"]
    risk: str
    reason: str
    rule: str | None
    decided_by: str
    preview: str
    capability: str
    post_images: Mapping[str, str] | None = None
    """For a write previewed by the tool's dry run: path -> sha256 of the content approved;
    the call is not run if it would now write anything else."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"call_id": self.call_id, "tool": self.tool, "decision": self.decision,
                             "risk": self.risk, "reason": self.reason, "rule": self.rule,
                             "decided_by": self.decided_by, "capability": self.capability}
        if self.post_images:
            d["post_images"] = dict(self.post_images)
        return d


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """One call a person is asked about."""

    call: ToolCall
    decision: Decision


Prompter = Callable[[Sequence[PendingQuestion]], Awaitable[Sequence[Answer]]]
"""Asks a person about a batch of calls at once; returns one answer per question."""

Deferred = Callable[[Sequence[PendingQuestion]], Awaitable[Mapping[str, Approval]]]
"""Park mode's answers: recorded decisions by call id, or it parks the run (``RunParked``)."""


_DIGEST_JSON = json.JSONEncoder(sort_keys=True, default=str).encode
"""``json.dumps(value, sort_keys=True, default=str)`` without a new encoder per call."""


def digest(value: Any) -> str:
    """A short stable digest of a JSON-able value (arguments, previews) for the audit table."""
    blob = value if isinstance(value, str) else _DIGEST_JSON(value)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Approver:
    """Decides a batch of tool calls: policy first, then the mode or a person for ``ask``."""

    def __init__(self, mode: ApprovalMode, policy: PolicyContext,
                 prompter: Prompter | None = None) -> None:
        if mode == "interactive" and prompter is None:
            mode = "policy"
        self.mode: ApprovalMode = mode
        self.policy = policy
        self.prompter = prompter

    async def decide_batch(self, calls: Sequence[ToolCall], tools: ToolRegistry,
                           granted: Iterable[str],
                           run_data: Mapping[str, Any] | None = None,
                           deferred: Deferred | None = None) -> list[Approval]:
        """One ``Approval`` per call, in order; people are asked about all open calls at once.

        ``run_data`` is what the tools will see when they run (the file hashes the agent has
        read), so a write tool's dry run previews the change the call will really make;
        ``deferred`` holds decisions recorded for a parked run.
        """
        granted = set(granted)
        data: Mapping[str, Any] = self.policy.run_data if run_data is None else run_data
        decided: dict[str, Approval] = {}
        questions: list[PendingQuestion] = []
        for call in calls:
            spec = tools.get(call.name)
            if spec is None or call.args_error:
                decided[call.id] = Approval(call.id, call.name, "allow", "read",
                                            "not runnable: the tool call returns an error",
                                            None, "engine", "", f"tool:{call.name}")
                continue
            # Only a tool's dry run reads ``run_data``: the context is copied for those alone.
            d = decide(call, spec, self.policy if spec.dry_run is None or
                       data is self.policy.run_data else replace(self.policy, run_data=data))
            if d.changes and d.decision != "deny":
                data = _after(data, d.changes)
            resolved = self._resolve(call, d, granted)
            if resolved is None:
                questions.append(PendingQuestion(call, d))
            else:
                decided[call.id] = resolved
        if questions and self.mode == "park":
            decided.update(await deferred(questions) if deferred else {
                q.call.id: _approval(q.call, q.decision, "deny", "engine") for q in questions})
        elif questions:
            decided.update(await self._ask(questions))
        return [decided[c.id] for c in calls]

    def _resolve(self, call: ToolCall, d: Decision, granted: set[str]) -> Approval | None:
        if d.decision == "allow":
            return _approval(call, d, "allow", "policy")
        if d.decision == "deny":
            return _approval(call, d, "deny", "policy")
        if d.unnamed:
            return None if self.mode == "interactive" else _approval(call, d, "deny", "policy")
        if d.capability in granted:
            return _approval(call, d, "allow", "always")
        if self.mode == "auto" and d.unattended:  # nobody decided this read: refused
            return _approval(call, replace(d, reason=f"{d.reason} ({d.unattended}: only a "
                                                     "person or a policy rule may allow it)"),
                             "deny", "policy")
        if self.mode == "auto":
            return _approval(call, d, "allow", "auto")
        if self.mode == "deny":
            return _approval(call, d, "deny", "deny-mode")
        if self.mode == "policy":
            when_asked = self.policy.policy.when_asked
            return _approval(call, d, "allow" if when_asked == "allow" else "deny", "policy")
        return None

    async def confirm_unknown(self, call: ToolCall, message: str) -> bool:
        """Ask a person whether to repeat a call whose outcome is unknown (resume)."""
        if self.prompter is None:
            return False
        d = Decision("ask", "exec", f"{message}; repeat it?", None,
                     json.dumps(dict(call.args), indent=2), f"repeat:{call.id}")
        (answer,) = await self.prompter([PendingQuestion(call, d)])
        return answer != "no"

    async def _ask(self, questions: Sequence[PendingQuestion]) -> dict[str, Approval]:
        assert self.prompter is not None
        answers = await self.prompter(questions)
        out: dict[str, Approval] = {}
        for q, answer in zip(questions, answers, strict=True):
            decision: Literal["allow", "deny"] = "deny" if answer == "no" else "allow"
            by = "user-always" if answer == "always" else "user"
            out[q.call.id] = _approval(q.call, q.decision, decision, by)
        return out


def _after(data: Mapping[str, Any], changes: Iterable[FileChange]) -> dict[str, Any]:
    """``data`` as the next call of the batch will find it: the files this one will write
    hold their post-images, and the agent is known to have their hashes (as after a run)."""
    seen = dict(data.get(SEEN_HASHES_KEY) or {})
    planned = dict(data.get(PLANNED_FILES_KEY) or {})
    for c in changes:
        seen[c.path] = c.result_hash
        planned[c.path] = c.after
    return {**data, SEEN_HASHES_KEY: seen, PLANNED_FILES_KEY: planned}


def _approval(call: ToolCall, d: Decision, decision: Literal["allow", "deny"],
              by: str) -> Approval:
    reason = d.reason if by in ("policy", "engine") else f"{d.reason} ({by})"
    post = {c.path: c.result_hash for c in d.changes} or None
    return Approval(call.id, call.name, decision, d.risk, reason, d.rule, by, d.preview,
                    d.capability, post)


def granted_capabilities(approvals: Iterable[Mapping[str, Any]]) -> set[str]:
    """Capabilities a person allowed "always" in this run."""
    return {a["capability"] for a in approvals
            if str(a.get("decided_by") or "").endswith("-always")}
