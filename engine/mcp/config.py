"""MCP server configuration: which servers to start, how to reach them, and how far to trust them.

Two sources give the same frozen ``ServerConfig``: the widely used JSON file
(``{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "headers"}}}``, passed
with ``--mcp-config``; the VS Code, Cursor and Gemini CLI variants are read too, see
``engine.mcp.dialects``) and the ``mcp_servers:`` section of a machine YAML. ``${VAR}`` references
are expanded first (``engine.mcp.expand``).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from engine.mcp.dialects import UrlTransport, canonical_entry, server_table, url_transport
from engine.mcp.envfile import read_env_file
from engine.mcp.expand import expand_entry
from engine.sandbox.config import sandbox_from_data
from engine.spec.documents import read_limited_text
from engine.spec.model import SandboxSpec
from engine.vocabulary.errors import UsageError

logger = logging.getLogger(__name__)

Trust = Literal["trusted", "internal", "untrusted"]
TRUST_LEVELS: tuple[Trust, ...] = get_args(Trust)
Protocol = Literal["auto", "legacy"]
"""``auto`` probes ``server/discover`` (2026-07-28) and falls back to ``initialize``;
``legacy`` always uses the ``initialize`` handshake."""

_FIELDS = ("command", "args", "env", "envFile", "cwd", "url", "headers", "trust", "timeout_s",
           "start_timeout_s", "max_restarts", "protocol", "include_tools", "exclude_tools",
           "sandbox")
_IGNORED = ("type", "transport", "description", "disabled", "autoApprove", "alwaysAllow")
"""Keys other clients write into the same file; read (``disabled``) or ignored, never an error."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server: a stdio command or a streamable-HTTP URL, with its trust level."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for ``command``, over the SDK's safe default environment (no secrets)."""
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    url_transport: UrlTransport = "http"
    """For ``url``: streamable ``http``, the older ``sse``, or ``auto`` (http, then sse)."""
    include_tools: tuple[str, ...] | None = None
    """Only these of the server's tools are offered (Gemini's ``includeTools``); None: all."""
    exclude_tools: tuple[str, ...] = ()
    """Never offered, even when included (Gemini's ``excludeTools``)."""
    trust: Trust = "untrusted"
    """Only ``trusted`` servers' annotations may lower a tool's risk."""
    timeout_s: float = 60.0
    """Seconds one call may take."""
    start_timeout_s: float = 60.0
    """Seconds for starting the server and listing its tools (npx may download first)."""
    max_restarts: int = 2
    """How often a crashed server is restarted before it is given up."""
    protocol: Protocol = "auto"
    sandbox: SandboxSpec | None = None
    """Confine a stdio server with bubblewrap (``engine.sandbox``); None (the default): not."""

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else self.url_transport

    def offers(self, tool: str) -> bool:
        """Whether the server's tool ``tool`` (its own name) may be offered at all."""
        included = self.include_tools is None or tool in self.include_tools
        return included and tool not in self.exclude_tools

    def describe(self) -> dict[str, Any]:
        """A JSON-safe summary (header values and env values left out: they may be secrets)."""
        where = {"command": self.command, "args": list(self.args)} if self.command else {
            "url": self.url}
        return {"name": self.name, "transport": self.transport, **where, "trust": self.trust,
                "env_keys": sorted(self.env), "header_keys": sorted(self.headers),
                "sandboxed": self.sandbox is not None}


def load_mcp_config(path: Path) -> dict[str, ServerConfig]:
    """Read an ``mcpServers`` JSON file; every problem is a ``UsageError`` naming file and key."""
    where = str(path)
    try:
        text = read_limited_text(Path(path), "MCP config")
    except UsageError as exc:
        problem = str(exc).removeprefix(f"{where}: ")
        raise UsageError(f"{where}: cannot read MCP config: {problem}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    key, table = server_table(data, where)
    base = Path(path).resolve().parent
    servers: dict[str, ServerConfig] = {}
    for name, entry in table.items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            logger.info("%s: MCP server %r is disabled; not started", where, name)
            continue
        servers[name] = server_from_mapping(name, entry, f"{where}: {key}.{name}", base)
    return servers


def from_machine(
    mcp_servers: Mapping[str, Any], base: Path | None = None
) -> dict[str, ServerConfig]:
    """Configs from a machine's ``mcp_servers:`` (pydantic spec objects or plain dicts);
    ``base`` (the machine file's folder) resolves a relative ``cwd``."""
    out: dict[str, ServerConfig] = {}
    for name, entry in mcp_servers.items():
        if hasattr(entry, "model_dump"):
            entry = entry.model_dump()
        elif not isinstance(entry, Mapping):
            entry = {k: getattr(entry, k) for k in _FIELDS if hasattr(entry, k)}
        out[name] = server_from_mapping(name, entry, f"mcp_servers.{name}", base)
    return out


def server_from_mapping(
    name: str, entry: Any, where: str, base: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServerConfig:
    """Validate one server entry; ``base`` (the config's folder) resolves a relative ``cwd``,
    from the project above it for ``.vscode/``, ``.cursor/`` and ``.gemini/``; ``environ``
    (default: this process's) fills ``${VAR}`` references."""
    if not isinstance(entry, Mapping):
        raise UsageError(f"{where}: expected an object with 'command' or 'url'")
    entry = expand_entry(canonical_entry(entry, where), where,
                         os.environ if environ is None else environ, _workspace_folder(base))
    unknown = sorted(set(entry) - set(_FIELDS) - set(_IGNORED))
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(_FIELDS)}")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise UsageError(f"{where}: set exactly one of 'command' (stdio) or 'url' (HTTP)")
    if command is not None and (not isinstance(command, str) or not command):
        raise UsageError(f"{where}.command: expected a non-empty string")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise UsageError(f"{where}.url: expected an http:// or https:// URL, got {url!r}")
    cwd = _opt_str(entry.get("cwd"), f"{where}.cwd")
    project = _workspace_folder(base)
    env = _str_map(entry.get("env"), f"{where}.env")
    if entry.get("envFile") is not None:
        env = {**read_env_file(entry["envFile"], f"{where}.envFile", project), **env}
    if cwd is not None and project is not None and not Path(cwd).is_absolute():
        cwd = str(project / cwd)
    return ServerConfig(
        name=name,
        command=command,
        args=tuple(_str_list(entry.get("args"), f"{where}.args")),
        env=env,
        cwd=cwd,
        url=url,
        headers=_str_map(entry.get("headers"), f"{where}.headers"),
        url_transport=url_transport(entry, where),
        include_tools=_opt_tuple(entry.get("include_tools"), f"{where}.include_tools"),
        exclude_tools=tuple(_str_list(entry.get("exclude_tools"), f"{where}.exclude_tools")),
        trust=_choice(entry.get("trust", "untrusted"), TRUST_LEVELS, f"{where}.trust"),
        timeout_s=_positive(entry.get("timeout_s", 60.0), f"{where}.timeout_s"),
        start_timeout_s=_positive(entry.get("start_timeout_s", 60.0), f"{where}.start_timeout_s"),
        max_restarts=int(_positive(entry.get("max_restarts", 2), f"{where}.max_restarts", True)),
        protocol=_choice(entry.get("protocol", "auto"), get_args(Protocol), f"{where}.protocol"),
        sandbox=_sandbox(entry.get("sandbox"), f"{where}.sandbox", url is not None),
    )


def _workspace_folder(base: Path | None) -> Path | None:
    """``${workspaceFolder}``: the project above ``.vscode/``, ``.cursor/`` or ``.gemini/``."""
    if base is None:
        return None
    return base.parent if base.name in (".vscode", ".cursor", ".gemini") else base


def _sandbox(value: Any, where: str, http: bool) -> SandboxSpec | None:
    """``sandbox: true | {...}`` of a stdio server; false or absent: not confined."""
    if value is None or value is False:
        return None
    if http:
        raise UsageError(f"{where}: only stdio servers (command) can be sandboxed")
    return sandbox_from_data(value, where)


def _opt_str(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{where}: expected a string, got {type(value).__name__}")
    return value or None


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: expected a list of strings")
    return list(value)


def _opt_tuple(value: Any, where: str) -> tuple[str, ...] | None:
    return None if value is None else tuple(_str_list(value, where))


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise UsageError(f"{where}: expected an object of string values")
    return dict(value)


def _choice(value: Any, choices: tuple[str, ...], where: str) -> Any:
    if value not in choices:
        raise UsageError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _positive(value: Any, where: str, zero_ok: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or value < 0 or (value == 0 and not zero_ok):
        bound = ">= 0" if zero_ok else "> 0"
        raise UsageError(f"{where}: expected a number {bound}, got {value!r}")
    return float(value)
