"""Continue a run once its last parked call is decided, inside the console's process.

Each resumed run gets its own thread, event loop and store connection, so a long run never
blocks a page; the run's lease keeps it single even if a CLI ``resume`` races it, and a
console stopped mid-run leaves it ``crashed``, resumable like any other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from engine.errors import TurnstileError

logger = logging.getLogger(__name__)


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def resume_in_background(db: Path, run_id: str) -> threading.Thread:
    """Start driving ``run_id`` now; problems are logged (the page shows the run's status)."""
    thread = threading.Thread(target=_resume, args=(db, run_id), name=f"resume-{run_id}",
                              daemon=True)
    thread.start()
    return thread


def _resume(db: Path, run_id: str) -> None:
    from engine.session import execute, prepare_resume
    from engine.store.sqlite import SqliteStore
    from engine.trace import write_trace_file

    try:
        store = SqliteStore(db)
    except TurnstileError as exc:
        logger.warning("cannot resume %s: %s", run_id, exc)
        return
    try:
        prepared = prepare_resume(run_id, store, observer=_silent, prompter=None, overrides={})

        async def drive() -> Any:
            return await execute(prepared, signals=False)

        result = anyio.run(drive)
        logger.info("run %s resumed by the console ended %s", run_id, result.status)
        write_trace_file(store, prepared.state.run_id, db.parent / "traces")
    except (TurnstileError, OSError) as exc:
        logger.warning("run %s resumed by the console: %s", run_id, exc)
    finally:
        store.close()
