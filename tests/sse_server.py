"""A real HTTP server on 127.0.0.1 that replays recorded SSE byte streams and injects faults.

It speaks whatever the recorded bytes say (``tests/streams/openai_*.sse`` are Chat Completions,
``anthropic_*.sse`` are Messages), so one server serves every provider. Replies are queued per
path and served in order; every request is recorded for assertions on the wire format.

Use it from a test module (importing the fixture registers it as ``sse_server``)::

    from sse_server import PATHS, Reply, provider_env, sse_server_fixture  # noqa: F401

    async def test_hello(sse_server):
        sse_server.enqueue(PATHS["openai"], Reply.error(429, retry_after="0"),
                           Reply.stream("openai_text"))
        client = make_model("openai:gpt-4.1-mini", env=provider_env(sse_server))
        ...
        assert sse_server.requests[-1].json["stream"] is True

``Reply.turn(provider, {"text": ..., "tool_calls": [...]})`` renders any ``turns.yaml`` turn in a
provider's wire format (for end-to-end runs of a task against this server).
``provider_env`` sets ``OPENAI_BASE_URL`` to ``base_url + "/v1"`` and ``ANTHROPIC_BASE_URL`` to
``base_url`` (Anthropic paths start with ``/v1``); ``PATHS`` names each provider's endpoint.
A request to a path with nothing queued gets a 404 with a JSON error naming the path.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

STREAMS = Path(__file__).with_name("streams")
"""Recorded SSE byte streams, named ``<provider>_<case>.sse``."""

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
"""Where each provider's client posts, relative to ``SSEServer.base_url``."""

_IDS = itertools.count(1)
"""Rendered tool calls get ids unique in the process, as real providers' ids are."""

_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\n\r\n)")


def load_stream(name: str) -> bytes:
    """The bytes of ``tests/streams/<name>.sse``."""
    return (STREAMS / f"{name}.sse").read_bytes()


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunk_size: int | None = None
    """Send the body in chunks of this many bytes; None sends one chunk per SSE event."""
    pause_s: float = 0.0
    """Sleep between chunks, so the client reads them as separate network reads."""
    disconnect_after: int | None = None
    """Drop the connection after this many body bytes (no terminating chunk)."""
    hang_s: float = 0.0
    """Sleep before answering at all (to provoke the client's read timeout)."""

    @classmethod
    def stream(cls, name: str, *, chunk_size: int | None = None, pause_s: float = 0.0005,
               disconnect_after: int | None = None) -> Reply:
        """A 200 replaying ``tests/streams/<name>.sse``."""
        return cls.sse(load_stream(name), chunk_size=chunk_size, pause_s=pause_s,
                       disconnect_after=disconnect_after)

    @classmethod
    def turn(cls, provider: str, turn: Mapping[str, Any], *,
             usage: tuple[int, int, int] = (100, 20, 0), **kw: Any) -> Reply:
        """A 200 streaming ``turn`` (a ``turns.yaml`` item) in ``provider``'s format."""
        return cls.sse(render_turn(provider, turn, usage=usage), **kw)

    @classmethod
    def sse(cls, body: bytes, **kw: Any) -> Reply:
        """A 200 with ``body`` as an event stream."""
        headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        return cls(200, headers, body, **kw)

    @classmethod
    def error(cls, status: int, message: str = "", *, retry_after: str | None = None) -> Reply:
        """An error status with a provider-style JSON body."""
        body = json.dumps({"type": "error", "error": {
            "type": "test_error", "message": message or f"scripted HTTP {status}"}}).encode()
        headers = {"content-type": "application/json"}
        if retry_after is not None:
            headers["retry-after"] = retry_after
        return cls(status, headers, body)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        """A JSON body (e.g. a model list)."""
        return cls(status, {"content-type": "application/json"}, json.dumps(data).encode())

    def chunks(self) -> list[bytes]:
        """The body split the way it will be written."""
        if self.chunk_size:
            n = self.chunk_size
            return [self.body[i:i + n] for i in range(0, len(self.body), n)]
        return [part for part in _EVENT_END.split(self.body) if part]


def render_turn(provider: str, turn: Mapping[str, Any], *,
                usage: tuple[int, int, int] = (100, 20, 0), piece: int = 5) -> bytes:
    """A ``turns.yaml`` turn (``text``, ``tool_calls``) as the provider's SSE bytes.

    Text and arguments are cut into ``piece``-character fragments; ``usage`` is
    ``(input, output, cached)`` tokens. For end-to-end runs against this server.
    """
    if provider == "anthropic":
        return _render_anthropic(turn, usage, piece)
    return _render_openai(turn, usage, piece)


def _pieces(text: str, n: int) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)]


def _render_openai(turn: Mapping[str, Any], usage: tuple[int, int, int], piece: int) -> bytes:
    def chunk(delta: Any, finish: str | None = None, **extra: Any) -> str:
        body = {"id": "chatcmpl-rendered", "object": "chat.completion.chunk", "created": 0,
                "model": "rendered", "choices": [] if delta is None else [
                    {"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in _pieces(str(turn.get("text") or ""), piece)]
    calls = turn.get("tool_calls") or ()
    for i, call in enumerate(calls):
        head = {"index": i, "id": f"call_r{next(_IDS)}", "type": "function",
                "function": {"name": call["name"], "arguments": ""}}
        out.append(chunk({"tool_calls": [head]}))
        args = json.dumps(call.get("args") or {}, ensure_ascii=False)
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                for p in _pieces(args, piece)]
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    tokens_in, tokens_out, cached = usage
    out.append(chunk(None, usage={"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                                  "total_tokens": tokens_in + tokens_out,
                                  "prompt_tokens_details": {"cached_tokens": cached}}))
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _render_anthropic(turn: Mapping[str, Any], usage: tuple[int, int, int], piece: int) -> bytes:
    def event(kind: str, **body: Any) -> str:
        return f"event: {kind}\ndata: " + json.dumps({"type": kind, **body},
                                                     ensure_ascii=False) + "\n\n"

    tokens_in, tokens_out, cached = usage
    out = [event("message_start", message={
        "id": "msg_rendered", "type": "message", "role": "assistant", "model": "rendered",
        "content": [], "usage": {"input_tokens": tokens_in - cached,
                                 "cache_read_input_tokens": cached, "output_tokens": 1}})]
    blocks = 0
    text = str(turn.get("text") or "")
    if text:
        out.append(event("content_block_start", index=0,
                         content_block={"type": "text", "text": ""}))
        out.append(event("ping"))
        out += [event("content_block_delta", index=0, delta={"type": "text_delta", "text": p})
                for p in _pieces(text, piece)]
        out.append(event("content_block_stop", index=0))
        blocks = 1
    calls = turn.get("tool_calls") or ()
    for i, call in enumerate(calls, blocks):
        out.append(event("content_block_start", index=i, content_block={
            "type": "tool_use", "id": f"toolu_r{next(_IDS)}", "name": call["name"], "input": {}}))
        args = json.dumps(call.get("args") or {}, ensure_ascii=False)
        out += [event("content_block_delta", index=i,
                      delta={"type": "input_json_delta", "partial_json": p})
                for p in _pieces(args, piece)]
        out.append(event("content_block_stop", index=i))
    out.append(event("message_delta", delta={"stop_reason": "tool_use" if calls else "end_turn"},
                     usage={"output_tokens": tokens_out}))
    out.append(event("message_stop"))
    return "".join(out).encode()


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes
    client_port: int = 0
    """The client's TCP port: equal ports mean a reused (kept-alive) connection."""

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class SSEServer:
    """The server: ``enqueue`` replies per path, read ``requests`` afterwards."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.aborted = threading.Event()
        """Set when a client went away while a reply was still being written."""
        self.completed = 0
        """Replies written to the end."""
        self._queues: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def enqueue(self, path: str, *replies: Reply) -> None:
        """Queue ``replies`` for requests to ``path`` (query string ignored), served in order."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def pending(self, path: str) -> int:
        """Replies still queued for ``path``."""
        with self._lock:
            return len(self._queues.get(path, ()))

    def start(self) -> SSEServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            queue = self._queues.get(request.path)
            if queue:
                return queue.popleft()
        message = f"no reply enqueued for {request.method} {request.path}"
        return Reply.error(404, message)


class _QuietServer(ThreadingHTTPServer):
    """Clients hanging up (idle keep-alive, cancelled streams) are normal here, not errors."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _serve(self) -> None:
        owner: SSEServer = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, self.path.split("?")[0], headers, body,
                          self.client_address[1])
        reply = owner._next(request)
        if reply.hang_s:
            time.sleep(reply.hang_s)
        try:
            if reply.status == 200 and reply.headers.get("content-type", "").startswith(
                    "text/event-stream"):
                self._stream(reply, owner)
            else:
                self._whole(reply)
        except (BrokenPipeError, ConnectionResetError):
            owner.aborted.set()
            self.close_connection = True

    def _whole(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def _stream(self, reply: Reply, owner: SSEServer) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        sent = 0
        for chunk in reply.chunks():
            if reply.disconnect_after is not None and sent + len(chunk) > reply.disconnect_after:
                self._write_chunk(chunk[:reply.disconnect_after - sent])
                self._drop()
                return
            self._write_chunk(chunk)
            sent += len(chunk)
            if reply.pause_s:
                time.sleep(reply.pause_s)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        with owner._lock:
            owner.completed += 1

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def provider_env(server: SSEServer) -> dict[str, str]:
    """An environment pointing both providers at ``server`` (for ``make_model(env=...)``)."""
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url + "/v1",
            "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": server.base_url}


@pytest.fixture(name="sse_server")
def sse_server_fixture() -> Iterator[SSEServer]:
    """A started ``SSEServer`` on a free port of 127.0.0.1, stopped after the test."""
    server = SSEServer().start()
    try:
        yield server
    finally:
        server.close()
