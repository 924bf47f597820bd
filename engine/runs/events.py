"""What a host sees of a live run and how it answers: events, approval requests, approvers.

A ``RunEvent`` is one thing that happened, as it happens, tagged with its run's id, so one
handler can watch many runs. An approver answers the calls the policy leaves to a person, one
``ApprovalRequest`` at a time; ``prompter_for`` turns it into the engine's prompter, which asks
about a batch of calls at once.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from engine.permissions.approvals import Answer as EngineAnswer
    from engine.permissions.approvals import PendingQuestion, Prompter


@dataclass(frozen=True)
class RunEvent:
    """Something that happened in a run, as it happens.

    Kinds include ``step_begin`` and ``step_commit`` (every step), ``text_delta`` (the model's
    text as it streams), ``tool_started`` and ``tool_call`` (a call with its id and arguments;
    then its result), ``approval_needed`` (the approver is being asked), ``model_call`` and
    ``run_end`` (the last one, with ``status``); ``engine.vocabulary.events.EventKind`` lists them
    all and
    ``engine.vocabulary.events.PAYLOADS`` the keys of each payload.
    """

    kind: str
    payload: Mapping[str, Any]
    run_id: str = ""
    """The run it happened in (every event carries it)."""


@dataclass(frozen=True)
class ApprovalRequest:
    """One tool call the policy leaves to the approver."""

    run_id: str
    call_id: str
    tool: str
    args: Mapping[str, Any]
    risk: str
    reason: str
    preview: str


Answer = bool | Literal["yes", "no", "always"]
"""``True``/``"yes"`` allows the call, ``"always"`` allows it and its kind for the rest of the
run, ``False``/``"no"`` (or anything else) denies it."""


class AsyncApprover(Protocol):
    """An approver object: ``approve`` may be a plain or an ``async`` method."""

    def approve(self, request: ApprovalRequest) -> Answer | Awaitable[Answer]: ...


Approver = Callable[[ApprovalRequest], Answer | Awaitable[Answer]] | AsyncApprover
"""A function or an object with ``approve``, plain or ``async``."""
EventHandler = Callable[[RunEvent], None]
"""Called with every event of a run, in order, on the run's event loop; keep it quick."""
Pace = Callable[[], Awaitable[None]]
"""Awaited before the approver is asked (a stream's reader has seen the question first)."""


def prompter_for(approver: Approver, run_id: Callable[[], str],
                 observe: Callable[[str, Mapping[str, Any]], None],
                 pace: Pace | None = None) -> Prompter:
    """The engine's prompter, answered by ``approver`` one call at a time; each question is
    announced as an ``approval_needed`` event first."""
    decide = approver.approve if hasattr(approver, "approve") else approver

    async def ask(questions: Sequence[PendingQuestion]) -> list[EngineAnswer]:
        answers: list[EngineAnswer] = []
        for q in questions:
            request = ApprovalRequest(run_id(), q.call.id, q.call.name, dict(q.call.args),
                                      q.decision.risk, q.decision.reason, q.decision.preview)
            observe(APPROVAL_NEEDED, {"call_id": request.call_id, "tool": request.tool,
                                      "args": dict(request.args), "risk": request.risk,
                                      "reason": request.reason, "preview": request.preview})
            if pace is not None:
                await pace()
            answer = decide(request)
            if inspect.isawaitable(answer):
                answer = await answer
            answers.append(engine_answer(answer))
        return answers

    return ask


APPROVAL_NEEDED = "approval_needed"
"""The event an approver's question is announced with (shown, never stored)."""


def engine_answer(value: object) -> EngineAnswer:
    """An approver's answer in the engine's words; anything unclear denies."""
    if value is True or value == "yes":
        return "yes"
    if value == "always":
        return "always"
    return "no"
