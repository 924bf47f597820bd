"""What a child run costs over a plain run: the same workflow run alone and as a child.

    .venv/bin/python bench/children.py [--rounds 25 200] [--repeats 3] [--json FILE]

The workflow reads a file (``run_tool read_file``, decided by a policy file) and counts a
round (``count_rounds``), ``--rounds`` times: two persisted steps per round. It runs as a plain
run, then as the child of a one-state parent (``run_machine``), whose every decision is made by
the child's policy and the parent's (narrowing). Per step = the run's wall time over the
child's steps; the difference between the two sizes separates the fixed cost of starting a
child (composing it, its row, its parent's lookups) from the cost per step. Times are this
process's CPU time (the scripted parts wait on nothing), robust to a loaded machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)
elif str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

import anyio  # noqa: E402

from bench.common import fmt_stat, machine_info, machine_line, summary, table  # noqa: E402
from bench.common import write_json as _write_json  # noqa: E402

LOOP = """\
name: loop
kind: workflow
initial: read
tools: [read_file]
limits: {{max_steps: {steps}}}
states:
  read:
    action: run_tool
    with: {{tool: read_file, args: {{path: a.txt}}}}
    on: {{ok: count, failed: failed}}
  count:
    action: count_rounds
    with: {{max: {rounds}}}
    on: {{again: read, exhausted: done}}
  done: {{final: true}}
  failed: {{final: true}}
"""

PARENT = """\
name: outer
kind: workflow
initial: delegate
limits: {{max_steps: {steps}}}
states:
  delegate:
    action: run_machine
    with: {{machine: loop.yaml, task: bench}}
    on: {{ok: done, failed: failed}}
  done: {{final: true}}
  failed: {{final: true}}
"""

POLICY = "default: deny\nrules:\n  - {tool: read_file, decision: allow}\n"


def _once(folder: Path, machine: str, i: int) -> tuple[float, int]:
    """One run of ``machine`` on a new database: CPU seconds of this process (what a busy
    machine does not move; the run waits on nothing but its commits) and the steps."""
    import engine

    runs = engine.Runs(folder / f"{machine}-{i}.db")

    async def main() -> Any:
        return await runs.start(folder / f"{machine}.yaml", task="bench", workspace=folder,
                                approval="policy", policy=folder / "policy.yaml")

    t = time.process_time()
    result = anyio.run(main)
    elapsed = time.process_time() - t
    assert result.status == "completed", result
    done = runs.list_runs()
    loop = [r for r in done if r.machine == "loop"]
    assert len(loop) == 1, done
    return elapsed, loop[0].steps


def measure(rounds: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-children-") as tmp:
        folder = Path(tmp)
        steps = 2 * rounds + 10
        (folder / "loop.yaml").write_text(LOOP.format(steps=steps, rounds=rounds))
        (folder / "outer.yaml").write_text(PARENT.format(steps=steps + 5))
        (folder / "policy.yaml").write_text(POLICY)
        (folder / "a.txt").write_text("alpha\n")
        _once(folder, "loop", -1)  # warm-up: imports, page cache
        plain, child, counted = [], [], 0
        for i in range(repeats):
            seconds, counted = _once(folder, "loop", i)
            plain.append(seconds / counted)
            seconds, child_steps = _once(folder, "outer", i)
            assert child_steps == counted
            child.append(seconds / counted)
    return {"rounds": rounds, "steps": counted, "plain_ms_per_step": summary(plain),
            "child_ms_per_step": summary(child)}


def _extra(row: dict[str, Any]) -> float:
    """Seconds per step a child run costs over the plain run (medians)."""
    extra: float = row["child_ms_per_step"]["median"] - row["plain_ms_per_step"]["median"]
    return extra


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[25, 200])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine_info()
    rows = [measure(n, args.repeats) for n in args.rounds]
    print(machine_line(info))
    print("Per step = CPU time of the whole run over the workflow's steps (read_file through "
          "the policy, count_rounds); a child's = its parent's run (run_machine, narrowing) "
          "over the same steps.")
    print(table(
        ["rounds", "steps", "plain ms/step", "as a child ms/step", "child - plain ms/step",
         "child - plain ms/run"],
        [[r["rounds"], r["steps"], fmt_stat(r["plain_ms_per_step"]),
          fmt_stat(r["child_ms_per_step"]), f"{_extra(r) * 1000:.3f}",
          f"{_extra(r) * r['steps'] * 1000:.1f}"] for r in rows]))
    _write_json(args.json, {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
