"""Programs that make the file they are given when it is missing, though they write nothing
into it: ``flock FILE CMD`` and a database shell given a path under ``.git/``. An empty
``.git/index.lock`` stops every later commit, and a lock file outside the workspace is a write
there. Each command has a control run in real bash showing the file appears."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _decision(workspace: Path, command: str) -> str:
    return str(check_shell_json(command, workspace, ENV)["decision"])


def _made(workspace: Path, command: str, path: str) -> bool:
    subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, check=False)
    return (workspace / path).exists()


@pytest.mark.parametrize(("command", "path", "expected"), [
    ("flock .git/index.lock true", ".git/index.lock", "ask"),
    ("flock -s .git/refs/heads/main.lock true", ".git/refs/heads/main.lock", "ask"),
    ("flock -n build.lock ls", "build.lock", "ask"),
    ("flock ../outside.lock true", "../outside.lock", "deny"),
    ("flock -w 1 9 true", "9", "ask"),  # with a command after it, 9 is a file's name
    ("sqlite3 .git/index.lock 'select 1'", ".git/index.lock", "ask"),
    ("sqlite3 -json .git/HEAD.lock 'select 1'", ".git/HEAD.lock", "ask"),
])
def test_a_file_made_by_opening_it_is_a_write(workspace: Path, command: str, path: str,
                                              expected: str) -> None:
    assert _decision(workspace, command) == expected
    assert _made(workspace, command, path)  # the control: bash makes the file


@pytest.mark.parametrize("command", [
    "flock 9",  # a descriptor's number alone: no file is opened
    "sqlite3 -readonly .git/x.db .tables",
])
def test_opening_nothing_new_reads(workspace: Path, command: str) -> None:
    assert _decision(workspace, command) == "allow"


def test_a_scratch_lock_through_a_link_is_judged_where_it_lands(workspace: Path) -> None:
    """``/tmp/x.lock`` may be a link someone left; opening it makes the file it names."""
    link = Path(f"/tmp/files-opened-made-{workspace.parent.name}.lock")
    link.symlink_to(workspace.parent / "outside.lock")
    try:
        assert _decision(workspace, "flock /tmp/deploy-never-made.lock true") == "allow"
        assert _decision(workspace, f"flock {link} true") == "deny"  # outside, through a link
        assert _made(workspace, f"flock {link} true", "../outside.lock")
    finally:
        link.unlink()


@pytest.mark.parametrize("command", ["flock a.txt ls -la", "flock a.txt -c 'cat a.txt'",
                                     "flock . git status"])
def test_locking_a_file_that_is_there_reads(workspace: Path, command: str) -> None:
    assert _decision(workspace, command) == "allow"
    _made(workspace, command, "a.txt")
    assert (workspace / "a.txt").read_text() == "hello\n"  # the control: nothing changed
