"""Every command a message tells the user to run, run as printed.

Each scenario runs the CLI as a user would (``python -m engine`` or the ``turnstile`` script,
from a project folder, with the default store, a SQLite file named with ``--db`` or a
PostgreSQL server named with ``--store``) and collects every hint it prints: the commands after
``inspect:``, ``resume:``, ``start one with:``, ``continue with:`` and in backquotes. Each hint
is then split as a POSIX shell would (``shlex.split``) and executed in a copy of the folder as
it was when the hint was printed; it must succeed (exit 0), and the hints it prints in turn are
executed the same way. A hint that names the wrong program, leaves out the store, or names a
machine that does not exist fails here.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import ROOT, engine_env

PYTHON_M = shlex.join([sys.executable, "-m", "engine"])
SCRIPT = Path(sys.executable).parent / "turnstile"

PARK_TASK = """\
prompt: "Fix total_value in inventory.py."
machine: coding_agent
fixture: fixture
approval: park
policy: policy.yaml
"""
PARK_POLICY = "default: deny\nrules:\n  - {decision: ask, tool: edit_file, path: \"*.py\"}\n"
PARK_TURNS = [
    {"text": "Fixing it.", "tool_calls": [{"name": "edit_file", "args": {
        "path": "inventory.py", "old": "total += item.price\n",
        "new": "total += item.price * item.quantity\n"}}]},
    {"text": "Done."},
]
ONE_CALL = "- tool_calls: [{name: list_files, args: {path: .}}]\n"


@dataclass
class Hints:
    """A project folder, the program the user runs, and every hint executed so far."""

    project: Path
    program: list[str]
    env: dict[str, str]
    prefix: str
    """How a hint must begin: the program as the user typed it."""
    snapshots: Path
    executed: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return self.run([*self.program, *args], cwd or self.project)

    def run(self, argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=cwd, env=self.env, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)

    def printed(self, proc: subprocess.CompletedProcess[str]) -> list[str]:
        """The hints in a command's output, as printed."""
        found: list[str] = []
        for line in (proc.stdout + proc.stderr).splitlines():
            start = line.find(self.prefix)
            while start >= 0:
                rest = line[start:]
                ends = [i for i in (rest.find("`"), rest.find(")")) if i >= 0]
                found.append(rest[:min(ends, default=len(rest))].rstrip(" .;,"))
                start = line.find(self.prefix, start + len(self.prefix))
        return found

    def follow(self, proc: subprocess.CompletedProcess[str], cwd: Path) -> list[str]:
        """Execute every hint ``proc`` printed (and theirs), each in a copy of ``cwd`` as it
        is now; returns the hints found."""
        hints = self.printed(proc)
        for hint in hints:
            if hint in self.executed:
                continue
            copy = self.snapshots / f"h{len(self.executed)}"
            shutil.copytree(cwd, copy, symlinks=True)
            done = self.run(shlex.split(hint), copy)
            self.executed[hint] = done
            assert done.returncode == 0, f"{hint}\n{done.stdout}\n{done.stderr}"
            self.follow(done, copy)
        return hints


def _python_m(tmp_path: Path) -> Hints:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "snapshots").mkdir()
    return Hints(project, [sys.executable, "-m", "engine"], engine_env(), PYTHON_M + " ",
                 tmp_path / "snapshots")


def _script(tmp_path: Path) -> Hints:
    hints = _python_m(tmp_path)
    env = engine_env({"PATH": f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    return Hints(hints.project, ["turnstile"], env, "turnstile ", hints.snapshots)


def _park_task(project: Path) -> Path:
    task = project / "park_task"
    shutil.copytree(ROOT / "golden_tasks" / "demo_fix_test" / "fixture", task / "fixture")
    (task / "task.yaml").write_text(PARK_TASK)
    (task / "policy.yaml").write_text(PARK_POLICY)
    (task / "turns.yaml").write_text(json.dumps(PARK_TURNS))
    return task


@pytest.mark.skipif(not SCRIPT.exists(), reason="the console script is not installed")
@pytest.mark.parametrize("how", ["python -m engine", "turnstile"])
def test_every_hint_runs_as_printed(tmp_path: Path, how: str) -> None:
    h = _python_m(tmp_path) if how == "python -m engine" else _script(tmp_path)
    # No runs yet: the hint starts the bundled demo, in the store that was named.
    empty = h.cli("runs", "--db", "stores/a.db")
    assert h.follow(empty, h.project) == [f"{h.prefix}run coding_agent --db stores/a.db"]
    assert "completed" in h.executed[f"{h.prefix}run coding_agent --db stores/a.db"].stdout
    # The default store: no flag needed, and none is printed.
    demo = h.cli("run", "coding_agent")
    (show,) = h.follow(demo, h.project)
    assert show.startswith(f"{h.prefix}show ") and "--db" not in show
    # A failed run: the resume hint continues it once its cause is fixed.
    (h.project / "turns.yaml").write_text(ONE_CALL)
    failed = h.cli("run", "coding_agent", "--task", "look", "--model", "scripted:turns.yaml",
                   "--db", "stores/f.db")
    assert failed.returncode == 1, failed.stderr
    (h.project / "turns.yaml").write_text(ONE_CALL + "- text: looked\n")
    printed = h.follow(failed, h.project)
    resume = next(p for p in printed if " resume " in p)
    assert resume.endswith("--db stores/f.db")
    assert "completed run" in h.executed[resume].stdout
    # A parked call: approve and deny as printed, each then resumed as printed.
    _park_task(h.project)
    parked = h.cli("run", "coding_agent", "--golden", "park_task", "--db", "stores/p.db")
    assert parked.returncode == 5, parked.stderr
    decisions = h.follow(parked, h.project)
    assert {d.split()[len(h.prefix.split())] for d in decisions} >= {"approve", "deny"}
    assert all(d.endswith("--db stores/p.db") for d in decisions)
    resumed = [h.executed[hint] for hint in h.executed if " resume " in hint]
    assert any("completed run" in r.stdout for r in resumed)
    assert all(hint.startswith(h.prefix) for hint in h.executed)


def test_eval_and_server_store_hints_run_as_printed(tmp_path: Path, pg_url: str) -> None:
    h = _python_m(tmp_path)
    demo = h.cli("run", "coding_agent", "--store", pg_url)
    (show,) = h.follow(demo, h.project)
    assert show.endswith(f"--store {pg_url}")
    task = h.project / "tasks" / "demo"
    shutil.copytree(ROOT / "golden_tasks" / "demo_fix_test", task)
    with (task / "task.yaml").open("a") as f:
        f.write("  - {max_steps: 3}\n")  # the demo takes more: the task fails, its run is kept
    failed = h.cli("eval", "tasks")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    (inspect,) = [p for p in h.follow(failed, h.project) if " show " in p]
    assert "steps" in h.executed[inspect].stdout


def test_the_damaged_row_hint_runs_check_on_the_same_store(tmp_path: Path) -> None:
    """``show`` of a run with a row the engine cannot read names ``check``; run as printed,
    ``check`` finds that run (and exits 2, as it does when it finds one)."""
    h = _python_m(tmp_path)
    demo = h.cli("run", "coding_agent", "--db", "stores/d.db", "--json")
    run_id = json.loads(demo.stdout)["run_id"]
    with sqlite3.connect(h.project / "stores" / "d.db") as conn:
        conn.execute("UPDATE messages SET body = '{\"role\": broken' WHERE key = ("
                     "SELECT MIN(key) FROM messages WHERE run_id = ?)", (run_id,))
    shown = h.cli("show", run_id, "--db", "stores/d.db")
    assert shown.returncode == 2, shown.stderr
    (check,) = h.printed(shown)
    assert shlex.split(check)[len(shlex.split(h.prefix)):] == ["check", "--db", "stores/d.db"]
    checked = h.run(shlex.split(check), h.project)
    assert checked.returncode == 2 and checked.stdout.startswith(f"damaged run {run_id}:")
