"""Contract suite for every ``Store``: ``SqliteStore`` on a real file and ``PostgresStore`` in a
fresh database of a throw-away PostgreSQL cluster run the same tests."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.store.base import (
    AuditRecord,
    Checkpoint,
    EffectRecord,
    Event,
    LeaseOwner,
    StepBegin,
    StepCommit,
)
from engine.store.sqlite import SCHEMA_VERSION, SqliteStore
from engine.vocabulary.errors import LeaseHeldError, StoreError, UnknownRunError
from engine.vocabulary.state import (
    ForkOrigin,
    Message,
    RunInfo,
    RunState,
    StepRecord,
    ToolCall,
    Usage,
)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        s: Any = SqliteStore(tmp_path / "engine.db")
    else:
        from engine.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def _new_run(store, run_id: str = "run-1") -> RunState:
    state = RunState(run_id, "m", "a", 0, (Message("system", "sys"),), {"task": "t"})
    info = RunInfo(run_id, "m", "m.yaml", "hash", "running", "a", "/ws", 1.0, 1.0, 0, 0, 0,
                   0.0, {"model": "scripted"})
    store.create_run(info, state, StepBegin(0, "a", "act", 1.0))
    return state


def _commit(store, run_id: str, seq: int, state: str, dest: str, messages=(), updates=None,
            first: int = 1, usage: Usage | None = None, nxt: bool = True,
            defer: bool = False) -> None:
    usage = usage or Usage()
    store.commit_step(run_id, StepCommit(
        seq=seq, state=state, trigger="go", dest=dest, ended_at=2.0 + seq,
        updates=updates or {}, messages=messages, first_message_seq=first, usage=usage,
        next_step=StepBegin(seq + 1, dest, "act", 2.0 + seq) if nxt else None), defer=defer)


def test_create_and_read_back(store) -> None:
    _new_run(store)
    info = store.get_run("run-1")
    assert (info.machine, info.state, info.steps) == ("m", "a", 0)
    assert info.config == {"model": "scripted"}
    state = store.load_state("run-1")
    assert state.messages == (Message("system", "sys"),)
    assert state.data == {"task": "t"}
    assert [s.status for s in store.steps("run-1")] == ["running"]


def test_commit_appends_messages_and_deltas(store) -> None:
    _new_run(store)
    call = ToolCall("c1", "read_file", {"path": "x"})
    _commit(store, "run-1", 0, "a", "b", (Message("assistant", "hi", (call,)),),
            {"pending_calls": [call.to_dict()]}, usage=Usage(10, 5, 0, 0.01))
    _commit(store, "run-1", 1, "b", "c", (Message("tool", "ok", tool_call_id="c1"),),
            {"pending_calls": []}, first=2, usage=Usage(20, 9, 0, 0.02))
    state = store.load_state("run-1")
    assert [m.role for m in state.messages] == ["system", "assistant", "tool"]
    assert state.messages[1].tool_calls == (call,)
    assert state.data == {"task": "t", "pending_calls": []}
    assert (state.state, state.step) == ("c", 2)
    info = store.get_run("run-1")
    assert (info.input_tokens, info.output_tokens, info.cost_usd) == (20, 9, 0.02)
    assert store.transitions("run-1") == [(0, "a", "go", "b"), (1, "b", "go", "c")]
    assert [s.status for s in store.steps("run-1")] == ["succeeded", "succeeded", "running"]


def test_commit_is_idempotent(store) -> None:
    _new_run(store)
    msg = (Message("assistant", "once"),)
    _commit(store, "run-1", 0, "a", "b", msg)
    _commit(store, "run-1", 0, "a", "b", msg)
    assert len(store.messages("run-1")) == 2
    assert len(store.transitions("run-1")) == 1
    assert store.row_counts("run-1")["steps"] == 2


def test_unknown_cost_is_null_not_zero(store) -> None:
    _new_run(store)
    _commit(store, "run-1", 0, "a", "b", usage=Usage(1, 1, 0, None))
    assert store.get_run("run-1").cost_usd is None


def test_snapshot_plus_tail(store) -> None:
    _new_run(store)
    _commit(store, "run-1", 0, "a", "b", updates={"x": 1})
    store.save_checkpoint(Checkpoint("run-1", 0, "b", 3.0, {"task": "t", "x": 1, "y": 2}, 1,
                                     Usage()))
    _commit(store, "run-1", 1, "b", "c", updates={"x": 5})
    assert store.load_state("run-1").data == {"task": "t", "x": 5, "y": 2}
    assert [c.seq for c in store.checkpoints("run-1")] == [-1, 0]


def test_unknown_run_and_prefix(store) -> None:
    _new_run(store, "20260101-000000-abcdef")
    assert store.get_run("20260101-000000").run_id == "20260101-000000-abcdef"
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        store.get_run("nope")


def test_update_config_merges_top_level_keys_and_removes_none(store) -> None:
    _new_run(store)
    _new_run(store, "run-2")
    store.append_event("run-1", 0, "model_call", {"tokens": 3}, 1.0)
    store.flush()
    new = store.update_config("run-1", {"backend": "temporal",
                                        "temporal": {"task_queue": "q"}})
    assert new == {"model": "scripted", "backend": "temporal", "temporal": {"task_queue": "q"}}
    assert store.get_run("run-1").config == new
    again = store.update_config("run-1", {"temporal": {"address": "h:1"}, "model": None})
    assert again == {"backend": "temporal", "temporal": {"address": "h:1"}}  # replaced, gone
    assert store.get_run("run-1").config == again
    assert store.get_run("run-2").config == {"model": "scripted"}  # other runs untouched
    state = store.load_state("run-1")  # nothing else of the run changed
    assert (state.state, state.step, state.data) == ("a", 0, {"task": "t"})
    assert [e.kind for e in store.events("run-1")] == ["model_call"]


def test_update_config_of_an_unknown_run_writes_nothing(store) -> None:
    _new_run(store, "20260101-000000-abcdef")
    with pytest.raises(UnknownRunError, match="no run '20260101-000000'"):
        store.update_config("20260101-000000", {"backend": "temporal"})  # no prefix match
    assert store.get_run("20260101-000000-abcdef").config == {"model": "scripted"}
    assert [r.run_id for r in store.list_runs()] == ["20260101-000000-abcdef"]


def test_events_audit_effects_round_trip(store) -> None:
    _new_run(store)
    assert store.append_event("run-1", 0, "model_call", {"tokens": 3}, 1.0) == 0
    assert store.append_event("run-1", 0, "tool_call", {"tool": "x"}, 1.1) == 1
    assert [e.kind for e in store.events("run-1", ("tool_call",))] == ["tool_call"]
    store.record_audit(AuditRecord("run-1", 0, "c1", "run_shell", "deny", "destructive",
                                   "default", "rm -rf", "policy", "a", "b", 1.0))
    assert store.audit("run-1")[0].decision == "deny"
    eff = EffectRecord("run-1", "c1", 2, "run_shell", "1.0", "intent", False, True,
                       {"command": "x"}, 1.0)
    store.record_effect(eff, durable=True)
    store.record_effect(EffectRecord(**{**{k: getattr(eff, k) for k in eff.__slots__},
                                        "status": "done", "result": {"content": "ok"}}))
    (got,) = store.effects("run-1")
    assert (got.status, got.result) == ("done", {"content": "ok"})


def test_steps_and_events_read_back_equal_to_records_made_by_their_constructors(store) -> None:
    """Every field of a read-back record is set (equality reads them all): a field added to
    ``StepRecord`` or ``Event`` that the store does not fill fails here."""
    _new_run(store)
    store.commit_step("run-1", StepCommit(
        seq=0, state="a", trigger="go", dest="b", ended_at=2.0, updates={}, messages=(),
        first_message_seq=1, usage=Usage(),
        next_step=StepBegin(1, "b", "act", 2.0, {"calls": [{"tool": "x"}]})))
    store.end_step("run-1", 1, "failed", "boom", 3.0)
    store.append_event("run-1", 1, "model_call", {"tokens": 3, "text": "hi"}, 2.5)
    store.append_event("run-1", 1, "some_new_kind", {}, 2.6)
    assert store.steps("run-1") == [
        StepRecord("run-1", 0, "a", "act", "succeeded", "go", "b", 1.0, 2.0, "", None),
        StepRecord("run-1", 1, "b", "act", "failed", None, None, 2.0, 3.0, "boom",
                   {"calls": [{"tool": "x"}]})]
    model_call, new_kind = store.events("run-1")
    assert model_call == Event("run-1", 0, 1, "model_call", 2.5, {"tokens": 3, "text": "hi"})
    assert new_kind == Event("run-1", 1, 1, "some_new_kind", 2.6, {})


def test_lease_excludes_a_live_holder_and_takes_over_a_dead_one(store, tmp_path) -> None:
    _new_run(store)
    me = LeaseOwner(os.uname().nodename, os.getpid(), "me")
    store.acquire_lease("run-1", me, 30)
    other = LeaseOwner(os.uname().nodename, os.getpid(), "other")
    with pytest.raises(LeaseHeldError, match=f"pid {os.getpid()}"):
        store.acquire_lease("run-1", other, 30)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = LeaseOwner(os.uname().nodename, int(dead.stdout), "gone")
    store.release_lease("run-1", me)
    store.acquire_lease("run-1", gone, 30)
    store.acquire_lease("run-1", other, 30)  # the holder's process is gone: taken over at once
    assert store.get_run("run-1").status == "running"


def test_lease_on_another_host_expires(store) -> None:
    _new_run(store)
    store.acquire_lease("run-1", LeaseOwner("elsewhere", 1, "far"), -1)  # already expired
    store.acquire_lease("run-1", LeaseOwner("here", os.getpid(), "me"), 30)
    store.release_lease("run-1", LeaseOwner("here", os.getpid(), "me"))
    store.acquire_lease("run-1", LeaseOwner("elsewhere", 1, "far"), 30)
    with pytest.raises(LeaseHeldError, match="elsewhere"):
        store.acquire_lease("run-1", LeaseOwner("here", os.getpid(), "me"), 30)


def test_crashed_status_when_the_lease_holder_died(store) -> None:
    _new_run(store)
    assert store.get_run("run-1").status == "crashed"  # 'running' with no live lease holder


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer than this Turnstile"):
        SqliteStore(path)
    assert path.read_bytes() == before


OLD_STEPS = [  # (seq, state, status, trigger, dest, ended_at) as a schema-4 engine left them
    (0, "plan", "succeeded", "ready", "call_model", 2.0),
    (1, "call_model", "succeeded", "tool_calls", "await_approval", 3.0),
    (2, "await_approval", "succeeded", "decided", "exec_tool", 4.0),
    (3, "exec_tool", "running", None, None, None)]


def _schema_of(path: Path) -> dict[str, Any]:
    """Everything a database's schema decides: each table's columns (order, type, NOT NULL,
    default, key), its indexes and their columns, the views' SQL, and the schema version."""
    conn = sqlite3.connect(path)
    try:
        out: dict[str, Any] = {"version": conn.execute("PRAGMA user_version").fetchone()[0]}
        for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master"
                                            " ORDER BY type, name"):
            if kind == "table":
                out[name] = {
                    "columns": conn.execute(f'PRAGMA table_xinfo("{name}")').fetchall(),
                    "indexes": sorted(
                        (unique, origin, partial, conn.execute(
                            f'PRAGMA index_xinfo("{index}")').fetchall(),
                         None if index.startswith("sqlite_autoindex") else index)
                        for _, index, unique, origin, partial in conn.execute(
                            f'PRAGMA index_list("{name}")'))}
            elif kind == "view":
                out[name] = " ".join(sql.split())
        return out
    finally:
        conn.close()


def test_a_new_database_has_the_schema_the_migrations_make(tmp_path: Path) -> None:
    """A new database is made in one go (``NEW_DATABASE``); an old one is upgraded by the
    migrations. Both must end with the same tables, columns, keys, indexes and views, and a
    new database made so has no free pages to compact."""
    import sqlite_utils

    from engine.store.sqlite import MIGRATIONS

    migrated = tmp_path / "migrated.db"
    db = sqlite_utils.Database(migrated)
    for version in range(1, SCHEMA_VERSION + 1):
        MIGRATIONS[version](db)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    db.conn.commit()
    db.close()
    made = tmp_path / "new.db"
    SqliteStore(made).close()
    assert _schema_of(made) == _schema_of(migrated)
    assert set(_schema_of(made)) >= {"runs", "steps", "events", "effects", "transitions"}
    conn = sqlite3.connect(made)
    try:
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_schema_4_database_keeps_every_transition(tmp_path: Path) -> None:
    """Schema 5 reads the transitions from the committed steps: a database written before,
    with its own transitions table, reads back the same transitions, and a new commit adds
    one; the (run, kind) index of events is gone."""
    import sqlite_utils

    from engine.store.sqlite import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    for version in (1, 2, 3, 4):
        MIGRATIONS[version](db)
    db.execute("INSERT INTO runs (run_id, machine, status, state, steps) VALUES"
               " ('r', 'm', 'running', 'exec_tool', 3)")
    for seq, state, status, trigger, dest, at in OLD_STEPS:
        db.execute("INSERT INTO steps (run_id, seq, state, action, status, trigger, dest,"
                   " ended_at) VALUES ('r', ?, ?, ?, ?, ?, ?, ?)",
                   [seq, state, state, status, trigger, dest, at])
        if status == "succeeded":
            db.execute("INSERT INTO transitions VALUES ('r', ?, ?, ?, ?, ?)",
                       [seq, state, trigger, dest, at])
    db.execute("PRAGMA user_version=4")
    db.conn.commit()
    db.close()
    expected = [(seq, state, trigger, dest) for seq, state, status, trigger, dest, _ in OLD_STEPS
                if status == "succeeded"]

    store = SqliteStore(path)
    try:
        assert store.transitions("r") == expected
        _commit(store, "r", 3, "exec_tool", "checkpoint")
        assert store.transitions("r") == [*expected, (3, "exec_tool", "go", "checkpoint")]
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT at FROM transitions WHERE seq = 3").fetchone() == (5.0,)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        assert "idx_events_run_id_kind" not in names
    finally:
        store.close()


def test_steps_riding_along_leave_the_run_row_as_the_last_step_wrote_it(store) -> None:
    """Steps that ride in the next transaction write the run's row once there: a flush
    writes the latest one, and a step's own commit supersedes those riding before it."""
    _new_run(store)
    _commit(store, "run-1", 0, "a", "b", defer=True, usage=Usage(1, 1))
    _commit(store, "run-1", 1, "b", "c", defer=True, usage=Usage(2, 2))
    assert store.get_run("run-1").steps == 0  # nothing written yet
    store.flush()
    info = store.get_run("run-1")
    assert (info.state, info.steps, info.input_tokens) == ("c", 2, 2)
    _commit(store, "run-1", 2, "c", "d", defer=True, usage=Usage(3, 3))
    _commit(store, "run-1", 3, "d", "e", usage=Usage(4, 4))
    info = store.get_run("run-1")
    assert (info.state, info.steps, info.input_tokens) == ("e", 4, 4)
    assert store.transitions("run-1")[-2:] == [(2, "c", "go", "d"), (3, "d", "go", "e")]


def test_a_turn_writes_the_run_row_once_per_commit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "engine.db")
    try:
        _new_run(store)
        seen: list[str] = []
        store._conn.set_trace_callback(seen.append)
        _commit(store, "run-1", 0, "a", "b", defer=True)
        _commit(store, "run-1", 1, "b", "c", defer=True)
        _commit(store, "run-1", 2, "c", "d")
        store._conn.set_trace_callback(None)
        assert sum(s.startswith("UPDATE runs") for s in seen) == 1
        # step 0 began in an earlier transaction: its end is an update; steps 1 and 2 begin
        # and end in this one: each is one insert of the finished row; step 3 begins
        assert sum(s.startswith("UPDATE steps") for s in seen) == 1
        assert sum(s.startswith("INSERT INTO steps") for s in seen) == 3
        assert store.get_run("run-1").steps == 3
        assert [(s.seq, s.status) for s in store.steps("run-1")] == [
            (0, "succeeded"), (1, "succeeded"), (2, "succeeded"), (3, "running")]
    finally:
        store.close()


def _schema_4_database(path: Path) -> None:
    """A database as a schema-4 engine left it: two runs with rows in every keyed table."""
    import sqlite_utils

    from engine.store.sqlite import MIGRATIONS

    db = sqlite_utils.Database(path)
    for version in (1, 2, 3, 4):
        MIGRATIONS[version](db)
    for run in ("r", "q"):
        db.execute("INSERT INTO runs (run_id, machine, status, state, steps, input_tokens,"
                   " output_tokens, cost_known) VALUES (?, 'm', 'running', 'exec_tool', 3,"
                   " 0, 0, 1)", [run])
        for seq, state, status, trigger, dest, at in OLD_STEPS:
            db.execute("INSERT INTO steps (run_id, seq, state, action, status, trigger, dest,"
                       " ended_at, updates) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [run, seq, state, state, status, trigger, dest, at,
                        f'{{"{run}": {seq}}}' if status == "succeeded" else None])
            if status == "succeeded":
                db.execute("INSERT INTO transitions VALUES (?, ?, ?, ?, ?, ?)",
                           [run, seq, state, trigger, dest, at])
        for seq in (0, 1):
            db.execute("INSERT INTO messages VALUES (?, ?, 0, ?)",
                       [run, seq, f'{{"role": "user", "content": "{run}{seq}"}}'])
            db.execute("INSERT INTO events VALUES (?, ?, 1, 'note', 1.0, ?)",
                       [run, seq, f'{{"n": "{run}{seq}"}}'])
            db.execute("INSERT INTO audit (run_id, seq, step, call_id, tool, decision)"
                       " VALUES (?, ?, 2, ?, 'read_file', 'allow')", [run, seq, f"c{seq}"])
        db.execute("INSERT INTO checkpoints VALUES (?, -1, 'plan', 1.0, ?, 2, '[0,0,0,0]')",
                   [run, f'{{"task": "{run}"}}'])
    db.execute("PRAGMA user_version=4")
    db.conn.commit()
    db.close()


def _read_all(store: SqliteStore, run: str) -> tuple[Any, ...]:
    state = store.load_state(run)
    return (store.transitions(run), [(s.seq, s.status) for s in store.steps(run)],
            [m.content for m in store.messages(run)],
            [(e.seq, e.payload) for e in store.events(run)],
            [(a.call_id, a.decision) for a in store.audit(run)],
            [(c.seq, c.data) for c in store.checkpoints(run)], state.data)


def _expected(run: str) -> tuple[Any, ...]:
    done = [row for row in OLD_STEPS if row[2] == "succeeded"]
    return ([(seq, state, trigger, dest) for seq, state, _, trigger, dest, _ in done],
            [(row[0], row[2]) for row in OLD_STEPS], [f"{run}0", f"{run}1"],
            [(0, {"n": f"{run}0"}), (1, {"n": f"{run}1"})],
            [("c0", "allow"), ("c1", "allow")], [(-1, {"task": run})],
            {"task": run, run: 2})


def test_an_older_database_reads_back_every_row_after_the_upgrade(tmp_path: Path) -> None:
    """Schema 6 keys a run's rows by one integer: every row of every run is where it was."""
    path = tmp_path / "old.db"
    _schema_4_database(path)
    store = SqliteStore(path)
    try:
        for run in ("r", "q"):
            assert _read_all(store, run) == _expected(run)
        _commit(store, "q", 3, "exec_tool", "checkpoint")
        store.append_event("q", 3, "note", {"n": "new"}, 9.0)
        assert store.transitions("q")[-1] == (3, "exec_tool", "go", "checkpoint")
        assert [e.seq for e in store.events("q")] == [0, 1, 2]
        assert _read_all(store, "r") == _expected("r")  # the other run is untouched
    finally:
        store.close()
    conn = sqlite3.connect(path)
    indexed = conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name"
                           " IN ('steps', 'messages', 'events', 'checkpoints', 'audit')"
                           ).fetchall()
    conn.close()
    assert indexed == []  # one b-tree per keyed table


def test_a_read_only_older_database_is_read_through_an_upgraded_copy(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema_4_database(path)
    before = path.read_bytes()
    store = SqliteStore(path, readonly=True)
    try:
        assert _read_all(store, "r") == _expected("r")
    finally:
        store.close()
    assert path.read_bytes() == before


def test_a_new_database_has_no_free_pages(tmp_path: Path) -> None:
    """The migrations that make a new database drop what earlier ones made; the file is
    rewritten without those pages, so a run's first rows grow it as every later row does."""
    SqliteStore(tmp_path / "new.db").close()
    conn = sqlite3.connect(tmp_path / "new.db")
    try:
        assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
    finally:
        conn.close()


def test_transitions_are_the_committed_steps_only(store) -> None:
    """A step that began, or ended failed or interrupted, made no transition."""
    _new_run(store)
    _commit(store, "run-1", 0, "a", "b")
    _commit(store, "run-1", 1, "b", "c")
    store.end_step("run-1", 2, "failed", "boom", 9.0)
    assert store.transitions("run-1") == [(0, "a", "go", "b"), (1, "b", "go", "c")]
    assert store.row_counts("run-1")["transitions"] == 2


def test_corrupted_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a usable Turnstile database"):
        SqliteStore(path)
    assert path.read_bytes() == b"this is not sqlite at all" * 100


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.close()
    with pytest.raises(StoreError, match="not a Turnstile database"):
        SqliteStore(path)


RACER = """
import os, sys, time
from engine.store.sqlite import SqliteStore
open(sys.argv[1] + "." + str(os.getpid()), "w").close()  # imported: ready
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
for path in sys.argv[2:]:
    SqliteStore(path).close()
"""


def test_processes_creating_one_database_at_once_do_not_collide(tmp_path: Path) -> None:
    """Schema creation re-reads ``user_version`` under the write lock: 20 processes racing
    through 10 new databases all open them, and each database gets its schema once."""
    go = tmp_path / "go"
    dbs = [str(tmp_path / f"new{i}.db") for i in range(10)]
    # What is tested is that the schema is made once, not how long a lock is waited for: on a
    # loaded machine twenty racers can wait past the default busy timeout.
    env = {**os.environ, "ENGINE_BUSY_TIMEOUT": "300"}
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(go), *dbs], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(20)]
    deadline = time.monotonic() + 300  # a hang guard: every racer has imported the engine
    while len(list(tmp_path.glob("go.*"))) < 20 and all(p.poll() is None for p in procs):
        assert time.monotonic() < deadline, "the racers did not start"
        time.sleep(0.01)
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, [e for e in errors if e][:1]
    for db in dbs:
        store = SqliteStore(db)
        assert store.list_runs() == []
        store.close()
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.close()


def test_state_at_and_fork_run_copy_the_steps_before_the_fork_point(store) -> None:
    """``state_at(run, N)``: messages of steps before N, data of the last snapshot before N
    plus later updates, usage of that snapshot plus later model calls; ``fork_run`` copies the
    rows of steps 0..N-1 under the new run, begins step N ``interrupted``, and leaves the
    original's rows as they were."""
    _new_run(store)
    for seq, (src, dst) in enumerate((("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"))):
        store.append_event("run-1", seq, "model_call", {"input_tokens": 10, "output_tokens": 2,
                                                        "cost_usd": 0.5}, 2.0 + seq)
        store.record_audit(AuditRecord("run-1", seq, f"c{seq}", "write_file", "allow", "write",
                                       None, "ok", "auto", "d", "p", 2.0 + seq))
        store.record_effect(EffectRecord("run-1", f"c{seq}", seq, "write_file", "1", "done",
                                         False, True, {"path": "x"}, 2.0 + seq))
        usage = Usage(10 * (seq + 1), 2 * (seq + 1), 0, 0.5 * (seq + 1))
        _commit(store, "run-1", seq, src, dst, (Message("assistant", f"m{seq}"),),
                {f"k{seq}": seq}, first=seq + 1, usage=usage)
        if seq == 1:
            store.save_checkpoint(Checkpoint("run-1", 1, dst, 3.0, {"task": "t", "k0": 0,
                                                                    "k1": 1}, 3, usage))
    original = (store.steps("run-1"), store.messages("run-1"), store.events("run-1"),
                store.audit("run-1"), store.effects("run-1"), store.checkpoints("run-1"))

    at = store.state_at("run-1", 3)
    assert (at.state, at.step, at.status) == ("d", 3, "interrupted")
    assert [m.content for m in at.messages] == ["sys", "m0", "m1", "m2"]
    assert at.data == {"task": "t", "k0": 0, "k1": 1, "k2": 2}
    assert at.usage == Usage(30, 6, 0, 1.5)
    assert store.state_at("run-1", 0).usage == Usage()

    info = RunInfo("fork-1", "m", "m.yaml", "hash", "interrupted", at.state, "/ws2", 9.0, 9.0,
                   3, 30, 6, 1.5, {"model": "scripted"}, forked_from=ForkOrigin("run-1", 3))
    store.fork_run(info, "run-1", 3)
    got = store.get_run("fork-1")
    assert got.forked_from == ForkOrigin("run-1", 3)
    assert (got.status, got.state, got.steps, got.cost_usd) == ("interrupted", "d", 3, 1.5)
    assert [(s.seq, s.status) for s in store.steps("fork-1")] == [
        (0, "succeeded"), (1, "succeeded"), (2, "succeeded"), (3, "interrupted")]
    assert store.messages("fork-1") == list(at.messages)
    assert [e.step for e in store.events("fork-1")] == [0, 1, 2]
    assert [a.call_id for a in store.audit("fork-1")] == ["c0", "c1", "c2"]
    assert [e.call_id for e in store.effects("fork-1")] == ["c0", "c1", "c2"]
    assert [c.seq for c in store.checkpoints("fork-1")] == [-1, 1]
    loaded = store.load_state("fork-1")
    assert (loaded.data, loaded.messages, loaded.step) == (at.data, at.messages, 3)
    assert store.state_at("fork-1", 3).usage == at.usage  # a fork of the fork reads the same
    assert store.get_run("run-1").forked_from is None
    assert (store.steps("run-1"), store.messages("run-1"), store.events("run-1"),
            store.audit("run-1"), store.effects("run-1"), store.checkpoints("run-1")) == original
    _commit(store, "fork-1", 3, "d", "z", (Message("assistant", "other"),), first=4)
    assert [m.content for m in store.messages("fork-1")][-1] == "other"
    assert [m.content for m in store.messages("run-1")][-1] == "m3"


def test_both_stores_send_the_shared_reads_and_writes_written_once() -> None:
    """Every read and write SQLite and Postgres do alike is ``SqlStore``'s, over statements
    written once (``engine.store.sql.statements``): neither store redefines one (a copy would
    drift from its twin), and each adds only what its database does its own way."""
    from engine.store.postgres import PostgresStore
    from engine.store.sql.statements import POSTGRES, SQLITE, Statements
    from engine.store.sql.store import SqlStore

    def public(cls: type) -> set[str]:
        return {n for n in vars(cls) if not n.startswith("_") and n not in ("FOREIGN", "SQL")}

    shared = public(SqlStore)
    assert len(shared) >= 30
    own = {"create_run", "fork_run", "check", "row_counts", "close", "for_reading", "location",
           "private_files"}
    for cls in (SqliteStore, PostgresStore):
        assert public(cls) == own, cls.__name__
    sqlite, postgres = Statements(SQLITE), Statements(POSTGRES)
    assert SqliteStore.SQL.step_begin == sqlite.step_begin
    assert PostgresStore.SQL.step_begin == postgres.step_begin
    for name, text in vars(sqlite).items():  # one text, two dialects: no "?" left in Postgres'
        if isinstance(text, str) and "?" in text:
            assert "?" not in vars(postgres)[name] and "%s" in vars(postgres)[name], name
