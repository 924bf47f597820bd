"""A branch on a name a listing or a glob gives is not decided by the name seen here.

A loop over ``git ls-files`` is walked once with a stand-in for "any listed path"; a loop
over ``src/*`` with the files there now. A ``case`` or ``[ "$f" = .. ]`` on such a name
cannot be decided from either: the real names differ, and a file the command writes first
is matched too. The control runs show bash taking the branch the stand-in would skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

GIT = shutil.which("git")


def _decision(workspace: Path, command: str, approval: str | None = None) -> str:
    return str(check_shell_json(command, workspace, {}, approval=approval)["decision"])


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "README.md").write_text("# demo\n")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    return tmp_path


HIDDEN = [
    "git ls-files | while read -r f; do case $f in *.py) rm -rf src ;; esac; done",
    "while read -r f; do case $f in *.py) rm -rf src ;; *) continue ;; esac; done "
    "< <(git ls-files)",
    "git ls-files | while read -r f; do g=${f%.py}; case $g in *app) rm -rf src ;; esac; done",
    'git ls-files | while read -r f; do if [ "$f" = src/app.py ]; then rm -rf src; fi; done',
    'git ls-files | while read -r f; do [ "$f" = src/app.py ] && rm -rf src; done',
    "touch src/x.go; for f in src/*; do case $f in *.go) rm -rf src ;; esac; done",
    'touch src/x.go; for f in src/*; do [ "$f" = src/x.go ] && rm -rf src; done',
    "for f in src/*; do n=${#f}; (( n == 10 )) && rm -rf src; done",  # src/app.py: 10
    "find . -name '*.md' -exec sh -c 'case $1 in *.md) rm -rf src ;; esac' _ {} \\;",
    "find . -name '*.md' -exec sh -c 'for f; do [ \"$f\" = ./README.md ] && rm -rf src; done'"
    " _ {} +",
]


@pytest.mark.parametrize("command", HIDDEN)
def test_the_branch_runs_in_bash(project: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=project, check=False)
    assert not (project / "src").exists(), command  # the control run deletes src


@pytest.mark.parametrize("command", HIDDEN)
def test_a_branch_on_a_listed_or_globbed_name_is_judged(project: Path, command: str) -> None:
    assert _decision(project, command) == "deny", command
    assert _decision(project, command, "auto") == "deny", command


@pytest.mark.parametrize("command", [
    "for f in a b; do case $f in a) echo one ;; *) rm -rf src ;; esac; done",
    "f=x; case $f in y) rm -rf src ;; esac",
    'f=x; [ "$f" = y ] && rm -rf src',
])
def test_a_branch_on_known_words_is_still_decided(project: Path, command: str) -> None:
    expected = "deny" if "*) rm" in command else "allow"
    assert _decision(project, command) == expected, command


def test_arithmetic_after_a_skipping_branch_counts_as_before(project: Path) -> None:
    """``|| continue`` makes the rest of the pass conditional: an associative array made
    empty and only counted into still holds numbers after the join."""
    command = ('declare -A n=(); while read -r f; do [ -n "$f" ] || continue; '
               "case $f in *.py) k=py ;; *) continue ;; esac; (( n[$k] += 1 )); "
               "done < <(git ls-files); echo \"${n[py]}\"")
    out = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "1"
    assert _decision(project, command) == "allow"
    assert _decision(project, 'x=""; while read -r f; do [ -n "$f" ] || continue; '
                     "x='a[$(rm -rf src)]'; (( n[py] += x )); done < <(git ls-files)"
                     ) == "deny"
