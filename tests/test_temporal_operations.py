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
from tests.test_temporal import Workers, temporal_address  # noqa: F401  (a fixture)

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
