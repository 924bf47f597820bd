"""The Temporal backend end to end: a real dev server on 127.0.0.1, real worker processes, real
SQLite files on the shared filesystem, the real CLI.

Three workers serve each test's task queue. The demo and every golden task pass on them; a
worker SIGKILLed in the middle of a shell command that appends to a file outside the run's
workspace and store: the run completes on another worker within seconds and the file shows
what the ledger promises; a parked approval survives every worker being stopped and started
again; a 300-turn run continues as new and its Temporal history stays small.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.temporal import devserver
from tests.conftest import ROOT, EngineCLI, engine_env
from tests.test_park import make_task

pytestmark = [pytest.mark.temporal, pytest.mark.timeout(300)]


class Workers:
    """Worker processes serving one task queue of the test's own."""

    def __init__(self, address: str, queue: str, log_dir: Path,
                 store: str | None = None, env: dict[str, str] | None = None) -> None:
        self.address, self.queue, self.log_dir = address, queue, log_dir
        self.store, self.env = store, env
        self.procs: list[subprocess.Popen[str]] = []
        self.spawned = 0

    def start(self, n: int = 3) -> None:
        started = [self._spawn() for _ in range(n)]
        for proc in started:
            line = proc.stdout.readline() if proc.stdout else ""
            assert "worker polling" in line, f"worker did not start: {line!r}"
        self.procs += started

    def spawn(self) -> None:
        """One more worker, not waited for: it may be killed while it is still starting."""
        self.procs.append(self._spawn())

    def _spawn(self) -> subprocess.Popen[str]:
        cmd = [sys.executable, "-m", "engine", "worker", "--backend", "temporal",
               "--temporal-address", self.address, "--task-queue", self.queue,
               *(["--store", self.store] if self.store else [])]
        self.spawned += 1
        err = (self.log_dir / f"worker-{self.spawned}.log").open("w")
        return subprocess.Popen(cmd, cwd=ROOT, env=engine_env(self.env), stdout=subprocess.PIPE,
                                stderr=err, text=True)

    def by_pid(self, pid: int) -> subprocess.Popen[str]:
        return next(p for p in self.procs if p.pid == pid)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []

    def flags(self) -> list[str]:
        return ["--backend", "temporal", "--temporal-address", self.address,
                "--task-queue", self.queue]


@pytest.fixture
def workers(temporal_address: str, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    w.start(3)
    try:
        yield w
    finally:
        w.stop_all()


def _status(cli: EngineCLI, run_id: str) -> dict:
    return cli.json("show", run_id)


def _wait_status(cli: EngineCLI, run_id: str, wanted: set[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = _status(cli, run_id)
        if info["status"] in wanted:
            return info
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not reach {wanted}: {info['status']}")


def _events(db: Path, run_id: str, kind: str) -> list[dict]:
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        return [dict(e.payload) for e in store.events(run_id, [kind])]
    finally:
        store.close()


# -- the demo, the golden tasks -------------------------------------------------------------


def test_demo_runs_on_three_workers(cli: EngineCLI, workers: Workers) -> None:
    proc = cli("run", "machines/coding_agent.yaml", "--json", *workers.flags())
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert info["status"] == "completed" and info["state"] == "done"
    shown = _status(cli, info["run_id"])
    assert shown["status"] == "completed"
    assert "completed" in proc.stderr or "run_shell" in proc.stderr  # followed live
    assert (Path(info["workspace"]) / "inventory.py").read_text().count("* item.quantity") == 1
    history = _history_sizes(workers.address, info["run_id"])
    assert history and sum(history) > 0  # it really ran as a workflow
    _replay(workers.address, info["run_id"])


def test_demo_on_a_postgres_store_keeps_the_password_out_of_history(
        cli: EngineCLI, temporal_address: str, pg_url: str, tmp_path: Path) -> None:
    """Workers on a Postgres store given with --store; the workflow's reference names the
    store without its password (trust auth on 127.0.0.1 ignores it, so it can be planted)."""
    url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:planted-s3cret@")
    assert "planted-s3cret" in url, pg_url
    workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path, store=url)
    workers.start(2)
    try:
        proc = cli("run", "machines/coding_agent.yaml", "--json", "--store", url,
                   *workers.flags())
        assert proc.returncode == 0, proc.stderr[-2000:]
        info = json.loads(proc.stdout)
        assert info["status"] == "completed"
        shown = cli.json("show", info["run_id"], "--store", url)
        assert shown["status"] == "completed" and shown["steps"] >= 5
        assert "planted-s3cret" not in _history_text(workers.address, info["run_id"])
        assert _history_sizes(workers.address, info["run_id"])
    finally:
        workers.stop_all()


def _history_text(address: str, run_id: str) -> str:
    import anyio

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def fetch() -> str:
        client = await connect(address, "default")
        history = await client.get_workflow_handle(workflow_id(run_id)).fetch_history()
        return history.to_json()

    return anyio.run(fetch)


def _replay(address: str, run_id: str) -> None:
    """Replay the run's recorded history through the workflow code: a nondeterministic
    workflow fails here."""
    import anyio
    from temporalio.worker import Replayer

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id
    from engine.temporal.workflow import RunWorkflow

    async def replay() -> None:
        client = await connect(address, "default")
        history = await client.get_workflow_handle(workflow_id(run_id)).fetch_history()
        await Replayer(workflows=[RunWorkflow]).replay_workflow(history)

    anyio.run(replay)


def test_every_golden_task_passes_on_temporal(cli: EngineCLI, workers: Workers,
                                              tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    proc = cli("eval", "golden_tasks", "--json", str(out), *workers.flags(), timeout=280)
    results = json.loads(out.read_text())
    failed = [t for t in results["results"] if not t["passed"]]
    assert proc.returncode == 0 and results["passed"] and not failed, (proc.stdout[-3000:],
                                                                       failed)
    assert results["tasks"] == results["tasks_passed"] >= 10
    assert _workflows_on(workers) >= results["tasks"]  # each task's run was a workflow


def _workflows_on(workers: Workers) -> int:
    import anyio

    from engine.temporal.client import connect

    async def count() -> int:
        client = await connect(workers.address, "default")
        return len([w async for w in client.list_workflows(f"TaskQueue = '{workers.queue}'")])

    return anyio.run(count)


def test_detach_prints_the_run_id_and_the_workers_finish_it(cli: EngineCLI,
                                                            workers: Workers) -> None:
    proc = cli("run", "machines/coding_agent.yaml", "--detach", *workers.flags())
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    info = _wait_status(cli, run_id, {"completed", "failed"}, 60)
    assert info["status"] == "completed"


def test_a_detached_run_reads_running_before_any_worker_takes_it(
        cli: EngineCLI, temporal_address: str, tmp_path: Path) -> None:
    """Between the command's exit and a worker's first step the row has no driver of its
    own: it must read running (the workers' lease), never crashed."""
    queue = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    proc = cli("run", "machines/coding_agent.yaml", "--detach", *queue.flags())
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    assert _stored(cli.db, run_id).status == "running"
    assert _status(cli, run_id)["status"] == "running"
    assert "crashed" not in cli("runs").stdout
    queue.start(1)
    try:
        info = _wait_status(cli, run_id, {"completed", "failed"}, 120)
    finally:
        queue.stop_all()
    assert info["status"] == "completed"


def test_without_a_server_one_line_and_exit_2(cli: EngineCLI) -> None:
    port = devserver.free_port()
    proc = cli("run", "machines/coding_agent.yaml", "--backend", "temporal",
               "--temporal-address", f"127.0.0.1:{port}")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: cannot reach Temporal at 127.0.0.1:")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# -- a worker killed in the middle of a shell command -----------------------------------------

RECOVERY_GUARD_S = 300
"""How long a run may take to complete after its worker is killed: a hang guard, not a speed
claim (a loaded machine stretches the 10 s heartbeat timeout and the retry), and far below the
step timeout (3,600 s), so a run completed within it was rescued by the heartbeat."""

APPEND_MACHINE = """\
name: append_once
kind: workflow
initial: append
sandbox: {mode: "off"}
tools: [run_shell]
states:
  append:
    action: run_tool
    with: {tool: run_shell, args: {command: "sh append.sh"}}
    on: {ok: done, failed: done}
  done: {final: true}
"""

APPEND_SCRIPT = """\
echo "begin $ENGINE_IDEMPOTENCY_KEY" >> "{out}"
if [ ! -e "{out}.slow" ]; then touch "{out}.slow"; sleep {hold}; fi
echo "end $ENGINE_IDEMPOTENCY_KEY" >> "{out}"
"""
"""Appends outside the run's reach; the first time, it outlasts the recovery guard, so only the
resumed run's ending of the leftover (never the clock: a busy machine stretched a 30 s sleep
past the recovery) keeps its "end" line from being written."""

APPEND_POLICY = """\
default: deny
on_unknown_effect: {mode}
rules:
  - {{decision: allow, tool: run_shell, command: "sh append.sh"}}
"""


@pytest.mark.parametrize("mode", ["skip", "repeat"])
def test_worker_killed_mid_command_no_effect_twice(cli: EngineCLI, workers: Workers,
                                                   tmp_path: Path, mode: str) -> None:
    outside = tmp_path / "outside" / "effects.log"  # neither in the workspace nor the store
    outside.parent.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = APPEND_SCRIPT.format(out=outside, hold=2 * RECOVERY_GUARD_S)
    (workspace / "append.sh").write_text(script)
    machine = tmp_path / "append.yaml"
    machine.write_text(APPEND_MACHINE)
    policy = tmp_path / "policy.yaml"
    policy.write_text(APPEND_POLICY.format(mode=mode))
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"text": "unused"}]))
    proc = cli("run", str(machine), "--task", "append once", "--workspace", str(workspace),
               "--model", f"scripted:{turns}", "--policy", str(policy), "--approval", "policy",
               "--detach", *workers.flags())
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    deadline = time.monotonic() + 60
    while not (outside.exists() and "begin" in outside.read_text()):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    pid = _activity_worker_pid(workers.address, run_id)
    workers.by_pid(pid).send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    info = _wait_status(cli, run_id, {"completed", "failed"}, RECOVERY_GUARD_S)
    recovery = time.monotonic() - killed_at
    assert info["status"] == "completed"
    assert recovery < RECOVERY_GUARD_S, f"took {recovery:.1f} s after the kill"
    time.sleep(0.5)  # a leftover of the killed worker would write now
    lines = [line for line in outside.read_text().splitlines()]
    call_id = _events(cli.db, run_id, "tool_started")[0]["call_id"]
    key = f"{run_id}:{call_id}"
    resolved = _events(cli.db, run_id, "effect_resolved")
    assert [r["resolution"] for r in resolved] == ["unknown" if mode == "skip" else "rerun"]
    assert _events(cli.db, run_id, "leftover_stopped")  # the killed worker's command ended
    if mode == "skip":  # not repeated: the command's effect happened once, and no more
        assert lines == [f"begin {key}"]
        assert "may or may not have run" in resolved[0]["message"]
    else:  # repeated, as the policy says, with the same key for the receiver to de-duplicate
        assert lines == [f"begin {key}", f"begin {key}", f"end {key}"]


def _activity_worker_pid(address: str, run_id: str) -> int:
    """The pid of the worker running the run's pending activity (its Temporal identity)."""
    import anyio

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def find() -> int:
        client = await connect(address, "default")
        handle = client.get_workflow_handle(workflow_id(run_id))
        for _ in range(100):
            desc = await handle.describe()
            pending = desc.raw_description.pending_activities
            if pending and pending[0].last_worker_identity:
                return int(pending[0].last_worker_identity.split("@")[0])
            await anyio.sleep(0.05)
        raise AssertionError("no pending activity")

    return anyio.run(find)


# -- a worker killed in the middle of a model call --------------------------------------------

SHELL_POLICY = """\
default: deny
rules:
  - {decision: allow, tool: run_shell, command: "sh effect.sh"}
"""


def test_worker_killed_mid_model_call_repeats_the_call_not_the_tool(
        cli: EngineCLI, temporal_address: str, tmp_path: Path) -> None:
    """The model is an OpenAI-compatible server on 127.0.0.1 whose second answer hangs; the
    worker waiting for it is SIGKILLed. Another worker repeats that model call (same request),
    the run completes, and the shell command of the first turn ran once."""
    from tests.sse_server import PATHS, Reply, SSEServer, provider_env

    chat = PATHS["openai"]
    server = SSEServer().start()
    server.enqueue(chat, Reply.turn("openai", {"text": "appending", "tool_calls": [
        {"name": "run_shell", "args": {"command": "sh effect.sh"}}]}),
        Reply.turn("openai", {"text": "never read"}, hang_s=30),
        Reply.turn("openai", {"text": "done: appended once"}))
    env = provider_env(server)
    workers = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path, env=env)
    workers.start(3)
    try:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "effect.sh").write_text("echo effect >> effects.log\n")
        policy = tmp_path / "policy.yaml"
        policy.write_text(SHELL_POLICY)
        proc = cli("run", "machines/coding_agent.yaml", "--task", "append once",
                   "--workspace", str(workspace), "--model", "openai:slow-model", "--policy",
                   str(policy), "--approval", "policy", "--detach", *workers.flags(), env=env)
        assert proc.returncode == 0, proc.stderr
        run_id = proc.stdout.strip().splitlines()[-1]
        deadline = time.monotonic() + 60
        while len([r for r in server.requests if r.path == chat]) < 2:  # the hanging call
            assert time.monotonic() < deadline, "the second model call never came"
            time.sleep(0.05)
        assert (workspace / "effects.log").exists(), _all_events(cli.db, run_id)
        assert (workspace / "effects.log").read_text() == "effect\n"
        victim = workers.by_pid(_activity_worker_pid(workers.address, run_id))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_at = time.monotonic()
        info = _wait_status(cli, run_id, {"completed", "failed"}, RECOVERY_GUARD_S)
        recovery = time.monotonic() - killed_at
    finally:
        workers.stop_all()
        server.close()
    assert info["status"] == "completed", info
    assert recovery < RECOVERY_GUARD_S, f"took {recovery:.1f} s after the kill"
    calls = [r for r in server.requests if r.path == chat]
    assert len(calls) == 3 and server.pending(chat) == 0
    assert calls[2].json["messages"] == calls[1].json["messages"]  # the same call, repeated
    assert (workspace / "effects.log").read_text() == "effect\n"  # the tool ran once
    started = _events(cli.db, run_id, "tool_started")
    assert [e["tool"] for e in started] == ["run_shell"]
    answers = [m for m in _messages(cli.db, run_id) if m.role == "assistant"]
    assert [m.content for m in answers] == ["appending", "done: appended once"]


def _all_events(db: Path, run_id: str) -> list[tuple[str, dict]]:
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        return [(e.kind, dict(e.payload)) for e in store.events(run_id)]
    finally:
        store.close()


# -- a parked approval outlives every worker -------------------------------------------------


def test_parked_approval_survives_all_workers_restarting(cli: EngineCLI, workers: Workers,
                                                         tmp_path: Path) -> None:
    task = make_task(tmp_path)
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--json",
               *workers.flags())
    assert proc.returncode == 5, proc.stderr[-2000:]
    run_id = json.loads(proc.stdout)["run_id"]
    assert "python -m engine approve" in proc.stderr
    workers.stop_all()
    time.sleep(1)
    assert _status(cli, run_id)["status"] == "waiting_approval"
    workers.start(3)
    pending = cli.json("approvals", "--db", str(cli.db))
    assert [p["run_id"] for p in pending] == [run_id]
    decided = cli("approve", run_id, pending[0]["call_id"], "--db", str(cli.db))
    assert decided.returncode == 0, decided.stderr
    assert "workflow was told" in decided.stdout
    info = _wait_status(cli, run_id, {"completed", "failed"}, 60)
    assert info["status"] == "completed"
    workspace = Path(info["workspace"])
    assert "* item.quantity" in (workspace / "inventory.py").read_text()


def test_local_parked_run_resumed_on_temporal_is_signalled_by_approve(
        cli: EngineCLI, workers: Workers, tmp_path: Path) -> None:
    """A run parked by the single-process runner, resumed with --backend temporal: its config
    now names Temporal, so ``approve`` signals its workflow, which a worker continues."""
    from tests.test_park import park

    run_id = park(cli, make_task(tmp_path))["run_id"]
    assert "backend" not in _recorded_config(cli.db, run_id)
    proc = cli("resume", run_id, "--json", *workers.flags())
    assert proc.returncode == 5, proc.stderr[-2000:]  # parked again, now on its workflow
    config = _recorded_config(cli.db, run_id)
    assert config["backend"] == "temporal" and config["temporal"]["task_queue"] == workers.queue
    assert config["approval"] == "park" and config["machine_path"]  # the rest kept
    pending = cli.json("approvals", "--db", str(cli.db))
    assert [p["run_id"] for p in pending] == [run_id]
    decided = cli("approve", run_id, pending[0]["call_id"], "--db", str(cli.db))
    assert decided.returncode == 0, decided.stderr
    assert "workflow was told" in decided.stdout
    info = _wait_status(cli, run_id, {"completed", "failed"}, 60)
    assert info["status"] == "completed"
    assert "* item.quantity" in (Path(info["workspace"]) / "inventory.py").read_text()
    assert _history_sizes(workers.address, run_id)  # the workflow drove the rest


def _recorded_config(db: Path, run_id: str) -> dict:
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        return dict(store.get_run(run_id).config)
    finally:
        store.close()


# -- a long run continues as new --------------------------------------------------------------


def test_a_long_run_continues_as_new_with_bounded_history(cli: EngineCLI, workers: Workers,
                                                          tmp_path: Path) -> None:
    """120 turns, a new execution every 50 steps (bench/temporal.py runs 300 turns, 100 a
    piece)."""
    from bench.temporal import long_task

    task = long_task(tmp_path / "long", 120)
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--json",
               *workers.flags(), env={"ENGINE_CONTINUE_AS_NEW_STEPS": "50"}, timeout=280)
    assert proc.returncode == 0, proc.stderr[-2000:]
    info = json.loads(proc.stdout)
    assert info["status"] == "completed"
    assert info["steps"] == 1 + 5 * 119 + 2  # plan, 119 tool turns, the answer
    sizes = _history_sizes(workers.address, info["run_id"])
    assert len(sizes) == 12, sizes  # 598 steps, 50 per execution
    assert max(sizes) < 300_000, sizes  # each execution's history stays small
    assert sum(sizes) / info["steps"] < 2_000  # bytes of history per step, not per message


def _history_sizes(address: str, run_id: str) -> list[int]:
    from bench.temporal import history_sizes

    return history_sizes(address, run_id)


# -- without the extra ------------------------------------------------------------------------

WITHOUT_TEMPORALIO = ("import sys; sys.modules['temporalio'] = None; "
                      "from engine.cli.main import main; sys.exit(main(sys.argv[1:]))")
"""The CLI in a process where ``import temporalio`` fails, as without the extra."""


@pytest.mark.parametrize("command", [
    ["run", "machines/coding_agent.yaml", "--backend", "temporal"],
    ["worker", "--backend", "temporal"],
    ["eval", "golden_tasks", "-k", "demo", "--backend", "temporal"],
])
def test_without_the_extra_one_line_naming_it(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_TEMPORALIO, *command,
                           "--db", str(tmp_path / "e.db")], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("error: --backend temporal needs the temporal extra: "
                           "pip install 'turnstile-fsm[temporal]'\n")


def test_the_local_backend_never_imports_temporalio(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", WITHOUT_TEMPORALIO, "run",
                           "machines/coding_agent.yaml", "--db", str(tmp_path / "e.db"),
                           "--quiet"], cwd=ROOT, env=engine_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout


def test_workers_killed_at_several_points_the_run_still_completes(cli: EngineCLI,
                                                                   workers: Workers,
                                                                   tmp_path: Path) -> None:
    """A worker is SIGKILLed every 20 steps wherever the run happens to be (model call,
    approval, tool call, checkpoint, workflow task, a replacement still starting) and a new one
    is spawned; the run completes with every step taken once and every tool call answered once.

    Progress, not the clock, spaces the kills: the run cannot advance without a live worker, so
    the five kills land within its first ~100 of 598 steps however busy the machine is."""
    from bench.temporal import long_task

    task = long_task(tmp_path / "long", 120)
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--detach",
               *workers.flags(), env={"ENGINE_CONTINUE_AS_NEW_STEPS": "50"})
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    kills, last, seen = 0, 0, set()
    deadline = time.monotonic() + 300
    while kills < 5:
        assert time.monotonic() < deadline, f"the run stopped advancing after {kills} kills"
        info = _stored(cli.db, run_id)
        assert info.status == "running", info
        if info.steps >= last + 20:
            victim = workers.procs.pop(0)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            workers.spawn()
            kills, last = kills + 1, info.steps
        else:
            time.sleep(0.02)
    while (status := _status(cli, run_id)["status"]) not in ("completed", "failed"):
        seen.add(status)
        assert time.monotonic() < deadline, "the run did not complete"
        time.sleep(0.3)
    info = _status(cli, run_id)
    assert info["status"] == "completed", info
    assert seen <= {"running"}  # between steps and workers too: never shown as crashed
    assert info["steps"] == 1 + 5 * 119 + 2
    results = [m for m in _messages(cli.db, run_id) if m.role == "tool"]
    assert len(results) == 119 and len({m.tool_call_id for m in results}) == 119


def _stored(db: Path, run_id: str) -> Any:
    """The run's row as the workers last wrote it: read in milliseconds, unlike ``show``."""
    return _reading(db, lambda store: store.get_run(run_id))


def _reading(db: Path, read: Callable[[Any], Any]) -> Any:
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        return read(store)
    finally:
        store.close()


def _messages(db: Path, run_id: str) -> list:
    return list(_reading(db, lambda store: store.messages(run_id)))


def test_bench_measures_overhead_recovery_history_naive_loop_and_postgres(
        tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "bench/temporal.py", "--turns", "3", "--long", "12",
                           "--every", "20", "--kills", "1", "--naive-turns", "12",
                           "--json", str(out)], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["local"]["per_turn_ms"] > 0
    assert figures["temporal"]["per_turn_ms"] > figures["local"]["per_turn_ms"]
    assert figures["temporal"]["history_bytes"] > 0
    assert 0 < figures["recovery_s"][0] < RECOVERY_GUARD_S
    long = figures["long"]
    assert long["steps"] == 1 + 5 * 11 + 2 and long["executions"] == 3  # 58 steps, 20 each
    assert "recovery after SIGKILL" in proc.stdout
    naive, ours = figures["naive"]["naive"], figures["naive"]["turnstile"]
    assert naive["ended"] == "completed" and naive["turns_done"] == 12
    # every model activity carries the history: each turn records about one more 1,500-byte
    # file read than the turn before (the first also records the workflow's start)
    assert naive["last_turn_bytes"] > naive["first_turn_bytes"] + 8 * 1500
    assert naive["history_bytes"] > 3 * ours["history_bytes"] > 0
    assert 100 < naive["limit_turn"] < 2000 and not naive["limit_observed"]
    assert "naive loop (history into the model)" in proc.stdout
    pg = figures["postgres"]
    assert pg["local"]["per_turn_ms"] > 0 and pg["temporal"]["per_turn_ms"] > 0
    assert "temporal, poll cap lifted, Postgres" in proc.stdout
    assert figures["targets"][0][-1] == "-"  # 12 turns: the 200-turn target is not judged
    from bench.run import render, targets

    shown = render({"temporal": figures}, [3], figures["machine"])  # bench/run.py's tables
    assert "Temporal (poll cap lifted), Postgres" in shown and "naive loop, same" in shown
    assert [row[0] for row in targets({"temporal": figures}, [3])
            if "Temporal history" in row[0]] == [figures["targets"][0][0]]


def test_naive_history_limit_is_observed_or_extrapolated() -> None:
    from bench.temporal import limit_turn

    assert limit_turn([10, 20, 30], limit=50) == 3  # 10 + 20 + 30 passes 50 at turn 3
    growing = [1000 + 100 * k for k in range(10)]  # 10 turns, 14,500 bytes
    # turn k adds 1000 + 100 (k - 1): 1000 n + 50 n (n - 1) is 99,000 at 36, 103,600 at 37
    assert limit_turn(growing, limit=100_000) == 37
    assert limit_turn([500] * 10, limit=10**9) is None  # no growth: no limit in sight


def test_the_dev_server_starts_again_on_fresh_ports_when_one_is_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A port picked free can be taken before the dev server binds it (a CI run once lost a
    test this way: "bind: address already in use" for its HTTP port). Here the first HTTP
    port handed out is held by a listening socket: the first server exits, and the second,
    on fresh ports, answers."""
    import socket

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    real, calls = devserver.free_port, []

    def first_http_port_taken() -> int:
        calls.append(1)
        return taken if len(calls) == 2 else real()  # the main port, then the HTTP port

    monkeypatch.setattr(devserver, "free_port", first_http_port_taken)
    log = tmp_path / "server.log"
    try:
        server = devserver.start(log=log)
    finally:
        held.close()
    try:
        assert f"127.0.0.1:{taken}" in log.read_text() and "address already in use" in \
            log.read_text()
        assert len(calls) == 6  # two attempts, three ports each
    finally:
        server.stop()
