"""What each client sends: headers, request body, and the engine history converted per provider."""

from __future__ import annotations

import json

import pytest
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import ModelParams, ToolSchema, collect_turn
from engine.providers.factory import make_model
from engine.providers.retry import RetryPolicy
from engine.vocabulary.state import Message, ToolCall

pytestmark = pytest.mark.anyio

SHELL = ToolSchema("run_shell", "Run a command.", {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
HISTORY = [
    Message("system", "You fix bugs."),
    Message("user", "Fix calc.py"),
    Message("assistant", "Let me look.", (
        ToolCall("call_1", "read_file", {"path": "calc.py"}),
        ToolCall("call_2", "run_shell", {"command": "pytest -q"}),
    )),
    Message("tool", "def add(a, b): return a - b", tool_call_id="call_1", name="read_file"),
    Message("tool", "exit 1: 1 failed", tool_call_id="call_2", name="run_shell", is_error=True),
    Message("assistant", "",
            (ToolCall("call_3", "write_file", {"path": "calc.py", "content": "x"}),)),
    Message("tool", "wrote 1 byte", tool_call_id="call_3", name="write_file"),
    Message("user", "Also keep it short.", meta={"note": "never sent"}),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def send(server: SSEServer, provider: str, params: ModelParams) -> dict:  # type: ignore[type-arg]
    server.enqueue(PATHS[provider], Reply.stream(f"{provider}_text"))
    model = make_model(f"{provider}:the-model", env=provider_env(server),
                       retry=RetryPolicy(max_attempts=1))
    await collect_turn(model.stream(HISTORY, [SHELL], params))
    await model.aclose()
    (request,) = server.requests
    assert request.method == "POST" and request.path == PATHS[provider]
    return {"headers": request.headers, "body": request.json}


async def test_openai_request(sse_server: SSEServer) -> None:
    sent = await send(sse_server, "openai", ModelParams(max_tokens=500, temperature=0.2,
                                                         extra={"seed": 7}))
    assert sent["headers"]["authorization"] == "Bearer sk-test"
    assert sent["headers"]["accept"] == "text/event-stream"
    body = sent["body"]
    assert body["model"] == "the-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 500
    assert body["temperature"] == 0.2 and body["seed"] == 7
    assert body["tools"] == [{"type": "function", "function": {
        "name": "run_shell", "description": "Run a command.",
        "parameters": dict(SHELL.input_schema)}}]
    assert body["messages"] == [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix calc.py"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "calc.py"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "run_shell", "arguments": '{"command": "pytest -q"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "def add(a, b): return a - b"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: exit 1: 1 failed"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_3", "type": "function", "function": {
                "name": "write_file", "arguments": '{"path": "calc.py", "content": "x"}'}}]},
        {"role": "tool", "tool_call_id": "call_3", "content": "wrote 1 byte"},
        {"role": "user", "content": "Also keep it short."},
    ]


async def test_anthropic_request(sse_server: SSEServer) -> None:
    sent = await send(sse_server, "anthropic", ModelParams(max_tokens=500))
    headers = sent["headers"]
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    body = sent["body"]
    assert body["model"] == "the-model" and body["stream"] is True and body["max_tokens"] == 500
    assert "temperature" not in body
    cache = {"type": "ephemeral"}  # prompt caching: system, last tool, last message
    assert body["system"] == [{"type": "text", "text": "You fix bugs.", "cache_control": cache}]
    assert body["tools"] == [{"name": "run_shell", "description": "Run a command.",
                              "input_schema": dict(SHELL.input_schema), "cache_control": cache}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix calc.py"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "calc.py"}},
            {"type": "tool_use", "id": "call_2", "name": "run_shell",
             "input": {"command": "pytest -q"}},
        ]},
        {"role": "user", "content": [  # both results merged into one user message
            {"type": "tool_result", "tool_use_id": "call_1",
             "content": "def add(a, b): return a - b"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "exit 1: 1 failed",
             "is_error": True},
        ]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_3", "name": "write_file",
             "input": {"path": "calc.py", "content": "x"}}]},
        {"role": "user", "content": [  # a result and the next user text share one message
            {"type": "tool_result", "tool_use_id": "call_3", "content": "wrote 1 byte"},
            {"type": "text", "text": "Also keep it short.", "cache_control": cache},
        ]},
    ]
    assert str(body).count("cache_control") == 3, "the API allows 4 breakpoints at most"


@pytest.mark.parametrize(("first", "second"), [("openai", "anthropic"), ("anthropic", "openai")])
async def test_switching_provider_mid_run_converts_the_history(
    sse_server: SSEServer, first: str, second: str
) -> None:
    """A turn answered by one provider, then the same history sent to the other (resume --model)."""
    sse_server.enqueue(PATHS[first], Reply.stream(f"{first}_tool_call"))
    sse_server.enqueue(PATHS[second], Reply.stream(f"{second}_text"))
    env = provider_env(sse_server)
    one = make_model(f"{first}:m1", env=env)
    turn = await collect_turn(one.stream(HISTORY[:2], [SHELL], ModelParams()))
    await one.aclose()
    call = turn.message.tool_calls[0]
    history = [*HISTORY[:2], turn.message,
               Message("tool", "4 passed", tool_call_id=call.id, name=call.name)]
    two = make_model(f"{second}:m2", env=env)
    final = await collect_turn(two.stream(history, [SHELL], ModelParams()))
    await two.aclose()
    assert final.message.content
    body = sse_server.requests[-1].json
    text = str(body["messages"])
    assert call.id in text and "python -m pytest -q" in text and "4 passed" in text
    assert "Let me run the tests first." in text


async def test_call_ids_are_unique_in_the_run_whatever_the_server_sends(
    sse_server: SSEServer,
) -> None:
    """A compatible server that reuses ``call_0`` each turn, or sends no id at all."""
    def chunk(call: dict) -> bytes:  # type: ignore[type-arg]
        return b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [call]}}]}).encode()

    reused = chunk({"index": 0, "id": "call_0", "function": {"name": "t", "arguments": "{}"}})
    missing = chunk({"index": 0, "function": {"name": "t", "arguments": "{}"}})
    end = b'\n\ndata: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}\n\n'
    sse_server.enqueue(PATHS["openai"], Reply.sse(reused + end), Reply.sse(reused + end),
                       Reply.sse(missing + end))
    model = make_model("openai:m", env=provider_env(sse_server))
    history = [Message("user", "go")]
    for _ in range(3):
        turn = await collect_turn(model.stream(history, [], ModelParams()))
        (call,) = turn.message.tool_calls
        history += [turn.message, Message("tool", "ok", tool_call_id=call.id)]
    await model.aclose()
    ids = [c.id for m in history for c in m.tool_calls]
    assert ids == ["call_0", "call_1_0", "call_2_0"]


async def test_foreign_ids_are_made_safe_for_anthropic(sse_server: SSEServer) -> None:
    history = [Message("user", "go"),
               Message("assistant", "", (ToolCall("fc.1:a/b", "t", {}),)),
               Message("tool", "ok", tool_call_id="fc.1:a/b")]
    sse_server.enqueue(PATHS["anthropic"], Reply.stream("anthropic_text"))
    model = make_model("anthropic:m", env=provider_env(sse_server))
    await collect_turn(model.stream(history, [], ModelParams()))
    await model.aclose()
    sent = sse_server.requests[0].json["messages"]
    assert sent[1]["content"][0]["id"] == sent[2]["content"][0]["tool_use_id"] == "fc_1_a_b"
