"""Faults at the command line's edges: each ends in one clear line (or none), the documented
exit code, no traceback, and the runs already in the database untouched.

Real subprocesses, real signals, a real pseudo-terminal, real SQLite files.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env
from tests.test_approvals_tty import Terminal

MACHINE = str(ROOT / "machines" / "coding_agent.yaml")
DEMO = ROOT / "golden_tasks" / "demo_fix_test"


# -- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A database holding one completed demo run, copied into each test that needs one."""
    tmp = tmp_path_factory.mktemp("earlier")
    cli = EngineCLI(ROOT, tmp / "engine.db")
    proc = cli("run", MACHINE, "--approval", "policy", "--json")
    assert proc.returncode == 0, proc.stderr
    return {"db": tmp / "engine.db", "run": json.loads(proc.stdout)}


def _with_earlier(earlier: dict[str, Any], tmp_path: Path) -> EngineCLI:
    db = tmp_path / "engine.db"
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(earlier["db"]) + suffix)
        if src.exists():
            shutil.copy(src, str(db) + suffix)
    return EngineCLI(ROOT, db)


def _earlier_intact(cli: EngineCLI, earlier: dict[str, Any]) -> None:
    """The earlier run is still listed, with the same status, steps and tokens."""
    before = earlier["run"]
    runs = {r["run_id"]: r for r in cli.json("runs")}
    now = runs[before["run_id"]]
    for key in ("status", "state", "steps", "input_tokens", "output_tokens"):
        assert now[key] == before[key], key
    assert cli("show", before["run_id"]).returncode == 0


def _no_traceback(*texts: str) -> None:
    """No traceback of ours (a shell command's own output, shown after "│", may hold one)."""
    for text in texts:
        assert not [line for line in text.splitlines()
                    if "Traceback" in line and "│" not in line], text[-3000:]


def _one_error_line(proc: subprocess.CompletedProcess[str], *parts: str) -> str:
    """Exactly one line on stderr, containing ``parts``; no traceback anywhere."""
    _no_traceback(proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def _copy_demo(tmp_path: Path, turns: str | bytes | None = None) -> Path:
    task = tmp_path / "task"
    shutil.copytree(DEMO, task)
    if isinstance(turns, bytes):
        (task / "turns.yaml").write_bytes(turns)
    elif turns is not None:
        (task / "turns.yaml").write_text(turns)
    return task


def _status(db: Path, run_id: str) -> str:
    (status,) = sqlite3.connect(db).execute(
        "SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return str(status)


def _newest_run(db: Path) -> str:
    (run_id,) = sqlite3.connect(db).execute(
        "SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
    return str(run_id)


def _engine(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine", *args]


# -- item 4: broken pipe, closed streams, Ctrl-C --------------------------------------------


def test_output_piped_into_head_does_not_stop_the_run(earlier: dict[str, Any],
                                                      tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    proc = subprocess.Popen(_engine("run", MACHINE, "--approval", "policy", "--db", str(cli.db)),
                            cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # `| head -1`: one line read, then the reader is gone
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "demo" in first
    assert err == ""
    assert _status(cli.db, _newest_run(cli.db)) == "completed"
    _earlier_intact(cli, earlier)


def test_closed_stdout_and_stderr_do_not_stop_the_run(earlier: dict[str, Any],
                                                      tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    closed = ["bash", "-c", 'exec "$@" >&- 2>&- <&-', "engine",
              *_engine("run", MACHINE, "--db", str(cli.db))]
    proc = subprocess.run(closed, cwd=ROOT, env=engine_env(), timeout=120)
    assert proc.returncode == 0
    assert _status(cli.db, _newest_run(cli.db)) == "completed"
    _earlier_intact(cli, earlier)


def _sleeping_run(tmp_path: Path, db: Path) -> tuple[subprocess.Popen[str], Path]:
    """A run whose one shell command sleeps; returned once the command has started."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    turns = tmp_path / "turns.yaml"
    turns.write_text("- tool_calls: [{name: run_shell, args: {command: 'sleep 30; echo slept'}}]"
                     "\n- text: done\n")
    proc = subprocess.Popen(
        _engine("run", MACHINE, "--task", "sleep", "--workspace", str(workspace), "--model",
                f"scripted:{turns}", "--approval", "auto", "--db", str(db)),
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    earlier = _run_ids(db)
    deadline = time.time() + 60
    while time.time() < deadline and not _started_shell(db, earlier):
        time.sleep(0.05)
    return proc, workspace


def _run_ids(db: Path) -> set[str]:
    if not db.exists():
        return set()
    return {r for (r,) in sqlite3.connect(db).execute("SELECT run_id FROM runs")}


def _started_shell(db: Path, earlier: set[str]) -> bool:
    """The new run's shell command has started (its ``tool_started`` event is written)."""
    try:
        rows = sqlite3.connect(db).execute(
            "SELECT DISTINCT run_id FROM events WHERE kind = 'tool_started'").fetchall()
    except sqlite3.Error:
        return False
    return any(r not in earlier for (r,) in rows)


@pytest.mark.parametrize("gap_s", [0.0, 0.05, 0.3])
def test_two_ctrl_c_during_a_shell_command_end_quietly_interrupted(
        earlier: dict[str, Any], tmp_path: Path, gap_s: float) -> None:
    cli = _with_earlier(earlier, tmp_path)
    proc, _ = _sleeping_run(tmp_path, cli.db)
    proc.send_signal(signal.SIGINT)
    for _ in range(3):  # an impatient user: more Ctrl-C while the run shuts down
        time.sleep(gap_s)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)  # a hang guard: shutting down waits on events
    assert proc.returncode == 3, err
    _no_traceback(out, err)
    assert err.count("\n") <= 1, err
    assert "interrupted run" in out and "resume:" in out
    assert _status(cli.db, _newest_run(cli.db)) == "interrupted"
    _earlier_intact(cli, earlier)


def _interrupt_at_the_prompt(tmp_path: Path, db: Path) -> tuple[int, str]:
    """Start the demo at a terminal, press Ctrl-C at the first approval prompt."""
    term = Terminal(["run", MACHINE, "--db", str(db)], ROOT)  # ROOT: this checkout's engine
    term.expect("Allow run_shell?")
    os.killpg(term.proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    code = term.wait(timeout=300)  # it used to hang here until Enter: a hang guard, not a bound
    return code, term.screen


def test_ctrl_c_at_an_approval_prompt_returns_at_once(earlier: dict[str, Any],
                                                      tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    code, screen = _interrupt_at_the_prompt(tmp_path, cli.db)
    assert code == 3, screen[-2000:]
    _no_traceback(screen)
    assert "interrupted run" in screen
    run_id = _newest_run(cli.db)
    assert _status(cli.db, run_id) == "interrupted"
    assert cli.json("audit", run_id) == []  # nothing was decided for the person
    _earlier_intact(cli, earlier)


# -- item 7: resume keeps what the run recorded ----------------------------------------------


def test_resume_without_a_terminal_lets_the_policy_decide(earlier: dict[str, Any],
                                                          tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    code, _ = _interrupt_at_the_prompt(tmp_path, cli.db)
    assert code == 3
    run_id = _newest_run(cli.db)
    proc = subprocess.run(_engine("resume", run_id, "--db", str(cli.db)), cwd=ROOT,
                          env=engine_env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    _no_traceback(proc.stdout)
    notes = [line for line in proc.stdout.splitlines() if "no terminal" in line]
    assert len(notes) == 1 and "the policy decides" in notes[0]
    audit = cli.json("audit", run_id)
    assert audit and not any(a["decided_by"].startswith("user") for a in audit)
    assert {a["decided_by"] for a in audit if a["tool"] == "run_shell"} == {"policy"}
    assert cli.json("show", run_id)["config"]["approval"] == "interactive"  # as recorded
    _earlier_intact(cli, earlier)


def test_resume_of_an_interrupted_demo_with_approval_policy_applies_its_policy(
        earlier: dict[str, Any], tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    code, _ = _interrupt_at_the_prompt(tmp_path, cli.db)
    assert code == 3
    run_id = _newest_run(cli.db)
    proc = cli("resume", run_id, "--approval", "policy")
    assert proc.returncode == 0, proc.stderr
    _no_traceback(proc.stdout, proc.stderr)
    audit = cli.json("audit", run_id)
    shell = [a for a in audit if a["tool"] == "run_shell"]
    assert shell and all(a["decision"] == "allow" for a in shell)
    assert {a["rule"] for a in shell} != {None}  # allowed by a rule of the task's policy.yaml
    _earlier_intact(cli, earlier)


def test_resume_keeps_an_explicit_policy_and_the_recorded_durability(
        earlier: dict[str, Any], tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    strict = tmp_path / "strict.yaml"
    strict.write_text("default: deny\nrules:\n  - {decision: allow, tool: update_plan}\n")
    env = {"ENGINE_FAULTS": "crash_before:await_approval:1"}
    killed = cli("run", MACHINE, "--approval", "policy", "--policy", str(strict),
                 "--durability", "full", env=env)
    assert killed.returncode == -9
    run_id = _newest_run(cli.db)
    config = cli.json("show", run_id)["config"]
    assert config["durability"] == "full" and config["policy"] == str(strict.resolve())
    resumed = cli("resume", run_id)
    # The strict policy (not the task's) still decides: run_shell is denied, the script
    # diverges, the run fails as it would have without the crash.
    assert resumed.returncode == 1, resumed.stderr
    shell = [a for a in cli.json("audit", run_id) if a["tool"] == "run_shell"]
    assert shell and shell[0]["decision"] == "deny"
    _earlier_intact(cli, earlier)


def test_workspace_with_the_demo_or_a_golden_task_is_refused(earlier: dict[str, Any],
                                                             tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    missing = tmp_path / "nowhere"
    for extra in ((), ("--golden", str(DEMO))):
        proc = cli("run", MACHINE, *extra, "--workspace", str(missing))
        assert proc.returncode == 2
        _one_error_line(proc, "--workspace is for --task runs")
        assert not missing.exists()
    assert len(cli.json("runs")) == 1
    _earlier_intact(cli, earlier)


# -- item 5: bounded inputs ------------------------------------------------------------------


ALIAS_BOMB = "\n".join(
    ["- text: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"- text: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "\n"


def test_an_alias_bomb_in_a_golden_turns_file_is_refused(earlier: dict[str, Any],
                                                         tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    task = _copy_demo(tmp_path, ALIAS_BOMB)
    started = time.monotonic()
    proc = cli("run", MACHINE, "--golden", str(task), timeout=60)
    assert proc.returncode == 2
    _one_error_line(proc, f"{task / 'turns.yaml'}:2: YAML alias '*a0' is not allowed")
    assert time.monotonic() - started < 20
    assert len(cli.json("runs")) == 1
    _earlier_intact(cli, earlier)


@pytest.mark.parametrize("name", ["task.yaml", "policy.yaml"])
def test_aliases_are_refused_in_task_and_policy_files(earlier: dict[str, Any], tmp_path: Path,
                                                      name: str) -> None:
    cli = _with_earlier(earlier, tmp_path)
    task = _copy_demo(tmp_path)
    path = task / name
    path.write_text(path.read_text() + "x_anchor: &shared {a: 1}\nx_alias: *shared\n")
    lines = path.read_text().count("\n")
    proc = cli("run", MACHINE, "--golden", str(task))
    assert proc.returncode == 2
    _one_error_line(proc, f"{path}:{lines}: YAML alias '*shared' is not allowed")
    _earlier_intact(cli, earlier)


def test_a_50_mb_line_in_turns_yaml_is_refused_before_it_is_read(earlier: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    task = _copy_demo(tmp_path, b"- text: '" + b"x" * 50_000_000 + b"'\n")
    started = time.monotonic()
    proc = cli("run", MACHINE, "--golden", str(task), timeout=60)
    assert proc.returncode == 2
    _one_error_line(proc, f"{task / 'turns.yaml'}: file too large (over 4 MB")
    assert time.monotonic() - started < 10
    assert len(cli.json("runs")) == 1
    _earlier_intact(cli, earlier)


# -- item 11: input that cannot mean anything -----------------------------------------------


def test_an_unknown_key_in_a_turns_entry_is_refused_with_its_line(earlier: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    cli = _with_earlier(earlier, tmp_path)
    text = (DEMO / "turns.yaml").read_text().replace(
        "- expect: {tool_result_contains: \"FAILED\"}",
        "- expect: {tool_result_contain: \"FAILED\"}", 1)
    task = _copy_demo(tmp_path, text)
    line = text.splitlines().index("- expect: {tool_result_contain: \"FAILED\"}") + 1
    proc = cli("run", MACHINE, "--golden", str(task))
    assert proc.returncode == 2
    _one_error_line(proc, f"{task / 'turns.yaml'}:{line}: turn 2: unknown field "
                          "'expect.tool_result_contain' (did you mean 'tool_result_contains'?)")
    assert len(cli.json("runs")) == 1
    _earlier_intact(cli, earlier)


def test_a_json_turns_file_is_read_as_it_is(tmp_path: Path) -> None:
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"text": "nothing to do"}]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cli = EngineCLI(ROOT, tmp_path / "engine.db")
    proc = cli("run", MACHINE, "--task", "say hi", "--workspace", str(workspace), "--model",
               f"scripted:{turns}", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"
    turns.write_text(json.dumps([{"text": "a", "tool_calls": [{"name": "x", "arg": {}}]}]))
    bad = cli("run", MACHINE, "--task", "say hi", "--workspace", str(workspace), "--model",
              f"scripted:{turns}")
    assert bad.returncode == 2
    _one_error_line(bad, f"{turns}: turn 1: unknown field 'tool_calls.1.arg' (did you mean "
                         "'args'?)")


@pytest.mark.parametrize("task", ["", "   \n"])
def test_an_empty_task_is_refused(earlier: dict[str, Any], tmp_path: Path, task: str) -> None:
    cli = _with_earlier(earlier, tmp_path)
    proc = cli("run", MACHINE, "--task", task, "--model", "scripted")
    assert proc.returncode == 2
    _one_error_line(proc, "--task is empty")
    empty = tmp_path / "task.txt"
    empty.write_text(task)
    proc = cli("run", MACHINE, "--task-file", str(empty), "--model", "scripted")
    assert proc.returncode == 2
    _one_error_line(proc, f"--task-file {empty} is empty")
    assert len(cli.json("runs")) == 1
    _earlier_intact(cli, earlier)


def test_a_machine_that_fails_to_load_creates_no_database(earlier: dict[str, Any],
                                                          tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ninitial: a\nstates:\n  a: {action: nope, on: {ready: b}}\n")
    fresh = EngineCLI(ROOT, tmp_path / "new" / "engine.db")
    proc = fresh("run", str(bad), "--task", "t", "--model", "scripted")
    assert proc.returncode == 2
    _one_error_line(proc, f"{bad}:")
    assert not fresh.db.exists() and not fresh.db.parent.exists()
    cli = _with_earlier(earlier, tmp_path)
    proc = cli("run", str(bad), "--task", "t", "--model", "scripted")
    assert proc.returncode == 2
    _one_error_line(proc, f"{bad}:")
    _earlier_intact(cli, earlier)
