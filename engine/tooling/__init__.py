"""Tools: the contract (spec, confine), the registry, and invocation."""

from engine.tooling.confine import UNCONFINED, CommandConfinement
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import (
    RISK_ORDER,
    DryRun,
    FileChange,
    Recorder,
    Risk,
    ToolContext,
    ToolResult,
    ToolSpec,
    Watcher,
    WatchReport,
    max_risk,
)

__all__ = [
    "RISK_ORDER",
    "UNCONFINED",
    "CommandConfinement",
    "DryRun",
    "FileChange",
    "Recorder",
    "Risk",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "WatchReport",
    "Watcher",
    "max_risk",
]
