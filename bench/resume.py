"""Resume latency and checkpoint size against the length of a run (issue 6's benchmark).

    .venv/bin/python bench/resume.py [--steps 10 100 1000 10000] [--repeats 5] [--json FILE]

For each size a real run of the benchmark machine (see ``turnstile_loop``) is driven until it
has committed that many steps and then stopped dead (status ``crashed``: no lease, step left
``running``). A fresh process then opens the store, loads the latest state and builds the
runner: the work ``engine resume`` does before the first resumed step. Interpreter start and
imports are reported apart (they do not depend on the run).

Checkpoint bytes per step, read back from the database: the step rows (pre-checkpoint plan and
committed updates) and snapshot rows written for the last full turn, divided by its steps, and
the same with the turn's messages, events and effect records included. Neither may grow with
the step number: a step must write deltas, not the history or any other growing collection.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    TASK,
    db_bytes,
    emit_last_line,
    fmt_ratio,
    fmt_stat,
    machine_info,
    machine_line,
    ratio,
    run_child,
    summary,
    table,
    verdict,
    write_json,
)
from bench.turnstile_loop import STEPS_PER_TURN, build_runner, write_machine  # noqa: E402

TARGET_S = 0.050
"""Resume of a 1,000-step run in a fresh process."""
TARGET_STEPS = 1000
GROWTH_LIMIT = 1.2


class StopHere(Exception):
    """Raised by the observer right after the wanted step commits: the process "dies" there."""


async def make_run(folder: Path, steps: int) -> dict[str, Any]:
    """A run stopped right after committing ``steps`` steps, as a crash would leave it."""
    from engine.store.sqlite import SqliteStore

    workspace = folder / "ws"
    workspace.mkdir(exist_ok=True)
    turns = steps // STEPS_PER_TURN + 2
    machine = write_machine(folder, turns)
    db = folder / f"resume-{steps}.db"
    store = SqliteStore(db)

    def observer(kind: str, payload: Mapping[str, Any]) -> None:
        if kind == "step_commit" and payload["step"] + 1 >= steps:
            raise StopHere

    runner = build_runner(machine, store, workspace, turns, observer=observer)
    run_id = f"resume-{steps}"
    state = runner.create(run_id, workspace=str(workspace), config={}, data={"task": TASK})
    try:
        await runner.drive(state)
    except* StopHere:
        pass
    info = store.get_run(run_id)
    store.close()
    if info.steps != steps or info.status == "completed":
        raise RuntimeError(f"expected an unfinished run at step {steps}, got {info.status} "
                           f"at step {info.steps}")
    return {"db": str(db), "run_id": run_id, "machine": str(machine), "steps": info.steps,
            "status": info.status}


def fresh_resume(db: str, run_id: str, machine: str) -> dict[str, Any]:
    """In this (fresh) process: open the store, load the state, build the runner; timed."""
    t0 = time.perf_counter()
    import engine.actions.registry
    import engine.core.runner
    import engine.store.sqlite

    t1 = time.perf_counter()
    store = engine.store.sqlite.SqliteStore(db)
    t2 = time.perf_counter()
    state = store.load_state(run_id)
    t3 = time.perf_counter()
    runner = build_runner(Path(machine), store, Path(db).parent / "ws", [])
    t4 = time.perf_counter()
    assert runner.machine.name == state.machine
    return {"import_s": t1 - t0, "open_s": t2 - t1, "load_s": t3 - t2, "build_s": t4 - t3,
            "total_s": t4 - t1, "messages": len(state.messages), "step": state.step}


def checkpoint_bytes(db: str, run_id: str, steps: int) -> dict[str, float]:
    """Bytes per step written for the last full turn before ``steps``."""
    last = (steps - 1 - 1) // STEPS_PER_TURN * STEPS_PER_TURN + 1  # first step of last turn
    lo, hi = max(0, last - STEPS_PER_TURN), last  # a full turn: [lo, hi)
    conn = sqlite3.connect(db)
    try:
        def one(sql: str) -> int:
            return conn.execute(sql, (run_id, lo, hi)).fetchone()[0] or 0

        ckpt = (one("SELECT SUM(LENGTH(COALESCE(plan,'')) + LENGTH(COALESCE(updates,'')))"
                    " FROM steps WHERE run_id = ? AND seq >= ? AND seq < ?")
                + one("SELECT SUM(LENGTH(data) + LENGTH(usage)) FROM checkpoints"
                      " WHERE run_id = ? AND seq >= ? AND seq < ?"))
        content = (one("SELECT SUM(LENGTH(body)) FROM messages WHERE run_id = ? AND step >= ?"
                       " AND step < ?")
                   + one("SELECT SUM(LENGTH(payload)) FROM events WHERE run_id = ?"
                         " AND step >= ? AND step < ?")
                   + one("SELECT SUM(LENGTH(args) + LENGTH(COALESCE(result,''))) FROM effects"
                         " WHERE run_id = ? AND step >= ? AND step < ?"))
    finally:
        conn.close()
    n = hi - lo
    return {"checkpoint_bytes_per_step": ckpt / n, "all_bytes_per_step": (ckpt + content) / n,
            "from_step": lo}


def run(sizes: Sequence[int], repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        base = Path(tmp)
        results: dict[str, Any] = {}
        for steps in sizes:
            folder = base / str(steps)
            folder.mkdir()
            made = anyio.run(make_run, folder, steps)
            children = [run_child([__file__, "--child", made["db"], made["run_id"],
                                   made["machine"]]) for _ in range(repeats)]
            results[str(steps)] = {
                "steps": steps, "messages": children[0]["messages"],
                **{k: summary([c[k] for c in children])
                   for k in ("total_s", "open_s", "load_s", "build_s", "import_s")},
                **checkpoint_bytes(made["db"], made["run_id"], steps),
                "db_bytes_per_step": db_bytes(Path(made["db"])) / steps,
            }
    return {"results": results, "target_s": TARGET_S, **verdicts(results)}


def verdicts(results: Mapping[str, Any]) -> dict[str, Any]:
    at = results.get(str(TARGET_STEPS))
    first, last = results[min(results, key=int)], results[max(results, key=int)]
    growth = ratio(last["checkpoint_bytes_per_step"], first["checkpoint_bytes_per_step"])
    return {"resume_1000_pass": at["total_s"]["median"] < TARGET_S if at else None,
            "checkpoint_growth": growth,
            "checkpoint_growth_pass": growth is not None and growth <= GROWTH_LIMIT}


def report(data: dict[str, Any]) -> str:
    rows = [[e["steps"], e["messages"], fmt_stat(e["total_s"]), fmt_stat(e["load_s"]),
             fmt_stat(e["build_s"]), fmt_stat(e["import_s"], digits=1),
             f"{e['checkpoint_bytes_per_step']:.0f}", f"{e['all_bytes_per_step']:.0f}",
             f"{e['db_bytes_per_step']:.0f}"] for e in data["results"].values()]
    out = table(["steps", "messages", "resume ms", "load_state ms", "build runner ms",
                 "imports ms", "ckpt B/step", "all B/step", "db B/step"], rows)
    return (f"{out}\nresume of a 1,000-step run < 50 ms: {verdict(data['resume_1000_pass'])}; "
            f"checkpoint bytes/step growth (largest vs smallest run) "
            f"{fmt_ratio(data['checkpoint_growth'])} <= {GROWTH_LIMIT}x: "
            f"{verdict(data['checkpoint_growth_pass'])}\n"
            "(WAL, synchronous=NORMAL; warm page cache; resume = open + load_state + build "
            "runner, imports apart)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--child", nargs=3, metavar=("DB", "RUN_ID", "MACHINE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        emit_last_line(fresh_resume(*args.child))
        return
    info = machine_info()
    data = run(args.steps, args.repeats)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
