"""Provider features against the local SSE server: thinking, prompt caching, refusals, who
answered, auth headers, keyless local servers and model settings in each wire format."""

from __future__ import annotations

import pytest
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import ModelParams, ToolSchema, collect_turn
from engine.models.options import merge_options, parse_cli_options, to_params
from engine.models.prices import estimate_cost
from engine.providers.factory import make_model
from engine.providers.retry import RetryPolicy
from engine.spec.model import ModelOptions
from engine.vocabulary.errors import ModelConfigError, UsageError
from engine.vocabulary.state import Message

pytestmark = pytest.mark.anyio

READ = ToolSchema("read_file", "Read a file.", {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
ASK = [Message("system", "You fix bugs."), Message("user", "Fix calc.py")]
ONCE = RetryPolicy(max_attempts=1)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bodies(server: SSEServer, provider: str) -> list[dict]:  # type: ignore[type-arg]
    return [r.json for r in server.requests if r.path == PATHS[provider]]


# -- Anthropic: thinking blocks and prompt caching ----------------------------------------


async def test_thinking_blocks_go_back_with_the_tool_result(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_thinking_tool"),
                       Reply.stream("anthropic_text"))
    model = make_model("anthropic:claude-sonnet-4-5", env=provider_env(sse_server), retry=ONCE)
    params = ModelParams(max_tokens=1000, reasoning_effort="medium")
    first = await collect_turn(model.stream(ASK, [READ], params))
    thinking, redacted = first.message.reasoning
    assert thinking == {"type": "thinking",
                        "thinking": "The test fails on add; I should read calc.py first.",
                        "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDdjzQbRxRDxxsz2QiMIgJ5Qk/"
                                     "kyaa6MRfw6pf2AHtO2Pu0cq9SlMZ3gpHrCwGB0ccUiU="}
    assert redacted["type"] == "redacted_thinking" and redacted["data"].startswith("EmwK")
    (call,) = first.message.tool_calls
    stored = Message.from_dict(first.message.to_dict())  # what resume reads back
    assert stored.reasoning == first.message.reasoning
    history = [*ASK, stored, Message("tool", "def add(a, b): return a - b",
                                     tool_call_id=call.id, name="read_file")]
    await collect_turn(model.stream(history, [READ], params))
    await model.aclose()
    one, two = bodies(sse_server, "anthropic")
    assert one["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert one["max_tokens"] == 8192 + 1024, "the budget must stay below max_tokens"
    assistant = two["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["thinking", "redacted_thinking",
                                                          "tool_use"]
    assert assistant["content"][0] == thinking and assistant["content"][1] == redacted
    assert two["messages"][2]["content"][0]["type"] == "tool_result"


async def test_prompt_caching_is_requested_and_its_usage_counted(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_thinking_tool"))
    model = make_model("anthropic:claude-sonnet-4-5", env=provider_env(sse_server), retry=ONCE)
    turn = await collect_turn(model.stream(ASK, [READ], ModelParams()))
    await model.aclose()
    (body,) = bodies(sse_server, "anthropic")
    cache = {"type": "ephemeral"}
    assert body["system"][-1]["cache_control"] == cache
    assert body["tools"][-1]["cache_control"] == cache
    assert body["messages"][-1]["content"][-1]["cache_control"] == cache
    assert turn.usage.cache_write_tokens == 1200 and turn.usage.cached_tokens == 0
    assert turn.usage.input_tokens == 310 + 1200
    cost = estimate_cost("anthropic", "claude-sonnet-4-5", turn.usage)
    assert cost == pytest.approx((310 * 3.00 + 1200 * 3.75 + 87 * 15.00) / 1e6)


async def test_anthropic_refusal_is_a_flagged_answer(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_refusal"))
    model = make_model("anthropic:m", env=provider_env(sse_server), retry=ONCE)
    turn = await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    assert turn.refusal and turn.message.meta == {"refusal": True}
    assert turn.message.content == "I can"


# -- OpenAI: refusals, who answered ---------------------------------------------------------


async def test_openai_refusal_becomes_the_answer(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_refusal"))
    model = make_model("openai:gpt-4o", env=provider_env(sse_server), retry=ONCE)
    turn = await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    assert turn.refusal and turn.message.meta == {"refusal": True}
    assert turn.message.content == "I'm sorry, I can't help with that request."
    assert turn.response_model == "gpt-4o-2024-08-06"
    assert turn.response_id == "chatcmpl-refusal"


@pytest.mark.parametrize(("provider", "stream", "rid", "rmodel"), [
    ("openai", "openai_text", "chatcmpl-text", "gpt-4.1-mini-2025-04-14"),
    ("anthropic", "anthropic_tool_call", "msg_01tool_call", "claude-sonnet-4-5-20250929")])
async def test_the_model_that_answered_is_reported(sse_server: SSEServer, provider: str,
                                                   stream: str, rid: str, rmodel: str) -> None:
    sse_server.enqueue(PATHS[provider], Reply.stream(stream))
    model = make_model(f"{provider}:alias", env=provider_env(sse_server), retry=ONCE)
    turn = await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    assert (turn.response_id, turn.response_model) == (rid, rmodel)
    host, port = sse_server.base_url.removeprefix("http://").split(":")
    assert model.server == (host, int(port))


# -- credentials and headers ---------------------------------------------------------------


async def test_openai_org_and_project_headers(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
    env = {**provider_env(sse_server), "OPENAI_ORG_ID": "org-123", "OPENAI_PROJECT_ID": "proj_9"}
    model = make_model("openai:m", env=env, retry=ONCE)
    await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    headers = sse_server.requests[-1].headers
    assert headers["openai-organization"] == "org-123"
    assert headers["openai-project"] == "proj_9"
    assert headers["authorization"] == "Bearer sk-test"


async def test_anthropic_auth_token_is_a_bearer(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_text"))
    env = {"ANTHROPIC_BASE_URL": sse_server.base_url, "ANTHROPIC_AUTH_TOKEN": "gw-token"}
    model = make_model("anthropic:m", env=env, retry=ONCE)
    await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    headers = sse_server.requests[-1].headers
    assert headers["authorization"] == "Bearer gw-token"
    assert "x-api-key" not in headers


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_local_compatible_server_needs_no_key(sse_server: SSEServer, host: str) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
    url = sse_server.base_url.replace("127.0.0.1", host) + "/v1"
    model = make_model("openai:local-model", env={"OPENAI_BASE_URL": url}, retry=ONCE)
    turn = await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    assert turn.message.content
    assert "authorization" not in sse_server.requests[-1].headers


@pytest.mark.parametrize("url", [None, "https://llm.example.com/v1", "http://10.0.0.5:8000/v1"])
def test_a_hosted_server_still_needs_a_key(url: str | None) -> None:
    env = {"OPENAI_BASE_URL": url} if url else {}
    with pytest.raises(ModelConfigError, match="needs an API key: set OPENAI_API_KEY"):
        make_model("openai:m", env=env)


def test_anthropic_needs_a_key_or_a_token() -> None:
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"):
        make_model("anthropic:m", env={})


# -- model settings in each wire format -----------------------------------------------------

SETTINGS = ModelParams(max_tokens=300, temperature=0.3, top_p=0.9, seed=42, stop=("END", "##"),
                       reasoning_effort="low")


async def test_openai_settings_in_the_body(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
    model = make_model("openai:o4-mini", env=provider_env(sse_server), retry=ONCE)
    await collect_turn(model.stream(ASK, [], SETTINGS))
    await model.aclose()
    (body,) = bodies(sse_server, "openai")
    assert {k: body[k] for k in ("max_completion_tokens", "temperature", "top_p", "seed", "stop",
                                 "reasoning_effort")} == {
        "max_completion_tokens": 300, "temperature": 0.3, "top_p": 0.9, "seed": 42,
        "stop": ["END", "##"], "reasoning_effort": "low"}


async def test_openai_leaves_unset_settings_out(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
    model = make_model("openai:m", env=provider_env(sse_server), retry=ONCE)
    await collect_turn(model.stream(ASK, [], ModelParams()))
    await model.aclose()
    (body,) = bodies(sse_server, "openai")
    assert not {"temperature", "top_p", "seed", "stop", "reasoning_effort"} & body.keys()


async def test_anthropic_settings_in_the_body(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_text"))
    model = make_model("anthropic:m", env=provider_env(sse_server), retry=ONCE)
    params = ModelParams(max_tokens=300, temperature=0.3, top_p=0.9, stop=("END",))
    await collect_turn(model.stream(ASK, [], params))
    await model.aclose()
    (body,) = bodies(sse_server, "anthropic")
    assert {k: body[k] for k in ("max_tokens", "temperature", "top_p", "stop_sequences")} == {
        "max_tokens": 300, "temperature": 0.3, "top_p": 0.9, "stop_sequences": ["END"]}
    assert "thinking" not in body and "seed" not in body


@pytest.mark.parametrize(("params", "message"), [
    (ModelParams(seed=1), "has no seed"),
    (ModelParams(temperature=0.5, reasoning_effort="high"), "cannot be combined"),
    (ModelParams(temperature=1.5), "takes 0 to 1"),
])
async def test_anthropic_refuses_what_it_cannot_honour(sse_server: SSEServer, params: ModelParams,
                                                       message: str) -> None:
    model = make_model("anthropic:m", env=provider_env(sse_server), retry=ONCE)
    with pytest.raises(ModelConfigError, match=message):
        await collect_turn(model.stream(ASK, [], params))
    await model.aclose()
    assert not sse_server.requests, "nothing was sent"


def test_layers_override_only_what_they_set() -> None:
    machine = ModelOptions(temperature=0.5, top_p=0.9, max_tokens=100)
    state = {"temperature": 0.1, "stop": ("END",)}
    cli = parse_cli_options(["seed=7", "max_tokens=50"])
    merged = merge_options(machine, state, cli)
    assert merged == {"temperature": 0.1, "top_p": 0.9, "max_tokens": 50, "stop": ("END",),
                      "seed": 7}
    assert to_params(merged) == ModelParams(max_tokens=50, temperature=0.1, top_p=0.9, seed=7,
                                            stop=("END",))
    assert to_params({}).max_tokens == 4096


def test_cli_options_are_typed_and_checked() -> None:
    assert parse_cli_options(["temperature=0", "stop=a", "stop=b", "reasoning_effort=high"]) == {
        "temperature": 0.0, "stop": ("a", "b"), "reasoning_effort": "high"}
    for bad, message in [("temperature=hot", "expected a number"),
                         ("seed=1.5", "expected an integer"),
                         ("top_p=1.5", "less than or equal to 1"),
                         ("colour=red", "KEY one of temperature, top_p"),
                         ("temperature", "expected KEY=VALUE"),
                         ("reasoning_effort=max", "'minimal', 'low', 'medium' or 'high'")]:
        with pytest.raises(UsageError, match=message):
            parse_cli_options([bad])
