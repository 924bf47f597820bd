"""Permission-layer benchmark: corpus pass counts and decision latency per shell command.

    .venv/bin/python bench/permissions.py [--rounds 20] [--json FILE]

Runs every command of ``tests/shell_corpus.py`` through ``classify_command`` (what
``engine policy check-shell`` does) and through ``policy.decide`` for a ``run_shell`` call
(rules, preview and capability included), in a temporary workspace, and prints:
pass counts against the expected decisions, the over-blocking rate of the plainly read-only
commands, destructive commands allowed (must be 0), and mean / median / p99 latency per
command (target: mean under 2 ms). The first call (loading the grammar) is reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, write_json  # noqa: E402
from engine.state import ToolCall  # noqa: E402
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec  # noqa: E402
from tests.shell_corpus import CORPUS  # noqa: E402

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}
TARGET_MEAN_MS = 2.0


async def _unused(args: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult("")


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    for name in ("README.md", "src/app.py", "data.csv", "package.json"):
        (ws / name).write_text("x\n")
    return ws


def _latencies(fn: Callable[[str], Any], rounds: int) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for command, *_ in CORPUS:
            t0 = time.perf_counter()
            fn(command)
            samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _stats(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"mean_ms": statistics.fmean(ordered), "median_ms": statistics.median(ordered),
            "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "max_ms": ordered[-1], "samples": len(ordered)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="passes over the corpus")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    from engine.permissions.policy import Policy, PolicyContext, decide
    from engine.permissions.shell import classify_command
    with tempfile.TemporaryDirectory() as tmp:
        ws = _workspace(Path(tmp))
        classify_command("ls", ws, ENV)
        first_ms = (time.perf_counter() - t0) * 1000

        results = {c: classify_command(c, ws, ENV) for c, *_ in CORPUS}
        passed = [c for c, d, r, _ in CORPUS
                  if results[c].decision == d and (not r or results[c].risk == r)]
        readonly = [c for c, *_, tag in CORPUS if tag == "readonly"]
        overblocked = [c for c in readonly if results[c].decision != "allow"]
        destructive_allowed = [c for c, v in results.items()
                               if v.risk == "destructive" and v.decision != "deny"]
        expected_destructive = [c for c, *_, tag in CORPUS if tag == "destructive"]
        denied_destructive = [c for c in expected_destructive if results[c].decision == "deny"]

        classify = _stats(_latencies(lambda c: classify_command(c, ws, ENV), args.rounds))
        spec = ToolSpec("run_shell", "1", "shell", None, _unused, risk="exec")
        ctx = PolicyContext(ws, Policy.from_data(
            {"rules": [{"decision": "allow", "command": "python -m pytest"},
                       {"decision": "deny", "risk": "network"}]}), ENV)
        decided = _stats(_latencies(
            lambda c: decide(ToolCall("b", "run_shell", {"command": c}), spec, ctx),
            args.rounds))

    info = machine_info()
    print(machine_line(info))
    print(f"corpus: {len(passed)}/{len(CORPUS)} commands get the expected decision")
    print(f"read-only commands allowed: {len(readonly) - len(overblocked)}/{len(readonly)} "
          f"(over-blocking {len(overblocked) / len(readonly):.1%}, target < 5%)")
    print(f"destructive commands denied: {len(denied_destructive)}/{len(expected_destructive)}; "
          f"destructive-risk commands not denied: {len(destructive_allowed)} (target 0)")
    print(f"first call (imports + grammar load): {first_ms:.1f} ms")
    for name, s in (("classify_command (check-shell)", classify),
                    ("policy.decide(run_shell)", decided)):
        verdict = "PASS" if s["mean_ms"] < TARGET_MEAN_MS else "FAIL"
        print(f"{name:<32} mean {s['mean_ms']:.3f} ms  median {s['median_ms']:.3f} ms  "
              f"p99 {s['p99_ms']:.3f} ms  max {s['max_ms']:.2f} ms  "
              f"({s['samples']} decisions)  {verdict} (< {TARGET_MEAN_MS} ms mean)")
    for command in overblocked:
        print(f"  over-blocked: {command!r}: {results[command].reason}")
    for command in sorted({c for c, *_ in CORPUS} - set(passed)):
        print(f"  unexpected: {command!r}: {results[command].decision}")
    write_json(args.json, {
        "machine": info, "corpus": len(CORPUS), "passed": len(passed),
        "readonly": len(readonly), "overblocked": len(overblocked),
        "destructive_expected": len(expected_destructive),
        "destructive_denied": len(denied_destructive),
        "destructive_not_denied": len(destructive_allowed), "first_call_ms": first_ms,
        "classify": classify, "decide": decided})
    ok = (len(passed) == len(CORPUS) and not destructive_allowed
          and len(overblocked) / len(readonly) < 0.05 and classify["mean_ms"] < TARGET_MEAN_MS)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
