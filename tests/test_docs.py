"""The README documents every CLI command, every action and every built-in tool."""

from __future__ import annotations

import re

from engine.actions.registry import ACTIONS
from engine.cli import build_parser
from tests.conftest import ROOT
from tools import BUILTIN_NAMES

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(sub.choices)  # type: ignore[attr-defined]


def test_every_command_is_documented() -> None:
    missing = [c for c in _commands() if f"python -m engine {c}" not in README]
    assert not missing, f"README lacks usage of: {missing}"


def test_every_action_is_documented() -> None:
    missing = [a for a in ACTIONS if not re.search(rf"\| `{a}` \|", README)]
    assert not missing, f"README's action table lacks: {missing}"


def test_every_builtin_tool_is_documented() -> None:
    missing = [t for t in BUILTIN_NAMES if f"`{t}`" not in README]
    assert not missing, f"README lacks the built-in tools: {missing}"


def test_the_docs_check_can_fail() -> None:
    assert "python -m engine frobnicate" not in README
    assert len(_commands()) >= 13
