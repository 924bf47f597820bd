"""The persistence contract: what the runner needs from a store, and nothing about SQL.

Callers name the narrowest part they use: ``RunReader`` (reading runs back), ``StepWriter``
(what a step writes), ``Approvals`` (parking and deciding), ``Leases`` (who drives a run);
``Store`` is all of them, what a backend implements and ``open_store`` returns.

Every write is keyed by ``(run_id, seq)`` and idempotent, so a step re-committed after a crash
cannot be recorded twice. Per-step writes append; they never rewrite earlier messages or state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

from engine.vocabulary.state import Message, RunInfo, RunState, RunStatus, StepRecord, Usage

Durability = Literal["normal", "full"]


@dataclass(frozen=True, slots=True)
class LeaseOwner:
    """Who drives a run: host, process id and a nonce unique to this process's runner."""

    host: str
    pid: int
    nonce: str

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}"


@dataclass(frozen=True, slots=True)
class StepBegin:
    """The pre-checkpoint of a step: written before its action runs."""

    seq: int
    state: str
    action: str
    started_at: float
    plan: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A compact snapshot: run data (scalars and small structures) plus a message count."""

    run_id: str
    seq: int
    state: str
    at: float
    data: Mapping[str, Any]
    message_count: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class StepCommit:
    """Everything one step changes, written in one transaction (the post-checkpoint)."""

    seq: int
    state: str
    trigger: str
    dest: str
    ended_at: float
    updates: Mapping[str, Any]
    messages: Sequence[Message]
    first_message_seq: int
    """Index of the first new message in the run's history."""
    usage: Usage
    """The run's totals after this step."""
    note: str = ""
    status: RunStatus = "running"
    next_step: StepBegin | None = None
    """The next step's pre-checkpoint, written in the same transaction."""
    snapshot: Checkpoint | None = None
    """A compact snapshot written with this step (after ``checkpoint`` states)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened during a run (model call, tool call, approval, file change)."""

    run_id: str
    seq: int
    step: int
    kind: str
    at: float
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One permission decision."""

    run_id: str
    step: int
    call_id: str
    tool: str
    decision: str
    risk: str
    rule: str | None
    reason: str
    decided_by: str
    """``user``, ``policy``, ``auto``, ``deny-mode``, ``always`` (a capability granted earlier)."""
    args_digest: str
    preview_digest: str
    at: float
    server: str | None = None
    trust: str | None = None
    seq: int = 0

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """One tool call in the side-effect ledger: started (the intent) -> done | failed | unknown."""

    run_id: str
    call_id: str
    step: int
    tool: str
    version: str
    status: str
    idempotent: bool
    side_effects: bool
    args: Mapping[str, Any]
    at: float
    result: Mapping[str, Any] | None = None
    file: Mapping[str, Any] | None = None
    """For file writes: path, base_hash, post_hash, patch."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A call parked for a person, and (once decided) the decision, bound to what was shown:
    the arguments' hash, the policy version and the preview a decision was made on."""

    run_id: str
    call_id: str
    step: int
    tool: str
    args: Mapping[str, Any]
    args_hash: str
    policy_version: str
    preview: str
    risk: str
    rule: str | None
    reason: str
    capability: str
    requested_at: float
    status: str = "pending"
    """``pending``, ``allow`` or ``deny``."""
    channel: str | None = None
    """How the decision came: ``cli`` or ``web``."""
    decided_by: str | None = None
    """Who decided (the user name, and for the web the client address)."""
    decided_at: float | None = None
    note: str = ""
    """The decider's reason (``deny --reason``)."""
    always: str | None = None
    """The scope granted with ``--always`` (a capability for the rest of the run)."""

    def to_json(self) -> dict[str, Any]:
        return {k: (dict(v) if isinstance(v, Mapping) else v)
                for k in self.__slots__ for v in (getattr(self, k),)}


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """One person's answer to a parked call, as the approve/deny commands record it."""

    decision: Literal["allow", "deny"]
    args_hash: str
    """The hash of the arguments the person saw: refused if it no longer matches."""
    channel: str
    who: str
    at: float
    note: str = ""
    always: str | None = None


class RunReader(Protocol):
    """What reads a stored run back: ``show``, ``trace``, the console, checks, replay, resume."""

    @property
    def location(self) -> str:
        """The store as hints and messages name it: the SQLite file's path as it was given,
        or the server's URL without its password."""
        ...

    def get_run(self, run_id: str) -> RunInfo: ...
    def list_runs(self) -> list[RunInfo]: ...
    def child_runs(self, run_id: str) -> list[RunInfo]:
        """The runs ``run_id`` started (``run_machine``, ``delegate``), oldest first."""
        ...
    def run_ids(self) -> list[str]: ...
    def steps(self, run_id: str) -> list[StepRecord]: ...
    def transitions(self, run_id: str) -> list[tuple[int, str, str, str]]: ...
    def messages(self, run_id: str) -> list[Message]: ...
    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]: ...
    def checkpoints(self, run_id: str) -> list[Checkpoint]: ...
    def load_state(self, run_id: str) -> RunState: ...
    # Forks (``engine.forks``): a run as it stood when step ``step`` began (steps before it
    # committed: their messages, the data of the last snapshot before it plus later updates,
    # the usage of that snapshot plus later model calls).
    def state_at(self, run_id: str, step: int) -> RunState: ...
    def audit(self, run_id: str) -> list[AuditRecord]: ...
    def effects(self, run_id: str, step: int | None = None) -> list[EffectRecord]: ...
    def approval_requests(self, run_id: str | None = None, *,
                          pending_only: bool = True) -> list[ApprovalRequest]: ...
    # The OTLP exporter's memory: ids of the spans a collector accepted.
    def spans_sent(self, run_id: str) -> set[str]: ...
    def flush(self) -> None:
        """Write the buffered rows (events, audit rows, deferred steps) now, so that every
        read sees what this process has recorded."""
        ...


class StepWriter(Protocol):
    """What the runner and the actions write while a run's steps run: the run's row, each
    step's pre- and post-checkpoint, events, audit rows and the side-effect ledger."""

    @property
    def location(self) -> str: ...

    def create_run(self, info: RunInfo, state: RunState, first: StepBegin) -> None: ...
    def begin_step(self, run_id: str, begin: StepBegin) -> None: ...
    def commit_step(self, run_id: str, commit: StepCommit, *, defer: bool = False) -> None: ...
    def end_step(self, run_id: str, seq: int, status: str, note: str, at: float) -> None: ...
    def set_status(self, run_id: str, status: RunStatus, error: str | None = None) -> None: ...
    def append_event(self, run_id: str, step: int, kind: str, payload: Mapping[str, Any],
                     at: float) -> int: ...
    def save_checkpoint(self, checkpoint: Checkpoint) -> None: ...
    def record_audit(self, record: AuditRecord) -> None: ...
    def record_effect(self, effect: EffectRecord, *, durable: bool = False,
                      buffered: bool = False) -> None: ...
    def flush(self) -> None:
        """Write the buffered rows (events, audit rows, deferred steps) now."""
        ...


class Approvals(Protocol):
    """Parked approvals (``--approval park``): the run's step ends waiting, nothing is held;
    a person's decision is recorded against what was shown."""

    @property
    def location(self) -> str: ...

    def park_run(self, run_id: str, seq: int, requests: Sequence[ApprovalRequest], note: str,
                 at: float) -> None: ...
    def approval_requests(self, run_id: str | None = None, *,
                          pending_only: bool = True) -> list[ApprovalRequest]: ...
    def decide_approval(self, run_id: str, call_id: str, decision: ApprovalDecision,
                        audit: AuditRecord) -> ApprovalRequest: ...


class Leases(Protocol):
    """Who drives a run: one lease per run, held by one ``LeaseOwner`` at a time."""

    def acquire_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None: ...
    def renew_lease(self, run_id: str, owner: LeaseOwner, ttl_s: float) -> None: ...
    def release_lease(self, run_id: str, owner: LeaseOwner) -> None: ...


class Store(RunReader, StepWriter, Approvals, Leases, Protocol):
    """Everything a backend implements (the narrow protocols above, and the rest below):
    ``SqliteStore`` (the default) and ``PostgresStore`` implement it, and pass the same
    contract suite (tests/test_store.py)."""

    @property
    def location(self) -> str:
        """The store as hints and messages name it: the SQLite file's path as it was given,
        or the server's URL without its password."""
        ...

    # A run's recorded config, changed after creation (``resume --backend temporal`` records
    # who drives it): ``changes`` merged into the top level in one transaction, a key whose
    # value is None removed; returns the config now recorded; an unknown (exact) run id:
    # UnknownRunError, nothing written.
    def update_config(self, run_id: str, changes: Mapping[str, Any]) -> dict[str, Any]: ...
    # The OTLP exporter's memory (marking is idempotent).
    def mark_spans_sent(self, run_id: str, span_ids: Sequence[str], at: float) -> None: ...
    # A new run (``info``, its ``forked_from`` set) holding a copy of ``source``'s rows of the
    # steps before ``step``, written in one transaction, with step ``step`` begun and
    # ``interrupted`` (``engine.forks``).
    def fork_run(self, info: RunInfo, source: str, step: int) -> None: ...
    def close(self) -> None: ...


def with_calls(usage: Usage, payloads: Iterable[Mapping[str, Any]]) -> Usage:
    """``usage`` plus the tokens and cost of the model calls whose event payloads are given
    (``state_at``: a run's totals at a step between two snapshots, in every store alike)."""
    for p in payloads:
        cost = p.get("cost_usd")
        usage = usage + Usage(int(p.get("input_tokens") or 0), int(p.get("output_tokens") or 0),
                              int(p.get("cached_tokens") or 0),
                              float(cost) if isinstance(cost, (int, float)) else None)
    return usage


def merged_config(config: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """What ``Store.update_config`` records: ``changes`` over ``config``'s top-level keys, a
    None value removing its key (one rule for every store)."""
    out = {**config, **changes}
    return {k: v for k, v in out.items() if v is not None}


def display_url(url: str) -> str:
    """A ``postgresql://`` URL without its password (or query), for messages."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "postgresql://(unparsable URL)"
    user = f"{unquote(parts.username)}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"
