"""A prompt's turn: the runs it takes, driven through the ``Runs`` front door.

A prompt starts a run that continues the session's conversation. When the run parks on a
call the policy leaves to a person, each parked call goes to the editor; the answers are
recorded and the run is resumed, until it ends. ``session/cancel`` interrupts the run where
it is (the command's process tree ends with it): the run is ``interrupted`` and resumable.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

import anyio
from acp import Client, update_agent_message_text
from acp.schema import PromptResponse, StopReason, Usage

from engine.core.runner import RunResult
from engine.ide import permissions
from engine.ide.files import EditorFiles, EditorReads
from engine.ide.sessions import MODES, Session, conversation, settled
from engine.ide.updates import ToolLookup, Updates
from engine.runs.service import Runs
from engine.runs.stream import RunStream
from engine.tooling.spec import ToolSpec
from engine.vocabulary.errors import TurnstileError
from engine.vocabulary.run_data import REFUSAL, STOP_REASON

logger = logging.getLogger(__name__)
T = TypeVar("T")

DIED = ("running", "crashed")
"""Statuses of a run whose driver went away mid-turn (a ``running`` run another live
process drives refuses the resume: its lease is held)."""


class Turns:
    """Drives the sessions' runs; one ``Runs`` for the whole process."""

    def __init__(self, runs: Runs, client: Client) -> None:
        self.runs = runs
        self.client = client
        self.who = "acp client"
        """Who decides in the audit log (the editor's name, once it says it)."""
        self.live: dict[str, str] = {}
        """Session id -> the run being driven for it."""
        self.editor_writes = False
        """The editor writes files (``fs.writeTextFile``): changed files go to it too."""
        self.editor_reads = False
        """The editor reads files (``fs.readTextFile``): ``read_file`` sees its buffers."""

    # -- the entry points --------------------------------------------------------------------

    async def prompt(self, s: Session, text: str) -> PromptResponse:
        """One user prompt, to its stop reason."""
        async with s.lock:
            s.cancelled = anyio.Event()
            if s.run_id is not None and self._parked(s):
                stop = await self._continue(s)
                if stop.stop_reason == "cancelled":
                    return stop
            earlier = settled(conversation(self.runs, s.id)[1]) if s.run_id else ()
            stream = self.runs.stream(
                s.machine, task=text, workspace=s.cwd, model=s.model, policy=s.policy,
                approval=MODES[s.mode].approval, labels=s.labels(), history=earlier,
                read_text=self._reads(s))
            return await self._drive(s, stream, self._updates(s, _no_tools))

    async def pending(self, s: Session) -> None:
        """After a load: ask again about what the session's last run waits for, and go on;
        a run whose agent died mid-turn is resumed from its last committed step (what that
        step started is settled, never run twice) to the end of its turn. Then the session
        waits for the user. A run the user cancelled stays as it is."""
        async with s.lock:
            s.cancelled = anyio.Event()
            if s.run_id is None:
                return
            status = self.runs.show(s.run_id).status
            if status == "waiting_approval":
                await self._continue(s)
            elif status in DIED:
                await self._drive(s, self._resume(s), self._updates(s, _no_tools))

    def cancel(self, s: Session) -> None:
        """``session/cancel``: end the turn now (the run stops before its next commit)."""
        s.cancelled.set()
        run_id = self.live.get(s.id)
        if run_id is not None:
            self.runs.cancel(run_id)

    # -- driving ---------------------------------------------------------------------------------

    def _parked(self, s: Session) -> bool:
        assert s.run_id is not None
        return self.runs.show(s.run_id).status == "waiting_approval"

    async def _continue(self, s: Session) -> PromptResponse:
        """Decide a parked run's calls with the editor, then resume it."""
        assert s.run_id is not None
        updates = self._updates(s, self.tools_of(s, s.run_id))
        if not await self._decide(s, updates):
            return PromptResponse(stop_reason="cancelled")
        return await self._drive(s, self._resume(s), updates)

    async def _drive(self, s: Session, stream: RunStream, updates: Updates) -> PromptResponse:
        """Drive a run (and its resumes after each park) to the end of the turn."""
        while True:
            async with stream as events:
                s.run_id = stream.run_id
                assert stream.prepared is not None
                updates.tools = stream.prepared.runner.parts.tools.get
                self.live[s.id] = s.run_id
                try:
                    if s.cancelled.is_set():
                        self.runs.cancel(s.run_id)
                    async for event in events:
                        await updates.event(event)
                        if s.cancelled.is_set():
                            break
                finally:
                    self.live.pop(s.id, None)
            result = stream.result
            assert result is not None
            if result.status != "waiting_approval" or s.cancelled.is_set():
                return await self._stopped(s, result)
            if not await self._decide(s, updates):
                return PromptResponse(stop_reason="cancelled")
            stream = self._resume(s)

    def _resume(self, s: Session) -> RunStream:
        """The session's run resumed, in its mode, reading through the editor if it offers."""
        assert s.run_id is not None
        return self.runs.stream_resume(s.run_id, approval=MODES[s.mode].approval,
                                       read_text=self._reads(s))

    def _reads(self, s: Session) -> EditorReads | None:
        return EditorReads(self.client, s.id) if self.editor_reads else None

    async def _decide(self, s: Session, updates: Updates) -> bool:
        """Ask the editor about each parked call (in ``accept_edits``, a call that only
        writes a workspace file is allowed without asking); False when the turn was
        cancelled or an answer was ``cancelled`` (what is undecided stays pending)."""
        assert s.run_id is not None
        for pending in self.runs.pending_approvals(s.run_id):
            shown = await updates.call(pending.call_id, pending.tool, pending.arguments,
                                       "pending")
            spec = updates.tools(pending.tool)
            if MODES[s.mode].accepts_edits and _edits_only(spec):
                answer: permissions.Answer | None = "allow"
                who = f"{self.who} (accept edits mode)"
            else:
                answer = await _unless_cancelled(
                    permissions.ask(self.client, s.id, pending, shown), s.cancelled)
                who = self.who
            if answer is None:
                return False
            try:
                permissions.record(self.runs, pending, answer, who)
            except TurnstileError as exc:  # decided meanwhile, or stale: the resume says
                logger.warning("call %s: %s", pending.call_id, exc)

        return not s.cancelled.is_set()

    async def _stopped(self, s: Session, result: RunResult) -> PromptResponse:
        """The stop reason of a run that ended (or stopped) and what it used."""
        usage = result.state.usage
        used = Usage(total_tokens=usage.input_tokens + usage.output_tokens,
                     input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
        reason: StopReason = "end_turn"
        if s.cancelled.is_set() or result.status == "interrupted":
            reason = "cancelled"
        elif result.status == "completed" and REFUSAL.get(result.state.data):
            reason = "refusal"
        elif result.status == "failed" and STOP_REASON.get(result.state.data):
            reason = "max_turn_requests"
        elif result.status == "failed" and "max_tokens" in (result.error or ""):
            reason = "max_tokens"
        elif result.status != "completed":
            why = f": {result.error}" if result.error else ""
            await Updates(self.client, s.id, s.cwd, _no_tools).send(update_agent_message_text(
                f"\n\nThe run {result.state.run_id} ended {result.status}{why}."))
        return PromptResponse(stop_reason=reason, usage=used)

    def _updates(self, s: Session, tools: ToolLookup) -> Updates:
        files = EditorFiles(self.client, s.id, s.cwd) if self.editor_writes else None
        return Updates(self.client, s.id, s.cwd, tools, files)

    def tools_of(self, s: Session, run_id: str) -> ToolLookup:
        """The tools a stopped run was composed with (its calls are shown by their specs); for
        a completed run, those of the session's machine as a new run would have them (composed,
        never stored); none when neither can be composed."""
        try:
            if self.runs.show(run_id).status == "completed":
                prepared = self.runs.prepare(s.machine, task="", workspace=s.cwd,
                                             model=s.model, policy=s.policy)
            else:
                prepared = self.runs.prepare_resume(run_id)
        except TurnstileError as exc:
            logger.info("run %s: its tools are shown without their specs: %s", run_id, exc)
            return _no_tools
        try:
            return prepared.runner.parts.tools.get
        finally:
            prepared.close()


def _edits_only(spec: ToolSpec | None) -> bool:
    """A call that writes declared workspace files and runs nothing else."""
    return (spec is not None and bool(spec.write_paths) and spec.command_arg is None
            and spec.risk == "write")


def _no_tools(name: str) -> ToolSpec | None:
    return None


async def _unless_cancelled(asking: Awaitable[T], cancelled: anyio.Event) -> T | None:
    """``asking``'s result, or None as soon as the turn is cancelled."""
    result: T | None = None

    async with anyio.create_task_group() as tg:
        async def ask() -> None:
            nonlocal result
            result = await asking
            tg.cancel_scope.cancel()

        async def watch() -> None:
            await cancelled.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(ask)
        tg.start_soon(watch)
    return result
