"""Statements that ride in the next transaction instead of committing on their own.

A step whose action has no side effects and reads nothing outside the run (``checkpoint``,
``evaluate_stop``; ``await_approval`` when the policy alone decided) need not be durable by
itself: if the process dies before the next commit, resume finds the step before it committed
and runs it again, with the same inputs and so the same result. Its statements are recorded
here, in order, and executed at the start of the next transaction, before that step's own rows;
the committed steps' rows (which are the transitions) still record every transition, in
order, and there is one commit less per such step. Any transaction of the store carries the
waiting statements first, so a tool call with side effects, which starts in a transaction of
its own, finds them on disk before it runs.

A transaction's statements are folded before they run (``fold``): no reader, in this process
or another, can see a row between two statements of one transaction, so a row written twice in
it is written once with its final values. A step that begins and ends in one transaction is
one insert of the finished row (not an insert then an update), a ledger row that starts and
ends in it is one row with its outcome, and the run's row (written whole by every step) is
written by the last step only. The store then sends a run of one statement as one
``executemany``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store.base import StepCommit

Statement = tuple[str, tuple[Any, ...]]


def run_row_sql(placeholder: str) -> str:
    """The write of a run's row that every committed step makes, with the database's parameter
    ``placeholder`` (``?`` or ``%s``); the last one in a transaction is the one that counts
    (``fold``). Its parameters are ``run_row_params``'."""
    return ("UPDATE runs SET state = ?, steps = ?, status = ?, updated_at = ?,"
            " input_tokens = ?, output_tokens = ?, cached_tokens = ?, cost_usd = ?,"
            " cost_known = ? WHERE run_id = ?").replace("?", placeholder)


def run_row_params(run_id: str, commit: StepCommit) -> tuple[Any, ...]:
    """``run_row_sql``'s parameters for ``commit``: where the run now is, and its usage."""
    u = commit.usage
    return (commit.dest, commit.seq + 1, commit.status, commit.ended_at, u.input_tokens,
            u.output_tokens, u.cached_tokens, u.cost_usd or 0.0, 0 if u.cost_usd is None else 1,
            run_id)


@dataclass(frozen=True, slots=True)
class Folds:
    """A store's statements that a transaction folds (the SQL differs by database).

    ``step_begin`` takes the step's key first, ``step_end`` last (``key_width`` parameters:
    one for SQLite's integer key, two for (run_id, seq)); ``step_whole`` takes the begin's
    parameters then the end's, less its key. ``effect`` is the ledger's upsert, keyed by its
    first two parameters (run_id, call_id), in ``EffectRecord``'s column order. ``run_row``
    writes the run's row whole and takes the run id last.
    """

    step_begin: str
    step_end: str
    step_whole: str
    effect: str
    run_row: str
    key_width: int = 1
    roles: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", {self.step_begin: _BEGIN, self.step_end: _END,
                                           self.effect: _EFFECT, self.run_row: _RUN})


_BEGIN, _END, _EFFECT, _RUN = range(4)
EFFECT_STATUS, EFFECT_RESULT, EFFECT_FILE, EFFECT_AT = 5, 9, 10, 11
"""Where the ledger upsert's parameters hold what a later upsert of the same call changes."""


def fold(statements: Iterable[Statement], folds: Folds) -> list[Statement]:
    """``statements`` as one transaction writes them, each row once with its final values
    (the module's docstring says which rows); every other statement as it is, in order."""
    roles = folds.roles
    width = folds.key_width
    out: list[Statement | None] = []
    begun: dict[Any, int] = {}
    calls: dict[Any, int] = {}
    runs: dict[Any, int] = {}
    for statement in statements:
        role = roles.get(statement[0])
        if role is not None:
            params = statement[1]
            if role == _END:
                at = begun.pop(params[-1] if width == 1 else params[-width:], None)
                if at is not None:
                    out[at] = (folds.step_whole, out[at][1] + params[:-width])  # type: ignore[index]
                    continue
            elif role == _BEGIN:
                begun[params[0] if width == 1 else params[:width]] = len(out)
            elif role == _EFFECT:
                at = calls.get(params[:2])
                if at is not None:
                    out[at] = (statement[0], _later_effect(out[at][1], params))  # type: ignore[index]
                    continue
                calls[params[:2]] = len(out)
            else:
                at = runs.get(params[-1])
                if at is not None:
                    out[at] = None
                runs[params[-1]] = len(out)
        out.append(statement)
    return [s for s in out if s is not None] if runs else out  # type: ignore[return-value]


def _later_effect(first: tuple[Any, ...], then: tuple[Any, ...]) -> tuple[Any, ...]:
    """One upsert doing what ``first`` then ``then`` do: the upsert keeps a row's call
    columns and takes a later status and time, and a later result and file when given."""
    result, file = then[EFFECT_RESULT], then[EFFECT_FILE]
    return (*first[:EFFECT_STATUS], then[EFFECT_STATUS], *first[EFFECT_STATUS + 1:EFFECT_RESULT],
            first[EFFECT_RESULT] if result is None else result,
            first[EFFECT_FILE] if file is None else file, then[EFFECT_AT])


class Recorder:
    """Quacks like the ``sqlite3.Connection`` a commit writes through; keeps the statements."""

    def __init__(self, into: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._into = into

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._into.append((sql, tuple(params)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._into.extend((sql, tuple(r)) for r in rows)
