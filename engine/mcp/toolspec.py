"""Mapping one MCP tool to a ``ToolSpec``: name, version, quoted description, local risk, handler.

The description of a tool from an untrusted server is data, not instructions: it reaches the
model quoted and attributed (``[untrusted MCP server "x" says:] "..."``), never merged into the
system prompt; so do the field descriptions inside its input schema. Arguments are validated
against the tool's *current* input schema on every call, so a schema the server changed
mid-run is the one that counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import jsonschema
import mcp.types as types

from engine.mcp.classify import Classification, classify_tool
from engine.mcp.config import ServerConfig
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec

logger = logging.getLogger(__name__)

MAX_DESCRIPTION = 1_000
"""Characters of a server's tool description passed on (the rest is cut and marked)."""
MAX_ARG_ERRORS = 5

Caller = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


def schema_of(tool: types.Tool) -> dict[str, Any]:
    """The tool's input schema as a plain dict (an object schema when it sent none)."""
    schema = tool.input_schema
    return dict(schema) if isinstance(schema, Mapping) else {"type": "object", "properties": {}}


def annotations_of(tool: types.Tool) -> dict[str, Any]:
    """What the server claimed, with the wire (camelCase) names users know from the spec."""
    if tool.annotations is None:
        return {}
    return tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")


def schema_hash(schema: Mapping[str, Any]) -> str:
    """Same digest as ``ToolSpec.schema_hash``, computed before the spec exists."""
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:12]


def _quote(text: str, server: str, limit: int = MAX_DESCRIPTION) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[:limit] + " [...cut]"
    return f'[untrusted MCP server "{server}" says:] {json.dumps(text, ensure_ascii=False)}'


def describe_tool(tool: types.Tool, config: ServerConfig) -> str:
    """The description the model sees: quoted and attributed when the server is untrusted."""
    text = (tool.description or tool.title or "").strip()
    if config.trust == "untrusted":
        return _quote(text, config.name)
    return text[:MAX_DESCRIPTION] + (" [...cut]" if len(text) > MAX_DESCRIPTION else "")


def quote_schema(schema: Any, server: str) -> Any:
    """``schema`` with every ``description`` string quoted and attributed, like the tool's own
    (field descriptions reach the model too). Validation is unaffected."""
    if isinstance(schema, Mapping):
        return {k: _quote(v, server, MAX_DESCRIPTION // 4)
                if k == "description" and isinstance(v, str) else quote_schema(v, server)
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [quote_schema(v, server) for v in schema]
    return schema


def build_spec(
    name: str,
    tool: types.Tool,
    config: ServerConfig,
    server_version: str,
    call: Caller,
    classification: Classification | None = None,
) -> ToolSpec:
    """The ``ToolSpec`` for ``tool``; ``call`` runs it on the live connection."""
    schema = schema_of(tool)
    claimed = annotations_of(tool)
    c = classification or classify_tool(tool.name, schema, claimed, config.trust)
    shown = quote_schema(schema, config.name) if config.trust == "untrusted" else schema
    return ToolSpec(
        name=name,
        version=f"{server_version}+{schema_hash(shown)[:8]}",
        description=describe_tool(tool, config),
        input_model=None,
        handler=call,
        risk=c.risk,
        idempotent=c.idempotent,
        side_effects=c.side_effects,
        source=f"mcp:{config.name}",
        timeout_s=config.timeout_s,
        raw_input_schema=shown,
        annotations=claimed,
        server=config.name,
        trust=config.trust,
    )


def argument_errors(schema: Mapping[str, Any], args: Mapping[str, Any]) -> list[str]:
    """Why ``args`` do not fit ``schema`` (empty when they do, or the schema is unusable)."""
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        errors = sorted(cls(schema).iter_errors(dict(args)), key=lambda e: list(e.path))
    except jsonschema.exceptions.SchemaError as exc:
        logger.info("unusable input schema, the server will validate: %s", exc.message)
        return []
    out = []
    for err in errors[:MAX_ARG_ERRORS]:
        where = ".".join(str(p) for p in err.path) or "arguments"
        out.append(f"{where}: {err.message}")
    return out
