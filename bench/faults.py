"""Issue 14's fault table, re-run from outside: what each fault now prints, as a user meets it.

    .venv/bin/python bench/faults.py [--json [FILE]] [--rows ID,ID,...]

Every row drives ``python -m engine`` in a subprocess (``sys.executable``), in a folder of its
own under one temporary directory, with its output piped (or on a pseudo-terminal where the
fault needs one), and reports: the exit code, the status of the run concerned afterwards, the
stderr line(s), whether a traceback showed anywhere, and whether the runs made before the fault
still read back exactly as before (``show --json`` of each, compared). A measurement, not a test:
nothing is asserted; a row whose set-up fails prints its error in the table and the others go on.
The disk-full row mounts a 4 MB tmpfs, so it needs root (it says so otherwise); as root, the
read-only rows drop the capabilities that let root ignore file permissions.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import pty
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MACHINE = str(ROOT / "machines" / "coding_agent.yaml")
DEMO_TASK = ROOT / "golden_tasks" / "demo_fix_test"
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CELL_CHARS = 600
"""Longest cell: room for a full error line (temporary paths are shortened)."""

LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""
"""Another process holding the database's write lock until its stdin closes."""

STARTER = """
import os, sys, time
import engine.session.compose, engine.store.sqlite
from engine.cli.main import main
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
sys.exit(main(sys.argv[2:]))
"""
"""``python -m engine ARGS`` with its imports done first, released when a file appears: twenty
of them open the new database within a millisecond or two, not spread over start-up."""

ALIAS_BOMB = "\n".join(
    ["- text: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"- text: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "\n"
"""A billion-laughs turns file: 10^9 strings once its aliases are expanded."""


# -- one result per table line -----------------------------------------------------------------


@dataclass
class Result:
    """One line of the table."""

    row: str
    fault: str
    exit: int | str | None = None
    status: str = "-"
    stderr: str = ""
    traceback: bool | None = None
    intact: bool | None = None
    measured: str = ""


@dataclass
class Outcome:
    """A finished ``python -m engine`` process: exit code, output, wall time, peak memory."""

    code: int
    stdout: str
    stderr: str
    seconds: float = 0.0
    max_rss_mb: float = 0.0

    @property
    def traceback(self) -> bool:
        return has_traceback(self.stdout, self.stderr)


def has_traceback(*texts: str) -> bool:
    """A traceback of ours (lines after "│" are a shell command's own output, shown as is)."""
    return any("Traceback" in line and "│" not in line
               for text in texts for line in text.splitlines())


def _without_root_override() -> None:
    """In the child, as root: drop the capabilities that ignore file permissions, so a file
    made read-only is read-only to the engine as it is to any other user."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def engine_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without a model, faults or database override; no colour."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB", "ENGINE_BUSY_TIMEOUT")
           and not k.startswith("OTEL_")}
    return {**env, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **(extra or {})}


def engine_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine", *args]


def _read(f: IO[bytes]) -> str:
    f.seek(0)
    return f.read().decode(errors="replace")


def measured_run(cmd: Sequence[str], *, env: dict[str, str], timeout: float = 300,
                 unprivileged: bool = False) -> Outcome:
    """Run ``cmd`` to its end; ``os.wait4`` gives this one child's own peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err,
                                preexec_fn=_without_root_override if unprivileged else None)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        return Outcome(proc.returncode, _read(out), _read(err), time.perf_counter() - started,
                       usage.ru_maxrss / 1024)


class Engine:
    """``python -m engine ... --db DB`` and what a row reads back from that database."""

    def __init__(self, db: Path, env: dict[str, str] | None = None) -> None:
        self.db = db
        self.env = env or {}

    def __call__(self, *args: str, unprivileged: bool = False, env: dict[str, str] | None = None,
                 timeout: float = 300) -> Outcome:
        return measured_run(engine_cmd(*args, "--db", str(self.db)),
                            env=engine_env({**self.env, **(env or {})}), timeout=timeout,
                            unprivileged=unprivileged)

    def json(self, *args: str) -> Any:
        out = self(*args, "--json")
        if out.code != 0:
            raise RuntimeError(f"{' '.join(args)} --json: exit {out.code}: {out.stderr.strip()}")
        return json.loads(out.stdout)

    def good_run(self) -> str:
        """A completed demo run: the earlier run every fault must leave as it was."""
        out = self("run", MACHINE, "--approval", "auto")
        if out.code != 0:
            raise RuntimeError(f"the earlier demo run failed (exit {out.code}): "
                               f"{out.stderr.strip()[-300:]}")
        return str(self.json("runs")[-1]["run_id"])

    def snapshot(self) -> dict[str, Any]:
        return {r["run_id"]: self.json("show", r["run_id"]) for r in self.json("runs")}

    def intact(self, before: dict[str, Any]) -> bool:
        """Every run of ``before`` still listed and reading back exactly as it did."""
        try:
            listed = {r["run_id"] for r in self.json("runs")}
            return all(run_id in listed and self.json("show", run_id) == shown
                       for run_id, shown in before.items())
        except (RuntimeError, ValueError):
            return False

    def run_ids(self) -> list[str]:
        if not self.db.exists():
            return []
        conn = sqlite3.connect(self.db)
        try:
            return [r for (r,) in conn.execute("SELECT run_id FROM runs ORDER BY rowid")]
        finally:
            conn.close()

    def status_of_new(self, before: dict[str, Any] | Sequence[str]) -> str:
        """The status of the run this row created, or "no new run"."""
        new = [r for r in self.run_ids() if r not in before]
        return self.status(new[-1]) if new else "no new run"

    def statuses(self) -> dict[str, str]:
        """Each run's status as ``runs --json`` shows it (a ``running`` row whose process is
        gone is shown as the user will meet it); the raw column where ``runs`` fails."""
        try:
            return {r["run_id"]: str(r["status"]) for r in self.json("runs")}
        except (RuntimeError, ValueError):
            conn = sqlite3.connect(self.db)
            try:
                return {r: f"{st} (raw row; `runs` failed)"
                        for r, st in conn.execute("SELECT run_id, status FROM runs")}
            finally:
                conn.close()

    def status(self, run_id: str) -> str:
        return self.statuses().get(run_id, "not listed")

    def orphans(self) -> list[str]:
        """Workspace folders with no run: what a failed start must not leave behind."""
        folder = self.db.parent / "workspaces"
        runs = set(self.run_ids())
        return sorted(p.name for p in folder.iterdir() if p.name not in runs) \
            if folder.exists() else []


def result(row: str, fault: str, out: Outcome, *, status: str = "-", intact: bool | None = None,
           measured: str = "") -> Result:
    return Result(row, fault, out.code, status, out.stderr, out.traceback, intact, measured)


def golden_task(folder: Path, command: str, *, setup: list[str] | None = None) -> Path:
    """A one-shell-call golden task (scripted model): the call, then a final answer."""
    (folder / "fixture").mkdir(parents=True)
    (folder / "fixture" / "README.txt").write_text("fixture\n")
    task: dict[str, Any] = {"prompt": "Run the command.", "approval": "auto", "policy": None}
    if setup:
        task["setup"] = setup
    (folder / "task.yaml").write_text(json.dumps(task))
    turns = [{"text": "Running it.",
              "tool_calls": [{"name": "run_shell", "args": {"command": command}}]},
             {"text": "Done."}]
    (folder / "turns.yaml").write_text(json.dumps(turns))
    return folder


def demo_task(folder: Path, turns: str | bytes) -> Path:
    """The bundled demo task with its ``turns.yaml`` replaced."""
    task = folder / "task"
    shutil.copytree(DEMO_TASK, task)
    if isinstance(turns, bytes):
        (task / "turns.yaml").write_bytes(turns)
    else:
        (task / "turns.yaml").write_text(turns)
    return task


def wait_for(find: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found:
            return found
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


@contextlib.contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """Another process holds ``db``'s write lock (``BEGIN EXCLUSIVE``) inside the block."""
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "locked":
            raise RuntimeError("the locking process could not take the write lock")
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        raise RuntimeError(f"needs root ({what})")


# -- a pseudo-terminal, for the rows a person meets at a prompt -----------------------------------


class Terminal:
    """``python -m engine ARGS`` on a pty in its own session: read what it shows, press Ctrl-C."""

    def __init__(self, args: Sequence[str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(engine_cmd(*args), cwd=ROOT,
                                     env=engine_env({"COLUMNS": "200"}), stdin=slave,
                                     stdout=slave, stderr=slave, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            ended = not self._read(0.2) and self.proc.poll() is not None
            if ended or time.monotonic() > deadline:
                raise RuntimeError(f"{text!r} never shown: {self.screen[-300:]!r}")

    def ctrl_c(self) -> None:
        """What the terminal does on Ctrl-C: SIGINT to the foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def wait(self, timeout: float) -> int | str:
        try:
            code: int | str = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = f"still waiting after {timeout:g} s (killed)"
        while self._read(0.1):
            pass
        os.close(self.master)
        return code

    def _read(self, wait_s: float) -> bool:
        if not select.select([self.master], [], [], wait_s)[0]:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            return False
        self.screen += ANSI.sub("", chunk.decode(errors="replace").replace("\r\n", "\n"))
        return bool(chunk)


def after_prompt(screen: str, prompt: str = "Allow run_shell?") -> str:
    """What the terminal showed after the prompt line (the Ctrl-C's outcome)."""
    shown = screen[screen.rfind(prompt):].partition("\n")[2] if prompt in screen else screen
    return next((line for line in shown.splitlines() if line.strip()), "")


def line_with(text: str, word: str) -> str:
    return next((line.strip() for line in text.splitlines() if word in line), "")


def interrupt_at_prompt(engine: Engine) -> tuple[int | str, str, float]:
    """The demo at a terminal, Ctrl-C at its first approval prompt: exit, screen, seconds."""
    term = Terminal(["run", MACHINE, "--db", str(engine.db)])
    try:
        term.expect("Allow run_shell?")
    except RuntimeError:
        term.proc.kill()
        term.wait(timeout=15)
        raise
    started = time.monotonic()
    term.ctrl_c()
    code = term.wait(timeout=15)
    return code, term.screen, time.monotonic() - started


# -- the rows ----------------------------------------------------------------------------------


def read_only_file(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    done = engine.good_run()
    before = engine.snapshot()
    engine.db.chmod(0o444)
    try:
        run = engine("run", MACHINE, "--approval", "auto", unprivileged=True)
        resume = engine("resume", done, unprivileged=True)
        orphans = engine.orphans()
    finally:
        engine.db.chmod(0o644)
    fault = "database file read-only (directory writable)"
    return [result("read_only_file", f"{fault}: `run`", run, status=engine.status_of_new(before),
                   intact=engine.intact(before), measured=f"orphan workspaces: {len(orphans)}"),
            result("read_only_file", f"{fault}: `resume` of a completed run", resume,
                   status=engine.status(done), intact=engine.intact(before))]


def read_only_dir(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    done = engine.good_run()
    before = engine.snapshot()
    engine.db.chmod(0o444)
    engine.db.parent.chmod(0o555)
    try:
        runs = engine("runs", unprivileged=True)
        show = engine("show", done, unprivileged=True)
    finally:
        engine.db.parent.chmod(0o755)
        engine.db.chmod(0o644)
    fault = "database and directory read-only"
    listed = f"{len(runs.stdout.splitlines()) - 1} run(s) listed" if runs.code == 0 else ""
    return [result("read_only_dir", f"{fault}: `runs`", runs, intact=engine.intact(before),
                   measured=listed),
            result("read_only_dir", f"{fault}: `show` of a run", show, status=engine.status(done),
                   intact=engine.intact(before))]


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
    raise RuntimeError(f"no leaf page of {table} holds only run {run_id}'s rows")


def corrupt_page(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    good = engine.good_run()
    engine("run", MACHINE, "--approval", "auto", env={"ENGINE_FAULTS": "crash_after:exec_tool:3"})
    damaged = engine.run_ids()[-1]
    kept = {good: engine.json("show", good)}
    page = _damage_page_of(engine.db, "messages", damaged, good)
    fault = f"a corrupted page (page {page}, messages of the crashed run)"
    show = engine("show", damaged)
    resume = engine("resume", damaged)
    check = engine("check")
    return [result("corrupt_page", f"{fault}: `show` of that run", show,
                   status=engine.status(damaged), intact=engine.intact(kept)),
            result("corrupt_page", f"{fault}: `resume` of that run", resume,
                   status=engine.status(damaged), intact=engine.intact(kept)),
            result("corrupt_page", f"{fault}: `check`", check, intact=engine.intact(kept))]


def disk_full(lab: Path) -> list[Result]:
    need_root("mounts a 4 MB tmpfs")
    mount = lab / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True,
                   capture_output=True)
    try:
        engine = Engine(mount / "engine.db")
        engine.good_run()
        before = engine.snapshot()
        task = golden_task(lab / "fill", "echo ran >> count.txt; "
                           "head -c 50000000 /dev/zero > fill.bin")
        run = engine("run", MACHINE, "--golden", str(task))
        new = [r for r in engine.run_ids() if r not in before]
        fault = "disk full while a run writes (4 MB tmpfs)"
        if not new:
            return [result("disk_full", fault, run, status="no new run",
                           intact=engine.intact(before))]
        run_id = new[-1]
        status = engine.status(run_id)
        workspace = Path(engine.json("show", run_id)["workspace"])
        (workspace / "fill.bin").unlink(missing_ok=True)  # free the space
        resume = engine("resume", run_id)
        count = workspace / "count.txt"
        ran = count.read_text().count("ran") if count.exists() else 0
        return [result("disk_full", fault, run, status=status, intact=engine.intact(before)),
                result("disk_full", "disk full: `resume` after the space is freed", resume,
                       status=engine.status(run_id), intact=engine.intact(before),
                       measured=f"shell effect ran {ran} time(s)")]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)


def lock_held(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db", env={"ENGINE_BUSY_TIMEOUT": "1"})
    engine.good_run()
    before = engine.snapshot()
    with write_lock_held(engine.db):
        start = engine("run", MACHINE, "--approval", "auto")
        orphans = engine.orphans()
    rows = [result("lock_held", "write lock held beyond the busy timeout (1 s): at start",
                   start, status=engine.status_of_new(before), intact=engine.intact(before),
                   measured=f"orphan workspaces: {len(orphans)}")]
    mid, run_id, workspace = _locked_mid_run(engine, lab)
    rows.append(result("lock_held", "write lock held beyond the busy timeout (1 s): mid-run",
                       mid, status=engine.status(run_id), intact=engine.intact(before)))
    resume = engine("resume", run_id)
    count = workspace / "count.txt"
    ran = count.read_text().count("ran") if count.exists() else 0
    rows.append(result("lock_held", "write lock: `resume` once it is released", resume,
                       status=engine.status(run_id), intact=engine.intact(before),
                       measured=f"shell effect ran {ran} time(s)"))
    return rows


def _locked_mid_run(engine: Engine, lab: Path) -> tuple[Outcome, str, Path]:
    """A run whose shell call waits; the lock is taken, then the call ends and must record."""
    task = golden_task(lab / "wait", "echo ran >> count.txt; touch ready; "
                       "while [ ! -e go ]; do sleep 0.05; done")
    workspaces = engine.db.parent / "workspaces"
    proc = subprocess.Popen(engine_cmd("run", MACHINE, "--golden", str(task), "--db",
                                       str(engine.db)), cwd=ROOT, env=engine_env(engine.env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        ready = wait_for(lambda: next(workspaces.glob("*/ready"), None), "the shell call")
        with write_lock_held(engine.db):
            (ready.parent / "go").touch()  # the shell call ends; its result cannot be written
            stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Outcome(proc.returncode, stdout, stderr), ready.parent.name, ready.parent


def piped_head(lab: Path) -> list[Result]:
    """``engine run | head -1``: one line read, then the reader is gone."""
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    proc = subprocess.Popen(engine_cmd("run", MACHINE, "--approval", "policy", "--db",
                                       str(engine.db)), cwd=ROOT, env=engine_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        out = Outcome(proc.wait(timeout=300), first, err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return [result("piped_head", "output piped into `head -1` (broken pipe)", out,
                   status=engine.status_of_new(before), intact=engine.intact(before),
                   measured=f"head read: {first.strip().replace(f'{ROOT}/', '')[:80]!r}")]


def alias_bomb(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    task = demo_task(lab, ALIAS_BOMB)
    out = engine("run", MACHINE, "--golden", str(task), timeout=120)
    return [result("alias_bomb", "an alias bomb in a golden task's turns.yaml", out,
                   status=engine.status_of_new(before), intact=engine.intact(before),
                   measured=f"{out.seconds:.1f} s, peak RSS {out.max_rss_mb:.0f} MB")]


def ctrl_c_twice(lab: Path) -> list[Result]:
    """Two Ctrl-C (SIGINT to the process group) while a shell command sleeps, at three gaps:
    the second one lands at different points of the shutdown."""
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    rows = []
    for gap_s in GAPS_S:
        before = engine.snapshot()  # the runs of the earlier gaps included
        out, after_s = _interrupted_twice(engine, lab / f"gap{gap_s:g}", gap_s)
        rows.append(result("ctrl_c_twice", f"two Ctrl-C during a shell command "
                           f"({gap_s * 1000:.0f} ms apart)", out,
                           status=engine.status_of_new(before), intact=engine.intact(before),
                           measured=f"ended {after_s:.1f} s after the 2nd; stdout: "
                                    f"{line_with(out.stdout, 'interrupted run')[:110]!r}"))
    return rows


GAPS_S = (0.0, 0.05, 0.3)


def _interrupted_twice(engine: Engine, folder: Path, gap_s: float) -> tuple[Outcome, float]:
    workspace = folder / "ws"
    workspace.mkdir(parents=True)
    turns = folder / "turns.yaml"
    turns.write_text("- tool_calls: [{name: run_shell, args: {command: "
                     "'touch started; sleep 30; echo slept'}}]\n- text: done\n")
    proc = subprocess.Popen(
        engine_cmd("run", MACHINE, "--task", "sleep", "--workspace", str(workspace), "--model",
                   f"scripted:{turns}", "--approval", "auto", "--db", str(engine.db)),
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        wait_for((workspace / "started").exists, "the shell command to start")
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(gap_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        started = time.monotonic()
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Outcome(proc.returncode, stdout, stderr), time.monotonic() - started


def ctrl_c_prompt(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    code, screen, seconds = interrupt_at_prompt(engine)
    shown = "(terminal, 1st line after the prompt) " + after_prompt(screen)
    return [Result("ctrl_c_prompt", "Ctrl-C while an approval prompt waits (pty)", code,
                   engine.status_of_new(before), shown,
                   has_traceback(screen), engine.intact(before),
                   f"returned {seconds:.1f} s after Ctrl-C")]


def twenty_runs(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    go = lab / "go"
    procs = [subprocess.Popen(
        [sys.executable, "-c", STARTER, str(go), "run", MACHINE, "--approval", "auto", "--db",
         str(engine.db)], cwd=ROOT, env=engine_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) for _ in range(20)]
    try:
        time.sleep(3)  # every process is waiting at the line
        started = time.monotonic()
        go.touch()
        errors = [p.communicate(timeout=600)[1] for p in procs]
        seconds = time.monotonic() - started
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    codes = Counter(p.returncode for p in procs)
    statuses = Counter(engine.statuses().values()) if engine.db.exists() else Counter()
    lines = sorted({line for e in errors for line in e.splitlines() if line.strip()})
    return [Result("twenty_runs", "20 runs started at once on a new database",
                   ", ".join(f"{c} x{n}" for c, n in sorted(codes.items())),
                   ", ".join(f"{s} x{n}" for s, n in sorted(statuses.items())) or "no runs",
                   "\n".join(lines), has_traceback(*errors), None,
                   f"{codes.get(0, 0)}/20 exit 0 in {seconds:.0f} s; "
                   f"orphan workspaces: {len(engine.orphans())}")]


def orphan_workspace(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    task = golden_task(lab / "bad_setup", "true", setup=["echo broken >&2; exit 3"])
    out = engine("run", MACHINE, "--golden", str(task))
    folders = len(list((engine.db.parent / "workspaces").iterdir()))
    return [result("orphan_workspace", "a failure after the fixture copy, before the run row "
                   "(a failing setup command)", out, status=engine.status_of_new(before),
                   intact=engine.intact(before),
                   measured=f"orphan workspaces: {len(engine.orphans())} "
                            f"({folders} folders, {len(engine.run_ids())} runs)")]


def big_line(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    task = demo_task(lab, "")
    with (task / "turns.yaml").open("wb") as f:  # in pieces: a 50 MB bytes object here would
        f.write(b"- text: '")  # count in the child's peak RSS (a fork starts as our copy)
        for _ in range(50):
            f.write(b"x" * 1_000_000)
        f.write(b"'\n")
    out = engine("run", MACHINE, "--golden", str(task), timeout=600)
    rows = [result("big_line", "a 50 MB line in turns.yaml", out,
                   status=engine.status_of_new(before), intact=engine.intact(before),
                   measured=f"{out.seconds:.1f} s, peak RSS {out.max_rss_mb:.0f} MB")]
    return [*rows, _over_max_tokens(engine, lab / "tokens", before)]


def _over_max_tokens(engine: Engine, folder: Path, before: dict[str, Any]) -> Result:
    """A 2 MB turn (about 500,000 tokens, under the file limit) against ``max_tokens: 20000``:
    the run stops before the turn commits (it used to keep it, 30 times over the limit)."""
    folder.mkdir()
    task = demo_task(folder, f"- text: '{'x' * 2_000_000}'\n"
                             "  tool_calls: [{name: run_shell, args: {command: 'touch marker'}}]\n"
                             "- text: done\n")
    (task / "task.yaml").write_text((task / "task.yaml").read_text()
                                    + "limits: {max_tokens: 20000}\n")
    (task / "policy.yaml").write_text("default: allow\n")
    out = engine("run", MACHINE, "--golden", str(task), timeout=600)
    new = [r for r in engine.run_ids() if r not in before]
    run = engine.json("show", new[-1]) if new else {}
    kept = run.get("input_tokens", 0) + run.get("output_tokens", 0)
    marker = Path(run["workspace"], "marker").exists() if run.get("workspace") else False
    return result("big_line", "a 2 MB line in turns.yaml with `max_tokens: 20000`", out,
                  status=engine.status_of_new(before), intact=engine.intact(before),
                  measured=f"{out.seconds:.1f} s, peak RSS {out.max_rss_mb:.0f} MB; run error: "
                           f"{str(run.get('error'))[:130]!r}; tokens kept {kept}; its tool "
                           f"call ran: {'yes' if marker else 'no'}")


def resume_no_tty(lab: Path) -> list[Result]:
    """Fresh machine: ``resume RUN_ID < /dev/null`` of a run started at a terminal."""
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    code, _, _ = interrupt_at_prompt(engine)
    if code != 3:
        raise RuntimeError(f"the interactive run was not interrupted at its prompt: exit {code}")
    run_id = engine.run_ids()[-1]
    before = {r: engine.json("show", r) for r in engine.run_ids()[:-1]}
    out = engine("resume", run_id)  # stdin is /dev/null
    mode = [line.strip() for line in out.stdout.splitlines() if "terminal" in line]
    deciders = sorted({a["decided_by"] for a in engine.json("audit", run_id)})
    return [result("resume_no_tty", "`resume RUN_ID < /dev/null` of an interactive run", out,
                   status=engine.status(run_id), intact=engine.intact(before),
                   measured=f"says: {mode[0] if mode else '(no mode line)'!r}; "
                            f"audit decided_by: {', '.join(deciders)}")]


def workspace_golden(lab: Path) -> list[Result]:
    engine = Engine(lab / "db" / "engine.db")
    engine.good_run()
    before = engine.snapshot()
    missing = lab / "nowhere"
    out = engine("run", MACHINE, "--golden", str(DEMO_TASK), "--workspace", str(missing))
    return [result("workspace_golden", "`--workspace DIR` with `--golden` (DIR missing)", out,
                   status=engine.status_of_new(before), intact=engine.intact(before),
                   measured=f"DIR created: {'yes' if missing.exists() else 'no'}")]


ROWS: dict[str, Callable[[Path], list[Result]]] = {
    "read_only_file": read_only_file,
    "read_only_dir": read_only_dir,
    "corrupt_page": corrupt_page,
    "disk_full": disk_full,
    "lock_held": lock_held,
    "piped_head": piped_head,
    "alias_bomb": alias_bomb,
    "ctrl_c_twice": ctrl_c_twice,
    "ctrl_c_prompt": ctrl_c_prompt,
    "twenty_runs": twenty_runs,
    "orphan_workspace": orphan_workspace,
    "big_line": big_line,
    "resume_no_tty": resume_no_tty,
    "workspace_golden": workspace_golden,
}
"""Issue 14's table in its order, then the fresh-machine rows."""


# -- running and printing ----------------------------------------------------------------------


def run_row(name: str, tmp: Path) -> list[Result]:
    """One row in a folder of its own; an error in its set-up becomes its table line."""
    lab = tmp / name
    lab.mkdir()
    started = time.monotonic()
    print(f"-- {name}", file=sys.stderr, flush=True)
    try:
        rows = ROWS[name](lab)
    except Exception as exc:  # a measurement: report it and go on with the other rows
        rows = [Result(name, name, "-", "-", f"ROW ERROR: {type(exc).__name__}: {exc}")]
    print(f"   {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def cell(text: str, tmp: Path) -> str:
    """One Markdown cell: temporary paths shortened, lines joined, pipes escaped, trimmed."""
    text = text.replace(str(tmp), "$TMP").replace(f"{ROOT}/", "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    joined = " / ".join(lines) if lines else "(nothing)"
    if len(joined) > CELL_CHARS:
        joined = joined[:CELL_CHARS - 1] + "…"
    return joined.replace("|", "\\|")


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def markdown(results: Sequence[Result], tmp: Path) -> str:
    head = ["fault", "exit code", "run status afterwards", "what stderr printed",
            "traceback?", "earlier runs intact", "measured"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        printed = f"`{cell(r.stderr, tmp)}`" if r.stderr.strip() else "(nothing)"
        cells = [cell(r.fault, tmp), str(r.exit), r.status, printed, yes_no(r.traceback),
                 yes_no(r.intact), cell(r.measured, tmp) if r.measured else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "?"


def parse_rows(text: str | None) -> list[str]:
    names = list(ROWS) if not text else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        raise SystemExit(f"faults.py: unknown row(s) {', '.join(unknown)}; rows: {', '.join(ROWS)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="print the results as JSON (or write them to FILE)")
    parser.add_argument("--rows", metavar="ID,ID", help=f"only these rows: {', '.join(ROWS)}")
    args = parser.parse_args(argv)
    names = parse_rows(args.rows)
    tmp = Path(tempfile.mkdtemp(prefix="faults-"))
    try:
        results = [r for name in names for r in run_row(name, tmp)]
        table = markdown(results, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    title = (f"Issue 14's faults re-run at commit {commit()} on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ($TMP = a temporary folder "
             f"per row)")
    data = {"commit": commit(), "rows": [asdict(r) for r in results], "markdown": table}
    if args.json == "-":
        print(json.dumps(data, indent=2, default=str))
    else:
        print(f"{title}\n\n{table}")
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
