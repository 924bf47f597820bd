"""Shell classifier against bash: generated commands run for real, their effect vs the verdict.

    .venv/bin/python bench/shell_oracle.py [--count 2000] [--seed 1] [--json FILE] [--show]

Generates ``--count`` distinct commands (seeded: the same seed gives the same commands) by
wrapping payloads (``rm -rf src``, ``git reset --hard``, ``ls``, ``touch new.txt``...) in 1-3
bash constructs (``tests/shell_generator.py``), judges each with ``check_shell_json`` (the
function ``engine policy check-shell`` calls; ``policy`` and ``--approval auto``), runs it in
bash inside bubblewrap in a throwaway git workspace, and classifies what it did to the files as
``destroyed``, ``wrote`` or ``none`` (``tests/shell_oracle.py`` states the rule). Commands are
split by a hash of their text: 70% tuning, 30% held back. Per part it prints the effects seen
and the misses: **effect allowed without a prompt** (a command that changed the workspace,
answered ``allow``) and **hidden destructive not denied** (a destructive command that runs
unasked under ``--approval auto``), plus the ``none`` commands denied or asked (over-blocking,
informative). ``--show`` prints the tuning part's misses (command, transformations, effect,
decisions), grouped by the smallest sub-composition that still misses (found by running and
judging the command again with fewer of its transformations), and the miss rate of each
transformation; held-back misses are counted, never printed. Exit 0 once measured; exit 2
with one line when bubblewrap cannot run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, table, write_json  # noqa: E402

ROWS = (("commands", "commands"), ("effect: destroyed", "destroyed"), ("effect: wrote", "wrote"),
        ("effect: read outside the workspace", "read_outside"), ("effect: none", "none"),
        ("timed out (5 s)", "timeouts"),
        ("effect allowed without a prompt (policy allow)", "effect_allowed_without_prompt"),
        ("hidden destructive not denied (auto runs it)", "hidden_destructive_not_denied"),
        ("  destroyed, policy decision not deny", "destroyed_not_denied_by_policy"),
        ("none, denied (informative)", "none_denied"), ("none, asked (informative)", "none_asked"))


def measure(count: int, seed: int, reduce: bool) -> dict[str, Any]:
    """Every figure of the run; the tuning part's misses in full (with ``reduce``, each with
    the smallest part of its composition that still misses), held-back ones as counts."""
    from tests.shell_generator import BY_NAME, generate
    from tests.shell_oracle import PARTS, misses, run_all, summary

    gens = list(generate(count, seed))
    t0 = time.perf_counter()
    results = run_all(gens)
    elapsed = time.perf_counter() - t0
    parts = {p: summary(r for r in results if r.part == p) for p in PARTS}
    tuning = misses(r for r in results if r.part == "tuning")
    smallest = _smallest(tuning) if reduce else {}
    shown = [{"command": r.command, "transforms": list(r.transforms), "payload": r.payload,
              "effect": r.effect, "why": list(r.why), "policy": r.policy, "auto": r.auto,
              "allowed_effect": r.allowed_effect, "hidden_destructive": r.hidden_destructive,
              "smallest": list(smallest.get(r.command, r.transforms))} for r in tuning]
    return {"seed": seed, "count": len(gens), "transformations": len(BY_NAME),
            "seconds": elapsed, "commands_per_second": len(gens) / elapsed if elapsed else 0.0,
            "parts": parts, "tuning_misses": shown,
            "tuning_miss_rate_by_transformation": _rates(r for r in results
                                                         if r.part == "tuning")}


def _smallest(found: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """For each miss, the shortest sub-composition (same payload, fewer transformations,
    same order) that, run and judged again, is still the same kind of miss."""
    from tests.shell_generator import Generated, reductions
    from tests.shell_oracle import run_all

    tries = {r.command: reductions(Generated(r.command, r.payload, r.transforms))
             for r in found}
    unique = list({g.command: g for gs in tries.values() for g in gs}.values())
    seen = {r.command: r for r in run_all(unique)} if unique else {}
    out: dict[str, tuple[str, ...]] = {}
    for r in found:
        same = [g.transforms for g in tries[r.command]
                if (seen[g.command].allowed_effect, seen[g.command].hidden_destructive)
                == (r.allowed_effect, r.hidden_destructive)]
        out[r.command] = same[0] if same else r.transforms
    return out


def _rates(results: Any) -> dict[str, list[int]]:
    """Per transformation: [misses, commands] among the commands that use it."""
    per: dict[str, list[int]] = {}
    for r in results:
        for name in set(r.transforms):
            row = per.setdefault(name, [0, 0])
            row[0] += r.allowed_effect or r.hidden_destructive
            row[1] += 1
    return dict(sorted(per.items(), key=lambda kv: (-kv[1][0], kv[0])))


def render(r: Mapping[str, Any], show: bool) -> str:
    parts = r["parts"]

    def cell(part: str, key: str) -> Any:
        return parts[part][key] if key in parts[part] else parts[part]["effects"][key]

    lines = [f"shell classifier against bash: {r['count']} commands (seed {r['seed']}, "
             f"{r['transformations']} transformations), {r['seconds']:.1f} s, "
             f"{r['commands_per_second']:.1f} commands/s",
             table(["figure", "tuning", "held-back"],
                   [[label, cell("tuning", key), cell("heldback", key)] for label, key in ROWS])]
    if show:
        lines += ["", f"tuning-part misses ({len(r['tuning_misses'])}), grouped by the smallest "
                      "composition that still misses:"]
        groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
        for m in r["tuning_misses"]:
            groups.setdefault(tuple(m["smallest"]), []).append(m)
        for key, found in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"- {' + '.join(key) or '(the payload alone)'}: {len(found)}")
            for m in found:
                kind = "ALLOWED EFFECT" if m["allowed_effect"] else "hidden destructive"
                lines.append(f"    [{kind}] {' + '.join(m['transforms'])} on {m['payload']!r}: "
                             f"{m['effect']}, policy {m['policy']}, auto {m['auto']}\n"
                             f"      {m['command']!r}")
        worst = [(k, v) for k, v in r["tuning_miss_rate_by_transformation"].items() if v[0]]
        lines += ["", "tuning misses per transformation (misses/commands using it): "
                  + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in worst)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="commands to generate and run")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--show", action="store_true",
                        help="print the tuning part's misses (held-back ones are never printed)")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    from tests.shell_oracle import OracleUnavailable

    info = machine_info()
    try:
        result = measure(args.count, args.seed, args.show)
    except OracleUnavailable as exc:
        print(f"shell oracle: {exc} (install bubblewrap and allow user namespaces)",
              file=sys.stderr)
        return 2
    print(machine_line(info))
    print(render(result, args.show))
    write_json(args.json, {"machine": info, **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
