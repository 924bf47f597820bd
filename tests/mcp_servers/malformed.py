"""A hand-written MCP server (handshake era, stdio) that answers with malformed results.

No SDK on this side, so it can break the protocol on purpose: ``broken`` returns a result that
does not fit ``CallToolResult``; ``noisy`` writes a line that is not JSON before a valid answer.
``server/discover`` is refused as an unknown method, so clients fall back to ``initialize``.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "broken", "description": "Returns garbage.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "noisy", "description": "Writes noise, then answers.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer(req: dict) -> dict | None:
    method, rid = req.get("method"), req.get("id")
    if rid is None:
        return None  # a notification
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "malformed", "version": "1.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and req["params"]["name"] == "broken":
        return {"content": "not a list", "isError": "perhaps"}
    if method == "tools/call" and req["params"]["name"] == "noisy":
        sys.stdout.write("this line is not JSON-RPC\n")
        return {"content": [{"type": "text", "text": "fine after all"}]}
    return {"__error__": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        result = answer(req)
        if result is None:
            continue
        if "__error__" in result:
            send({"jsonrpc": "2.0", "id": req["id"], "error": result["__error__"]})
        else:
            send({"jsonrpc": "2.0", "id": req["id"], "result": result})


if __name__ == "__main__":
    main()
