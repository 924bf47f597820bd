"""A workspace where a shell command is judged and, for the control, run by bash.

Tests of the classifier put each decision beside what bash really does with the command in a
throwaway git workspace. They share three pieces: the agent's environment, both decisions
(with a person and unattended), and a committed repository whose tracked files hold work, so
that ``git status`` says whether a control run changed or removed any of it.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from engine.permissions.shell import check_shell_json

AGENT_ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}
"""The environment the agent's commands are judged in: HOME outside every workspace."""

_AUTHOR = ["-c", "user.email=t@example.com", "-c", "user.name=t"]


def decisions(ws: Path, command: str,
              env: Mapping[str, str] = AGENT_ENV) -> tuple[str, str]:
    """``policy check-shell``'s decision with a person, then under ``--approval auto``."""
    return (str(check_shell_json(command, ws, env)["decision"]),
            str(check_shell_json(command, ws, env, approval="auto")["decision"]))


def git(ws: Path, *args: str) -> None:
    """Run git in ``ws`` as a configured author (commits need one on a bare machine)."""
    subprocess.run(["git", *_AUTHOR, *args], cwd=ws, check=True, capture_output=True)


def committed(ws: Path, files: Mapping[str, str]) -> Path:
    """``ws`` as a repository whose one commit holds ``files`` (path -> text)."""
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "i")
    return ws


def work_changed(ws: Path, command: str, env: Mapping[str, str] | None = None) -> bool:
    """The control run: whether bash running ``command`` changed or removed tracked work."""
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False,
                   stdin=subprocess.DEVNULL, env=None if env is None else dict(env))
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                            cwd=ws, capture_output=True, text=True, check=True).stdout
    return bool(status.strip())


@contextmanager
def running(prefix: str) -> Iterator[tuple[int, str]]:
    """A process that runs until the block ends (it waits on its input), with its pid and a
    mark on its command line that ``pgrep -f`` finds: its own, so a twin test on another
    worker never finds a process about to end."""
    mark = f"{prefix}-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", mark],
                            stdin=subprocess.PIPE)
    try:
        yield proc.pid, mark
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
