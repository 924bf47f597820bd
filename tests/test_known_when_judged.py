"""What the judge can know before a command runs, instead of calling it run-time data: the
shape of what a command prints (``git rev-list``, ``git log --format=%h``: object ids, never
an option or a path that leaves the folder). Each read-only form has a twin whose value
could carry code or an option, still asked."""

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
    (ws / "data.csv").write_text("id,name,count\n1,alpha,10\n2,beta,25\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)
    return ws


def _judged(ws: Path, command: str) -> tuple[str, str]:
    return (str(check_shell_json(command, ws, ENV)["decision"]),
            str(check_shell_json(command, ws, ENV, approval="auto")["decision"]))


@pytest.mark.parametrize("command", [
    'first=$(git rev-list --max-parents=0 HEAD)\ngit diff --stat "$first" HEAD',
    'b=$(git merge-base HEAD HEAD); git diff "$b"',
    "first=$(git log -S count --reverse --format=%h -- data.csv | head -1)\n"
    '[ -n "$first" ] && git show --stat "$first"',
    "valgrind --version",
])
def test_object_ids_printed_then_given_to_git_read(workspace: Path, command: str) -> None:
    assert _judged(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    'b=$(cat data.csv); git diff "$b"',  # any text: an option, a path anywhere
    'c=$(git log -p --format=%H -1); git show "$c"',  # -p adds the patch's lines
    'c=$(git log --boundary --format=%H -1); git show "$c"',  # a boundary commit is -ID
    'b=$(git merge-base HEAD HEAD); echo x > "$b"',  # a write: which file, not shown
])
def test_other_output_stays_run_time_data(workspace: Path, command: str) -> None:
    assert _judged(workspace, command)[0] == "ask"


@pytest.mark.parametrize("command", [
    "strace -f -p 1234 -o out.trace", "ltrace -p 1234", "gdb -nx -batch -p 1234 -ex bt",
    "gdb -batch -ex 'attach 1234' -ex bt", "gcore 1234", "py-spy dump --pid 1234",
])
def test_attaching_to_a_running_process_is_for_a_person(workspace: Path, command: str) -> None:
    """Another process's memory and calls hold its secrets (an ssh agent's keys)."""
    assert _judged(workspace, command) == ("ask", "deny")
