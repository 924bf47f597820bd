"""An MCP server that writes down the idempotency key each call arrives with (the request's
``_meta``), as a payment API would use it to drop a repeated request."""

from __future__ import annotations

import os
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("keyed", version="1.0.0")
KEY = "io.turnstile/idempotency-key"


@server.tool()
def send_payment(amount: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Send money to the vendor (append the amount and the call's key to the effect log)."""
    meta: Any = ctx.request_context.meta or {}
    key = meta.get(KEY) if isinstance(meta, dict) else getattr(meta, KEY, None)
    if key is None and hasattr(meta, "model_extra"):
        key = (meta.model_extra or {}).get(KEY)
    with open(os.environ["EFFECT_LOG"], "a", encoding="utf-8") as log:
        log.write(f"paid {amount} key={key}\n")
    return f"sent {amount}"


if __name__ == "__main__":
    server.run()
