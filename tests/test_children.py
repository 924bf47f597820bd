"""Child machines: a state (``run_machine``) or a tool (``delegate``) runs another machine as a
run of its own, whose permissions and budget only narrow. Real runs, scripted models."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EngineCLI, engine_env
from tests.test_temporal import Workers

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


def _engine(tmp_path: Path, *args: str, ok: tuple[int, ...] = (0,),
            db: bool = True) -> subprocess.CompletedProcess[str]:
    store = ["--db", str(tmp_path / "runs.db")] if db else []
    proc = subprocess.run([sys.executable, "-m", "engine", *args, *store], cwd=tmp_path,
                          env=engine_env(), capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
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


SHELL_TURNS = """\
- text: "Running it."
  tool_calls:
    - {name: run_shell, args: {command: "echo ran >> effects.txt"}}
- text: "Done."
"""


def test_a_child_policy_broader_than_the_parents_is_refused(tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path, extra="      policy: child_policy.yaml\n",
                               turns=SHELL_TURNS)
    (parent.parent / "child_policy.yaml").write_text(
        "default: allow\nrules:\n  - {tool: run_shell, decision: allow}\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: deny}\n"
                      "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy), ok=(1,))
    assert not (workspace / "effects.txt").exists()
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    (row,) = [r for r in _json(tmp_path, "audit", child["run_id"]) if r["tool"] == "run_shell"]
    assert row["decision"] == "deny"
    assert "parent_policy.yaml" in row["rule"] and "(deny tool=run_shell)" in row["rule"]
    assert "decided by the parent run's policy" in row["reason"]


def test_a_child_budget_larger_than_the_parents_remainder_is_capped(tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path, limits=", max_tokens: 120",
                               extra="      limits: {max_tokens: 100000, max_steps: 500}\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES)
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy), ok=(1,))
    assert run["state"] == "failed"
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    assert child["status"] == "failed" and "max_tokens 120 exceeded" in child["error"]
    import engine

    limits = engine.Runs(tmp_path / "runs.db").show(child["run_id"]).config["limits"]
    assert (limits["max_tokens"], limits["max_steps"]) == (120, 20)


def test_a_childs_time_limit_is_what_the_parent_has_left(tmp_path: Path) -> None:
    """The parent's clock ran before the child started: the child gets the rest of it, not
    the parent's whole ``timeout_s`` (nor its own larger one)."""
    parent, workspace = _setup(tmp_path, limits=", timeout_s: 600",
                               extra="      limits: {timeout_s: 100000}\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES)
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy))
    assert run["status"] == "completed"
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    import engine

    limits = engine.Runs(tmp_path / "runs.db").show(child["run_id"]).config["limits"]
    assert 0 < limits["timeout_s"] < 600


def test_a_parked_child_parks_its_parent_and_approve_resume_finishes_both(
        tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path, turns=SHELL_TURNS)
    (workspace / "notes.txt").write_text("kept\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: ask}\n"
                      "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "park", "--policy", str(policy), ok=(5,))
    assert run["status"] == "waiting_approval"
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    assert child["status"] == "waiting_approval"
    (waiting,) = _json(tmp_path, "approvals")
    assert (waiting["run_id"], waiting["parent_run_id"]) == (child["run_id"], run["run_id"])
    _engine(tmp_path, "approve", child["run_id"], waiting["call_id"], "--resume")
    assert _json(tmp_path, "show", run["run_id"])["status"] == "completed"
    assert _json(tmp_path, "show", child["run_id"])["status"] == "completed"
    assert (workspace / "effects.txt").read_text() == "ran\n"


MIDDLE = """\
name: middle
kind: workflow
initial: delegate
limits: {max_steps: 10}
states:
  delegate:
    action: run_machine
    with: {machine: parent.yaml, task: "{{ task }}", inputs: {level: two}}
    on: {ok: done, failed: failed}
  done: {final: true}
  failed: {final: true}
"""


def test_children_nest_two_levels_deep(tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path)
    (parent.parent / "middle.yaml").write_text(MIDDLE)
    policy = tmp_path / "top_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    top = _json(tmp_path, "run", str(parent.parent / "middle.yaml"), "--task", "deep",
                "--workspace", str(workspace), "--approval", "policy", "--policy", str(policy))
    assert top["status"] == "completed"
    (mid,) = _json(tmp_path, "show", top["run_id"])["children"]
    (leaf,) = _json(tmp_path, "show", mid["run_id"])["children"]
    leaf_run = _json(tmp_path, "show", leaf["run_id"])
    assert (mid["machine"], leaf["machine"]) == ("delegating", "coding_agent")
    assert leaf_run["parent_run_id"] == mid["run_id"] and leaf_run["status"] == "completed"
    import engine

    runs = engine.Runs(tmp_path / "runs.db")
    assert [c.run_id for c in runs.children(top["run_id"])] == [mid["run_id"]]
    assert runs.show(mid["run_id"]).config["parent"]["policies"] == [str(policy)]
    assert runs.show(leaf["run_id"]).config["parent"]["policies"] == [str(policy)] * 2
    assert (workspace / "notes.txt").read_text() == "hello from the child\n"
    usage = _json(tmp_path, "show", top["run_id"])
    assert usage["input_tokens"] == leaf_run["input_tokens"] > 0
    spans = {s["span_id"]: s for s in _json(tmp_path, "trace", top["run_id"])["spans"]}
    roots = [s for s in spans.values() if s["kind"] == "run"]
    assert len(roots) == 3  # each child run's spans hang below its parent's step
    (leaf_root,) = [s for s in roots if s["attributes"].get("turnstile.machine") == "coding_agent"]
    step = spans[leaf_root["parent_id"]]
    assert step["kind"] == "step" and step["attributes"]["turnstile.state"] == "fix"
    mid_root = spans[step["parent_id"]]
    assert mid_root["attributes"]["turnstile.parent_run_id"] == top["run_id"]
    assert spans[mid_root["parent_id"]]["attributes"]["turnstile.state"] == "delegate"
    assert any(s["kind"] == "chat" and s["parent_id"] in spans for s in spans.values())


SLOW_SHELL_TURNS = """\
- text: "Running it."
  tool_calls:
    - name: run_shell
      args: {command: "echo ran >> effects.txt && touch started.flag && sleep 120"}
- text: "Done."
"""


def test_a_parent_killed_while_its_child_runs_a_command_resumes_without_repeating_it(
        tmp_path: Path) -> None:
    import os
    import signal
    import time

    parent, workspace = _setup(tmp_path, turns=SLOW_SHELL_TURNS)
    (workspace / "notes.txt").write_text("kept\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: allow}\n"
                      "  - {tool: read_file, decision: allow}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(parent), "--task", "t", "--workspace",
         str(workspace), "--approval", "policy", "--policy", str(policy), "--db",
         str(tmp_path / "runs.db")], cwd=tmp_path, env=engine_env(), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240  # a hang guard, not a timing assertion
        while not (workspace / "started.flag").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (top,) = [r for r in _json(tmp_path, "runs") if r["parent_run_id"] is None]
    assert top["status"] == "crashed"
    done = _json(tmp_path, "resume", top["run_id"])
    assert (done["status"], done["state"]) == ("completed", "done")
    (child,) = _json(tmp_path, "show", top["run_id"])["children"]
    assert child["status"] == "completed"
    assert (workspace / "effects.txt").read_text() == "ran\n"
    assert len(_json(tmp_path, "runs")) == 2  # the child was resumed, not started again


AGENT = """\
name: lead
kind: agent
initial: plan
tools: [read_file]
children: [helper.yaml]
states:
  plan:           {action: plan,           on: {ready: call_model}}
  call_model:     {action: call_model,     on: {tool_calls: await_approval, final: done}}
  await_approval: {action: await_approval, on: {decided: exec_tool, all_denied: call_model}}
  exec_tool:      {action: exec_tool,      on: {done: call_model}}
  done: {final: true}
"""

HELPER = """\
name: helper
kind: agent
initial: plan
model: scripted:{turns}
tools: [write_file]
states:
  plan:           {{action: plan,           on: {{ready: call_model}}}}
  call_model:     {{action: call_model,     on: {{tool_calls: await_approval, final: done}}}}
  await_approval: {{action: await_approval, on: {{decided: exec_tool, all_denied: call_model}}}}
  exec_tool:      {{action: exec_tool,      on: {{done: call_model}}}}
  done: {{final: true}}
"""

LEAD_TURNS = """\
- text: "Asking the helper."
  tool_calls:
    - {name: delegate, args: {machine: helper.yaml, task: "write notes.txt"}}
- text: "The helper is done."
"""


def test_an_agent_delegates_with_the_delegate_tool(tmp_path: Path) -> None:
    machines = tmp_path / "machines"
    machines.mkdir()
    (machines / "lead.yaml").write_text(AGENT)
    (machines / "helper_turns.yaml").write_text(WRITE_TURNS)
    (machines / "helper.yaml").write_text(HELPER.format(turns=machines / "helper_turns.yaml"))
    (machines / "lead_turns.yaml").write_text(LEAD_TURNS)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = tmp_path / "policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: delegate, decision: allow}\n")
    run = _json(tmp_path, "run", str(machines / "lead.yaml"), "--task", "t", "--workspace",
                str(workspace), "--model", f"scripted:{machines / 'lead_turns.yaml'}",
                "--approval", "policy", "--policy", str(policy))
    assert run["status"] == "completed"
    assert (workspace / "notes.txt").read_text() == "hello from the child\n"
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    assert (child["machine"], child["status"]) == ("helper", "completed")
    (row,) = [r for r in _json(tmp_path, "audit", run["run_id"]) if r["tool"] == "delegate"]
    assert row["decision"] == "allow" and "delegate" in (row["rule"] or "")
    import engine

    data = engine.Runs(tmp_path / "runs.db").reader()
    messages = [m for m in data.messages(run["run_id"]) if m.role == "tool"]
    assert messages[-1].content == "Wrote notes.txt."


def test_validate_checks_the_child_machine_and_diagram_names_it(tmp_path: Path) -> None:
    parent, _ = _setup(tmp_path)
    shown = _engine(tmp_path, "diagram", str(parent), "-f", "mermaid", db=False).stdout
    assert "fix (run_machine → coding_agent)" in shown
    _engine(tmp_path, "validate", str(parent), db=False)
    broken = parent.parent / "broken.yaml"
    broken.write_text(PARENT.format(limits="", extra="").replace("coding_agent", "no_such")
                      .replace("failed: failed}\n  report", "}\n  report", 1))
    proc = _engine(tmp_path, "validate", str(broken), ok=(2,), db=False)
    assert f"{broken}:10: state 'fix': with.machine: no_such: no such machine file" in proc.stderr
    assert "state 'fix': action 'run_machine' can emit 'failed'" in proc.stderr
    lead = parent.parent / "lead.yaml"
    lead.write_text(AGENT.replace("helper.yaml", "missing.yaml"))
    proc = _engine(tmp_path, "validate", str(lead), ok=(2,), db=False)
    assert f"{lead}:5: children: no machine file 'missing.yaml'" in proc.stderr


def test_the_web_console_shows_the_tree_of_runs(tmp_path: Path) -> None:
    from tests.test_console_web import Server, _request

    parent, workspace = _setup(tmp_path)
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "web", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy))
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    server = Server(tmp_path / "runs.db")
    try:
        status, page = _request(server.url + "/")
        assert status == 200
        top = page.index(f'data-run="{run["run_id"]}"')
        below = page.index(f'data-run="{child["run_id"]}" data-parent="{run["run_id"]}"')
        assert top < below and "↳" in page[top:below + 200]
        status, page = _request(server.url + f"/runs/{run['run_id']}")
        assert status == 200 and 'id="child-runs"' in page
        assert f'href="/runs/{child["run_id"]}"' in page
        status, page = _request(server.url + f"/runs/{child['run_id']}")
        assert f'child of run <a href="/runs/{run["run_id"]}"' in page
    finally:
        server.stop()


@pytest.fixture
def temporal_workers(temporal_address: str, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(temporal_address, f"q-{uuid.uuid4().hex[:8]}", tmp_path)
    w.start(2)
    try:
        yield w
    finally:
        w.stop_all()


@pytest.mark.slow
@pytest.mark.temporal
@pytest.mark.timeout(300)
def test_a_child_runs_on_the_temporal_workers(cli: EngineCLI, temporal_workers: Workers,
                                              tmp_path: Path) -> None:
    workers = temporal_workers
    parent, workspace = _setup(tmp_path)
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    proc = cli("run", str(parent), "--task", "temporal", "--workspace", str(workspace),
               "--approval", "policy", "--policy", str(policy), "--json", *workers.flags())
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    assert (run["status"], run["state"]) == ("completed", "done")
    (child,) = cli.json("show", run["run_id"])["children"]
    assert child["status"] == "completed" and child["machine"] == "coding_agent"
    assert (workspace / "notes.txt").read_text() == "hello from the child\n"
    assert cli.json("show", run["run_id"])["input_tokens"] == child["input_tokens"] > 0


def test_a_database_from_before_child_runs_is_upgraded_and_keeps_its_runs(
        tmp_path: Path) -> None:
    import sqlite_utils

    from engine.store.sqlite import MIGRATIONS, SCHEMA_VERSION, SqliteStore

    path = tmp_path / "runs.db"
    db = sqlite_utils.Database(path)
    before = max(v for v in MIGRATIONS if MIGRATIONS[v].__name__ != "_schema_parent_link")
    for version in range(1, before + 1):
        MIGRATIONS[version](db)
    db.execute(f"PRAGMA user_version={before}")
    db.execute("INSERT INTO runs (run_id, machine, status, state, steps, config, rid) VALUES"
               " ('old-run', 'm', 'completed', 'done', 3, '{}', 1)")
    db.conn.commit()
    db.close()
    store = SqliteStore(path)
    try:
        (old,) = store.list_runs()
        assert (old.run_id, old.parent_run_id, old.parent_step) == ("old-run", None, None)
        assert store.child_runs("old-run") == []
    finally:
        store.close()
    conn = __import__("sqlite3").connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    parent, workspace = _setup(tmp_path)
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy))
    assert len(_json(tmp_path, "show", run["run_id"])["children"]) == 1


def test_a_kill_after_the_child_ended_reads_it_instead_of_running_it_again(
        tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path, turns=SHELL_TURNS)
    (workspace / "notes.txt").write_text("kept\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: allow}\n"
                      "  - {tool: read_file, decision: allow}\n")
    args = ["run", str(parent), "--task", "t", "--workspace", str(workspace), "--approval",
            "policy", "--policy", str(policy), "--db", str(tmp_path / "runs.db")]
    proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=tmp_path,
                          env=engine_env({"ENGINE_FAULTS": "crash_after_effect:fix:1"}),
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == -9, proc.stderr  # killed before the parent's step committed
    (top,) = [r for r in _json(tmp_path, "runs") if r["parent_run_id"] is None]
    assert (top["status"], top["state"]) == ("crashed", "fix")
    (child,) = _json(tmp_path, "show", top["run_id"])["children"]
    assert child["status"] == "completed"
    done = _json(tmp_path, "resume", top["run_id"])
    assert (done["status"], done["state"]) == ("completed", "done")
    assert (workspace / "effects.txt").read_text() == "ran\n"
    assert len(_json(tmp_path, "runs")) == 2


def test_a_child_of_an_interactive_parent_asks_the_same_person(tmp_path: Path) -> None:
    import anyio

    import engine

    parent, workspace = _setup(tmp_path, turns=SHELL_TURNS)
    (workspace / "notes.txt").write_text("kept\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: ask}\n"
                      "  - {tool: read_file, decision: allow}\n")
    asked: list[Any] = []

    def person(request: Any) -> bool:
        asked.append(request)
        return True

    runs = engine.Runs(tmp_path / "runs.db")
    result = anyio.run(lambda: runs.start(parent, task="t", workspace=workspace,
                                          policy=policy, approver=person))
    assert result.status == "completed"
    assert [(r.tool, r.args["command"]) for r in asked] == [("run_shell",
                                                             "echo ran >> effects.txt")]
    assert (workspace / "effects.txt").read_text() == "ran\n"
    (child,) = runs.children(result.run_id)
    assert child.config["approval"] == "interactive"
    assert [r.run_id for r in asked] == [child.run_id]  # the question names the child run


def test_a_child_cannot_loosen_the_parents_sandbox() -> None:
    from engine.permissions.narrowing import narrowed
    from engine.permissions.policy import Policy

    parent = Policy.from_data({"sandbox": {"mode": "required", "network": "deny"}}, "parent")
    child = Policy.from_data({"default": "allow",
                              "sandbox": {"mode": "off", "network": "allow",
                                          "writable": ["/srv"]}}, "child")
    both = narrowed(child, [parent])
    assert both.sandbox is not None
    assert (both.sandbox.mode, both.sandbox.network) == ("required", "deny")
    assert both.when_asked == "deny" and both.parents == (parent,)
    assert narrowed(child, []) is child


def test_a_child_run_on_a_postgres_store(tmp_path: Path, pg_url: str) -> None:
    parent, workspace = _setup(tmp_path)
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(parent), "--task", "pg", "--workspace",
         str(workspace), "--approval", "policy", "--policy", str(policy), "--store", pg_url,
         "--json"], cwd=tmp_path, env=engine_env(), capture_output=True, text=True,
        timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    import engine

    runs = engine.Runs(pg_url)
    (child,) = runs.children(run["run_id"])
    assert (child.parent_run_id, child.parent_step, child.status) == (run["run_id"], 0,
                                                                      "completed")
    assert (workspace / "notes.txt").read_text() == "hello from the child\n"


def test_a_child_machine_keeps_its_own_policy_under_the_parents(tmp_path: Path) -> None:
    parent, workspace = _setup(tmp_path)
    (workspace / "notes.txt").write_text("kept\n")
    text = parent.read_text().replace("machine: coding_agent", "machine: helper.yaml")
    parent.write_text(text)
    helper = HELPER.format(turns=parent.parent / "turns.yaml").replace(
        "tools: [write_file]", "tools: [write_file]\npolicy: helper_policy.yaml")
    (parent.parent / "helper.yaml").write_text(helper)
    (parent.parent / "helper_policy.yaml").write_text(
        "default: deny\nrules:\n  - {tool: write_file, decision: deny}\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text(ALLOW_WRITES + "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "policy", "--policy", str(policy))
    assert run["status"] == "completed"
    assert (workspace / "notes.txt").read_text() == "kept\n"  # the child's own rule held
    (child,) = _json(tmp_path, "show", run["run_id"])["children"]
    (row,) = _json(tmp_path, "audit", child["run_id"])
    assert row["decision"] == "deny" and "helper_policy.yaml" in row["rule"]


def test_approving_a_parked_child_in_the_web_console_finishes_the_parent(
        tmp_path: Path) -> None:
    import re
    import time
    import urllib.parse

    from tests.test_console_web import Server, _request

    parent, workspace = _setup(tmp_path, turns=SHELL_TURNS)
    (workspace / "notes.txt").write_text("kept\n")
    policy = tmp_path / "parent_policy.yaml"
    policy.write_text("default: deny\nrules:\n  - {tool: run_shell, decision: ask}\n"
                      "  - {tool: read_file, decision: allow}\n")
    run = _json(tmp_path, "run", str(parent), "--task", "t", "--workspace", str(workspace),
                "--approval", "park", "--policy", str(policy), ok=(5,))
    (waiting,) = _json(tmp_path, "approvals")
    server = Server(tmp_path / "runs.db")
    try:
        status, page = _request(server.url + f"/runs/{waiting['run_id']}")
        assert status == 200
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert csrf is not None
        form = urllib.parse.urlencode({"csrf": csrf.group(1), "decision": "allow",
                                       "args_hash": waiting["args_hash"]}).encode()
        status, _ = _request(server.url + f"/approvals/{waiting['run_id']}/{waiting['call_id']}",
                             data=form)
        assert status in (200, 303)
        deadline = time.monotonic() + 120  # a hang guard: the console resumes in the background
        while _json(tmp_path, "show", run["run_id"])["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        server.stop()
    assert _json(tmp_path, "show", waiting["run_id"])["status"] == "completed"
    assert (workspace / "effects.txt").read_text() == "ran\n"
