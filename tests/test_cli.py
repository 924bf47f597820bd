"""The CLI contract of DESIGN 9: commands, --json keys, exit codes, one-line errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROGRAM, ROOT, EngineCLI, engine_env

RUN_KEYS = {"run_id", "machine", "status", "state", "workspace", "created_at", "steps",
            "input_tokens", "output_tokens", "cost_usd"}


def test_help_lists_every_command(cli: EngineCLI) -> None:
    out = cli("--help").stdout
    for command in ("run", "resume", "runs", "show", "audit", "trace", "validate", "diagram",
                    "eval", "tools", "policy", "mcp"):
        assert re.search(rf"^\s+{command}\b", out, re.M), command


def test_readme_run_command_works_offline(tmp_path: Path) -> None:
    """The README's first command, minus the install: the demo run from a fresh directory."""
    readme = (ROOT / "README.md").read_text()
    assert "python -m engine run machines/coding_agent.yaml" in readme.split("---")[0]
    proc = subprocess.run([sys.executable, "-m", "engine", "run",
                           str(ROOT / "machines/coding_agent.yaml")], cwd=tmp_path,
                          env=engine_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout and "python -m engine show" in proc.stdout
    assert "step 0 plan" in proc.stdout and "→ run_shell" in proc.stdout
    assert (tmp_path / ".engine" / "engine.db").exists()
    assert "\x1b[" not in proc.stdout  # piped: plain text


def test_modules_in_the_folder_it_runs_in_are_not_imported(tmp_path: Path) -> None:
    """``python -m`` puts the folder it runs in first on the import path, so a workspace file
    named like a module the engine imports would run on the host with the engine's rights
    (the control: ``python -c 'import typing'`` there runs it). The engine drops that folder
    once its package is found: a run, a shell check and ``show`` import none of them."""
    marker = tmp_path / "imported"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("typing", "json", "argparse", "sqlite3", "yaml", "shlex", "asyncio"):
        (tmp_path / f"{name}.py").write_text(payload)
    subprocess.run([sys.executable, "-c", "import typing"], cwd=tmp_path, check=True)
    assert marker.read_text() == "typing\n"  # the control
    marker.unlink()
    for args in (["--version"], ["policy", "check-shell", "ls", "--json"],
                 ["run", str(ROOT / "machines/coding_agent.yaml"), "--quiet"], ["runs"]):
        proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=tmp_path,
                              env=engine_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout + proc.stderr)
        assert not marker.exists(), (args, marker.read_text())


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text().split("---")[0]
    assert "scripts/test --all" in readme  # CI runs the slow tests too
    assert "scripts/test --all" in (ROOT / ".ci" / "run").read_text()


def test_runs_and_show_json_keys(cli: EngineCLI) -> None:
    assert cli.json("runs") == []
    run = cli.json("run", "machines/coding_agent.yaml")
    assert set(run) >= RUN_KEYS
    runs = cli.json("runs")
    assert [r["run_id"] for r in runs] == [run["run_id"]]
    assert set(runs[0]) >= RUN_KEYS
    show = cli.json("show", run["run_id"])
    assert set(show) >= RUN_KEYS and show["status"] == "completed"
    audit = cli.json("audit", run["run_id"])
    assert {a["tool"] for a in audit} >= {"run_shell", "edit_file", "read_file"}


def test_unknown_run_id_is_exit_2_one_line(cli: EngineCLI) -> None:
    cli.json("run", "machines/coding_agent.yaml")
    for command in ("show", "resume", "audit"):
        proc = cli(command, "no-such-run")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "no run 'no-such-run'" in proc.stderr


def test_bad_machine_is_exit_2_with_file_and_line(cli: EngineCLI, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ninitial: a\nstates:\n  a: {action: plan, on: {ready: b}}\n")
    proc = cli("run", str(bad), "--task", "t", "--model", "scripted")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1  # the first problem, and where to see them all
    assert proc.stderr.startswith(f"error: {bad}:3: no final state")
    assert proc.stderr.endswith(f"(and 1 more: {PROGRAM} validate {bad})\n")
    assert "Traceback" not in proc.stderr
    assert not cli.db.exists()
    every = cli("validate", str(bad))
    assert every.returncode == 2 and f"{bad}:4: 'b' is not a state" in every.stderr


def test_missing_machine_file(cli: EngineCLI) -> None:
    proc = cli("run", "machines/nope.yaml")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_free_task_without_a_model_is_refused_before_the_run(cli: EngineCLI,
                                                             tmp_path: Path) -> None:
    proc = cli("run", "machines/coding_agent.yaml", "--task", "fix it", "--workspace",
               str(tmp_path))
    assert proc.returncode == 2
    assert "--model" in proc.stderr and "ENGINE_MODEL" in proc.stderr
    assert not cli.db.exists() or cli.json("runs") == []


def test_corrupt_database_is_exit_2_and_untouched(cli: EngineCLI) -> None:
    cli.db.write_bytes(b"garbage" * 1000)
    proc = cli("runs")
    assert proc.returncode == 2 and "not a usable Turnstile database" in proc.stderr
    assert cli.db.read_bytes() == b"garbage" * 1000


def test_validate_all_bundled_machines(cli: EngineCLI) -> None:
    machines = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "machines").glob("*.yaml"))
    assert len(machines) >= 3
    proc = cli("validate", *machines)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": ok") == len(machines)


def test_validate_reports_every_problem(cli: EngineCLI, tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("name: m\ninitial: plan\nstates:\n  plan: {action: plam, on: {ready: x}}\n"
                   "  done: {final: true}\n")
    proc = cli("validate", str(bad))
    assert proc.returncode == 2
    assert "did you mean 'plan'" in proc.stderr


def test_workflow_test_fix_loop_runs_a_golden_task(cli: EngineCLI) -> None:
    run = cli.json("run", "machines/test_fix_loop.yaml", "--golden",
                   "golden_tasks/workflow_test_fix_loop")
    assert run["status"] == "completed", run
    show = cli.json("show", run["run_id"])
    assert show["states_visited"][:3] == ["run_tests", "count_round", "ask_fix"]


def test_diagram_of_a_run_highlights_its_path(cli: EngineCLI) -> None:
    run = cli.json("run", "machines/coding_agent.yaml")
    proc = cli("diagram", "machines/coding_agent.yaml", "--run", run["run_id"], "--db",
               str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert "x4" in proc.stdout or "×4" in proc.stdout or "4" in proc.stdout
    assert "penwidth" in proc.stdout


@pytest.mark.parametrize("machine", sorted((ROOT / "machines").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_diagrams_have_no_drift(machine: Path, cli: EngineCLI) -> None:
    proc = cli("diagram", str(machine.relative_to(ROOT)))
    assert proc.returncode == 0, proc.stderr
    committed = ROOT / "diagrams" / f"{machine.stem}.dot"
    assert committed.exists(), f"missing {committed}: python -m engine diagram {machine} -o ..."
    assert proc.stdout == committed.read_text(), (
        f"diagrams/{machine.stem}.dot is stale: python -m engine diagram "
        f"machines/{machine.name} -o diagrams/{machine.stem}.dot (and .svg)")
    assert (ROOT / "diagrams" / f"{machine.stem}.svg").exists()


def test_json_outputs_parse(cli: EngineCLI) -> None:
    proc = cli("run", "machines/coding_agent.yaml", "--json")
    json.loads(proc.stdout)
    assert proc.stdout.lstrip().startswith("{")


def test_tools_lists_mcp_tools_classified_locally(cli: EngineCLI, tmp_path: Path) -> None:
    """``engine tools --mcp-config``: a lying server and Turnstile's own project server, the
    latter started through ``python -m engine mcp serve-project``."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "liar": {"command": sys.executable, "args": [str(ROOT / "tests/mcp_servers/liar.py")]},
        "proj": {"command": sys.executable,
                 "args": ["-m", "engine", "mcp", "serve-project", "--root", str(project)],
                 "cwd": str(ROOT), "trust": "internal"},
    }}))
    proc = cli("tools", "machines/coding_agent.yaml", "--mcp-config", str(config), "--json",
               timeout=180)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    lie = rows["mcp__liar__delete_everything"]
    assert lie["annotations"]["readOnlyHint"] is True  # what it claimed ...
    assert (lie["risk"], lie["decision"]) == ("destructive", "deny")  # ... and what we decided
    assert (lie["source"], lie["server"], lie["trust"]) == ("mcp:liar", "liar", "untrusted")
    assert "mcp__liar__read_file" in rows and rows["read_file"]["source"] == "builtin"
    own = rows["mcp__proj__read_project_file"]
    assert (own["risk"], own["decision"], own["trust"]) == ("read", "allow", "internal")
    assert {"name", "version", "risk", "idempotent", "side_effects", "source", "decision",
            "input_schema"} <= set(own)


# -- --json everywhere, ENGINE_DB for eval, colour ----------------------------------------------


def test_validate_json_lists_every_file_with_its_problems(cli: EngineCLI) -> None:
    broken = "tests/machines_broken/dest_typo.yaml"
    proc = cli("validate", "machines/review_changes.yaml", broken, "--json")
    assert proc.returncode == 2 and proc.stderr == ""
    good, bad = json.loads(proc.stdout)
    assert good == {"path": "machines/review_changes.yaml", "ok": True,
                    "machine": "review_changes", "kind": "workflow", "states": 5,
                    "transitions": 5, "problems": []}
    assert (bad["path"], bad["ok"]) == (broken, False)
    assert bad["problems"] == [{"file": broken, "line": 8, "message":
                                "'call_modle' is not a state (did you mean 'call_model'?)"}]
    ok = cli("validate", "machines/coding_agent.yaml", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)[0]["ok"] is True


def test_diagram_json_says_where_the_file_went(cli: EngineCLI, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "agent.md"
    info = cli.json("diagram", "machines/coding_agent.yaml", "-o", str(out))
    assert info == {"machine": "coding_agent", "format": "md", "output": str(out),
                    "bytes": out.stat().st_size}
    assert out.read_text().startswith("# coding_agent\n\n```mermaid\nstateDiagram-v2\n")
    text = cli.json("diagram", "machines/coding_agent.yaml", "-f", "mermaid")
    assert (text["format"], text["output"]) == ("mermaid", None)
    assert text["source"].startswith("stateDiagram-v2\n")
    bad = cli("diagram", "machines/coding_agent.yaml", "-f", "mermaid", "-o",
              str(tmp_path / "a.svg"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "-f mermaid does not fit '.svg'" in bad.stderr


@pytest.mark.parametrize("machine", sorted((ROOT / "machines").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_mermaid_diagrams_have_no_drift(machine: Path, cli: EngineCLI) -> None:
    proc = cli("diagram", str(machine.relative_to(ROOT)), "-f", "mermaid")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("stateDiagram-v2\n")
    committed = ROOT / "diagrams" / f"{machine.stem}.mmd"
    assert proc.stdout == committed.read_text(), (
        f"diagrams/{machine.stem}.mmd is stale: python -m engine diagram machines/{machine.name} "
        f"-o diagrams/{machine.stem}.mmd")


def test_run_json_streams_live_output_to_stderr(cli: EngineCLI) -> None:
    proc = cli("run", "machines/coding_agent.yaml", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "completed"  # stdout: the JSON alone
    assert "step 0 plan" in proc.stderr and "→ run_shell" in proc.stderr


def test_force_color_colours_piped_output_and_no_color_wins(cli: EngineCLI) -> None:
    forced = cli("run", "machines/coding_agent.yaml", env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    assert forced.returncode == 0, forced.stderr
    assert "\x1b[" in forced.stdout
    both = cli("run", "machines/coding_agent.yaml", env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert both.returncode == 0 and "\x1b[" not in both.stdout


def test_eval_json_dash_and_engine_db(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "golden_tasks" / "search_call_sites", suite / "search_call_sites")
    db = tmp_path / "shared.db"
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(suite), "--json", "-"],
                          cwd=ROOT, env=engine_env({"ENGINE_DB": str(db)}), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # stdout is the JSON alone ...
    assert (data["tasks"], data["passed"]) == (1, True)
    assert "1/1 tasks passed" in proc.stderr  # ... and the table went to stderr
    runs = subprocess.run([sys.executable, "-m", "engine", "runs", "--json", "--db", str(db)],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True, timeout=60)
    assert [r["machine"] for r in json.loads(runs.stdout)] == ["coding_agent"]
    out = tmp_path / "results.json"
    kept = subprocess.run([sys.executable, "-m", "engine", "eval", str(suite), "--json", str(out)],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True, timeout=300)
    assert kept.returncode == 0, kept.stderr
    assert "1/1 tasks passed" in kept.stdout and json.loads(out.read_text())["passed"] is True


def _imported(stderr: str) -> set[str]:
    """The modules ``python -X importtime`` reports, from its lines on stderr."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def test_an_offline_run_loads_no_http_client_and_no_migrations(tmp_path: Path) -> None:
    """Start-up is most of a short run through the CLI: the scripted model needs no HTTP client
    (httpx brings rich, click and pygments with its own command-line tool), and neither a new
    database (made in one go) nor one at the current schema needs the migration library.
    Measured from outside, by the interpreter's own import report; the second run finds the
    database the first one made."""
    db = tmp_path / "e.db"

    def run() -> set[str]:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", "run",
                               str(ROOT / "machines/coding_agent.yaml"), "--db", str(db),
                               "--json"], cwd=tmp_path, env=engine_env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout)["status"] == "completed"
        return _imported(proc.stderr)

    first, second = run(), run()
    assert "engine.store.sqlite" in first and "engine.providers.scripted" in first
    assert "engine.store.sqlite" in second
    for module in ("httpx", "httpx_sse", "engine.providers.http", "pygments", "sqlite_utils",
                   "click"):  # click: sqlite-utils' plugin hooks import it
        assert module not in first and module not in second, module
