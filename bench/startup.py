"""Start-up time of ``python -m engine --help``: what a user waits for before anything happens.

    .venv/bin/python bench/startup.py [--repeats 10] [--json FILE]

Median of ``--repeats`` fresh processes (after one warm-up, so the page cache is warm), next to
a bare ``python -c pass`` for the interpreter's own share, and an offline run of a one-turn
golden task (``run --golden``, the scripted model) on a new database and on an existing one:
for a short run through the CLI, start-up is nearly all of it. ``-X importtime`` names the
slowest imports, the place to look when the target (300 ms, ``--help``) is missed.
"""

from __future__ import annotations

import argparse
import subprocess
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

from bench.cli import write_task  # noqa: E402
from bench.common import PYTHON, ROOT, fmt_stat, machine_info, machine_line, summary, table  # noqa: E402
from bench.common import write_json as _write_json  # noqa: E402

TARGET_S = 0.300


def time_command(args: Sequence[str], repeats: int) -> dict[str, float]:
    """Wall time of ``args`` in fresh processes: one warm-up, then ``repeats`` timed runs."""
    subprocess.run(args, cwd=ROOT, capture_output=True, check=True)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(args, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return summary(times)


def time_run(repeats: int, *, new_database: bool) -> dict[str, float]:
    """Wall time of an offline run of a one-turn golden task, on a new database each time or
    on one database that every run finds already made."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        task = write_task(Path(tmp), 1)
        dbs = (Path(tmp) / f"db{i}" / "engine.db" for i in range(repeats + 1))
        shared = Path(tmp) / "shared" / "engine.db"

        def args() -> list[str]:
            db = next(dbs) if new_database else shared
            return [PYTHON, "-m", "engine", "run", str(ROOT / "machines" / "coding_agent.yaml"),
                    "--golden", str(task), "--approval", "auto", "--db", str(db), "--quiet"]

        subprocess.run(args(), cwd=ROOT, capture_output=True, check=True)
        times = []
        for _ in range(repeats):
            argv = args()
            t = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, capture_output=True, check=True)
            times.append(time.perf_counter() - t)
    return summary(times)


def slowest_imports(limit: int = 8) -> list[tuple[str, float]]:
    """Imports of ``engine --help`` (two levels deep) by cumulative time (``-X importtime``)."""
    proc = subprocess.run([PYTHON, "-X", "importtime", "-m", "engine", "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    rows: list[tuple[str, float]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, raw = line[len("import time:"):].split("|")
        depth = (len(raw) - len(raw.lstrip(" ")) - 1) // 2
        if depth <= 1:  # a top-level import, or one made directly by it
            rows.append((raw.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:limit]


def run(repeats: int) -> dict[str, Any]:
    help_time = time_command([PYTHON, "-m", "engine", "--help"], repeats)
    bare = time_command([PYTHON, "-c", "pass"], repeats)
    return {"help_s": help_time, "python_bare_s": bare,
            "run_new_db_s": time_run(repeats, new_database=True),
            "run_existing_db_s": time_run(repeats, new_database=False), "target_s": TARGET_S,
            "pass": help_time["median"] < TARGET_S, "slowest_imports": slowest_imports()}


def report(data: dict[str, Any]) -> str:
    rows = [["python -m engine --help", fmt_stat(data["help_s"], digits=1)],
            ["python -c pass", fmt_stat(data["python_bare_s"], digits=1)],
            ["run --golden (1 turn, offline), new database",
             fmt_stat(data["run_new_db_s"], digits=1)],
            ["run --golden (1 turn, offline), existing database",
             fmt_stat(data["run_existing_db_s"], digits=1)]]
    out = table(["command", "ms (median [min-max])"], rows)
    imports = ", ".join(f"{n} {s * 1000:.0f} ms" for n, s in data["slowest_imports"])
    return f"{out}\nslowest imports: {imports}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine_info()
    data = run(args.repeats)
    print(machine_line(info))
    print(report(data))
    _write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
