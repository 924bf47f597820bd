"""The SQLite store: every run, step, message, event, checkpoint, audit row and effect, in one file.

The SQL it shares with Postgres is in ``engine.store.sql``; here is what only SQLite does:
the connection (``sqlite3``, with ``errors``, which turns its errors into ``StoreError``s), the
schema (``schema``), a run's numbered rows addressed by one integer key, the transactions,
a run's first row and a fork's copy. Only this package imports ``sqlite3``/``sqlite_utils``.
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

import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.store.base import Checkpoint, Durability, StepBegin
from engine.store.deferred import Statement, fold
from engine.store.sql.rows import BUSY_TIMEOUT_S, busy_timeout, dumps
from engine.store.sql.statements import FORK_COPIES, SQLITE, Statements
from engine.store.sql.store import SqlStore, guarded
from engine.store.sqlite.beside import side_files, stores_beside
from engine.store.sqlite.errors import (
    SQLITE_BUSY,
    is_corrupt,
    needs_immutable,
    primary_code,
    translate,
    translate_os,
)
from engine.store.sqlite.schema import (
    AUDIT,
    CHECKPOINTS,
    EFFECTS,
    EVENTS,
    KEYED,
    MESSAGES,
    MIGRATIONS,
    NEW_DATABASE,
    RUN_SPAN,
    RUNS,
    SCHEMA_VERSION,
    STEPS,
    TRANSITIONS,
    row_key,
)
from engine.vocabulary import held_files
from engine.vocabulary.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    StoreReplacedError,
    StoreSchemaError,
    UnknownRunError,
)
from engine.vocabulary.hints import command
from engine.vocabulary.state import RunInfo, RunState, Usage

if TYPE_CHECKING:
    import sqlite_utils

logger = logging.getLogger(__name__)

SQL = Statements(SQLITE)
"""The shared statements in SQLite's dialect."""
RUN_ROW, STEP_BEGIN, STEP_END, STEP_WHOLE = SQL.run_row, SQL.step_begin, SQL.step_end, \
    SQL.step_whole
EFFECT_ROW, EVENT_ROW, FOLDS = SQL.effect, SQL.event, SQL.folds
"""The statements a step writes (the fold's tests name them)."""

NEW_RUN = (
    "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
    " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
    " cached_tokens, cost_usd, cost_known, config, error, rid, parent_run_id,"
    " parent_step) VALUES (?,?,?,?,?,?,?,?,?,0,0,0,0,0,1,?,NULL,?,?,?)")
"""A run's row, numbered ``rid`` (the high part of its rows' keys)."""
FORKED_RUN = (
    "INSERT INTO runs (run_id, machine, machine_path, machine_hash, status, state,"
    " workspace, created_at, updated_at, steps, input_tokens, output_tokens,"
    " cached_tokens, cost_usd, cost_known, config, error, rid, forked_from,"
    " fork_step) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,0,?,?,?,NULL,?,?,?)")
NEXT_RID = "SELECT COALESCE(MAX(rid), 0) + 1 FROM runs"


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


def file_identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``path``; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class SqliteStore(SqlStore):
    """A ``Store`` on one SQLite file."""

    FOREIGN = (sqlite3.Error,)
    SQL = SQL
    _serial = nullcontext()
    """One connection, shared by the runner's threads: SQLite serialises its calls itself."""

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

    def private_files(self) -> list[str]:
        """What a sandboxed command must not see: this database, the other stores in its
        folder (``beside``), and the files SQLite keeps beside each."""
        stores = dict.fromkeys([self.path, *stores_beside(self.path)])
        return [f for db in stores for f in side_files(db)]

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

    @guarded
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
        """Create or upgrade the schema; the current version costs two reads and no lock."""
        version = self._user_version()
        self._refuse_triggers()
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

    def _refuse_triggers(self) -> None:
        """The engine makes no trigger: one in the file was put there by someone else (a
        command that planted a database where the next run looks), and would run SQL on every
        write, a stored policy's rewrite included."""
        found = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' LIMIT 1").fetchone()
        if found is not None:
            raise StoreError(
                f"{self.path}: holds a trigger ({found[0]}) the engine never makes: the file "
                "may have been planted by a command run here; move it aside or use another "
                "--db")

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

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._conn.close()
            if self._held:
                self._held = False
                held_files.release(self.path)

    @guarded
    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None:
        with self._tx() as c:
            rid = c.execute(NEXT_RID).fetchone()[0]
            c.execute(NEW_RUN, (info.run_id, info.machine, info.machine_path, info.machine_hash,
                                info.status, info.state, info.workspace, info.created_at,
                                info.updated_at, dumps(dict(info.config)), rid,
                                info.parent_run_id, info.parent_step))
            self._rids[info.run_id] = rid
            rows = [self._checkpoint_row(Checkpoint(info.run_id, -1, state.state,
                                                    info.created_at, state.data,
                                                    len(state.messages), state.usage))]
            self._message_rows(rows, info.run_id, -1, 0, state.messages)
            rows.append(self._begin_row(info.run_id, first))
            _execute(c, rows)

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

    # the addresses of ``engine.store.sql.statements.SQLITE``: keys

    def _new(self, run_id: str, seq: int) -> tuple[int]:
        return ((self._bases.get(run_id) or self._base(run_id)) + seq,)

    _one = _new

    def _all(self, run_id: str) -> tuple[int, int]:
        return self._span(run_id)

    def _after(self, run_id: str, seq: int) -> tuple[int, int]:
        return self._key(run_id, seq), self._span(run_id)[1]

    def _before(self, run_id: str, seq: int) -> tuple[int, int]:
        return self._span(run_id)[0], self._key(run_id, seq)

    def _between(self, run_id: str, after: int, before: int) -> tuple[int, int]:
        return self._key(run_id, after), self._key(run_id, before)

    @guarded
    def fork_run(self, info: RunInfo, source: str, step: int) -> None:
        """``Store.fork_run``: the rows of ``source``'s steps before ``step``, copied under
        the new run's keys (a key is its run's number times ``RUN_SPAN`` plus the row's)."""
        with self._tx() as c:
            old = self._rid(source)
            if old is None:
                raise UnknownRunError(f"no run {source!r} in {self.path}")
            rid = c.execute(NEXT_RID).fetchone()[0]
            u = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
            c.execute(FORKED_RUN, (
                info.run_id, info.machine, info.machine_path, info.machine_hash, info.status,
                info.state, info.workspace, info.created_at, info.updated_at, info.steps,
                u.input_tokens, u.output_tokens, u.cost_usd or 0.0, int(u.cost_usd is not None),
                dumps(dict(info.config)), rid, source, step))
            self._rids[info.run_id] = rid
            shift, lo = (rid - old) * RUN_SPAN, old * RUN_SPAN
            for table, columns, where in FORK_COPIES:
                decided = " AND status != 'pending'" if table == "approval_requests" else ""
                if table not in KEYED:
                    c.execute(f"INSERT INTO {table} (run_id, {columns}) SELECT ?, {columns}"
                              f" FROM {table} WHERE run_id = ? AND {where} < ?{decided}"
                              " ORDER BY rowid", (info.run_id, source, step))
                    continue
                bound = lo + step + 1 if where == "seq" else lo + RUN_SPAN
                extra = "" if where == "seq" else f" AND {where} < {int(step)}"
                c.execute(f"INSERT INTO {table} (key, run_id, {columns}) SELECT key + ?, ?,"
                          f" {columns} FROM {table} WHERE key >= ? AND key < ?{extra}",
                          (shift, info.run_id, lo, bound))
            c.execute("INSERT INTO steps (key, run_id, seq, state, action, status, started_at,"
                      " note, plan) SELECT ?, ?, seq, state, action, 'interrupted', ?, ?, plan"
                      " FROM steps WHERE key = ?",
                      (row_key(rid, step), info.run_id, info.created_at,
                       f"forked from run {source} at step {step}", row_key(old, step)))

    @guarded
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


