"""The README's "Python API" examples, run as a user would paste them: in order, in a fresh
directory holding the repository's machines, in a new interpreter."""

from __future__ import annotations

import os
import re
import shutil
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


def test_the_python_api_examples_run(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "machines", tmp_path / "machines")
    script = tmp_path / "examples.py"
    script.write_text("\n\n".join(python_api_blocks()), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ENGINE_MODEL", None)
    env.pop("ENGINE_DB", None)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "interrupted -> completed 2 words" in out
    assert "think --> approve: tool_calls" in out  # the rendered diagram
    assert "model says: 4 words" in out
    assert "asked about save_note (write)" in out
    assert "completed hi" in out
    assert re.search(r"completed \d+ steps, \d+ messages, \d+ spans", out)
