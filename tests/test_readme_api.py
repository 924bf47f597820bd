"""The README's "Python API" examples, run as a user would paste them: in order, as one program,
from an empty directory, in a new interpreter (``test_packaging`` runs them with only the
installed wheel)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_api_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_python_api_section_has_the_promised_examples() -> None:
    code = "\n".join(python_api_blocks())
    for needle in ("@tool(", "@function_model", "class Counter", "resume(", "stream(",
                   "approver=", "open_store("):
        assert needle in code, needle


def write_examples(path: Path) -> Path:
    """The section's examples as one program."""
    path.write_text("\n\n".join(python_api_blocks()), encoding="utf-8")
    return path


def without_engine_variables() -> dict[str, str]:
    """This environment without any ``ENGINE_*`` variable or ``PYTHONPATH``."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("ENGINE_") and k != "PYTHONPATH"}


def test_the_python_api_examples_run(tmp_path: Path) -> None:
    script = write_examples(tmp_path / "examples.py")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**without_engine_variables(), "PYTHONPATH": str(ROOT)}
    for _ in range(2):  # and again, in a folder that now has runs
        proc = subprocess.run([sys.executable, str(script)], cwd=empty, env=env, text=True,
                              capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        assert_examples_ran(proc.stdout)


def assert_examples_ran(out: str) -> None:
    """What the examples print when each did what the README says."""
    assert "interrupted -> completed 2 words" in out
    assert "think --> approve: tool_calls" in out  # the rendered diagram
    assert "model says: 4 words" in out
    assert "asked about save_note (write)" in out
    assert "completed hi" in out
    assert re.search(r"completed \d+ steps, \d+ messages, \d+ spans", out)
