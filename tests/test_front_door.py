"""The front door (``engine.Runs`` and the functions over it), driven as a program drives it:
stores named by URL or by the environment, parked approvals decided from Python, MCP servers
given as an argument, cancel and resume, events that name their run, and workflows that need
no model. Real SQLite files and PostgreSQL, real subprocesses, a real MCP server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, engine_env

import engine
from engine import (
    Done,
    Message,
    ModelParams,
    RunEvent,
    Runs,
    TextDelta,
    ToolCallDelta,
    ToolContext,
    ToolSchema,
    build_machine,
    open_store,
    tool,
)
from engine.vocabulary.errors import DecisionRefusedError, UsageError

STATES = {
    "start": {"action": "plan", "on": {"ready": "think"}},
    "think": {"action": "call_model", "on": {"tool_calls": "approve", "final": "done"}},
    "approve": {"action": "await_approval", "on": {"decided": "act", "all_denied": "think"}},
    "act": {"action": "exec_tool", "on": {"done": "think"}},
    "done": {"final": True},
}

WORKFLOW = """\
name: read_two
kind: workflow
initial: listing
tools: [list_files, read_file]
states:
  listing:
    action: run_tool
    with: {tool: list_files, args: {path: .}}
    on: {ok: reading, failed: failed}
  reading:
    action: run_tool
    with: {tool: read_file, args: {path: a.txt}}
    on: {ok: done, failed: failed}
  done: {final: true}
  failed: {final: true}
"""


@tool(risk="write")
async def append_note(note: str, ctx: ToolContext) -> str:
    """Append a line to notes.txt in the workspace."""
    with (ctx.workspace / "notes.txt").open("a", encoding="utf-8") as f:
        f.write(note + "\n")
    return "noted"


class Note:
    """A model object: asks for ``append_note`` once, then repeats the tool's answer."""

    provider, model, server = "custom", "note", None

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema],
                     params: ModelParams) -> AsyncIterator[Any]:
        if messages[-1].role == "tool":
            yield TextDelta(f"tool said: {messages[-1].content}")
        else:
            yield ToolCallDelta(0, id="call-1", name="append_note",
                                arguments=json.dumps({"note": "hello"}))
        yield Done("stop")

    async def aclose(self) -> None:
        return None


def noting() -> engine.Machine:
    return build_machine(name="noting", initial="start", tools=[append_note], states=STATES)


def _park(db: Path, workspace: Path) -> str:
    result = anyio.run(lambda: engine.run(noting(), task="note", model=Note(), store=db,
                                          workspace=workspace, approval="park"))
    assert result.status == "waiting_approval", result
    return result.run_id


# -- approvals from Python ----------------------------------------------------------------


def test_a_parked_call_is_listed_approved_and_resumed_from_python(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _park(db, tmp_path)
    (pending,) = engine.pending_approvals(store=db)
    assert (pending.run_id, pending.tool, dict(pending.arguments)) == (
        run_id, "append_note", {"note": "hello"})
    assert pending.to_json()["args_hash"] == pending.args_hash
    # the same call, filtered by run (age_s moves with the clock, so compare the call's identity)
    by_run = engine.pending_approvals(run_id, store=db)
    assert [(p.run_id, p.call_id, p.args_hash) for p in by_run] == [
        (pending.run_id, pending.call_id, pending.args_hash)]
    decided = engine.approve(run_id, pending.call_id, store=db, who="ana")
    assert (decided.decision, decided.channel, decided.decided_by) == ("allow", "api", "ana")
    assert decided.notice is None and decided.still_pending == 0
    assert engine.pending_approvals(store=db) == []
    with pytest.raises(DecisionRefusedError):  # decided already: nothing pending to decide
        engine.deny(run_id, pending.call_id, store=db)
    done = anyio.run(lambda: engine.resume(run_id, store=db, tools=[append_note], model=Note()))
    assert done.status == "completed", done
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    with engine.Runs(db).reader() as runs:
        assert runs.messages(run_id)[-1].content == "tool said: noted"
    audit = _cli_json("audit", run_id, "--db", str(db))
    assert [(a["decision"], a["decided_by"]) for a in audit] == [("allow", "api")]


def test_a_denial_from_python_reaches_the_model_with_its_reason(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _park(db, tmp_path)
    (pending,) = engine.pending_approvals(store=db)
    decided = engine.deny(run_id, pending.call_id, reason="not today", store=db)
    assert decided.decision == "deny" and decided.note == "not today"
    done = anyio.run(lambda: engine.resume(run_id, store=db, tools=[append_note], model=Note()))
    assert done.status == "completed"
    assert not (tmp_path / "notes.txt").exists()
    assert "not today" in done.state.messages[-1].content


def test_a_decision_on_an_unknown_call_names_the_command_that_lists_them(
        tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = _park(db, tmp_path)
    with pytest.raises(DecisionRefusedError, match=r"list them: .* approvals --db "):
        engine.approve(run_id, "no-such-call", store=db)
    with pytest.raises(DecisionRefusedError, match="channel 'mail'"):
        Runs(db).approve(run_id, "call-1", channel="mail")


# -- stores by URL and by the environment ---------------------------------------------------


STORES = '''
import os, sys, anyio, engine
from engine import build_machine

machine = build_machine(name="wf", initial="go", tools=["list_files"], states={
    "go": {"action": "run_tool", "with": {"tool": "list_files", "args": {"path": "."}},
           "on": {"ok": "done", "failed": "done"}},
    "done": {"final": True}})
print(anyio.run(lambda: engine.run(machine, **eval(sys.argv[1]))).status)
for name in sys.argv[2:]:
    with engine.open_store(name or None) as runs:
        print(name or "-", len(runs.runs()), isinstance(runs.runs(), list))
'''


def _stores(cwd: Path, run_kwargs: str, *names: str,
            env: dict[str, str] | None = None) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", STORES, run_kwargs, *names], cwd=cwd,
                          env=engine_env({"PYTHONPATH": str(ROOT), **(env or {})}),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_run_and_open_store_follow_the_store_chain_and_urls(tmp_path: Path) -> None:
    abs_db = tmp_path / "abs.db"
    lines = _stores(tmp_path, "{}", "", "sqlite:///env.db", str(tmp_path / "env.db"),
                    env={"ENGINE_DB": "env.db"})
    assert lines == ["completed", "- 1 True", "sqlite:///env.db 1 True",
                     f"{tmp_path / 'env.db'} 1 True"]
    assert not (tmp_path / ".engine").exists()  # ENGINE_DB was used, not the default
    lines = _stores(tmp_path, "{}", "", env={"ENGINE_DB": "env.db",
                                             "ENGINE_STORE_URL": f"sqlite:///{abs_db}"})
    assert lines == ["completed", "- 1 True"]  # the URL wins over ENGINE_DB
    lines = _stores(tmp_path, "{'store': 'sqlite:///rel.db'}", "rel.db", "sqlite:///rel.db",
                    env={"ENGINE_STORE_URL": f"sqlite:///{abs_db}"})
    assert lines == ["completed", "rel.db 1 True", "sqlite:///rel.db 1 True"]
    lines = _stores(tmp_path, "{'db': 'old.db'}", "old.db")
    assert lines == ["completed", "old.db 1 True"]  # db= keeps working
    with open_store(f"sqlite:///{abs_db}") as runs:  # four slashes: an absolute path
        assert len(runs.runs()) == 1  # the second run: store= beat the URL in the third
    with pytest.raises(UsageError, match="no database yet"):
        open_store(tmp_path / "missing.db")


def test_the_api_and_the_cli_share_a_postgres_store(tmp_path: Path, pg_url: str) -> None:
    result = anyio.run(lambda: engine.run(noting(), task="note", model=Note(), store=pg_url,
                                          workspace=tmp_path, approval="park"))
    assert result.status == "waiting_approval"
    with open_store(pg_url) as runs:
        (info,) = runs.runs()
        assert info.run_id == result.run_id
    rows = _cli_json("approvals", "--store", pg_url)
    assert [r["run_id"] for r in rows] == [result.run_id]
    engine.approve(result.run_id, rows[0]["call_id"], store=pg_url)
    done = anyio.run(lambda: engine.resume(result.run_id, store=pg_url, tools=[append_note],
                                           model=Note()))
    assert done.status == "completed"
    assert _cli_json("show", result.run_id, "--store", pg_url)["status"] == "completed"


def _cli_json(*args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "engine", *args, "--json"], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- runs: events, cancel, resume, MCP config, bundled names ----------------------------------


def test_every_event_names_its_run_and_cancel_interrupts_resumably(tmp_path: Path) -> None:
    runs = Runs(tmp_path / "runs.db")
    seen: list[RunEvent] = []

    def watch(event: RunEvent) -> None:
        seen.append(event)
        if event.kind == "tool_started":
            assert runs.cancel(event.run_id)

    async def main() -> Any:
        return await runs.start(noting(), task="note", model=Note(), workspace=tmp_path,
                                approval="auto", on_event=watch)

    stopped = anyio.run(main)
    assert stopped.status == "interrupted" and stopped.state.status == "interrupted"
    assert {e.run_id for e in seen} == {stopped.run_id}
    assert seen[-1].kind == "run_end" and seen[-1].payload["status"] == "interrupted"
    assert runs.cancel(stopped.run_id) is False  # nothing of it is driven any more
    assert [r.status for r in runs.list_runs()] == ["interrupted"]
    done = anyio.run(lambda: runs.resume(stopped.run_id, tools=[append_note], model=Note()))
    assert done.status == "completed"
    assert runs.show(stopped.run_id[:12]).status == "completed"


def test_mcp_servers_given_as_an_argument_serve_a_workflow(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("ANSWER = 42\n")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"proj": {
        "command": sys.executable,
        "args": ["-m", "engine", "mcp", "serve-project", "--root", str(project)],
        "cwd": str(ROOT), "trust": "internal"}}}))
    machine = build_machine(name="reader", initial="read", states={
        "read": {"action": "run_tool", "on": {"ok": "done", "failed": "failed"},
                 "with": {"tool": "mcp__proj__read_project_file", "args": {"path": "a.py"}}},
        "done": {"final": True}, "failed": {"final": True}})
    result = engine.run_sync(machine, store=tmp_path / "runs.db", workspace=project,
                             mcp_config=config)
    assert (result.status, result.state.state) == ("completed", "done"), result
    with open_store(tmp_path / "runs.db") as runs:
        (call,) = runs.events(result.run_id, ["tool_call"])
    assert "ANSWER = 42" in call.payload["content"]


def test_machines_are_found_by_their_bundled_name() -> None:
    assert engine.load_machine("coding_agent").name == "coding_agent"
    with pytest.raises(UsageError, match="not the name of a bundled machine"):
        engine.load_machine("coding_agnet")


# -- workflows that need no model -----------------------------------------------------------


def _workflow(tmp_path: Path) -> tuple[Path, Path]:
    machine = tmp_path / "read_two.yaml"
    machine.write_text(WORKFLOW)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    return machine, workspace


def test_a_workflow_without_a_model_completes_from_python(tmp_path: Path) -> None:
    machine, workspace = _workflow(tmp_path)
    result = engine.run_sync(machine, store=tmp_path / "runs.db", workspace=workspace)
    assert (result.status, result.state.state) == ("completed", "done"), result
    assert "alpha" in result.state.data["results"]["reading"]["output"]


def test_a_workflow_without_a_model_completes_from_the_cli(tmp_path: Path) -> None:
    machine, workspace = _workflow(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "engine", "run", str(machine), "--workspace",
                           str(workspace), "--db", str(tmp_path / "runs.db"), "--json"],
                          cwd=tmp_path, env=engine_env(), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert (run["status"], run["state"], run["workspace"]) == ("completed", "done",
                                                                str(workspace))
    assert "a free task needs a model" not in proc.stderr


def test_a_golden_workflow_with_an_empty_turns_file_passes_eval(tmp_path: Path) -> None:
    machine, _ = _workflow(tmp_path)
    task = tmp_path / "tasks" / "read_two"
    (task / "fixture").mkdir(parents=True)
    (task / "fixture" / "a.txt").write_text("alpha\n")
    (task / "turns.yaml").write_text("")
    (task / "task.yaml").write_text(
        f"prompt: read the files\nmachine: {machine}\nchecks:\n  - run_status: completed\n")
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path / "tasks"),
                           "--json", "-"], cwd=tmp_path, env=engine_env(), capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["passed"], result


def test_a_machine_that_calls_a_model_still_needs_one(tmp_path: Path) -> None:
    with pytest.raises(engine.ModelConfigError, match="a free task needs a model"):
        engine.run_sync(noting(), task="note", store=tmp_path / "runs.db", workspace=tmp_path)


# -- a stream stops where its reader stops ----------------------------------------------


def _read_until(db: Path, workspace: Path, stop_at: str,
                asked: list[str]) -> tuple[engine.RunStream, list[RunEvent]]:
    """Stream a run of ``noting`` whose approver says yes to everything, leaving the block at
    the first ``stop_at`` event."""
    seen: list[RunEvent] = []

    def yes(request: engine.ApprovalRequest) -> bool:
        asked.append(request.call_id)
        return True

    async def main() -> engine.RunStream:
        async with engine.stream(noting(), task="note", model=Note(), store=db,
                                 workspace=workspace, approver=yes) as events:
            async for event in events:
                seen.append(event)
                if event.kind == stop_at:
                    break
        return events

    return anyio.run(main), seen


@pytest.mark.parametrize("stop_at", ["model_call", "approval_needed"])
def test_leaving_a_stream_early_interrupts_where_the_reader_stopped(tmp_path: Path,
                                                                     stop_at: str) -> None:
    db, asked = tmp_path / "runs.db", []
    events, seen = _read_until(db, tmp_path, stop_at, asked)
    assert events.result is not None and events.result.status == "interrupted"
    assert seen[0].run_id == events.run_id == events.result.run_id
    assert {e.run_id for e in seen} == {events.run_id}
    with open_store(db) as runs:
        (info,) = runs.runs()
        steps = runs.steps(info.run_id)
    assert info.status == "interrupted"
    # The step the reader was in did not commit: the model's turn is not kept when the
    # reader left during it, and no call was decided when it left at the question.
    committed = [s.state for s in steps if s.status == "succeeded"]
    assert committed == (["start"] if stop_at == "model_call" else ["start", "think"])
    assert steps[-1].status == "interrupted" and len(steps) == len(committed) + 1
    store = Runs(db)._open()[0]
    try:
        assert store.audit(info.run_id) == []
    finally:
        store.close()
    assert asked == [] and not (tmp_path / "notes.txt").exists()
    done = anyio.run(lambda: engine.resume(info.run_id, tools=[append_note], model=Note(),
                                           approval="auto", store=db))
    assert done.status == "completed"
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
