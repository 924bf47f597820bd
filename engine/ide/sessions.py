"""An editor's session as runs in the store: one run per prompt, each continuing the last.

The session id is written into every run's config (``labels``), so ``session/load`` in a new
process, against the same store, finds the session's runs, its machine, model, policy and
mode. Nothing else about a session is kept anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from engine.permissions.approvals import ApprovalMode
from engine.runs.service import Runs
from engine.vocabulary.state import Message, RunInfo

SESSION_LABEL = "acp_session"
"""The run-config label holding the session id."""
MODE_LABEL = "acp_mode"

ModeId = Literal["ask", "accept_edits", "read_only"]


@dataclass(frozen=True)
class Mode:
    """An approval mode offered to the editor as a session mode."""

    id: ModeId
    name: str
    description: str
    approval: ApprovalMode
    """How the run decides ``ask``: ``park`` (the editor is asked) or ``deny``."""
    accepts_edits: bool = False
    """A parked call that only writes files in the workspace is allowed without asking."""


MODES: dict[str, Mode] = {m.id: m for m in (
    Mode("ask", "Ask", "The policy decides; what it leaves to a person is asked here.",
         "park"),
    Mode("accept_edits", "Accept edits",
         "As Ask, but file edits the policy would ask about are allowed.", "park",
         accepts_edits=True),
    Mode("read_only", "Read only",
         "Plan and read: anything the policy would ask about is denied.", "deny"),
)}
DEFAULT_MODE: ModeId = "ask"


@dataclass
class Session:
    """One editor session (in memory; its runs are the durable part)."""

    id: str
    cwd: Path
    machine: str
    model: str | None = None
    policy: str | None = None
    mode: ModeId = DEFAULT_MODE
    run_id: str | None = None
    """The latest run (None before the first prompt)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """One turn at a time (a prompt, or the pending requests re-sent after a load)."""
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    """Set by ``session/cancel``; a new event for each turn."""

    def labels(self) -> dict[str, str]:
        return {SESSION_LABEL: self.id, MODE_LABEL: self.mode}


def runs_of(runs: Runs, session_id: str) -> list[RunInfo]:
    """The session's runs, oldest first."""
    return [r for r in runs.list_runs()
            if (r.config.get("labels") or {}).get(SESSION_LABEL) == session_id]


def restore(runs: Runs, session_id: str, cwd: Path) -> Session | None:
    """The session as its runs recorded it (None: the store has no run of it)."""
    chain = runs_of(runs, session_id)
    if not chain:
        return None
    last = chain[-1]
    labels = last.config.get("labels") or {}
    mode = labels.get(MODE_LABEL)
    return Session(session_id, cwd, str(last.config.get("machine_path")),
                   last.config.get("model"), last.config.get("policy_arg"),
                   mode if mode in MODES else DEFAULT_MODE, last.run_id)


def conversation(runs: Runs, session_id: str) -> tuple[str | None, tuple[Message, ...]]:
    """The latest run that holds the conversation, and its messages."""
    with runs.reader() as store:
        for info in reversed(runs_of(runs, session_id)):
            messages = store.messages(info.run_id)
            if messages:
                return info.run_id, tuple(messages)
    return None, ()


def settled(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation up to its last complete exchange, without the system prompt: a run
    stopped mid-turn leaves tool calls without results, which the next run must not carry."""
    kept = 0
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            waiting = {c.id for c in m.tool_calls}
        elif m.role == "tool" and m.tool_call_id is not None:
            waiting.discard(m.tool_call_id)
        if not waiting:
            kept = i + 1
    return tuple(m for m in messages[:kept] if m.role != "system")
