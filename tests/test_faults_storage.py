"""Storage faults end in one line and exit 2, never a traceback, and lose no earlier run.

One test per storage row of issue 14's table, each through the real parts: the file and its
folder made read-only (as root, the engine runs without the capability that ignores file
permissions, so they apply), a damaged page written into the file, a 4 MB tmpfs that the run
itself fills, a write lock held by another process, 20 processes creating one database. Each
starts with a good run and checks afterwards that it is still listed and unchanged.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, engine_env

DEMO = "machines/coding_agent.yaml"
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def _without_root_override() -> None:
    """In the child, as root: drop the capabilities that ignore file permissions, so a file
    made read-only is read-only to the engine as it is to any user."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


class Engine:
    """``python -m engine ... --db DB`` in a subprocess, with a 1 s busy timeout."""

    def __init__(self, db: Path, *, unprivileged: bool = False) -> None:
        self.db = db
        self.unprivileged = unprivileged

    def __call__(self, *args: str, env: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "engine", *args, "--db", str(self.db)], cwd=ROOT,
            env=engine_env({"ENGINE_BUSY_TIMEOUT": "1", **(env or {})}), capture_output=True,
            text=True, timeout=timeout, stdin=subprocess.DEVNULL,
            preexec_fn=_without_root_override if self.unprivileged else None)

    def json(self, *args: str) -> Any:
        proc = self(*args, "--json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def good_run(self, *args: str) -> str:
        proc = self("run", DEMO, "--approval", "auto", *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return str(self.json("runs")[-1]["run_id"])

    def snapshot(self) -> dict[str, Any]:
        """Every run as ``show --json`` sees it (what must survive a fault unchanged)."""
        return {r["run_id"]: self.json("show", r["run_id"]) for r in self.json("runs")}

    def orphans(self) -> list[str]:
        """Workspace folders with no run: what a failed start must not leave behind."""
        folder = self.db.parent / "workspaces"
        runs = {r["run_id"] for r in self.json("runs")}
        return sorted(p.name for p in folder.iterdir() if p.name not in runs) \
            if folder.exists() else []


def assert_fault(proc: subprocess.CompletedProcess[str], db: Path, *words: str) -> str:
    """Exit 2, exactly one line on stderr naming the database and the fault, no traceback."""
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(db) in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def assert_intact(engine: Engine, before: dict[str, Any]) -> None:
    """Every run of ``before`` is still listed and reads back exactly as before."""
    after = {r["run_id"]: r for r in engine.json("runs")}
    for run_id, shown in before.items():
        assert run_id in after, f"run {run_id} is no longer listed"
        assert engine.json("show", run_id) == shown


def golden_task(folder: Path, command: str, *, setup: list[str] | None = None) -> Path:
    """A one-shell-call golden task (scripted model): the call, then a final answer."""
    (folder / "fixture").mkdir(parents=True)
    (folder / "fixture" / "README.txt").write_text("fixture\n")
    task = {"prompt": "Run the command.", "approval": "auto", "policy": None}
    if setup:
        task["setup"] = setup
    (folder / "task.yaml").write_text(json.dumps(task))
    turns = [{"text": "Running it.",
              "tool_calls": [{"name": "run_shell", "args": {"command": command}}]},
             {"text": "Done."}]
    (folder / "turns.yaml").write_text(json.dumps(turns))
    return folder


@contextlib.contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """Another process holds ``db``'s write lock (``BEGIN EXCLUSIVE``) inside the block."""
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(tmp_path / "db" / "engine.db")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MB file system (tmpfs): room for a few runs, and easy to fill."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs and needs root (CI runs as root)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


# -- read-only ------------------------------------------------------------------------------


def test_read_only_database_file_serves_reads_and_refuses_runs(engine: Engine) -> None:
    run_id = engine.good_run()
    before = engine.snapshot()
    reads = [("runs",), ("show", run_id), ("trace", run_id), ("audit", run_id)]
    expected = {command: engine(*command).stdout for command in reads}
    engine.db.chmod(0o444)
    user = Engine(engine.db, unprivileged=True)
    try:
        assert_fault(user("run", DEMO, "--approval", "auto"), engine.db, "read-only")
        assert_fault(user("resume", run_id), engine.db, "read-only")
        for command in reads:
            proc = user(*command)
            assert proc.returncode == 0 and not proc.stderr, proc.stderr
            assert proc.stdout == expected[command]
        assert user.json("show", run_id) == before[run_id]
        assert user.orphans() == []
        # nothing left behind that keeps the database read-only once it is writable again
        assert sorted(p.name for p in engine.db.parent.iterdir()) == [
            "engine.db", "traces", "workspaces"]
    finally:
        engine.db.chmod(0o644)
    user.good_run()
    assert_intact(engine, before)


def test_read_only_database_and_folder_serve_reads(engine: Engine) -> None:
    run_id = engine.good_run()
    before = engine.snapshot()
    listing = sorted(p.name for p in engine.db.parent.iterdir())
    engine.db.chmod(0o444)
    engine.db.parent.chmod(0o555)
    user = Engine(engine.db, unprivileged=True)
    try:
        assert [r["run_id"] for r in user.json("runs")] == list(before)
        assert user.json("show", run_id) == before[run_id]
        for command in (("trace", run_id), ("audit", run_id), ("check",)):
            proc = user(*command)
            assert proc.returncode == 0 and not proc.stderr, proc.stderr
        assert_fault(user("run", DEMO, "--approval", "auto"), engine.db, "read-only")
        assert sorted(p.name for p in engine.db.parent.iterdir()) == listing
    finally:
        engine.db.parent.chmod(0o755)
        engine.db.chmod(0o644)
    assert engine.orphans() == []
    assert_intact(engine, before)


# -- corruption -----------------------------------------------------------------------------


def _damage_page_of(db: Path, table: str, run_id: str, other: str) -> int:
    """Overwrite a leaf page of ``table`` that holds rows of ``run_id`` and none of ``other``."""
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [r[0] for r in conn.execute(
        "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
    conn.close()  # the last connection: the WAL is folded into the file
    data = db.read_bytes()
    for page in leaves:
        raw = data[(page - 1) * page_size:page * page_size]
        if run_id.encode() in raw and other.encode() not in raw:
            with db.open("r+b") as f:
                f.seek((page - 1) * page_size)
                f.write(b"\xff" * page_size)
            return int(page)
    raise AssertionError(f"no leaf page of {table} holds only run {run_id}'s rows")


def test_corrupted_page_is_reported_with_the_run_and_what_is_readable(engine: Engine) -> None:
    good = engine.good_run()
    crashed = engine("run", DEMO, "--approval", "auto",
                     env={"ENGINE_FAULTS": "crash_after:exec_tool:3"})
    assert crashed.returncode != 0
    damaged = engine.json("runs")[-1]["run_id"]
    before = engine.snapshot()
    assert before[damaged]["status"] == "crashed"
    _damage_page_of(engine.db, "messages", damaged, good)

    line = assert_fault(engine("show", damaged), engine.db, damaged, "corrupted")
    assert "unreadable: messages;" in line and "still readable: runs, steps" in line
    assert_fault(engine("resume", damaged), engine.db, damaged, "corrupted")
    check = engine("check")
    assert_fault(check, engine.db, "quick_check")
    report = json.loads(engine("check", "--json").stdout)
    assert report["ok"] is False and report["problems"]
    assert [r["run_id"] for r in engine.json("runs")] == [good, damaged]
    assert_intact(engine, {good: before[good]})


def test_check_passes_on_a_sound_database(engine: Engine) -> None:
    engine.good_run()
    proc = engine("check")
    assert proc.returncode == 0 and "ok" in proc.stdout and not proc.stderr
    assert json.loads(engine("check", "--json").stdout) == {
        "database": str(engine.db), "ok": True, "problems": [], "damaged_runs": []}


def test_newer_schema_is_refused_in_one_line_and_left_untouched(engine: Engine) -> None:
    engine.good_run()
    before = engine.snapshot()
    conn = sqlite3.connect(engine.db)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.execute(f"PRAGMA user_version={version + 1}")
    conn.close()
    data = engine.db.read_bytes()
    for command in (("runs",), ("run", DEMO, "--approval", "auto"), ("check",)):
        assert_fault(engine(*command), engine.db, "newer than this Turnstile")
    assert engine.db.read_bytes() == data
    conn = sqlite3.connect(engine.db)
    conn.execute(f"PRAGMA user_version={version}")
    conn.close()
    assert engine.orphans() == []
    assert_intact(engine, before)


# -- disk full ------------------------------------------------------------------------------


def test_disk_full_mid_run_exits_2_and_resumes_after_space_is_freed(
        small_fs: Path, tmp_path: Path) -> None:
    engine = Engine(small_fs / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    task = golden_task(tmp_path / "fill",
                       "echo ran >> count.txt; head -c 50000000 /dev/zero > fill.bin")

    line = assert_fault(engine("run", DEMO, "--golden", str(task)), engine.db, "disk full")
    run = engine.json("runs")[-1]
    assert run["run_id"] in line and "python -m engine resume" in line
    assert run["status"] in ("interrupted", "crashed")
    workspace = Path(run["workspace"])
    (workspace / "fill.bin").unlink()  # free the space

    resumed = engine("resume", run["run_id"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert engine.json("show", run["run_id"])["status"] == "completed"
    assert (workspace / "count.txt").read_text() == "ran\n"  # the shell call ran once
    assert_intact(engine, before)


# -- another process holds the write lock ---------------------------------------------------


def test_lock_held_at_start_exits_2_and_leaves_nothing(engine: Engine) -> None:
    engine.good_run()
    before = engine.snapshot()
    with write_lock_held(engine.db):
        proc = engine("run", DEMO, "--approval", "auto")
        assert engine.orphans() == []
    assert_fault(proc, engine.db, "write lock", "more than 1 s")
    assert list(engine.snapshot()) == list(before)
    assert_intact(engine, before)


def test_lock_held_mid_run_exits_2_and_resumes_once_released(engine: Engine,
                                                             tmp_path: Path) -> None:
    engine.good_run()
    before = engine.snapshot()
    task = golden_task(tmp_path / "wait", "echo ran >> count.txt; touch ready; "
                       "while [ ! -e go ]; do sleep 0.05; done")
    workspaces = engine.db.parent / "workspaces"
    run = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", DEMO, "--golden", str(task), "--db",
         str(engine.db)], cwd=ROOT, env=engine_env({"ENGINE_BUSY_TIMEOUT": "1"}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        ready = _wait_for(lambda: next(workspaces.glob("*/ready"), None))
        with write_lock_held(engine.db):
            (ready.parent / "go").touch()  # the shell call ends; its result cannot be written
            stdout, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    proc = subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr)
    run_id = ready.parent.name
    assert_fault(proc, engine.db, "write lock", run_id, "python -m engine resume")
    assert engine.json("show", run_id)["status"] in ("interrupted", "crashed")

    resumed = engine("resume", run_id)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert engine.json("show", run_id)["status"] == "completed"
    assert (ready.parent / "count.txt").read_text() == "ran\n"  # not repeated on resume
    assert_intact(engine, before)


def _wait_for(find: Any, timeout: float = 60.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found is not None:
            return Path(found)
        time.sleep(0.05)
    raise AssertionError("the run never reached its shell call")


# -- concurrency and leftovers ----------------------------------------------------------------


STARTER = """
import os, sys, time
import engine.session.compose, engine.store.sqlite
from engine.cli.main import main
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
sys.exit(main(sys.argv[2:]))
"""
"""``python -m engine`` with its imports done first, started when a file appears: the 20 runs
open the new database within a millisecond or two of each other, not spread over start-up."""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_twenty_runs_started_at_once_on_a_new_database(engine: Engine, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [subprocess.Popen(
        [sys.executable, "-c", STARTER, str(go), "run", DEMO, "--approval", "auto", "--db",
         str(engine.db)], cwd=ROOT, env=engine_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) for _ in range(20)]
    time.sleep(3)  # every process is waiting at the line
    assert not engine.db.exists()
    go.touch()
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, errors
    assert "Traceback" not in "".join(errors)
    runs = engine.json("runs")
    assert len(runs) == 20 and {r["status"] for r in runs} == {"completed"}
    assert engine.orphans() == []


def test_failure_after_the_fixture_copy_leaves_no_workspace(engine: Engine,
                                                            tmp_path: Path) -> None:
    engine.good_run()
    before = engine.snapshot()
    task = golden_task(tmp_path / "bad_setup", "true", setup=["echo broken >&2; exit 3"])
    proc = engine("run", DEMO, "--golden", str(task))
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "setup[1]" in proc.stderr and "exit code 3" in proc.stderr
    assert engine.orphans() == []
    assert len(list((engine.db.parent / "workspaces").iterdir())) == len(before)
    assert list(engine.snapshot()) == list(before)
    assert_intact(engine, before)
