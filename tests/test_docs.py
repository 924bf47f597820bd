"""The README documents every CLI command, every action and every built-in tool."""

from __future__ import annotations

import re
from typing import Any

from engine.actions.registry import ACTIONS
from engine.cli.main import build_parser
from tests.conftest import ROOT
from turnstile_tools import BUILTIN_NAMES

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


def _flags() -> list[tuple[str, tuple[str, ...]]]:
    """``(command, option strings)`` for every option of every command (subcommands included,
    as in ``policy check-path``); ``--db`` and ``--store``, which every command reading or
    writing runs takes, are documented once, and ``--version`` (no command) in its own line."""
    out: list[tuple[str, tuple[str, ...]]] = []

    def walk(parser: Any, name: str) -> None:
        for action in parser._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                for sub, p in action.choices.items():
                    walk(p, f"{name} {sub}".strip())
            elif action.option_strings and action.dest not in ("help", "db", "store", "version"):
                out.append((name, tuple(action.option_strings)))

    walk(build_parser(), "")
    return out


def test_every_flag_is_in_its_commands_row() -> None:
    """Each command's row of the README table names all of its flags."""
    rows = {}
    for line in README.splitlines():
        m = re.match(r"\| `python -m engine ([a-z][a-z -]*?)(?: [A-Z\[]|`)", line)
        if m:
            rows.setdefault(m.group(1).strip(), line)
    missing = []
    for command, flags in _flags():
        row = rows.get(command) or rows.get(command.split()[0], "")
        if not any(re.search(rf"{re.escape(f)}\b", row) for f in flags):
            missing.append(f"{command} {flags[-1]}")
    assert not missing, f"README's command table lacks: {missing}"
    assert "runs take `--store URL`" in README and "or `--db PATH`" in README
    assert ("validate", ("--json",)) in _flags() and ("diagram", ("-f", "--format")) in _flags()
