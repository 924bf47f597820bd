"""A store opened to read runs: list them, read a run's steps, messages, events and trace.

Nothing here can change a run. The store is named as everywhere else (``--store``): a path,
``sqlite:///rel.db``, ``sqlite:////abs.db`` or ``postgresql://...``; with none, the same
chain as the CLI (``$ENGINE_STORE_URL``, ``$ENGINE_DB``, ``.engine/engine.db``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from engine.store.base import Event, Store
from engine.store.url import StoreTarget, as_target, store_target
from engine.vocabulary.errors import UsageError
from engine.vocabulary.hints import command
from engine.vocabulary.state import Message, RunInfo, StepRecord


def target_of(store: str | os.PathLike[str] | StoreTarget | None = None,
              db: str | os.PathLike[str] | None = None) -> StoreTarget:
    """The store a caller names: ``store`` (a URL or path), else ``db``, else the
    environment's, else ``.engine/engine.db``."""
    if isinstance(store, StoreTarget):
        return store
    if store is not None:
        return as_target(store)
    return store_target(None, os.fspath(db) if db is not None else None)


def require_existing(target: StoreTarget) -> None:
    """A SQLite file that is not there yet is bad input that says how to start a run."""
    if not target.exists():
        start = command("run", "coding_agent", store=target.display)
        raise UsageError(f"{target.display}: no database yet (start a run with: {start})")


class RunStore:
    """The run database opened read-only. ``with open_store(url) as runs: ...``"""

    def __init__(self, store: str | os.PathLike[str] | StoreTarget | None = None, *,
                 db: str | os.PathLike[str] | None = None) -> None:
        target = target_of(store, db)
        require_existing(target)
        self.target = target
        self._store: Store = target.open(reading=True)

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first."""
        return self._store.list_runs()

    def run(self, run_id: str) -> RunInfo:
        return self._store.get_run(run_id)

    def steps(self, run_id: str) -> list[StepRecord]:
        return self._store.steps(run_id)

    def messages(self, run_id: str) -> list[Message]:
        return self._store.messages(run_id)

    def events(self, run_id: str, kinds: Sequence[str] = ()) -> list[Event]:
        return self._store.events(run_id, kinds)

    def trace(self, run_id: str) -> dict[str, Any]:
        """The run's trace (spans of steps, model calls and tool calls), as JSON values."""
        from engine.tracing.trace import build_trace

        return build_trace(self._store, run_id)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
