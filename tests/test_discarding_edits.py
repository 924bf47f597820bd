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
    "truncate -r /dev/null a.txt", "truncate -r b.txt a.txt",  # another file's size
    "git diff -R | git apply", "git diff -R | patch -p1",  # reversed the other way round
    "git apply -R <(git diff)", "patch -R -p1 -i <(git diff)",  # the diff as a file
    "git diff > p; git apply -R p", "git diff > p; patch -R -p1 < p",
    "git diff --output=p; git apply -R p",
    "git checkout -p <<< y", "git restore -p <<< y",  # the input answers yes
    "git mv -f b.txt a.txt",
    "git config alias.co 'checkout --'; git co a.txt",  # an alias set by the command itself
    "git checkout a.txt", "git checkout -q a.txt",  # one word: no branch, a tracked file
    "git -C . diff | git -C . apply -R", "git diff | tee p | git apply -R",
    "git diff > p; cat p | git apply -R",
    "git clone -q . y; cp -f y/a.txt .", "git clone -q . y; mv -f y/a.txt ./",  # into a folder
    "git clone -q . y; cp --backup=none y/a.txt a.txt",
])
def test_an_edit_that_discards_work_is_refused(workspace: Path, command: str) -> None:
    decision = check_shell_json(command, workspace, {})["decision"]
    assert _lost(workspace, command), command  # the control: bash did discard the work
    assert decision == "deny", command


@pytest.mark.parametrize("command", [
    "git diff --cached | git apply -R", "git diff | git apply --stat",
    "diff a.txt b.txt | patch -o c.txt a.txt", "sed -i 's/work/play/' a.txt",
    "sed -i '$q' a.txt", "sed -i 's/.*/[&]/' a.txt", "git diff | patch -R -p1 --dry-run",
    "git diff | git apply", "git diff > p; git apply --check -R p",
    "git diff --cached > p; git apply -R p", "git diff > p; mkdir d; cd d; git apply -R p",
    "git mv b.txt c.txt", "git checkout -q -b topic", "git clone -q . y; cp -n y/a.txt .",
])
def test_an_edit_that_keeps_the_work_is_not_refused(workspace: Path, command: str) -> None:
    decision = check_shell_json(command, workspace, {})["decision"]
    assert not _lost(workspace, command), command
    assert decision != "deny", command


def test_a_worktree_added_outside_the_workspace_is_refused(workspace: Path) -> None:
    outside = workspace.parent / f"{workspace.name}-wt"
    command = f"git worktree add -q {outside}"
    decisions = [check_shell_json(c, workspace, {})["decision"]
                 for c in (command, "git worktree add -q ../elsewhere", "git worktree add -q wt")]
    subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, timeout=60)
    assert (outside / "b.txt").exists()  # the control: git did write outside
    assert decisions == ["deny", "deny", "ask"], decisions


@pytest.mark.parametrize(("command", "auto"), [
    ("git archive HEAD | tar -x", "deny"), ("git archive -o x.tar HEAD; tar -xf x.tar", "deny"),
    ("git archive -o x.zip HEAD; unzip -oq x.zip", "deny"),
    ("git archive -o x.tar HEAD; tar -xkf x.tar", "ask"),  # -k keeps the files there
    ("git archive -o x.tar HEAD; tar -xf x.tar --skip-old-files", "ask"),
])
def test_an_extraction_that_may_write_over_the_work_is_for_a_person(
        workspace: Path, command: str, auto: str) -> None:
    """Which files an archive holds the command line cannot show: asked, and refused under
    --approval auto unless the extraction keeps existing files."""
    decisions = (check_shell_json(command, workspace, {})["decision"],
                 check_shell_json(command, workspace, {}, approval="auto")["decision"])
    assert _lost(workspace, command) == (auto == "deny"), command  # the control
    assert decisions == ("ask", auto), (command, decisions)
