"""Machine specs: the frozen values a machine YAML declares and how they are parsed.

Parsing checks structure (with file:line); checking a machine against the actions' contracts is
``engine.validation`` (``load_machine`` = parse + check), one layer up.
"""

from __future__ import annotations

from engine.spec.load import build_machine, parse_machine
from engine.spec.model import (
    ContextSpec,
    Limits,
    MachineSpec,
    McpServerSpec,
    StateSpec,
    machine_hash,
)

__all__ = [
    "ContextSpec",
    "Limits",
    "MachineSpec",
    "McpServerSpec",
    "StateSpec",
    "build_machine",
    "machine_hash",
    "parse_machine",
]
