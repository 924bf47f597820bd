"""A transaction writes each row once with its final values (``engine.store.deferred.fold``):
a step begun and ended in it is one insert, a ledger row started and ended in it is one row,
the run's row is written by the last step. The folded statements leave exactly the rows the
statements one by one would have left, on both stores, and a run killed between folded rows
resumes to the same run, ledger included.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.cli import write_task
from engine.store.base import EffectRecord, StepBegin, StepCommit
from engine.store.deferred import Folds, fold
from engine.store.sqlite import (
    EFFECT_ROW,
    EVENT_ROW,
    FOLDS,
    RUN_ROW,
    STEP_BEGIN,
    STEP_END,
    STEP_WHOLE,
    SqliteStore,
    row_key,
)
from engine.store.sqlite.store import _execute
from engine.vocabulary.state import Message, RunInfo, RunState, ToolCall, Usage
from tests.conftest import ROOT, EngineCLI

TABLES = ("runs", "steps", "messages", "events", "checkpoints", "audit", "effects")


# -- the fold itself --------------------------------------------------------------------------

def _effect(call: str, status: str, result: str | None, file: str | None, at: float
            ) -> tuple[str, tuple[Any, ...]]:
    return (EFFECT_ROW, ("r", call, 3, "read_file", "1", status, 1, 0, '{"path":"x"}', result,
                         file, at))


def test_a_step_begun_and_ended_in_one_transaction_is_one_row() -> None:
    begin = (STEP_BEGIN, (7, "r", 6, "checkpoint", "checkpoint", 1.0, None))
    end = (STEP_END, ("saved", "evaluate_stop", 2.0, "", None, 7))
    other = ("INSERT INTO events (key) VALUES (?)", (1,))
    assert fold([begin, other, end], FOLDS) == [
        (STEP_WHOLE, (7, "r", 6, "checkpoint", "checkpoint", 1.0, None,
                      "saved", "evaluate_stop", 2.0, "", None)), other]
    earlier_end = (STEP_END, ("go", "b", 2.0, "", None, 6))  # began in an earlier transaction
    assert fold([earlier_end, begin], FOLDS) == [earlier_end, begin]


def test_a_call_started_and_ended_in_one_transaction_is_one_row() -> None:
    started = _effect("c1", "started", None, '{"path":"x","base_hash":"b"}', 1.0)
    done = _effect("c1", "done", '{"content":"ok"}', None, 2.0)
    other_call = _effect("c2", "started", None, None, 1.5)
    (first, second) = fold([started, other_call, done], FOLDS)
    assert first == (EFFECT_ROW, ("r", "c1", 3, "read_file", "1", "done", 1, 0, '{"path":"x"}',
                                  '{"content":"ok"}', '{"path":"x","base_hash":"b"}', 2.0))
    assert second == other_call


def test_the_run_row_is_written_by_the_last_step_of_a_transaction() -> None:
    rows = [(RUN_ROW, ("b", 1, "running", 1.0, 0, 0, 0, 0.0, 1, "r")),
            (RUN_ROW, ("x", 9, "running", 1.0, 0, 0, 0, 0.0, 1, "other run")),
            (RUN_ROW, ("c", 2, "running", 2.0, 0, 0, 0, 0.0, 1, "r"))]
    assert fold(rows, FOLDS) == rows[1:]


def test_a_two_column_step_key_folds_the_same_way() -> None:
    folds = Folds("begin", "end", "whole", "effect", "run", key_width=2)
    statements = [("begin", ("r", 6, "s", "a", 1.0, None)),
                  ("end", ("t", "d", 2.0, "", None, "r", 5)),
                  ("end", ("t", "d", 2.0, "", None, "r", 6))]
    assert fold(statements, folds) == [
        ("whole", ("r", 6, "s", "a", 1.0, None, "t", "d", 2.0, "", None)),
        ("end", ("t", "d", 2.0, "", None, "r", 5))]


# -- folded statements leave the same rows as the statements one by one -------------------------

def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in TABLES}
    finally:
        conn.close()


def _database(tmp_path: Path) -> tuple[Path, int]:
    """A database with run ``r`` (number ``rid``) and its rows already written: step 5
    running, step 6 succeeded, call ``c0`` done with a result."""
    store = SqliteStore(tmp_path / "base.db")
    state = RunState("r", "m", "a", 0, (Message("system", "sys"),), {})
    store.create_run(RunInfo("r", "m", "m.yaml", "h", "running", "a", "/ws", 1.0, 1.0, 0, 0, 0,
                             0.0, {}), state, StepBegin(0, "a", "act", 1.0))
    store.begin_step("r", StepBegin(5, "s5", "act", 1.5, {"calls": []}))
    store.begin_step("r", StepBegin(6, "s6", "act", 1.5))
    store.commit_step("r", StepCommit(6, "s6", "go", "s7", 1.6, {}, (), 1, Usage()))
    store.record_effect(EffectRecord("r", "c0", 6, "read_file", "1", "done", True, False, {},
                                     1.6, {"content": "first"}))
    rid = store._rid("r")
    store.close()
    assert rid is not None
    return tmp_path / "base.db", rid


CASES = {
    "new step": lambda k: [(STEP_BEGIN, (k(8), "r", 8, "s8", "act", 3.0, None)),
                           (STEP_END, ("go", "s9", 3.1, "n", '{"x":1}', k(8)))],
    "a running step begun again": lambda k: [
        (STEP_BEGIN, (k(5), "r", 5, "s5", "act", 3.0, '{"calls":[1]}')),
        (STEP_END, ("go", "s6", 3.1, "", None, k(5)))],
    "a succeeded step begun again": lambda k: [
        (STEP_BEGIN, (k(6), "r", 6, "s6", "act", 3.0, '{"calls":[2]}')),
        (STEP_END, ("again", "s8", 3.1, "", None, k(6)))],
    "a step begun twice": lambda k: [
        (STEP_BEGIN, (k(8), "r", 8, "s8", "act", 3.0, None)),
        (STEP_BEGIN, (k(8), "r", 8, "s8", "act", 3.5, '{"calls":[]}')),
        (STEP_END, ("go", "s9", 3.6, "", None, k(8)))],
    "a new call": lambda k: [_effect("c1", "started", None, '{"base_hash":"b"}', 3.0),
                             _effect("c1", "done", '{"content":"ok"}', None, 3.1)],
    "a recorded call again": lambda k: [_effect("c0", "started", None, None, 3.0),
                                        _effect("c0", "done", None, '{"f":1}', 3.1)],
    "events between a step's begin and end": lambda k: [
        (STEP_BEGIN, (k(8), "r", 8, "s8", "act", 3.0, None)),
        *[(EVENT_ROW, (k(i), "r", i, 8, "stream", 3.0 + i, '{"text":"x"}')) for i in range(3)],
        (STEP_END, ("go", "s9", 3.6, "", None, k(8)))],
    "run rows": lambda k: [(RUN_ROW, ("s8", 8, "running", 3.0, 1, 2, 0, 0.5, 1, "r")),
                           (RUN_ROW, ("s9", 9, "running", 3.1, 3, 4, 0, 0.0, 0, "r"))],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_folded_statements_leave_the_rows_the_statements_one_by_one_leave(
        case: str, tmp_path: Path) -> None:
    base, rid = _database(tmp_path)
    statements = CASES[case](lambda seq: row_key(rid, seq))
    assert len(fold(statements, FOLDS)) < len(statements)  # the case folds something
    dumps = []
    for name, write in (("one_by_one", None), ("folded", _execute)):
        path = tmp_path / f"{name}.db"
        shutil.copy(base, path)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        if write is None:
            for sql, params in statements:
                conn.execute(sql, params)
        else:
            write(conn, statements)
        conn.execute("COMMIT")
        conn.close()
        dumps.append(_dump(path))
    assert dumps[0] == dumps[1]
    assert dumps[0] != _dump(base)


# -- through the store, on both stores ------------------------------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path):
    """Two empty stores of one kind."""
    if request.param == "sqlite":
        pair: Any = (SqliteStore(tmp_path / "a.db"), SqliteStore(tmp_path / "b.db"))
    else:
        from engine.store.postgres import PostgresStore

        cluster = request.getfixturevalue("pg_cluster")
        pair = (PostgresStore(cluster.create_database()),
                PostgresStore(cluster.create_database()))
    yield pair
    for s in pair:
        s.close()


def _turn(store: Any, riding: bool) -> None:
    """Two turns of a read-only call; ``riding``: as the runner writes them (approval,
    checkpoint and evaluate_stop ride along, the call's ledger rows are buffered), else each
    step in its own transaction and each ledger row on its own."""
    state = RunState("r", "m", "call_model", 0, (Message("system", "sys"),), {})
    store.create_run(RunInfo("r", "m", "m.yaml", "h", "running", "call_model", "/ws", 1.0, 1.0,
                             0, 0, 0, 0.0, {}), state, StepBegin(0, "call_model", "call", 1.0))
    seq, messages = 0, 1
    for turn in range(2):
        call = ToolCall(f"c{turn}", "read_file", {"path": "x"})
        plan = {"calls": [call.to_dict()]}
        states = [("call_model", "tool_calls", "await_approval", False,
                   (Message("assistant", f"turn {turn}", (call,)),)),
                  ("await_approval", "decided", "exec_tool", True, ()),
                  ("exec_tool", "done", "checkpoint", False,
                   (Message("tool", f"content {turn}", tool_call_id=call.id),)),
                  ("checkpoint", "saved", "evaluate_stop", True, ()),
                  ("evaluate_stop", "continue", "call_model", True, ())]
        for name, trigger, dest, rides, new in states:
            at = 10.0 * seq
            if name == "exec_tool":
                for status, result in (("started", None), ("done", {"content": "ok"})):
                    store.record_effect(EffectRecord("r", call.id, seq, "read_file", "1", status,
                                                     True, False, call.args, at, result),
                                        buffered=riding)
            store.append_event("r", seq, "step", {"n": seq}, at)
            nxt = StepBegin(seq + 1, dest, dest, at + 1, plan if dest == "exec_tool" else None)
            store.commit_step("r", StepCommit(
                seq, name, trigger, dest, at + 1, {"turn": turn}, new, messages,
                Usage(seq, seq, 0, 0.01 * seq), next_step=nxt), defer=riding and rides)
            seq, messages = seq + 1, messages + len(new)
    store.flush()


def test_a_run_reads_the_same_written_folded_or_one_row_at_a_time(stores: Any) -> None:
    folded, alone = stores
    _turn(folded, riding=True)
    _turn(alone, riding=False)
    for read in ("steps", "transitions", "messages", "effects", "events"):
        assert getattr(folded, read)("r") == getattr(alone, read)("r"), read
    assert folded.load_state("r") == alone.load_state("r")
    assert folded.get_run("r") == alone.get_run("r")
    assert [s.status for s in folded.steps("r")] == ["succeeded"] * 10 + ["running"]


def test_riding_steps_and_a_buffered_call_are_one_insert_each(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "e.db")
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    _turn(store, riding=True)
    store.close()
    verbs = [" ".join(s.split()[:3]) for s in seen]
    # each step row is inserted once (ten steps and the one begun last); only the steps begun
    # in an earlier transaction end with an update: the first (begun with the run) and per
    # turn the approval and the checkpoint; the other three of a turn are inserted finished;
    # each call is one insert
    assert verbs.count("INSERT INTO steps") == 11
    assert verbs.count("UPDATE steps SET") == 1 + 2 * 2
    assert verbs.count("INSERT INTO effects") == 2
    assert verbs.count("COMMIT") == 1 + 2 * 2 + 1  # the run, two a turn, the last riders


# -- a kill between folded rows --------------------------------------------------------------------

def _ledger(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        return {
            "steps": conn.execute("SELECT seq, state, action, status, trigger, dest, plan,"
                                  " updates FROM steps ORDER BY seq").fetchall(),
            "effects": [(r[0], r[1], r[2], json.loads(r[3]).get("content")) for r in
                        conn.execute("SELECT call_id, step, status, result FROM effects"
                                     " ORDER BY rowid")],
            "messages": conn.execute("SELECT seq, step, body FROM messages ORDER BY seq"
                                     ).fetchall()}
    finally:
        conn.close()


@pytest.mark.parametrize("fault", ["crash_after:exec_tool:2", "crash_after:checkpoint:2",
                                   "crash_during:exec_tool:3", "crash_before:call_model:3"])
def test_a_kill_between_folded_rows_resumes_to_the_same_rows(fault: str, tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", 4)
    runs = {}
    for name, env in (("whole", None), ("killed", {"ENGINE_FAULTS": fault})):
        cli = EngineCLI(ROOT, tmp_path / f"{name}.db")
        proc = cli("run", "machines/coding_agent.yaml", "--golden", str(task), "--approval",
                   "auto", "--json", env=env)
        if env is not None:
            assert proc.returncode == -9, proc.stderr[-2000:]
            (run,) = cli.json("runs")
            proc = cli("resume", run["run_id"], "--json")
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[name] = _ledger(cli.db)
    whole, killed = runs["whole"], runs["killed"]
    assert [s[1:6] for s in killed["steps"]] == [s[1:6] for s in whole["steps"]]
    assert killed["effects"] == whole["effects"]
    assert [m[:2] for m in killed["messages"]] == [m[:2] for m in whole["messages"]]


# -- the row encoder and decoder -------------------------------------------------------------------

VALUES = [{"a": 1.5, "b": [1, None, True, 'x"\n\té\u2028'], "c": {"d": float("inf")}}, "text",
          3, [], {}, {"k": Path("/p")}, {1: 2, 2.5: "x", None: 1, False: 2}, 1e-05, -0.0]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_rows_are_encoded_as_json_dumps_encodes_them(value: Any) -> None:
    from engine.store.sql.rows import dumps, dumps_map

    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    assert dumps(value) == expected
    if isinstance(value, dict):
        assert dumps_map(value) == expected


@pytest.mark.parametrize("text", ['{"a":[1,2.5,null]}', ' {"a":1}', '{"a":1}\n', '"x"', "NaN"])
def test_stored_json_reads_as_json_loads_reads_it(text: str) -> None:
    from engine.store.sql.rows import loads

    assert repr(loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1}x', "", "{"])
def test_unreadable_stored_json_fails_as_json_loads_fails(text: str) -> None:
    from engine.store.sql.rows import loads

    with pytest.raises(json.JSONDecodeError):
        loads(text)
