"""The MCP config files other clients write, read as one format: which file shape, which entry keys.

Accepted files (the top-level key decides; other top-level keys, e.g. the rest of a Gemini
``settings.json``, are left alone):

- ``{"mcpServers": {...}}``: Claude Desktop, Claude Code (``.mcp.json``), Cursor
  (``.cursor/mcp.json``) and Gemini CLI (``settings.json``).
- ``{"servers": {...}, "inputs": [...]}``: VS Code (``.vscode/mcp.json``). ``inputs`` are
  prompts VS Code shows; nothing here prompts, so a server using ``${input:ID}`` is refused
  with the fix, and unused inputs are only noted.

Entry keys translated to ours: ``type`` (``stdio``, ``http``/``streamable-http``, ``sse``), Gemini's
``httpUrl`` (streamable HTTP), its ``timeout`` (milliseconds), its boolean ``trust`` (``true`` is
``trusted``, ``false`` ``untrusted``) and its ``includeTools``/``excludeTools`` (exclusion
wins). A ``url`` without ``type`` (Cursor, Claude Desktop, Gemini's SSE ``url``) is ``auto``:
streamable HTTP first, then the older HTTP+SSE.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from engine.vocabulary.errors import UsageError

logger = logging.getLogger(__name__)

UrlTransport = Literal["http", "sse", "auto"]
"""``http`` streamable HTTP; ``sse`` the older HTTP+SSE transport; ``auto`` tries both."""

TYPES: dict[str, str] = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                         "streamable_http": "http", "streamableHttp": "http", "sse": "sse"}
"""The ``type`` values clients write, by the transport they mean."""

SERVER_KEYS = ("mcpServers", "servers")


def server_table(data: Any, where: str) -> tuple[str, Mapping[str, Any]]:
    """The servers object of a config file and the key it was under."""
    if isinstance(data, dict):
        for key in SERVER_KEYS:
            if isinstance(data.get(key), dict):
                if key == "servers" and data.get("inputs"):
                    logger.info("%s: VS Code inputs are not prompted for; servers that use "
                                "${input:...} are refused", where)
                return key, data[key]
    raise UsageError(f'{where}: expected an object with "mcpServers" (Claude, Cursor, Gemini) '
                     'or "servers" (VS Code): {"<name>": {...}}')


def canonical_entry(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``entry`` with other clients' keys turned into ours (see the module docstring)."""
    out = dict(entry)
    if "httpUrl" in out:
        if "url" in out:
            raise UsageError(f"{where}: set 'httpUrl' (streamable HTTP) or 'url' (SSE), not both")
        out["url"] = out.pop("httpUrl")
        out.setdefault("type", "http")
    if "timeout" in out:
        ms = out.pop("timeout")
        if isinstance(ms, bool) or not isinstance(ms, int | float) or ms <= 0:
            raise UsageError(f"{where}.timeout: expected milliseconds > 0, got {ms!r}")
        out.setdefault("timeout_s", ms / 1000)
    if isinstance(out.get("trust"), bool):
        out["trust"] = "trusted" if out["trust"] else "untrusted"
    for theirs, ours in (("includeTools", "include_tools"), ("excludeTools", "exclude_tools")):
        if theirs in out:
            out.setdefault(ours, out.pop(theirs))
    return out


def url_transport(entry: Mapping[str, Any], where: str) -> UrlTransport:
    """What ``type`` says about a ``url`` entry (``auto`` without one); checks a stdio type."""
    kind = entry.get("type")
    if kind is None:
        return "http" if entry.get("url") is None else "auto"
    if kind not in TYPES:
        raise UsageError(f"{where}.type: expected one of {', '.join(TYPES)}, got {kind!r}")
    meant = TYPES[kind]
    has_url = entry.get("url") is not None
    if (meant == "stdio") == has_url:
        need = "'command'" if meant == "stdio" else "'url'"
        raise UsageError(f"{where}: type {kind!r} needs {need}")
    return "http" if meant == "stdio" else meant  # type: ignore[return-value]
