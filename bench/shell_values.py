"""The classifier's values against bash: seeded chains of value operations, each ending in a
probe that prints a value, compared word by word with what bash prints.

    .venv/bin/python bench/shell_values.py [--count 20000] [--seed 1] [--json FILE] [--show]

``tests/shell_values_oracle.py`` states the rule. Chains are split by a hash of their text:
70% tuning, 30% held back. Per part it prints how many chains the classifier followed to a
value it claims to know and how many of those bash contradicts (mismatches); ``--show``
prints the tuning part's mismatches, never the held-back part's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, table, write_json  # noqa: E402


def measure(count: int, seed: int) -> dict[str, Any]:
    from tests.shell_values_oracle import generate, judge

    t0 = time.perf_counter()
    cases = judge(list(generate(count, seed)))
    elapsed = time.perf_counter() - t0
    parts: dict[str, dict[str, int]] = {}
    for name, key in (("tuning", "dev"), ("held-back", "heldback")):
        mine = [c for c in cases if c.part == key]
        parts[name] = {"chains": len(mine),
                       "compared": sum(c.bash is not None and c.claimed is not None
                                       for c in mine),
                       "mismatches": sum(c.mismatch for c in mine)}
    shown = [{"command": c.command, "bash": c.bash, "claimed": c.claimed}
             for c in cases if c.part == "dev" and c.mismatch]
    return {"seed": seed, "count": count, "seconds": elapsed, "parts": parts,
            "tuning_mismatches": shown}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="chains to generate")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--show", action="store_true",
                        help="print the tuning part's mismatches (never the held-back part's)")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    info = machine_info()
    result = measure(args.count, args.seed)
    parts = result["parts"]
    print(machine_line(info))
    print(f"classifier values against bash: {args.count} chains (seed {args.seed}), "
          f"{result['seconds']:.1f} s")
    print(table(["figure", "tuning", "held-back"],
                [[label, parts["tuning"][key], parts["held-back"][key]]
                 for label, key in (("chains", "chains"),
                                    ("followed to a value (compared)", "compared"),
                                    ("mismatches", "mismatches"))]))
    if args.show:
        for m in result["tuning_mismatches"]:
            print(f"- {m['command']!r}\n    bash {m['bash']}, classifier {m['claimed']}")
    write_json(args.json, {"machine": info, **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
