"""Who may talk to the console: the bind rule, the token, and CSRF-safe decisions.

Loopback binds need no token to read; any other address needs ``--token`` (refused otherwise).
With a token, every request (pages, assets, the event stream) must carry it: an
``Authorization: Bearer`` header, the ``turnstile_token`` cookie, or ``?token=`` once (which
sets the cookie). A decision is a POST whose form carries the page's CSRF token and whose
``Origin``/``Sec-Fetch-Site`` (when sent) say it came from the console itself.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from engine.vocabulary.errors import UsageError

COOKIE = "turnstile_token"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
"""Run and call ids as the engine and providers make them; anything else is refused."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose the console beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise UsageError(f"serve --host {host}: binding a non-loopback address needs --token T "
                         "(anyone who can reach it could read runs and approve calls)")


def safe_id(value: str) -> bool:
    """A URL parameter that names a run or a call (no path separators, no ``..``)."""
    return bool(SAFE_ID.match(value)) and ".." not in value


class Guard:
    """The token check, as ASGI middleware in front of the whole app; on a loopback bind also
    the ``Host`` check, so a web page cannot read the console through DNS rebinding."""

    def __init__(self, app: ASGIApp, token: str | None, *, loopback: bool = True) -> None:
        self.app = app
        self.token = token
        self.loopback = loopback
        self.csrf_key = secrets.token_bytes(32)

    def csrf_token(self) -> str:
        return hmac.new(self.csrf_key, b"decide", hashlib.sha256).hexdigest()[:40]

    def csrf_ok(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self.csrf_token().encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.loopback and not _loopback_host(scope):
            await _plain(send, 400, b"400: this console answers to 127.0.0.1 or localhost only\n")
            return
        if self.token is None:
            await self.app(scope, receive, send)
            return
        given, from_query = self._given(scope)
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            await _plain(send, 401, b"401: a token is needed (?token=T or Authorization: "
                                    b"Bearer T)\n", [(b"www-authenticate", b"Bearer")])
            return
        if not from_query:
            await self.app(scope, receive, send)
            return

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                message["headers"] = [*message.get("headers", []),
                                      (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, with_cookie)

    @staticmethod
    def _given(scope: Scope) -> tuple[str | None, bool]:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip(), False
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                return value, False
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if query.get("token"):
            return query["token"][0], True
        return None, False


def _loopback_host(scope: Scope) -> bool:
    host = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                 if k.lower() == b"host"), "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return is_loopback(name)


def same_origin(headers: MutableMapping[str, str] | Any) -> bool:
    """A POST from the console's own page: no cross-site fetch metadata, and an ``Origin``
    (when the browser sends one) that names this very host."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    host = headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


async def _plain(send: Send, status: int, body: bytes,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
