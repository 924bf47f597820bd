"""Retries: backoff with full jitter, Retry-After, caps, and the faults the test server injects."""

from __future__ import annotations

import email.utils
import json
import socket
from collections.abc import AsyncIterator

import pytest
from sse_server import PATHS, STREAMS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import (
    ModelClient,
    ModelParams,
    Retry,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    collect_turn,
)
from engine.providers.factory import make_model
from engine.providers.http import Timeouts
from engine.providers.retry import RetryPolicy, TransientError, parse_retry_after, retrying
from engine.vocabulary.errors import ModelError
from engine.vocabulary.state import Message

pytestmark = pytest.mark.anyio
PROVIDERS = ("openai", "anthropic")
CASES = json.loads((STREAMS / "cases.json").read_text(encoding="utf-8"))["cases"]
HELLO = [Message("user", "Fix calc.py")]
NOW = 1_760_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Sleeps:
    """An injected sleep that records each wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def policy(sleeps: Sleeps, **kw: object) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps, random=lambda: 0.5, clock=lambda: NOW, **kw)  # type: ignore[arg-type]


def client(server: SSEServer, provider: str, retry: RetryPolicy, **kw: object) -> ModelClient:
    return make_model(f"{provider}:test-model", env=provider_env(server), retry=retry, **kw)  # type: ignore[arg-type]


# --- the policy, without HTTP ---------------------------------------------------------------

def test_backoff_is_full_jitter_under_a_doubling_capped_ceiling() -> None:
    top = RetryPolicy(random=lambda: 1.0, base_s=0.5, cap_s=4.0)
    assert [top.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    bottom = RetryPolicy(random=lambda: 0.0)
    assert bottom.backoff(3) == 0.0
    half = RetryPolicy(random=lambda: 0.5, base_s=1.0)
    assert half.backoff(2) == 1.0


@pytest.mark.parametrize(("header", "seconds"), [
    ("7", 7.0),
    (" 2.5 ", 2.5),
    ("-3", 0.0),
    (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
    (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),
    ("soon", None),
    ("", None),
    (None, None),
])
def test_retry_after_accepts_seconds_and_http_dates(
    header: str | None, seconds: float | None
) -> None:
    assert parse_retry_after(header, NOW) == seconds


async def fail_then(failures: list[TransientError], events: list[StreamEvent]):  # type: ignore[no-untyped-def]
    """An attempt factory: each call raises the next failure, then streams ``events``."""
    calls = 0

    async def attempt() -> AsyncIterator[StreamEvent]:
        nonlocal calls
        calls += 1
        if calls <= len(failures):
            raise failures[calls - 1]
        for event in events:
            yield event

    return attempt


async def test_gives_up_after_max_attempts_naming_provider_and_reason() -> None:
    sleeps = Sleeps()
    attempt = await fail_then([TransientError("HTTP 503")] * 9, [])
    with pytest.raises(ModelError, match=r"^openai: gave up after 3 attempts: HTTP 503$"):
        _ = [e async for e in retrying("openai", attempt, policy(sleeps, max_attempts=3))]
    assert sleeps.waits == [0.25, 0.5]


async def test_gives_up_when_waiting_would_exceed_the_total_budget() -> None:
    sleeps = Sleeps()
    attempt = await fail_then([TransientError("HTTP 429", retry_after="4")] * 9, [])
    retry = policy(sleeps, max_total_wait_s=10.0)
    with pytest.raises(ModelError, match=r"exceed the 10s retry budget"):
        _ = [e async for e in retrying("anthropic", attempt, retry)]
    assert sleeps.waits == [4.0, 4.0]


async def test_a_stream_that_ends_after_a_tool_call_fragment_is_retried() -> None:
    """Nothing of the answer has run (calls run after the step commits): the stream is tried
    again, and the turn assembled from it holds only the second attempt's call, once."""
    from engine.models.base import collect_turn

    tries: list[int] = []

    async def attempt() -> AsyncIterator[StreamEvent]:
        tries.append(1)
        yield TextDelta("thinking")
        yield ToolCallDelta(0, "c1", "run_shell", '{"comm')
        if len(tries) == 1:
            raise TransientError("connection lost mid-stream")
        yield ToolCallDelta(0, None, None, 'and": "ls"}')

    sleeps = Sleeps()
    turn = await collect_turn(retrying("openai", attempt, policy(sleeps)))
    assert len(sleeps.waits) == 1 and turn.retries == 1
    assert turn.message.content == "thinking"
    assert [(c.id, c.name, dict(c.args)) for c in turn.message.tool_calls] == [
        ("c1", "run_shell", {"command": "ls"})]


# --- faults over real HTTP ------------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_with_retry_after_then_200(sse_server: SSEServer, provider: str) -> None:
    sse_server.enqueue(PATHS[provider], Reply.error(429, "Rate limit reached", retry_after="3"),
                       Reply.stream(f"{provider}_tool_call"))
    sleeps = Sleeps()
    model = client(sse_server, provider, policy(sleeps))
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=events.append)
    await model.aclose()
    retries = [e for e in events if isinstance(e, Retry)]
    assert retries == [Retry(1, "HTTP 429 Too Many Requests: Rate limit reached", 3.0)]
    assert sleeps.waits == [3.0]
    assert turn.retries == 1
    assert turn.message.content == CASES["tool_call"]["text"]
    assert len(sse_server.requests) == 2


async def test_retry_after_as_an_http_date(sse_server: SSEServer) -> None:
    when = email.utils.formatdate(NOW + 12, usegmt=True)
    sse_server.enqueue(PATHS["openai"], Reply.error(503, retry_after=when),
                       Reply.stream("openai_text"))
    sleeps = Sleeps()
    model = client(sse_server, "openai", policy(sleeps))
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert sleeps.waits == [12.0]
    assert turn.retries == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_500_twice_then_200_backs_off_exponentially(
    sse_server: SSEServer, provider: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.error(500), Reply.error(502),
                       Reply.stream(f"{provider}_parallel_tools"))
    sleeps = Sleeps()
    model = client(sse_server, provider, policy(sleeps))
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=events.append)
    await model.aclose()
    assert [(r.attempt, r.reason.split(":")[0]) for r in events if isinstance(r, Retry)] == [
        (1, "HTTP 500 Internal Server Error"), (2, "HTTP 502 Bad Gateway")]
    assert sleeps.waits == [0.25, 0.5]  # random() = 0.5 of ceilings 0.5 s and 1 s
    assert len(turn.message.tool_calls) == 2 and turn.retries == 2


@pytest.mark.parametrize("status", [408, 409])
async def test_408_and_409_are_retried(sse_server: SSEServer, status: int) -> None:
    sse_server.enqueue(PATHS["openai"], Reply.error(status), Reply.stream("openai_text"))
    model = client(sse_server, "openai", policy(Sleeps()))
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert turn.retries == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_disconnect_mid_text_is_retried_and_the_turn_restarts_clean(
    sse_server: SSEServer, provider: str
) -> None:
    body = (STREAMS / f"{provider}_tool_call.sse").read_bytes()
    cut = body.index(b"un t")  # inside the text, before any tool call
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_tool_call", disconnect_after=cut),
                       Reply.stream(f"{provider}_tool_call"))
    model = client(sse_server, provider, policy(Sleeps()))
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=events.append)
    await model.aclose()
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("Retry") > kinds.index("TextDelta"), "text streamed before the drop"
    retry = next(e for e in events if isinstance(e, Retry))
    assert retry.reason.startswith("connection lost mid-stream")
    assert turn.message.content == CASES["tool_call"]["text"], "no text duplicated by the retry"
    assert [c.name for c in turn.message.tool_calls] == ["run_shell"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_disconnect_after_a_tool_call_started_is_retried_with_one_call(
    sse_server: SSEServer, provider: str
) -> None:
    """Over real HTTP: the stream drops inside the tool call's arguments; the retry's answer
    replaces the partial one (one call, its arguments whole, the text once)."""
    body = (STREAMS / f"{provider}_tool_call.sse").read_bytes()
    cut = body.index(b"run_shell") + 300  # inside the tool call's arguments
    sse_server.enqueue(PATHS[provider], Reply.stream(f"{provider}_tool_call", disconnect_after=cut),
                       Reply.stream(f"{provider}_tool_call"))
    model = client(sse_server, provider, policy(Sleeps()))
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=events.append)
    await model.aclose()
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("Retry") > kinds.index("ToolCallDelta"), "the call streamed first"
    assert sse_server.pending(PATHS[provider]) == 0
    assert turn.retries == 1 and turn.message.content == CASES["tool_call"]["text"]
    expected = CASES["tool_call"]["tool_calls"]
    assert [(c.name, dict(c.args)) for c in turn.message.tool_calls] == [
        (c["name"], c["args"]) for c in expected]


async def test_read_timeout_is_retried(sse_server: SSEServer) -> None:
    sse_server.enqueue(PATHS["openai"], Reply(hang_s=1.0), Reply.stream("openai_text"))
    model = client(sse_server, "openai", policy(Sleeps()), timeouts=Timeouts(read_s=0.2))
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=events.append)
    await model.aclose()
    assert [e.reason for e in events if isinstance(e, Retry)] == ["no data for 0.2s (read timeout)"]
    assert turn.message.content == CASES["text"]["text"]


async def test_connect_refused_is_retried_then_one_clear_error() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    sleeps = Sleeps()
    model = make_model("openai:gpt-4.1-mini", env=env, retry=policy(sleeps, max_attempts=3))
    with pytest.raises(ModelError, match=rf"^openai: gave up after 3 attempts: cannot connect to "
                                         rf"http://127.0.0.1:{port}/v1"):
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    assert len(sleeps.waits) == 2


@pytest.mark.parametrize(("provider", "status", "fix"), [
    ("openai", 401, "set OPENAI_API_KEY to a valid key"),
    ("anthropic", 401, "set ANTHROPIC_API_KEY to a valid key"),
    ("openai", 400, "the request was refused"),
    ("anthropic", 403, "no access to this model"),
    ("openai", 404, "check the model name and the base URL"),
])
async def test_non_retryable_status_is_one_clear_error(
    sse_server: SSEServer, provider: str, status: int, fix: str
) -> None:
    sse_server.enqueue(PATHS[provider], Reply.error(status, "nope"),
                       Reply.stream(f"{provider}_text"))
    sleeps = Sleeps()
    model = client(sse_server, provider, policy(sleeps))
    with pytest.raises(ModelError) as info:
        await collect_turn(model.stream(HELLO, [], ModelParams()))
    await model.aclose()
    message = str(info.value)
    assert message.startswith(f"{provider}: HTTP {status} ")
    assert "nope" in message and fix in message and "\n" not in message
    assert sleeps.waits == [] and len(sse_server.requests) == 1
