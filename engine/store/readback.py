"""Reading every stored row back through the decoders the engine uses, run by run.

A row can be sound to the database (``PRAGMA quick_check``, a server's own reads) and still
unreadable to the engine: a message body or an event payload that is no longer JSON. Such a
row fails the reads that ``show`` and ``resume`` make, as ``DamagedRowError`` naming its run;
``check`` makes every one of those reads for every run, to list each damaged run at once.
"""

from __future__ import annotations

from engine.store.base import RunReader
from engine.vocabulary.errors import DamagedRowError, StoreError
from engine.vocabulary.hints import command

DECODE_ERRORS = (ValueError,)
"""What a damaged stored value raises in the decoders (``json.JSONDecodeError``,
``UnicodeDecodeError``, a value that no longer fits its type): a subclass of ``ValueError``."""


def damaged_row(where: object, run_id: str | None, exc: BaseException) -> DamagedRowError:
    """The one-line error for a row that cannot be decoded, naming its run and ``check``."""
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    whose = f"run {run_id} has a damaged row" if run_id else "a stored row is damaged"
    return DamagedRowError(f"{where}: {whose} ({detail}); it cannot be shown or resumed; list "
                           f"every damaged run with: {command('check', store=str(where))}")


def damaged_runs(store: RunReader) -> list[tuple[str, str]]:
    """Every run with a row the engine cannot read, and the first such problem."""
    found: list[tuple[str, str]] = []
    for run_id in store.run_ids():
        try:
            read_run(store, run_id)
        except DamagedRowError as exc:
            found.append((run_id, str(exc)))
    return found


def read_run(store: RunReader, run_id: str) -> None:
    """Make every read of a run that the engine makes (``show``, ``resume``, the trace)."""
    info = store.get_run(run_id)
    store.steps(run_id)
    store.messages(run_id)
    store.events(run_id)
    store.checkpoints(run_id)
    store.audit(run_id)
    store.effects(run_id)
    store.approval_requests(run_id, pending_only=False)
    if info.steps or info.status != "completed":
        try:
            store.load_state(run_id)
        except DamagedRowError:
            raise
        except StoreError:  # a run with no state to load is not a damaged one
            pass


__all__ = ["DECODE_ERRORS", "damaged_row", "damaged_runs", "read_run"]
