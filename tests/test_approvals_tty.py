"""Interactive approvals through a real pseudo-terminal, and what resume does with them."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, EngineCLI, engine_env

MACHINE = str(ROOT / "machines" / "coding_agent.yaml")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """``python -m engine`` on a pty: read what it prints, type answers."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=cwd,
                                     env=engine_env({"COLUMNS": "200"}), stdin=slave,
                                     stdout=slave, stderr=slave, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout: float = 60) -> str:
        deadline = time.time() + timeout
        while text not in self.screen:
            if time.time() > deadline:
                raise AssertionError(f"{text!r} not shown; screen:\n{self.screen[-3000:]}")
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self._add(os.read(self.master, 65536))
                except OSError:  # the child closed the terminal
                    raise AssertionError(f"{text!r} never shown; the program ended:\n"
                                         f"{self.screen[-3000:]}") from None
        return self.screen

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def wait(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            self.drain()
            os.close(self.master)
        return code

    def drain(self) -> None:
        while select.select([self.master], [], [], 0.1)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self._add(chunk)

    def _add(self, chunk: bytes) -> None:
        """Keep the text a person sees: styles stripped, line ends normalised."""
        text = chunk.decode(errors="replace").replace("\r\n", "\n")
        self.screen += ANSI.sub("", text)


def test_demo_on_a_terminal_asks_and_the_answers_decide(tmp_path: Path) -> None:
    term = Terminal(["run", MACHINE, "--db", str(tmp_path / "e.db")], tmp_path)
    term.expect("Allow run_shell?")
    assert "python3 -m unittest -q" in term.screen  # the parsed command is previewed
    term.type("a")  # always: `python3 -m unittest` for this run
    term.expect("Allow edit_file?")
    assert "-        total += item.price" in term.screen  # a unified diff preview
    assert "+        total += item.price * item.quantity" in term.screen
    term.type("y")
    assert term.wait() == 0, term.screen[-3000:]
    assert "completed" in term.screen
    assert term.screen.count("Allow run_shell?") == 1  # the second test run was "always"
    audit = EngineCLI(ROOT, tmp_path / "e.db").json("audit", _only_run(tmp_path / "e.db"))
    by_tool = {(a["tool"], a["decided_by"]) for a in audit}
    assert ("run_shell", "user-always") in by_tool and ("run_shell", "always") in by_tool
    assert ("edit_file", "user") in by_tool and ("read_file", "policy") in by_tool


def test_no_means_denied_and_the_model_is_told(tmp_path: Path) -> None:
    term = Terminal(["run", MACHINE, "--db", str(tmp_path / "e.db")], tmp_path)
    term.expect("Allow run_shell?")
    term.type("n")
    code = term.wait()
    assert code == 1  # the script expected test output; a denial makes the run diverge
    conn = sqlite3.connect(tmp_path / "e.db")
    bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM messages ORDER BY seq")]
    denial = next(m for m in bodies if m["role"] == "tool")
    assert denial["is_error"] and "Permission denied for run_shell" in denial["content"]
    (row,) = conn.execute("SELECT decision, decided_by FROM audit WHERE tool = 'run_shell'")
    assert row == ("deny", "user")


def test_a_run_killed_while_asking_asks_again_on_resume(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    term = Terminal(["run", MACHINE, "--db", str(db)], tmp_path)
    term.expect("Allow run_shell?")
    os.killpg(term.proc.pid, signal.SIGKILL)
    term.wait()
    run_id = _only_run(db)
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM audit").fetchone() == (0,)
    again = Terminal(["resume", run_id, "--db", str(db)], tmp_path)
    again.expect("Allow run_shell?")  # the pending approval is asked again
    again.type("y")
    again.expect("Allow edit_file?")
    again.type("y")
    again.expect("Allow run_shell?")
    again.type("y")
    assert again.wait() == 0, again.screen[-3000:]


def test_a_recorded_decision_is_honoured_on_resume(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    env_fault = {"ENGINE_FAULTS": "crash_after:await_approval:1"}
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", MACHINE, "--db", str(db)],
                            cwd=tmp_path, env=engine_env(env_fault), stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    screen = ""
    while "Allow run_shell?" not in screen:
        screen += ANSI.sub("", os.read(master, 65536).decode(errors="replace"))
    os.write(master, b"y\n")
    assert proc.wait(timeout=60) == -9
    os.close(master)
    resume = Terminal(["resume", _only_run(db), "--db", str(db)], tmp_path)
    resume.expect("Allow edit_file?")  # run_shell's recorded "yes" was not asked again
    assert "Allow run_shell?" not in resume.screen
    resume.type("y")
    resume.expect("Allow run_shell?")
    resume.type("y")
    assert resume.wait() == 0


def _only_run(db: Path) -> str:
    (run_id,) = sqlite3.connect(db).execute("SELECT run_id FROM runs").fetchone()
    return run_id
