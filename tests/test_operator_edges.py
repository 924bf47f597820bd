"""The smaller edges an operator meets, through the CLI: a bad ``ENGINE_LOG``, a Postgres
server out of connection slots, a deleted workspace, the database replaced during a run."""

from __future__ import annotations

import json
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env


def test_a_bad_engine_log_is_one_line_and_exit_2(cli: EngineCLI) -> None:
    proc = cli("runs", env={"ENGINE_LOG": "bogus"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("error: ENGINE_LOG='bogus': expected one of debug, info, warning, "
                           "error, critical\n")
    assert cli("runs", env={"ENGINE_LOG": "info"}).returncode == 0


WAIT_MACHINE = """\
name: wait_then_append
kind: workflow
initial: work
sandbox: {mode: "off"}
tools: [run_shell]
states:
  work:
    action: run_tool
    with: {tool: run_shell, args: {command: "sh work.sh"}}
    on: {ok: done, failed: done}
  done: {final: true}
"""

WORK = """\
echo started > started
while [ ! -e go ]; do sleep 0.05; done
echo once >> "{out}"
"""


def _process_recorded(db: Path) -> bool:
    """The running command's pid is committed (the engine's last write before its effect)."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT 1 FROM events WHERE kind = 'tool_process'").fetchone() \
            is not None


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_the_database_replaced_during_a_run_stops_it_and_it_resumes_once_back(
        cli: EngineCLI, tmp_path: Path, how: str) -> None:
    """The file under a running run is replaced (or deleted): the run stops at its next write
    with one line, exit 2; with the original file back, ``resume`` completes it, and the
    command's effect happened once."""
    out = tmp_path / "effects.log"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "work.sh").write_text(WORK.format(out=out))
    machine = tmp_path / "wait.yaml"
    machine.write_text(WAIT_MACHINE)
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"text": "unused"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(machine), "--task", "work", "--workspace",
         str(workspace), "--model", f"scripted:{turns}", "--policy", str(policy),
         "--approval", "policy", "--quiet", "--db", str(cli.db)],
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 110  # a guard against a hang, not a bound
    while not (workspace / "started").exists() or not _process_recorded(cli.db):
        # the command runs before the engine commits its pid; a file swapped in between makes
        # that write fail, the command is stopped unfinished and resume rightly skips it
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    kept = tmp_path / "kept.db"
    cli.db.rename(kept)
    if how == "replaced":
        shutil.copy(kept, cli.db)  # another file with the same bytes: not the same database
    (workspace / "go").touch()
    _, err = proc.communicate(timeout=110)
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"the database file was {'replaced' if how == 'replaced' else 'deleted'}" in err
    assert "resume" in err
    cli.db.unlink(missing_ok=True)
    kept.rename(cli.db)  # the original file is back
    (run,) = cli.json("runs")
    resumed = cli("resume", run["run_id"], "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert cli.json("show", run["run_id"])["status"] == "completed"
    assert out.read_text() == "once\n"


def test_too_many_connections_is_said_as_such(cli: EngineCLI) -> None:
    """A server whose every connection slot is taken: one line saying so, not a password
    problem."""
    import psycopg

    from tests.pg_cluster import PgCluster

    with PgCluster({"max_connections": "3", "superuser_reserved_connections": "0"}) as cluster:
        held = []
        try:
            while True:  # take every slot
                held.append(psycopg.connect(cluster.url()))
        except psycopg.OperationalError:
            pass
        try:
            proc = cli("runs", "--store", cluster.url())
        finally:
            for conn in held:
                conn.close()
    assert held and proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no connection left" in proc.stderr, proc.stderr
    assert "password" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_console_names_the_fault_when_the_store_is_down(tmp_path: Path) -> None:
    import socket
    import urllib.error
    import urllib.request

    from tests.pg_cluster import PgCluster, free_port

    with PgCluster() as cluster:
        url = cluster.create_database()
        port = free_port()
        serve = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--port", str(port),
                                  "--store", url], cwd=ROOT, env=engine_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 110  # a guard against a hang, not a bound
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert serve.poll() is None and time.monotonic() < deadline, \
                        serve.communicate()
                    time.sleep(0.05)
            page = f"http://127.0.0.1:{port}/"
            with urllib.request.urlopen(page, timeout=60) as ok:
                assert ok.status == 200
            cluster.stop_server()
            with pytest.raises(urllib.error.HTTPError) as down:
                urllib.request.urlopen(page, timeout=60)
            body = down.value.read().decode()
            cluster.start_server()
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    assert down.value.code == 503
    assert "The store cannot be used" in body and "cannot reach the database server" in body


def test_a_model_stream_cut_inside_a_tool_call_is_retried_and_the_call_runs_once(
        cli: EngineCLI, tmp_path: Path) -> None:
    from tests.sse_server import PATHS, Reply, SSEServer, provider_env, render_turn

    chat = PATHS["openai"]
    first = {"text": "appending", "tool_calls": [
        {"name": "run_shell", "args": {"command": "sh effect.sh"}}]}
    body = render_turn("openai", first)
    name = body.index(b"run_shell")
    cut = body.index(b"arguments", body.index(b"arguments", name) + 1) + 20  # in its arguments
    assert cut < len(body) - 200
    server = SSEServer().start()
    server.enqueue(chat, Reply.turn("openai", first, disconnect_after=cut),
                   Reply.turn("openai", first), Reply.turn("openai", {"text": "appended"}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "effect.sh").write_text("echo effect >> effects.log\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: deny\nrules:\n"
                      "  - {decision: allow, tool: run_shell, command: \"sh effect.sh\"}\n")
    try:
        proc = cli("run", "machines/coding_agent.yaml", "--task", "append once", "--workspace",
                   str(workspace), "--model", "openai:m", "--policy", str(policy),
                   "--approval", "policy", env=provider_env(server))
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert "retry 1" in proc.stdout and "connection lost mid-stream" in proc.stdout
    assert (workspace / "effects.log").read_text() == "effect\n"
    run_id = cli.json("runs")[0]["run_id"]
    calls = [e for e in cli.json("trace", run_id)["spans"] if e.get("name", "").startswith(
        "execute_tool")]
    assert len(calls) == 1


TWO_STEPS = """\
name: wait_then_echo
kind: workflow
initial: wait
sandbox: {{mode: "off"}}
tools: [run_shell]
states:
  wait:
    action: run_tool
    with: {{tool: run_shell, args: {{command: "sh {script}"}}}}
    on: {{ok: again, failed: again}}
  again:
    action: run_tool
    with: {{tool: run_shell, args: {{command: "echo again"}}}}
    on: {{ok: done, failed: done}}
  done: {{final: true}}
"""


def test_a_deleted_workspace_fails_the_run_clearly(cli: EngineCLI, tmp_path: Path) -> None:
    flag, script = tmp_path / "go", tmp_path / "wait.sh"
    script.write_text(f"touch {tmp_path / 'started'}\n"
                      f"while [ ! -e {flag} ]; do sleep 0.05; done\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    machine = tmp_path / "two.yaml"
    machine.write_text(TWO_STEPS.format(script=script))
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"text": "unused"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(machine), "--task", "work", "--workspace",
         str(workspace), "--model", f"scripted:{turns}", "--policy", str(policy), "--approval",
         "policy", "--quiet", "--db", str(cli.db)],
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 110  # a guard against a hang, not a bound
    while not (tmp_path / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    shutil.rmtree(workspace)
    flag.touch()
    out, err = proc.communicate(timeout=110)
    assert proc.returncode == 1, (out, err)
    assert f"the workspace {workspace} no longer exists" in out and "Traceback" not in err
    shown = cli.json("show", cli.json("runs")[0]["run_id"])
    assert shown["status"] == "failed" and "no longer exists" in shown["error"]


def test_durations_are_never_negative_after_the_clock_went_back(cli: EngineCLI) -> None:
    import sqlite3

    run = cli.json("run", "machines/coding_agent.yaml")
    with sqlite3.connect(cli.db) as conn:  # as if the clock was set back an hour mid-run
        conn.execute("UPDATE runs SET updated_at = created_at - 3600")
        conn.execute("UPDATE steps SET ended_at = started_at - 3600")
        conn.execute("UPDATE events SET at = at - 3600 WHERE rowid % 2 = 0")
    shown = cli.json("show", run["run_id"])
    assert shown["duration_s"] >= 0
    trace = cli.json("trace", run["run_id"])
    durations = [s["duration_s"] for s in trace["spans"]]
    assert durations and min(durations) >= 0
    text = cli("trace", run["run_id"])
    assert text.returncode == 0
    assert not re.search(r"(^|\s)-\d[\d.]*m?s\b", text.stdout), text.stdout


def test_a_cluster_starts_on_another_port_when_its_free_port_is_taken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine another process may bind the port found free before the server
    does: the cluster tries another one instead of failing every test that needs it."""
    import psycopg

    from tests import pg_cluster

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        ports = iter([busy, pg_cluster.free_port()])
        monkeypatch.setattr(pg_cluster, "free_port", lambda: next(ports))
        with pg_cluster.PgCluster() as cluster:
            assert cluster.port != busy
            psycopg.connect(cluster.url()).close()
