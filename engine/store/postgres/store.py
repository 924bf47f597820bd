"""The PostgreSQL store: the same ``Store`` as ``SqliteStore``, on a server many machines share.

The SQL it shares with SQLite is in ``engine.store.sql``; here is what only Postgres does: the
connection (``psycopg``, imported only by this package, with ``errors``, which turns its errors
into ``StoreError``s), the schema, the pipelined transactions, a run's numbered rows addressed
by ``(run_id, seq)``, a run's first row and a fork's copy. Imported only when a
``postgresql://`` store URL is given. The tables and their rows are SQLite's, so everything
that reads runs (``runs``, ``show``, ``trace``, ``audit``, ``approvals``, the console) works
the same on both. Migrations are versioned in a ``schema_version`` table and run in one
transaction under an advisory lock: processes opening a new database at once cannot collide.
A lease is the row of the run, read with ``SELECT ... FOR UPDATE``: the same owner, pid and
expiry rules as SQLite. Commits keep the server's ``synchronous_commit`` (on by default: a
commit is on disk when it returns), which a URL may lower for speed
(``?options=-csynchronous_commit%3Doff``: a server crash may then lose its last fraction of a
second); intent rows of effects that are not idempotent, and ``durability="full"``, always
wait for the server's flush.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from engine.store.base import Checkpoint, Durability, StepBegin, display_url
from engine.store.deferred import Statement, fold
from engine.store.postgres.errors import translate
from engine.store.sql.rows import busy_timeout, dumps
from engine.store.sql.statements import FORK_COPIES, POSTGRES, Statements
from engine.store.sql.store import SqlStore, guarded
from engine.vocabulary.errors import (
    StoreError,
    StoreReadOnlyError,
    StoreSchemaError,
    UnknownRunError,
)
from engine.vocabulary.state import RunInfo, RunState

logger = logging.getLogger(__name__)
logging.getLogger("psycopg").setLevel(logging.ERROR)
"""psycopg's own warnings (``Pipeline [BAD]`` when the server goes away) repeat the fault this
adapter translates into one ``StoreError``: they are not printed before it."""

SCHEMA_VERSION = 4
"""Bump with a new entry in ``MIGRATIONS``; a database with a newer version is refused."""

MIGRATION_LOCK = 0x7475726E  # an advisory lock key of its own ("turn")
"""Held while the schema is created or upgraded."""

CONNECT_TIMEOUT_S = 10

TABLES = ("runs", "steps", "transitions", "messages", "events", "checkpoints", "audit",
          "effects", "spans_sent", "approval_requests")

_SCHEMA_V1 = (
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, machine TEXT NOT NULL, machine_path TEXT, machine_hash TEXT,
        status TEXT NOT NULL, state TEXT NOT NULL, workspace TEXT,
        created_at DOUBLE PRECISION, updated_at DOUBLE PRECISION, steps BIGINT,
        input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT,
        cost_usd DOUBLE PRECISION, cost_known INTEGER, config TEXT, error TEXT,
        lease_host TEXT, lease_pid BIGINT, lease_nonce TEXT, lease_expires DOUBLE PRECISION,
        ord BIGSERIAL)""",
    """CREATE TABLE steps (
        run_id TEXT, seq BIGINT, state TEXT, action TEXT, status TEXT, trigger TEXT, dest TEXT,
        started_at DOUBLE PRECISION, ended_at DOUBLE PRECISION, note TEXT, plan TEXT,
        updates TEXT, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE messages (
        run_id TEXT, seq BIGINT, step BIGINT, body TEXT, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE transitions (
        run_id TEXT, seq BIGINT, src TEXT, trigger TEXT, dest TEXT, at DOUBLE PRECISION,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE events (
        run_id TEXT, seq BIGINT, step BIGINT, kind TEXT, at DOUBLE PRECISION, payload TEXT,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE checkpoints (
        run_id TEXT, seq BIGINT, state TEXT, at DOUBLE PRECISION, data TEXT,
        message_count BIGINT, usage TEXT, PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE audit (
        run_id TEXT, seq BIGINT, step BIGINT, call_id TEXT, tool TEXT, decision TEXT,
        risk TEXT, rule TEXT, reason TEXT, decided_by TEXT, args_digest TEXT,
        preview_digest TEXT, server TEXT, trust TEXT, at DOUBLE PRECISION,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE effects (
        run_id TEXT, call_id TEXT, step BIGINT, tool TEXT, version TEXT, status TEXT,
        idempotent INTEGER, side_effects INTEGER, args TEXT, result TEXT, file TEXT,
        at DOUBLE PRECISION, ord BIGSERIAL, PRIMARY KEY (run_id, call_id))""",
    """CREATE TABLE spans_sent (
        run_id TEXT, span_id TEXT, at DOUBLE PRECISION, PRIMARY KEY (run_id, span_id))""",
    """CREATE TABLE approval_requests (
        run_id TEXT, call_id TEXT, step BIGINT, tool TEXT, args TEXT, args_hash TEXT,
        policy_version TEXT, preview TEXT, risk TEXT, rule TEXT, reason TEXT,
        capability TEXT, requested_at DOUBLE PRECISION, status TEXT NOT NULL, channel TEXT,
        decided_by TEXT, decided_at DOUBLE PRECISION, note TEXT, always TEXT,
        ord BIGSERIAL, PRIMARY KEY (run_id, call_id))""",
    "CREATE INDEX events_run_kind ON events (run_id, kind)",
    "CREATE INDEX runs_created ON runs (created_at)",
    "CREATE INDEX effects_run_step ON effects (run_id, step)",
    "CREATE INDEX approvals_status ON approval_requests (status)",
)

_SCHEMA_V2 = (
    # as in SQLite (``engine.store.sqlite.schema._schema_v5``): a step's row records its transition
    # when it commits, and a run's events are read through their primary key
    "DROP INDEX IF EXISTS events_run_kind",
    "DROP TABLE IF EXISTS transitions",
    "CREATE VIEW transitions AS SELECT run_id, seq, state AS src, trigger, dest, ended_at AS at"
    " FROM steps WHERE status = 'succeeded'",
)

_SCHEMA_PARENT_LINK = (
    # as in SQLite (``engine.store.sqlite.schema._schema_parent_link``): a child names its parent
    "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
    "ALTER TABLE runs ADD COLUMN parent_step BIGINT",
    "CREATE INDEX runs_parent ON runs (parent_run_id, parent_step)",
)

_SCHEMA_V4 = (
    # as in SQLite (``engine.store.sqlite.schema._schema_v8``): where a fork came from
    "ALTER TABLE runs ADD COLUMN forked_from TEXT",
    "ALTER TABLE runs ADD COLUMN fork_step BIGINT",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_PARENT_LINK,
                                          4: _SCHEMA_V4}

SQL = Statements(POSTGRES)
"""The shared statements in Postgres' dialect."""
NEW_RUN = (
    "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
    " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
    " cached_tokens, cost_usd, cost_known, config, error, parent_run_id,"
    " parent_step) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,0,0,0,0,0,1,%s,NULL,%s,%s)")
FORKED_RUN = (
    "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
    " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
    " cached_tokens, cost_usd, cost_known, config, error, forked_from, fork_step)"
    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,0,%s,%s,%s,NULL,%s,%s)")


class PostgresStore(SqlStore):
    """A ``Store`` in one PostgreSQL database (its current schema, normally ``public``)."""

    FOREIGN = (psycopg.Error,)
    SQL = SQL

    def __init__(self, url: str, *, durability: Durability = "normal", readonly: bool = False,
                 busy_timeout_s: float | None = None) -> None:
        self.url = url
        self.where = display_url(url)
        """The database as messages name it (no password)."""
        self.durability = durability
        self.readonly = readonly
        self.busy_timeout_s = busy_timeout(busy_timeout_s)
        self._serial = threading.RLock()
        """One call at a time: the runner's threads share the connection."""
        self._pending: list[tuple[str, tuple[Any, ...]]] = []
        self._pending_since = 0.0
        self._event_seq: dict[str, int] = {}
        self._audit_seq: dict[str, int] = {}
        self._conn = self._connect()
        try:
            self._migrate()
        except psycopg.Error as exc:
            self._conn.close()
            raise self._fault(exc) from exc
        except StoreError:
            self._conn.close()
            raise

    @property
    def location(self) -> str:
        """The database as hints name it (``where``: no password)."""
        return self.where

    def private_files(self) -> list[str]:
        """Files a sandboxed command must not see: none (the rows live on the server)."""
        return []

    @classmethod
    def for_reading(cls, url: str, **kwargs: Any) -> PostgresStore:
        """Open as usual, or read-only where the role or server cannot write (a standby, a
        read-only role): ``runs``, ``show``, ``trace`` and ``audit`` still work."""
        try:
            return cls(url, **kwargs)
        except StoreReadOnlyError:
            return cls(url, readonly=True, **kwargs)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                application_name="turnstile", keepalives=1, keepalives_idle=10,
                keepalives_interval=5, keepalives_count=3)
        except psycopg.Error as exc:
            raise self._fault(exc) from exc
        try:
            self._setup(conn)
        except psycopg.Error as exc:
            conn.close()
            raise self._fault(exc) from exc
        return conn

    def _ready(self) -> None:
        """A connection the server dropped (a restart, a failover) failed the call that met
        it; the next call opens a new one, so a long-lived process need not be restarted."""
        if self._conn.broken:
            self._conn.close()
            self._conn = self._connect()

    def _setup(self, c: psycopg.Connection[Any]) -> None:
        c.execute(f"SET lock_timeout = {int(self.busy_timeout_s * 1000)}")
        if self.durability == "full":
            c.execute("SET synchronous_commit = on")
        if self.readonly:
            c.execute("SET default_transaction_read_only = on")

    def _fault(self, exc: psycopg.Error, run_id: str | None = None) -> StoreError:
        return translate(exc, self.where, lock_timeout_s=self.busy_timeout_s)

    # -- schema -------------------------------------------------------------------------

    def _version(self) -> int:
        row = self._conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
        if not (row and row[0]):
            return 0
        got = self._conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(got[0] or 0) if got else 0

    def _tables(self) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema()")}

    def _migrate(self) -> None:
        """Create or upgrade the schema; the current version costs two reads and no lock."""
        version = self._version()
        if version == SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        if self.readonly:
            if "runs" not in self._tables():
                raise StoreError(f"{self.where}: not a Turnstile database (no runs table)")
            return
        # One creator at a time, and the next finds the work done. The lock is taken before
        # the transaction begins: a transaction that started before another one's commit may
        # still see the catalog as it was (no tables) after waiting for the lock.
        self._conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            self._migrate_locked()
        finally:
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

    def _migrate_locked(self) -> None:
        with self._conn.transaction():
            version = self._version()
            self._refuse_newer(version)
            tables = self._tables()
            if version == 0 and tables:
                raise StoreError(f"{self.where}: not a Turnstile database (it has other "
                                 "tables); give an empty database")
            self._conn.execute("CREATE TABLE IF NOT EXISTS schema_version ("
                               "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION)")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target]:
                    self._conn.execute(statement)
                self._conn.execute("INSERT INTO schema_version (version, applied_at)"
                                   " VALUES (%s, %s)", (target, time.time()))

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.where}: database schema version {version} is newer than this Turnstile "
                f"({SCHEMA_VERSION}); upgrade Turnstile or use another --store")

    @guarded
    def check(self) -> list[str]:
        """Read every row of every table (and its out-of-line values): no problems (an empty
        list) when all of it reads and the schema is this version's."""
        problems: list[str] = []
        version = self._version()
        if version != SCHEMA_VERSION:
            problems.append(f"schema version {version}, expected {SCHEMA_VERSION}")
        for table in TABLES:
            try:
                self._conn.execute(f"SELECT COUNT(*), SUM(LENGTH(t::text)) FROM {table} t")
            except psycopg.Error as exc:
                problems.append(f"{table}: {str(exc).strip().splitlines()[0]}")
        return problems

    # -- transactions -------------------------------------------------------------------

    def _write(self, statements: list[Statement], *, durable: bool = False) -> None:
        with self._tx(durable=durable, then=statements):
            pass

    @contextmanager
    def _tx(self, *, durable: bool = False,
            then: Sequence[Statement] = ()) -> Iterator[psycopg.Cursor[Any]]:
        """One write transaction, carrying the buffered rows and then ``then``, folded
        (``engine.store.deferred``); on any failure nothing of it is kept and the buffered
        rows wait for the next one."""
        pending, self._pending = self._pending, []
        try:  # pipelined: statements go out without waiting for each one's answer
            with self._conn.pipeline(), self._conn.transaction(), self._conn.cursor() as cur:
                if durable:
                    cur.execute("SET LOCAL synchronous_commit = on")
                for sql, params in fold([*pending, *then], self.SQL.folds):
                    cur.execute(sql, params)
                yield cur
        except BaseException:
            self._pending = pending + self._pending
            raise

    def close(self) -> None:
        try:
            if self._pending and not self._conn.closed:
                self.flush()
        finally:
            self._conn.close()

    @guarded
    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None:
        rows: list[Statement] = [(NEW_RUN, (
            info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
            info.state, info.workspace, info.created_at, info.updated_at,
            dumps(dict(info.config)), info.parent_run_id, info.parent_step))]
        rows.append(self._checkpoint_row(Checkpoint(info.run_id, -1, state.state,
                                                    info.created_at, state.data,
                                                    len(state.messages), state.usage)))
        self._message_rows(rows, info.run_id, -1, 0, state.messages)
        rows.append(self._begin_row(info.run_id, first))
        self._write(rows)

    # the addresses of ``engine.store.sql.statements.POSTGRES``: (run_id, seq)

    def _new(self, run_id: str, seq: int) -> tuple[()]:
        return ()

    def _one(self, run_id: str, seq: int) -> tuple[str, int]:
        return run_id, seq

    def _all(self, run_id: str) -> tuple[str]:
        return (run_id,)

    def _after(self, run_id: str, seq: int) -> tuple[str, int]:
        return run_id, seq

    _before = _after

    def _between(self, run_id: str, after: int, before: int) -> tuple[str, int, int]:
        return run_id, after, before

    @guarded
    def fork_run(self, info: RunInfo, source: str, step: int) -> None:
        """``Store.fork_run``: ``source``'s rows of the steps before ``step``, copied."""
        with self._tx() as c:
            if c.execute("SELECT 1 FROM runs WHERE run_id = %s", (source,)).fetchone() is None:
                raise UnknownRunError(f"no run {source!r} in {self.where}")
            cost = info.cost_usd
            c.execute(FORKED_RUN, (
                info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                info.state, info.workspace, info.created_at, info.updated_at, info.steps,
                info.input_tokens, info.output_tokens, cost or 0.0, int(cost is not None),
                dumps(dict(info.config)), source, step))
            for table, columns, where in FORK_COPIES:
                decided = " AND status != 'pending'" if table == "approval_requests" else ""
                order = " ORDER BY ord" if table in ("effects", "approval_requests") else ""
                c.execute(f"INSERT INTO {table} (run_id, {columns}) SELECT %s, {columns}"
                          f" FROM {table} WHERE run_id = %s AND {where} < %s{decided}{order}",
                          (info.run_id, source, step))
            c.execute("INSERT INTO steps (run_id, seq, state, action, status, started_at, note,"
                      " plan) SELECT %s, seq, state, action, 'interrupted', %s, %s, plan"
                      " FROM steps WHERE run_id = %s AND seq = %s",
                      (info.run_id, info.created_at, f"forked from run {source} at step {step}",
                       source, step))

    @guarded
    def row_counts(self, run_id: str) -> dict[str, int]:
        """Rows per table for one run (used by benchmarks and the closing numbers)."""
        self.flush()
        counts: dict[str, int] = {}
        for table in ("steps", "messages", "transitions", "events", "checkpoints", "audit",
                      "effects"):
            row = self._conn.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = %s",
                                     (run_id,)).fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts
