"""An MCP server on the older HTTP+SSE transport (``GET /sse`` + ``POST /messages/``), for tests.

Run as ``python tests/mcp_servers/old_sse.py PORT``; listens on 127.0.0.1 only. It echoes the
``X-Test`` header it was sent, so tests can check that configured headers reach it.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("old-sse", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def header(ctx: Context) -> str:
    """The X-Test header of the request that opened the session ('' when absent)."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None) or {}
    return str(headers.get("x-test", ""))


if __name__ == "__main__":
    server.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
