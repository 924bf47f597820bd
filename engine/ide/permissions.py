"""Asking the editor about a parked call: ``session/request_permission``.

The run parks first (``--approval park``): the request is in the store, bound to the hash of
the call's arguments, before the editor is asked. The answer is recorded as a parked decision
is (``Runs.approve``/``deny`` with that hash), so a call whose arguments changed is not run, a
``cancelled`` answer leaves the request pending, and a new process (``session/load``) asks
again about exactly what is still pending.
"""

from __future__ import annotations

from typing import Literal

from acp import Client
from acp.schema import PermissionOption, ToolCallUpdate

from engine.ide.tools import CallView
from engine.permissions.parking import ALWAYS_RUN
from engine.runs.approvals import PendingApproval
from engine.runs.service import Runs

Answer = Literal["allow", "always", "deny"]

_ANSWERS: dict[str, Answer] = {"allow_once": "allow", "allow_always": "always",
                               "reject_once": "deny"}


def options(pending: PendingApproval) -> list[PermissionOption]:
    """Allow once, allow always (its label says the scope: this capability, this run), reject."""
    what = pending.capability or pending.tool
    return [
        PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
        PermissionOption(option_id="allow_always", name=f"Always allow {what} for this run",
                         kind="allow_always"),
        PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    ]


async def ask(client: Client, session_id: str, pending: PendingApproval,
              shown: CallView) -> Answer | None:
    """The editor's answer, or None when it answered ``cancelled`` (or with no option we
    offered: in doubt, nothing is decided)."""
    call = ToolCallUpdate(tool_call_id=pending.call_id, title=shown.title, kind=shown.kind,
                          status="pending", content=list(shown.diffs) or None,
                          locations=list(shown.locations) or None,
                          raw_input=dict(pending.arguments))
    response = await client.request_permission(session_id=session_id, tool_call=call,
                                               options=options(pending))
    outcome = response.outcome
    if outcome.outcome != "selected":
        return None
    return _ANSWERS.get(outcome.option_id)


def record(runs: Runs, pending: PendingApproval, answer: Answer, who: str) -> None:
    """The answer as the run's decision, bound to the arguments the editor was shown."""
    if answer == "deny":
        runs.deny(pending.run_id, pending.call_id, reason=f"rejected by {who}", who=who,
                  args_hash=pending.args_hash)
    else:
        runs.approve(pending.run_id, pending.call_id, who=who, args_hash=pending.args_hash,
                     always=ALWAYS_RUN if answer == "always" else None)
