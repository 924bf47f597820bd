"""The demo task end to end through the CLI, its model answering in each provider's wire format.

The test SSE server streams the demo's ``turns.yaml`` turns, rendered as OpenAI or Anthropic
streams; the run must complete exactly as it does with the scripted model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, EngineCLI
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.providers.scripted import load_turns

DEMO = ROOT / "golden_tasks" / "demo_fix_test"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_demo_task_runs_against_each_wire_format(
    cli: EngineCLI, sse_server: SSEServer, provider: str
) -> None:
    turns = load_turns(DEMO / "turns.yaml")
    sse_server.enqueue(PATHS[provider], *[Reply.turn(provider, t, usage=(1000, 50, 0))
                                          for t in turns])
    run = cli.json("run", "machines/coding_agent.yaml", "--golden", str(DEMO),
                   "--model", f"{provider}:e2e-model", env=provider_env(sse_server))
    assert run["status"] == "completed", run
    assert sse_server.pending(PATHS[provider]) == 0
    calls = [r for r in sse_server.requests if r.path == PATHS[provider]]
    assert len(calls) == len(turns)
    assert "FAILED" in str(calls[1].json["messages"]), "tool results reach the provider"
    assert run["input_tokens"] == 1000 * len(turns) and run["output_tokens"] == 50 * len(turns)
    assert run["cost_usd"] is None, "e2e-model has no price"
    fixed = (Path(run["workspace"]) / "inventory.py").read_text(encoding="utf-8")
    assert "total += item.price * item.quantity" in fixed
