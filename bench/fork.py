"""The cost of a fork (``fork RUN_ID --step N``) against where in a long run it is taken.

    .venv/bin/python bench/fork.py [--steps 1002] [--at 1 501 1002] [--files 200]
                                   [--repeats 5] [--json FILE]

A real run of the benchmark machine (see ``turnstile_loop``) is driven until it has committed
``--steps`` steps and stopped dead, its workspace holding ``--files`` small files. Then, for
each fork point, ``engine.forks.service.fork`` makes a new run from it, as the CLI does after
opening the store: the state read at the step (``state_at``), the workspace rebuilt in a new
folder (copy + the ledger's changes undone: none here, the tool only reads) and the rows of
the steps before it copied in one transaction. Figures: the whole fork, ``state_at`` alone,
the process's CPU time for the fork (robust to a loaded machine), and the bytes the fork adds
to the database (WAL folded in), per fork and per copied step.
"""

from __future__ import annotations

import argparse
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
    db_bytes,
    fmt_stat,
    machine_info,
    machine_line,
    summary,
    table,
    write_json,
)
from bench.resume import make_run  # noqa: E402


def fill_workspace(workspace: Path, files: int) -> None:
    """``files`` files of ~2 KB in ten folders: what the fork copies besides the rows."""
    for i in range(files):
        path = workspace / f"pkg{i % 10}" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "x = 1\n" * 340)


def measure(db: str, run_id: str, step: int, repeats: int, out: Path) -> dict[str, Any]:
    """``repeats`` forks at ``step``: their times, ``state_at``'s, and the bytes one adds."""
    from engine.forks.service import fork
    from engine.store.sqlite import SqliteStore

    totals, cpus, reads, added = [], [], [], []
    for i in range(repeats):
        before = db_bytes(Path(db))
        store = SqliteStore(db)
        try:
            t0 = time.perf_counter()
            store.state_at(run_id, step)
            t1, c1 = time.perf_counter(), time.process_time()
            made = fork(store, run_id, step, new_id=f"fork-{step}-{i}",
                        workspace=out / f"fork-{step}-{i}")
            t2, c2 = time.perf_counter(), time.process_time()
        finally:
            store.close()
        assert made.exact and made.forked_from.step == step
        reads.append(t1 - t0)
        totals.append(t2 - t1)
        cpus.append(c2 - c1)
        added.append(db_bytes(Path(db)) - before)
    return {"step": step, "fork_s": summary(totals), "fork_cpu_s": summary(cpus),
            "state_at_s": summary(reads),
            "bytes": summary([float(b) for b in added]),
            "bytes_per_copied_step": summary([b / max(step, 1) for b in added])}


def run(steps: int, points: Sequence[int], files: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-fork-") as tmp:
        folder = Path(tmp)
        (folder / "ws").mkdir()
        fill_workspace(folder / "ws", files)
        made = anyio.run(make_run, folder, steps)
        run_bytes = db_bytes(Path(made["db"]))
        results = [measure(made["db"], made["run_id"], at, repeats, folder / "forks")
                   for at in points]
    return {"steps": steps, "files": files, "run_db_bytes": run_bytes, "results": results}


def report(data: dict[str, Any]) -> str:
    rows = [[r["step"], fmt_stat(r["fork_s"]), fmt_stat(r["fork_cpu_s"]),
             fmt_stat(r["state_at_s"]),
             f"{r['bytes']['median'] / 1024:.0f}",
             f"{r['bytes_per_copied_step']['median']:.0f}"] for r in data["results"]]
    out = table(["fork at step", "fork ms", "fork cpu ms", "state_at ms", "KB added",
                 "B/copied step"], rows)
    return (f"{out}\n(a run of {data['steps']} steps, {data['run_db_bytes'] / 1e6:.2f} MB in "
            f"its database; workspace of {data['files']} files of ~2 KB copied by each fork; "
            "'fork ms' includes that copy and the state read; 'cpu ms': this process's user +\n"
            "system time, robust to other load; WAL, synchronous=NORMAL)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1002)
    parser.add_argument("--at", type=int, nargs="+", default=[1, 501, 1002])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine_info()
    data = run(args.steps, args.at, args.files, args.repeats)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
