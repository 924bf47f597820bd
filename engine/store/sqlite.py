"""The SQLite store: every run, step, message, event, checkpoint, audit row and effect, in one file.

The only module that imports ``sqlite3``/``sqlite_utils``. ``sqlite-utils`` owns the schema and
migrations; the per-step path uses constant SQL through one connection, one transaction per
step, because ``Table.insert`` introspects the table on every call (5x slower, DESIGN 4).
WAL with ``synchronous=NORMAL`` survives a killed process; intent rows of effects that are not
idempotent are committed with ``synchronous=FULL`` so a power loss cannot hide them either.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from engine.errors import LeaseHeldError, StoreError, UnknownRunError
from engine.state import Message, RunInfo, RunState, RunStatus, StepRecord, Usage
from engine.store.base import (
    AuditRecord,
    Checkpoint,
    Durability,
    EffectRecord,
    Event,
    LeaseOwner,
    StepBegin,
    StepCommit,
)
from engine.store.deferred import Recorder

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 3
"""Bump with a new entry in ``MIGRATIONS``; a database with a newer version is refused."""

RUNS, STEPS, MESSAGES, TRANSITIONS, EVENTS = "runs", "steps", "messages", "transitions", "events"
CHECKPOINTS, AUDIT, EFFECTS, META = "checkpoints", "audit", "effects", "meta"
SPANS_SENT = "spans_sent"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


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


MIGRATIONS = {1: _schema_v1, 2: _schema_v2, 3: _schema_v3}

EVENT_FLUSH_ROWS = 256
EVENT_FLUSH_S = 1.0
"""Buffered event and audit rows are written with the next transaction, or when this many are
waiting, or when the oldest has waited this long."""


def connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode with WAL; transactions are explicit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=10.0,
                           check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    return conn


class SqliteStore:
    """A ``Store`` on one SQLite file."""

    def __init__(self, path: Path | str, *, durability: Durability = "normal") -> None:
        self.path = Path(path)
        self.durability = durability
        self._pending: list[tuple[str, tuple[Any, ...]]] = []
        self._pending_since = 0.0
        try:
            self._conn = connect(self.path)
            self._db = sqlite_utils.Database(self._conn)
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable Turnstile database ({exc})") from exc
        if durability == "full":
            self._conn.execute("PRAGMA synchronous=FULL")
        self._event_seq: dict[str, int] = {}
        self._audit_seq: dict[str, int] = {}

    # -- schema -------------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database schema version {version} is newer than this Turnstile "
                f"({SCHEMA_VERSION}); upgrade Turnstile or use another --db"
            )
        if version == 0 and self._db.table_names() and RUNS not in self._db.table_names():
            raise StoreError(f"{self.path}: not a Turnstile database (unknown tables)")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._tx():
                MIGRATIONS[target](self._db)
                self._conn.execute(f"PRAGMA user_version={target}")

    @contextmanager
    def _tx(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        if durable and self.durability != "full":
            conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        pending, self._pending = self._pending, []
        try:
            for sql, params in pending:
                conn.execute(sql, params)
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            self._pending = pending + self._pending
            raise
        else:
            conn.execute("COMMIT")
        finally:
            if durable and self.durability != "full":
                conn.execute("PRAGMA synchronous=NORMAL")

    @contextmanager
    def _deferred(self) -> Iterator[Any]:
        """A connection stand-in whose statements join the buffered rows, in order."""
        if not self._pending:
            self._pending_since = time.monotonic()
        yield Recorder(self._pending)

    def flush(self) -> None:
        """Write buffered event and audit rows now."""
        if self._pending:
            with self._tx():
                pass

    def _buffer(self, sql: str, params: tuple[Any, ...]) -> None:
        """Queue a row for the next transaction: events ride with the step they belong to."""
        now = time.monotonic()
        if not self._pending:
            self._pending_since = now
        self._pending.append((sql, params))
        if len(self._pending) >= EVENT_FLUSH_ROWS or now - self._pending_since > EVENT_FLUSH_S:
            self.flush()

    def close(self) -> None:
        self.flush()
        self._conn.close()

    # -- runs ---------------------------------------------------------------------------

    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
                " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
                " cached_tokens, cost_usd, cost_known, config, error)"
                " VALUES (?,?,?,?,?,?,?,?,?,0,0,0,0,0,1,?,NULL)",
                (info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                 info.state, info.workspace, info.created_at, info.updated_at,
                 _dumps(dict(info.config))),
            )
            self._insert_checkpoint(c, Checkpoint(info.run_id, -1, state.state, info.created_at,
                                                  state.data, len(state.messages), state.usage))
            self._insert_messages(c, info.run_id, -1, 0, state.messages)
            self._insert_begin(c, info.run_id, first)

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
            f"no run {prefix!r} in {self.path} (list runs with: python -m engine runs)"
        )

    def list_runs(self) -> list[RunInfo]:
        rows = self._conn.execute("SELECT * FROM runs ORDER BY created_at, rowid").fetchall()
        return [self._run_info(r) for r in rows]

    def _run_info(self, row: Sequence[Any]) -> RunInfo:
        r = dict(zip(self._run_columns(), row, strict=True))
        status: RunStatus = r["status"]
        if status == "running" and not self._lease_alive(r):
            status = "crashed"
        return RunInfo(
            run_id=r["run_id"], machine=r["machine"], machine_path=r["machine_path"] or "",
            machine_hash=r["machine_hash"] or "", status=status, state=r["state"],
            workspace=r["workspace"] or "", created_at=r["created_at"],
            updated_at=r["updated_at"], steps=r["steps"], input_tokens=r["input_tokens"],
            output_tokens=r["output_tokens"],
            cost_usd=r["cost_usd"] if r["cost_known"] else None,
            config=json.loads(r["config"] or "{}"), error=r["error"],
        )

    def _run_columns(self) -> list[str]:
        cols = getattr(self, "_cols", None)
        if cols is None:
            cols = [c[1] for c in self._conn.execute("PRAGMA table_info(runs)")]
            self._cols = cols
        return cols

    def set_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?",
                      (status, error, time.time(), run_id))

    # -- leases -------------------------------------------------------------------------

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

    def renew_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_nonce = ?",
                      (time.time() + ttl_s, run_id, owner.nonce))

    def release_lease(self, run_id: str, owner: LeaseOwner) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET lease_host = NULL, lease_pid = NULL, lease_nonce = NULL,"
                " lease_expires = NULL WHERE run_id = ? AND lease_nonce = ?",
                (run_id, owner.nonce))

    @staticmethod
    def _lease_alive(r: Mapping[str, Any]) -> bool:
        """A lease holds while unexpired; on this host, only while its process exists."""
        if not r.get("lease_nonce"):
            return False
        if r.get("lease_host") == socket.gethostname():
            return _pid_alive(r.get("lease_pid"))
        return (r.get("lease_expires") or 0.0) > time.time()

    # -- steps --------------------------------------------------------------------------

    def begin_step(self, run_id: str, begin: StepBegin) -> None:
        with self._tx() as c:
            self._insert_begin(c, run_id, begin)

    def _insert_begin(self, c: sqlite3.Connection, run_id: str, b: StepBegin) -> None:
        c.execute(
            "INSERT INTO steps (run_id, seq, state, action, status, started_at, plan)"
            " VALUES (?,?,?,?,'running',?,?) ON CONFLICT(run_id, seq) DO UPDATE SET"
            " status = 'running', started_at = excluded.started_at, plan = excluded.plan"
            " WHERE status != 'succeeded'",
            (run_id, b.seq, b.state, b.action, b.started_at,
             _dumps(dict(b.plan)) if b.plan is not None else None))

    def commit_step(self, run_id: str, commit: StepCommit, *, defer: bool = False) -> None:
        """One transaction; ``defer``: ride in the next one instead (``engine.store.deferred``:
        only for steps that are safe to run again after a crash)."""
        u = commit.usage
        with self._deferred() if defer else self._tx() as c:
            c.execute(
                "UPDATE steps SET status = 'succeeded', trigger = ?, dest = ?, ended_at = ?,"
                " note = ?, updates = ? WHERE run_id = ? AND seq = ?",
                (commit.trigger, commit.dest, commit.ended_at, commit.note,
                 _dumps(dict(commit.updates)) if commit.updates else None, run_id, commit.seq))
            c.execute(
                "INSERT OR IGNORE INTO transitions (run_id, seq, src, trigger, dest, at)"
                " VALUES (?,?,?,?,?,?)",
                (run_id, commit.seq, commit.state, commit.trigger, commit.dest, commit.ended_at))
            self._insert_messages(c, run_id, commit.seq, commit.first_message_seq,
                                  commit.messages)
            c.execute(
                "UPDATE runs SET state = ?, steps = ?, status = ?, updated_at = ?,"
                " input_tokens = ?, output_tokens = ?, cached_tokens = ?, cost_usd = ?,"
                " cost_known = ? WHERE run_id = ?",
                (commit.dest, commit.seq + 1, commit.status, commit.ended_at, u.input_tokens,
                 u.output_tokens, u.cached_tokens, u.cost_usd or 0.0,
                 0 if u.cost_usd is None else 1, run_id))
            if commit.next_step is not None:
                self._insert_begin(c, run_id, commit.next_step)
            if commit.snapshot is not None:
                self._insert_checkpoint(c, commit.snapshot)

    def end_step(self, run_id: str, seq: int, status: str, note: str, at: float) -> None:
        with self._tx() as c:
            c.execute("UPDATE steps SET status = ?, note = ?, ended_at = ? WHERE run_id = ?"
                      " AND seq = ? AND status = 'running'", (status, note, at, run_id, seq))

    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._conn.execute(
            "SELECT run_id, seq, state, action, status, trigger, dest, started_at, ended_at,"
            " note, plan FROM steps WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        return [StepRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or "",
                           json.loads(r[10]) if r[10] else None) for r in rows]

    def transitions(self, run_id: str) -> list[tuple[int, str, str, str]]:
        return [tuple(r) for r in self._conn.execute(  # type: ignore[misc]
            "SELECT seq, src, trigger, dest FROM transitions WHERE run_id = ? ORDER BY seq",
            (run_id,))]

    # -- messages -----------------------------------------------------------------------

    @staticmethod
    def _insert_messages(c: sqlite3.Connection, run_id: str, step: int, first: int,
                         messages: Sequence[Message]) -> None:
        if messages:
            c.executemany(
                "INSERT OR IGNORE INTO messages (run_id, seq, step, body) VALUES (?,?,?,?)",
                [(run_id, first + i, step, _dumps(m.to_dict())) for i, m in enumerate(messages)])

    def messages(self, run_id: str) -> list[Message]:
        return [Message.from_dict(json.loads(b)) for (b,) in self._conn.execute(
            "SELECT body FROM messages WHERE run_id = ? ORDER BY seq", (run_id,))]

    # -- events -------------------------------------------------------------------------

    def append_event(self, run_id: str, step: int, kind: str, payload: Mapping[str, Any],
                     at: float) -> int:
        seq = self._next_seq(self._event_seq, EVENTS, run_id)
        self._buffer(
            "INSERT INTO events (run_id, seq, step, kind, at, payload) VALUES (?,?,?,?,?,?)",
            (run_id, seq, step, kind, at, _dumps(dict(payload))))
        return seq

    def _next_seq(self, cache: dict[str, int], table: str, run_id: str) -> int:
        seq = cache.get(run_id)
        if seq is None:
            row = self._conn.execute(
                f"SELECT COALESCE(MAX(seq), -1) FROM {table} WHERE run_id = ?", (run_id,)
            ).fetchone()
            seq = row[0]
        cache[run_id] = seq + 1
        return seq + 1

    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        self.flush()
        sql = "SELECT run_id, seq, step, kind, at, payload FROM events WHERE run_id = ?"
        params: list[Any] = [run_id]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        rows = self._conn.execute(sql + " ORDER BY seq", params).fetchall()
        return [Event(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    # -- checkpoints and resume ---------------------------------------------------------

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._tx() as c:
            self._insert_checkpoint(c, checkpoint)

    @staticmethod
    def _insert_checkpoint(c: sqlite3.Connection, cp: Checkpoint) -> None:
        u = cp.usage
        c.execute(
            "INSERT OR REPLACE INTO checkpoints (run_id, seq, state, at, data, message_count,"
            " usage) VALUES (?,?,?,?,?,?,?)",
            (cp.run_id, cp.seq, cp.state, cp.at, _dumps(dict(cp.data)), cp.message_count,
             _dumps([u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_usd])))

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self._conn.execute(
            "SELECT run_id, seq, state, at, data, message_count, usage FROM checkpoints"
            " WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        return [Checkpoint(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5],
                           Usage(*json.loads(r[6]))) for r in rows]

    def load_state(self, run_id: str) -> RunState:
        """The run as of its last committed step: last snapshot + later step deltas."""
        info = self.get_run(run_id)
        run_id = info.run_id
        row = self._conn.execute(
            "SELECT seq, data FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            (run_id,)).fetchone()
        snap_seq, data = (row[0], json.loads(row[1])) if row else (-1, {})
        for (updates,) in self._conn.execute(
            "SELECT updates FROM steps WHERE run_id = ? AND seq > ? AND status = 'succeeded'"
            " AND updates IS NOT NULL ORDER BY seq", (run_id, snap_seq)):
            data.update(json.loads(updates))
        usage = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
        return RunState(run_id, info.machine, info.state, info.steps,
                        tuple(self.messages(run_id)), data, usage, info.status)

    # -- audit and effects --------------------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        seq = self._next_seq(self._audit_seq, AUDIT, record.run_id)
        self._buffer(
            "INSERT INTO audit (run_id, seq, step, call_id, tool, decision, risk, rule, reason,"
            " decided_by, args_digest, preview_digest, server, trust, at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (record.run_id, seq, record.step, record.call_id, record.tool, record.decision,
             record.risk, record.rule, record.reason, record.decided_by, record.args_digest,
             record.preview_digest, record.server, record.trust, record.at))

    def audit(self, run_id: str) -> list[AuditRecord]:
        self.flush()
        rows = self._conn.execute(
            "SELECT run_id, step, call_id, tool, decision, risk, rule, reason, decided_by,"
            " args_digest, preview_digest, at, server, trust, seq FROM audit WHERE run_id = ?"
            " ORDER BY seq", (run_id,)).fetchall()
        return [AuditRecord(*r) for r in rows]

    def record_effect(self, effect: EffectRecord, *, durable: bool = False,
                      buffered: bool = False) -> None:
        """Upsert a ledger row: in its own transaction (synced when ``durable``), or, when
        ``buffered``, with the next transaction (for calls that resume simply runs again)."""
        sql = (
            "INSERT INTO effects (run_id, call_id, step, tool, version, status, idempotent,"
                " side_effects, args, result, file, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(run_id, call_id) DO UPDATE SET status = excluded.status,"
                " result = COALESCE(excluded.result, result), file = COALESCE(excluded.file,"
                " file), at = excluded.at")
        params = (effect.run_id, effect.call_id, effect.step, effect.tool, effect.version,
                  effect.status, int(effect.idempotent), int(effect.side_effects),
                  _dumps(dict(effect.args)),
                  _dumps(dict(effect.result)) if effect.result is not None else None,
                  _dumps(dict(effect.file)) if effect.file is not None else None, effect.at)
        if buffered and not durable:
            self._buffer(sql, params)
            return
        with self._tx(durable=durable) as c:
            c.execute(sql, params)

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

    def spans_sent(self, run_id: str) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT span_id FROM spans_sent WHERE run_id = ?", (run_id,))}

    def mark_spans_sent(self, run_id: str, span_ids: Sequence[str], at: float) -> None:
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO spans_sent (run_id, span_id, at) VALUES (?,?,?)",
                          [(run_id, span_id, at) for span_id in span_ids])

    def row_counts(self, run_id: str) -> dict[str, int]:
        """Rows per table for one run (used by benchmarks and the closing numbers)."""
        self.flush()
        return {t: self._conn.execute(f"SELECT COUNT(*) FROM {t} WHERE run_id = ?",
                                      (run_id,)).fetchone()[0]
                for t in (STEPS, MESSAGES, TRANSITIONS, EVENTS, CHECKPOINTS, AUDIT, EFFECTS)}


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
