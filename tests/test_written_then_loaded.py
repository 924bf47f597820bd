"""Code a command hands a program in the same line: a configuration file it wrote, or a
variable make expands.

``X='$(shell CMD)' make`` runs CMD wherever the makefile says ``$(X)``; ``printf .. > mypy.ini;
mypy src`` loads what was just written. Each is never run unseen.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

MAKEFILE = "all:\n\t@echo $(X)\n"


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "Makefile").write_text(MAKEFILE)
    (ws / "a.txt").write_text("precious\n")
    return ws


@pytest.mark.parametrize("command", [
    "X='$(shell rm -f a.txt)' make",
    "export X='$(shell rm -f a.txt)'; make",
    "X='$(shell rm -f a.txt)' make -n",
])
def test_a_variable_make_expands_is_judged_as_makefile_code(tmp_path: Path,
                                                            command: str) -> None:
    """The control: run by bash, make expands ``$(X)`` (even to print a dry run) and a.txt
    is gone."""
    ws = _workspace(tmp_path)
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=30,
                   stdin=subprocess.DEVNULL, check=False)
    assert not (ws / "a.txt").exists(), command
    (ws / "a.txt").write_text("precious\n")
    got = check_shell_json(command, ws, ENV)
    assert got["decision"] == "deny", got


def test_a_value_only_known_at_run_time_is_not_taken_as_plain(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    got = check_shell_json("X=$(cat list.txt) make -n", ws, ENV)
    assert got["decision"] != "allow", got


@pytest.mark.parametrize("command,loaded", [
    ("printf '[mypy]\\nplugins = evil\\n' > mypy.ini; mypy src", "mypy.ini"),
    ("echo '[flake8]' > .flake8 && flake8 src", ".flake8"),
    ("printf 'module.exports = {}' > .pnpmfile.cjs && pnpm install", ".pnpmfile.cjs"),
])
def test_a_configuration_this_command_wrote_is_never_run_unseen(
        tmp_path: Path, command: str, loaded: str) -> None:
    """Written and then loaded in one command: what it holds is not judged here, so a person
    may allow it and ``--approval auto`` may not."""
    ws = _workspace(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] == "ask"
    got = check_shell_json(command, ws, ENV, approval="auto")
    assert got["decision"] == "deny", got
    assert f"loads {loaded}, which this command wrote" in got["reason"]
