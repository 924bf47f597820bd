"""The SQL both stores send, written once: each statement in the shared text, made into one
database's dialect by ``Statements(dialect)``.

The two databases keep the same tables and columns, and differ in a few places, each named by a
field of ``Dialect``: the parameter placeholder (``?``, ``%s``); how a run's numbered rows
(steps, messages, events, checkpoints, audit) are addressed (SQLite: one integer ``key``,
the run's number times ``RUN_SPAN`` plus the row's ``seq``; Postgres: ``(run_id, seq)``);
the column giving the order rows arrived in (``rowid``, ``ord``); locking a row read in a
write transaction (SQLite's ``BEGIN IMMEDIATE`` already holds the database; Postgres
``FOR UPDATE``); and comparing a value that may be NULL (``IS NOT``, ``IS DISTINCT FROM``).
Writing a run's numbered rows takes the row's address first (``Dialect.new``), a statement
naming one row takes it last (``Dialect.one``); ``SqlStore`` supplies both.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store.deferred import Folds, run_row_sql
from engine.store.sql.rows import APPROVAL_COLUMNS, RUN_COLUMNS


@dataclass(frozen=True, slots=True)
class Dialect:
    """Where one database's SQL differs from the other's (the module's docstring)."""

    name: str
    placeholder: str
    """The DB-API parameter marker."""
    new: str
    """The address columns a numbered row's insert names before ``run_id, seq`` (with a
    trailing comma), and ``new_values`` their placeholders."""
    new_values: str
    address: str
    """The columns that make a numbered row unique (an upsert's conflict target)."""
    one: str
    """One numbered row of a run (its address, as parameters)."""
    all: str
    """All of a run's numbered rows."""
    after: str
    """A run's numbered rows after a ``seq``."""
    before: str
    """A run's numbered rows before a ``seq``."""
    between: str
    """A run's numbered rows after one ``seq`` and before another."""
    order: str
    """The order of a run's numbered rows."""
    arrival: str
    """The order rows of ``runs``, ``effects`` and ``approval_requests`` arrived in."""
    lock: str
    """Appended to a read whose row the transaction goes on to write."""
    distinct: str
    """``a {distinct} b``: true when they differ, NULL counting as a value."""

    def sql(self, text: str) -> str:
        """``text`` (written with ``?`` and this class's fields in braces) in this dialect."""
        fields = {f: getattr(self, f) for f in self.__slots__ if f != "placeholder"}
        out = text.format(**fields)
        return out if self.placeholder == "?" else out.replace("?", self.placeholder)


SQLITE = Dialect(
    name="sqlite", placeholder="?", new="key, ", new_values="?,", address="key",
    one="key = ?", all="key >= ? AND key < ?", after="key > ? AND key < ?",
    before="key >= ? AND key < ?", between="key > ? AND key < ?", order="key",
    arrival="rowid", lock="", distinct="IS NOT")
POSTGRES = Dialect(
    name="postgres", placeholder="%s", new="", new_values="", address="run_id, seq",
    one="run_id = ? AND seq = ?", all="run_id = ?", after="run_id = ? AND seq > ?",
    before="run_id = ? AND seq < ?", between="run_id = ? AND seq > ? AND seq < ?",
    order="seq", arrival="ord", lock=" FOR UPDATE", distinct="IS DISTINCT FROM")

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
"""What a fork copies of a run's rows: (table, its columns but ``run_id``, the column below the
fork's step: ``seq``, a step's own number, or ``step``, the step a row belongs to); of the
approval requests, the decided ones only."""

_RUNS = ", ".join(RUN_COLUMNS)
_APPROVALS = ", ".join(APPROVAL_COLUMNS)


class Statements:
    """Every statement both stores send, in one dialect (built once per store class)."""

    def __init__(self, d: Dialect) -> None:
        s = d.sql
        self.placeholder = d.placeholder
        # -- runs
        self.run = s(f"SELECT {_RUNS} FROM runs WHERE run_id = ?")
        self.runs_by_prefix = s(f"SELECT {_RUNS} FROM runs WHERE run_id LIKE ? ESCAPE '\\'"
                                " ORDER BY run_id LIMIT 2")
        self.run_ids = s("SELECT run_id FROM runs ORDER BY created_at, {arrival}")
        self.list_runs = s(f"SELECT {_RUNS} FROM runs ORDER BY created_at, {{arrival}}")
        self.child_runs = s(f"SELECT {_RUNS} FROM runs WHERE parent_run_id = ?"
                            " ORDER BY created_at, {arrival}")
        self.set_status = s("UPDATE runs SET status = ?, error = ?, updated_at = ?"
                            " WHERE run_id = ?")
        self.config = s("SELECT config FROM runs WHERE run_id = ?{lock}")
        self.set_config = s("UPDATE runs SET config = ?, updated_at = ? WHERE run_id = ?")
        self.run_row = run_row_sql(d.placeholder)
        # -- leases
        self.lease = s("SELECT lease_host, lease_pid, lease_nonce, lease_expires FROM runs"
                       " WHERE run_id = ?{lock}")
        self.take_lease = s("UPDATE runs SET lease_host = ?, lease_pid = ?, lease_nonce = ?,"
                            " lease_expires = ?, status = 'running' WHERE run_id = ?")
        self.renew_lease = s("UPDATE runs SET lease_expires = ? WHERE run_id = ?"
                             " AND lease_nonce = ?")
        self.release_lease = s("UPDATE runs SET lease_host = NULL, lease_pid = NULL,"
                               " lease_nonce = NULL, lease_expires = NULL WHERE run_id = ?"
                               " AND lease_nonce = ?")
        # -- steps
        self.step_begin = s(
            "INSERT INTO steps ({new}run_id, seq, state, action, status, started_at, plan)"
            " VALUES ({new_values}?,?,?,?,'running',?,?) ON CONFLICT ({address}) DO UPDATE SET"
            " status = 'running', started_at = excluded.started_at, plan = excluded.plan"
            " WHERE steps.status != 'succeeded'")
        """A step's pre-checkpoint (a step begun again after a crash takes a new start and
        plan)."""
        self.step_end = s("UPDATE steps SET status = 'succeeded', trigger = ?, dest = ?,"
                          " ended_at = ?, note = ?, updates = ? WHERE {one}")
        """A step's commit: it ``succeeded``, and the transition it took."""
        self.step_whole = s(
            "INSERT INTO steps ({new}run_id, seq, state, action, status, started_at, plan,"
            " trigger, dest, ended_at, note, updates)"
            " VALUES ({new_values}?,?,?,?,'succeeded',?,?,?,?,?,?,?)"
            " ON CONFLICT ({address}) DO UPDATE SET status = 'succeeded',"
            " started_at = CASE WHEN steps.status = 'succeeded' THEN steps.started_at"
            " ELSE excluded.started_at END,"
            " plan = CASE WHEN steps.status = 'succeeded' THEN steps.plan ELSE excluded.plan END,"
            " trigger = excluded.trigger, dest = excluded.dest, ended_at = excluded.ended_at,"
            " note = excluded.note, updates = excluded.updates")
        """``step_begin`` then ``step_end`` of one step as one statement (both in one
        transaction: ``engine.store.deferred``)."""
        self.step_stop = s("UPDATE steps SET status = ?, note = ?, ended_at = ? WHERE {one}"
                           " AND status = 'running'")
        self.steps = s("SELECT seq, state, action, status, trigger, dest, started_at, ended_at,"
                       " note, plan FROM steps WHERE {all} ORDER BY {order}")
        self.transitions = s("SELECT seq, state, trigger, dest FROM steps WHERE {all}"
                             " AND status = 'succeeded' ORDER BY {order}")
        self.updates_after = s("SELECT updates FROM steps WHERE {after} AND status ="
                               " 'succeeded' AND updates IS NOT NULL ORDER BY {order}")
        self.updates_between = s("SELECT updates FROM steps WHERE {between} AND status ="
                                 " 'succeeded' AND updates IS NOT NULL ORDER BY {order}")
        self.step_state = s("SELECT state FROM steps WHERE {one}")
        self.step_dest = s("SELECT dest FROM steps WHERE {one} AND status = 'succeeded'")
        # -- messages
        self.message = s("INSERT INTO messages ({new}run_id, seq, step, body)"
                         " VALUES ({new_values}?,?,?,?) ON CONFLICT DO NOTHING")
        self.messages = s("SELECT body FROM messages WHERE {all} ORDER BY {order}")
        self.messages_before = s("SELECT body FROM messages WHERE {all} AND step < ?"
                                 " ORDER BY {order}")
        # -- events
        self.event = s("INSERT INTO events ({new}run_id, seq, step, kind, at, payload)"
                       " VALUES ({new_values}?,?,?,?,?,?)")
        self.events = s("SELECT seq, step, kind, at, payload FROM events WHERE {all}")
        self.events_order = s(" ORDER BY {order}")
        self.calls_between = s("SELECT payload FROM events WHERE {all} AND kind = ?"
                               " AND step > ? AND step < ? ORDER BY {order}")
        # -- checkpoints
        self.checkpoint = s(
            "INSERT INTO checkpoints ({new}run_id, seq, state, at, data, message_count, usage)"
            " VALUES ({new_values}?,?,?,?,?,?,?) ON CONFLICT ({address}) DO UPDATE SET"
            " state = excluded.state, at = excluded.at, data = excluded.data,"
            " message_count = excluded.message_count, usage = excluded.usage")
        self.checkpoints = s("SELECT run_id, seq, state, at, data, message_count, usage"
                             " FROM checkpoints WHERE {all} ORDER BY {order}")
        self.last_checkpoint = s("SELECT seq, data, usage FROM checkpoints WHERE {all}"
                                 " ORDER BY {order} DESC LIMIT 1")
        self.checkpoint_before = s("SELECT seq, data, usage FROM checkpoints WHERE {before}"
                                   " ORDER BY {order} DESC LIMIT 1")
        # -- audit
        self.audit_row = s(
            "INSERT INTO audit ({new}run_id, seq, step, call_id, tool, decision, risk, rule,"
            " reason, decided_by, args_digest, preview_digest, server, trust, at)"
            " VALUES ({new_values}?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
        self.audit = s("SELECT run_id, step, call_id, tool, decision, risk, rule, reason,"
                       " decided_by, args_digest, preview_digest, at, server, trust, seq"
                       " FROM audit WHERE {all} ORDER BY {order}")
        self.last_seq = {table: s(f"SELECT COALESCE(MAX(seq), -1) FROM {table} WHERE {{all}}")
                         for table in ("events", "audit")}
        # -- the side-effect ledger
        self.effect = s(
            "INSERT INTO effects (run_id, call_id, step, tool, version, status, idempotent,"
            " side_effects, args, result, file, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT (run_id, call_id) DO UPDATE SET status = excluded.status,"
            " result = COALESCE(excluded.result, effects.result),"
            " file = COALESCE(excluded.file, effects.file), at = excluded.at")
        """A ledger row: a call's intent, then its outcome (a later result or file replaces
        one)."""
        self.effects = s("SELECT run_id, call_id, step, tool, version, status, idempotent,"
                         " side_effects, args, at, result, file FROM effects WHERE run_id = ?")
        self.effects_of_step = s(" AND step = ?")
        self.effects_order = s(" ORDER BY {arrival}")
        # -- exported spans
        self.spans_sent = s("SELECT span_id FROM spans_sent WHERE run_id = ?")
        self.mark_span = s("INSERT INTO spans_sent (run_id, span_id, at) VALUES (?,?,?)"
                           " ON CONFLICT DO NOTHING")
        # -- parked approvals
        self.park = s(
            "INSERT INTO approval_requests (run_id, call_id, step, tool, args, args_hash,"
            " policy_version, preview, risk, rule, reason, capability, requested_at, status)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,'pending')"
            " ON CONFLICT (run_id, call_id) DO UPDATE SET step = excluded.step,"
            " args = excluded.args, args_hash = excluded.args_hash,"
            " policy_version = excluded.policy_version, preview = excluded.preview,"
            " risk = excluded.risk, rule = excluded.rule, reason = excluded.reason,"
            " capability = excluded.capability, requested_at = excluded.requested_at,"
            " status = 'pending', channel = NULL, decided_by = NULL, decided_at = NULL,"
            " note = '', always = NULL"
            " WHERE approval_requests.policy_version {distinct} excluded.policy_version")
        """A request parked again keeps its decision, unless it was made under another policy
        version: then it is asked again (pending)."""
        self.step_parked = s("UPDATE steps SET status = 'approval_requested', note = ?,"
                             " ended_at = ? WHERE {one} AND status = 'running'")
        self.run_parked = s("UPDATE runs SET status = 'waiting_approval', updated_at = ?"
                            " WHERE run_id = ?")
        self.approvals = s(f"SELECT {_APPROVALS} FROM approval_requests WHERE 1 = 1")
        self.approvals_of_run = s(" AND run_id = ?")
        self.approvals_pending = " AND status = 'pending'"
        self.approvals_order = s(" ORDER BY requested_at, {arrival}")
        self.approval = s(f"SELECT {_APPROVALS} FROM approval_requests WHERE run_id = ?"
                          " AND call_id = ?")
        self.run_waiting = s("SELECT status, lease_host, lease_pid, lease_nonce, lease_expires"
                             " FROM runs WHERE run_id = ?{lock}")
        self.decide = s("UPDATE approval_requests SET status = ?, channel = ?, decided_by = ?,"
                        " decided_at = ?, note = ?, always = ? WHERE run_id = ? AND call_id = ?"
                        " AND status = 'pending'")
        self.next_audit_seq = s("SELECT COALESCE(MAX(seq), -1) + 1 FROM audit WHERE {all}")
        self.folds = Folds(self.step_begin, self.step_end, self.step_whole, self.effect,
                           self.run_row, key_width=len(d.address.split(",")))
        """The statements a transaction folds (``engine.store.deferred``)."""
