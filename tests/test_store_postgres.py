"""What only the PostgreSQL store has: its schema versions and migration lock, databases it must
refuse, a read-only database, a server that goes away, threads sharing one store; and the store
URLs every command accepts. The protocol itself is tested on both stores by test_store.py.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from engine.store.base import StepBegin, display_url
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from engine.store.url import parse_store_url, store_target
from engine.vocabulary.errors import (
    StoreAuthError,
    StoreError,
    StoreReadOnlyError,
    StoreSchemaError,
    StoreUnreachableError,
    UsageError,
)
from engine.vocabulary.state import Message, RunInfo, RunState
from tests.conftest import ROOT, engine_env
from tests.pg_cluster import MISSING, PgCluster, find_bin_dir


def _new_run(store: PostgresStore, run_id: str = "run-1") -> None:
    state = RunState(run_id, "m", "a", 0, (Message("system", "sys"),), {"task": "t"})
    info = RunInfo(run_id, "m", "m.yaml", "hash", "running", "a", "/ws", 1.0, 1.0, 0, 0, 0,
                   0.0, {})
    store.create_run(info, state, StepBegin(0, "a", "act", 1.0))


def _sql(url: str, *statements: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows: list[tuple] = []
        for statement in statements:
            cur = conn.execute(statement)  # type: ignore[call-overload]
            rows = cur.fetchall() if cur.description else []
        return rows


def test_schema_version_is_recorded_once_and_a_newer_one_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    PostgresStore(pg_url).close()  # a second open migrates nothing
    assert _sql(pg_url, "SELECT version FROM schema_version ORDER BY version") == [
        (v,) for v in range(1, SCHEMA_VERSION + 1)]  # each migration once
    _sql(pg_url, f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION + 1}, 0)")
    with pytest.raises(StoreSchemaError, match="newer than this Turnstile"):
        PostgresStore(pg_url)
    assert len(_sql(pg_url, "SELECT version FROM schema_version")) == SCHEMA_VERSION + 1


def test_a_schema_1_database_keeps_every_transition(pg_url: str) -> None:
    """Version 2 reads the transitions from the committed steps (as SQLite's schema 5): a
    database written before, with its own transitions table, reads back the same ones."""
    from engine.store.postgres import MIGRATIONS

    _sql(pg_url, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                 " applied_at DOUBLE PRECISION)", *MIGRATIONS[1],
         "INSERT INTO schema_version VALUES (1, 0)",
         "INSERT INTO runs (run_id, machine, status, state) VALUES ('r', 'm', 'running', 'c')",
         "INSERT INTO steps (run_id, seq, state, status, trigger, dest, ended_at) VALUES"
         " ('r', 0, 'a', 'succeeded', 'go', 'b', 2), ('r', 1, 'b', 'succeeded', 'on', 'c', 3),"
         " ('r', 2, 'c', 'running', NULL, NULL, NULL)",
         "INSERT INTO transitions VALUES ('r', 0, 'a', 'go', 'b', 2), ('r', 1, 'b', 'on', 'c', 3)")
    store = PostgresStore(pg_url)
    try:
        assert store.transitions("r") == [(0, "a", "go", "b"), (1, "b", "on", "c")]
    finally:
        store.close()
    assert _sql(pg_url, "SELECT to_regclass('events_run_kind') IS NULL,"
                        " MAX(version) FROM schema_version") == [(True, SCHEMA_VERSION)]


def test_a_database_with_other_tables_is_refused_and_left_untouched(pg_url: str) -> None:
    _sql(pg_url, "CREATE TABLE notes (x int)", "INSERT INTO notes VALUES (7)")
    with pytest.raises(StoreError, match="not a Turnstile database"):
        PostgresStore(pg_url)
    assert _sql(pg_url, "SELECT x FROM notes") == [(7,)]
    assert _sql(pg_url, "SELECT to_regclass('runs') IS NULL, "
                        "to_regclass('schema_version') IS NULL") == [(True, True)]


RACER = """
import os, sys, time
from engine.store.postgres import PostgresStore
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
for url in sys.argv[2:]:
    PostgresStore(url).close()
"""


def test_processes_creating_one_schema_at_once_do_not_collide(pg_cluster: PgCluster,
                                                              tmp_path: Path) -> None:
    """The migration runs under an advisory lock and re-reads the version: 12 processes racing
    through 4 new databases all open them, and each database gets its schema once."""
    go = tmp_path / "go"
    urls = [pg_cluster.create_database() for _ in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(go), *urls], cwd=ROOT,
                              env=engine_env(), stderr=subprocess.PIPE, text=True)
             for _ in range(12)]
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 12, [e for e in errors if e][:1]
    for url in urls:
        assert _sql(url, "SELECT version FROM schema_version ORDER BY version") == [
            (v,) for v in range(1, SCHEMA_VERSION + 1)]


def test_a_read_only_database_still_reads(pg_url: str, tmp_path: Path) -> None:
    store = PostgresStore(pg_url)
    _new_run(store)
    store.close()
    dbname = pg_url.rsplit("/", 1)[1]
    _sql(pg_url, f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
    store = PostgresStore(pg_url)
    with pytest.raises(StoreReadOnlyError, match="read-only"):
        _new_run(store, "run-2")
    store.close()
    reader = PostgresStore.for_reading(pg_url)
    assert [r.run_id for r in reader.list_runs()] == ["run-1"]
    reader.close()
    proc = subprocess.run([sys.executable, "-m", "engine", "runs", "--store", pg_url],
                          cwd=tmp_path, env=engine_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "run-1" in proc.stdout, proc.stderr


def test_a_server_that_goes_away_is_one_clear_error_and_comes_back() -> None:
    with PgCluster() as cluster:
        url = cluster.create_database()
        store = PostgresStore(url)
        _new_run(store)
        cluster.stop_server()
        with pytest.raises(StoreUnreachableError, match="cannot reach the database server"):
            store.get_run("run-1")
        with pytest.raises(StoreUnreachableError):  # still down: the reconnect fails too
            store.list_runs()
        cluster.start_server()
        assert store.get_run("run-1").run_id == "run-1"  # the same store, a new connection
        store.close()


def test_an_unknown_role_is_a_refused_login_and_hides_the_password(pg_cluster: PgCluster
                                                                   ) -> None:
    url = pg_cluster.url().replace("postgres@", "nobody:hunter2@")
    with pytest.raises(StoreAuthError, match="refused the login") as caught:
        PostgresStore(url)
    assert "hunter2" not in str(caught.value)


def test_threads_sharing_one_store(pg_url: str) -> None:
    """The runner's threads (stream events, tool calls) share the store: writes serialise."""
    store = PostgresStore(pg_url)
    _new_run(store)

    def writer(n: int) -> None:
        for i in range(50):
            store.append_event("run-1", 0, "tick", {"thread": n, "i": i}, 1.0)
        store.flush()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = store.events("run-1")
    assert [e.seq for e in events] == list(range(200))
    store.close()


def test_missing_server_binaries_name_the_fix(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError) as caught:
        find_bin_dir(str(tmp_path / "postgresql" / "*" / "bin"))
    assert str(caught.value) == MISSING and "`postgresql`" in MISSING
    (tmp_path / "15" / "bin").mkdir(parents=True)
    for name in ("initdb", "pg_ctl"):
        (tmp_path / "15" / "bin" / name).touch()
    assert find_bin_dir(str(tmp_path / "*" / "bin")) == tmp_path / "15" / "bin"


# -- store URLs ---------------------------------------------------------------------------


def test_store_urls() -> None:
    assert parse_store_url("runs.db").path == Path("runs.db")
    assert parse_store_url("sqlite:///data/runs.db").path == Path("data/runs.db")
    assert parse_store_url("sqlite:////abs/runs.db").path == Path("/abs/runs.db")
    pg = parse_store_url("postgresql://u:pw@db.example:5433/turnstile?sslmode=require")
    assert (pg.kind, pg.path) == ("postgres", None)
    assert pg.display == "postgresql://u@db.example:5433/turnstile"
    assert parse_store_url("postgres://h/d").kind == "postgres"
    assert display_url("postgresql://h:notaport/d") == "postgresql://(unparsable URL)"
    for bad, words in (("mysql://h/d", "unknown kind of store"),
                       ("sqlite://x.db", "three slashes"), ("", "empty store URL")):
        with pytest.raises(UsageError, match=words):
            parse_store_url(bad)


def test_store_choice_first_match_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGINE_STORE_URL", raising=False)
    monkeypatch.delenv("ENGINE_DB", raising=False)
    assert store_target().path == Path(".engine") / "engine.db"
    monkeypatch.setenv("ENGINE_DB", "env.db")
    assert store_target().path == Path("env.db")
    monkeypatch.setenv("ENGINE_STORE_URL", "postgresql://h/d")
    assert store_target().kind == "postgres"
    assert store_target(db="flag.db").path == Path("flag.db")
    assert store_target(store="sqlite:///s.db", db="flag.db").path == Path("s.db")
