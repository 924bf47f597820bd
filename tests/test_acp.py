"""``turnstile acp``: the agent driven over real stdio by a client written on the ACP SDK's
client side, with the scripted model (``ENGINE_MODEL=scripted:PATH``) and a real store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)
from conftest import ROOT, engine_env

from engine.runs.service import Runs

GUARD_S = 120
"""A guard against a hang, never a bound on how long anything may take."""
HOLD = "hold"
"""An answer the editor never gives (the agent is killed while it waits)."""
REFUSE = "refuse"
"""A buffer the editor refuses to read (``fs/read_text_file`` answers an error)."""


class Editor:
    """The client side: records every update and permission request; answers the requests
    with ``answers`` in order (an option id, ``cancelled``, or ``hold``)."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[dict[str, Any]] = []
        self.written: list[tuple[str, str]] = []
        self.buffers: dict[str, str] = {}
        """Path -> the text of its open buffer (``fs/read_text_file`` answers with it)."""
        self.reads: list[str] = []
        self.answers = list(answers or [])
        self._changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(by_alias=True, exclude_none=True,
                                                           mode="json")))
        self._changed.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.asked.append({"session": session_id,
                           "call": tool_call.model_dump(by_alias=True, exclude_none=True,
                                                        mode="json"),
                           "options": [o.model_dump(by_alias=True, mode="json")
                                       for o in options]})
        self._changed.set()
        answer = self.answers.pop(0) if self.answers else HOLD
        if answer == HOLD:
            await asyncio.Event().wait()
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=answer))

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> WriteTextFileResponse:
        self.written.append((path, content))
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any
                             ) -> ReadTextFileResponse:
        self.reads.append(path)
        if self.buffers.get(path) == REFUSE:
            raise RequestError.internal_error({"details": "no buffer for it"})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    def on_connect(self, conn: Any) -> None:
        pass

    async def until(self, ready: Callable[[], bool]) -> None:
        """Wait until ``ready()`` holds, re-checked on every message from the agent."""
        while not ready():
            self._changed.clear()
            await self._changed.wait()

    def of(self, kind: str, session: str | None = None) -> list[dict[str, Any]]:
        return [u for s, u in self.updates
                if u["sessionUpdate"] == kind and (session is None or s == session)]

    def text(self, session: str | None = None) -> str:
        return "".join(u["content"]["text"] for u in self.of("agent_message_chunk", session))


def _turns(tmp_path: Path, turns: list[dict[str, Any]]) -> Path:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(turns))
    return path


@asynccontextmanager
async def agent(editor: Editor, tmp_path: Path, turns: Path,
                capabilities: ClientCapabilities | None = None
                ) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """``python -m engine acp`` on a store in ``tmp_path``, initialized."""
    env = engine_env({"ENGINE_MODEL": f"scripted:{turns}"})
    async with spawn_agent_process(editor, sys.executable, "-m", "engine", "acp", "--store",
                                   str(tmp_path / "engine.db"), env=env, cwd=ROOT) as (conn, proc):
        init = await conn.initialize(protocol_version=1,
                                     client_capabilities=capabilities or ClientCapabilities())
        assert init.protocol_version == 1 and init.agent_capabilities is not None
        assert init.agent_capabilities.load_session is True
        yield conn, proc


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _calls(editor: Editor, call_id: str) -> list[dict[str, Any]]:
    return [u for _, u in editor.updates if u.get("toolCallId") == call_id]


def test_an_approval_answered_allow_once_runs_the_write_and_its_diff_is_shown(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    turns = _turns(tmp_path, [
        {"text": "Writing.", "tool_calls": [
            {"name": "write_file", "args": {"path": "hello.txt", "content": "hi there\n"}},
            {"name": "edit_file", "args": {"path": "notes.txt", "old": "beta", "new": "gamma"}}]},
        {"text": "Both files changed."},
        {"text": "The follow-up answer."}])
    editor = Editor(["allow_once", "allow_once"])

    async def main() -> tuple[str, str, str]:
        async with agent(editor, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            first = await conn.prompt(session_id=s.session_id, prompt=[text_block("write")])
            second = await conn.prompt(session_id=s.session_id, prompt=[text_block("more")])
            return s.session_id, first.stop_reason, second.stop_reason

    session, first, second = asyncio.run(asyncio.wait_for(main(), GUARD_S))
    assert (first, second) == ("end_turn", "end_turn")
    assert (ws / "hello.txt").read_text() == "hi there\n"
    assert (ws / "notes.txt").read_text() == "alpha\ngamma\n"
    assert [a["call"]["kind"] for a in editor.asked] == ["edit", "edit"]
    options = editor.asked[0]["options"]
    assert [o["kind"] for o in options] == ["allow_once", "allow_always", "reject_once"]
    assert "for this run" in options[1]["name"]
    # the diffs: in the permission request and in the write's tool call, the whole new text
    create, edit = (a["call"]["toolCallId"] for a in editor.asked)
    assert editor.asked[0]["call"]["content"] == [
        {"type": "diff", "path": str(ws / "hello.txt"), "newText": "hi there\n"}]
    started = [u for u in _calls(editor, edit) if u["sessionUpdate"] == "tool_call"]
    assert started[0]["kind"] == "edit" and started[0]["content"] == [
        {"type": "diff", "path": str(ws / "notes.txt"), "oldText": "alpha\nbeta\n",
         "newText": "alpha\ngamma\n"}]
    assert started[0]["locations"] == [{"path": str(ws / "notes.txt")}]
    for call in (create, edit):
        statuses = [u.get("status") for u in _calls(editor, call)]
        assert statuses[0] == "pending" and statuses[-1] == "completed", statuses
        assert "in_progress" in statuses
    # the follow-up continues the same conversation: the script's third turn answers it
    assert editor.text(session).endswith("The follow-up answer.")
    assert "Both files changed." in editor.text(session)


def test_cancel_during_a_command_ends_it_and_the_prompt_returns_cancelled(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    marker = "61.25"
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "run_shell", "args": {"command": f"sleep {marker}"}}]},
        {"text": "never reached"}])
    editor = Editor()

    async def main() -> str:
        async with agent(editor, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=s.session_id, prompt=[text_block("wait")]))
            while not _sleeping(marker):  # the command's process exists: cancel now
                assert not prompt.done(), prompt.result()
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=s.session_id)
            return (await prompt).stop_reason

    assert asyncio.run(asyncio.wait_for(main(), GUARD_S)) == "cancelled"
    (run,) = Runs(tmp_path / "engine.db").list_runs()
    assert run.status == "interrupted"  # resumable
    assert not _sleeping(marker)
    assert editor.asked == []


def _sleeping(marker: str) -> bool:
    """Whether a process of ours runs ``sleep MARKER``."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sleep" in cmdline[0] and marker.encode() in cmdline:
            return True
    return False


def test_a_pending_permission_survives_a_killed_agent_and_is_asked_again_on_load(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"text": "First line.", "tool_calls": [
            {"name": "run_shell", "args": {"command": "echo one >> out.txt"}}]},
        {"text": "Second line.", "tool_calls": [
            {"name": "run_shell", "args": {"command": "echo two >> out.txt"}}]},
        {"text": "Stopped after the refusal."}])
    first = Editor(["allow_once", HOLD])

    async def before_kill() -> str:
        async with agent(first, tmp_path, turns) as (conn, proc):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=s.session_id, prompt=[text_block("append twice")]))
            await first.until(lambda: len(first.asked) == 2)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            prompt.cancel()
            return s.session_id

    session = asyncio.run(asyncio.wait_for(before_kill(), GUARD_S))
    assert (ws / "out.txt").read_text() == "one\n"
    pending_call = first.asked[1]["call"]["toolCallId"]
    second = Editor(["reject_once"])

    async def after_restart() -> None:
        async with agent(second, tmp_path, turns) as (conn, _):
            await conn.load_session(cwd=str(ws), session_id=session, mcp_servers=[])
            replayed = list(second.updates)
            await second.until(lambda: "Stopped after the refusal." in second.text())
            assert replayed[0][1]["sessionUpdate"] == "user_message_chunk"
            assert replayed[0][1]["content"]["text"] == "append twice"

    asyncio.run(asyncio.wait_for(after_restart(), GUARD_S))
    # the replay: the same call ids as live; the pending request re-sent, once, after it
    ids = [u["toolCallId"] for u in second.of("tool_call")]
    assert ids[:2] == [first.asked[0]["call"]["toolCallId"], pending_call]
    assert [a["call"]["toolCallId"] for a in second.asked] == [pending_call]
    assert second.asked[0]["call"]["rawInput"] == {"command": "echo two >> out.txt"}
    assert _calls(second, pending_call)[-1]["status"] == "failed"  # refused
    assert (ws / "out.txt").read_text() == "one\n"  # the line before the kill: not repeated
    runs = Runs(tmp_path / "engine.db")
    (run,) = runs.list_runs()
    assert run.status == "completed" and runs.pending_approvals() == []


def test_two_sessions_run_at_once(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / "a.txt").write_text("a\n")
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "run_shell", "args": {"command": "sleep 0.5"}}]},
        {"text": "Slept."}])
    editor = Editor()

    async def main() -> tuple[list[str], list[str]]:
        async with agent(editor, tmp_path, turns) as (conn, _):
            a, b = [await conn.new_session(cwd=str(ws), mcp_servers=[]) for _ in range(2)]
            stops = await asyncio.gather(*(
                conn.prompt(session_id=s.session_id, prompt=[text_block(f"go {n}")])
                for n, s in enumerate((a, b))))
            return [a.session_id, b.session_id], [s.stop_reason for s in stops]

    sessions, stops = asyncio.run(asyncio.wait_for(main(), GUARD_S))
    assert stops == ["end_turn", "end_turn"] and sessions[0] != sessions[1]
    for s in sessions:
        assert editor.text(s) == "Slept."
        assert len(editor.of("tool_call", s)) == 1
    runs = Runs(tmp_path / "engine.db").list_runs()
    labels = sorted(r.config["labels"]["acp_session"] for r in runs)
    assert labels == sorted(sessions) and {r.status for r in runs} == {"completed"}


def test_read_only_mode_denies_without_asking(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "write_file", "args": {"path": "x.txt", "content": "x"}}]},
        {"text": "Could not write."}])
    editor = Editor()

    async def main() -> str:
        async with agent(editor, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            assert s.modes is not None and s.modes.current_mode_id == "ask"
            assert [m.id for m in s.modes.available_modes] == ["ask", "accept_edits",
                                                               "read_only"]
            await conn.set_session_mode(session_id=s.session_id, mode_id="read_only")
            return (await conn.prompt(session_id=s.session_id,
                                      prompt=[text_block("write")])).stop_reason

    assert asyncio.run(asyncio.wait_for(main(), GUARD_S)) == "end_turn"
    assert editor.asked == [] and not (ws / "x.txt").exists()
    assert editor.of("current_mode_update")[0]["currentModeId"] == "read_only"
    assert [u["status"] for u in editor.of("tool_call_update")][-1] == "failed"


def test_accept_edits_mode_writes_without_asking(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"tool_calls": [
            {"name": "update_plan", "args": {"steps": [
                {"step": "write x", "status": "in_progress"},
                {"step": "check", "status": "pending"}]}},
            {"name": "write_file", "args": {"path": "x.txt", "content": "x\n"}}]},
        {"text": "Written."}])
    editor = Editor()

    async def main() -> str:
        async with agent(editor, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            await conn.set_session_mode(session_id=s.session_id, mode_id="accept_edits")
            return (await conn.prompt(session_id=s.session_id,
                                      prompt=[text_block("write")])).stop_reason

    assert asyncio.run(asyncio.wait_for(main(), GUARD_S)) == "end_turn"
    assert editor.asked == [] and (ws / "x.txt").read_text() == "x\n"
    (plan,) = editor.of("plan")  # the planning tool's plan, as the editor's plan view
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("write x", "in_progress"), ("check", "pending")]
    assert sorted(u["kind"] for u in editor.of("tool_call")) == ["edit", "think"]


def test_malformed_input_gets_error_responses_and_the_agent_goes_on(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "acp", "--store", str(tmp_path / "engine.db")],
        cwd=ROOT, env=engine_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    sent = [
        b"this is not json\n",
        b"[1, 2]\n",
        b'{"jsonrpc": "2.0", "id": 7, "method": 12}\n',
        b'{"jsonrpc": "2.0", "id": 8, "method": "no/such/method", "params": {}}\n',
        b'{"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": {"sessionId": 1}}\n',
        b'{"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": '
        b'{"protocolVersion": 1, "clientCapabilities": {}}}\n',
    ]
    try:
        replies = []
        for line in sent:
            proc.stdin.write(line)
            proc.stdin.flush()
            replies.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        err = proc.stderr.read() if proc.stderr else b""
        proc.wait(timeout=GUARD_S)
    codes = [(r["id"], r.get("error", {}).get("code")) for r in replies]
    assert codes[:5] == [(None, -32700), (None, -32600), (7, -32600), (8, -32601),
                         (9, -32602)], codes
    assert replies[5]["id"] == 10 and replies[5]["result"]["protocolVersion"] == 1
    assert proc.returncode == 0, err


def test_without_the_sdk_acp_names_the_extra_and_exits_2() -> None:
    hide = ("import sys; sys.modules['acp'] = None; from engine.cli.main import main; "
            "sys.exit(main(['acp']))")
    out = subprocess.run([sys.executable, "-c", hide], cwd=ROOT, env=engine_env(),
                         capture_output=True, text=True, timeout=GUARD_S)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "pip install turnstile-fsm[acp]" in out.stderr


def test_config_options_pick_the_model_and_machine_for_the_next_runs(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [{"text": "unused"}])

    async def main() -> None:
        async with agent(Editor(), tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            assert s.config_options is not None
            current = {o.id: o.current_value for o in s.config_options}
            assert current == {"model": "default", "machine": "coding_agent"}
            picked = await conn.set_config_option(config_id="model", session_id=s.session_id,
                                                  value="openai:gpt-4.1")
            assert {o.id: o.current_value for o in picked.config_options}[
                "model"] == "openai:gpt-4.1"
            with pytest.raises(RequestError):
                await conn.set_config_option(config_id="machine", session_id=s.session_id,
                                             value="no_such_machine")

    asyncio.run(asyncio.wait_for(main(), GUARD_S))


def test_a_run_whose_agent_died_mid_command_resumes_on_load_without_repeating(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    marker = "61.75"
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one >> out.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "args": {"command": f"sleep {marker}"}}]},
        {"text": "Back after the crash."}])
    first = Editor(["allow_once"])

    async def before_kill() -> str:
        async with agent(first, tmp_path, turns) as (conn, proc):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=s.session_id, prompt=[text_block("go")]))
            while not _sleeping(marker):
                assert not prompt.done(), prompt.result()
                await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            prompt.cancel()
            return s.session_id

    session = asyncio.run(asyncio.wait_for(before_kill(), GUARD_S))
    second = Editor()

    async def after_restart() -> None:
        async with agent(second, tmp_path, turns) as (conn, _):
            await conn.load_session(cwd=str(ws), session_id=session, mcp_servers=[])
            await second.until(lambda: "Back after the crash." in second.text())

    asyncio.run(asyncio.wait_for(after_restart(), GUARD_S))
    assert (ws / "out.txt").read_text() == "one\n"
    assert second.asked == [] and not _sleeping(marker)  # the leftover was stopped
    (run,) = Runs(tmp_path / "engine.db").list_runs()
    assert run.status == "completed"


def test_load_in_a_new_process_replays_a_finished_conversation_with_the_same_ids(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"text": "Writing.", "tool_calls": [
            {"name": "write_file", "args": {"path": "a.txt", "content": "a\n"}}]},
        {"text": "Written."},
        {"text": "Next answer."}])
    live = Editor(["allow_once"])

    async def first() -> str:
        async with agent(live, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            await conn.prompt(session_id=s.session_id, prompt=[text_block("write a")])
            return s.session_id

    session = asyncio.run(asyncio.wait_for(first(), GUARD_S))
    replay = Editor()

    async def second() -> str:
        async with agent(replay, tmp_path, turns) as (conn, _):
            loaded = await conn.load_session(cwd=str(ws), session_id=session, mcp_servers=[])
            assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"
            shown = len(replay.updates)
            stop = await conn.prompt(session_id=session, prompt=[text_block("and then?")])
            assert replay.text(session).endswith("Next answer.")
            del replay.updates[shown:]
            return stop.stop_reason

    assert asyncio.run(asyncio.wait_for(second(), GUARD_S)) == "end_turn"
    kinds = [u["sessionUpdate"] for _, u in replay.updates]
    assert kinds == ["user_message_chunk", "agent_message_chunk", "tool_call",
                     "tool_call_update", "agent_message_chunk"], kinds
    (call,) = replay.of("tool_call")
    assert call["toolCallId"] == live.asked[0]["call"]["toolCallId"] and call["kind"] == "edit"
    assert replay.of("tool_call_update")[0]["status"] == "completed"
    assert replay.asked == [] and (ws / "a.txt").read_text() == "a\n"
    (first_run, second_run) = Runs(tmp_path / "engine.db").list_runs()
    assert first_run.config["labels"] == second_run.config["labels"]


def test_a_cancelled_answer_leaves_the_call_pending_and_the_next_prompt_asks_again(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "write_file", "args": {"path": "b.txt", "content": "b\n"}}]},
        {"text": "Wrote b."},
        {"text": "And answered the second prompt."}])
    editor = Editor(["cancelled", "allow_once"])
    runs = Runs(tmp_path / "engine.db")

    async def main() -> tuple[str, int, str]:
        async with agent(editor, tmp_path, turns) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            first = await conn.prompt(session_id=s.session_id, prompt=[text_block("write b")])
            waiting = len(runs.pending_approvals())
            second = await conn.prompt(session_id=s.session_id, prompt=[text_block("go on")])
            return first.stop_reason, waiting, second.stop_reason

    first, waiting, second = asyncio.run(asyncio.wait_for(main(), GUARD_S))
    assert (first, waiting, second) == ("cancelled", 1, "end_turn")
    assert [a["call"]["toolCallId"] for a in editor.asked] == [
        editor.asked[0]["call"]["toolCallId"]] * 2
    assert (ws / "b.txt").read_text() == "b\n" and runs.pending_approvals() == []
    assert editor.text().endswith("And answered the second prompt.")


def test_an_editor_that_writes_files_gets_each_changed_file(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    turns = _turns(tmp_path, [
        {"tool_calls": [{"name": "write_file", "args": {"path": "c.txt", "content": "c\n"}},
                        {"name": "run_shell", "args": {"command": "echo d > d.txt"}}]},
        {"text": "Wrote c and d."}])
    editor = Editor(["allow_once", "allow_once"])
    fs = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True,
                                                      write_text_file=True))

    async def main() -> str:
        async with agent(editor, tmp_path, turns, fs) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            return (await conn.prompt(session_id=s.session_id,
                                      prompt=[text_block("write")])).stop_reason

    assert asyncio.run(asyncio.wait_for(main(), GUARD_S)) == "end_turn"
    assert sorted(editor.written) == [(str(ws / "c.txt"), "c\n"), (str(ws / "d.txt"), "d\n")]
    assert (ws / "c.txt").read_text() == "c\n"


def _results(editor: Editor) -> list[tuple[str, Any, str, str]]:
    """Each finished call in order: its tool (by its title), its input, status and text."""
    started = {u["toolCallId"]: u for u in editor.of("tool_call")}
    out = []
    for u in editor.of("tool_call_update"):
        texts = [c["content"]["text"] for c in u.get("content") or () if c["type"] == "content"]
        if u.get("status") in ("completed", "failed") and texts:
            call = started[u["toolCallId"]]
            out.append((call["title"], call.get("rawInput"), u["status"], texts[-1]))
    return out


READ_AND_EDIT = [
    {"tool_calls": [{"name": "read_file", "args": {"path": "notes.txt"}},
                    {"name": "read_file", "args": {"path": "../outside.txt"}}]},
    {"tool_calls": [{"name": "edit_file", "args": {"path": "notes.txt", "old": "alpha",
                                                   "new": "ALPHA"}}]},
    {"text": "Done."}]


def _read_and_edit(tmp_path: Path, editor: Editor,
                   capabilities: ClientCapabilities | None) -> tuple[Path, str]:
    """The READ_AND_EDIT turns on a workspace whose notes.txt is ``alpha\\nbeta\\n`` on disk;
    the workspace and the prompt's stop reason."""
    ws = _workspace(tmp_path)
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "outside.txt").write_text("outside the workspace\n")
    turns = _turns(tmp_path, READ_AND_EDIT)

    async def main() -> str:
        async with agent(editor, tmp_path, turns, capabilities) as (conn, _):
            s = await conn.new_session(cwd=str(ws), mcp_servers=[])
            return (await conn.prompt(session_id=s.session_id,
                                      prompt=[text_block("read, then edit")])).stop_reason

    return ws, asyncio.run(asyncio.wait_for(main(), GUARD_S))


def test_an_editor_that_reads_files_shows_its_unsaved_buffer(tmp_path: Path) -> None:
    editor = Editor(["allow_once", "allow_once", "allow_once"])
    notes = tmp_path / "ws" / "notes.txt"
    editor.buffers[str(notes)] = "alpha\nbeta, unsaved\n"
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    _, stop = _read_and_edit(tmp_path, editor, reads)
    assert stop == "end_turn"
    (_, _, read_status, shown), (_, outside, out_status, refused), (_, _, _, edit) = \
        _results(editor)
    assert read_status == "completed" and "beta, unsaved" in shown, shown
    assert "unsaved buffer" in shown
    # the path checks come first: a path outside the workspace never reaches the editor
    assert outside == {"path": "../outside.txt"} and out_status == "failed", refused
    assert "outside the workspace" in refused  # allowed by the editor, refused by the tool
    assert editor.reads == [str(notes)]
    # the buffer's hash is not the disk's: the edit is refused, the disk and buffer kept
    assert "changed since you read it" in edit, edit
    assert notes.read_text() == "alpha\nbeta\n" and editor.written == []


def test_an_editor_buffer_like_the_disk_keeps_the_disk_hash_and_edits_go_on(
        tmp_path: Path) -> None:
    editor = Editor(["allow_once", "allow_once", "allow_once"])
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    ws, stop = _read_and_edit(tmp_path, editor, reads)
    assert stop == "end_turn"
    (_, _, _, shown), _, (_, _, edit_status, edit) = _results(editor)
    assert "beta" in shown and "unsaved" not in shown
    assert editor.reads == [str(ws / "notes.txt")]
    assert edit_status == "completed", edit
    assert (ws / "notes.txt").read_text() == "ALPHA\nbeta\n"


@pytest.mark.parametrize("reads, buffer", [(False, "alpha\nbeta, unsaved\n"), (True, REFUSE)])
def test_an_editor_that_does_not_read_files_leaves_reads_on_disk(
        tmp_path: Path, reads: bool, buffer: str) -> None:
    editor = Editor(["allow_once", "allow_once", "allow_once"])
    notes = str(tmp_path / "ws" / "notes.txt")
    editor.buffers[notes] = buffer
    fs = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=reads))
    ws, stop = _read_and_edit(tmp_path, editor, fs)
    assert stop == "end_turn"
    (_, _, read_status, shown), _, _ = _results(editor)
    assert read_status == "completed" and "beta" in shown and "unsaved" not in shown, shown
    assert editor.reads == ([notes] if reads else [])  # asked, refused: read on disk
    assert (ws / "notes.txt").read_text() == "ALPHA\nbeta\n"


def test_replay_sends_kept_thinking_as_thought_chunks(tmp_path: Path) -> None:
    from engine.ide.updates import Updates
    from engine.vocabulary.state import Message, ToolCall

    editor = Editor()
    messages = [
        Message("system", "the system prompt is not replayed"),
        Message("user", "why?"),
        Message("assistant", "Because.", tool_calls=(ToolCall("c1", "no_such_tool", {}),),
                reasoning=({"type": "thinking", "thinking": "Let me think.",
                            "signature": "s"},)),
    ]
    updates = Updates(editor, "s1", tmp_path, lambda name: None)  # type: ignore[arg-type]
    asyncio.run(updates.replay(messages))
    assert [u["sessionUpdate"] for _, u in editor.updates] == [
        "user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call"]
    assert editor.updates[1][1]["content"]["text"] == "Let me think."
    call = editor.updates[3][1]
    assert (call["toolCallId"], call["kind"], call["status"]) == ("c1", "other", "pending")


@pytest.mark.parametrize("args, stdin, says", [
    (["--machine", "no_such_machine"], subprocess.PIPE, "no_such_machine"),
    ([], subprocess.DEVNULL, "its stdin is not a pipe"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], stdin: int,
                                          says: str) -> None:
    out = subprocess.run([sys.executable, "-m", "engine", "acp", "--store",
                          str(tmp_path / "engine.db"), *args], cwd=ROOT, env=engine_env(),
                         stdin=stdin, capture_output=True, text=True, timeout=GUARD_S)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr, out.stderr
