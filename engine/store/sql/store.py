"""The store both databases share: every read and write whose SQL and logic are the same,
over the connection, transactions and row addresses each database's store provides.

``SqliteStore`` and ``PostgresStore`` extend ``SqlStore`` with what differs: opening and
migrating, the transaction (SQLite: ``BEGIN IMMEDIATE`` on one connection, with a synced
commit for durable rows; Postgres: a pipelined transaction, ``synchronous_commit``), how a
run's numbered rows are addressed (``_new``, ``_one``, ``_all``, ``_after``, ``_before``,
``_between``; ``engine.store.sql.statements``), a run's first row and a fork's copy, and how
a foreign error becomes a ``StoreError`` (``_fault``).

Every public method passes through ``guarded``: one call at a time where the store says so
(``_serial``), the connection made ready (``_ready``), a database error leaving as the
matching ``StoreError`` and a stored value the decoders cannot read as ``DamagedRowError``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

from engine.store.base import (
    ApprovalDecision,
    ApprovalRequest,
    AuditRecord,
    Checkpoint,
    EffectRecord,
    Event,
    LeaseOwner,
    StepBegin,
    StepCommit,
    merged_config,
    with_calls,
)
from engine.store.deferred import Statement, run_row_params
from engine.store.readback import DECODE_ERRORS, damaged_row
from engine.store.sql.rows import (
    KINDS,
    approval_row,
    dumps,
    dumps_map,
    lease_alive,
    loads,
    run_info,
)
from engine.store.sql.statements import Statements
from engine.vocabulary.errors import (
    DecisionRefusedError,
    LeaseHeldError,
    StoreError,
    UnknownRunError,
    UsageError,
)
from engine.vocabulary.events import EventKind, kind_of
from engine.vocabulary.hints import command
from engine.vocabulary.state import Message, RunInfo, RunState, RunStatus, StepRecord, Usage

EVENT_FLUSH_ROWS = 256
EVENT_FLUSH_S = 1.0
"""Buffered event and audit rows are written with the next transaction, or when this many are
waiting, or when the oldest has waited this long."""

_S = TypeVar("_S", bound="SqlStore")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """A public method of a store: serialised as the store says, its database's errors as
    ``StoreError``s (naming the run when the first argument is one, or has one)."""

    def guard(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._serial:
            try:
                self._ready()
                return method(self, *args, **kwargs)
            except self.FOREIGN as exc:
                first = args[0] if args else None
                run_id = first if isinstance(first, str) else getattr(first, "run_id", None)
                raise self._fault(exc, run_id) from exc
            except DECODE_ERRORS as exc:  # a stored value the decoders cannot read
                first = args[0] if args else None
                raise damaged_row(self.location, first if isinstance(first, str) else None,
                                  exc) from exc

    functools.update_wrapper(guard, method)
    return guard


class SqlStore:
    """A ``Store`` over SQL: what SQLite and PostgreSQL do alike (the module's docstring)."""

    FOREIGN: ClassVar[tuple[type[Exception], ...]] = ()
    """The database driver's errors, which ``guarded`` turns into ``StoreError``s."""
    SQL: ClassVar[Statements]
    """The statements in this database's dialect."""

    _conn: Any
    _serial: AbstractContextManager[Any]
    _pending: list[Statement]
    _pending_since: float
    _event_seq: dict[str, int]
    _audit_seq: dict[str, int]

    # -- what each database provides ------------------------------------------------------

    @property
    def location(self) -> str:
        """The store as hints and messages name it."""
        raise NotImplementedError

    def _ready(self) -> None:
        """Before each public call: the connection usable (Postgres reconnects)."""

    def _fault(self, exc: Any, run_id: str | None = None) -> StoreError:
        raise NotImplementedError

    def _tx(self, *, durable: bool = False) -> AbstractContextManager[Any]:
        """One write transaction carrying the buffered rows first; yields what executes."""
        raise NotImplementedError

    def _write(self, statements: list[Statement], *, durable: bool = False) -> None:
        """A transaction that writes the buffered rows, then ``statements`` (folded)."""
        raise NotImplementedError

    def _new(self, run_id: str, seq: int) -> tuple[Any, ...]:
        """The address parameters a numbered row's insert takes before ``run_id, seq``."""
        raise NotImplementedError

    def _one(self, run_id: str, seq: int) -> tuple[Any, ...]:
        """The parameters of ``Dialect.one``: row ``seq`` of a run."""
        raise NotImplementedError

    def _all(self, run_id: str) -> tuple[Any, ...]:
        """The parameters of ``Dialect.all``: every numbered row of a run."""
        raise NotImplementedError

    def _after(self, run_id: str, seq: int) -> tuple[Any, ...]:
        raise NotImplementedError

    def _before(self, run_id: str, seq: int) -> tuple[Any, ...]:
        raise NotImplementedError

    def _between(self, run_id: str, after: int, before: int) -> tuple[Any, ...]:
        raise NotImplementedError

    # -- buffered rows --------------------------------------------------------------------

    @guarded
    def flush(self) -> None:
        """Write buffered event and audit rows (and deferred steps) now."""
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

    # -- runs -----------------------------------------------------------------------------

    @guarded
    def get_run(self, run_id: str) -> RunInfo:
        row = self._conn.execute(self.SQL.run, (run_id,)).fetchone()
        if row is None:
            row = self._by_prefix(run_id)
        return run_info(row)

    def _by_prefix(self, prefix: str) -> tuple[Any, ...]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._conn.execute(self.SQL.runs_by_prefix, (pattern,)).fetchall() \
            if len(prefix) >= 4 else []
        if len(rows) == 1:
            return tuple(rows[0])
        if len(rows) > 1:
            raise UnknownRunError(f"run id prefix {prefix!r} is ambiguous; give more characters")
        raise UnknownRunError(
            f"no run {prefix!r} in {self.location} (list runs with: "
            f"{command('runs', store=self.location)})")

    @guarded
    def run_ids(self) -> list[str]:
        """Every run's id, oldest first, without decoding any row."""
        return [r[0] for r in self._conn.execute(self.SQL.run_ids).fetchall()]

    @guarded
    def list_runs(self) -> list[RunInfo]:
        return [run_info(r) for r in self._conn.execute(self.SQL.list_runs).fetchall()]

    @guarded
    def child_runs(self, run_id: str) -> list[RunInfo]:
        return [run_info(r)
                for r in self._conn.execute(self.SQL.child_runs, (run_id,)).fetchall()]

    @guarded
    def set_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None:
        with self._tx() as c:
            c.execute(self.SQL.set_status, (status, error, time.time(), run_id))

    @guarded
    def update_config(self, run_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        with self._tx() as c:
            row = c.execute(self.SQL.config, (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.location}")
            config = merged_config(loads(row[0] or "{}"), changes)
            c.execute(self.SQL.set_config, (dumps(config), time.time(), run_id))
        return config

    # -- leases ---------------------------------------------------------------------------

    @guarded
    def acquire_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        """The run's row, read in the write transaction (locked until commit), decides: one
        of two racing drivers wins."""
        with self._tx() as c:
            row = c.execute(self.SQL.lease, (run_id,)).fetchone()
            if row is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.location}")
            host, pid, nonce, expires = row
            held = {"lease_host": host, "lease_pid": pid, "lease_nonce": nonce,
                    "lease_expires": expires}
            if nonce and nonce != owner.nonce and self._lease_alive(held):
                raise LeaseHeldError(
                    f"run {run_id} is being driven by pid {pid} on {host}; wait for it to "
                    "finish or stop that process")
            c.execute(self.SQL.take_lease,
                      (owner.host, owner.pid, owner.nonce, time.time() + ttl_s, run_id))

    @guarded
    def renew_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None:
        with self._tx() as c:
            c.execute(self.SQL.renew_lease, (time.time() + ttl_s, run_id, owner.nonce))

    @guarded
    def release_lease(self, run_id: str, owner: LeaseOwner) -> None:
        with self._tx() as c:
            c.execute(self.SQL.release_lease, (run_id, owner.nonce))

    @staticmethod
    def _lease_alive(r: Mapping[str, Any]) -> bool:
        return lease_alive(r)

    # -- steps ----------------------------------------------------------------------------

    @guarded
    def begin_step(self, run_id: str, begin: StepBegin) -> None:
        self._write([self._begin_row(run_id, begin)])

    def _begin_row(self, run_id: str, b: StepBegin) -> Statement:
        return (self.SQL.step_begin, (*self._new(run_id, b.seq), run_id, b.seq, b.state,
                                      b.action, b.started_at,
                                      None if b.plan is None else dumps_map(b.plan)))

    @guarded
    def commit_step(self, run_id: str, commit: StepCommit, *, defer: bool = False) -> None:
        """One transaction; ``defer``: ride in the next one instead (``engine.store.deferred``:
        only for steps that are safe to run again after a crash)."""
        if defer:
            rows = self._pending
            if not rows:
                self._pending_since = time.monotonic()
        else:
            rows = []
        sql = self.SQL
        rows.append((sql.step_end, (commit.trigger, commit.dest, commit.ended_at, commit.note,
                                    dumps_map(commit.updates) if commit.updates else None,
                                    *self._one(run_id, commit.seq))))
        if commit.messages:
            self._message_rows(rows, run_id, commit.seq, commit.first_message_seq,
                               commit.messages)
        rows.append((sql.run_row, run_row_params(run_id, commit)))
        if commit.next_step is not None:
            rows.append(self._begin_row(run_id, commit.next_step))
        if commit.snapshot is not None:
            rows.append(self._checkpoint_row(commit.snapshot))
        if not defer:
            self._write(rows)

    @guarded
    def end_step(self, run_id: str, seq: int, status: str, note: str, at: float) -> None:
        with self._tx() as c:
            c.execute(self.SQL.step_stop, (status, note, at, *self._one(run_id, seq)))

    @guarded
    def steps(self, run_id: str) -> list[StepRecord]:
        rows = self._conn.execute(self.SQL.steps, self._all(run_id)).fetchall()
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
            s_plan(s, loads(plan) if plan else None)
            out.append(s)
        return out

    @guarded
    def transitions(self, run_id: str) -> list[tuple[int, str, str, str]]:
        return [tuple(r) for r in self._conn.execute(self.SQL.transitions, self._all(run_id))]

    # -- messages -------------------------------------------------------------------------

    def _message_rows(self, into: list[Statement], run_id: str, step: int, first: int,
                      messages: Sequence[Message]) -> None:
        """The rows of a step's new messages, numbered from ``first``, added to ``into``."""
        sql = self.SQL.message
        for i, m in enumerate(messages, first):
            into.append((sql, (*self._new(run_id, i), run_id, i, step, dumps(m.to_dict()))))

    @guarded
    def messages(self, run_id: str) -> list[Message]:
        return [Message.from_dict(loads(b))
                for (b,) in self._conn.execute(self.SQL.messages, self._all(run_id))]

    # -- events ---------------------------------------------------------------------------

    @guarded
    def append_event(self, run_id: str, step: int, kind: str, payload: Mapping[str, Any],
                     at: float) -> int:
        seq = self._event_seq.get(run_id)
        seq = self._next_seq(self._event_seq, "events", run_id) if seq is None else seq + 1
        self._event_seq[run_id] = seq
        self._buffer(self.SQL.event, (*self._new(run_id, seq), run_id, seq, step, str(kind),
                                      at, dumps_map(payload)))
        return seq

    def _next_seq(self, cache: dict[str, int], table: str, run_id: str) -> int:
        seq = cache.get(run_id)
        if seq is None:
            row = self._conn.execute(self.SQL.last_seq[table], self._all(run_id)).fetchone()
            seq = int(row[0]) if row else -1
        cache[run_id] = seq + 1
        return seq + 1

    @guarded
    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        self.flush()
        sql = self.SQL.events
        params: list[Any] = list(self._all(run_id))  # the exact run's: its id is run_id
        if kinds:
            sql += f" AND kind IN ({','.join([self.SQL.placeholder] * len(kinds))})"
            params.extend(str(k) for k in kinds)
        rows = self._conn.execute(sql + self.SQL.events_order, params).fetchall()
        known, new = KINDS, object.__new__
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
            s_payload(e, loads(payload))
            out.append(e)
        return out

    # -- checkpoints and resume -----------------------------------------------------------

    @guarded
    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._write([self._checkpoint_row(checkpoint)])

    def _checkpoint_row(self, cp: Checkpoint) -> Statement:
        u = cp.usage
        return (self.SQL.checkpoint, (
            *self._new(cp.run_id, cp.seq), cp.run_id, cp.seq, cp.state, cp.at,
            dumps_map(cp.data), cp.message_count,
            dumps([u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_usd])))

    @guarded
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self._conn.execute(self.SQL.checkpoints, self._all(run_id)).fetchall()
        return [Checkpoint(r[0], r[1], r[2], r[3], loads(r[4]), r[5], Usage(*loads(r[6])))
                for r in rows]

    @guarded
    def load_state(self, run_id: str) -> RunState:
        """The run as of its last committed step: last snapshot + later step deltas."""
        info = self.get_run(run_id)
        run_id = info.run_id
        row = self._conn.execute(self.SQL.last_checkpoint, self._all(run_id)).fetchone()
        snap_seq, data = (row[0], loads(row[1])) if row else (-1, {})
        for (updates,) in self._conn.execute(self.SQL.updates_after,
                                             self._after(run_id, snap_seq)).fetchall():
            data.update(loads(updates))
        usage = Usage(info.input_tokens, info.output_tokens, 0, info.cost_usd)
        return RunState(run_id, info.machine, info.state, info.steps,
                        tuple(self.messages(run_id)), data, usage, info.status)

    # -- forks ----------------------------------------------------------------------------

    @guarded
    def state_at(self, run_id: str, step: int) -> RunState:
        """The run as it stood when step ``step`` began (``Store.state_at``)."""
        info = self.get_run(run_id)
        run_id = info.run_id
        sql, every = self.SQL, self._all(run_id)
        row = self._conn.execute(sql.checkpoint_before, self._before(run_id, step)).fetchone()
        if row is None:
            raise UsageError(f"run {run_id} has no step {step}")
        snap, data, usage = row[0], loads(row[1]), Usage(*loads(row[2]))
        for (updates,) in self._conn.execute(sql.updates_between,
                                             self._between(run_id, snap, step)).fetchall():
            data.update(loads(updates))
        calls = self._conn.execute(sql.calls_between,
                                   (*every, EventKind.MODEL_CALL.value, snap, step)).fetchall()
        usage = with_calls(usage, (loads(p) for (p,) in calls))
        messages = tuple(Message.from_dict(loads(b)) for (b,) in self._conn.execute(
            sql.messages_before, (*every, step)).fetchall())
        state = self._state_name(run_id, step)
        return RunState(run_id, info.machine, state, step, messages, data, usage, "interrupted")

    def _state_name(self, run_id: str, step: int) -> str:
        """The state step ``step`` runs in: its own row's, else where the step before led."""
        row = self._conn.execute(self.SQL.step_state, self._one(run_id, step)).fetchone()
        if row is None and step > 0:
            row = self._conn.execute(self.SQL.step_dest,
                                     self._one(run_id, step - 1)).fetchone()
        if row is None or row[0] is None:
            raise UsageError(f"run {run_id} has no step {step}")
        return str(row[0])

    # -- audit and effects ----------------------------------------------------------------

    @guarded
    def record_audit(self, record: AuditRecord) -> None:
        r = record
        seq = self._next_seq(self._audit_seq, "audit", r.run_id)
        self._buffer(self.SQL.audit_row, (
            *self._new(r.run_id, seq), r.run_id, seq, r.step, r.call_id, r.tool, r.decision,
            r.risk, r.rule, r.reason, r.decided_by, r.args_digest, r.preview_digest, r.server,
            r.trust, r.at))

    @guarded
    def audit(self, run_id: str) -> list[AuditRecord]:
        self.flush()
        rows = self._conn.execute(self.SQL.audit, self._all(run_id)).fetchall()
        return [AuditRecord(*r) for r in rows]

    @guarded
    def record_effect(self, effect: EffectRecord, *, durable: bool = False,
                      buffered: bool = False) -> None:
        """Upsert a ledger row: in its own transaction (on disk before it returns when
        ``durable``), or, when ``buffered``, with the next transaction (for calls that resume
        simply runs again)."""
        e = effect
        params = (e.run_id, e.call_id, e.step, e.tool, e.version, e.status, int(e.idempotent),
                  int(e.side_effects), dumps_map(e.args),
                  dumps_map(e.result) if e.result is not None else None,
                  dumps_map(e.file) if e.file is not None else None, e.at)
        if buffered and not durable:
            self._buffer(self.SQL.effect, params)
        else:
            self._write([(self.SQL.effect, params)], durable=durable)

    @guarded
    def effects(self, run_id: str, step: int | None = None) -> list[EffectRecord]:
        self.flush()
        sql = self.SQL.effects
        params: tuple[Any, ...] = (run_id,)
        if step is not None:
            sql, params = sql + self.SQL.effects_of_step, (run_id, step)
        rows = self._conn.execute(sql + self.SQL.effects_order, params).fetchall()
        return [EffectRecord(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), bool(r[7]),
                             loads(r[8]), r[9], loads(r[10]) if r[10] else None,
                             loads(r[11]) if r[11] else None) for r in rows]

    # -- exported spans -------------------------------------------------------------------

    @guarded
    def spans_sent(self, run_id: str) -> set[str]:
        return {r[0] for r in self._conn.execute(self.SQL.spans_sent, (run_id,))}

    @guarded
    def mark_spans_sent(self, run_id: str, span_ids: Sequence[str], at: float) -> None:
        if not span_ids:
            return
        with self._tx() as c:
            c.executemany(self.SQL.mark_span, [(run_id, span_id, at) for span_id in span_ids])

    # -- parked approvals -----------------------------------------------------------------

    @guarded
    def park_run(self, run_id: str, seq: int, requests: Sequence[ApprovalRequest], note: str,
                 at: float) -> None:
        """One transaction: the requests, the step ended ``approval_requested``, the run
        ``waiting_approval``. A request already there (a re-park) keeps its decision, unless
        it was made under another policy version: then it is asked again."""
        self.append_event(run_id, seq, EventKind.APPROVAL_REQUESTED,
                          {"calls": [r.call_id for r in requests], "note": note}, at)
        with self._tx() as c:
            if requests:
                c.executemany(self.SQL.park, [
                    (r.run_id, r.call_id, r.step, r.tool, dumps(dict(r.args)), r.args_hash,
                     r.policy_version, r.preview, r.risk, r.rule, r.reason, r.capability,
                     r.requested_at) for r in requests])
            c.execute(self.SQL.step_parked, (note, at, *self._one(run_id, seq)))
            c.execute(self.SQL.run_parked, (at, run_id))

    @guarded
    def approval_requests(self, run_id: str | None = None, *,
                          pending_only: bool = True) -> list[ApprovalRequest]:
        sql = self.SQL.approvals
        params: tuple[Any, ...] = ()
        if run_id is not None:
            sql, params = sql + self.SQL.approvals_of_run, (run_id,)
        if pending_only:
            sql += self.SQL.approvals_pending
        rows = self._conn.execute(sql + self.SQL.approvals_order, params).fetchall()
        return [approval_row(r) for r in rows]

    @guarded
    def decide_approval(self, run_id: str, call_id: str, decision: ApprovalDecision,
                        audit: AuditRecord) -> ApprovalRequest:
        """Record a decision and its audit row at once; exactly one of two racing deciders
        wins (the transaction holds the run's row), the other gets ``DecisionRefusedError``."""
        sql = self.SQL
        with self._tx() as c:
            run = c.execute(sql.run_waiting, (run_id,)).fetchone()
            if run is None:
                raise UnknownRunError(f"no run {run_id!r} in {self.location}")
            self._refuse_undecidable(run_id, call_id, decision, run,
                                     c.execute(sql.approval, (run_id, call_id)).fetchone())
            c.execute(sql.decide, (decision.decision, decision.channel, decision.who,
                                   decision.at, decision.note, decision.always, run_id,
                                   call_id))
            got = c.execute(sql.next_audit_seq, self._all(run_id)).fetchone()
            seq, a = (got[0] if got else 0), audit
            c.execute(sql.audit_row, (
                *self._new(a.run_id, seq), a.run_id, seq, a.step, a.call_id, a.tool,
                a.decision, a.risk, a.rule, a.reason, a.decided_by, a.args_digest,
                a.preview_digest, a.server, a.trust, a.at))
        self._audit_seq.pop(run_id, None)
        return next(r for r in self.approval_requests(run_id, pending_only=False)
                    if r.call_id == call_id)

    def _refuse_undecidable(self, run_id: str, call_id: str, decision: ApprovalDecision,
                            run: Sequence[Any], row: Sequence[Any] | None) -> None:
        """``DecisionRefusedError`` unless the run waits and the call is pending as shown."""
        lease = dict(zip(("lease_host", "lease_pid", "lease_nonce", "lease_expires"),
                         run[1:], strict=True))
        if run[0] not in ("waiting_approval", "interrupted", "running") or (
                run[0] == "running" and self._lease_alive(lease)):
            raise DecisionRefusedError(
                f"run {run_id} is not waiting for approval (it is {run[0]})")
        if row is None:
            raise DecisionRefusedError(f"run {run_id} has no approval request for call "
                                       f"{call_id!r} (list them: "
                                       f"{command('approvals', store=self.location)})")
        req = approval_row(row)
        if req.status != "pending":
            raise DecisionRefusedError(
                f"call {call_id} of run {run_id} is not pending: already decided "
                f"({req.status}) by {req.decided_by} via {req.channel}")
        if req.args_hash != decision.args_hash:
            raise DecisionRefusedError(
                f"call {call_id} of run {run_id} changed since it was shown (arguments "
                "hash mismatch); look at it again")

