"""Model settings, refusals and who answered, end to end through the CLI against the SSE server:
the request bodies, the trace's ``gen_ai.*`` attributes and ``show``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import EngineCLI
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.store.sqlite import SqliteStore
from engine.tracing.trace import build_trace

MACHINE = """\
name: settings
kind: workflow
initial: ask
model_options: {temperature: 0.5, top_p: 0.9, max_tokens: 300, seed: 1}
states:
  ask:
    action: call_model
    with:
      tools: false
      prompt: "{{ task }}"
      model_options: {temperature: 0.1, stop: [END]}
    on: {final: done, tool_calls: done}
  done: {final: true}
"""


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(MACHINE, encoding="utf-8")
    return path


def chat_span(cli: EngineCLI, run_id: str) -> dict:  # type: ignore[type-arg]
    trace = json.loads(cli("trace", run_id, "--json").stdout)
    (chat,) = [s for s in trace["spans"] if s["kind"] == "chat"]
    return chat


def test_state_and_cli_settings_override_the_machine(cli: EngineCLI, sse_server: SSEServer,
                                                     machine: Path, tmp_path: Path) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.turn("openai", {"text": "ok"}))
    run = cli.json("run", str(machine), "--task", "say ok", "--model", "openai:m",
                   "--workspace", str(tmp_path), "--model-option", "temperature=0.2",
                   "--model-option", "seed=9", env=provider_env(sse_server))
    assert run["status"] == "completed", run
    (body,) = [r.json for r in sse_server.requests if r.path == PATHS["openai"]]
    assert body["temperature"] == 0.2, "the CLI wins over the state"
    assert body["stop"] == ["END"], "the state adds to the machine"
    assert body["top_p"] == 0.9 and body["max_completion_tokens"] == 300
    assert body["seed"] == 9
    a = chat_span(cli, run["run_id"])["attributes"]
    assert a["gen_ai.request.temperature"] == 0.2 and a["gen_ai.request.top_p"] == 0.9
    assert a["gen_ai.request.max_tokens"] == 300 and a["gen_ai.request.seed"] == 9
    assert a["gen_ai.request.stop_sequences"] == ["END"]
    assert a["gen_ai.request.model"] == "m" and a["gen_ai.response.model"] == "rendered"
    assert a["gen_ai.response.id"] == "chatcmpl-rendered"
    assert a["server.address"] == "127.0.0.1"
    assert a["server.port"] == int(sse_server.base_url.rsplit(":", 1)[1])
    trace = json.loads(cli("trace", run["run_id"], "--json").stdout)
    names = {k for s in trace["spans"] for k in s["attributes"]
             if k.startswith(("gen_ai.", "server."))}
    assert names - official_names() == set(), "every gen_ai.* name is in the semconv"


def official_names() -> set[str]:
    """Attribute names of the official semantic conventions package (GenAI and server)."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv.attributes import server_attributes

    return {v for m in (gen_ai_attributes, server_attributes) for k, v in vars(m).items()
            if k.isupper() and isinstance(v, str)}


def test_resume_keeps_the_run_settings(cli: EngineCLI, sse_server: SSEServer, machine: Path,
                                       tmp_path: Path) -> None:
    # The first attempt is refused by the server: the run fails; resume adds one more flag.
    sse_server.enqueue(PATHS["openai"], Reply.error(400, "try again"))
    run = cli.json("run", str(machine), "--task", "x", "--model", "openai:m", "--workspace",
                   str(tmp_path), "--model-option", "seed=9", env=provider_env(sse_server))
    assert run["status"] == "failed"
    sse_server.enqueue(PATHS["openai"], Reply.turn("openai", {"text": "ok"}))
    proc = cli("resume", run["run_id"], "--model-option", "top_p=0.5", "--json",
               env=provider_env(sse_server))
    assert json.loads(proc.stdout)["status"] == "completed", proc.stderr
    first, body = [r.json for r in sse_server.requests if r.path == PATHS["openai"]]
    assert first["seed"] == 9 and first["top_p"] == 0.9
    assert body["seed"] == 9 and body["top_p"] == 0.5


def test_openai_refusal_is_the_final_answer_flagged(cli: EngineCLI, sse_server: SSEServer,
                                                    machine: Path, tmp_path: Path) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_refusal"))
    run = cli.json("run", str(machine), "--task", "do harm", "--model", "openai:gpt-4o",
                   "--workspace", str(tmp_path), env=provider_env(sse_server))
    assert run["status"] == "completed", run
    shown = json.loads(cli("show", run["run_id"], "--json").stdout)
    assert shown["final_answer"] == "I'm sorry, I can't help with that request."
    assert shown["refusal"] is True
    text = cli("show", run["run_id"]).stdout
    assert "final answer (refusal: the model declined): I'm sorry" in text
    chat = chat_span(cli, run["run_id"])
    assert chat["attributes"]["turnstile.refusal"] is True
    assert chat["call"]["refusal"] is True and chat["call"]["text"].startswith("I'm sorry")
    assert chat["attributes"]["gen_ai.response.model"] == "gpt-4o-2024-08-06"


@pytest.mark.parametrize(("flag", "message"), [
    ("temperature=warm", "--model-option 'temperature=warm': expected a number"),
    ("top_k=3", "--model-option 'top_k=3': expected KEY=VALUE with KEY one of"),
])
def test_a_bad_model_option_is_one_line_exit_2(cli: EngineCLI, machine: Path, flag: str,
                                               message: str) -> None:
    proc = cli("run", str(machine), "--task", "x", "--model", "scripted", "--model-option", flag)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {message}")


def test_a_setting_the_provider_cannot_honour_stops_the_run_before_it_starts(
        cli: EngineCLI, sse_server: SSEServer, machine: Path, tmp_path: Path) -> None:
    proc = cli("run", str(machine), "--task", "x", "--model", "anthropic:m", "--workspace",
               str(tmp_path), env=provider_env(sse_server))
    assert proc.returncode == 2
    assert "anthropic: the Messages API has no seed" in proc.stderr
    assert not [r for r in sse_server.requests if r.path == PATHS["anthropic"]]


def test_a_state_setting_out_of_range_names_its_line(cli: EngineCLI, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(MACHINE).replace("temperature: 0.1", "temperature: -1"),
                    encoding="utf-8")
    proc = cli("validate", str(path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"{path}:11: state 'ask': with.model_options.temperature: "
                                   "input should be greater than or equal to 0 (got -1)")


def test_eval_passes_model_options_to_every_run(cli: EngineCLI) -> None:
    proc = cli("eval", "golden_tasks", "-k", "demo_fix_test", "--model-option", "seed=3",
               "--model-option", "stop=END")
    assert proc.returncode == 0, proc.stderr
    store = SqliteStore(cli.db)
    try:
        (info,) = store.list_runs()
        chats = [s for s in build_trace(store, info.run_id)["spans"] if s["kind"] == "chat"]
    finally:
        store.close()
    assert info.config["model_options"] == {"seed": 3, "stop": ["END"]}
    assert chats and all(s["attributes"]["gen_ai.request.seed"] == 3 for s in chats)
    assert all(s["attributes"]["gen_ai.request.stop_sequences"] == ["END"] for s in chats)


def test_thinking_survives_a_crash_and_goes_back_after_resume(cli: EngineCLI,
                                                              sse_server: SSEServer) -> None:
    """The thinking block is stored with the assistant turn; after a crash the resumed run
    reads it back and sends it, signature and all, with the tool result."""
    path = PATHS["anthropic"]
    sse_server.enqueue(path, Reply.stream("anthropic_thinking_tool"))
    env = {**provider_env(sse_server), "ENGINE_FAULTS": "crash_after:exec_tool:1"}
    demo = "golden_tasks/demo_fix_test"
    crashed = cli("run", "machines/coding_agent.yaml", "--golden", demo, "--model",
                  "anthropic:claude-sonnet-4-5", "--model-option", "reasoning_effort=low",
                  "--approval", "auto", env=env)
    assert crashed.returncode == -9, crashed.stderr
    store = SqliteStore(cli.db)
    try:
        (info,) = store.list_runs()
    finally:
        store.close()
    sse_server.enqueue(path, Reply.turn("anthropic", {"text": "Done."}))
    proc = cli("resume", info.run_id, "--json", env=provider_env(sse_server))
    assert json.loads(proc.stdout)["status"] == "completed", proc.stderr
    first, second = [r.json for r in sse_server.requests if r.path == path]
    assert first["thinking"] == second["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    turn = next(m for m in second["messages"] if m["role"] == "assistant")
    kinds = [b["type"] for b in turn["content"]]
    assert kinds == ["thinking", "redacted_thinking", "tool_use"]
    assert turn["content"][0]["signature"].startswith("EqQBCgIYAhIM")
    assert turn["content"][0]["thinking"].endswith("I should read calc.py first.")
