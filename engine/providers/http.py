"""The HTTP adapter for model providers: one shared ``httpx.AsyncClient``, SSE in, our errors out.

This is the only module that imports ``httpx`` and ``httpx_sse``. ``HttpStream.events`` makes one
attempt of a streaming POST and yields ``(event, data)`` pairs; every transport failure leaves as
``TransientError`` (worth a retry, see ``retry.py``), ``ModelError`` (final) or
``ModelConfigError`` (the base URL itself is wrong or unreachable).
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import httpx_sse

from engine.providers.retry import TransientError
from engine.vocabulary.errors import ModelConfigError, ModelError

logger = logging.getLogger(__name__)

SseEvent = tuple[str, str]
"""``(event, data)``: the event name (``message`` when the server sent none) and its data."""

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Besides every 5xx: timeouts, conflicts and rate limits are worth another attempt."""

USER_AGENT = "turnstile/0.1"


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds allowed for each phase of a request; ``read_s`` is the longest gap between bytes."""

    connect_s: float = 10.0
    read_s: float = 120.0
    write_s: float = 30.0
    pool_s: float = 10.0
    probe_s: float = 3.0
    """For ``probe`` (the preflight check): short, so a dead server is reported quickly."""


class HttpStream:
    """One provider endpoint: a base URL, its headers and a shared connection pool."""

    def __init__(
        self,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        *,
        key_env: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.key_env = key_env
        self.timeouts = timeouts or Timeouts()
        t = self.timeouts
        self._client = httpx.AsyncClient(
            headers={"user-agent": USER_AGENT, **headers},
            timeout=httpx.Timeout(t.connect_s, read=t.read_s, write=t.write_s, pool=t.pool_s),
            verify=_ssl_context(),
        )

    async def events(self, path: str,
                     payload: Mapping[str, Any]) -> AsyncGenerator[SseEvent, None]:
        """POST ``payload`` to ``path`` and yield its server-sent events (one attempt)."""
        url = self.base_url + path
        headers = {"accept": "text/event-stream", "cache-control": "no-store"}
        try:
            async with self._client.stream("POST", url, json=payload, headers=headers) as resp:
                if resp.status_code >= 400:
                    await self._raise_for_status(resp, url)
                async for item in sse_events(resp):
                    yield item
        except httpx_sse.SSEError as exc:  # a TransportError subclass: caught first
            raise ModelError(f"{self.provider}: {url} did not answer with a stream: {exc}") from exc
        except httpx.HTTPError as exc:
            raise self._map_transport_error(exc, url) from exc
        except httpx.InvalidURL as exc:
            raise ModelConfigError(f"{self.provider}: invalid base URL {url!r}: {exc}") from exc

    async def probe(self, path: str) -> tuple[int, Any]:
        """GET ``path`` quickly: ``(status, JSON or None)``; unreachable is a config error."""
        url = self.base_url + path
        try:
            resp = await self._client.get(url, timeout=self.timeouts.probe_s)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise ModelConfigError(
                f"{self.provider}: cannot reach {self.base_url} ({_describe(exc)}); "
                "is the server running and the base URL right?"
            ) from exc
        try:
            body = resp.json()
        except ValueError:
            body = None
        return resp.status_code, body

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _raise_for_status(self, resp: httpx.Response, url: str) -> None:
        status = resp.status_code
        try:
            await resp.aread()
            detail = _error_detail(resp.content)
        except httpx.HTTPError:
            detail = ""
        reason = f"HTTP {status} {resp.reason_phrase}".rstrip() + (f": {detail}" if detail else "")
        if status in RETRYABLE_STATUS or status >= 500:
            raise TransientError(reason, resp.headers.get("retry-after"))
        raise ModelError(f"{self.provider}: {reason} ({self._fix_for(status, url)})")

    def _fix_for(self, status: int, url: str) -> str:
        """The one hint that most often fixes a non-retryable status."""
        if status == 401:
            if self.key_env:
                return f"the API key was rejected: set {self.key_env} to a valid key"
            return "the server wants an API key; this provider sends none"
        if status == 403:
            return "the key has no access to this model or endpoint; check the account"
        if status == 404:
            return f"nothing at {url}: check the model name and the base URL"
        if status == 400:
            return "the request was refused; the detail above says which field"
        return "not retryable"

    def _map_transport_error(self, exc: httpx.HTTPError, url: str) -> Exception:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return TransientError(f"cannot connect to {self.base_url} ({_describe(exc)})")
        if isinstance(exc, httpx.ReadTimeout):
            return TransientError(f"no data for {self.timeouts.read_s:g}s (read timeout)")
        if isinstance(exc, httpx.TimeoutException):
            return TransientError(f"timed out ({_describe(exc)})")
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return TransientError(f"connection lost mid-stream ({_describe(exc)})")
        if isinstance(exc, httpx.UnsupportedProtocol):
            return ModelConfigError(f"{self.provider}: invalid base URL {url!r}: {exc}")
        return ModelError(f"{self.provider}: HTTP failure at {url}: {_describe(exc)}")


async def sse_events(response: httpx.Response) -> AsyncIterator[SseEvent]:
    """Yield ``(event, data)`` from an SSE response; UTF-8 always, as the SSE spec says."""
    response.encoding = "utf-8"
    source = httpx_sse.EventSource(response)
    async for sse in source.aiter_sse():
        yield sse.event, sse.data


async def drain(events: AsyncIterator[SseEvent], timeout_s: float = 2.0) -> None:
    """Read what follows the last event, so the connection goes back to the pool for reuse.

    Closing a response before its end closes the connection, and the next call pays a new
    TCP (and TLS) handshake. A server that keeps the stream open is cut after ``timeout_s``.
    """
    with anyio.move_on_after(timeout_s):
        async for _ in events:
            pass


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once: loading the CA bundle takes tens of ms."""
    return httpx.create_ssl_context()


def _error_detail(body: bytes) -> str:
    """The provider's error message (``{"error": {"message": ...}}``), else the body's start."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300]
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:300]
    if isinstance(err, str):
        return err[:300]
    return text[:300]


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
