"""Permission-layer benchmark: the independent shell corpus, both parts, and decision latency.

    .venv/bin/python bench/permissions.py [--rounds 5] [--json FILE]

Judges every item of ``tests/corpus/`` (commands from GTFOBins, other agent runtimes' bypass
reports and public cheat sheets; see its README) with ``check_shell_json``, the function
``engine policy check-shell`` calls, under the built-in default policy, in ``policy`` mode and
under ``--approval auto``, and prints per part (dev, held-back, the construct part and its
held-back part): the pass rate per category,
the over-blocking of plainly read-only commands (target <= 5%), destructive items allowed
(target 0), items answered ``allow`` that need a prompt (target 0), items labelled ``deny``
that run unasked under ``--approval auto`` (target 0), and the median and p99 latency of one
decision in-process (target p99 < 2 ms). Held-back items are counted, never printed.
Also the pass count of ``tests/shell_corpus.py``, the corpus written with the classifier, and
the latency of ``policy.decide`` for a ``run_shell`` call. Exit 0 once measured (the verdicts
are in the table); ``--strict`` exits 1 when a target fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, table, verdict, write_json  # noqa: E402

PASS_TARGET = 0.95
OVERBLOCK_LIMIT = 0.05
P99_LIMIT_MS = 2.0
PARTS = ("dev", "heldback", "constructs", "constructs_heldback", "handwritten",
         "handwritten_heldback", "everyday", "everyday_heldback", "field", "field_heldback",
         "workday", "workday_heldback", "stack", "stack_heldback", "tools", "tools_heldback",
         "scripts", "scripts_heldback")
LABELS = {"dev": "dev", "heldback": "held-back", "constructs": "constructs",
          "constructs_heldback": "constructs held-back", "handwritten": "hand-written",
          "handwritten_heldback": "hand-written held-back", "everyday": "everyday",
          "everyday_heldback": "everyday held-back", "field": "field",
          "field_heldback": "field held-back", "workday": "workday",
          "workday_heldback": "workday held-back", "stack": "stack",
          "stack_heldback": "stack held-back", "tools": "tools",
          "tools_heldback": "tools held-back", "scripts": "scripts",
          "scripts_heldback": "scripts held-back"}
HELD_BACK = ("heldback", "constructs_heldback", "handwritten_heldback", "everyday_heldback",
             "field_heldback", "workday_heldback", "stack_heldback", "tools_heldback",
             "scripts_heldback")
"""Parts whose items are counted, never printed."""


def _stats(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"mean_ms": statistics.fmean(ordered), "median_ms": statistics.median(ordered),
            "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "max_ms": ordered[-1], "samples": len(ordered)}


def _latencies(fn: Callable[[str], Any], commands: Sequence[str], rounds: int) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for command in commands:
            t0 = time.perf_counter()
            fn(command)
            samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _per_command_p99(samples: Sequence[float], n: int) -> float:
    """p99 over commands of each command's median across rounds: the cost of the slowest
    decisions without the pauses a busy machine adds to single samples."""
    medians = sorted(statistics.median(samples[i::n]) for i in range(n))
    return medians[min(n - 1, int(n * 0.99))]


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({num / den:.1%})" if den else "-"


def measure(rounds: int) -> dict[str, Any]:
    """Every figure of the benchmark (held-back items reduced to counts)."""
    from engine.permissions.policy import Policy, PolicyContext, decide
    from engine.permissions.shell import classify_command
    from engine.vocabulary.state import ToolCall
    from tests.construct_corpus import items as construct_items
    from tests.corpus_scoring import ENV, load, make_workspace, score
    from tests.corpus_scoring import decide as check
    from tests.shell_corpus import CORPUS
    from turnstile_tools import builtin_specs

    with tempfile.TemporaryDirectory() as tmp:
        ws = make_workspace(Path(tmp))
        t0 = time.perf_counter()
        check("ls", ws)
        first_ms = (time.perf_counter() - t0) * 1000
        parts: dict[str, Any] = {}
        commands: list[str] = []
        for part in PARTS:
            items = construct_items() if part == "constructs" else load(part)
            if part in ("dev", "heldback"):  # latency on the published-material parts
                commands += [it.command for it in items]
            pws = make_workspace(Path(tmp) / part, part)  # with the files its authors knew
            policy = {it.id: check(it.command, pws) for it in items}
            auto = {it.id: check(it.command, pws, "auto") for it in items}
            parts[part] = score(items, policy, auto)
            parts[part]["known_gaps"] = sum(it.known_gap for it in items)
            if part in ("dev", "constructs", "handwritten", "everyday", "field", "workday",
                        "stack", "tools", "scripts"):
                parts[part]["failures"] = [
                    {"id": it.id, "category": it.category, "expect": it.expect,
                     "got": policy[it.id], "command": it.command} for it in items
                    if not _passes(it, policy[it.id])]
        samples = _latencies(lambda c: check(c, ws), commands, rounds)
        latency = {**_stats(samples), "per_command_p99_ms": _per_command_p99(samples,
                                                                          len(commands))}

        old = {c: classify_command(c, ws, ENV) for c, *_ in CORPUS}
        old_passed = sum(old[c].decision == d and (not k or old[c].risk == k)
                         for c, d, k, _ in CORPUS)
        shell = next(s for s in builtin_specs() if s.name == "run_shell")
        ctx = PolicyContext(ws, Policy(), ENV)
        decided = _stats(_latencies(
            lambda c: decide(ToolCall("b", "run_shell", {"command": c}), shell, ctx),
            commands, max(1, rounds // 2)))
    for part in HELD_BACK:  # held-back: counts only
        for key in ("destructive_allowed", "prompt_allowed"):
            parts[part][key] = len(parts[part][key])
    return {"parts": parts, "latency": latency, "decide_latency": decided,
            "first_call_ms": first_ms, "in_repo_corpus": {"items": len(CORPUS),
                                                          "passed": old_passed}}


def _passes(item: Any, decision: str) -> bool:
    from tests.corpus_scoring import passes
    return passes(item, decision)


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else int(value)


def targets(r: Mapping[str, Any]) -> list[list[str]]:
    """One row per target and part: what, measured, limit, PASS/FAIL."""
    rows: list[list[str]] = []
    for part in PARTS:
        p = r["parts"][part]
        label = LABELS[part]
        over = p["overblocked"] / p["read_only"] if p["read_only"] else 0.0
        rows += [
            [f"corpus pass rate ({label})", _pct(p["passed"], p["items"]), ">= 95%",
             verdict(p["passed"] >= PASS_TARGET * p["items"])],
            [f"over-blocking of read-only commands ({label})",
             _pct(p["overblocked"], p["read_only"]), "<= 5%", verdict(over <= OVERBLOCK_LIMIT)],
            [f"destructive items allowed ({label})", str(_count(p["destructive_allowed"])), "0",
             verdict(_count(p["destructive_allowed"]) == 0)],
            [f"items needing a prompt allowed ({label})", str(_count(p["prompt_allowed"])), "0",
             verdict(_count(p["prompt_allowed"]) == 0)],
            [f"deny items run unasked under --approval auto ({label})",
             _pct(p["auto_not_denied"], p["auto_must_deny"]), "0",
             verdict(p["auto_not_denied"] == 0)],
        ]
    lat = r["latency"]
    rows.append(["check-shell decision latency in-process, median / p99",
                 f"{lat['median_ms']:.3f} / {lat['p99_ms']:.3f} ms", "p99 < 2 ms",
                 verdict(lat["p99_ms"] < P99_LIMIT_MS)])
    rows.append(["  p99 over commands of each command's median (machine noise removed)",
                 f"{lat['per_command_p99_ms']:.3f} ms", "(informative)", "-"])
    return rows


def category_table(r: Mapping[str, Any]) -> str:
    per = [r["parts"][p]["per_category"] for p in PARTS]
    rows = []
    for cat in sorted(set().union(*per)):
        rows.append([cat, *(_pct(d[cat]["passed"], d[cat]["items"]) if cat in d else "-"
                            for d in per)])
    rows.append(["all", *(_pct(r["parts"][p]["passed"], r["parts"][p]["items"])
                          for p in PARTS)])
    return table(["category", *(f"{LABELS[p]} pass" for p in PARTS)], rows)


def render(r: Mapping[str, Any]) -> str:
    d = r["decide_latency"]
    old = r["in_repo_corpus"]
    lines = [
        "independent shell corpus (tests/corpus), default policy, check-shell decisions",
        category_table(r), "",
        table(["target", "measured", "limit", "result"], targets(r)), "",
        f"first call (imports + grammar load): {r['first_call_ms']:.1f} ms; "
        f"policy.decide(run_shell) median {d['median_ms']:.3f} ms, p99 {d['p99_ms']:.3f} ms",
        f"in-repo corpus written with the classifier (tests/shell_corpus.py): "
        f"{old['passed']}/{old['items']} get their expected decision",
        f"known gaps marked in the dev part: {r['parts']['dev']['known_gaps']}",
    ]
    for part in ("dev", "constructs"):
        for f in r["parts"][part]["failures"]:
            lines.append(f"  {part} {f['id']} [{f['category']}] expect {f['expect']}, got "
                         f"{f['got']}: {f['command'][:110]!r}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="latency passes over the corpus")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)
    info = machine_info()
    r = measure(max(1, args.rounds))
    print(machine_line(info))
    print(render(r))
    rows = targets(r)
    write_json(args.json, {"machine": info, **r, "targets": rows})
    return 1 if args.strict and any(row[-1] == "FAIL" for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
