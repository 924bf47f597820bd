"""The SQLite floor on this machine: one ~1.5 KB row appended per transaction, in WAL mode.

    .venv/bin/python bench/sqlite_floor.py [--commits 2000] [--repeats 5] [--json FILE]

What a durable per-step runtime cannot beat: ``BEGIN IMMEDIATE; INSERT one row; COMMIT`` with
constant SQL on one connection, at ``synchronous=NORMAL`` (no fsync per commit; survives a
killed process) and ``synchronous=FULL`` (an fsync per commit; survives a power loss).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
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

SYNCS = ("NORMAL", "FULL")


def commit_rows(db: Path, sync: str, commits: int) -> float:
    """Seconds per commit over ``commits`` one-row transactions on a fresh database."""
    conn = sqlite3.connect(str(db), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("CREATE TABLE IF NOT EXISTS log (run_id TEXT, seq INTEGER, body TEXT,"
                     " PRIMARY KEY (run_id, seq))")
        body = filler(ROW_BYTES, 1)
        t = time.perf_counter()
        for seq in range(commits):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO log (run_id, seq, body) VALUES (?,?,?)",
                         ("run", seq, body))
            conn.execute("COMMIT")
        return (time.perf_counter() - t) / commits
    finally:
        conn.close()


def run(commits: int, repeats: int, syncs: Sequence[str] = SYNCS) -> dict[str, Any]:
    """Per-commit time for each synchronous setting, ``repeats`` fresh databases each."""
    out: dict[str, Any] = {"commits": commits, "row_bytes": ROW_BYTES, "results": {}}
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        for sync in syncs:
            n = commits if sync != "FULL" else max(1, commits // 4)  # fsyncs are slow
            times = [commit_rows(Path(tmp) / f"floor-{sync}-{i}.db", sync, n)
                     for i in range(repeats)]
            out["results"][sync.lower()] = {"per_commit_s": summary(times), "commits": n,
                                            "setting": f"WAL, synchronous={sync}"}
    return out


def report(data: dict[str, Any]) -> str:
    return table(["setting", "commits", "ms per commit"],
                 [[e["setting"], e["commits"], fmt_stat(e["per_commit_s"])]
                  for e in data["results"].values()])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine_info()
    data = run(args.commits, args.repeats)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
