"""Turning what an MCP server returned into a ``ToolResult`` the model can read, capped.

Text blocks are kept; images, audio and blobs are described (type and size), never inlined;
structured content is shown as JSON when there is no text. Output over the engine's cap keeps
head and tail and states how much was left out.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as types

from engine.tooling.invoke import MAX_RESULT_CHARS, cap_result
from engine.tooling.spec import ToolResult

logger = logging.getLogger(__name__)

MAX_DATA_CHARS = 20_000
"""Structured content larger than this is not copied into ``ToolResult.data``."""


def _block_text(block: Any) -> str:
    """One content block as text (binary content is described, not inlined)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource":
        res = block.resource
        if getattr(res, "text", None) is not None:
            return f"[resource {res.uri}]\n{res.text}"
        return f"[resource {res.uri}, {len(getattr(res, 'blob', '')) * 3 // 4} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.uri} ({block.name})]"
    return f"[unsupported content block {kind!r}]"


def to_tool_result(result: types.CallToolResult, server: str, tool: str) -> ToolResult:
    """The model's view of ``result``; oversized output is cut to head and tail."""
    parts: list[str] = []
    size = 0
    blocks = list(result.content or ())
    for i, block in enumerate(blocks):
        text = _block_text(block)
        parts.append(text)
        size += len(text)
        if size > 4 * MAX_RESULT_CHARS and i + 1 < len(blocks):  # cap_result cuts the rest
            parts.append(f"[{len(blocks) - i - 1} further content block(s) dropped]")
            break
    structured = result.structured_content
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    content = "\n".join(parts) if parts else "(no output)"
    data: dict[str, Any] = {"server": server, "tool": tool}
    if structured is not None:
        blob = json.dumps(structured, default=str)
        if len(blob) <= MAX_DATA_CHARS:
            data["structured_content"] = json.loads(blob)
    return cap_result(ToolResult(content, bool(result.is_error), data))
