"""Steps that ride in the next transaction (``checkpoint``, ``evaluate_stop``, and
``await_approval`` when the policy alone decided): fewer commits per turn, and a kill between
merged steps still resumes to exactly the same run.

Kills go through the real CLI (``ENGINE_FAULTS``) on real SQLite files; commits are counted on
the store's real connection.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from bench.cli import write_task
from engine.actions.registry import ACTIONS
from engine.session.compose import RunRequest, execute, prepare_new
from engine.store.sqlite import SqliteStore
from engine.vocabulary.state import Outcome
from tests.conftest import ROOT, EngineCLI, read_tree

DEMO = "golden_tasks/demo_fix_test"
MACHINE = "machines/coding_agent.yaml"

# (fault, the last step on disk at the kill). Between checkpoint and evaluate_stop, between
# evaluate_stop and the next call_model, and after the call_model whose commit carries them;
# between await_approval and exec_tool (a read-only turn, an edit), inside exec_tool (a read:
# nothing of the turn on disk yet; the edit: its intent's transaction carried the approval),
# and after the exec_tool whose commit carries a read-only turn's approval. ``during`` counts
# tool calls: the third is update_plan, the fourth the edit.
MERGED_KILLS = [("crash_after:checkpoint:1", "exec_tool"),
                ("crash_before:evaluate_stop:2", "exec_tool"),
                ("crash_after:evaluate_stop:2", "exec_tool"),
                ("crash_before:call_model:3", "exec_tool"),
                ("crash_after:checkpoint:4", "exec_tool"),
                ("crash_after:await_approval:2", "call_model"),
                ("crash_before:exec_tool:2", "call_model"),
                ("crash_after:await_approval:3", "call_model"),
                ("crash_before:exec_tool:3", "call_model"),
                ("crash_during:exec_tool:3", "call_model"),
                ("crash_during:exec_tool:4", "await_approval"),
                ("crash_after:exec_tool:2", "exec_tool")]
RIDERS = ("checkpoint", "evaluate_stop", "await_approval")


def _commits(tmp_path: Path, turns: int) -> tuple[int, list[tuple[str, str, str]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    task = write_task(tmp_path / f"t{turns}", turns)
    store = SqliteStore(tmp_path / f"e{turns}.db")
    commits = 0

    def trace(sql: str) -> None:
        nonlocal commits
        commits += sql.strip().upper() == "COMMIT"

    store._conn.set_trace_callback(trace)
    prepared = prepare_new(RunRequest(machine=ROOT / MACHINE, golden=task, approval="auto"),
                           store, db_path=tmp_path / f"e{turns}.db",
                           observer=lambda kind, payload: None, prompter=None)
    result = anyio.run(execute, prepared)
    assert result.status == "completed"
    rows = [(src, trig, dest) for _, src, trig, dest in store.transitions(
        prepared.state.run_id)]
    store.close()
    return commits, rows


def test_three_steps_of_a_turn_commit_with_the_next_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, rows = _commits(tmp_path / "merged", 6)
    large, _ = _commits(tmp_path / "merged", 16)
    merged = (large - small) / 10
    for name in RIDERS:  # the same runs, each step its own commit
        monkeypatch.setitem(ACTIONS, name, dataclasses.replace(
            ACTIONS[name], rides_along=False, rides_along_if=None))
    small, rows_alone = _commits(tmp_path / "alone", 6)
    large, _ = _commits(tmp_path / "alone", 16)
    alone = (large - small) / 10
    assert (alone, merged) == (5, 2)  # three of a turn's five steps ride along
    assert rows == rows_alone and len(rows) == 5 * 6 - 2  # every transition, in order
    assert [r[0] for r in rows[1:6]] == ["call_model", "await_approval", "exec_tool",
                                         "checkpoint", "evaluate_stop"]
    assert all(a[2] == b[0] for a, b in itertools.pairwise(rows))


def _run_demo(cli: EngineCLI, env: dict[str, str] | None = None) -> Any:
    return cli("run", MACHINE, "--approval", "policy", "--json", env=env)


def _history(db: Path, workspace: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        transitions = conn.execute(
            "SELECT seq, src, trigger, dest FROM transitions ORDER BY seq").fetchall()
        bodies = [json.loads(b) for (b,) in conn.execute(
            "SELECT body FROM messages ORDER BY seq")]
        steps = conn.execute("SELECT seq, state, status FROM steps ORDER BY seq").fetchall()
        checkpoints = conn.execute("SELECT seq, state FROM checkpoints ORDER BY seq").fetchall()
        audit = conn.execute(
            "SELECT seq, step, call_id, tool, decision, rule, decided_by, args_digest,"
            " preview_digest FROM audit ORDER BY seq").fetchall()
    finally:
        conn.close()
    messages = [(m["role"], re.sub(r"\d+\.\d+ ?s\b", "N s",  # durations vary (unittest: 0.001s)
                                   str(m.get("content", "")).replace(workspace, "WS")))
                for m in bodies]
    return {"transitions": transitions, "messages": messages, "steps": steps,
            "checkpoints": checkpoints, "audit": audit}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("merged-baseline")
    cli = EngineCLI(ROOT, tmp / "engine.db")
    proc = _run_demo(cli)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    return {"tree": read_tree(Path(run["workspace"])),
            **_history(tmp / "engine.db", run["workspace"])}


@pytest.mark.parametrize(("fault", "last_on_disk"), MERGED_KILLS)
def test_kill_between_merged_steps_resumes_to_the_same_run(
        fault: str, last_on_disk: str, cli: EngineCLI, baseline: dict[str, Any]) -> None:
    killed = _run_demo(cli, env={"ENGINE_FAULTS": fault})
    assert killed.returncode == -9, killed.stderr[-2000:]
    (run,) = cli.json("runs")
    at_kill = _history(cli.db, run["workspace"])
    done = [state for _, state, status in at_kill["steps"] if status == "succeeded"]
    assert done[-1] == last_on_disk, done  # merged steps not yet durable run again
    seqs = [t[0] for t in at_kill["transitions"]]
    assert seqs == list(range(len(seqs)))
    assert at_kill["audit"] == baseline["audit"][:len(at_kill["audit"])]
    resumed = cli("resume", run["run_id"], "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["status"] == "completed"
    after = _history(cli.db, run["workspace"])
    assert after["transitions"] == baseline["transitions"]
    assert after["messages"] == baseline["messages"]
    assert [s[1:] for s in after["steps"]] == [s[1:] for s in baseline["steps"]]
    assert after["checkpoints"] == baseline["checkpoints"]
    assert after["audit"] == baseline["audit"]  # every decision once, in order
    assert read_tree(Path(run["workspace"])) == baseline["tree"]


def _decided(*by: str) -> Outcome:
    return Outcome("decided", updates={"approvals": {
        f"c{i}": {"call_id": f"c{i}", "decision": "allow", "decided_by": b}
        for i, b in enumerate(by)}})


def test_an_approval_rides_along_only_when_no_person_decided() -> None:
    rides = ACTIONS["await_approval"].rides_along_if
    assert rides is not None
    assert rides(_decided("policy", "auto", "always", "deny-mode"))
    for person in ("user", "user-always", "cli", "web", "engine"):
        assert not rides(_decided("policy", person)), person
    assert not rides(Outcome("decided"))  # nothing decided: nothing to vouch for a rerun
