"""The seeded kill test at full size: 100 SIGKILLs over the golden tasks, each run resumed
until it ends (the suite draws 40 of the same sequence, so ``.ci/run`` keeps its time).

    .venv/bin/python bench/chaos.py [KILLS]

Runs ``tests/test_chaos.py`` with ``ENGINE_CHAOS_KILLS`` (default 100) and prints pytest's
outcome line and the tally of outcomes (completed identically, unknown effect reported, fault
point not reached); the exit code is pytest's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    kills = argv[0] if argv else "100"
    env = {**os.environ, "ENGINE_CHAOS_KILLS": kills}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           "tests/test_chaos.py"], cwd=ROOT, env=env)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
