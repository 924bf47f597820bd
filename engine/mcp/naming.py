"""Namespaced tool names: ``mcp__<server>__<tool>``, valid for every provider, never colliding.

Providers accept ``[a-zA-Z0-9_-]{1,64}``. The plain form is used only when it is already valid,
fits, and cannot be read two ways (the server name has no leading, trailing or doubled ``_``).
Anything else is sanitised (invalid characters become ``_``), cut to fit, and given a suffix
hashed from the *original* server and tool names. Names therefore never depend on the order
servers start in, two servers can never share a name, and a built-in's name (``taken``) is
never reused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

MAX_NAME = 64
PREFIX = "mcp__"
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_VALID = re.compile(r"[a-zA-Z0-9_-]+")
_PLAIN_SERVER = re.compile(r"[a-zA-Z0-9-]+(?:_[a-zA-Z0-9-]+)*")


def sanitise(text: str) -> str:
    """``text`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_``."""
    return _INVALID.sub("_", text) or "_"


def _suffix(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


def tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The registry name for ``tool`` of ``server``, avoiding every name in ``taken``."""
    raw = f"{PREFIX}{server}__{tool}"
    plain = _PLAIN_SERVER.fullmatch(server) and _VALID.fullmatch(tool)
    if plain and len(raw) <= MAX_NAME and raw not in taken:
        return raw
    base = f"{PREFIX}{sanitise(server)}__{sanitise(tool)}"
    cut = base[: MAX_NAME - 9] + "_" + _suffix(server, tool)
    n = 1
    while cut in taken:  # only when the hashes themselves collide
        cut = base[: MAX_NAME - 9 - len(str(n))] + str(n) + "_" + _suffix(server, tool)
        n += 1
    return cut
