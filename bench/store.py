"""Milliseconds per step through the ``Store`` protocol: SQLite vs PostgreSQL, same steps.

    .venv/bin/python bench/store.py [--steps 400] [--repeats 3] [--store-url URL] [--json FILE]

A step is what the runner writes for one agent turn: a buffered event and the step commit (its
~1.5 KB message, the transition, the run's totals and the next step's pre-checkpoint) in one
transaction. A tool call adds the ledger's intent row (committed on its own and flushed to disk:
``durable=True``) and its outcome. With no fsync per commit: SQLite ``durability="normal"``
(``synchronous=NORMAL``) beside PostgreSQL with ``synchronous_commit=off`` set in its URL; with
one: SQLite ``"full"`` beside PostgreSQL as it comes (``synchronous_commit=on``, the store's
default). PostgreSQL is a throw-away local cluster (``tests/pg_cluster.py``, fsync on), reached
over TCP on 127.0.0.1, unless ``--store-url`` names a database to use (its tables must not
exist yet, or be Turnstile's).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    ROW_BYTES,
    filler,
    fmt_stat,
    machine_info,
    machine_line,
    summary,
    table,
    write_json,
)
from engine.store.base import EffectRecord, StepBegin, StepCommit, Store  # noqa: E402
from engine.vocabulary.state import Message, RunInfo, RunState, Usage  # noqa: E402

SETTINGS = {
    # label: (SQLite durability, PostgreSQL URL suffix, what PostgreSQL does)
    "no fsync per commit": ("normal", "?options=-csynchronous_commit%3Doff",
                            "synchronous_commit=off (in the URL)"),
    "fsync per commit": ("full", "", "synchronous_commit=on (default)"),
}


def _new_run(store: Store) -> str:
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    state = RunState(run_id, "bench", "s", 0, (Message("system", "bench"),), {"task": "t"})
    info = RunInfo(run_id, "bench", "bench.yaml", "h", "running", "s", "/ws", time.time(),
                   time.time(), 0, 0, 0, 0.0, {})
    store.create_run(info, state, StepBegin(0, "s", "call_model", time.time()))
    return run_id


def steps_s(store: Store, steps: int) -> tuple[float, str]:
    """Seconds per step over ``steps`` steps of a fresh run, and the run."""
    run_id = _new_run(store)
    body = filler(ROW_BYTES, 1)
    t = time.perf_counter()
    for seq in range(steps):
        now = time.time()
        store.append_event(run_id, seq, "model_call", {"tokens": seq}, now)
        store.commit_step(run_id, StepCommit(
            seq=seq, state="s", trigger="next", dest="s", ended_at=now, updates={"i": seq},
            messages=(Message("assistant", body),), first_message_seq=seq + 1,
            usage=Usage(seq, seq, 0, 0.0), next_step=StepBegin(seq + 1, "s", "call_model", now)))
    elapsed = (time.perf_counter() - t) / steps
    store.flush()
    return elapsed, run_id


def intents_s(store: Store, calls: int) -> float:
    """Seconds per tool call's ledger rows: the durable intent, then the outcome."""
    run_id = _new_run(store)
    t = time.perf_counter()
    for i in range(calls):
        intent = EffectRecord(run_id, f"c{i}", i, "run_shell", "1", "started", False, True,
                              {"command": "echo"}, time.time())
        store.record_effect(intent, durable=True)
        store.record_effect(EffectRecord(**{**{k: getattr(intent, k)
                                               for k in intent.__slots__},
                                            "status": "done", "result": {"content": "ok"}}))
    return (time.perf_counter() - t) / calls


def load_s(store: Store, run_id: str) -> float:
    t = time.perf_counter()
    store.load_state(run_id)
    return time.perf_counter() - t


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    """``given``, or a database in a throw-away local cluster (fsync on, like a real server)."""
    if given:
        yield given
        return
    from tests.pg_cluster import PgCluster

    with PgCluster(settings={"fsync": "on"}) as cluster:
        yield cluster.create_database("bench")


def measure(opener: Callable[[], Store], steps: int, repeats: int) -> dict[str, Any]:
    per_step, per_call, loads = [], [], []
    for _ in range(repeats):
        store = opener()
        try:
            seconds, run_id = steps_s(store, steps)
            per_step.append(seconds)
            per_call.append(intents_s(store, max(1, steps // 4)))
            loads.append(load_s(store, run_id))
        finally:
            store.close()
    return {"per_step_s": summary(per_step), "per_tool_call_ledger_s": summary(per_call),
            "load_state_s": summary(loads)}


def run(steps: int, repeats: int, store_url: str | None) -> dict[str, Any]:
    from engine.store.postgres import PostgresStore
    from engine.store.sqlite import SqliteStore

    out: dict[str, Any] = {"steps": steps, "row_bytes": ROW_BYTES, "results": {}}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp, \
            postgres_url(store_url) as url:
        for label, (durability, suffix, how) in SETTINGS.items():
            def sqlite(d: Any = durability) -> Store:
                return SqliteStore(Path(tmp) / f"{d}.db", durability=d)

            def postgres(u: str = url + suffix) -> Store:
                return PostgresStore(u)

            lite = {"store": "SQLite file", "commits": label,
                    "setting": f"durability={durability}", **measure(sqlite, steps, repeats)}
            pg = {"store": "PostgreSQL, 127.0.0.1", "commits": label, "setting": how,
                  **measure(postgres, steps, repeats)}
            base = lite["per_step_s"]["median"]
            pg["vs_sqlite"] = pg["per_step_s"]["median"] / base if base else None
            out["results"][f"sqlite-{durability}"] = lite
            out["results"][f"postgres-{durability}"] = pg
    return out


def report(data: dict[str, Any]) -> str:
    rows = []
    for e in data["results"].values():
        vs = e.get("vs_sqlite")
        rows.append([e["store"], e["setting"], fmt_stat(e["per_step_s"]),
                     f"{vs:.1f}x" if vs else "-", fmt_stat(e["per_tool_call_ledger_s"]),
                     fmt_stat(e["load_state_s"])])
    return table(["store", "setting", "ms per step", "vs SQLite",
                  "ms per tool call (ledger)", f"ms load_state ({data['steps']} steps)"], rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store-url", help="a PostgreSQL database to use instead of a "
                        "throw-away local cluster")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine_info()
    data = run(args.steps, args.repeats, args.store_url)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
