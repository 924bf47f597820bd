"""The values a run is made of and that get persisted: messages, tool calls, outcomes, run state.

All are frozen. ``RunState.evolve`` returns a copy that shares the message tuple's items by
reference, so appending a message never deep-copies the history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
RunStatus = Literal["running", "interrupted", "crashed", "completed", "failed",
                    "waiting_approval"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "interrupted", "crashed", "completed", "failed",
                                       "waiting_approval")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A request from the model (or a workflow) to run one tool."""

    id: str
    """Stable id; the provider's id when a model made the call."""
    name: str
    args: Mapping[str, Any]
    """Parsed JSON arguments. ``{}`` when the model sent invalid JSON (see ``args_error``)."""
    args_error: str | None = None
    """Why the raw arguments could not be parsed, reported to the model as a tool error."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "args": dict(self.args)}
        if self.args_error:
            d["args_error"] = self.args_error
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        return cls(d["id"], d["name"], d.get("args") or {}, d.get("args_error"))


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation, in the engine's provider-neutral form."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    """For tool messages: the tool's name."""
    is_error: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Engine annotations (e.g. ``{"summary": true}``, ``{"refusal": true}``); never sent to a
    provider."""
    reasoning: tuple[Mapping[str, Any], ...] = ()
    """The provider's reasoning blocks, verbatim (Anthropic ``thinking`` with its signature):
    sent back to the provider that made them, as its API requires with tool results."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.is_error:
            d["is_error"] = True
        if self.meta:
            d["meta"] = dict(self.meta)
        if self.reasoning:
            d["reasoning"] = [dict(b) for b in self.reasoning]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            tool_calls=tuple(ToolCall.from_dict(c) for c in d.get("tool_calls") or ()),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            is_error=bool(d.get("is_error")),
            meta=d.get("meta") or {},
            reasoning=tuple(d.get("reasoning") or ()),
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and estimated cost; ``cost_usd`` is None when the price is unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else (
            self.cost_usd + other.cost_usd
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            cost,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an action returns: the trigger to fire, state updates, and messages to append."""

    trigger: str
    updates: Mapping[str, Any] = field(default_factory=dict)
    """New values for keys of ``RunState.data`` (top-level replacement, JSON-serialisable)."""
    messages: tuple[Message, ...] = ()
    """Messages appended to the history by this step (persisted as deltas)."""
    usage: Usage | None = None
    """Tokens and cost spent by this step, added to the run's totals."""
    note: str = ""
    """One human line describing the outcome (shown in the console and in ``show``)."""


@dataclass(frozen=True, slots=True)
class RunState:
    """The in-memory state of a run between steps; rebuilt from rows on resume."""

    run_id: str
    machine: str
    state: str
    step: int = 0
    """Number of committed steps; the next step's sequence number."""
    messages: tuple[Message, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    status: RunStatus = "running"

    def evolve(self, **changes: Any) -> RunState:
        """A copy with ``changes`` applied; unchanged fields are shared, not copied."""
        return dataclasses.replace(self, **changes)

    def apply(self, outcome: Outcome, dest: str) -> RunState:
        """The state after committing ``outcome`` and moving to ``dest``."""
        data = {**self.data, **outcome.updates} if outcome.updates else self.data
        messages = self.messages + outcome.messages if outcome.messages else self.messages
        usage = self.usage + outcome.usage if outcome.usage else self.usage
        return RunState(self.run_id, self.machine, dest, self.step + 1, messages, data, usage,
                        self.status)


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One persisted step: what ran in which state, and where it led."""

    run_id: str
    seq: int
    state: str
    action: str
    status: Literal["running", "succeeded", "failed", "interrupted"]
    trigger: str | None = None
    dest: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    note: str = ""
    plan: Mapping[str, Any] | None = None
    """For steps with side effects: the planned calls written before they run."""


@dataclass(frozen=True, slots=True)
class ForkOrigin:
    """Where a forked run came from: the run, and the step it was forked at (the fork holds
    that run's steps before it and begins at it)."""

    run_id: str
    step: int

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step": self.step}


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A run's row: what ``runs`` and ``show`` print."""

    run_id: str
    machine: str
    machine_path: str
    machine_hash: str
    status: RunStatus
    state: str
    workspace: str
    created_at: float
    updated_at: float
    steps: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    config: Mapping[str, Any] = field(default_factory=dict)
    """How the run was started (model, approval mode, policy, task, golden dir): used by resume."""
    error: str | None = None
    parent_run_id: str | None = None
    """The run whose ``run_machine`` state (or ``delegate`` call) started this one."""
    parent_step: int | None = None
    """The parent's step that started this run (with ``parent_run_id``)."""
    forked_from: ForkOrigin | None = None
    """Set for a run made by ``fork``: the run and step it continues from."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "machine": self.machine,
            "machine_path": self.machine_path,
            "status": self.status,
            "state": self.state,
            "workspace": self.workspace,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "steps": self.steps,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "error": self.error,
            "parent_run_id": self.parent_run_id,
            "parent_step": self.parent_step,
            "forked_from": self.forked_from.to_json() if self.forked_from else None,
        }


def _iso(ts: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="milliseconds")
