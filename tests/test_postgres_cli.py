"""The CLI on a PostgreSQL store (``--store postgresql://...``), through real subprocesses and a
throw-away cluster: the demo, every command that reads runs, a parked approval decided and
resumed, a run killed around a side effect and resumed, two resumers racing for the lease, and
store faults as one line with exit code 2.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, engine_env
from tests.pg_cluster import free_port
from tests.test_park import make_task
from tests.test_recovery import POINTS, _effects_done, _setup

STORE_COMMANDS = {"run", "resume", "runs", "show", "audit", "trace", "approvals", "approve",
                  "deny", "check"}
MACHINE = str(ROOT / "machines" / "coding_agent.yaml")


class PgCLI:
    """``python -m engine ...`` in its own folder, with ``--store URL`` on the store commands."""

    def __init__(self, cwd: Path, url: str) -> None:
        self.cwd = cwd
        self.url = url

    def __call__(self, *args: str, env: Mapping[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "engine", *args]
        if args and args[0] in STORE_COMMANDS:
            cmd += ["--store", self.url]
        return subprocess.run(cmd, cwd=self.cwd, env=engine_env(env), capture_output=True,
                              text=True, timeout=timeout)

    def json(self, *args: str, **kw: Any) -> Any:
        proc = self(*args, "--json", **kw)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)


def engine(cwd: Path, *args: str, env: Mapping[str, str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    """``python -m engine ARGS`` as given (no store added)."""
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, env=engine_env(env),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg(tmp_path: Path, pg_url: str) -> PgCLI:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return PgCLI(cwd, pg_url)


def test_demo_and_every_reading_command_on_postgres(pg: PgCLI) -> None:
    proc = pg("run", MACHINE, "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert info["status"] == "completed"
    run_id = info["run_id"]
    (listed,) = pg.json("runs")
    for key in ("run_id", "machine", "status", "state", "workspace", "created_at", "steps",
                "input_tokens", "output_tokens", "cost_usd"):
        assert listed[key] == info[key], key
    shown = pg.json("show", run_id)
    assert (shown["run_id"], shown["status"], shown["steps"]) == (run_id, "completed",
                                                                  info["steps"])
    assert shown["steps"] > 5
    text = pg("trace", run_id)
    assert text.returncode == 0 and run_id in text.stdout and "call_model" in text.stdout
    assert pg.json("trace", run_id)
    audit = pg.json("audit", run_id)
    assert audit and all(r["run_id"] == run_id for r in audit)
    assert any(r["tool"] == "run_shell" and r["decision"] == "allow" for r in audit)
    check = pg("check")
    assert check.returncode == 0 and "ok" in check.stdout, check.stderr
    # files beside the data: under .engine/ of the current directory; no SQLite file made
    assert Path(info["workspace"]) == (pg.cwd / ".engine" / "workspaces" / run_id).resolve()
    assert (pg.cwd / ".engine" / "traces" / f"{run_id}.json").is_file()
    assert not (pg.cwd / ".engine" / "engine.db").exists()


def test_store_url_from_the_environment_and_the_order_of_choices(pg: PgCLI) -> None:
    assert pg("run", MACHINE, "--quiet").returncode == 0
    env = {"ENGINE_STORE_URL": pg.url}
    by_env = engine(pg.cwd, "runs", "--json", env=env)
    assert len(json.loads(by_env.stdout)) == 1, by_env.stderr
    # --db wins over ENGINE_STORE_URL; --store wins over --db
    other = pg.cwd / "other.db"
    by_db = engine(pg.cwd, "runs", "--json", "--db", str(other), env=env)
    assert json.loads(by_db.stdout) == []
    both = pg("runs", "--json", "--db", str(other))
    assert len(json.loads(both.stdout)) == 1


def test_parked_approval_then_approve_resume_on_postgres(pg: PgCLI, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    proc = pg("run", MACHINE, "--golden", str(task), "--json")
    assert proc.returncode == 5, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert info["status"] == "waiting_approval"
    (row,) = pg.json("approvals")
    assert (row["run_id"], row["tool"]) == (info["run_id"], "edit_file")
    done = pg("approve", info["run_id"], row["call_id"], "--resume", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"approved call {row['call_id']}")
    assert json.loads(done.stdout[done.stdout.index("{"):])["status"] == "completed"
    assert pg.json("approvals") == []
    decided = [a for a in pg.json("audit", info["run_id"]) if a["call_id"] == row["call_id"]]
    assert [(a["decision"], a["decided_by"]) for a in decided] == [("allow", "cli")]
    assert decided[0]["args_digest"] == row["args_hash"]
    fixed = Path(info["workspace"]) / "inventory.py"
    assert "total += item.price * item.quantity" in fixed.read_text()
    again = pg("approve", info["run_id"], row["call_id"])
    assert again.returncode == 2 and "Traceback" not in again.stderr


def test_three_deciders_racing_exactly_one_wins_on_postgres(pg: PgCLI, tmp_path: Path) -> None:
    info = json.loads(pg("run", MACHINE, "--golden", str(make_task(tmp_path)), "--json").stdout)
    (row,) = pg.json("approvals")
    procs = [subprocess.Popen(
        [sys.executable, "-m", "engine", verb, info["run_id"], row["call_id"], "--store",
         pg.url], cwd=pg.cwd, env=engine_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for verb in ("approve", "deny", "approve")]
    results = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
    assert sorted(code for code, _ in results) == [0, 2, 2], results
    for code, err in results:
        if code == 2:
            assert err.count("\n") == 1 and "not pending" in err, err
    audit = [a for a in pg.json("audit", info["run_id"]) if a["call_id"] == row["call_id"]]
    assert len(audit) == 1


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("kind", ["shell_write", "file_write"])
def test_kill_9_around_an_effect_then_resume_on_postgres(pg: PgCLI, tmp_path: Path, kind: str,
                                                         point: str) -> None:
    """The ledger on PostgreSQL: killed before, during, after the effect or after it was
    recorded, then resumed; the effect happened once, or was reported unknown and not run."""
    ws, log, args = _setup(tmp_path, kind)
    killed = pg(*args, env={"ENGINE_FAULTS": f"{point}:exec_tool:1"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    (run,) = pg.json("runs")
    assert run["status"] == "crashed"  # running, and its lease holder is gone
    resumed = pg("resume", run["run_id"], "--json")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout)["status"] == "completed"
    resolved = pg.json("show", run["run_id"])["effects_resolved"]
    happened = _effects_done(ws, log, kind)
    if kind == "shell_write" and point == "crash_after_effect":
        assert happened == 1 and any("may or may not have run" in m for m in resolved)
    elif kind == "shell_write" and point == "crash_during":
        assert happened == 0 and any("not repeated" in m for m in resolved)
    else:
        assert happened == 1, (kind, point)
    if kind == "file_write":
        assert (ws / "out.txt").read_text() == "written once\n"
        if point == "crash_after_effect":
            assert any("already applied (hash matches)" in m for m in resolved)


def test_two_processes_resuming_at_once_exactly_one_proceeds(pg: PgCLI,
                                                               tmp_path: Path) -> None:
    ws, _log, args = _setup(tmp_path, "shell_write")
    (tmp_path / "turns.yaml").write_text(json.dumps([  # the command waits for the test's go
        {"tool_calls": [{"name": "run_shell", "args": {
            "command": "while [ ! -e go ]; do sleep 0.1; done; echo ok"}}]},
        {"text": "done"}]))
    assert pg(*args, env={"ENGINE_FAULTS": "crash_after:plan:1"}).returncode == -9
    (run,) = pg.json("runs")
    cmd = [sys.executable, "-m", "engine", "resume", run["run_id"], "--store", pg.url]
    procs = [subprocess.Popen(cmd, cwd=pg.cwd, env=engine_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    deadline = time.monotonic() + 90  # a hang guard
    while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)  # one ends (the loser, exit 2) while the other's command waits
    (ws / "go").touch()
    outs = [p.communicate(timeout=60) for p in procs]
    assert sorted(p.returncode for p in procs) == [0, 2], outs
    loser = next(err for p, (_, err) in zip(procs, outs, strict=True) if p.returncode == 2)
    assert "is being driven by pid" in loser and "Traceback" not in loser
    shown = pg.json("show", run["run_id"])
    assert shown["status"] == "completed"


@pytest.mark.parametrize(("url", "words"), [
    ("postgresql://postgres@127.0.0.1:1/nothing", "cannot reach the database server"),
    ("mysql://somewhere/db", "unknown kind of store"),
    ("sqlite://relative.db", "expected sqlite:///PATH"),
])
def test_unusable_store_urls_are_one_line_exit_2(tmp_path: Path, url: str, words: str) -> None:
    proc = engine(tmp_path, "runs", "--store", url)
    assert proc.returncode == 2
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_login_refused_and_missing_database_are_one_line(pg: PgCLI, pg_cluster: Any) -> None:
    stranger = pg.url.replace("postgresql://postgres@", "postgresql://nobody:s3cret@")
    proc = engine(pg.cwd, "runs", "--store", stranger)
    assert proc.returncode == 2 and "refused the login" in proc.stderr, proc.stderr
    assert "s3cret" not in proc.stderr  # the password is never printed
    missing = engine(pg.cwd, "runs", "--store", pg_cluster.url("no_such_db"))
    assert missing.returncode == 2 and "no such database" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_web_console_reads_a_postgres_store(pg: PgCLI, tmp_path: Path) -> None:
    done = json.loads(pg("run", MACHINE, "--json", "--quiet").stdout)
    parked = json.loads(pg("run", MACHINE, "--golden", str(make_task(tmp_path)), "--json").stdout)
    port = free_port()
    with_password = pg.url.replace("postgres@", "postgres:pw-not-shown@")  # trust: accepted
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--port", str(port),
                             "--store", with_password], cwd=pg.cwd, env=engine_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()[0]
                time.sleep(0.1)
        status, body = _get(base + "/api/runs")
        assert status == 200, body
        listed = {r["run_id"]: r["status"] for r in json.loads(body)}
        assert listed == {done["run_id"]: "completed", parked["run_id"]: "waiting_approval"}
        status, page = _get(f"{base}/runs/{parked['run_id']}")
        assert status == 200 and parked["run_id"] in page
        status, page = _get(base + "/approvals")
        assert status == 200 and parked["run_id"] in page
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0]
    assert "database postgresql://postgres@127.0.0.1" in out and "pw-not-shown" not in out


def test_eval_records_every_task_in_the_postgres_store(pg: PgCLI) -> None:
    """``eval --store URL``: the demo and a task whose first attempt is killed (a subprocess
    with ENGINE_FAULTS, then resumed in-process) both pass with every run kept in Postgres."""
    out = pg.cwd / "eval.json"
    proc = engine(pg.cwd, "eval", str(ROOT / "golden_tasks"), "-k", "demo_fix",
                  "--store", pg.url, "--json", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = engine(pg.cwd, "eval", str(ROOT / "golden_tasks"), "-k", "resume_after_crash",
                  "--json", "-", env={"ENGINE_STORE_URL": pg.url})
    assert proc.returncode == 0, proc.stderr[-2000:]
    (crash,) = json.loads(proc.stdout)["results"][0]["attempts"]
    assert crash["passed"] and crash["task"] == "resume_after_crash"
    runs = {r["run_id"]: r for r in pg.json("runs")}
    (demo,) = json.loads(out.read_text())["results"][0]["attempts"]
    assert {demo["run_id"], crash["run_id"]} <= set(runs)
    assert runs[crash["run_id"]]["status"] == "completed"
    assert (pg.cwd / ".engine" / "workspaces").is_dir()  # beside the data: under .engine/
