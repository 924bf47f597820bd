"""Both provider clients against recorded SSE streams served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest
from sse_server import PATHS, STREAMS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import (
    Done,
    ModelClient,
    ModelParams,
    ResponseInfo,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    collect_turn,
)
from engine.providers.factory import make_model
from engine.providers.retry import RetryPolicy
from engine.vocabulary.errors import ModelError
from engine.vocabulary.state import Message

pytestmark = pytest.mark.anyio
PROVIDERS = ("openai", "anthropic")
RECORDED = json.loads((STREAMS / "cases.json").read_text(encoding="utf-8"))
CASES = RECORDED["cases"]
HELLO = [Message("system", "You are terse."), Message("user", "Fix calc.py")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def no_sleep(seconds: float) -> None:
    return None


def client(server: SSEServer, provider: str) -> ModelClient:
    policy = RetryPolicy(max_attempts=2, sleep=no_sleep)
    return make_model(f"{provider}:test-model", env=provider_env(server), retry=policy)


async def events_of(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", sorted(CASES))
async def test_recorded_stream_assembles_into_the_recorded_turn(
    sse_server: SSEServer, provider: str, case: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_{case}"))
    model = client(sse_server, provider)
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    expected = CASES[case]
    assert turn.message.content == expected.get("text", "")
    calls = [{"name": c.name, "args": dict(c.args)} for c in turn.message.tool_calls]
    assert calls == expected.get("tool_calls", [])
    ids = RECORDED["ids"].get(case, [])
    assert [c.id for c in turn.message.tool_calls] == ids[(provider == "anthropic")::2]
    assert turn.finish_reason == ("tool_calls" if calls else "stop")
    assert turn.usage == Usage(*RECORDED["usage"][case])
    assert turn.retries == 0


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("chunk_size", [1, 3, 7, 64])
async def test_events_and_utf8_split_across_network_chunks(
    sse_server: SSEServer, provider: str, chunk_size: int
) -> None:
    """Every byte boundary lands inside some event and some multi-byte character."""
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_utf8", chunk_size=chunk_size,
                                                     pause_s=0.0002 if chunk_size > 1 else 0))
    model = client(sse_server, provider)
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert turn.message.content == CASES["utf8"]["text"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_crlf_lines_split_between_cr_and_lf(sse_server: SSEServer, provider: str) -> None:
    """The fragmented-arguments streams use CRLF; 1-byte chunks split every CR from its LF."""
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_fragmented_args", chunk_size=1,
                                                     pause_s=0))
    model = client(sse_server, provider)
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    expected = CASES["fragmented_args"]["tool_calls"][0]["args"]
    assert dict(turn.message.tool_calls[0].args) == expected


async def test_comments_and_keep_alive_lines_are_ignored(sse_server: SSEServer) -> None:
    body = (b": keep-alive\n\n: OPENROUTER PROCESSING\n\n"
            + (STREAMS / "openai_text.sse").read_bytes().replace(b"\n\n", b"\n\n: ping\n\n", 3))
    sse_server.enqueue(PATHS["openai"], Reply.sse(body))
    model = client(sse_server, "openai")
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert turn.message.content == CASES["text"]["text"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_stream_shape_first_fragment_carries_id_and_name_usage_before_done(
    sse_server: SSEServer, provider: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_parallel_tools"))
    model = client(sse_server, provider)
    events = await events_of(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    firsts: dict[int, ToolCallDelta] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            firsts.setdefault(e.index, e)
    assert sorted(firsts) == [0, 1]
    assert all(f.id and f.name == "read_file" for f in firsts.values())
    assert isinstance(events[-1], Done) and events[-1].finish_reason == "tool_calls"
    assert isinstance(events[-2], Usage)
    assert sum(isinstance(e, Done) for e in events) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_consecutive_calls_reuse_one_connection(sse_server: SSEServer, provider: str) -> None:
    """The stream is read to its very end, so the connection returns to the pool."""
    sse_server.enqueue(PATHS[provider], *[Reply.stream(f"{provider}_text")] * 3)
    model = client(sse_server, provider)
    for _ in range(3):
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert len({r.client_port for r in sse_server.requests}) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_malformed_event_is_one_clear_model_error(
    sse_server: SSEServer, provider: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_malformed"))
    model = client(sse_server, provider)
    with pytest.raises(ModelError, match=rf"^{provider}: malformed stream event"):
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert len(sse_server.requests) == 1, "a malformed stream is not retried"


@pytest.mark.parametrize(("provider", "body"), [
    ("openai", b'data: {"choices": [{"delta": {"tool_calls": [{"index": "x"}]}}]}\n\n'),
    ("openai", b'data: {"choices": 7}\n\n'),
    ("anthropic", b'event: content_block_delta\ndata: {"type": "content_block_delta", '
                  b'"delta": {"type": "input_json_delta", "partial_json": "{"}}\n\n'),
    ("anthropic", b'event: message_delta\ndata: {"type": "message_delta", "delta": "oops"}\n\n'),
])
async def test_wrongly_shaped_event_is_one_clear_model_error(
    sse_server: SSEServer, provider: str, body: bytes
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.sse(body))
    model = client(sse_server, provider)
    with pytest.raises(ModelError, match=rf"^{provider}: malformed stream event"):
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cancelling_mid_stream_closes_the_connection(
    sse_server: SSEServer, provider: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_text", pause_s=0.02))
    model = client(sse_server, provider)
    seen: list[StreamEvent] = []
    with anyio.CancelScope() as scope:
        async for event in model.stream(HELLO, [], ModelParams()):
            seen.append(event)
            if isinstance(event, TextDelta):
                scope.cancel()
    assert scope.cancelled_caught
    assert await anyio.to_thread.run_sync(sse_server.aborted.wait, 10.0)
    assert sse_server.completed == 0
    assert [type(e) for e in seen] == [ResponseInfo, TextDelta]  # who answers comes first
    await model.aclose()


async def test_abandoning_a_stream_with_aclose_closes_the_connection(
    sse_server: SSEServer,
) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text", pause_s=0.02))
    model = client(sse_server, "openai")
    stream = model.stream(HELLO, [], ModelParams())
    first = await stream.__anext__()
    await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(first, ResponseInfo) and first.id == "chatcmpl-text"
    assert await anyio.to_thread.run_sync(sse_server.aborted.wait, 10.0)
    await model.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_anthropic_error_event_overloaded_is_retried(
    sse_server: SSEServer, provider: str
) -> None:
    """A mid-stream error event: Anthropic's overloaded_error is retried, OpenAI's is final."""
    if provider == "anthropic":
        overloaded = (b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
                      b'"message":"Overloaded"}}\n\n')
    else:
        overloaded = (b'data: {"error":{"message":"The server had an error",'
                      b'"type":"server_error"}}\n\n')
    sse_server.enqueue(PATHS[provider], Reply.sse(overloaded), Reply.stream(f"{provider}_text"))
    model = client(sse_server, provider)
    if provider == "anthropic":
        turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
        assert turn.retries == 1 and turn.message.content == CASES["text"]["text"]
    else:
        with pytest.raises(ModelError, match="openai: the server reported an error mid-stream"):
            await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()


async def test_openai_stream_without_finish_or_done_is_retried(sse_server: SSEServer) -> None:
    body = (STREAMS / "openai_text.sse").read_bytes()
    cut = body[: body.index(b'"finish_reason":"stop"')]
    cut = cut[: cut.rindex(b"\n\n") + 2]  # whole events only, then a clean end of body
    sse_server.enqueue(PATHS["openai"], Reply.sse(cut), Reply.stream("openai_text"))
    model = client(sse_server, "openai")
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert turn.retries == 1
    assert turn.message.content == CASES["text"]["text"]


async def test_openai_done_without_finish_reason_infers_it(sse_server: SSEServer) -> None:
    """Some compatible servers send [DONE] but no finish_reason and no index on tool calls."""
    chunks = [
        {"choices": [{"delta": {"tool_calls": [
            {"id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [
            {"id": "c2", "function": {"name": "read_file", "arguments": '{"path": "b.py"}'}}]}}]},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    sse_server.enqueue(PATHS["openai"], Reply.sse(body + b"data: [DONE]\n\n"))
    model = client(sse_server, "openai")
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert turn.finish_reason == "tool_calls"
    assert [(c.id, dict(c.args)) for c in turn.message.tool_calls] == [
        ("c1", {"path": "a.py"}), ("c2", {"path": "b.py"})]


async def test_non_stream_answer_is_a_clear_error(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.json({"choices": []}))
    model = client(sse_server, "openai")
    with pytest.raises(ModelError, match="did not answer with a stream"):
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
