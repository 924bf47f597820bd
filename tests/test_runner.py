"""The runner end to end, through the real CLI in subprocesses, on real SQLite files: what needs
a process (SIGKILL anywhere, Ctrl-C). A whole run's steps, transitions and effects are checked
in-process in ``test_inprocess_runner``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import EngineCLI, read_tree

DEMO = "golden_tasks/demo_fix_test"
MACHINE = "machines/coding_agent.yaml"

# (state, how often the demo visits it): plan 1, call_model 5, await_approval 4, exec_tool 4,
# checkpoint 4, evaluate_stop 5.
KILL_POINTS = [
    "crash_before:plan:1", "crash_after:plan:1",
    "crash_before:call_model:1", "crash_after:call_model:1", "crash_after:call_model:3",
    "crash_before:call_model:5", "crash_after:call_model:5",
    "crash_before:await_approval:1", "crash_after:await_approval:2",
    "crash_before:await_approval:3", "crash_after:await_approval:4",
    "crash_before:exec_tool:1", "crash_during:exec_tool:1", "crash_after:exec_tool:1",
    "crash_during:exec_tool:2", "crash_before:exec_tool:3", "crash_during:exec_tool:3",
    "crash_after:exec_tool:3", "crash_during:exec_tool:4", "crash_after:exec_tool:4",
    "crash_before:checkpoint:2", "crash_after:checkpoint:2", "crash_after:checkpoint:4",
    "crash_before:evaluate_stop:1", "crash_after:evaluate_stop:3",
    "crash_before:evaluate_stop:5",
]
QUICK_KILLS = {"crash_before:call_model:1", "crash_during:exec_tool:1", "crash_after:exec_tool:1",
               "crash_after:checkpoint:2"}
"""Run by plain ``scripts/test``: a kill before, during and after a step, and between merged
steps. The rest of the matrix is slow (a killed and a resumed process each); the same points
are covered in-process by ``test_inprocess_runner``."""


def _run_demo(cli: EngineCLI, env: dict[str, str] | None = None):
    return cli("run", MACHINE, "--approval", "policy", "--json", env=env)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("baseline")
    cli = EngineCLI(Path(__file__).resolve().parent.parent, tmp / "engine.db")
    proc = _run_demo(cli)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    show = cli.json("show", run["run_id"])
    return {"run": run, "show": show, "tree": read_tree(Path(run["workspace"])),
            "db": tmp / "engine.db"}


def test_show_lists_checkpoints_and_file_changes(baseline: dict) -> None:
    show = baseline["show"]
    kinds = {c["kind"] for c in show["checkpoints"]}
    assert kinds == {"pre", "post", "snapshot"}
    assert set(show["files_changed"]) == {"inventory.py"}
    assert show["tool_calls"] == 5 and show["model_calls"] == 5


@pytest.mark.parametrize("fault", [
    p if p in QUICK_KILLS else pytest.param(p, marks=pytest.mark.slow) for p in KILL_POINTS])
def test_kill_anywhere_then_resume_completes_identically(fault: str, cli: EngineCLI,
                                                         baseline: dict) -> None:
    killed = _run_demo(cli, env={"ENGINE_FAULTS": fault})
    assert killed.returncode == -9, (fault, killed.returncode, killed.stderr[-2000:])
    (run,) = cli.json("runs")
    assert run["status"] == "crashed"
    resumed = cli("resume", run["run_id"], "--json")
    assert resumed.returncode == 0, (fault, resumed.stderr[-3000:])
    final = json.loads(resumed.stdout)
    assert final["status"] == "completed"
    assert read_tree(Path(final["workspace"])) == baseline["tree"]
    conn = sqlite3.connect(cli.db)
    seqs = [r[0] for r in conn.execute("SELECT seq FROM transitions ORDER BY seq")]
    assert seqs == list(range(len(seqs)))  # no step recorded twice, none missing
    edits = conn.execute("SELECT status FROM effects WHERE tool = 'edit_file'").fetchall()
    assert edits == [("done",)]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGHUP"])
def test_ctrl_c_interrupts_cleanly_and_resumes(cli: EngineCLI, tmp_path: Path,
                                               sig: str) -> None:
    """Ctrl-C, and SIGHUP (the terminal closed), end the run ``interrupted`` (exit 3)."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import engine_env

    task = tmp_path / "ws"
    task.mkdir()
    turns = tmp_path / "turns.yaml"
    turns.write_text(
        "- tool_calls: [{name: run_shell, args: {command: 'sleep 30; echo slept'}}]\n"
        "- text: done\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", MACHINE, "--task", "sleep", "--workspace",
         str(task), "--model", f"scripted:{turns}", "--approval", "auto", "--db", str(cli.db)],
        cwd=cli.cwd, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.time() + 110  # a guard against a hang, not a bound on the time it takes
    while not (cli.db.exists() and "tool_started" in _event_kinds(cli.db)):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=100)
    seen = f"\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    assert proc.returncode == 3, f"exit code {proc.returncode}{seen}"
    assert "resume" in out, seen
    (run,) = cli.json("runs")
    assert run["status"] == "interrupted", f"{run}{seen}"
    left = _children_in(task)  # the command exits once its whole tree is gone
    assert not left, ("a process of the interrupted command is still running: "
                      + "; ".join(_cmdline(pid) for pid in left)
                      + f"\nevents: {sorted(_event_kinds(cli.db))}{seen}")


def _event_kinds(db: Path) -> set[str]:
    try:
        conn = sqlite3.connect(db)
        return {k for (k,) in conn.execute("SELECT DISTINCT kind FROM events")}
    except sqlite3.Error:
        return set()


def _cmdline(pid: str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return f"{pid} (gone)"
    command = raw.replace(b"\0", b" ").decode()[:120]
    return f"{pid} ppid {stat[1]} pgid {stat[2]} sid {stat[3]}: {command}"


def _children_in(workspace: Path) -> list[str]:
    """Live processes whose working directory is ``workspace`` (the run's shell commands)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(workspace) and (
                    Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(pid)
        except OSError:
            continue
    return found
