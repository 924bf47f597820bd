"""Operating the Temporal backend: what an operator meets around outages, through the CLI.

A real dev server (one per test where the test stops and restarts it, kept in a file so its
workflows outlive the restart), real worker processes, real SQLite files and a real PostgreSQL
cluster. Each test shows one line, a truthful exit code, and the run completed with every
effect once: a decision recorded while Temporal is down reaches the parked workflow once it is
back (the decision outbox); a resume of a run whose workflow runs attaches to it; a follower
stopped by SIGTERM, or one that loses Temporal or the store, says the run goes on (exit 6); a
run on a task queue no worker polls says so; a failed workflow's cause is stored in the run;
a worker in a namespace that does not exist is one line.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.temporal import devserver
from tests.conftest import ROOT, EngineCLI, engine_env
from tests.test_park import make_task
from tests.test_temporal import Workers

pytestmark = [pytest.mark.temporal, pytest.mark.timeout(300)]

POLL = {"ENGINE_DECISION_POLL_S": "0.5"}
"""A parked workflow reads the store for a decision every half second (30 s by default)."""


class OwnServer:
    """A dev server of the test's own, kept in a file: stopped and started on the same port,
    it still has its workflows."""

    def __init__(self, folder: Path) -> None:
        self.db, self.log = folder / "temporal.db", folder / "temporal.log"
        self.port = devserver.free_port()
        self.server = devserver.start(port=self.port, db_file=self.db, log=self.log)
        self.address = self.server.address

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        self.server = devserver.start(port=self.port, db_file=self.db, log=self.log)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[OwnServer]:
    server = OwnServer(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def _show(cli: EngineCLI, run_id: str, *store: str) -> dict:
    proc = cli("show", run_id, "--json", *store)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _wait_status(cli: EngineCLI, run_id: str, wanted: set[str], *store: str,
                 timeout: float = 120) -> dict:
    """Poll the run's row until its status is one of ``wanted`` (an event: the stored row)."""
    deadline = time.monotonic() + timeout
    info: dict = {}
    while time.monotonic() < deadline:
        info = _show(cli, run_id, *store)
        if info["status"] in wanted:
            return info
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not reach {wanted}: {info.get('status')}")


def _read_until(stream: object, needle: str, limit: int = 200) -> list[str]:
    """Lines of ``stream`` up to and including the first that holds ``needle``."""
    lines: list[str] = []
    for _ in range(limit):
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"{needle!r} never came: {''.join(lines)[-2000:]}")


def _popen(cli: EngineCLI, *args: str, env: dict | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "engine", *args, "--db", str(cli.db)]
    return subprocess.Popen(cmd, cwd=ROOT, env=engine_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _edited_once(info: dict) -> None:
    text = (Path(info["workspace"]) / "inventory.py").read_text()
    assert text.count("* item.quantity") == 1, text


# -- a decision while Temporal is down: the outbox -------------------------------------------


def test_approve_while_temporal_is_down_reaches_the_workflow_once_it_is_back(
        cli: EngineCLI, own_server: OwnServer, tmp_path: Path) -> None:
    workers = Workers(own_server.address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    workers.start(1)
    try:
        proc = cli("run", "machines/coding_agent.yaml", "--golden", str(make_task(tmp_path)),
                   "--json", *workers.flags(), env=POLL)
        assert proc.returncode == 5, proc.stderr[-2000:]
        run_id = json.loads(proc.stdout)["run_id"]
        call_id = cli.json("approvals", "--db", str(cli.db))[0]["call_id"]
        own_server.stop()
        decided = cli("approve", run_id, call_id, "--db", str(cli.db))
        assert decided.returncode == 0, decided.stderr
        assert decided.stderr == ""
        assert decided.stdout.count("\n") == 1 and "once Temporal is back" in decided.stdout
        assert cli.json("approvals", "--db", str(cli.db)) == []  # recorded: no longer asked
        again = cli("approve", run_id, call_id, "--db", str(cli.db))
        assert again.returncode == 2 and "already" in again.stderr, again.stderr
        own_server.start()  # nothing else: the parked workflow reads the store
        info = _wait_status(cli, run_id, {"completed", "failed"})
    finally:
        workers.stop_all()
    assert info["status"] == "completed", info
    _edited_once(info)
    audit = cli.json("audit", run_id)
    assert [(a["call_id"], a["decided_by"]) for a in audit] == [(call_id, "cli")]


# -- no worker, a follower stopped, a resume that attaches -----------------------------------


def test_no_worker_is_said_sigterm_exits_6_and_resume_attaches(
        cli: EngineCLI, temporal_address: str, tmp_path: Path) -> None:
    workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    run = _popen(cli, "run", "machines/coding_agent.yaml", "--quiet", *workers.flags())
    assert run.stderr is not None
    started = time.monotonic()
    said = _read_until(run.stderr, "no worker polls")
    assert time.monotonic() - started < 30
    assert f"task queue {workers.queue!r}" in said[-1] and "worker --backend temporal" in said[-1]
    assert f"--task-queue {workers.queue}" in said[-1] and f"--db {cli.db}" in said[-1]
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 6, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: stopped following run ") and "the workers go on" in last
    assert "Traceback" not in err
    run_id = last.split("stopped following run ")[1].split(";")[0]
    assert f"show {run_id} --db {cli.db}" in last
    resume = _popen(cli, "resume", run_id, "--quiet", *workers.flags())
    workers.start(2)
    try:
        out, err = resume.communicate(timeout=120)
    finally:
        workers.stop_all()
    assert resume.returncode == 0, err[-2000:]
    assert "completed" in out and "Traceback" not in err
    info = _show(cli, run_id)
    assert info["status"] == "completed"
    _edited_once(info)
    assert len(_workflow_runs(temporal_address, run_id)) == 1  # attached, not started twice


def _workflow_runs(address: str, run_id: str) -> list[str]:
    import anyio

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def runs() -> list[str]:
        client = await connect(address, "default")
        return [w.run_id async for w in client.list_workflows(
            f"WorkflowId = '{workflow_id(run_id)}'")]

    return anyio.run(runs)


def test_worker_in_a_namespace_that_does_not_exist_is_one_line(
        temporal_address: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "worker", "--backend", "temporal",
                           "--temporal-address", temporal_address, "--namespace", "no-such-ns"],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""  # not "polling" first
    assert proc.stderr.count("\n") == 1 and "no namespace 'no-such-ns'" in proc.stderr


def test_a_failed_workflow_has_its_cause_in_the_run(cli: EngineCLI, temporal_address: str,
                                                    tmp_path: Path) -> None:
    """A worker serving another store takes the run's step: it refuses, and the run records
    why (``show`` and ``runs``), the command exits 1 with that line."""
    other = tmp_path / "other.db"
    workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path, store=str(other))
    workers.start(1)
    try:
        proc = cli("run", "machines/coding_agent.yaml", "--quiet", *workers.flags())
    finally:
        workers.stop_all()
    assert proc.returncode == 1, proc.stderr
    assert "serves the store" in proc.stdout, proc.stdout
    run_id = next(r["run_id"] for r in cli.json("runs"))
    info = _show(cli, run_id)
    assert info["status"] == "failed" and "serves the store" in info["error"]
    listed = cli("runs")
    assert "serves the store" in listed.stdout, listed.stdout


# -- the follower loses Postgres or Temporal; the run goes on ----------------------------------

TURNS = 60


def _long_run(cli: EngineCLI, workers: Workers, tmp_path: Path, *store: str
              ) -> tuple[subprocess.Popen[str], str]:
    """A 60-turn run followed by ``run --quiet``, once it has taken three steps."""
    from bench.temporal import long_task

    task = long_task(tmp_path / "long", TURNS)
    cmd = [sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml", "--golden",
           str(task), "--quiet", *workers.flags(), *(store or ("--db", str(cli.db)))]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        runs = cli.json("runs", *store) if store else cli.json("runs")
        if runs and runs[0]["steps"] >= 3:
            return proc, runs[0]["run_id"]
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run took no step"
        time.sleep(0.05)


def _every_turn_once(run_id: str, store_url: str) -> None:
    from engine.store.url import open_store

    store = open_store(store_url, reading=True)
    try:
        info, messages = store.get_run(run_id), store.messages(run_id)
    finally:
        store.close()
    assert info.status == "completed" and info.steps == 1 + 5 * (TURNS - 1) + 2
    results = [m for m in messages if m.role == "tool"]
    assert len(results) == TURNS - 1 and len({m.tool_call_id for m in results}) == TURNS - 1


@pytest.mark.slow
def test_postgres_stopped_while_following_exit_6_and_the_run_completes(
        cli: EngineCLI, temporal_address: str, tmp_path: Path) -> None:
    from tests.pg_cluster import PgCluster

    with PgCluster() as cluster:
        url = cluster.create_database()
        workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path, store=url)
        workers.start(2)
        try:
            proc, run_id = _long_run(cli, workers, tmp_path, "--store", url)
            cluster.stop_server()
            _out, err = proc.communicate(timeout=120)
            cluster.start_server()
            info = _wait_status(cli, run_id, {"completed", "failed"}, "--store", url)
        finally:
            workers.stop_all()
        assert proc.returncode == 6, err
        assert err.count("\n") == 1 and err.startswith("error: lost the store while following"), err
        assert "the workers go on with the run" in err and f"show {run_id} --store" in err
        assert info["status"] == "completed", info
        _every_turn_once(run_id, url)


@pytest.mark.slow
def test_temporal_killed_while_following_exit_6_and_the_run_completes(
        cli: EngineCLI, own_server: OwnServer, tmp_path: Path) -> None:
    workers = Workers(own_server.address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    workers.start(2)
    try:
        proc, run_id = _long_run(cli, workers, tmp_path)
        own_server.server.process.send_signal(signal.SIGKILL)
        own_server.server.process.wait()
        _out, err = proc.communicate(timeout=120)
        own_server.start()
        info = _wait_status(cli, run_id, {"completed", "failed"})
    finally:
        workers.stop_all()
    assert proc.returncode == 6, err
    assert err.count("\n") == 1 and err.startswith("error: lost Temporal at "), err
    assert "goes on once Temporal is back" in err and f"show {run_id} --db {cli.db}" in err
    assert info["status"] == "completed", info
    _every_turn_once(run_id, str(cli.db))


@pytest.mark.slow
def test_a_local_resume_after_every_worker_died_takes_over_at_once(
        cli: EngineCLI, temporal_address: str, tmp_path: Path) -> None:
    """The workers' lease names the last worker's pid on this host: once every worker is
    SIGKILLed, ``resume`` (local) drives the run at once instead of blaming a dead pid until
    the lease expires, and completes it with every turn once."""
    from bench.temporal import long_task

    workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    workers.start(2)
    task = long_task(tmp_path / "long", TURNS)
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--detach",
               *workers.flags())
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    deadline = time.monotonic() + 120
    while _show(cli, run_id)["steps"] < 3:
        assert time.monotonic() < deadline, "the run took no step"
        time.sleep(0.05)
    for worker in workers.procs:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    workers.procs = []
    resumed = cli("resume", run_id, "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert "being driven by" not in resumed.stderr
    _every_turn_once(run_id, str(cli.db))
