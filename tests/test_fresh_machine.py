"""A plain Debian machine has ``python3`` and no ``python``: the golden tasks still pass there,
and ``scripts/test`` says in one line what it cannot install (node >= 20).

The PATH without ``python`` is real: a folder of links to every program of ``/usr/bin`` and
``/bin`` except ``python``, with ``python3`` pointing at this interpreter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, engine_env

COMMAND_PYTHON = re.compile(r"(?<![\w./-])python(?=\s)")
"""A bare ``python`` used as a command (not ``python3``, not ``-m engine`` prose in comments)."""


def python3_only_path(tmp: Path) -> str:
    """A PATH holding the system's programs and ``python3``, and no ``python``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for folder in (Path("/usr/bin"), Path("/bin")):
        for program in sorted(folder.iterdir()) if folder.is_dir() else ():
            link = bin_dir / program.name
            if program.name not in ("python", "python3") and not link.exists():
                link.symlink_to(program)
    (bin_dir / "python3").symlink_to(sys.executable)
    return str(bin_dir)


def test_golden_tasks_pass_where_only_python3_exists(tmp_path: Path) -> None:
    path = python3_only_path(tmp_path)
    assert shutil.which("python", path=path) is None and shutil.which("python3", path=path)
    env = {**engine_env({"PYTHONPATH": str(ROOT)}), "PATH": path}
    report = tmp_path / "eval.json"
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(ROOT / "golden_tasks"),
                           "--db", str(tmp_path / "engine.db"), "--json", str(report)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert report.exists(), proc.stderr
    tasks = json.loads(report.read_text())["results"]
    failed = {t["task"]: t["reason"] for t in tasks if not t["passed"]}
    assert not failed and proc.returncode == 0, failed or proc.stderr
    assert len(tasks) == len(list((ROOT / "golden_tasks").glob("*/task.yaml")))


def test_no_golden_task_or_machine_runs_a_bare_python() -> None:
    files = [*ROOT.glob("golden_tasks/*/*.yaml"), *ROOT.glob("machines/*.yaml")]
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}"
             for f in files
             for n, line in enumerate(f.read_text().splitlines(), 1)
             if not line.lstrip().startswith("#") and COMMAND_PYTHON.search(line)]
    assert not found, "use python3 (plain Debian has no `python`):\n" + "\n".join(found)


@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard: it installs, lints and type-checks before its tests
def test_scripts_test_runs_the_npm_servers_with_the_pypi_node_whatever_the_system_has(
        tmp_path: Path) -> None:
    """A system node 18 first on PATH (as on Debian 12) that would leave a mark if run: the
    test command still passes the reference-server tests, with the node from PyPI."""
    fake = tmp_path / "bin"
    fake.mkdir()
    mark = tmp_path / "system-node-ran"
    node = fake / "node"
    node.write_text(f"#!/bin/sh\necho \"$@\" >> {mark}\n"
                    "case \"$1\" in -p) echo 18;; --version) echo v18.19.0;; esac\nexit 1\n")
    node.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
           "PATH": f"{fake}:{os.environ['PATH']}", "ENGINE_TEST_WORKERS": "0"}  # one process
    hooks = _import_hooks()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "test"), "-q", "-p",
                           "no:cacheprovider", "tests/test_mcp_reference_servers.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert " passed" in proc.stdout and " failed" not in proc.stdout
    assert not mark.exists(), mark.read_text()
    if Path(sys.prefix) == ROOT / ".venv":  # this suite was started by scripts/test
        assert hooks and _import_hooks() == hooks, "scripts/test reinstalled an unchanged project"


def _import_hooks() -> dict[str, tuple[int, int]]:
    """The repository venv's editable-install files (inode, mtime): a reinstall replaces them,
    and a ``python -m engine`` started meanwhile from that venv cannot import turnstile_tools."""
    return {str(p): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in (ROOT / ".venv").glob("lib/python*/site-packages/__editable__*")}


def test_scripts_test_puts_the_venv_first_before_running_anything() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    export = script.index('export PATH="$PWD/.venv/bin:$PATH"')
    for runs in ("python -m pip install", "ruff check", "exec python -m pytest"):
        assert script.index(runs) > export, runs
    assert ".venv/bin/" not in script[export + 40:], "after the export, plain names are used"
