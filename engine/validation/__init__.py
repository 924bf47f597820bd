"""Checking a parsed machine against the actions' contracts; loading is parse + check.

``load_machine`` is what callers want: parse (structure, with file:line) then check (meaning,
against the action registry), raising one ``SpecError`` that lists every problem. This sits above
the actions (it reads their contracts) and below every entry point.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.spec.load import build_machine, parse_machine
from engine.spec.model import MachineSpec
from engine.validation.check import check_machine
from engine.vocabulary.errors import SpecError

if TYPE_CHECKING:
    from engine.actions.base import ActionInfo

__all__ = ["check_machine", "load_machine", "machine_from_definition"]


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
