"""Parked approvals end to end: real CLI subprocesses on a real SQLite file.

A golden task whose edit needs a person (``approval: park`` in its task file) parks with exit
code 5; ``approvals --json`` lists the call; ``approve --resume`` or ``deny --resume`` continue
it; a killed process changes nothing; two approvers racing: exactly one decision is recorded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env

EDIT = {"path": "inventory.py", "old": "total += item.price\n",
        "new": "total += item.price * item.quantity\n"}

POLICY = """\
default: deny
rules:
  - {decision: ask, tool: edit_file, path: "*.py"}
"""

TASK = """\
prompt: "Fix total_value in inventory.py."
machine: machines/coding_agent.yaml
fixture: fixture
approval: park
policy: policy.yaml
"""


def _turns(after_edit: str) -> str:
    return json.dumps([
        {"text": "Fixing it.", "tool_calls": [{"name": "edit_file", "args": EDIT}]},
        {"expect": {"tool_result_contains": after_edit}, "text": "Done."},
    ])


def make_task(tmp_path: Path, after_edit: str = "inventory.py") -> Path:
    """The demo's fixture with an edit that needs a person, parked by the task file."""
    task = tmp_path / "park_task"
    shutil.copytree(ROOT / "golden_tasks" / "demo_fix_test" / "fixture", task / "fixture")
    (task / "task.yaml").write_text(TASK)
    (task / "policy.yaml").write_text(POLICY)
    (task / "turns.yaml").write_text(_turns(after_edit))
    return task


def park(cli: EngineCLI, task: Path) -> dict:
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--json")
    assert proc.returncode == 5, proc.stderr
    info = json.loads(proc.stdout)
    assert info["status"] == "waiting_approval"
    line = proc.stderr.strip().splitlines()[-1]
    assert info["run_id"] in line and "approve" in line and "deny" in line, line
    return info


def pending(cli: EngineCLI) -> list[dict]:
    proc = cli("approvals", "--db", str(cli.db), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def inventory(info: dict) -> str:
    return (Path(info["workspace"]) / "inventory.py").read_text()


def test_park_lists_and_approve_resume_completes(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    rows = pending(cli)
    assert [(r["run_id"], r["tool"], r["arguments"]) for r in rows] == [
        (info["run_id"], "edit_file", EDIT)]
    row = rows[0]
    assert row["risk"] == "write" and "rules[0]" in row["rule"]
    assert "+        total += item.price * item.quantity" in row["preview"]
    assert row["age_s"] >= 0 and len(row["args_hash"]) == 16
    assert "price * item.quantity" not in inventory(info)  # nothing ran without a decision

    proc = cli("approve", info["run_id"], row["call_id"], "--resume", "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert "total += item.price * item.quantity" in inventory(info)
    assert cli.json("show", info["run_id"])["status"] == "completed"
    assert pending(cli) == []
    audit = cli.json("audit", info["run_id"])
    decided = [a for a in audit if a["call_id"] == row["call_id"]]
    assert [(a["decision"], a["decided_by"]) for a in decided] == [("allow", "cli")]
    assert "approved by" in decided[0]["reason"]
    assert decided[0]["args_digest"] == row["args_hash"]


def test_deny_gives_the_model_the_denial(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path, after_edit="Permission denied"))
    (row,) = pending(cli)
    proc = cli("deny", info["run_id"], row["call_id"], "--reason", "touch only tests",
               "--resume", "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert "price * item.quantity" not in inventory(info)
    shown = cli.json("show", info["run_id"])
    assert shown["status"] == "completed"
    from engine.store.sqlite import SqliteStore

    tool_msgs = [m for m in SqliteStore(cli.db).messages(info["run_id"]) if m.role == "tool"]
    assert len(tool_msgs) == 1 and tool_msgs[0].is_error
    assert "Permission denied" in tool_msgs[0].content
    assert "touch only tests" in tool_msgs[0].content


def test_decisions_on_runs_not_waiting_are_exit_2(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    proc = cli("approve", info["run_id"], "no-such-call", "--db", str(cli.db))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    (row,) = pending(cli)
    assert cli("approve", info["run_id"], row["call_id"], "--resume",
               "--db", str(cli.db)).returncode == 0
    again = cli("deny", info["run_id"], row["call_id"], "--db", str(cli.db))
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "not waiting" in again.stderr
    assert "Traceback" not in again.stderr


def test_kill_9_while_waiting_changes_nothing(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    before = pending(cli)
    from engine.store.sqlite import SqliteStore

    store = SqliteStore(cli.db)
    row = store._conn.execute("SELECT lease_pid, lease_nonce FROM runs WHERE run_id = ?",
                              (info["run_id"],)).fetchone()
    assert row == (None, None)  # no lease, no process holds the parked run
    # A process picking the run up is killed -9 in the middle of the parked step.
    proc = cli("resume", info["run_id"],
               env={"ENGINE_FAULTS": "crash_before:await_approval:1"})
    assert proc.returncode == -9, proc.stderr
    after = pending(cli)
    assert [(r["call_id"], r["args_hash"], r["requested_at"]) for r in after] == [
        (r["call_id"], r["args_hash"], r["requested_at"]) for r in before]
    assert "price * item.quantity" not in inventory(info)
    assert store.effects(info["run_id"]) == []
    proc = cli("approve", info["run_id"], before[0]["call_id"], "--resume",
               "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert "total += item.price * item.quantity" in inventory(info)


def test_two_approvers_racing_exactly_one_wins(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    (row,) = pending(cli)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "engine", verb, info["run_id"], row["call_id"], "--db",
         str(cli.db)], cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for verb in ("approve", "deny", "approve")]
    results = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2, 2], results
    for code, err in results:
        if code == 2:
            assert err.count("\n") == 1 and "not pending" in err, err
    from engine.store.sqlite import SqliteStore

    audit = [a for a in SqliteStore(cli.db).audit(info["run_id"]) if a.call_id == row["call_id"]]
    assert len(audit) == 1


@pytest.mark.parametrize("value", ["ask", "maybe"])
def test_bad_approval_value_in_policy_is_exit_2(cli: EngineCLI, tmp_path: Path,
                                                value: str) -> None:
    task = make_task(tmp_path)
    (task / "policy.yaml").write_text(POLICY + f"approval: {value}\n")
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task))
    assert proc.returncode == 2 and "approval" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("tamper", [
    "args_hash = '0000000000000000', status = 'allow', channel = 'cli', decided_by = 'x'",
    "status = 'maybe'",
    "status = 'allow', channel = 'carrier-pigeon'",
])
def test_a_decision_not_bound_to_this_call_is_a_deny(cli: EngineCLI, tmp_path: Path,
                                                     tamper: str) -> None:
    """Written behind the commands' back: a stale hash, another policy, an unreadable
    decision. The resumed run never runs the call; the model is told it was denied."""
    info = park(cli, make_task(tmp_path, after_edit="Permission denied"))
    from engine.store.sqlite import SqliteStore

    store = SqliteStore(cli.db)
    with store._tx() as c:
        c.execute(f"UPDATE approval_requests SET {tamper} WHERE run_id = ?", (info["run_id"],))
    store.close()
    proc = cli("resume", info["run_id"])
    assert proc.returncode == 0, proc.stderr
    assert "price * item.quantity" not in inventory(info)
    audit = cli.json("audit", info["run_id"])
    assert [(a["decision"], a["decided_by"]) for a in audit if a["tool"] == "edit_file"] == [
        ("deny", "engine")]


def test_a_decision_under_another_policy_version_is_asked_again(cli: EngineCLI,
                                                                 tmp_path: Path) -> None:
    """Written behind the commands' back: an allow bound to another policy version. The
    resumed run never runs the call; it parks again and asks (exit 5)."""
    info = park(cli, make_task(tmp_path))
    from engine.store.sqlite import SqliteStore

    store = SqliteStore(cli.db)
    with store._tx() as c:
        c.execute("UPDATE approval_requests SET policy_version = 'other', status = 'allow', "
                  "channel = 'cli', decided_by = 'x' WHERE run_id = ?", (info["run_id"],))
    store.close()
    proc = cli("resume", info["run_id"])
    assert proc.returncode == 5, proc.stderr
    assert "price * item.quantity" not in inventory(info)
    (again,) = pending(cli)
    assert again["policy_version"] != "other"


def test_always_grants_the_capability_for_the_rest_of_the_run(cli: EngineCLI,
                                                              tmp_path: Path) -> None:
    task = make_task(tmp_path)
    second = {**EDIT, "old": "return round(total, 2)", "new": "return round(total, 3)"}
    (task / "turns.yaml").write_text(json.dumps([
        {"text": "One.", "tool_calls": [{"name": "edit_file", "args": EDIT}]},
        {"text": "Two.", "tool_calls": [{"name": "edit_file", "args": second}]},
        {"expect": {"tool_result_contains": "inventory.py"}, "text": "Done."}]))
    info = park(cli, task)
    (row,) = pending(cli)
    bad = cli("approve", info["run_id"], row["call_id"], "--always", "everything",
              "--db", str(cli.db))
    assert bad.returncode == 2 and "--always" in bad.stderr
    assert [r["call_id"] for r in pending(cli)] == [row["call_id"]]
    proc = cli("approve", info["run_id"], row["call_id"], "--always", "run", "--resume",
               "--db", str(cli.db))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "round(total, 3)" in inventory(info)  # the second edit did not park
    by = [a["decided_by"] for a in cli.json("audit", info["run_id"]) if a["tool"] == "edit_file"]
    assert by == ["cli", "always"]


def test_a_parked_shell_call_lists_its_parsed_commands(cli: EngineCLI, tmp_path: Path) -> None:
    task = make_task(tmp_path)
    (task / "policy.yaml").write_text("default: deny\nrules:\n"
                                      "  - {decision: ask, tool: run_shell}\n")
    (task / "turns.yaml").write_text(json.dumps([
        {"text": "Testing.", "tool_calls": [{"name": "run_shell", "args": {
            "command": "python -m unittest -q 2>&1 | tee out.txt"}}]},
        {"text": "Done."}]))
    park(cli, task)
    (row,) = pending(cli)
    assert row["command"] == "python -m unittest -q 2>&1 | tee out.txt"
    assert [(c["argv"][0], c["risk"]) for c in row["parsed"]] == [("python", "exec"),
                                                                 ("tee", "write")]
    text = cli("approvals", "--db", str(cli.db)).stdout
    assert row["call_id"] in text and "tee out.txt" in text


def test_a_run_that_moved_on_is_not_listed_nor_decidable(cli: EngineCLI, tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path, after_edit="Permission denied"))
    (row,) = pending(cli)
    # resumed in another mode: the call is denied without a person, the run ends
    proc = cli("resume", info["run_id"], "--approval", "deny")
    assert proc.returncode == 0, proc.stderr
    assert pending(cli) == []
    late = cli("approve", info["run_id"], row["call_id"], "--db", str(cli.db))
    assert late.returncode == 2 and "not waiting" in late.stderr
