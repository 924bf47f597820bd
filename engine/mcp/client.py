"""One live MCP server connection: start, list tools, call, follow tool-list changes, restart.

A ``McpConnection`` runs as one task (``run``) that owns the SDK ``Client`` from enter to exit,
as anyio requires. Other tasks call tools through it. Both protocol eras are spoken: the SDK
probes ``server/discover`` (2026-07-28) and falls back to the ``initialize`` handshake
(``protocol: legacy`` skips the probe). Tool-list changes arrive as
``notifications/tools/list_changed`` on handshake-era connections and, on 2026-07-28
connections, on a ``subscriptions/listen`` stream opened when the server advertises
``tools.listChanged``; both only mark the listing dirty and one task re-lists.

Faults never raise out of ``call``: a timeout, a crash (connection closed), a JSON-RPC error or
a malformed result all come back as ``ToolResult(is_error=True)``. A crash marks the server
unavailable and restarts it, at most ``max_restarts`` times.
"""

from __future__ import annotations

import logging
import math
import sys
import tempfile
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Literal, TextIO

import anyio
import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CONNECTION_CLOSED
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from engine.mcp.config import ServerConfig
from engine.mcp.results import to_tool_result
from engine.sandbox import server_argv
from engine.tooling.spec import ToolResult
from engine.vocabulary.events import EventKind

logger = logging.getLogger(__name__)

State = Literal["starting", "ready", "restarting", "unavailable", "failed", "closed"]
Emit = Callable[[str, dict[str, Any]], None]
OnTools = Callable[["McpConnection", list[types.Tool]], None]

CLIENT_INFO = types.Implementation(name="turnstile", version="0.1.0")
MAX_LIST_PAGES = 100
IDEMPOTENCY_META = "io.turnstile/idempotency-key"
"""The ``_meta`` key of a ``tools/call`` request carrying the call's idempotency key."""
STDERR_TAIL = 2_000
_CRASH_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                 ConnectionError, EOFError)


class _Crashed(Exception):
    """The connection to the server is gone (process died, stream closed)."""


class McpConnection:
    """The life of one configured server; ``tools`` is its current listing by server name."""

    def __init__(self, config: ServerConfig, on_tools: OnTools, emit: Emit) -> None:
        self.config = config
        self.state: State = "starting"
        self.restarts = 0
        self.tools: dict[str, types.Tool] = {}
        self.server_name = config.name
        self.server_version = "0"
        self.protocol_version: str | None = None
        self.last_error: str | None = None
        self.refreshes = 0
        """Re-listings done after a change notification (for status and tests)."""
        self._on_tools = on_tools
        self._emit = emit
        self._client: Client | None = None
        self._generation = 0
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        """Set to end the current connection (stop or restart)."""
        self._stopping = False
        self._starting: anyio.CancelScope | None = None
        """The scope of a start in progress, so ``stop`` need not wait for its deadline."""
        self._dirty = anyio.Event()
        self._refreshed: anyio.Event | None = None
        self._errlog: TextIO | None = None
        """The server's stderr, kept so failure events can quote its last lines."""
        self.transport = config.transport
        """The transport in use: ``auto`` becomes ``sse`` once streamable HTTP failed to start."""
        self._http_error: str | None = None
        """Why streamable HTTP failed to start, for an ``auto`` server's error message."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def start_timeout(self) -> float:
        return self.config.start_timeout_s

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[bool] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Connect, serve, and reconnect after crashes until ``stop``; reports start success."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            self._errlog = errlog
            try:
                await self._lifetime(task_status)
            finally:
                self._ready.set()
                if self.state not in ("failed", "unavailable"):
                    self.state = "closed"

    async def _lifetime(self, task_status: anyio.abc.TaskStatus[bool]) -> None:
        status: anyio.abc.TaskStatus[bool] | None = task_status
        while not self._stopping:
            await self._serve_once(status)
            status = None
            if self._stopping or self.state == "failed":
                return
            if self.restarts >= self.config.max_restarts:
                self._give_up()
                return
            self.restarts += 1
            self.state = "restarting"
            if self._ready.is_set():
                self._ready = anyio.Event()

    def stop(self) -> None:
        """Ask ``run`` to close the connection and return."""
        self._stopping = True
        self._wake.set()
        if self._starting is not None:
            self._starting.cancel()

    async def _serve_once(self, task_status: anyio.abc.TaskStatus[bool] | None) -> None:
        """One connection from start to end; a start failure is reported, never raised."""
        self._wake = anyio.Event()
        connected = retry = False
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + self.start_timeout
            self._starting = scope
            try:
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(await self._client_for(stack))
                    async with anyio.create_task_group() as tg:
                        if _announces_changes(client):  # listen first: no change slips between
                            await tg.start(self._listen, client)
                        tools = await _list_all(client)
                        scope.deadline = math.inf
                        self._starting = None
                        self._connected(client, tools)
                        connected = True
                        if task_status is not None:
                            task_status.started(True)
                        tg.start_soon(self._refresh_loop, client)
                        await self._wake.wait()
                        tg.cancel_scope.cancel()
                return
            except Exception as exc:  # the run goes on without the server
                if connected:
                    self._request_restart(self._generation, f"connection lost: {_describe(exc)}")
                elif self._fall_back_to_sse(exc):
                    retry = True
                else:
                    self._start_failed(exc, task_status)
                if not retry:
                    return
            finally:
                self._client = None
                self._starting = None
        if retry:
            await self._serve_once(task_status)
            return
        if self._stopping:
            if task_status is not None:
                self.state = "failed"
                task_status.started(False)
            return
        self._start_failed(TimeoutError(f"not ready within {self.start_timeout:g}s"), task_status)

    async def _client_for(self, stack: AsyncExitStack) -> Client:
        cfg = self.config
        if cfg.url is not None and self.transport == "sse":
            transport: Any = sse_client(cfg.url, headers=dict(cfg.headers),
                                        timeout=self.start_timeout,
                                        sse_read_timeout=max(cfg.timeout_s, 300.0))
        elif cfg.url is not None:
            http = create_mcp_http_client(headers=dict(cfg.headers))
            await stack.enter_async_context(http)
            transport = streamable_http_client(cfg.url, http_client=http)
        else:
            assert cfg.command is not None
            argv = server_argv(cfg.sandbox, [cfg.command, *cfg.args], cfg.cwd)
            params = StdioServerParameters(command=argv[0], args=argv[1:],
                                           env=dict(cfg.env) or None, cwd=cfg.cwd)
            transport = stdio_client(params, errlog=self._errlog or sys.stderr)
        return Client(transport, mode="legacy" if cfg.protocol == "legacy" else "auto",
                      message_handler=self._on_message, client_info=CLIENT_INFO, cache=None)

    def _fall_back_to_sse(self, exc: BaseException) -> bool:
        """An ``auto`` URL that did not speak streamable HTTP gets one try as HTTP+SSE."""
        if self.config.url_transport != "auto" or self.transport != "auto" or self._stopping:
            return False
        self._http_error = f"{type(_leaf(exc)).__name__}: {_describe(_leaf(exc))}"
        logger.info("MCP server %s: streamable HTTP failed (%s); trying HTTP+SSE", self.name,
                    self._http_error)
        self.transport = "sse"
        return True

    def _connected(self, client: Client, tools: list[types.Tool]) -> None:
        """Record identity and tools, tell the hub, and let waiting calls through."""
        info = client.server_info
        self.server_name = info.name if info else self.config.name
        self.server_version = info.version if info and info.version else "0"
        self.protocol_version = client.protocol_version
        self._client = client
        self._generation += 1
        self.state = "ready"
        self.last_error = None
        if self.transport == "auto":
            self.transport = "http"
        self._set_tools(tools)
        kind = "mcp_server_started" if self._generation == 1 else "mcp_server_restarted"
        self._emit(kind, {"server": self.name, "transport": self.transport,
                          "protocol_version": self.protocol_version,
                          "server_name": self.server_name, "server_version": self.server_version,
                          "trust": self.config.trust, "tools": sorted(self.tools),
                          "restarts": self.restarts})
        self._ready.set()

    def _start_failed(self, exc: BaseException, task_status: Any) -> None:
        leaf = _leaf(exc)
        self.last_error = f"{type(leaf).__name__}: {_describe(leaf)}"
        if self._http_error is not None:
            self.last_error = (f"streamable HTTP: {self._http_error}; "
                               f"HTTP+SSE: {self.last_error}")
        phase = "start" if self._generation == 0 else "restart"
        logger.warning("MCP server %s failed to %s: %s", self.name, phase, self.last_error)
        self._emit(EventKind.MCP_SERVER_FAILED, {"server": self.name, "phase": phase,
                                         "error": self.last_error, "stderr": self.stderr_tail()})
        if task_status is not None:
            self.state = "failed"
            self._set_tools([])
            task_status.started(False)

    def _give_up(self) -> None:
        self.state = "unavailable"
        self._set_tools([])
        self._emit(EventKind.MCP_SERVER_UNAVAILABLE, {
            "server": self.name, "restarts": self.restarts, "error": self.last_error})

    def _request_restart(self, generation: int, reason: str, tool: str | None = None) -> None:
        """The first caller to see a dead connection ends it; ``run`` decides about a restart."""
        if generation != self._generation or self.state != "ready":
            return
        self.state = "restarting"
        self.last_error = reason
        self._ready = anyio.Event()
        self._emit(EventKind.MCP_SERVER_CRASHED, {"server": self.name, "tool": tool,
                                                  "error": reason,
                                          "restarts": self.restarts,
                                          "max_restarts": self.config.max_restarts,
                                          "stderr": self.stderr_tail()})
        self._wake.set()

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (stdio servers only)."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        log.flush()
        end = log.seek(0, 2)
        log.seek(max(0, end - STDERR_TAIL * 4))
        return log.read()[-STDERR_TAIL:]

    # -- tool listing ----------------------------------------------------------------------

    def _set_tools(self, tools: list[types.Tool]) -> None:
        self.tools = {t.name: t for t in tools}
        self._on_tools(self, tools)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.mark_dirty()
        elif isinstance(message, Exception):
            logger.warning("MCP server %s sent something unreadable: %s", self.name, message)
            self._emit(EventKind.MCP_SERVER_ERROR,
                       {"server": self.name, "error": _describe(message)})

    def mark_dirty(self) -> None:
        """Schedule a re-list; calls finishing meanwhile wait for it (see ``call``)."""
        if self._refreshed is None:
            self._refreshed = anyio.Event()
        self._dirty.set()

    async def _refresh_loop(self, client: Client) -> None:
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            done, self._refreshed = self._refreshed, None
            try:
                with anyio.fail_after(self.config.timeout_s):
                    tools = await _list_all(client)
            except Exception as exc:  # a failed re-list keeps the old listing
                logger.warning("MCP server %s: re-listing tools failed: %s", self.name, exc)
                self._emit(EventKind.MCP_SERVER_ERROR,
                           {"server": self.name, "error": _describe(exc)})
            else:
                self.refreshes += 1
                self._set_tools(tools)
            if done is not None:
                done.set()

    async def _listen(self, client: Client, *,
                      task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                      ) -> None:
        """2026-07-28: change notifications only come on an opted-in listen stream.

        Reports started once the server acknowledged (or refused) the subscription."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as sub:
                task_status.started()
                started = True
                async for _event in sub:
                    self.mark_dirty()
        except Exception as exc:  # the connection itself is judged by calls, not by the stream
            logger.info("MCP server %s: listen stream ended: %s", self.name, exc)
        if not started:
            task_status.started()

    async def wait_refreshed(self, timeout: float) -> None:
        """Wait for a pending re-list, so the next model call sees the new tool list."""
        await anyio.lowlevel.checkpoint()
        pending = self._refreshed
        if pending is not None:
            with anyio.move_on_after(timeout):
                await pending.wait()

    # -- calls -----------------------------------------------------------------------------

    async def call(self, tool: str, args: Mapping[str, Any], timeout: float, *,
                   idempotency_key: str = "") -> ToolResult:
        """Call ``tool``; every failure is an ``is_error`` result naming the server. The
        call's idempotency key rides in the request's ``_meta`` (``IDEMPOTENCY_META``)."""
        with anyio.move_on_after(timeout):
            await self._ready.wait()
        client, generation = self._client, self._generation
        if client is None or self.state != "ready":
            return ToolResult.error(self.unavailable_message(), server=self.name, tool=tool)
        try:
            with anyio.fail_after(timeout):
                result = await _call(client, tool, dict(args), idempotency_key)
        except TimeoutError:
            self._emit(EventKind.MCP_CALL_FAILED,
                       {"server": self.name, "tool": tool, "reason": "timeout"})
            return ToolResult.error(
                f'{tool} on MCP server "{self.name}" did not answer within {timeout:g}s '
                "(call cancelled)", server=self.name, tool=tool, reason="timeout")
        except _Crashed as exc:
            return self._crashed(generation, tool, exc)
        except MCPError as exc:
            return self._fail(tool, "protocol", f"error {exc.code}: {exc.message}")
        except Exception as exc:  # malformed result, invalid structured content, ...
            return self._fail(tool, "malformed", f"{type(exc).__name__}: {_describe(exc)}")
        await self.wait_refreshed(timeout)
        return to_tool_result(result, self.name, tool)

    def _crashed(self, generation: int, tool: str, exc: BaseException) -> ToolResult:
        reason = f"connection lost: {_describe(exc)}"
        self._emit(EventKind.MCP_CALL_FAILED,
                   {"server": self.name, "tool": tool, "reason": "crash"})
        self._request_restart(generation, reason, tool)
        n, most = self.restarts + 1, self.config.max_restarts
        what = (f"Restarting it (restart {n} of {most})." if n <= most else
                f"It will not be restarted ({most} restart(s) used).")
        return ToolResult.error(
            f'MCP server "{self.name}" crashed during {tool}; whether the call took effect is '
            f"unknown. {what}", server=self.name, tool=tool, reason="crash")

    def _fail(self, tool: str, reason: str, detail: str) -> ToolResult:
        self._emit(EventKind.MCP_CALL_FAILED, {"server": self.name, "tool": tool, "reason": reason,
                                       "error": detail})
        return ToolResult.error(f'{tool} on MCP server "{self.name}" failed: {detail}',
                                server=self.name, tool=tool, reason=reason)

    def unavailable_message(self) -> str:
        if self.state == "failed":
            return f'MCP server "{self.name}" did not start: {self.last_error}'
        if self.state == "unavailable":
            return (f'MCP server "{self.name}" is unavailable after {self.restarts} restart(s): '
                    f"{self.last_error}")
        return f'MCP server "{self.name}" is {self.state}'


def _announces_changes(client: Client) -> bool:
    """A 2026-07-28 server advertising ``tools.listChanged`` (earlier eras just notify)."""
    caps = client.server_capabilities.tools
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS and bool(caps and caps.list_changed)


async def _call(client: Client, tool: str, args: dict[str, Any],
                idempotency_key: str = "") -> types.CallToolResult:
    """``call_tool`` with connection loss told apart from other errors."""
    meta: Any = {IDEMPOTENCY_META: idempotency_key} if idempotency_key else None
    try:
        return await client.call_tool(tool, args, meta=meta)
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            raise _Crashed(exc.message) from exc
        raise
    except _CRASH_ERRORS as exc:
        raise _Crashed(_describe(exc)) from exc


async def _list_all(client: Client) -> list[types.Tool]:
    """Every tool the server lists, following pagination cursors."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    """A one-line description, looking inside exception groups."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__
