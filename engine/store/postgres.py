"""The PostgreSQL store: the same ``Store`` as ``SqliteStore``, on a server many machines share.

The only module that imports ``psycopg`` (with ``postgres_errors``, which turns its errors into
``StoreError``s: every public method passes through ``_guarded``); imported only when a
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

import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg

from engine.store.base import (
    ApprovalDecision,
    ApprovalRequest,
    AuditRecord,
    Checkpoint,
    Durability,
    EffectRecord,
    Event,
    LeaseOwner,
    StepBegin,
    StepCommit,
    display_url,
    merged_config,
    with_calls,
)
from engine.store.deferred import (
    Folds,
    Recorder,
    Statement,
    fold,
    run_row_params,
    run_row_sql,
)
from engine.store.postgres_errors import translate
from engine.store.readback import DECODE_ERRORS, damaged_row
from engine.store.sqlite import REOPEN_SET as REOPEN
from engine.store.sqlite import (
    _approval_row,
    _dumps,
    busy_timeout,
    lease_alive,
    shown_running,
)
from engine.vocabulary.errors import (
    DecisionRefusedError,
    LeaseHeldError,
    StoreError,
    StoreReadOnlyError,
    StoreSchemaError,
    UnknownRunError,
    UsageError,
)
from engine.vocabulary.hints import command
from engine.vocabulary.state import (
    ForkOrigin,
    Message,
    RunInfo,
    RunState,
    RunStatus,
    StepRecord,
    Usage,
)

logger = logging.getLogger(__name__)
logging.getLogger("psycopg").setLevel(logging.ERROR)
"""psycopg's own warnings (``Pipeline [BAD]`` when the server goes away) repeat the fault this
adapter translates into one ``StoreError``: they are not printed before it."""

SCHEMA_VERSION = 4
"""Bump with a new entry in ``MIGRATIONS``; a database with a newer version is refused."""

MIGRATION_LOCK = 0x7475726E  # an advisory lock key of its own ("turn")
"""Held while the schema is created or upgraded."""

CONNECT_TIMEOUT_S = 10

RUN_COLUMNS = (
    "run_id", "machine", "machine_path", "machine_hash", "status", "state", "workspace",
    "created_at", "updated_at", "steps", "input_tokens", "output_tokens", "cached_tokens",
    "cost_usd", "cost_known", "config", "error", "lease_host", "lease_pid", "lease_nonce",
    "lease_expires", "parent_run_id", "parent_step", "forked_from", "fork_step")
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
    # as in SQLite (``engine.store.sqlite._schema_v5``): a step's row records its transition
    # when it commits, and a run's events are read through their primary key
    "DROP INDEX IF EXISTS events_run_kind",
    "DROP TABLE IF EXISTS transitions",
    "CREATE VIEW transitions AS SELECT run_id, seq, state AS src, trigger, dest, ended_at AS at"
    " FROM steps WHERE status = 'succeeded'",
)

_SCHEMA_PARENT_LINK = (
    # as in SQLite (``engine.store.sqlite._schema_parent_link``): a child run names its parent
    "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
    "ALTER TABLE runs ADD COLUMN parent_step BIGINT",
    "CREATE INDEX runs_parent ON runs (parent_run_id, parent_step)",
)

_SCHEMA_V4 = (
    # as in SQLite (``engine.store.sqlite._schema_v8``): where a fork came from
    "ALTER TABLE runs ADD COLUMN forked_from TEXT",
    "ALTER TABLE runs ADD COLUMN fork_step BIGINT",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_PARENT_LINK,
                                          4: _SCHEMA_V4}

FORK_COPIES = (
    ("steps", "seq, state, action, status, trigger, dest, started_at, ended_at, note, plan,"
     " updates", "seq"),
    ("checkpoints", "seq, state, at, data, message_count, usage", "seq"),
    ("messages", "seq, step, body", "step"),
    ("events", "seq, step, kind, at, payload", "step"),
    ("audit", "seq, step, call_id, tool, decision, risk, rule, reason, decided_by, args_digest,"
     " preview_digest, server, trust, at", "step"),
    ("effects", "call_id, step, tool, version, status, idempotent, side_effects, args, result,"
     " file, at", "step"),
    ("approval_requests", "call_id, step, tool, args, args_hash, policy_version, preview, risk,"
     " rule, reason, capability, requested_at, status, channel, decided_by, decided_at, note,"
     " always", "step"),
)
"""What a fork copies of a run's rows: (table, columns, the column below the fork's step), as
``engine.store.sqlite.FORK_COPIES``; of the approval requests, the decided ones only."""

EVENT_FLUSH_ROWS = 256
EVENT_FLUSH_S = 1.0
"""Buffered event and audit rows are written with the next transaction, or when this many are
waiting, or when the oldest has waited this long (as in SQLite)."""

RUN_ROW = run_row_sql("%s")
STEP_BEGIN = (
    "INSERT INTO steps (run_id, seq, state, action, status, started_at, plan)"
    " VALUES (%s,%s,%s,%s,'running',%s,%s) ON CONFLICT (run_id, seq) DO UPDATE SET"
    " status = 'running', started_at = excluded.started_at, plan = excluded.plan"
    " WHERE steps.status != 'succeeded'")
STEP_END = ("UPDATE steps SET status = 'succeeded', trigger = %s, dest = %s, ended_at = %s,"
            " note = %s, updates = %s WHERE run_id = %s AND seq = %s")
STEP_WHOLE = (
    "INSERT INTO steps (run_id, seq, state, action, status, started_at, plan, trigger, dest,"
    " ended_at, note, updates) VALUES (%s,%s,%s,%s,'succeeded',%s,%s,%s,%s,%s,%s,%s)"
    " ON CONFLICT (run_id, seq) DO UPDATE SET status = 'succeeded',"
    " started_at = CASE WHEN steps.status = 'succeeded' THEN steps.started_at"
    " ELSE excluded.started_at END,"
    " plan = CASE WHEN steps.status = 'succeeded' THEN steps.plan ELSE excluded.plan END,"
    " trigger = excluded.trigger, dest = excluded.dest, ended_at = excluded.ended_at,"
    " note = excluded.note, updates = excluded.updates")
"""A step begun and ended in one transaction, as one statement (``engine.store.deferred``)."""
EFFECT_ROW = (
    "INSERT INTO effects (run_id, call_id, step, tool, version, status, idempotent,"
    " side_effects, args, result, file, at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
    " ON CONFLICT (run_id, call_id) DO UPDATE SET status = excluded.status,"
    " result = COALESCE(excluded.result, effects.result),"
    " file = COALESCE(excluded.file, effects.file), at = excluded.at")
FOLDS = Folds(STEP_BEGIN, STEP_END, STEP_WHOLE, EFFECT_ROW, RUN_ROW, key_width=2)



_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[Concatenate[PostgresStore, _P], _R]
             ) -> Callable[Concatenate[PostgresStore, _P], _R]:
    """Every public method: one at a time per store (the runner's threads share it), and a
    ``psycopg`` error leaves as the matching ``StoreError``."""

    def guarded(self: PostgresStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            try:
                self._reconnect_if_lost()
                return method(self, *args, **kwargs)
            except psycopg.Error as exc:
                raise self._fault(exc) from exc
            except DECODE_ERRORS as exc:  # a stored value the decoders cannot read
                first = args[0] if args else None
                raise damaged_row(self.where, first if isinstance(first, str) else None,
                                  exc) from exc

    functools.update_wrapper(guarded, method)
    return guarded


def _lease_alive(r: Mapping[str, Any]) -> bool:
    """The same rule as SQLite's (``engine.store.sqlite.lease_alive``)."""
    return lease_alive(r)


class PostgresStore:
    """A ``Store`` in one PostgreSQL database (its current schema, normally ``public``)."""

    def __init__(self, url: str, *, durability: Durability = "normal", readonly: bool = False,
                 busy_timeout_s: float | None = None) -> None:
        self.url = url
        self.where = display_url(url)
        """The database as messages name it (no password)."""
        self.durability = durability
        self.readonly = readonly
        self.busy_timeout_s = busy_timeout(busy_timeout_s)
        self._lock = threading.RLock()
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

    def _reconnect_if_lost(self) -> None:
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

    def _fault(self, exc: psycopg.Error) -> StoreError:
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

    @_guarded
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
                for sql, params in fold([*pending, *then], FOLDS):
                    cur.execute(sql, params)
                yield cur
        except BaseException:
            self._pending = pending + self._pending
            raise

    @_guarded
    def flush(self) -> None:
        """Write buffered event and audit rows now."""
        if self._pending:
            with self._tx():
                pass

    def _buffer(self, sql: str, params: tuple[Any, ...]) -> None:
        now = time.monotonic()
        if not self._pending:
            self._pending_since = now
        self._pending.append((sql, params))
        if len(self._pending) >= EVENT_FLUSH_ROWS or now - self._pending_since > EVENT_FLUSH_S:
            self.flush()

    def close(self) -> None:
        try:
            if self._pending and not self._conn.closed:
                self.flush()
        finally:
            self._conn.close()

    # -- runs ---------------------------------------------------------------------------

    @_guarded
    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
                " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
                " cached_tokens, cost_usd, cost_known, config, error, parent_run_id,"
                " parent_step) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,0,0,0,0,0,1,%s,NULL,%s,%s)",
                (info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                 info.state, info.workspace, info.created_at, info.updated_at,
                 _dumps(dict(info.config)), info.parent_run_id, info.parent_step))
            self._insert_checkpoint(c, Checkpoint(info.run_id, -1, state.state, info.created_at,
                                                  state.data, len(state.messages), state.usage))
            self._insert_messages(c, info.run_id, -1, 0, state.messages)
            self._insert_begin(c, info.run_id, first)

    @_guarded
    def get_run(self, run_id: str) -> RunInfo:
        row = self._conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE run_id = %s",
                                 (run_id,)).fetchone()
        if row is None:
            row = self._by_prefix(run_id)
        return self._run_info(row)

    def _by_prefix(self, prefix: str) -> tuple[Any, ...]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._conn.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE run_id LIKE %s ESCAPE '\\'"
            " ORDER BY run_id LIMIT 2", (pattern,)).fetchall() if len(prefix) >= 4 else []
        if len(rows) == 1:
            return tuple(rows[0])
        if len(rows) > 1:
            raise UnknownRunError(f"run id prefix {prefix!r} is ambiguous; give more characters")
        raise UnknownRunError(
            f"no run {prefix!r} in {self.where} (list runs with: "
            f"{command('runs', store=self.location)})")

    @_guarded
    def run_ids(self) -> list[str]:
        """Every run's id, oldest first, without decoding any row."""
        return [r[0] for r in self._conn.execute(
            "SELECT run_id FROM runs ORDER BY created_at, ord").fetchall()]

    @_guarded
    def list_runs(self) -> list[RunInfo]:
        rows = self._conn.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY created_at, ord").fetchall()
        return [self._run_info(r) for r in rows]

    @_guarded
    def child_runs(self, run_id: str) -> list[RunInfo]:
        rows = self._conn.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs WHERE parent_run_id = %s"
            " ORDER BY created_at, ord", (run_id,)).fetchall()
        return [self._run_info(r) for r in rows]

    @staticmethod
    def _run_info(row: Sequence[Any]) -> RunInfo:
        r = dict(zip(RUN_COLUMNS, row, strict=True))
        status: RunStatus = r["status"]
        if status == "running" and not shown_running(r):
            status = "crashed"
        return RunInfo(
            run_id=r["run_id"], machine=r["machine"], machine_path=r["machine_path"] or "",
            machine_hash=r["machine_hash"] or "", status=status, state=r["state"],
            workspace=r["workspace"] or "", created_at=r["created_at"],
            updated_at=r["updated_at"], steps=r["steps"], input_tokens=r["input_tokens"],
            output_tokens=r["output_tokens"],
            cost_usd=r["cost_usd"] if r["cost_known"] else None,
            config=json.loads(r["config"] or "{}"), error=r["error"],
            parent_run_id=r["parent_run_id"], parent_step=r["parent_step"],
            forked_from=(ForkOrigin(r["forked_from"], r["fork_step"])
                         if r["forked_from"] else None))

    @_guarded
    def set_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET status = %s, error = %s, updated_at = %s"
                      " WHERE run_id = %s", (status, error, time.time(), run_id))

    @_guarded
    def update_config(self, run_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        with self._tx() as c:
            row = c.execute("SELECT config FROM runs WHERE run_id = %s FOR UPDATE",
                            (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.where}")
            config = merged_config(json.loads(row[0] or "{}"), changes)
            c.execute("UPDATE runs SET config = %s, updated_at = %s WHERE run_id = %s",
                      (_dumps(config), time.time(), run_id))
        return config

    # -- leases -------------------------------------------------------------------------

    @_guarded
    def acquire_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        """The run's row, locked until commit, decides: one of two racing drivers wins."""
        with self._tx() as c:
            row = c.execute(
                "SELECT lease_host, lease_pid, lease_nonce, lease_expires FROM runs"
                " WHERE run_id = %s FOR UPDATE", (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.where}")
            host, pid, nonce, expires = row
            held = {"lease_host": host, "lease_pid": pid, "lease_nonce": nonce,
                    "lease_expires": expires}
            if nonce and nonce != owner.nonce and _lease_alive(held):
                raise LeaseHeldError(
                    f"run {run_id} is being driven by pid {pid} on {host}; wait for it to "
                    "finish or stop that process")
            c.execute(
                "UPDATE runs SET lease_host = %s, lease_pid = %s, lease_nonce = %s,"
                " lease_expires = %s, status = 'running' WHERE run_id = %s",
                (owner.host, owner.pid, owner.nonce, time.time() + ttl_s, run_id))

    @_guarded
    def renew_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET lease_expires = %s WHERE run_id = %s"
                      " AND lease_nonce = %s", (time.time() + ttl_s, run_id, owner.nonce))

    @_guarded
    def release_lease(self, run_id: str, owner: LeaseOwner) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET lease_host = NULL, lease_pid = NULL, lease_nonce = NULL,"
                " lease_expires = NULL WHERE run_id = %s AND lease_nonce = %s",
                (run_id, owner.nonce))

    # -- steps --------------------------------------------------------------------------

    @_guarded
    def begin_step(self, run_id: str, begin: StepBegin) -> None:
        with self._tx() as c:
            self._insert_begin(c, run_id, begin)

    @staticmethod
    def _insert_begin(c: Any, run_id: str, b: StepBegin) -> None:
        c.execute(STEP_BEGIN, (run_id, b.seq, b.state, b.action, b.started_at,
                               _dumps(dict(b.plan)) if b.plan is not None else None))

    @_guarded
    def commit_step(self, run_id: str, commit: StepCommit, *, defer: bool = False) -> None:
        """One transaction; ``defer``: ride in the next one instead (``engine.store.deferred``:
        only for steps that are safe to run again after a crash)."""
        if defer and not self._pending:
            self._pending_since = time.monotonic()
        rows: list[Statement] = self._pending if defer else []
        c = Recorder(rows)
        c.execute(STEP_END, (commit.trigger, commit.dest, commit.ended_at, commit.note,
                             _dumps(dict(commit.updates)) if commit.updates else None, run_id,
                             commit.seq))
        self._insert_messages(c, run_id, commit.seq, commit.first_message_seq,
                              commit.messages)
        c.execute(RUN_ROW, run_row_params(run_id, commit))
        if commit.next_step is not None:
            self._insert_begin(c, run_id, commit.next_step)
        if commit.snapshot is not None:
            self._insert_checkpoint(c, commit.snapshot)
        if not defer:
            with self._tx(then=rows):
                pass

    @_guarded
    def end_step(self, run_id: str, seq: int, status: str, note: str, at: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE steps SET status = %s, note = %s, ended_at = %s WHERE run_id = %s"
                      " AND seq = %s AND status = 'running'", (status, note, at, run_id, seq))

    @_guarded
    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._conn.execute(
            "SELECT run_id, seq, state, action, status, trigger, dest, started_at, ended_at,"
            " note, plan FROM steps WHERE run_id = %s ORDER BY seq", (run_id,)).fetchall()
        return [StepRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or "",
                           json.loads(r[10]) if r[10] else None) for r in rows]

    @_guarded
    def transitions(self, run_id: str) -> list[tuple[int, str, str, str]]:
        return [tuple(r) for r in self._conn.execute(
            "SELECT seq, src, trigger, dest FROM transitions WHERE run_id = %s ORDER BY seq",
            (run_id,))]

    # -- messages -----------------------------------------------------------------------

    @staticmethod
    def _insert_messages(c: Any, run_id: str, step: int, first: int,
                         messages: Sequence[Message]) -> None:
        if messages:
            c.executemany(
                "INSERT INTO messages (run_id, seq, step, body) VALUES (%s,%s,%s,%s)"
                " ON CONFLICT DO NOTHING",
                [(run_id, first + i, step, _dumps(m.to_dict())) for i, m in enumerate(messages)])

    @_guarded
    def messages(self, run_id: str) -> list[Message]:
        return [Message.from_dict(json.loads(b)) for (b,) in self._conn.execute(
            "SELECT body FROM messages WHERE run_id = %s ORDER BY seq", (run_id,))]

    # -- events -------------------------------------------------------------------------

    @_guarded
    def append_event(self, run_id: str, step: int, kind: str, payload: Mapping[str, Any],
                     at: float) -> int:
        seq = self._next_seq(self._event_seq, "events", run_id)
        self._buffer(
            "INSERT INTO events (run_id, seq, step, kind, at, payload)"
            " VALUES (%s,%s,%s,%s,%s,%s)", (run_id, seq, step, kind, at, _dumps(dict(payload))))
        return seq

    def _next_seq(self, cache: dict[str, int], table: str, run_id: str) -> int:
        seq = cache.get(run_id)
        if seq is None:
            row = self._conn.execute(
                f"SELECT COALESCE(MAX(seq), -1) FROM {table} WHERE run_id = %s", (run_id,)
            ).fetchone()
            seq = int(row[0]) if row else -1
        cache[run_id] = seq + 1
        return seq + 1

    @_guarded
    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        self.flush()
        sql = "SELECT run_id, seq, step, kind, at, payload FROM events WHERE run_id = %s"
        params: list[Any] = [run_id]
        if kinds:
            sql += " AND kind = ANY(%s)"
            params.append(list(kinds))
        rows = self._conn.execute(sql + " ORDER BY seq", params).fetchall()
        return [Event(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    # -- checkpoints and resume ---------------------------------------------------------

    @_guarded
    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._tx() as c:
            self._insert_checkpoint(c, checkpoint)

    @staticmethod
    def _insert_checkpoint(c: Any, cp: Checkpoint) -> None:
        u = cp.usage
        c.execute(
            "INSERT INTO checkpoints (run_id, seq, state, at, data, message_count, usage)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (run_id, seq) DO UPDATE SET"
            " state = excluded.state, at = excluded.at, data = excluded.data,"
            " message_count = excluded.message_count, usage = excluded.usage",
            (cp.run_id, cp.seq, cp.state, cp.at, _dumps(dict(cp.data)), cp.message_count,
             _dumps([u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_usd])))

    @_guarded
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self._conn.execute(
            "SELECT run_id, seq, state, at, data, message_count, usage FROM checkpoints"
            " WHERE run_id = %s ORDER BY seq", (run_id,)).fetchall()
        return [Checkpoint(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5],
                           Usage(*json.loads(r[6]))) for r in rows]

    @_guarded
    def load_state(self, run_id: str) -> RunState:
        """The run as of its last committed step: last snapshot + later step deltas."""
        info = self.get_run(run_id)
        run_id = info.run_id
        row = self._conn.execute(
            "SELECT seq, data FROM checkpoints WHERE run_id = %s ORDER BY seq DESC LIMIT 1",
            (run_id,)).fetchone()
        snap_seq, data = (row[0], json.loads(row[1])) if row else (-1, {})
        for (updates,) in self._conn.execute(
                "SELECT updates FROM steps WHERE run_id = %s AND seq > %s"
                " AND status = 'succeeded' AND updates IS NOT NULL ORDER BY seq",
                (run_id, snap_seq)).fetchall():
            data.update(json.loads(updates))
        usage = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
        return RunState(run_id, info.machine, info.state, info.steps,
                        tuple(self.messages(run_id)), data, usage, info.status)

    # -- forks --------------------------------------------------------------------------

    @_guarded
    def state_at(self, run_id: str, step: int) -> RunState:
        """The run as it stood when step ``step`` began (``Store.state_at``)."""
        info = self.get_run(run_id)
        run_id = info.run_id
        snapshot = self._conn.execute(
            "SELECT seq, data, usage FROM checkpoints WHERE run_id = %s AND seq < %s"
            " ORDER BY seq DESC LIMIT 1", (run_id, step)).fetchone()
        if snapshot is None:
            raise UsageError(f"run {run_id} has no step {step}")
        snap, data, usage = snapshot[0], json.loads(snapshot[1]), snapshot[2]
        for (updates,) in self._conn.execute(
                "SELECT updates FROM steps WHERE run_id = %s AND seq > %s AND seq < %s"
                " AND status = 'succeeded' AND updates IS NOT NULL ORDER BY seq",
                (run_id, snap, step)).fetchall():
            data.update(json.loads(updates))
        calls = self._conn.execute(
            "SELECT payload FROM events WHERE run_id = %s AND kind = 'model_call' AND step > %s"
            " AND step < %s ORDER BY seq", (run_id, snap, step)).fetchall()
        total = with_calls(Usage(*json.loads(usage)), (json.loads(p) for (p,) in calls))
        messages = tuple(Message.from_dict(json.loads(b)) for (b,) in self._conn.execute(
            "SELECT body FROM messages WHERE run_id = %s AND step < %s ORDER BY seq",
            (run_id, step)))
        row = self._conn.execute(
            "SELECT state FROM steps WHERE run_id = %s AND seq = %s", (run_id, step)).fetchone()
        if row is None and step > 0:
            row = self._conn.execute(
                "SELECT dest FROM steps WHERE run_id = %s AND seq = %s AND status = 'succeeded'",
                (run_id, step - 1)).fetchone()
        if row is None or row[0] is None:
            raise UsageError(f"run {run_id} has no step {step}")
        return RunState(run_id, info.machine, row[0], step, messages, data, total,
                        "interrupted")

    @_guarded
    def fork_run(self, info: RunInfo, source: str, step: int) -> None:
        """``Store.fork_run``: ``source``'s rows of the steps before ``step``, copied."""
        with self._tx() as c:
            if c.execute("SELECT 1 FROM runs WHERE run_id = %s", (source,)).fetchone() is None:
                raise UnknownRunError(f"no run {source!r} in {self.where}")
            cost = info.cost_usd
            c.execute(
                "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
                " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
                " cached_tokens, cost_usd, cost_known, config, error, forked_from, fork_step)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,0,%s,%s,%s,NULL,%s,%s)",
                (info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                 info.state, info.workspace, info.created_at, info.updated_at, info.steps,
                 info.input_tokens, info.output_tokens, cost or 0.0, int(cost is not None),
                 _dumps(dict(info.config)), source, step))
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

    # -- audit and effects --------------------------------------------------------------

    @_guarded
    def record_audit(self, record: AuditRecord) -> None:
        seq = self._next_seq(self._audit_seq, "audit", record.run_id)
        self._buffer(
            "INSERT INTO audit (run_id, seq, step, call_id, tool, decision, risk, rule, reason,"
            " decided_by, args_digest, preview_digest, server, trust, at)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (record.run_id, seq, record.step, record.call_id, record.tool, record.decision,
             record.risk, record.rule, record.reason, record.decided_by, record.args_digest,
             record.preview_digest, record.server, record.trust, record.at))

    @_guarded
    def audit(self, run_id: str) -> list[AuditRecord]:
        self.flush()
        rows = self._conn.execute(
            "SELECT run_id, step, call_id, tool, decision, risk, rule, reason, decided_by,"
            " args_digest, preview_digest, at, server, trust, seq FROM audit WHERE run_id = %s"
            " ORDER BY seq", (run_id,)).fetchall()
        return [AuditRecord(*r) for r in rows]

    @_guarded
    def record_effect(self, effect: EffectRecord, *, durable: bool = False,
                      buffered: bool = False) -> None:
        """Upsert a ledger row: in its own transaction (flushed by the server before the
        commit returns when ``durable``), or, when ``buffered``, with the next transaction."""
        sql = EFFECT_ROW
        params = (effect.run_id, effect.call_id, effect.step, effect.tool, effect.version,
                  effect.status, int(effect.idempotent), int(effect.side_effects),
                  _dumps(dict(effect.args)),
                  _dumps(dict(effect.result)) if effect.result is not None else None,
                  _dumps(dict(effect.file)) if effect.file is not None else None, effect.at)
        if buffered and not durable:
            self._buffer(sql, params)
            return
        with self._tx(durable=durable, then=[(sql, params)]):
            pass

    @_guarded
    def effects(self, run_id: str, step: int | None = None) -> list[EffectRecord]:
        self.flush()
        sql = ("SELECT run_id, call_id, step, tool, version, status, idempotent, side_effects,"
               " args, at, result, file FROM effects WHERE run_id = %s")
        params: tuple[Any, ...] = (run_id,)
        if step is not None:
            sql, params = sql + " AND step = %s", (run_id, step)
        rows = self._conn.execute(sql + " ORDER BY ord", params).fetchall()
        return [EffectRecord(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), bool(r[7]),
                             json.loads(r[8]), r[9], json.loads(r[10]) if r[10] else None,
                             json.loads(r[11]) if r[11] else None) for r in rows]

    # -- exported spans -----------------------------------------------------------------

    @_guarded
    def spans_sent(self, run_id: str) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT span_id FROM spans_sent WHERE run_id = %s", (run_id,))}

    @_guarded
    def mark_spans_sent(self, run_id: str, span_ids: Sequence[str], at: float) -> None:
        if not span_ids:
            return
        with self._tx() as c:
            c.executemany("INSERT INTO spans_sent (run_id, span_id, at) VALUES (%s,%s,%s)"
                          " ON CONFLICT DO NOTHING",
                          [(run_id, span_id, at) for span_id in span_ids])

    # -- parked approvals ---------------------------------------------------------------

    @_guarded
    def park_run(self, run_id: str, seq: int, requests: Sequence[ApprovalRequest], note: str,
                 at: float) -> None:
        """One transaction: the requests, the step ended ``approval_requested``, the run
        ``waiting_approval``. A request already there (a re-park) keeps its decision, unless
        it was made under another policy version: then it is asked again."""
        self.append_event(run_id, seq, "approval_requested",
                          {"calls": [r.call_id for r in requests], "note": note}, at)
        with self._tx() as c:
            if requests:
                c.executemany(
                    "INSERT INTO approval_requests (run_id, call_id, step, tool, args,"
                    " args_hash, policy_version, preview, risk, rule, reason, capability,"
                    " requested_at, status) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,"
                    "'pending')" + REOPEN.replace("?", "%s")
                    + " WHERE approval_requests.policy_version IS DISTINCT FROM"
                    " excluded.policy_version",
                    [(r.run_id, r.call_id, r.step, r.tool, _dumps(dict(r.args)), r.args_hash,
                      r.policy_version, r.preview, r.risk, r.rule, r.reason, r.capability,
                      r.requested_at) for r in requests])
            c.execute("UPDATE steps SET status = 'approval_requested', note = %s,"
                      " ended_at = %s WHERE run_id = %s AND seq = %s AND status = 'running'",
                      (note, at, run_id, seq))
            c.execute("UPDATE runs SET status = 'waiting_approval', updated_at = %s"
                      " WHERE run_id = %s", (at, run_id))

    @_guarded
    def approval_requests(self, run_id: str | None = None, *,
                          pending_only: bool = True) -> list[ApprovalRequest]:
        sql = "SELECT * FROM approval_requests WHERE 1 = 1"
        params: list[Any] = []
        if run_id is not None:
            sql += " AND run_id = %s"
            params.append(run_id)
        if pending_only:
            sql += " AND status = 'pending'"
        cur = self._conn.execute(sql + " ORDER BY requested_at, ord", params)
        cols = [d.name for d in cur.description or ()]
        return [_approval_row(dict(zip(cols, row, strict=True))) for row in cur.fetchall()]

    @_guarded
    def decide_approval(self, run_id: str, call_id: str, decision: ApprovalDecision,
                        audit: AuditRecord) -> ApprovalRequest:
        """Record a decision and its audit row at once; exactly one of two racing deciders
        wins (the run's row is locked until commit), the other gets ``DecisionRefusedError``."""
        with self._tx() as c:
            run = c.execute("SELECT status, lease_host, lease_pid, lease_nonce, lease_expires"
                            " FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)).fetchone()
            if run is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.where}")
            lease = dict(zip(("lease_host", "lease_pid", "lease_nonce", "lease_expires"),
                             run[1:], strict=True))
            if run[0] not in ("waiting_approval", "interrupted", "running") or (
                    run[0] == "running" and _lease_alive(lease)):
                raise DecisionRefusedError(
                    f"run {run_id} is not waiting for approval (it is {run[0]})")
            c.execute("SELECT * FROM approval_requests WHERE run_id = %s AND call_id = %s",
                      (run_id, call_id))
            row = c.fetchone()
            if row is None:
                raise DecisionRefusedError(f"run {run_id} has no approval request for call "
                                           f"{call_id!r} (list them: "
                                           f"{command('approvals', store=self.location)})")
            req = _approval_row(dict(zip([d.name for d in c.description or ()], row,
                                         strict=True)))
            if req.status != "pending":
                raise DecisionRefusedError(
                    f"call {call_id} of run {run_id} is not pending: already decided "
                    f"({req.status}) by {req.decided_by} via {req.channel}")
            if req.args_hash != decision.args_hash:
                raise DecisionRefusedError(
                    f"call {call_id} of run {run_id} changed since it was shown (arguments "
                    "hash mismatch); look at it again")
            c.execute(
                "UPDATE approval_requests SET status = %s, channel = %s, decided_by = %s,"
                " decided_at = %s, note = %s, always = %s WHERE run_id = %s AND call_id = %s"
                " AND status = 'pending'",
                (decision.decision, decision.channel, decision.who, decision.at, decision.note,
                 decision.always, run_id, call_id))
            got = c.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM audit WHERE run_id = %s",
                            (run_id,)).fetchone()
            a = audit
            c.execute(
                "INSERT INTO audit (run_id, seq, step, call_id, tool, decision, risk, rule,"
                " reason, decided_by, args_digest, preview_digest, server, trust, at)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (a.run_id, got[0] if got else 0, a.step, a.call_id, a.tool, a.decision, a.risk,
                 a.rule, a.reason, a.decided_by, a.args_digest, a.preview_digest, a.server,
                 a.trust, a.at))
        self._audit_seq.pop(run_id, None)
        return next(r for r in self.approval_requests(run_id, pending_only=False)
                    if r.call_id == call_id)

    @_guarded
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
