"""How a process or the system is doing, read from the kernel's files, is read like ``ps``.

``/proc/PID/status``, ``limits``, ``cmdline``, ``/proc/net/tcp``, ``/proc/sys/..`` and a
cgroup's ``*.max`` say what ``ps``, ``ss`` and ``ulimit`` print: allowed, named in the reason
(``engine/permissions/shell_paths.system_fact``). ``/proc/PID/environ`` holds a process's
secrets and stays asked. A path whose only run-time part is a number (``/proc/"$(pgrep -o
app)"/status``, ``logs/run-$n.log`` after ``n=$(wc -l < f)``) is judged as the path of any
number: a control run shows bash reading the process's own file.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.judged_workspace import AGENT_ENV, decisions, running

MARK = "tt-process-facts-3f9a"


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "logs" / "run-2.log").write_text("ran\n")
    return tmp_path


@pytest.fixture()
def app() -> Iterator[str]:
    """A running process whose command line carries a mark ``pgrep -f`` finds: its own, so
    a twin test running beside it (another worker) never finds a process about to end."""
    with running(MARK) as (_, mark):
        yield mark


@pytest.mark.parametrize("template", [
    "grep -E '^(State|VmRSS|Threads):' /proc/\"$(pgrep -o -f {mark})\"/status",
    "tr '\\0' ' ' < /proc/\"$(pgrep -o -f {mark})\"/cmdline",
    "pid=$(pgrep -o -f {mark}); grep 'Max open files' \"/proc/$pid/limits\"",
])
def test_a_process_s_own_files_read_through_its_pid(workspace: Path, template: str,
                                                    app: str) -> None:
    """Control: bash reads the running process's file through the pid pgrep prints."""
    command = template.format(mark=app)
    done = subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    out = check_shell_json(command, workspace, AGENT_ENV)
    assert out["decision"] == "allow" and "what system this is" in out["reason"]
    assert decisions(workspace, command)[1] == "allow"


@pytest.mark.parametrize("command", [
    "cat /proc/sys/fs/file-nr /proc/sys/net/core/somaxconn", "cat /proc/net/tcp",
    "cat /proc/self/status", "grep -c . /proc/$$/limits", "head -3 /proc/1/stat",
    "n=$(wc -l < a.txt); cat \"logs/run-$n.log\"",
])
def test_how_the_system_is_doing_is_read_like_ps(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "cat /proc/1/environ", "tr '\\0' '\\n' < /proc/\"$(pgrep -o app)\"/environ",
    "cat /proc/\"$(pgrep -fl app)\"/status",  # -l: a name beside the pid
    "n=$(head -1 a.txt); cat \"/proc/$n/status\"",  # a line of a file: any path
    "n=$(wc -l < a.txt); cat \"/etc/$n\"",
])
def test_secrets_and_paths_from_data_are_not_facts(workspace: Path, command: str) -> None:
    assert decisions(workspace, command)[0] != "allow"
