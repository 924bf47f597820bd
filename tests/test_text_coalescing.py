"""Streamed text is coalesced once, at its source: ``collect_turn`` lets a model's text pieces go
in few, larger deltas (on a newline, at a size, once old; before any other event; when the
stream fails or is cancelled), so every observer downstream sees the same few deltas.

Streams are real async generators; the clock is a hand-moved one where a rule is about time,
the real one where the timer is (a stream that stalls mid-sentence).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest
from conftest import engine_env
from sse_server import PATHS, Reply, SSEServer, provider_env, render_turn, sse_server_fixture  # noqa: F401

from engine.api import stream
from engine.models.base import (
    COALESCE_TEXT,
    Done,
    Retry,
    StreamEvent,
    TextCoalescing,
    TextDelta,
    ToolCallDelta,
    Usage,
    collect_turn,
)
from engine.vocabulary.errors import ModelError

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    """A hand-moved clock: the stream moves it between pieces."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def texts(events: list[StreamEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


async def pieces(*items: StreamEvent | float, clock: Clock | None = None
                 ) -> AsyncIterator[StreamEvent]:
    """``items`` as a stream; a float moves ``clock`` on by that many seconds."""
    for item in items:
        if isinstance(item, float):
            assert clock is not None
            clock.now += item
        else:
            yield item


def answer(text: str, size: int = 12) -> list[StreamEvent]:
    return [TextDelta(text[i:i + size]) for i in range(0, len(text), size)]


TEXT = "Let me read the notes first, one by one, and then report what they say. " * 7


async def test_a_whole_answer_reaches_the_observer_as_one_delta_in_stream_order() -> None:
    stream = [*answer(TEXT), ToolCallDelta(0, id="c1", name="read_file"),
              ToolCallDelta(0, arguments='{"path": "a.txt"}'), Usage(10, 5), Done("tool_calls")]
    seen: list[StreamEvent] = []
    turn = await collect_turn(pieces(*stream), seen.append, coalesce=COALESCE_TEXT)
    assert len(answer(TEXT)) > 40
    assert seen == [TextDelta(TEXT), *stream[-4:]]  # the text first, then the rest, in order
    assert turn.message.content == TEXT
    assert turn.message.tool_calls[0].args == {"path": "a.txt"}
    assert turn.time_to_first_token_s is not None
    every: list[StreamEvent] = []
    again = await collect_turn(pieces(*stream), every.append)  # without coalesce: every piece
    assert every == stream and again.message == turn.message


async def test_a_newline_a_size_and_an_age_let_the_held_text_go() -> None:
    clock = Clock()
    rule = TextCoalescing(max_chars=10, max_delay_s=0.05)
    step = 0.009  # less than a wait: the stream is read without a timer
    seen: list[StreamEvent] = []
    stream = pieces(TextDelta("ab"), TextDelta("cd"), TextDelta("e\nf"),  # newline
                    TextDelta("0123456789"),  # size
                    *[x for p in "stuvwxy" for x in (step, TextDelta(p))],  # age: 6 steps
                    TextDelta("tail"), Usage(1, 1), Done(), clock=clock)
    turn = await collect_turn(stream, seen.append, clock, coalesce=rule)
    assert texts(seen) == ["abcde\nf", "0123456789", "stuvwxy", "tail"]
    assert isinstance(seen[-2], Usage) and isinstance(seen[-1], Done)
    assert turn.message.content == "abcde\nf0123456789stuvwxytail"


async def test_a_retry_shows_the_held_text_before_it_and_the_new_answer_after() -> None:
    seen: list[StreamEvent] = []
    stream = pieces(*answer("half an ans"), Retry(1, "HTTP 503", 0.0), *answer("whole answer"),
                    Usage(1, 1), Done())
    turn = await collect_turn(stream, seen.append, coalesce=COALESCE_TEXT)
    assert [type(e).__name__ for e in seen] == ["TextDelta", "Retry", "TextDelta", "Usage",
                                                "Done"]
    assert texts(seen) == ["half an ans", "whole answer"]
    assert turn.message.content == "whole answer" and turn.retries == 1


async def test_held_text_is_shown_when_the_stream_fails() -> None:
    async def failing() -> AsyncIterator[StreamEvent]:
        yield TextDelta("a first line\n")
        yield TextDelta("what was said ")
        yield TextDelta("before the error")
        raise ModelError("connection reset")

    seen: list[StreamEvent] = []
    with pytest.raises(ModelError, match="connection reset"):
        await collect_turn(failing(), seen.append, coalesce=COALESCE_TEXT)
    assert texts(seen) == ["a first line\n", "what was said before the error"]


async def test_held_text_is_shown_when_the_read_is_cancelled() -> None:
    async def then_silence() -> AsyncIterator[StreamEvent]:
        yield TextDelta("said just ")
        yield TextDelta("before Ctrl-C")
        await anyio.sleep_forever()
        yield Done()

    seen: list[StreamEvent] = []
    with anyio.move_on_after(0.2) as scope:
        await collect_turn(then_silence(), seen.append, coalesce=COALESCE_TEXT)
    assert scope.cancelled_caught
    assert texts(seen) == ["said just before Ctrl-C"]


async def test_a_stalled_model_shows_its_held_text_after_the_delay() -> None:
    """A model that waits before answering, then pauses mid-sentence: the timer lets the held
    text go about ``max_delay_s`` after it arrived, not when the next piece comes."""
    stall_s = 1.5
    shown: list[tuple[float, str]] = []
    resumed_at: list[float] = []

    async def slow() -> AsyncIterator[StreamEvent]:
        await anyio.sleep(0.05)  # the request's wait: longer than WAIT_S
        yield TextDelta("Hello ")
        yield TextDelta("wor")
        await anyio.sleep(stall_s)
        resumed_at.append(time.monotonic())
        yield TextDelta("ld")
        yield Done()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            shown.append((time.monotonic(), event.text))

    start = time.monotonic()
    turn = await collect_turn(slow(), on_event, coalesce=COALESCE_TEXT)
    assert turn.message.content == "Hello world"
    assert [text for _, text in shown] == ["Hello wor", "ld"]
    first_at = shown[0][0]
    assert first_at < resumed_at[0] - stall_s / 2, "held until the model went on"
    assert first_at - start >= COALESCE_TEXT.max_delay_s


async def test_a_slow_stream_reaches_the_observer_progressively() -> None:
    """Pieces every 20 ms for about a second: the observer sees the answer grow in a few
    deltas, each at most about ``max_delay_s`` behind its oldest piece."""
    words = [f"w{i} " for i in range(50)]
    arrived: dict[int, float] = {}

    async def trickle() -> AsyncIterator[StreamEvent]:
        for i, word in enumerate(words):
            await anyio.sleep(0.02)
            arrived[i] = time.monotonic()
            yield TextDelta(word)
        yield Done()

    shown: list[tuple[float, str]] = []
    await collect_turn(trickle(), _timed(shown), coalesce=COALESCE_TEXT)
    assert "".join(text for _, text in shown) == "".join(words)
    assert 5 <= len(shown) <= len(words) // 2, [text for _, text in shown]
    done = 0
    for at, text in shown[:-1]:
        oldest = arrived[done]
        done += text.count(" ")
        assert at - oldest < 0.5, f"{text!r} shown {at - oldest:.2f}s after it began"


def _timed(out: list[tuple[float, str]]) -> Callable[[StreamEvent], None]:
    def on_event(event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            out.append((time.monotonic(), event.text))

    return on_event


ANSWER = "The notes say the build is green, the release is on Friday, and nobody is on call. " * 4


@pytest.mark.parametrize(("pause_s", "pieces_per_delta"), [(0.0005, 4), (0.01, 2)])
async def test_the_api_event_stream_sees_coalesced_text_from_a_real_provider(
    sse_server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    pause_s: float, pieces_per_delta: int,
) -> None:
    """An OpenAI-format SSE stream on 127.0.0.1, 5 characters an event: ``engine.stream``'s
    events carry the answer in a few deltas, all before the step's ``model_call``. How few
    depends on when the pieces arrive (held text goes once 50 ms old): on a quiet machine a
    fast stream comes as one or two, but a busy one delays pieces (a clean-clone CI run with
    two ``yes`` loops saw 4 of 66 pieces), so the bound is pieces per delta, not a count."""
    for name, value in provider_env(sse_server).items():
        monkeypatch.setenv(name, value)
    sse_server.enqueue(PATHS["openai"],
                       Reply.sse(render_turn("openai", {"text": ANSWER}), pause_s=pause_s))
    pieces = len(ANSWER) // 5
    kinds: list[str] = []
    deltas: list[str] = []
    async with stream(ROOT / "machines" / "coding_agent.yaml", task="What do the notes say?",
                      model="openai:e2e-model", db=tmp_path / "engine.db", workspace=tmp_path,
                      approval="auto") as events:
        async for event in events:
            kinds.append(event.kind)
            if event.kind == "text_delta":
                deltas.append(event.payload["text"])
    assert events.result is not None and events.result.status == "completed"
    assert "".join(deltas) == ANSWER
    assert 1 <= len(deltas) <= pieces // pieces_per_delta, (len(deltas), pieces)
    text_at = [i for i, kind in enumerate(kinds) if kind == "text_delta"]
    assert max(text_at) < kinds.index("model_call")


@pytest.mark.parametrize("output", ["terminal", "pipe"])
def test_the_cli_shows_a_slow_answer_as_it_is_produced(sse_server: SSEServer, tmp_path: Path,
                                                       output: str) -> None:
    """The CLI on a real pseudo-terminal (the rich console) or a pipe (plain lines), the model
    a slow SSE stream: the answer's first words are out while the model is still sending the
    rest."""
    sse_server.enqueue(PATHS["openai"],
                       Reply.sse(render_turn("openai", {"text": ANSWER}), pause_s=0.02))
    first_words = ANSWER[:40].encode()
    if output == "terminal":
        reader, writer = os.openpty()
    else:
        reader, writer = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml", "--task",
         "What do the notes say?", "--model", "openai:e2e-model", "--approval", "auto",
         "--workspace", str(tmp_path), "--db", str(tmp_path / "engine.db")],
        cwd=ROOT, env=engine_env(provider_env(sse_server)), stdout=writer,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(writer)
    out, seen_while_streaming = b"", False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([reader], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # a terminal whose other end closed: the run is over
                break
            if not chunk:
                break
            out += chunk
            seen_while_streaming |= first_words in out and not sse_server.completed
        proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(reader)
    text = out.decode(errors="replace").replace("\r\n", "\n")
    assert proc.returncode == 0, text
    assert f"model: {ANSWER.strip()}" in text
    assert seen_while_streaming, "the answer appeared only once the model had finished"


async def test_an_observer_failing_in_the_timer_is_raised_as_itself() -> None:
    async def slow() -> AsyncIterator[StreamEvent]:
        await anyio.sleep(0.05)
        yield TextDelta("held, then let go by the timer")
        await anyio.sleep(5)
        yield Done()

    def on_event(event: StreamEvent) -> None:
        raise RuntimeError("observer broke")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="observer broke"):
        await collect_turn(slow(), on_event, coalesce=COALESCE_TEXT)
    assert time.monotonic() - start < 4, "the stream's read went on after the failure"


def test_ctrl_c_while_the_model_streams_ends_the_run_interrupted(sse_server: SSEServer,
                                                                 tmp_path: Path) -> None:
    """Ctrl-C in the middle of a slow answer: the run ends ``interrupted`` (exit 3) at once,
    and the words already received are on the screen and in the store."""
    import signal

    from engine.store.sqlite import SqliteStore
    from engine.tracing.stream_events import STREAM_EVENT

    long_answer = ANSWER * 3
    sse_server.enqueue(PATHS["openai"],
                       Reply.sse(render_turn("openai", {"text": long_answer}), pause_s=0.05))
    db = tmp_path / "engine.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml", "--task",
         "What do the notes say?", "--model", "openai:e2e-model", "--approval", "auto",
         "--workspace", str(tmp_path), "--db", str(db)],
        cwd=ROOT, env=engine_env(provider_env(sse_server)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = b""
    try:
        deadline = time.monotonic() + 60
        while ANSWER[:30].encode() not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.05)
            if ready:
                out += os.read(proc.stdout.fileno(), 65536)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        rest, err = proc.communicate(timeout=30)
        stopped_in = time.monotonic() - sent
    finally:
        proc.kill()
    text = (out + rest).decode()
    assert proc.returncode == 3, err
    assert stopped_in < 5 and not sse_server.completed, "the run waited for the whole answer"
    assert b"Traceback" not in err and "interrupted run" in text
    shown = text.split("model: ", 1)[1].split("\n", 1)[0]
    assert len(shown) >= 30 and long_answer.startswith(shown)
    store = SqliteStore(db)
    try:
        run = store.list_runs()[0]
        stored = "".join(e.payload["text"] for e in store.events(run.run_id, [STREAM_EVENT]))
    finally:
        store.close()
    assert run.status == "interrupted"
    assert len(stored) >= 30 and long_answer.startswith(stored)
