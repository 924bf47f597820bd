"""The smaller edges an operator meets, through the CLI: a bad ``ENGINE_LOG``, a Postgres
server out of connection slots, a deleted workspace, the database replaced during a run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env


def test_a_bad_engine_log_is_one_line_and_exit_2(cli: EngineCLI) -> None:
    proc = cli("runs", env={"ENGINE_LOG": "bogus"})
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == ("error: ENGINE_LOG='bogus': expected one of debug, info, warning, "
                           "error, critical\n")
    assert cli("runs", env={"ENGINE_LOG": "info"}).returncode == 0


WAIT_MACHINE = """\
name: wait_then_append
kind: workflow
initial: work
sandbox: {mode: "off"}
tools: [run_shell]
states:
  work:
    action: run_tool
    with: {tool: run_shell, args: {command: "sh work.sh"}}
    on: {ok: done, failed: done}
  done: {final: true}
"""

WORK = """\
echo started > started
while [ ! -e go ]; do sleep 0.05; done
echo once >> "{out}"
"""


@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_the_database_replaced_during_a_run_stops_it_and_it_resumes_once_back(
        cli: EngineCLI, tmp_path: Path, how: str) -> None:
    """The file under a running run is replaced (or deleted): the run stops at its next write
    with one line, exit 2; with the original file back, ``resume`` completes it, and the
    command's effect happened once."""
    out = tmp_path / "effects.log"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "work.sh").write_text(WORK.format(out=out))
    machine = tmp_path / "wait.yaml"
    machine.write_text(WAIT_MACHINE)
    policy = tmp_path / "policy.yaml"
    policy.write_text("default: allow\n")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"text": "unused"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(machine), "--task", "work", "--workspace",
         str(workspace), "--model", f"scripted:{turns}", "--policy", str(policy),
         "--approval", "policy", "--quiet", "--db", str(cli.db)],
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 110  # a guard against a hang, not a bound
    while not (workspace / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    kept = tmp_path / "kept.db"
    cli.db.rename(kept)
    if how == "replaced":
        shutil.copy(kept, cli.db)  # another file with the same bytes: not the same database
    (workspace / "go").touch()
    _, err = proc.communicate(timeout=110)
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"the database file was {'replaced' if how == 'replaced' else 'deleted'}" in err
    assert "resume" in err
    cli.db.unlink(missing_ok=True)
    kept.rename(cli.db)  # the original file is back
    (run,) = cli.json("runs")
    resumed = cli("resume", run["run_id"], "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert cli.json("show", run["run_id"])["status"] == "completed"
    assert out.read_text() == "once\n"
