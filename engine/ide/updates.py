"""A session's ``session/update`` notifications: a live run's events as they happen, and a
stored conversation replayed as the same updates (after ``session/load``).

A tool call is announced once (``tool_call``, with its kind, locations and, for a write, the
diff its dry run plans) and then updated by id (``tool_call_update``): the id is the call's
own, stored with the run, so a replayed call and a live one are the same call to the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp import (
    Client,
    update_agent_message_text,
    update_agent_thought_text,
    update_user_message_text,
)
from acp.schema import (
    AgentPlanUpdate,
    FileEditToolCallContent,
    PlanEntry,
    PlanEntryStatus,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
)

from engine.ide.files import EditorFiles
from engine.ide.tools import CallView, Content, text, view
from engine.runs.events import RunEvent
from engine.tooling.spec import ToolSpec
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import PLAN
from engine.vocabulary.state import Message

ToolLookup = Callable[[str], "ToolSpec | None"]
"""The spec of a tool by name, as the run registered it."""

_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending", "in_progress": "in_progress", "done": "completed",
    "completed": "completed"}


class Updates:
    """Sends one session's updates to the editor."""

    def __init__(self, client: Client, session_id: str, workspace: Path,
                 tools: ToolLookup, files: EditorFiles | None = None) -> None:
        self.client = client
        self.session_id = session_id
        self.workspace = workspace
        self.tools = tools
        self.files = files
        """Where changed files go besides the disk (an editor that writes files)."""
        self.announced: set[str] = set()
        self._diffs: dict[str, tuple[FileEditToolCallContent, ...]] = {}

    async def send(self, update: Any) -> None:
        await self.client.session_update(session_id=self.session_id, update=update)

    # -- a live run -------------------------------------------------------------------------

    async def event(self, event: RunEvent) -> None:
        """One run event, as the update the editor shows (most kinds show nothing)."""
        p = event.payload
        if event.kind == EventKind.TEXT_DELTA and p.get("text"):
            await self.send(update_agent_message_text(p["text"]))
        elif event.kind == EventKind.TOOL_STARTED:
            await self.call(p["call_id"], p["tool"], p.get("args") or {}, "in_progress")
        elif event.kind == EventKind.TOOL_CALL:
            await self.result(p)
        elif event.kind == EventKind.FILE_CHANGED and self.files is not None:
            await self.files.changed(p)
        elif event.kind == EventKind.APPROVAL and p.get("decision") == "deny":
            await self.call(p["call_id"], p["tool"], p.get("args") or {}, "pending")
            await self.refused(p["call_id"], str(p.get("reason") or "denied"))

    async def call(self, call_id: str, tool: str, args: Mapping[str, Any],
                   status: ToolCallStatus, *, diff: bool = True) -> CallView:
        """Announce a call (or move an announced one to ``status``)."""
        shown = view(self.tools(tool), tool, args, self.workspace, diff=diff and
                     call_id not in self._diffs)
        if call_id in self.announced:
            await self.send(ToolCallProgress(session_update="tool_call_update",
                                             tool_call_id=call_id, status=status))
            return shown
        self.announced.add(call_id)
        self._diffs[call_id] = shown.diffs
        content: list[Content] = list(shown.diffs)
        await self.send(ToolCallStart(
            session_update="tool_call", tool_call_id=call_id, title=shown.title,
            kind=shown.kind, status=status, content=content or None,
            locations=list(shown.locations) or None, raw_input=dict(args)))
        return shown

    def diffs(self, call_id: str) -> tuple[FileEditToolCallContent, ...]:
        return self._diffs.get(call_id, ())

    async def result(self, p: Mapping[str, Any]) -> None:
        """A call's result: its status and output (a write keeps its diff)."""
        call_id, tool = p["call_id"], p["tool"]
        if call_id not in self.announced:  # refused before it started
            await self.call(call_id, tool, p.get("args") or {}, "pending", diff=False)
        content: list[Content] = [*self.diffs(call_id), text(str(p.get("content") or ""))]
        await self.send(ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id,
            status="failed" if p.get("is_error") else "completed", content=content))
        spec = self.tools(tool)
        plan = p.get(PLAN.name)
        if spec is not None and PLAN.name in spec.records_keys and isinstance(plan, list):
            await self.plan(plan)

    async def refused(self, call_id: str, why: str) -> None:
        """A call that will not run."""
        await self.send(ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id, status="failed",
            content=[*self.diffs(call_id), text(why)]))

    async def plan(self, steps: Sequence[Any]) -> None:
        """The run's plan (``[{step, status}]``) as the editor's plan view."""
        entries = [PlanEntry(content=str(s.get("step", "")), priority="medium",
                             status=_PLAN_STATUS.get(str(s.get("status")), "pending"))
                   for s in steps if isinstance(s, Mapping)]
        await self.send(AgentPlanUpdate(session_update="plan", entries=entries))

    # -- a stored conversation --------------------------------------------------------------

    async def replay(self, messages: Sequence[Message]) -> None:
        """The conversation as a live run sent it: the user's prompts, the model's text (and
        its kept thinking, as thought chunks), and each tool call with its result (a call
        without one is left pending)."""
        for m in messages:
            if m.role == "user" and m.content:
                await self.send(update_user_message_text(m.content))
            elif m.role == "assistant":
                for block in m.reasoning:  # a provider's thinking, kept with the message
                    if isinstance(block.get("thinking"), str) and block["thinking"]:
                        await self.send(update_agent_thought_text(block["thinking"]))
                if m.content:
                    await self.send(update_agent_message_text(m.content))
                for c in m.tool_calls:
                    await self.call(c.id, c.name, c.args, "pending", diff=False)
            elif m.role == "tool" and m.tool_call_id is not None:
                await self.send(ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=m.tool_call_id,
                    status="failed" if m.is_error else "completed", content=[text(m.content)]))
