"""Machine specs: the frozen values a machine YAML declares, how they are read and checked.

``load_machine`` is what callers want: parse (structure, with file:line) then check (meaning,
against the action registry), raising one ``SpecError`` that lists every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import SpecError
from engine.spec.check import check_machine
from engine.spec.load import build_machine, parse_machine
from engine.spec.model import (
    ContextSpec,
    Limits,
    MachineSpec,
    McpServerSpec,
    StateSpec,
    machine_hash,
)

if TYPE_CHECKING:  # the action contract is only a type here: no import of the actions layer
    from engine.actions.base import ActionInfo

__all__ = [
    "ContextSpec",
    "Limits",
    "MachineSpec",
    "McpServerSpec",
    "StateSpec",
    "build_machine",
    "check_machine",
    "load_machine",
    "machine_from_definition",
    "machine_hash",
    "parse_machine",
]


def load_machine(path: Path | str, actions: Mapping[str, ActionInfo]) -> MachineSpec:
    """Parse and check the machine at ``path``; raise ``SpecError`` with every problem by line."""
    spec = parse_machine(path)
    problems = check_machine(spec, actions)
    if problems:
        raise SpecError(problems)
    return spec


def machine_from_definition(definition: Mapping[str, Any], actions: Mapping[str, ActionInfo],
                            shown: str = "") -> MachineSpec:
    """``load_machine`` for a definition given as Python values (what a YAML file would hold)."""
    shown = shown or f"<machine {definition.get('name', '?')}>"
    spec = build_machine(definition, shown)
    problems = check_machine(spec, actions)
    if problems:
        raise SpecError(problems)
    return spec
