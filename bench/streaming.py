"""Benchmark of the streaming layer: its cost per 1,000 deltas and its delay to the first token.

Both providers' streams of N text deltas are served by the test SSE server on 127.0.0.1. We time
(a) a bare ``httpx`` stream reading the same bytes and (b) our client turning them into events
and a ``ModelTurn``; the difference is the time our layer adds. Then, with the server pausing
between events, we compare the time to the first byte (bare httpx) with the time to the first
``TextDelta`` (ours).

    .venv/bin/python bench/streaming.py [--deltas 1000] [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    del sys.path[0]  # run as a script: bench/concurrent.py must not shadow the stdlib's
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import anyio  # noqa: E402
import httpx  # noqa: E402
from sse_server import PATHS, Reply, SSEServer, provider_env  # noqa: E402

from engine.models.base import ModelClient, ModelParams, TextDelta, collect_turn  # noqa: E402
from engine.providers.factory import make_model  # noqa: E402
from engine.vocabulary.state import Message  # noqa: E402

HELLO = [Message("user", "Say something long.")]


def openai_stream(deltas: int) -> bytes:
    """A Chat Completions stream of ``deltas`` text chunks, then usage and [DONE]."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1760000000,
            "model": "gpt-4.1-mini"}

    def chunk(delta: dict, finish: str | None = None) -> bytes:  # type: ignore[type-arg]
        body = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    parts = [chunk({"content": f"word{i} "}) for i in range(deltas)]
    parts.append(chunk({}, "stop"))
    usage = {**head, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": deltas}}
    parts.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def anthropic_stream(deltas: int) -> bytes:
    """A Messages stream of ``deltas`` text_delta events."""
    def event(kind: str, data: dict) -> bytes:  # type: ignore[type-arg]
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    parts = [event("message_start", {"type": "message_start", "message": {
                 "usage": {"input_tokens": 5, "output_tokens": 1}}}),
             event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})]
    parts += [event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": f"word{i} "}})
              for i in range(deltas)]
    parts += [event("content_block_stop", {"type": "content_block_stop", "index": 0}),
              event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                       "usage": {"output_tokens": deltas}}),
              event("message_stop", {"type": "message_stop"})]
    return b"".join(parts)


STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream}


FIRST_TOKEN = {"openai": b'"content"', "anthropic": b'"text_delta"'}
"""The bytes that mark the first text delta of each provider's stream."""


async def bare(client: httpx.AsyncClient, server: SSEServer, provider: str) -> tuple[float, float]:
    """Seconds to read the whole body with bare httpx, and to the bytes of the first delta."""
    marker, seen = FIRST_TOKEN[provider], b""
    start = time.perf_counter()
    first = 0.0
    async with client.stream("POST", server.base_url + PATHS[provider], json={}) as resp:
        async for data in resp.aiter_bytes():
            if not first:
                seen += data
                first = time.perf_counter() - start if marker in seen else 0.0
    return time.perf_counter() - start, first


async def ours(model: ModelClient, provider: str) -> tuple[float, float]:
    """Seconds to a complete ``ModelTurn`` through our client, and to its first TextDelta."""
    start = time.perf_counter()
    first = 0.0

    def on_event(event: object) -> None:
        nonlocal first
        if isinstance(event, TextDelta) and not first:
            first = time.perf_counter() - start

    await collect_turn(model.stream(HELLO, [], ModelParams()), on_event=on_event)
    return time.perf_counter() - start, first


async def series(server: SSEServer, provider: str, reply: Reply, runs: int,
                 use_ours: bool) -> list[tuple[float, float]]:
    """``runs`` timings over one kept-alive connection (after one untimed warm-up)."""
    out = []
    model = make_model(f"{provider}:bench", env=provider_env(server))
    async with httpx.AsyncClient() as client:
        for i in range(runs + 1):
            server.enqueue(PATHS[provider], reply)
            timing = await (ours(model, provider) if use_ours else bare(client, server, provider))
            if i:
                out.append(timing)
    await model.aclose()
    return out


def ms(values: list[float]) -> tuple[float, float]:
    """(median, minimum) in milliseconds: the minimum is the least disturbed by other load."""
    return statistics.median(values) * 1000, min(values) * 1000


async def main(deltas: int, runs: int) -> None:
    server = SSEServer().start()
    try:
        print(f"streaming layer: {deltas} text deltas per stream, {runs} runs, "
              "ms as median (min)")
        for provider, make in STREAMS.items():
            body = make(deltas)
            whole = Reply.sse(body, chunk_size=16_384)  # few reads: parsing dominates, not I/O
            b, bmin = ms([t for t, _ in await series(server, provider, whole, runs, False)])
            o, omin = ms([t for t, _ in await series(server, provider, whole, runs, True)])
            print(f"  {provider:9} {len(body):>7} bytes   bare httpx {b:6.2f} ({bmin:5.2f})   "
                  f"ours {o:6.2f} ({omin:5.2f})   ratio {o / b:4.1f}x ({omin / bmin:4.1f}x)   "
                  f"added per 1,000 deltas {(o - b) * 1000 / deltas:5.2f} "
                  f"({(omin - bmin) * 1000 / deltas:5.2f})")
        for provider, make in STREAMS.items():
            paced = Reply.sse(make(20), pause_s=0.002)  # one event per network write
            fb, fbmin = ms([f for _, f in await series(server, provider, paced, runs, False)])
            fo, fomin = ms([f for _, f in await series(server, provider, paced, runs, True)])
            print(f"  {provider:9} first delta's bytes in (bare) {fb:5.2f} ({fbmin:5.2f})   "
                  f"first TextDelta out (ours) {fo:5.2f} ({fomin:5.2f})   "
                  f"added {fo - fb:+5.2f} ({fomin - fbmin:+5.2f})")
    finally:
        server.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.deltas, args.runs)
