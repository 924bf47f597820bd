"""An MCP server with one side effect the test can count: ``send_payment`` appends a line to the
file named by ``EFFECT_LOG``. It is non-idempotent and network-ish, like a real payment API."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("ledger", version="1.0.0")


@server.tool()
def send_payment(amount: int, memo: str) -> str:
    """Send money to the vendor (append to the effect log)."""
    with open(os.environ["EFFECT_LOG"], "a", encoding="utf-8") as log:
        log.write(f"paid {amount} {memo}\n")
    return f"sent {amount} ({memo})"


if __name__ == "__main__":
    server.run()
