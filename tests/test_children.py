"""Child machines: a state (``run_machine``) or a tool (``delegate``) runs another machine as a
run of its own, whose permissions and budget only narrow. Real runs, scripted models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import engine_env

PARENT = """\
name: delegating
kind: workflow
initial: fix
tools: [read_file]
limits: {{max_steps: 20{limits}}}
states:
  fix:
    action: run_machine
    with:
      machine: coding_agent
      task: "write notes.txt saying {{{{ data.task }}}}"
      model: scripted:turns.yaml
{extra}    on: {{ok: report, failed: failed}}
  report:
    action: run_tool
    with: {{tool: read_file, args: {{path: notes.txt}}}}
    on: {{ok: done, failed: failed}}
  done: {{final: true}}
  failed: {{final: true}}
"""

WRITE_TURNS = """\
- text: "Writing the notes."
  tool_calls:
    - {name: write_file, args: {path: notes.txt, content: "hello from the child\\n"}}
- text: "Wrote notes.txt."
"""

ALLOW_WRITES = "default: deny\nrules:\n  - {tool: write_file, decision: allow}\n"


def _setup(tmp_path: Path, *, limits: str = "", extra: str = "",
           turns: str = WRITE_TURNS) -> tuple[Path, Path]:
    machines = tmp_path / "machines"
    machines.mkdir()
    (machines / "parent.yaml").write_text(PARENT.format(limits=limits, extra=extra))
    (machines / "turns.yaml").write_text(turns)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return machines / "parent.yaml", workspace


def _engine(tmp_path: Path, *args: str,
            ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "engine", *args, "--db",
                           str(tmp_path / "runs.db")], cwd=tmp_path, env=engine_env(),
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode in ok, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def _json(tmp_path: Path, *args: str, ok: tuple[int, ...] = (0,)) -> Any:
    return json.loads(_engine(tmp_path, *args, "--json", ok=ok).stdout)


def test_a_workflow_delegates_to_the_coding_agent(tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path)
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "hello", "--workspace",
                str(workspace), "--approval", "policy", "--policy", str(policy))
    assert (run["status"], run["state"]) == ("completed", "done")
    assert (workspace / "notes.txt").read_text() == "hello from the child\n"
    shown = _json(tmp_path, "show", run["run_id"])
    (child,) = shown["children"]
    assert child["machine"] == "coding_agent" and child["status"] == "completed"
    kid = _json(tmp_path, "show", child["run_id"])
    assert (kid["parent_run_id"], kid["parent_step"]) == (run["run_id"], 0)
    runs = {r["run_id"]: r for r in _json(tmp_path, "runs")}
    assert runs[child["run_id"]]["parent_run_id"] == run["run_id"]
    assert runs[run["run_id"]]["parent_run_id"] is None
    result = shown["data"]["results"]["fix"] if "data" in shown else None
    assert result is None or result["status"] == "completed"
