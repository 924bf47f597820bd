"""The MCP hub: every configured server started, its tools kept in the run's ``ToolRegistry``.

``async with McpHub(servers, registry, emit):`` starts all servers concurrently (one that fails
to start is reported as ``mcp_server_failed`` and the run goes on without it), registers each
tool as ``mcp__<server>__<tool>``, and follows tool-list changes for as long as the block runs.
Events (``emit(kind, payload)``): ``mcp_server_started``, ``mcp_server_failed``,
``mcp_server_crashed``, ``mcp_server_restarted``, ``mcp_server_unavailable``,
``mcp_server_error``, ``mcp_tools_changed`` (``added``/``removed``/``changed`` names) and
``mcp_call_failed`` (``timeout``/``crash``/``protocol``/``malformed``).
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import mcp.types as types

from engine.mcp.classify import Classification, classify_tool, with_policy
from engine.mcp.client import McpConnection
from engine.mcp.config import ServerConfig
from engine.mcp.naming import tool_name
from engine.mcp.toolspec import Caller, annotations_of, argument_errors, build_spec, schema_of
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import RISK_ORDER, ToolContext, ToolResult, ToolSpec
from engine.vocabulary.errors import ToolError
from engine.vocabulary.events import EventKind

logger = logging.getLogger(__name__)

Emit = Callable[[str, dict[str, Any]], None]


def _ignore(kind: str, payload: dict[str, Any]) -> None:
    return None


class McpHub:
    """Starts the servers, keeps their tools registered, and stops them on exit."""

    def __init__(
        self,
        servers: Mapping[str, ServerConfig],
        registry: ToolRegistry,
        emit: Emit = _ignore,
        *,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """``overrides``: policy entries by tool name or glob (``mcp__git__*``) with ``risk``
        and/or ``idempotent``; the local policy may lower or raise, unlike a server."""
        self.servers = dict(servers)
        self.registry = registry
        self.connections: dict[str, McpConnection] = {}
        self.classifications: dict[str, Classification] = {}
        """Registered name -> what the local rules decided, with reasons."""
        self._emit = emit
        self._overrides = dict(overrides or {})
        self._check_overrides()
        self._names: dict[tuple[str, str], str] = {}
        self._removed: dict[str, str] = {}
        self._loaded: set[str] = set()
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> McpHub:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            async with anyio.create_task_group() as starting:
                for name in sorted(self.servers):
                    conn = McpConnection(self.servers[name], self._on_tools, self._emit)
                    self.connections[name] = conn
                    starting.start_soon(tg.start, conn.run)
        except BaseException as exc:
            await self._close(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._close(exc_type, exc, tb)

    async def _close(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for conn in self.connections.values():
            conn.stop()
        tg, self._tg = self._tg, None
        try:
            return await tg.__aexit__(exc_type, exc, tb) if tg is not None else None
        finally:
            for name in self.connections:
                self.registry.remove_source(f"mcp:{name}")

    # -- what the rest of the engine asks ---------------------------------------------------

    def status(self) -> dict[str, dict[str, Any]]:
        """Per server: state, restarts, protocol, identity, trust, tools, re-listings."""
        return {
            name: {"state": c.state, "restarts": c.restarts, "protocol_version": c.protocol_version,
                   "server_name": c.server_name, "server_version": c.server_version,
                   "trust": c.config.trust, "tools": sorted(c.tools), "error": c.last_error,
                   "refreshes": c.refreshes}
            for name, c in sorted(self.connections.items())
        }

    def explain_missing(self, name: str) -> str | None:
        """Why ``name`` is not (any longer) a tool, when it was one of ours; else ``None``."""
        server = self._removed.get(name)
        if server is None:
            return None
        conn = self.connections.get(server)
        if conn is not None and conn.state in ("failed", "unavailable"):
            return f"tool {name} is gone: {conn.unavailable_message()}"
        return f'tool {name} was removed by MCP server "{server}"'

    # -- keeping the registry in step with the servers --------------------------------------

    def _on_tools(self, conn: McpConnection, tools: list[types.Tool]) -> None:
        """Replace ``conn``'s tools in the registry when the listing changed; record the change."""
        source = f"mcp:{conn.name}"
        old = {s.name: s for s in self.registry if s.source == source}
        taken = {n for n in self.registry.names() if n not in old}
        new: dict[str, ToolSpec] = {}
        offered = (t for t in tools if conn.config.offers(t.name))
        for tool in sorted(offered, key=lambda t: t.name):
            key = (conn.name, tool.name)
            name = self._names.get(key) or tool_name(conn.name, tool.name, taken | set(new))
            self._names[key] = name
            c = self._classify(name, tool, conn.config)
            self.classifications[name] = c
            new[name] = build_spec(name, tool, conn.config, conn.server_version,
                                   self._caller(conn, tool.name, name), c)
        added = sorted(set(new) - set(old))
        removed = sorted(set(old) - set(new))
        changed = sorted(n for n in set(new) & set(old) if _differs(new[n], old[n]))
        if not (added or removed or changed):
            return
        self.registry.remove_source(source)
        for spec in new.values():
            self.registry.add(spec)
        for n in removed:
            self._removed[n] = conn.name
            self.classifications.pop(n, None)
        for n in new:
            self._removed.pop(n, None)
        if conn.name in self._loaded:
            self._emit(EventKind.MCP_TOOLS_CHANGED, {"server": conn.name, "added": added,
                                             "removed": removed, "changed": changed,
                                             "registry_version": self.registry.version})
        if new:
            self._loaded.add(conn.name)

    def _classify(self, name: str, tool: types.Tool, config: ServerConfig) -> Classification:
        c = classify_tool(tool.name, schema_of(tool), annotations_of(tool), config.trust)
        rule = self._overrides.get(name) or next(
            (v for k, v in self._overrides.items() if fnmatch.fnmatchcase(name, k)), None)
        if rule:
            c = with_policy(c, risk=rule.get("risk"), idempotent=rule.get("idempotent"))
        return c

    def _check_overrides(self) -> None:
        for key, rule in self._overrides.items():
            risk = rule.get("risk")
            if risk is not None and risk not in RISK_ORDER:
                raise ToolError(f"MCP override {key!r}: unknown risk {risk!r}; "
                                f"expected one of {', '.join(RISK_ORDER)}")

    def _caller(self, conn: McpConnection, server_tool: str, name: str) -> Caller:
        """The handler of ``name``: checks the tool still exists and the args fit its schema."""

        async def handler(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            live = conn.tools.get(server_tool)
            if live is None or self._names.get((conn.name, server_tool)) != name:
                why = self.explain_missing(name)
                return ToolResult.error(why or f'tool {name} was removed by MCP server '
                                              f'"{conn.name}"', server=conn.name)
            errors = argument_errors(schema_of(live), args or {})
            if errors:
                return ToolResult.error(
                    f'invalid arguments for {name} (current schema of MCP server "{conn.name}"): '
                    + "; ".join(errors), server=conn.name)
            return await conn.call(server_tool, args or {}, ctx.timeout_s or conn.config.timeout_s,
                                   idempotency_key=ctx.idempotency_key)

        return handler


def _differs(a: ToolSpec, b: ToolSpec) -> bool:
    return (a.version, a.description, a.risk, a.idempotent, dict(a.annotations or {})) != (
        b.version, b.description, b.risk, b.idempotent, dict(b.annotations or {}))


async def discover(
    servers: Mapping[str, ServerConfig],
    registry: ToolRegistry | None = None,
    emit: Emit = _ignore,
) -> list[ToolSpec]:
    """Start ``servers``, list their tools as specs, stop them (for ``engine tools``).

    ``registry`` holds the built-ins, so MCP names avoid theirs; it is not modified. The
    returned specs' handlers answer with an error once the servers are stopped.
    """
    scratch = ToolRegistry(list(registry) if registry is not None else [])
    async with McpHub(servers, scratch, emit):
        return [s for s in scratch if s.source.startswith("mcp:")]
