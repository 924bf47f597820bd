"""Edits that discard work: each command runs for real with bash on a throwaway git
workspace holding uncommitted work, and what it left is compared with the decision.

``git diff | git apply -R`` reverses every uncommitted change; ``diff a b | patch a`` makes a
a copy of b; ``sed -i 1q`` keeps one line of each file. Each is ``deny``; its near twin that
keeps the work (a staged diff, an output file, a filter by pattern) is not.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

GIT = shutil.which("git")
WORK = "".join(f"line {i} of work\n" for i in range(40))


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    """A git workspace whose a.txt has 40 lines of uncommitted work."""
    assert GIT is not None
    (tmp_path / "a.txt").write_text("committed\n")
    (tmp_path / "b.txt").write_text("other\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text(WORK)
    return tmp_path


def _lost(workspace: Path, command: str) -> bool:
    """Whether running ``command`` lost lines of the uncommitted work in a.txt (an edit
    that keeps ``line N of`` in each line keeps the work)."""
    subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, timeout=60)
    now = (workspace / "a.txt").read_text() if (workspace / "a.txt").exists() else ""
    return not all(f"line {i} of" in now for i in range(40))


@pytest.mark.parametrize("command", [
    "git diff | git apply -R", "git diff HEAD | git apply -R", "git diff | patch -R -p1",
    "git -C . diff | head -n 100 | git apply -R", "diff a.txt b.txt | patch a.txt",
    "sed -i 1q a.txt", "sed -i Q a.txt", "sed -ni 1p a.txt", "sed -i '$!d' a.txt",
    "sed -i '5,$d' a.txt", "sed -i 's/.*//' a.txt", "sed -i -e 's/a/b/' -e '3!d' a.txt",
    "sed -i 's/.*/x/g' a.txt", "sed -i '/line 3/q' a.txt",
])
def test_an_edit_that_discards_work_is_refused(workspace: Path, command: str) -> None:
    decision = check_shell_json(command, workspace, {})["decision"]
    assert _lost(workspace, command), command  # the control: bash did discard the work
    assert decision == "deny", command


@pytest.mark.parametrize("command", [
    "git diff --cached | git apply -R", "git diff | git apply --stat",
    "diff a.txt b.txt | patch -o c.txt a.txt", "sed -i 's/work/play/' a.txt",
    "sed -i '$q' a.txt", "sed -i 's/.*/[&]/' a.txt", "git diff | patch -R -p1 --dry-run",
])
def test_an_edit_that_keeps_the_work_is_not_refused(workspace: Path, command: str) -> None:
    decision = check_shell_json(command, workspace, {})["decision"]
    assert not _lost(workspace, command), command
    assert decision != "deny", command
