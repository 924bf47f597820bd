"""Tool-layer benchmark: search_text vs ``grep -rn``, run_shell vs ``subprocess.run``, cancel time.

    .venv/bin/python bench/tools.py [--files 50000] [--commands 200] [--json FILE]

1. search_text over a generated tree of N files (500 directories, ~1.5 KB of code-like text
   each, a ``.gitignore`` and one ignored directory) vs ``grep -rn`` on the same tree (grep
   does not read ``.gitignore``, so it searches a little more). Best of 3, warm page cache.
2. run_shell (through ``invoke``, with event emission) vs ``subprocess.run(..., shell=True)`` for
   N short commands (``echo hi``), sequentially.
3. Cancellation: time from cancelling a ``sleep 1000 | cat & sleep 1000`` call to the moment no
   process of its group is alive.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
# Run as a script, bench/ is first on sys.path and bench/concurrent.py would shadow the stdlib.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, write_json  # noqa: E402
from engine.tooling import ToolContext, ToolRegistry  # noqa: E402
from engine.tooling.invoke import invoke  # noqa: E402
from engine.tooling.process import group_alive  # noqa: E402
from engine.vocabulary.state import ToolCall  # noqa: E402
from turnstile_tools import builtin_specs  # noqa: E402

WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "config", "handler", "request",
         "response", "buffer", "index", "parse", "render", "update", "client", "server",
         "session", "token", "stream", "record")


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)
    dirs = 500
    for d in range(dirs):
        sub = root / f"pkg{d // 50:02}" / f"mod{d:03}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(files // dirs):
            lines = []
            for n in range(40):
                a, b = rng.choice(WORDS), rng.choice(WORDS)
                lines.append(f"    {a}_{n} = compute_{b}({a}, {n})  # {rng.choice(WORDS)}")
            if rng.random() < 0.01:
                lines.append("    raise NeedleError('needle found here')")
            (sub / f"file{i:03}.py").write_text("def f():\n" + "\n".join(lines) + "\n")
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir(exist_ok=True)
    (root / "ignored" / "x.py").write_text("NeedleError\n")


def best_of(n: int, fn: Any) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def sink(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, emit=sink, call_id="bench")


def bench_search(files: int) -> dict[str, float]:
    registry = ToolRegistry(builtin_specs())
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        t = time.perf_counter()
        make_tree(ws, files)
        print(f"generated {files} files in {time.perf_counter() - t:.1f}s")
        found: dict[str, Any] = {}

        def ours() -> None:
            call = ToolCall("s", "search_text", {"pattern": r"Needle\w+", "max_results": 5000})
            found["r"] = anyio.run(invoke, registry, call, ctx(ws))

        def grep() -> None:
            found["g"] = subprocess.run(["grep", "-rnE", r"Needle[A-Za-z0-9_]+", "."], cwd=ws,
                                        capture_output=True, text=True)

        grep()  # warm the page cache
        t_ours, t_grep = best_of(3, ours), best_of(3, grep)
        ours_hits = found["r"].data["matches"]
        grep_hits = len(found["g"].stdout.splitlines())
        print(f"search_text: {t_ours * 1000:.0f} ms ({ours_hits} matches)   "
              f"grep -rn: {t_grep * 1000:.0f} ms ({grep_hits} matches, .gitignore not applied)")
        print(f"search_text / grep ratio: {t_ours / t_grep:.2f}x")
        return {"search_text_s": t_ours, "grep_s": t_grep, "search_ratio": t_ours / t_grep}


def bench_shell(commands: int) -> dict[str, float]:
    registry = ToolRegistry(builtin_specs())
    ws = Path.cwd()

    async def ours() -> None:
        for _ in range(commands):
            r = await invoke(registry, ToolCall("s", "run_shell", {"command": "echo hi"}), ctx(ws))
            assert not r.is_error

    def plain() -> None:
        for _ in range(commands):
            subprocess.run("echo hi", shell=True, capture_output=True, check=True)

    t_ours = best_of(3, lambda: anyio.run(ours))
    t_plain = best_of(3, plain)
    print(f"run_shell: {t_ours / commands * 1000:.2f} ms/command   subprocess.run: "
          f"{t_plain / commands * 1000:.2f} ms/command   ({commands} commands)")
    print(f"run_shell / subprocess.run ratio: {t_ours / t_plain:.2f}x")
    return {"run_shell_ms": t_ours / commands * 1000,
            "subprocess_run_ms": t_plain / commands * 1000, "shell_ratio": t_ours / t_plain}


def bench_cancel() -> dict[str, float]:
    registry = ToolRegistry(builtin_specs())
    pgids: list[int] = []

    def record(kind: str, payload: Mapping[str, Any]) -> None:
        if kind == "tool_process":
            pgids.append(payload["pgid"])

    async def main() -> float:
        c = ToolContext(workspace=Path.cwd(), emit=record, call_id="cancel")
        call = ToolCall("x", "run_shell", {"command": "sleep 1000 | cat & sleep 1000"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(invoke, registry, call, c)
            while not pgids:
                await anyio.sleep(0.005)
            await anyio.sleep(0.3)
            t = time.perf_counter()
            tg.cancel_scope.cancel()
        while group_alive(pgids[-1]):
            await anyio.sleep(0.001)
        return time.perf_counter() - t

    times = [anyio.run(main) for _ in range(5)]
    print(f"cancellation to empty process group: max {max(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms (5 runs)")
    return {"cancel_max_ms": max(times) * 1000, "cancel_min_ms": min(times) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    info = machine_info()
    print(machine_line(info))
    figures = {**bench_search(args.files), **bench_shell(args.commands), **bench_cancel()}
    write_json(args.json, {"benchmark": "tools", "machine": info, **figures})


if __name__ == "__main__":
    main()
