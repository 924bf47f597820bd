"""Many concurrent runs in one process: wall time, steps per second, peak memory, lost events.

    .venv/bin/python bench/concurrent.py [--runs 1000] [--turns 20] [--delay 0.01]
                                         [--store shared|per-run] [--json FILE]

Each run is a real ``Runner`` on the benchmark machine (five persisted steps per turn) with the
scripted model sleeping ``--delay`` seconds per call (a simulated provider latency), all started
at once in one anyio task group. ``shared``: one ``SqliteStore`` (one connection) for every run;
``per-run``: one ``SqliteStore`` per run on the same file. Afterwards every run's rows are
counted and compared with a run made alone first: a missing or duplicated event, message, step
or transition shows up as a different count or a gap in the event sequence.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    FINAL_TEXT,
    TASK,
    emit_last_line,
    machine_info,
    machine_line,
    table,
    write_json,
)
from bench.turnstile_loop import build_runner, load_bench_machine, script, write_machine  # noqa: E402


def peak_rss_bytes() -> int:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _drive(machine: Any, store: Any, workspace: Path, turns: list[dict[str, Any]],
                 run_id: str, delay: float, errors: list[str]) -> None:
    try:
        runner = build_runner(machine, store, workspace, turns, delay_s=delay)
        state = runner.create(run_id, workspace=str(workspace), config={},
                              data={"task": TASK})
        result = await runner.drive(state)
        if result.status != "completed" or result.state.data.get("final_answer") != FINAL_TEXT:
            errors.append(f"{run_id}: ended {result.status}: {result.error}")
    except Exception as exc:  # counted, not raised: the figure is how many runs failed
        errors.append(f"{run_id}: {type(exc).__name__}: {exc}")


def _counts(store: Any, run_id: str) -> dict[str, Any]:
    counts = store.row_counts(run_id)
    seqs = [e.seq for e in store.events(run_id)]
    counts["event_gaps"] = int(seqs != list(range(len(seqs))))
    return counts


async def run_all(folder: Path, runs: int, turns: int, delay: float,
                  store_mode: str) -> dict[str, Any]:
    """A reference run alone, then ``runs`` runs at once; every run's rows checked."""
    from engine.store.sqlite import SqliteStore

    workspace = folder / "ws"
    workspace.mkdir(exist_ok=True)
    machine = load_bench_machine(write_machine(folder, turns))
    turns_list = script(turns)
    ref_store = SqliteStore(folder / "reference.db")
    ref_errors: list[str] = []
    await _drive(machine, ref_store, workspace, turns_list, "reference", 0.0, ref_errors)
    if ref_errors:
        raise RuntimeError(f"the reference run failed: {ref_errors}")
    expected = _counts(ref_store, "reference")
    ref_store.close()

    db = folder / "concurrent.db"
    shared = SqliteStore(db)
    stores = [shared if store_mode == "shared" else SqliteStore(db) for _ in range(runs)]
    ids = [f"run-{i:05d}" for i in range(runs)]
    errors: list[str] = []
    rss_before = peak_rss_bytes()
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for run_id, store in zip(ids, stores, strict=True):
            tg.start_soon(_drive, machine, store, workspace, turns_list, run_id, delay, errors)
    wall = time.perf_counter() - t0
    rss_peak = peak_rss_bytes()
    mismatched = [r for r in ids if _counts(shared, r) != expected]
    steps = sum(shared.get_run(r).steps for r in ids)
    for store in {id(s): s for s in stores}.values():
        store.close()
    return {"runs": runs, "turns": turns, "delay_s": delay, "store": store_mode,
            "wall_s": wall, "steps": steps, "steps_per_s": steps / wall,
            "peak_rss_bytes": rss_peak, "rss_before_bytes": rss_before,
            "errors": len(errors), "error_samples": errors[:5],
            "runs_with_lost_or_duplicated_rows": len(mismatched),
            "mismatch_samples": mismatched[:5], "expected_rows_per_run": expected,
            "setting": "WAL, synchronous=NORMAL (Turnstile default)"}


def run(runs: int, turns: int, delay: float, store_mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-concurrent-") as tmp:
        return anyio.run(run_all, Path(tmp), runs, turns, delay, store_mode)


def report(data: dict[str, Any]) -> str:
    return table(
        ["runs x turns", "store", "wall s", "steps", "steps/s", "peak RSS MB", "errors",
         "lost/dup runs"],
        [[f"{data['runs']} x {data['turns']}", data["store"], f"{data['wall_s']:.2f}",
          data["steps"], f"{data['steps_per_s']:.0f}", f"{data['peak_rss_bytes'] / 2**20:.0f}",
          data["errors"], data["runs_with_lost_or_duplicated_rows"]]])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.01)
    parser.add_argument("--store", choices=["shared", "per-run"], default="shared")
    parser.add_argument("--json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    data = run(args.runs, args.turns, args.delay, args.store)
    if args.child:
        emit_last_line(data)
        return
    info = machine_info()
    print(machine_line(info))
    print(report(data))
    for line in data["error_samples"] + data["mismatch_samples"]:
        print("  ", line)
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
