"""The SQLite store: every run, step, message, event, checkpoint, audit row and effect, in one file.

The only module that imports ``sqlite3``/``sqlite_utils`` (with ``sqlite_errors``, which turns
``sqlite3`` errors into ``StoreError``s: every public method passes through ``_guarded``, or
on the per-step path guards itself the same way).
A new database is made in one go (``NEW_DATABASE``); ``sqlite-utils`` owns the migrations
that upgrade older ones. Either runs in one write transaction that re-reads ``user_version``,
so processes creating one database at once cannot collide; ``sqlite-utils`` is imported only
to migrate (with its plugin hooks it weighs a tenth of a start-up). The
per-step path uses constant SQL through one connection, one transaction per step, because
``Table.insert`` introspects the table on every call (5x slower, DESIGN 4). WAL with
``synchronous=NORMAL`` survives a killed process; intent rows of effects that are not
idempotent are committed with ``synchronous=FULL`` so a power loss cannot hide them either.
A database that cannot be written is still read through ``SqliteStore.for_reading``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

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
    merged_config,
    with_calls,
)
from engine.store.deferred import Folds, Statement, fold, run_row_params, run_row_sql
from engine.store.readback import DECODE_ERRORS, damaged_row
from engine.store.sqlite_errors import (
    SQLITE_BUSY,
    is_corrupt,
    needs_immutable,
    primary_code,
    translate,
    translate_os,
)
from engine.vocabulary import held_files
from engine.vocabulary.errors import (
    DecisionRefusedError,
    LeaseHeldError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    StoreReplacedError,
    StoreSchemaError,
    UnknownRunError,
    UsageError,
)
from engine.vocabulary.events import EventKind, kind_of
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

if TYPE_CHECKING:
    import sqlite_utils

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 8
"""Bump with a new entry in ``MIGRATIONS``; a database with a newer version is refused."""

RUNS, STEPS, MESSAGES, TRANSITIONS, EVENTS = "runs", "steps", "messages", "transitions", "events"
CHECKPOINTS, AUDIT, EFFECTS, META = "checkpoints", "audit", "effects", "meta"
SPANS_SENT = "spans_sent"
APPROVALS = "approval_requests"


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
"""One encoder for every row (``json.dumps`` with options builds a new one per call)."""


def _row_encoder() -> Callable[[Any, int], Any]:
    """``_ENCODER``'s C encoder, made once: ``JSONEncoder.encode`` makes a new one on every
    call, which costs as much as encoding a step's small rows. The same text; no check for
    circular values (a row holds the engine's own JSON-like values: a cycle still fails)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder's own path
        return lambda value, _: [_ENCODER.encode(value)]
    encoder: Callable[[Any, int], Any] = make(None, str, json.encoder.encode_basestring, None,
                                              ":", ",", False, False, True)
    return encoder


_ENCODE = _row_encoder()
_join = "".join


def _dumps(value: Any) -> str:
    return _join(_ENCODE(value, 0))


def _dumps_map(value: Mapping[str, Any]) -> str:
    """A mapping as JSON (a plain dict is encoded as it is, any other mapping as a dict)."""
    return _join(_ENCODE(value if type(value) is dict else dict(value), 0))


_SCAN: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """``json.loads`` of a stored value: the text a row holds is compact JSON (``_dumps``'),
    read by the decoder's scanner at once; anything else through ``json.loads``."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


_KINDS: dict[str, EventKind] = {k.value: k for k in EventKind}
"""``kind_of`` for the kinds this version knows, without an enum call per row."""


def _schema_v1(db: sqlite_utils.Database) -> None:
    db[RUNS].create({  # type: ignore[union-attr]
        "run_id": str, "machine": str, "machine_path": str, "machine_hash": str,
        "status": str, "state": str, "workspace": str, "created_at": float,
        "updated_at": float, "steps": int, "input_tokens": int, "output_tokens": int,
        "cached_tokens": int, "cost_usd": float, "cost_known": int, "config": str,
        "error": str, "lease_host": str, "lease_pid": int, "lease_nonce": str,
        "lease_expires": float,
    }, pk="run_id", not_null={"machine", "status", "state"})
    db[STEPS].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "state": str, "action": str, "status": str,
        "trigger": str, "dest": str, "started_at": float, "ended_at": float, "note": str,
        "plan": str, "updates": str,
    }, pk=("run_id", "seq"))
    db[MESSAGES].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "step": int, "body": str,
    }, pk=("run_id", "seq"))
    db[TRANSITIONS].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "src": str, "trigger": str, "dest": str, "at": float,
    }, pk=("run_id", "seq"))
    db[EVENTS].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "step": int, "kind": str, "at": float, "payload": str,
    }, pk=("run_id", "seq"))
    db[CHECKPOINTS].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "state": str, "at": float, "data": str,
        "message_count": int, "usage": str,
    }, pk=("run_id", "seq"))
    db[AUDIT].create({  # type: ignore[union-attr]
        "run_id": str, "seq": int, "step": int, "call_id": str, "tool": str, "decision": str,
        "risk": str, "rule": str, "reason": str, "decided_by": str, "args_digest": str,
        "preview_digest": str, "server": str, "trust": str, "at": float,
    }, pk=("run_id", "seq"))
    db[EFFECTS].create({  # type: ignore[union-attr]
        "run_id": str, "call_id": str, "step": int, "tool": str, "version": str,
        "status": str, "idempotent": int, "side_effects": int, "args": str, "result": str,
        "file": str, "at": float,
    }, pk=("run_id", "call_id"))
    db[EVENTS].create_index(["run_id", "kind"])  # type: ignore[union-attr]
    db[RUNS].create_index(["created_at"])  # type: ignore[union-attr]


def _schema_v2(db: sqlite_utils.Database) -> None:
    """The ledger reads one step's effects on every tool step."""
    db[EFFECTS].create_index(["run_id", "step"])  # type: ignore[union-attr]


def _schema_v3(db: sqlite_utils.Database) -> None:
    """The OTLP exporter remembers each span it delivered, so none is sent twice."""
    db[SPANS_SENT].create({  # type: ignore[union-attr]
        "run_id": str, "span_id": str, "at": float,
    }, pk=("run_id", "span_id"))


def _schema_v4(db: sqlite_utils.Database) -> None:
    """Parked approvals: one row per call waiting for a person, then its decision."""
    db[APPROVALS].create({  # type: ignore[union-attr]
        "run_id": str, "call_id": str, "step": int, "tool": str, "args": str,
        "args_hash": str, "policy_version": str, "preview": str, "risk": str, "rule": str,
        "reason": str, "capability": str, "requested_at": float, "status": str,
        "channel": str, "decided_by": str, "decided_at": float, "note": str, "always": str,
    }, pk=("run_id", "call_id"), not_null={"status"})
    db[APPROVALS].create_index(["status"])  # type: ignore[union-attr]


TRANSITIONS_VIEW = (
    "CREATE VIEW transitions AS SELECT run_id, seq, state AS src, trigger, dest, ended_at AS at"
    " FROM steps WHERE status = 'succeeded'")
"""A step's row records its transition when it commits: the transitions are those rows."""


def _schema_v5(db: sqlite_utils.Database) -> None:
    """Two fewer b-trees written by every commit (of ~20 pages, ~6 were theirs): the
    transitions become a view of the committed steps (the same columns, the same rows), and the
    events of a run are found through their primary key, not a (run, kind) index whose every
    insert landed in the middle of the tree."""
    db.execute("DROP INDEX IF EXISTS idx_events_run_id_kind")
    db.execute("DROP TABLE IF EXISTS transitions")
    db.execute(TRANSITIONS_VIEW)


KEYED = (STEPS, MESSAGES, EVENTS, CHECKPOINTS, AUDIT)
"""The tables whose rows a run numbers (``seq``): each is one b-tree on an integer ``key``."""
RUN_SPAN = 1 << 32
"""Keys of run number ``rid``: ``rid * RUN_SPAN + seq + 1`` (``seq`` from -1, a run's initial
checkpoint)."""


def row_key(rid: int, seq: int) -> int:
    """The ``key`` of row ``seq`` of the run numbered ``rid``."""
    return rid * RUN_SPAN + seq + 1


def _schema_v6(db: sqlite_utils.Database) -> None:
    """A run's rows are keyed by one integer (its run number and the row's ``seq``): each such
    table is one b-tree, appended at its right edge, where a (run_id, seq) primary key kept a
    second one beside it; a commit wrote both (5 of its ~14 WAL pages were those indexes).
    Runs are numbered in ``rid``, kept in the run's row (a rowid can change on VACUUM)."""
    db.execute("ALTER TABLE runs ADD COLUMN rid INTEGER")
    db.execute("UPDATE runs SET rid = rowid")
    db.execute("CREATE UNIQUE INDEX runs_rid ON runs (rid)")
    db.execute("DROP VIEW IF EXISTS transitions")
    for table in KEYED:
        columns = [(c[1], c[2]) for c in db.execute(f'PRAGMA table_info("{table}")')]
        names = ", ".join(f'"{name}"' for name, _ in columns)
        declared = ", ".join(f'"{name}" {kind}' for name, kind in columns)
        selected = ", ".join(f't."{name}"' for name, _ in columns)
        db.execute(f'CREATE TABLE "{table}_keyed" (key INTEGER PRIMARY KEY, {declared})')
        db.execute(f'INSERT INTO "{table}_keyed" (key, {names})'
                   f' SELECT r.rid * {RUN_SPAN} + t.seq + 1, {selected}'
                   f' FROM "{table}" t JOIN runs r ON r.run_id = t.run_id')
        db.execute(f'DROP TABLE "{table}"')
        db.execute(f'ALTER TABLE "{table}_keyed" RENAME TO "{table}"')
    db.execute(TRANSITIONS_VIEW)


def _schema_parent_link(db: sqlite_utils.Database) -> None:
    """A child run (``run_machine``, ``delegate``) names its parent run and the parent's step;
    a parent finds its children through the index."""
    db.execute("ALTER TABLE runs ADD COLUMN parent_run_id TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN parent_step INTEGER")
    db.execute(PARENT_INDEX)


PARENT_INDEX = 'CREATE INDEX "idx_runs_parent" ON "runs" ("parent_run_id", "parent_step")'


def _schema_v8(db: sqlite_utils.Database) -> None:
    """A fork records where it came from: the run and the step (``fork``)."""
    db.execute("ALTER TABLE runs ADD COLUMN forked_from TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN fork_step INTEGER")


MIGRATIONS = {1: _schema_v1, 2: _schema_v2, 3: _schema_v3, 4: _schema_v4, 5: _schema_v5,
              6: _schema_v6, 7: _schema_parent_link, 8: _schema_v8}

NEW_DATABASE = (
    """CREATE TABLE "runs" ("run_id" TEXT PRIMARY KEY, "machine" TEXT NOT NULL,
        "machine_path" TEXT, "machine_hash" TEXT, "status" TEXT NOT NULL,
        "state" TEXT NOT NULL, "workspace" TEXT, "created_at" REAL, "updated_at" REAL,
        "steps" INTEGER, "input_tokens" INTEGER, "output_tokens" INTEGER,
        "cached_tokens" INTEGER, "cost_usd" REAL, "cost_known" INTEGER, "config" TEXT,
        "error" TEXT, "lease_host" TEXT, "lease_pid" INTEGER, "lease_nonce" TEXT,
        "lease_expires" REAL, "rid" INTEGER, "parent_run_id" TEXT, "parent_step" INTEGER,
        forked_from TEXT, fork_step INTEGER)""",
    """CREATE TABLE "effects" ("run_id" TEXT, "call_id" TEXT, "step" INTEGER, "tool" TEXT,
        "version" TEXT, "status" TEXT, "idempotent" INTEGER, "side_effects" INTEGER,
        "args" TEXT, "result" TEXT, "file" TEXT, "at" REAL,
        PRIMARY KEY ("run_id", "call_id"))""",
    """CREATE TABLE "spans_sent" ("run_id" TEXT, "span_id" TEXT, "at" REAL,
        PRIMARY KEY ("run_id", "span_id"))""",
    """CREATE TABLE "approval_requests" ("run_id" TEXT, "call_id" TEXT, "step" INTEGER,
        "tool" TEXT, "args" TEXT, "args_hash" TEXT, "policy_version" TEXT, "preview" TEXT,
        "risk" TEXT, "rule" TEXT, "reason" TEXT, "capability" TEXT, "requested_at" REAL,
        "status" TEXT NOT NULL, "channel" TEXT, "decided_by" TEXT, "decided_at" REAL,
        "note" TEXT, "always" TEXT, PRIMARY KEY ("run_id", "call_id"))""",
    """CREATE TABLE "steps" (key INTEGER PRIMARY KEY, "run_id" TEXT, "seq" INTEGER,
        "state" TEXT, "action" TEXT, "status" TEXT, "trigger" TEXT, "dest" TEXT,
        "started_at" REAL, "ended_at" REAL, "note" TEXT, "plan" TEXT, "updates" TEXT)""",
    """CREATE TABLE "messages" (key INTEGER PRIMARY KEY, "run_id" TEXT, "seq" INTEGER,
        "step" INTEGER, "body" TEXT)""",
    """CREATE TABLE "events" (key INTEGER PRIMARY KEY, "run_id" TEXT, "seq" INTEGER,
        "step" INTEGER, "kind" TEXT, "at" REAL, "payload" TEXT)""",
    """CREATE TABLE "checkpoints" (key INTEGER PRIMARY KEY, "run_id" TEXT, "seq" INTEGER,
        "state" TEXT, "at" REAL, "data" TEXT, "message_count" INTEGER, "usage" TEXT)""",
    """CREATE TABLE "audit" (key INTEGER PRIMARY KEY, "run_id" TEXT, "seq" INTEGER,
        "step" INTEGER, "call_id" TEXT, "tool" TEXT, "decision" TEXT, "risk" TEXT,
        "rule" TEXT, "reason" TEXT, "decided_by" TEXT, "args_digest" TEXT,
        "preview_digest" TEXT, "server" TEXT, "trust" TEXT, "at" REAL)""",
    'CREATE INDEX "idx_runs_created_at" ON "runs" ("created_at")',
    'CREATE INDEX "idx_effects_run_id_step" ON "effects" ("run_id", "step")',
    'CREATE INDEX "idx_approval_requests_status" ON "approval_requests" ("status")',
    "CREATE UNIQUE INDEX runs_rid ON runs (rid)",
    PARENT_INDEX,
    TRANSITIONS_VIEW,
    f"PRAGMA user_version={SCHEMA_VERSION}",
)
"""A new database, made at once: the schema ``MIGRATIONS`` leave (tests compare the two),
without their table rebuilds and the compaction after them, and without importing
``sqlite-utils``. The migrations still upgrade every older database."""

FORK_COPIES = (
    (STEPS, "seq, state, action, status, trigger, dest, started_at, ended_at, note, plan,"
     " updates", "seq"),
    (CHECKPOINTS, "seq, state, at, data, message_count, usage", "seq"),
    (MESSAGES, "seq, step, body", "step"),
    (EVENTS, "seq, step, kind, at, payload", "step"),
    (AUDIT, "seq, step, call_id, tool, decision, risk, rule, reason, decided_by, args_digest,"
     " preview_digest, server, trust, at", "step"),
)
"""What a fork copies of a run's keyed rows: (table, columns, the column below the fork's step:
``seq``, a step's own number, or ``step``, the step a row belongs to)."""
FORK_BY_RUN = (
    (EFFECTS, "call_id, step, tool, version, status, idempotent, side_effects, args, result,"
     " file, at"),
    (APPROVALS, "call_id, step, tool, args, args_hash, policy_version, preview, risk, rule,"
     " reason, capability, requested_at, status, channel, decided_by, decided_at, note,"
     " always"),
)
"""The rows a fork copies from tables keyed by run id (decided approvals only)."""

EVENT_FLUSH_ROWS = 256
EVENT_FLUSH_S = 1.0
"""Buffered event and audit rows are written with the next transaction, or when this many are
waiting, or when the oldest has waited this long."""

RUN_ROW = run_row_sql("?")
STEP_BEGIN = (
    "INSERT INTO steps (key, run_id, seq, state, action, status, started_at, plan)"
    " VALUES (?,?,?,?,?,'running',?,?) ON CONFLICT(key) DO UPDATE SET"
    " status = 'running', started_at = excluded.started_at, plan = excluded.plan"
    " WHERE status != 'succeeded'")
"""A step's pre-checkpoint (a step begun again after a crash takes a new start and plan)."""
STEP_END = ("UPDATE steps SET status = 'succeeded', trigger = ?, dest = ?, ended_at = ?,"
            " note = ?, updates = ? WHERE key = ?")
"""A step's commit: it ``succeeded``, and the transition it took."""
STEP_WHOLE = (
    "INSERT INTO steps (key, run_id, seq, state, action, status, started_at, plan, trigger,"
    " dest, ended_at, note, updates) VALUES (?,?,?,?,?,'succeeded',?,?,?,?,?,?,?)"
    " ON CONFLICT(key) DO UPDATE SET status = 'succeeded',"
    " started_at = CASE WHEN status = 'succeeded' THEN started_at ELSE excluded.started_at END,"
    " plan = CASE WHEN status = 'succeeded' THEN plan ELSE excluded.plan END,"
    " trigger = excluded.trigger, dest = excluded.dest, ended_at = excluded.ended_at,"
    " note = excluded.note, updates = excluded.updates")
"""``STEP_BEGIN`` then ``STEP_END`` of one step as one statement (both in one transaction)."""
EFFECT_ROW = (
    "INSERT INTO effects (run_id, call_id, step, tool, version, status, idempotent,"
    " side_effects, args, result, file, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT(run_id, call_id) DO UPDATE SET status = excluded.status,"
    " result = COALESCE(excluded.result, result), file = COALESCE(excluded.file,"
    " file), at = excluded.at")
"""A ledger row: a call's intent, then its outcome (a later result or file replaces one)."""
FOLDS = Folds(STEP_BEGIN, STEP_END, STEP_WHOLE, EFFECT_ROW, RUN_ROW)
MESSAGE_ROW = "INSERT OR IGNORE INTO messages (key, run_id, seq, step, body) VALUES (?,?,?,?,?)"
CHECKPOINT_ROW = ("INSERT OR REPLACE INTO checkpoints (key, run_id, seq, state, at, data,"
                  " message_count, usage) VALUES (?,?,?,?,?,?,?,?)")
EVENT_ROW = ("INSERT INTO events (key, run_id, seq, step, kind, at, payload)"
             " VALUES (?,?,?,?,?,?,?)")
AUDIT_ROW = ("INSERT INTO audit (key, run_id, seq, step, call_id, tool, decision, risk, rule,"
             " reason, decided_by, args_digest, preview_digest, server, trust, at)"
             " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


REOPEN_SET = (
    " ON CONFLICT (run_id, call_id) DO UPDATE SET step = excluded.step, args = excluded.args,"
    " args_hash = excluded.args_hash, policy_version = excluded.policy_version,"
    " preview = excluded.preview, risk = excluded.risk, rule = excluded.rule,"
    " reason = excluded.reason, capability = excluded.capability,"
    " requested_at = excluded.requested_at, status = 'pending', channel = NULL,"
    " decided_by = NULL, decided_at = NULL, note = '', always = NULL")
"""A parked request decided under another policy version is asked again (pending); each
store adds the condition in its own dialect."""
REOPEN = REOPEN_SET + f" WHERE {APPROVALS}.policy_version IS NOT excluded.policy_version"

BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process's write lock before ``StoreLockedError``
(``ENGINE_BUSY_TIMEOUT`` overrides it, in seconds)."""


def busy_timeout(value: float | None = None) -> float:
    """``value``, else ``ENGINE_BUSY_TIMEOUT``, else ``BUSY_TIMEOUT_S``."""
    if value is not None:
        return value
    raw = os.environ.get("ENGINE_BUSY_TIMEOUT")
    if not raw:
        return BUSY_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UsageError(f"ENGINE_BUSY_TIMEOUT={raw!r}: expected a number of seconds")
    return seconds


def connect(path: Path, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL; transactions are explicit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not _writable(path):
        # Opened anyway, SQLite would leave read-only -wal/-shm files that keep the database
        # read-only even after the file is made writable again.
        raise StoreReadOnlyError(
            f"{path}: the database file is read-only; run and resume need write access to "
            "the file and its folder (runs, show, trace and audit still work)")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=busy_timeout_s,
                           check_same_thread=False)
    _enable_wal(conn, busy_timeout_s)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


def _writable(path: Path) -> bool:
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def _enable_wal(conn: sqlite3.Connection, busy_timeout_s: float) -> None:
    """Switch to WAL; on a new file another process may be doing the same, so wait for it."""
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if primary_code(exc) != SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open ``path`` for reading only.

    With no ``-shm`` file no connection is open, so the file is read as ``immutable``: that
    creates no ``-wal``/``-shm`` files (which a folder may not allow, and which, left behind
    read-only, would keep the database read-only for its owner too). Otherwise ``mode=ro``
    shares the open connections' ``-shm`` and sees their latest commits.
    """
    if not path.is_file():
        raise StoreError(f"{path}: no such database file")
    uri = path.resolve().as_uri()
    shm, wal = (path.with_name(path.name + suffix) for suffix in ("-shm", "-wal"))
    wal_has_commits = wal.exists() and wal.stat().st_size > 0
    if shm.exists() or wal_has_commits:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            conn.close()
            if not needs_immutable(exc):
                raise
        if wal_has_commits:
            raise StoreReadOnlyError(
                f"{path}: its latest commits are in {wal.name}, which cannot be read without "
                "write access to the folder")
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None,
                           check_same_thread=False)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[Concatenate[SqliteStore, _P], _R]
             ) -> Callable[Concatenate[SqliteStore, _P], _R]:
    """Every public method: an ``sqlite3`` error leaves as the matching ``StoreError``."""

    def guarded(self: SqliteStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            first = args[0] if args else None
            run_id = first if isinstance(first, str) else getattr(first, "run_id", None)
            raise self._fault(exc, run_id) from exc
        except DECODE_ERRORS as exc:  # a stored value the decoders cannot read
            first = args[0] if args else None
            raise damaged_row(self.path, first if isinstance(first, str) else None,
                              exc) from exc

    functools.update_wrapper(guarded, method)
    return guarded


class SqliteStore:
    """A ``Store`` on one SQLite file."""

    def __init__(self, path: Path | str, *, durability: Durability = "normal",
                 readonly: bool = False, busy_timeout_s: float | None = None) -> None:
        self.path = Path(path)
        self.durability = durability
        self.readonly = readonly
        """Opened with ``for_reading`` on a database that cannot be written: reads only."""
        self.busy_timeout_s = busy_timeout(busy_timeout_s)
        self._pending: list[tuple[str, tuple[Any, ...]]] = []
        self._pending_since = 0.0
        self._identity: tuple[int, int] | None = None
        self._held = False
        """Its files are in ``held_files`` (from a successful open until ``close``)."""
        try:
            self._conn = (connect_readonly(self.path) if readonly
                          else connect(self.path, busy_timeout_s=self.busy_timeout_s))
            self._migrate()
            if durability == "full":
                self._conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as exc:
            raise self._fault(exc) from exc
        except OSError as exc:
            raise translate_os(exc, self.path) from exc
        self._identity = None if readonly else file_identity(self.path)
        held_files.hold(self.path)  # no reader in this process may now close its descriptors
        self._held = True
        """The file's device and inode when opened: a write checks it is still the one at
        ``path`` (a replaced or deleted file would take the rows with it, unseen)."""
        self._event_seq: dict[str, int] = {}
        self._audit_seq: dict[str, int] = {}
        self._rids: dict[str, int] = {}
        """Run numbers by run id (``rid``: the high part of its rows' keys)."""
        self._bases: dict[str, int] = {}
        """``row_key(rid, 0)`` by run id: the key of a run's row ``seq`` is this plus ``seq``."""

    @property
    def location(self) -> str:
        """The file's path as it was given (hints name the store so)."""
        return str(self.path)

    @classmethod
    def for_reading(cls, path: Path | str, **kwargs: Any) -> SqliteStore:
        """Open ``path`` as usual, or read-only where it cannot be written (file or folder
        read-only, or a migration blocked by a writer): ``runs``, ``show``, ``trace`` and
        ``audit`` work on a database nobody may change."""
        try:
            return cls(path, **kwargs)
        except (StoreReadOnlyError, StoreLockedError):
            return cls(path, readonly=True, **kwargs)

    # -- faults -------------------------------------------------------------------------

    def _fault(self, exc: sqlite3.Error, run_id: str | None = None) -> StoreError:
        """The ``StoreError`` for ``exc``; a corruption met reading a run says what of that
        run can still be read."""
        if not (run_id and is_corrupt(exc)):
            return translate(exc, self.path, busy_timeout_s=self.busy_timeout_s)
        readable, damaged = self._readable(run_id)
        return StoreCorruptError(
            f"{self.path}: the database is corrupted ({exc}) where run {run_id} is stored: "
            f"unreadable: {', '.join(damaged) or 'none'}; still readable: "
            f"{', '.join(readable) or 'nothing'}; a full check: "
            f"{command('check', store=self.location)}")

    def _readable(self, run_id: str) -> tuple[list[str], list[str]]:
        """Which of a run's tables can still be read in full, and which cannot."""
        readable: list[str] = []
        damaged: list[str] = []
        for table in (RUNS, STEPS, TRANSITIONS, MESSAGES, EVENTS, CHECKPOINTS, AUDIT, EFFECTS):
            try:
                if table in KEYED or table == TRANSITIONS:  # this run's rows only
                    source = STEPS if table == TRANSITIONS else table
                    rows = self._conn.execute(f"SELECT * FROM {source} WHERE key >= ?"
                                              " AND key < ?", self._span(run_id))
                else:
                    rows = self._conn.execute(f"SELECT * FROM {table} WHERE run_id = ?",
                                              (run_id,))
                for _ in rows:
                    pass
            except sqlite3.Error:
                damaged.append(table)
            else:
                readable.append(table)
        return readable, damaged

    @_guarded
    def check(self) -> list[str]:
        """``PRAGMA quick_check``: no problems (an empty list) when every page is sound."""
        try:
            rows = [" ".join(str(r[0]).split()) for r in self._conn.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc):
                raise
            return [str(exc)]
        return [] if rows == ["ok"] else rows

    # -- schema -------------------------------------------------------------------------

    def _user_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Create or upgrade the schema; the current version costs one read and no lock."""
        version = self._user_version()
        if version == SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        if self.readonly:
            if RUNS not in self._tables():
                raise StoreError(f"{self.path}: not a Turnstile database (no runs table)")
            self._read_through_memory()
            version = self._user_version()
        with self._tx():  # one creator at a time; a second process finds the work done
            version = self._user_version()
            self._refuse_newer(version)
            tables = self._tables()
            if version == 0 and tables and RUNS not in tables:
                raise StoreError(f"{self.path}: not a Turnstile database (unknown tables)")
            if version == 0 and not tables:
                for statement in NEW_DATABASE:
                    self._conn.execute(statement)
                return  # committed as the transaction's block ends
            db = self._schema()
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target](db)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _tables(self) -> list[str]:
        return [name for (name,) in self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]

    def _schema(self) -> sqlite_utils.Database:
        """The connection as ``sqlite-utils`` sees it, to read or change the schema."""
        import sqlite_utils

        return sqlite_utils.Database(self._conn)

    def _read_through_memory(self) -> None:
        """An older schema that cannot be upgraded in place (the file is read-only) is read
        through an upgraded copy in memory: the same queries serve every version."""
        copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.backup(copy)
        self._conn.close()
        self._conn = copy

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.path}: database schema version {version} is newer than this Turnstile "
                f"({SCHEMA_VERSION}); upgrade Turnstile or use another --db"
            )

    @contextmanager
    def _tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One write transaction, carrying the buffered rows; on any failure nothing of it
        is kept and the buffered rows wait for the next one."""
        conn = self._conn
        self._check_identity()
        if durable and self.durability != "full":
            conn.execute("PRAGMA synchronous=FULL")
        pending, self._pending = self._pending, []
        try:
            conn.execute("BEGIN IMMEDIATE")
            _execute(conn, pending)
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            self._abandon(pending)
            raise
        finally:
            if durable and self.durability != "full":
                conn.execute("PRAGMA synchronous=NORMAL")

    def _write(self, statements: list[Statement], *, durable: bool = False) -> None:
        """``_tx`` for a transaction that only writes ``statements``, after the buffered rows
        (the per-step path: a plain call, no context manager)."""
        conn = self._conn
        self._check_identity()
        sync = durable and self.durability != "full"
        if sync:
            conn.execute("PRAGMA synchronous=FULL")
        pending = self._pending
        self._pending = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            _execute(conn, pending + statements if pending else statements)
            conn.execute("COMMIT")
        except BaseException:
            self._abandon(pending)
            raise
        finally:
            if sync:
                conn.execute("PRAGMA synchronous=NORMAL")

    def _check_identity(self) -> None:
        """Refuse to write when the file at ``path`` is no longer the one opened: one stat
        (about a microsecond) per transaction."""
        if self._identity is not None and file_identity(self.path) != self._identity:
            now = "deleted" if not self.path.exists() else "replaced by another file"
            raise StoreReplacedError(
                f"{self.path}: the database file was {now} while in use; nothing more is "
                "written (put the original file back, then resume)")

    def _abandon(self, pending: list[Statement]) -> None:
        """Roll a failed transaction back; its buffered rows wait for the next one."""
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):  # the first error is the one to report
                self._conn.execute("ROLLBACK")
        self._pending = pending + self._pending

    @_guarded
    def flush(self) -> None:
        """Write buffered event and audit rows now."""
        if self._pending:
            self._write([])

    def _buffer(self, sql: str, params: tuple[Any, ...]) -> None:
        """Queue a row for the next transaction: events ride with the step they belong to."""
        now = time.monotonic()
        if not self._pending:
            self._pending_since = now
        self._pending.append((sql, params))
        if len(self._pending) >= EVENT_FLUSH_ROWS or now - self._pending_since > EVENT_FLUSH_S:
            self.flush()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._conn.close()
            if self._held:
                self._held = False
                held_files.release(self.path)

    # -- runs ---------------------------------------------------------------------------

    @_guarded
    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None:
        with self._tx() as c:
            rid = c.execute("SELECT COALESCE(MAX(rid), 0) + 1 FROM runs").fetchone()[0]
            c.execute(
                "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
                " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
                " cached_tokens, cost_usd, cost_known, config, error, rid, parent_run_id,"
                " parent_step) VALUES (?,?,?,?,?,?,?,?,?,0,0,0,0,0,1,?,NULL,?,?,?)",
                (info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                 info.state, info.workspace, info.created_at, info.updated_at,
                 _dumps(dict(info.config)), rid, info.parent_run_id, info.parent_step),
            )
            self._rids[info.run_id] = rid
            rows = [self._checkpoint_row(Checkpoint(info.run_id, -1, state.state,
                                                    info.created_at, state.data,
                                                    len(state.messages), state.usage))]
            self._message_rows(rows, info.run_id, -1, 0, state.messages)
            rows.append(self._begin_row(self._base(info.run_id), info.run_id, first))
            _execute(c, rows)

    @_guarded
    def get_run(self, run_id: str) -> RunInfo:
        row = self._conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            row = self._by_prefix(run_id)
        return self._run_info(row)

    def _by_prefix(self, prefix: str) -> tuple[Any, ...]:
        rows = self._conn.execute(
            "SELECT * FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        ).fetchall() if len(prefix) >= 4 else []
        if len(rows) == 1:
            return tuple(rows[0])
        if len(rows) > 1:
            raise UnknownRunError(f"run id prefix {prefix!r} is ambiguous; give more characters")
        raise UnknownRunError(
            f"no run {prefix!r} in {self.path} (list runs with: "
            f"{command('runs', store=self.location)})"
        )

    @_guarded
    def run_ids(self) -> list[str]:
        """Every run's id, oldest first, without decoding any row."""
        return [r for (r,) in self._conn.execute(
            "SELECT run_id FROM runs ORDER BY created_at, rowid")]

    @_guarded
    def list_runs(self) -> list[RunInfo]:
        rows = self._conn.execute("SELECT * FROM runs ORDER BY created_at, rowid").fetchall()
        return [self._run_info(r) for r in rows]

    @_guarded
    def child_runs(self, run_id: str) -> list[RunInfo]:
        rows = self._conn.execute("SELECT * FROM runs WHERE parent_run_id = ?"
                                  " ORDER BY created_at, rowid", (run_id,)).fetchall()
        return [self._run_info(r) for r in rows]

    def _run_info(self, row: Sequence[Any]) -> RunInfo:
        r = dict(zip(self._run_columns(), row, strict=True))
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
            parent_run_id=r.get("parent_run_id"), parent_step=r.get("parent_step"),
            forked_from=(ForkOrigin(r["forked_from"], r["fork_step"])
                         if r.get("forked_from") else None),
        )

    def _run_columns(self) -> list[str]:
        cols = getattr(self, "_cols", None)
        if cols is None:
            cols = [c[1] for c in self._conn.execute("PRAGMA table_info(runs)")]
            self._cols = cols
        return cols

    @_guarded
    def set_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?",
                      (status, error, time.time(), run_id))

    @_guarded
    def update_config(self, run_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        with self._tx() as c:
            row = c.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.path}")
            config = merged_config(json.loads(row[0] or "{}"), changes)
            c.execute("UPDATE runs SET config = ?, updated_at = ? WHERE run_id = ?",
                      (_dumps(config), time.time(), run_id))
        return config

    # -- leases -------------------------------------------------------------------------

    @_guarded
    def acquire_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        with self._tx() as c:
            row = c.execute(
                "SELECT lease_host, lease_pid, lease_nonce, lease_expires FROM runs"
                " WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.path}")
            host, pid, nonce, expires = row
            held = {"lease_host": host, "lease_pid": pid, "lease_nonce": nonce,
                    "lease_expires": expires}
            if nonce and nonce != owner.nonce and self._lease_alive(held):
                raise LeaseHeldError(
                    f"run {run_id} is being driven by pid {pid} on {host}; wait for it to "
                    f"finish or stop that process"
                )
            c.execute(
                "UPDATE runs SET lease_host = ?, lease_pid = ?, lease_nonce = ?,"
                " lease_expires = ?, status = 'running' WHERE run_id = ?",
                (owner.host, owner.pid, owner.nonce, time.time() + ttl_s, run_id))

    @_guarded
    def renew_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_nonce = ?",
                      (time.time() + ttl_s, run_id, owner.nonce))

    @_guarded
    def release_lease(self, run_id: str, owner: LeaseOwner) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET lease_host = NULL, lease_pid = NULL, lease_nonce = NULL,"
                " lease_expires = NULL WHERE run_id = ? AND lease_nonce = ?",
                (run_id, owner.nonce))

    @staticmethod
    def _lease_alive(r: Mapping[str, Any]) -> bool:
        return lease_alive(r)

    # -- row keys -----------------------------------------------------------------------

    def _rid(self, run_id: str) -> int | None:
        """The run's number (None: no such run); read once per run."""
        rid = self._rids.get(run_id)
        if rid is None:
            row = self._conn.execute("SELECT rid FROM runs WHERE run_id = ?",
                                     (run_id,)).fetchone()
            if row is None or row[0] is None:
                return None
            rid = self._rids[run_id] = int(row[0])
        return rid

    def _key(self, run_id: str, seq: int) -> int:
        """The key of row ``seq`` of a run (whose rows can only be written once it exists)."""
        rid = self._rid(run_id)
        if rid is None:
            raise UnknownRunError(f"no run {run_id!r} in {self.path}")
        return row_key(rid, seq)

    def _base(self, run_id: str) -> int:
        """The key of a run's row 0 (the per-step path adds a row's ``seq`` to it)."""
        base = self._bases.get(run_id)
        if base is None:
            base = self._bases[run_id] = self._key(run_id, 0)
        return base

    def _span(self, run_id: str) -> tuple[int, int]:
        """The keys of a run's rows, ``lo <= key < hi`` (none for an unknown run)."""
        rid = self._rid(run_id)
        return (0, 0) if rid is None else (rid * RUN_SPAN, (rid + 1) * RUN_SPAN)

    # -- steps --------------------------------------------------------------------------

    @_guarded
    def begin_step(self, run_id: str, begin: StepBegin) -> None:
        self._write([self._begin_row(self._base(run_id), run_id, begin)])

    @staticmethod
    def _begin_row(base: int, run_id: str, b: StepBegin) -> Statement:
        """``b``'s row; ``base`` is the key of the run's row 0 (``_base``)."""
        return (STEP_BEGIN, (base + b.seq, run_id, b.seq, b.state, b.action, b.started_at,
                             None if b.plan is None else _dumps_map(b.plan)))

    def commit_step(self, run_id: str, commit: StepCommit, *, defer: bool = False) -> None:
        """One transaction; ``defer``: ride in the next one instead (``engine.store.deferred``:
        only for steps that are safe to run again after a crash). Guarded inline (as the
        other per-step methods): ``_guarded``'s wrapper costs more than the method."""
        try:
            base = self._bases.get(run_id) or self._base(run_id)
            if defer:
                rows = self._pending
                if not rows:
                    self._pending_since = time.monotonic()
            else:
                rows = []
            rows.append((STEP_END, (commit.trigger, commit.dest, commit.ended_at, commit.note,
                                    _dumps_map(commit.updates) if commit.updates else None,
                                    base + commit.seq)))
            if commit.messages:
                self._message_rows(rows, run_id, commit.seq, commit.first_message_seq,
                                   commit.messages)
            rows.append((RUN_ROW, run_row_params(run_id, commit)))
            if commit.next_step is not None:
                rows.append(self._begin_row(base, run_id, commit.next_step))
            if commit.snapshot is not None:
                rows.append(self._checkpoint_row(commit.snapshot))
            if not defer:
                self._write(rows)
        except sqlite3.Error as exc:
            raise self._fault(exc, run_id) from exc

    @_guarded
    def end_step(self, run_id: str, seq: int, status: str, note: str, at: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE steps SET status = ?, note = ?, ended_at = ? WHERE key = ?"
                      " AND status = 'running'", (status, note, at, self._key(run_id, seq)))

    @_guarded
    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._conn.execute(
            "SELECT seq, state, action, status, trigger, dest, started_at, ended_at,"
            " note, plan FROM steps WHERE key >= ? AND key < ? ORDER BY key",
            self._span(run_id)).fetchall()  # the span is the exact run's: its id is run_id
        new = object.__new__
        # each slot set through its descriptor, as in ``events``: the frozen ``__init__``
        # costs twice as much, and the trace reads every step of a long run
        s_run, s_seq, s_state, s_action, s_status, s_trigger, s_dest, s_start, s_end, s_note, \
            s_plan = (getattr(StepRecord, f).__set__ for f in (
                "run_id", "seq", "state", "action", "status", "trigger", "dest", "started_at",
                "ended_at", "note", "plan"))
        out: list[StepRecord] = []
        for seq, state, action, status, trigger, dest, started, ended, note, plan in rows:
            s = new(StepRecord)
            s_run(s, run_id)
            s_seq(s, seq)
            s_state(s, state)
            s_action(s, action)
            s_status(s, status)
            s_trigger(s, trigger)
            s_dest(s, dest)
            s_start(s, started)
            s_end(s, ended)
            s_note(s, note or "")
            s_plan(s, _loads(plan) if plan else None)
            out.append(s)
        return out

    @_guarded
    def transitions(self, run_id: str) -> list[tuple[int, str, str, str]]:
        return [tuple(r) for r in self._conn.execute(
            "SELECT seq, state, trigger, dest FROM steps WHERE key >= ? AND key < ?"
            " AND status = 'succeeded' ORDER BY key", self._span(run_id))]

    # -- messages -----------------------------------------------------------------------

    def _message_rows(self, into: list[Statement], run_id: str, step: int, first: int,
                      messages: Sequence[Message]) -> None:
        """The rows of a step's new messages, numbered from ``first``, added to ``into``."""
        key = (self._bases.get(run_id) or self._base(run_id)) + first
        for i, m in enumerate(messages):
            into.append((MESSAGE_ROW, (key + i, run_id, first + i, step, _dumps(m.to_dict()))))

    @_guarded
    def messages(self, run_id: str) -> list[Message]:
        return [Message.from_dict(_loads(b)) for (b,) in self._conn.execute(
            "SELECT body FROM messages WHERE key >= ? AND key < ? ORDER BY key",
            self._span(run_id))]

    # -- events -------------------------------------------------------------------------

    def append_event(self, run_id: str, step: int, kind: str, payload: Mapping[str, Any],
                     at: float) -> int:
        try:  # guarded inline, as commit_step
            seq = self._event_seq.get(run_id)
            seq = self._next_seq(self._event_seq, EVENTS, run_id) if seq is None else seq + 1
            self._event_seq[run_id] = seq
            self._buffer(EVENT_ROW, ((self._bases.get(run_id) or self._base(run_id)) + seq,
                                     run_id, seq, step, str(kind), at, _dumps_map(payload)))
        except sqlite3.Error as exc:
            raise self._fault(exc, run_id) from exc
        return seq

    def _next_seq(self, cache: dict[str, int], table: str, run_id: str) -> int:
        seq = cache.get(run_id)
        if seq is None:
            row = self._conn.execute(
                f"SELECT COALESCE(MAX(seq), -1) FROM {table} WHERE key >= ? AND key < ?",
                self._span(run_id)).fetchone()
            seq = row[0]
        cache[run_id] = seq + 1
        return seq + 1

    @_guarded
    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        self.flush()
        sql = "SELECT seq, step, kind, at, payload FROM events WHERE key >= ? AND key < ?"
        params: list[Any] = list(self._span(run_id))  # the exact run's: its id is run_id
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        rows = self._conn.execute(sql + " ORDER BY key", params).fetchall()
        known, new = _KINDS, object.__new__
        # each slot set through its descriptor: the frozen ``__init__`` costs twice as much,
        # and a long run has tens of thousands of events
        s_run, s_seq, s_step, s_kind, s_at, s_payload = (
            getattr(Event, f).__set__ for f in ("run_id", "seq", "step", "kind", "at", "payload"))
        out: list[Event] = []
        for seq, step, kind, at, payload in rows:
            e = new(Event)
            s_run(e, run_id)
            s_seq(e, seq)
            s_step(e, step)
            s_kind(e, known.get(kind) or kind_of(kind))
            s_at(e, at)
            s_payload(e, _loads(payload))
            out.append(e)
        return out

    # -- checkpoints and resume ---------------------------------------------------------

    @_guarded
    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._write([self._checkpoint_row(checkpoint)])

    def _checkpoint_row(self, cp: Checkpoint) -> Statement:
        u = cp.usage
        return (CHECKPOINT_ROW, (
            self._key(cp.run_id, cp.seq), cp.run_id, cp.seq, cp.state, cp.at,
            _dumps_map(cp.data), cp.message_count,
            _dumps([u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_usd])))

    @_guarded
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self._conn.execute(
            "SELECT run_id, seq, state, at, data, message_count, usage FROM checkpoints"
            " WHERE key >= ? AND key < ? ORDER BY key", self._span(run_id)).fetchall()
        return [Checkpoint(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5],
                           Usage(*json.loads(r[6]))) for r in rows]

    @_guarded
    def load_state(self, run_id: str) -> RunState:
        """The run as of its last committed step: last snapshot + later step deltas."""
        info = self.get_run(run_id)
        run_id = info.run_id
        lo, hi = self._span(run_id)
        row = self._conn.execute(
            "SELECT seq, data FROM checkpoints WHERE key >= ? AND key < ?"
            " ORDER BY key DESC LIMIT 1", (lo, hi)).fetchone()
        snap_seq, data = (row[0], json.loads(row[1])) if row else (-1, {})
        for (updates,) in self._conn.execute(
            "SELECT updates FROM steps WHERE key > ? AND key < ? AND status = 'succeeded'"
            " AND updates IS NOT NULL ORDER BY key", (self._key(run_id, snap_seq), hi)):
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
        lo, _ = self._span(run_id)
        at = self._key(run_id, step)
        row = self._conn.execute(
            "SELECT seq, data, usage FROM checkpoints WHERE key >= ? AND key < ?"
            " ORDER BY key DESC LIMIT 1", (lo, at)).fetchone()
        if row is None:
            raise UsageError(f"run {run_id} has no step {step}")
        snap, data, usage = row[0], json.loads(row[1]), Usage(*json.loads(row[2]))
        for (updates,) in self._conn.execute(
                "SELECT updates FROM steps WHERE key > ? AND key < ? AND status = 'succeeded'"
                " AND updates IS NOT NULL ORDER BY key", (self._key(run_id, snap), at)):
            data.update(json.loads(updates))
        calls = self._conn.execute(
            "SELECT payload FROM events WHERE key >= ? AND key < ? AND kind = ? AND step > ?"
            " AND step < ? ORDER BY key", (lo, lo + RUN_SPAN, EventKind.MODEL_CALL.value, snap,
                                           step))
        usage = with_calls(usage, (json.loads(p) for (p,) in calls))
        messages = tuple(Message.from_dict(_loads(b)) for (b,) in self._conn.execute(
            "SELECT body FROM messages WHERE key >= ? AND key < ? AND step < ? ORDER BY key",
            (lo, lo + RUN_SPAN, step)))
        state = self._state_name(run_id, step)
        return RunState(run_id, info.machine, state, step, messages, data, usage, "interrupted")

    def _state_name(self, run_id: str, step: int) -> str:
        """The state step ``step`` runs in: its own row's, else where the step before led."""
        row = self._conn.execute("SELECT state FROM steps WHERE key = ?",
                                 (self._key(run_id, step),)).fetchone()
        if row is None and step > 0:
            row = self._conn.execute("SELECT dest FROM steps WHERE key = ? AND status ="
                                     " 'succeeded'", (self._key(run_id, step - 1),)).fetchone()
        if row is None or row[0] is None:
            raise UsageError(f"run {run_id} has no step {step}")
        return str(row[0])

    @_guarded
    def fork_run(self, info: RunInfo, source: str, step: int) -> None:
        """``Store.fork_run``: the rows of ``source``'s steps before ``step``, copied under
        the new run's keys (a key is its run's number times ``RUN_SPAN`` plus the row's)."""
        with self._tx() as c:
            old = self._rid(source)
            if old is None:
                raise UnknownRunError(f"no run {source!r} in {self.path}")
            rid = c.execute("SELECT COALESCE(MAX(rid), 0) + 1 FROM runs").fetchone()[0]
            u = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
            c.execute(
                "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
                " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
                " cached_tokens, cost_usd, cost_known, config, error, rid, forked_from,"
                " fork_step) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,0,?,?,?,NULL,?,?,?)",
                (info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                 info.state, info.workspace, info.created_at, info.updated_at, info.steps,
                 u.input_tokens, u.output_tokens, u.cost_usd or 0.0, int(u.cost_usd is not None),
                 _dumps(dict(info.config)), rid, source, step))
            self._rids[info.run_id] = rid
            shift, lo = (rid - old) * RUN_SPAN, old * RUN_SPAN
            for table, columns, where in FORK_COPIES:
                bound = lo + step + 1 if where == "seq" else lo + RUN_SPAN
                extra = "" if where == "seq" else f" AND {where} < {int(step)}"
                c.execute(f"INSERT INTO {table} (key, run_id, {columns}) SELECT key + ?, ?,"
                          f" {columns} FROM {table} WHERE key >= ? AND key < ?{extra}",
                          (shift, info.run_id, lo, bound))
            for table, columns in FORK_BY_RUN:
                c.execute(f"INSERT INTO {table} (run_id, {columns}) SELECT ?, {columns}"
                          f" FROM {table} WHERE run_id = ? AND step < ?"
                          f"{' AND status != ' + repr('pending') if table == APPROVALS else ''}"
                          " ORDER BY rowid", (info.run_id, source, step))
            c.execute("INSERT INTO steps (key, run_id, seq, state, action, status, started_at,"
                      " note, plan) SELECT ?, ?, seq, state, action, 'interrupted', ?, ?, plan"
                      " FROM steps WHERE key = ?",
                      (row_key(rid, step), info.run_id, info.created_at,
                       f"forked from run {source} at step {step}", row_key(old, step)))

    # -- audit and effects --------------------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        try:  # guarded inline, as commit_step
            seq = self._next_seq(self._audit_seq, AUDIT, record.run_id)
            self._buffer(AUDIT_ROW, (
                self._key(record.run_id, seq), record.run_id, seq, record.step, record.call_id,
                record.tool, record.decision, record.risk, record.rule, record.reason,
                record.decided_by, record.args_digest, record.preview_digest, record.server,
                record.trust, record.at))
        except sqlite3.Error as exc:
            raise self._fault(exc, record.run_id) from exc

    @_guarded
    def audit(self, run_id: str) -> list[AuditRecord]:
        self.flush()
        rows = self._conn.execute(
            "SELECT run_id, step, call_id, tool, decision, risk, rule, reason, decided_by,"
            " args_digest, preview_digest, at, server, trust, seq FROM audit"
            " WHERE key >= ? AND key < ? ORDER BY key", self._span(run_id)).fetchall()
        return [AuditRecord(*r) for r in rows]

    def record_effect(self, effect: EffectRecord, *, durable: bool = False,
                      buffered: bool = False) -> None:
        """Upsert a ledger row: in its own transaction (synced when ``durable``), or, when
        ``buffered``, with the next transaction (for calls that resume simply runs again)."""
        params = (effect.run_id, effect.call_id, effect.step, effect.tool, effect.version,
                  effect.status, int(effect.idempotent), int(effect.side_effects),
                  _dumps_map(effect.args),
                  _dumps_map(effect.result) if effect.result is not None else None,
                  _dumps_map(effect.file) if effect.file is not None else None, effect.at)
        try:  # guarded inline, as commit_step
            if buffered and not durable:
                self._buffer(EFFECT_ROW, params)
            else:
                self._write([(EFFECT_ROW, params)], durable=durable)
        except sqlite3.Error as exc:
            raise self._fault(exc, effect.run_id) from exc

    @_guarded
    def effects(self, run_id: str, step: int | None = None) -> list[EffectRecord]:
        self.flush()
        sql = ("SELECT run_id, call_id, step, tool, version, status, idempotent, side_effects,"
               " args, at, result, file FROM effects WHERE run_id = ?")
        params: tuple[Any, ...] = (run_id,)
        if step is not None:
            sql, params = sql + " AND step = ?", (run_id, step)
        rows = self._conn.execute(sql + " ORDER BY rowid", params).fetchall()
        return [EffectRecord(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), bool(r[7]),
                             json.loads(r[8]), r[9], json.loads(r[10]) if r[10] else None,
                             json.loads(r[11]) if r[11] else None) for r in rows]

    # -- exported spans -----------------------------------------------------------------

    @_guarded
    def spans_sent(self, run_id: str) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT span_id FROM spans_sent WHERE run_id = ?", (run_id,))}

    @_guarded
    def mark_spans_sent(self, run_id: str, span_ids: Sequence[str], at: float) -> None:
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO spans_sent (run_id, span_id, at) VALUES (?,?,?)",
                          [(run_id, span_id, at) for span_id in span_ids])

    # -- parked approvals ---------------------------------------------------------------

    @_guarded
    def park_run(self, run_id: str, seq: int, requests: Sequence[ApprovalRequest], note: str,
                 at: float) -> None:
        """One transaction: the requests, the step ended ``approval_requested``, the run
        ``waiting_approval``. A request already there (a re-park) keeps its decision, unless
        it was made under another policy version: then it is asked again (``REOPEN``)."""
        self.append_event(run_id, seq, EventKind.APPROVAL_REQUESTED,
                          {"calls": [r.call_id for r in requests], "note": note}, at)
        with self._tx() as c:
            c.executemany(
                f"INSERT INTO {APPROVALS} (run_id, call_id, step, tool, args,"
                " args_hash, policy_version, preview, risk, rule, reason, capability,"
                " requested_at, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,'pending')" + REOPEN,
                [(r.run_id, r.call_id, r.step, r.tool, _dumps(dict(r.args)), r.args_hash,
                  r.policy_version, r.preview, r.risk, r.rule, r.reason, r.capability,
                  r.requested_at) for r in requests])
            c.execute("UPDATE steps SET status = 'approval_requested', note = ?, ended_at = ?"
                      " WHERE key = ? AND status = 'running'",
                      (note, at, self._key(run_id, seq)))
            c.execute("UPDATE runs SET status = 'waiting_approval', updated_at = ?"
                      " WHERE run_id = ?", (at, run_id))

    @_guarded
    def approval_requests(self, run_id: str | None = None, *,
                          pending_only: bool = True) -> list[ApprovalRequest]:
        sql = f"SELECT * FROM {APPROVALS} WHERE 1 = 1"
        params: list[Any] = []
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        if pending_only:
            sql += " AND status = 'pending'"
        cur = self._conn.execute(sql + " ORDER BY requested_at, rowid", params)
        cols = [d[0] for d in cur.description]
        return [_approval_row(dict(zip(cols, row, strict=True))) for row in cur.fetchall()]

    @_guarded
    def decide_approval(self, run_id: str, call_id: str, decision: ApprovalDecision,
                        audit: AuditRecord) -> ApprovalRequest:
        """Record a decision and its audit row at once; exactly one of two racing deciders
        wins (``BEGIN IMMEDIATE`` serialises them), the other gets ``DecisionRefusedError``."""
        with self._tx() as c:
            run = c.execute("SELECT status, lease_host, lease_pid, lease_nonce, lease_expires"
                            " FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if run is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.path}")
            lease = dict(zip(("lease_host", "lease_pid", "lease_nonce", "lease_expires"),
                             run[1:], strict=True))
            if run[0] not in ("waiting_approval", "interrupted", "running") or (
                    run[0] == "running" and self._lease_alive(lease)):
                raise DecisionRefusedError(
                    f"run {run_id} is not waiting for approval (it is {run[0]})")
            cur = c.execute(f"SELECT * FROM {APPROVALS} WHERE run_id = ? AND call_id = ?",
                            (run_id, call_id))
            row = cur.fetchone()
            if row is None:
                raise DecisionRefusedError(f"run {run_id} has no approval request for call "
                                           f"{call_id!r} (list them: "
                                           f"{command('approvals', store=self.location)})")
            req = _approval_row(dict(zip([d[0] for d in cur.description], row, strict=True)))
            if req.status != "pending":
                raise DecisionRefusedError(
                    f"call {call_id} of run {run_id} is not pending: already decided "
                    f"({req.status}) by {req.decided_by} via {req.channel}")
            if req.args_hash != decision.args_hash:
                raise DecisionRefusedError(
                    f"call {call_id} of run {run_id} changed since it was shown (arguments "
                    "hash mismatch); look at it again")
            c.execute(
                f"UPDATE {APPROVALS} SET status = ?, channel = ?, decided_by = ?,"
                " decided_at = ?, note = ?, always = ? WHERE run_id = ? AND call_id = ?"
                " AND status = 'pending'",
                (decision.decision, decision.channel, decision.who, decision.at, decision.note,
                 decision.always, run_id, call_id))
            seq = c.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM audit"
                            " WHERE key >= ? AND key < ?", self._span(run_id)).fetchone()[0]
            a = audit
            c.execute(
                "INSERT INTO audit (key, run_id, seq, step, call_id, tool, decision, risk,"
                " rule, reason, decided_by, args_digest, preview_digest, server, trust, at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (self._key(a.run_id, seq), a.run_id, seq, a.step, a.call_id, a.tool, a.decision,
                 a.risk, a.rule, a.reason, a.decided_by, a.args_digest, a.preview_digest,
                 a.server, a.trust, a.at))
        self._audit_seq.pop(run_id, None)
        return next(r for r in self.approval_requests(run_id, pending_only=False)
                    if r.call_id == call_id)

    @_guarded
    def row_counts(self, run_id: str) -> dict[str, int]:
        """Rows per table for one run (used by benchmarks and the closing numbers)."""
        self.flush()
        span = self._span(run_id)
        counts = {t: self._conn.execute(f"SELECT COUNT(*) FROM {t} WHERE key >= ? AND key < ?",
                                        span).fetchone()[0] for t in KEYED}
        counts[TRANSITIONS] = len(self.transitions(run_id))
        counts[EFFECTS] = self._conn.execute("SELECT COUNT(*) FROM effects WHERE run_id = ?",
                                             (run_id,)).fetchone()[0]
        return counts


def _execute(conn: sqlite3.Connection, statements: list[Statement]) -> None:
    """Run one transaction's statements, folded (``engine.store.deferred``): each row once,
    and a run of one statement as one ``executemany`` (``grouped``, done as it goes)."""
    last, rows = "", []
    for sql, params in fold(statements, FOLDS):
        if sql is last:
            rows.append(params)
            continue
        if len(rows) == 1:
            conn.execute(last, rows[0])
        elif rows:
            conn.executemany(last, rows)
        last, rows = sql, [params]
    if len(rows) == 1:
        conn.execute(last, rows[0])
    elif rows:
        conn.executemany(last, rows)


def _approval_row(r: dict[str, Any]) -> ApprovalRequest:
    """A row of ``approval_requests``; unreadable arguments read as a marker (never as {})."""
    try:
        args = json.loads(r["args"] or "{}")
    except ValueError:
        args = {"<unreadable>": True}
    return ApprovalRequest(
        run_id=r["run_id"], call_id=r["call_id"], step=r["step"], tool=r["tool"], args=args,
        args_hash=r["args_hash"] or "", policy_version=r["policy_version"] or "",
        preview=r["preview"] or "", risk=r["risk"] or "", rule=r["rule"],
        reason=r["reason"] or "", capability=r["capability"] or "",
        requested_at=r["requested_at"] or 0.0, status=r["status"], channel=r["channel"],
        decided_by=r["decided_by"], decided_at=r["decided_at"], note=r["note"] or "",
        always=r["always"])


WORKERS_PREFIX = "temporal:"
"""The lease host of a run held by its Temporal workflow's workers (``temporal.step``)."""


def lease_alive(r: Mapping[str, Any]) -> bool:
    """A lease holds while unexpired; on this host, only while its process exists. A lease of
    a workflow's workers on this host holds by its expiry while the worker that last took a
    step lives: once that process is gone, a local ``resume`` takes over at once."""
    if not r.get("lease_nonce"):
        return False
    host = r.get("lease_host")
    if host == socket.gethostname():
        return _pid_alive(r.get("lease_pid"))
    unexpired = (r.get("lease_expires") or 0.0) > time.time()
    if host == WORKERS_PREFIX + socket.gethostname():
        return unexpired and _pid_alive(r.get("lease_pid"))
    return unexpired


def shown_running(r: Mapping[str, Any]) -> bool:
    """Whether ``runs``/``show`` call a ``running`` row running (else ``crashed``). A lease of
    a workflow's workers holds here by its expiry alone: when the worker that took the last
    step dies, another worker takes the next one (a local ``resume`` may still take over at
    once: ``lease_alive`` decides that)."""
    if str(r.get("lease_host") or "").startswith(WORKERS_PREFIX):
        return bool(r.get("lease_nonce")) and (r.get("lease_expires") or 0.0) > time.time()
    return lease_alive(r)


def file_identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``path``; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) holds nothing
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
