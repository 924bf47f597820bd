"""Shared pieces of the benchmarks: machine info, statistics, payloads, database sizes, output.

Every benchmark module prints the machine it ran on and medians over repeats with min and
max, and can write its figures as JSON (``--json FILE``) for ``bench/run.py`` to collect.
Payloads are deterministic so Turnstile and LangGraph persist the same bytes per turn.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

TEXT_BYTES = 500
"""Assistant text per model turn."""
RESULT_BYTES = 1000
"""Tool result per tool call."""
ROW_BYTES = 1500
"""The floor's row: what one turn adds (text + tool result)."""

_WORDS = ("the", "runner", "reads", "a", "file", "then", "calls", "tool", "with", "care",
          "and", "checks", "result", "before", "moving", "on", "to", "next", "state", "step")


def filler(n: int, seed: int) -> str:
    """``n`` characters of word-like text, different per ``seed`` (no compression tricks)."""
    out: list[str] = []
    size = 0
    i = seed * 7 + 3
    while size < n:
        word = _WORDS[i % len(_WORDS)]
        out.append(word)
        size += len(word) + 1
        i = (i * 31 + 17) % 9973
    return " ".join(out)[:n]


def turn_text(i: int) -> str:
    """The ~500-byte assistant text of turn ``i`` (0-based)."""
    return f"Turn {i}: " + filler(TEXT_BYTES - len(f"Turn {i}: "), i)


def tool_result(query: str) -> str:
    """The ~1 KB tool result for ``query``."""
    head = f"result for {query}: "
    return head + filler(RESULT_BYTES - len(head), len(query) * 13 + 1)


FINAL_TEXT = "Done: every item was looked up and checked. " + filler(450, 999)
SYSTEM_PROMPT = "You are a benchmark agent. Look items up one at a time, then answer."
TASK = "Look up the items one by one and report when all are checked."


def tool_args(i: int) -> dict[str, str]:
    return {"query": f"item {i}"}


# -- statistics ---------------------------------------------------------------------------


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, min and max (and how many repeats) of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# -- machine ------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """Cores, CPU, OS, Python, SQLite and library versions: printed with every table."""
    return {
        "cores": os.cpu_count(), "cpu": _cpu_model(), "os": platform.platform(),
        "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
        "langgraph": _version("langgraph"),
        "langgraph_checkpoint_sqlite": _version("langgraph-checkpoint-sqlite"),
        "sqlite_utils": _version("sqlite-utils"), "filesystem_of_tmp": _fs_type(),
    }


def _fs_type() -> str:
    try:
        out = subprocess.run(["df", "-T", os.environ.get("TMPDIR", "/tmp")],
                             capture_output=True, text=True, timeout=5).stdout.splitlines()
        return out[1].split()[1] if len(out) > 1 else "?"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def machine_line(info: Mapping[str, Any]) -> str:
    return (f"machine: {info['cores']} cores ({info['cpu']}), {info['os']}, Python "
            f"{info['python']}, SQLite {info['sqlite']}, LangGraph {info['langgraph']} "
            f"(checkpoint-sqlite {info['langgraph_checkpoint_sqlite']}), tmp on "
            f"{info['filesystem_of_tmp']}")


# -- databases ----------------------------------------------------------------------------


def db_bytes(path: Path) -> int:
    """Size of a SQLite database once its WAL is folded in (the bytes a run leaves on disk)."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    total = path.stat().st_size
    for suffix in ("-wal", "-journal"):
        extra = Path(str(path) + suffix)
        if extra.exists():
            total += extra.stat().st_size
    return total


def run_child(args: Sequence[str], timeout: float = 600) -> dict[str, Any]:
    """Run ``python ARGS`` in a fresh process; it prints one JSON object as its last line."""
    proc = subprocess.run([PYTHON, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- output -------------------------------------------------------------------------------


def ms(seconds: float | None, digits: int = 3) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.{digits}f}"


def fmt_stat(stat: Mapping[str, float] | None, scale: float = 1000.0, digits: int = 3) -> str:
    """``median [min-max]`` in milliseconds by default."""
    if not stat:
        return "-"
    f = f"{{:.{digits}f}}"
    return (f"{f.format(stat['median'] * scale)} "
            f"[{f.format(stat['min'] * scale)}-{f.format(stat['max'] * scale)}]")


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table (no colour, so it pastes into an issue as is)."""
    body = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
              for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    out = [line, sep]
    out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in body)
    return "\n".join(out)


def write_json(path: str | None, data: Mapping[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n")


def emit_last_line(data: Mapping[str, Any]) -> None:
    """The child-process protocol of ``run_child``: one JSON object on the last line."""
    print(json.dumps(data, default=str), flush=True)


def timed(fn: Callable[[], Any]) -> float:
    import time

    t = time.perf_counter()
    fn()
    return time.perf_counter() - t
