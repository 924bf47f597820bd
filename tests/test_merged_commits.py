"""Steps that ride in the next transaction (``checkpoint``, ``evaluate_stop``): fewer commits per
turn, and a kill between merged steps still resumes to exactly the same run.

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
from engine.session import RunRequest, execute, prepare_new
from engine.store.sqlite import SqliteStore
from tests.conftest import ROOT, EngineCLI, read_tree

DEMO = "golden_tasks/demo_fix_test"
MACHINE = "machines/coding_agent.yaml"

# Between checkpoint and evaluate_stop, between evaluate_stop and the next call_model, and
# after the call_model whose commit carries them.
MERGED_KILLS = ["crash_after:checkpoint:1", "crash_before:evaluate_stop:2",
                "crash_after:evaluate_stop:2", "crash_before:call_model:3",
                "crash_after:checkpoint:4"]


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


def test_checkpoint_and_evaluate_stop_commit_with_the_next_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, rows = _commits(tmp_path / "merged", 6)
    large, _ = _commits(tmp_path / "merged", 16)
    merged = (large - small) / 10
    for name in ("checkpoint", "evaluate_stop"):  # the same runs, each step its own commit
        monkeypatch.setitem(ACTIONS, name, dataclasses.replace(ACTIONS[name],
                                                               rides_along=False))
    small, rows_alone = _commits(tmp_path / "alone", 6)
    large, _ = _commits(tmp_path / "alone", 16)
    alone = (large - small) / 10
    assert (alone, merged) == (5, 3)  # two of a turn's five steps ride along
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
    finally:
        conn.close()
    messages = [(m["role"], re.sub(r"\d+\.\d+ ?s\b", "N s",  # durations vary (unittest: 0.001s)
                                   str(m.get("content", "")).replace(workspace, "WS")))
                for m in bodies]
    return {"transitions": transitions, "messages": messages, "steps": steps,
            "checkpoints": checkpoints}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("merged-baseline")
    cli = EngineCLI(ROOT, tmp / "engine.db")
    proc = _run_demo(cli)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    return {"tree": read_tree(Path(run["workspace"])),
            **_history(tmp / "engine.db", run["workspace"])}


@pytest.mark.parametrize("fault", MERGED_KILLS)
def test_kill_between_merged_steps_resumes_to_the_same_run(fault: str, cli: EngineCLI,
                                                           baseline: dict[str, Any]) -> None:
    killed = _run_demo(cli, env={"ENGINE_FAULTS": fault})
    assert killed.returncode == -9, killed.stderr[-2000:]
    (run,) = cli.json("runs")
    at_kill = _history(cli.db, run["workspace"])
    done = [state for _, state, status in at_kill["steps"] if status == "succeeded"]
    assert done[-1] == "exec_tool", done  # the merged steps were not durable: they run again
    seqs = [t[0] for t in at_kill["transitions"]]
    assert seqs == list(range(len(seqs)))
    resumed = cli("resume", run["run_id"], "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["status"] == "completed"
    after = _history(cli.db, run["workspace"])
    assert after["transitions"] == baseline["transitions"]
    assert after["messages"] == baseline["messages"]
    assert [s[1:] for s in after["steps"]] == [s[1:] for s in baseline["steps"]]
    assert after["checkpoints"] == baseline["checkpoints"]
    assert read_tree(Path(run["workspace"])) == baseline["tree"]
