"""Every tool call carries its idempotency key (``RUN_ID:CALL_ID``) to the systems it reaches:
a shell command in ``ENGINE_IDEMPOTENCY_KEY``, an MCP call in its request ``_meta``. Real CLI,
a real MCP server over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import ROOT, EngineCLI


def test_shell_and_mcp_calls_carry_run_and_call_id(tmp_path: Path) -> None:
    cli = EngineCLI(ROOT, tmp_path / "engine.db")
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "effects.log"
    server = ROOT / "tests" / "mcp_servers" / "keyed_server.py"
    machine = (ROOT / "machines" / "coding_agent.yaml").read_text().replace(
        "mcp_servers: {}", f"mcp_servers:\n  keyed: {{command: {sys.executable}, args: "
                           f"[{server}], env: {{EFFECT_LOG: '{log}'}}}}")
    (tmp_path / "agent.yaml").write_text(machine)
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([
        {"text": "paying", "tool_calls": [
            {"name": "run_shell", "args": {"command": 'echo "$ENGINE_IDEMPOTENCY_KEY" > key.txt'}},
            {"name": "mcp__keyed__send_payment", "args": {"amount": 42}}]},
        {"text": "paid"}]))
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    info = cli.json("run", str(tmp_path / "agent.yaml"), "--task", "pay", "--workspace",
                    str(ws), "--model", f"scripted:{turns}", "--approval", "auto", "--policy",
                    str(policy))
    assert info["status"] == "completed"
    run_id = info["run_id"]
    calls = _started_calls(cli.db, run_id)  # tool -> call id, from the run's own events
    assert (ws / "key.txt").read_text() == f"{run_id}:{calls['run_shell']}\n"
    assert log.read_text() == f"paid 42 key={run_id}:{calls['mcp__keyed__send_payment']}\n"
    assert calls["run_shell"] != calls["mcp__keyed__send_payment"]


def _started_calls(db: Path, run_id: str) -> dict[str, str]:
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        return {e.payload["tool"]: e.payload["call_id"]
                for e in store.events(run_id, ["tool_started"])}
    finally:
        store.close()
