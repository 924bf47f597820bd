"""Bytecode folders of killed runs are removed by the next run (``engine.sandbox.pycache``).

Each run keeps its commands' bytecode in a folder of its own in the temporary folder; a run
killed before it could remove it used to leave it there for good. Tested with real
processes: one that claims a folder and is killed, one that claims a folder and lives on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.sandbox import pycache

ROOT = Path(__file__).resolve().parents[1]
CLAIMER = ("import sys; from engine.sandbox import pycache; folder, _ = pycache.claim(); "
           "open(folder + '/x.pyc', 'w').close(); print(folder, flush=True); sys.stdin.read()")


def claimer(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that claims a bytecode folder in ``tmp`` and holds it until its stdin ends."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-c", CLAIMER], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    folder = Path(proc.stdout.readline().strip())
    assert folder.parent == tmp and (folder / "x.pyc").exists()
    return proc, folder


def test_a_killed_runs_folder_is_swept_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    dead, dead_folder = claimer(tmp_path)
    live, live_folder = claimer(tmp_path)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(timeout=30)
        assert dead_folder.exists()  # nothing removed it when the run died
        assert pycache.sweep(str(tmp_path)) == [str(dead_folder)]
        assert not dead_folder.exists()
        assert not Path(str(dead_folder) + pycache.LOCK).exists()
        assert live_folder.exists() and (live_folder / "x.pyc").exists()
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(timeout=30)
    assert pycache.sweep(str(tmp_path)) == [str(live_folder)]  # its owner ended: now swept


def test_release_removes_the_folder_and_its_lock(tmp_path: Path) -> None:
    proc, folder = claimer(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    fd = os.open(str(folder) + pycache.LOCK, os.O_RDWR)
    pycache.release(str(folder), fd)
    assert list(tmp_path.iterdir()) == []


def test_the_next_run_sweeps_the_folder_a_killed_run_left(tmp_path: Path) -> None:
    """Through the CLI: a run in a workspace, with the temporary folder holding a killed
    run's bytecode folder, ends with neither that folder nor its own left behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, folder = claimer(tmp)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "engine", "run",
                           str(ROOT / "machines" / "coding_agent.yaml")], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not folder.exists()
    assert not [p for p in tmp.iterdir() if p.name.startswith(pycache.PREFIX)]
