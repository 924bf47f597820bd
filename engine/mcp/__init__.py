"""MCP client layer: servers from config, tools discovered, namespaced, classified locally.

This package is the only importer of the ``mcp`` SDK. ``McpHub`` runs servers for a run and
keeps their tools in a ``ToolRegistry``; ``discover`` lists them once; ``classify_tool`` is the
local risk rule that annotations from untrusted servers cannot lower.
"""

from engine.mcp.classify import Classification, classify_tool, with_policy
from engine.mcp.config import ServerConfig, from_machine, load_mcp_config
from engine.mcp.hub import McpHub, discover
from engine.mcp.naming import tool_name

__all__ = [
    "Classification",
    "McpHub",
    "ServerConfig",
    "classify_tool",
    "discover",
    "from_machine",
    "load_mcp_config",
    "tool_name",
    "with_policy",
]
