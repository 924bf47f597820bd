"""The SQLite schema: a new database made in one go (``NEW_DATABASE``), the migrations that
upgrade older ones (``MIGRATIONS``, through ``sqlite-utils``, imported only to migrate), and
the integer keys of a run's numbered rows (``row_key``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

SCHEMA_VERSION = 8
"""Bump with a new entry in ``MIGRATIONS``; a database with a newer version is refused."""

RUNS, STEPS, MESSAGES, TRANSITIONS, EVENTS = "runs", "steps", "messages", "transitions", "events"
CHECKPOINTS, AUDIT, EFFECTS, META = "checkpoints", "audit", "effects", "meta"
SPANS_SENT = "spans_sent"
APPROVALS = "approval_requests"


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
