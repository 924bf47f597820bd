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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Statement = tuple[str, tuple[Any, ...]]


def without_superseded(pending: list[Statement], sql: str, run_id: str) -> list[Statement]:
    """``pending`` less its ``sql`` statements for ``run_id`` (the run's row, written whole by
    every step): a step's own write of that row supersedes those of the steps riding before it,
    so a turn writes it once per commit, not once per step."""
    return [p for p in pending if p[0] is not sql or p[1][-1] != run_id]


class Recorder:
    """Quacks like the ``sqlite3.Connection`` a commit writes through; keeps the statements."""

    def __init__(self, into: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._into = into

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._into.append((sql, tuple(params)))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._into.extend((sql, tuple(r)) for r in rows)
