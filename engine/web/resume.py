"""Drive runs inside the console's process: continue a run once its last parked call is
decided, and (with ``serve --allow-start``) start a golden task's run from the page.

Each resumed run gets its own thread, event loop and store connection, so a long run never
blocks a page; the run's lease keeps it single even if a CLI ``resume`` races it, and a
console stopped mid-run leaves it ``crashed``, resumable like any other.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import anyio

from engine.runs.service import Runs
from engine.store.url import StoreTarget
from engine.vocabulary.errors import TurnstileError

logger = logging.getLogger(__name__)


def resume_in_background(db: Path | StoreTarget, run_id: str) -> threading.Thread:
    """Start driving ``run_id`` now; problems are logged (the page shows the run's status)."""
    thread = threading.Thread(target=_resume, args=(db, run_id), name=f"resume-{run_id}",
                              daemon=True)
    thread.start()
    return thread


def runs_of(db: Path | StoreTarget) -> Runs:
    """The front door on the console's store; a decision wakes a run that Temporal drives."""
    from engine.store.url import as_target
    from engine.temporal.commands import notify_decision

    return Runs(as_target(db), wake=notify_decision)


def _resume(db: Path | StoreTarget, run_id: str) -> None:
    from engine.temporal.commands import is_temporal
    from engine.tracing.trace import write_trace_file

    runs = runs_of(db)
    try:
        if is_temporal(runs.show(run_id).config):  # its workflow continues it (woken)
            return
        prepared = runs.prepare_resume(run_id)
        try:
            result = anyio.run(runs.drive, prepared)
            logger.info("run %s resumed by the console ended %s", run_id, result.status)
            write_trace_file(prepared.store, prepared.run_id, runs.target.data_dir / "traces")
        finally:
            prepared.close()
    except (TurnstileError, OSError) as exc:
        logger.warning("run %s resumed by the console: %s", run_id, exc)


def start_in_background(db: Path | StoreTarget, task_dir: Path) -> str:
    """Create a run of the golden task in ``task_dir`` (parked approvals: nobody is at a
    terminal) and drive it in a thread; returns its id at once."""
    from engine.tasks.golden import load_task

    task = load_task(task_dir)
    runs = runs_of(db)
    prepared = runs.prepare(task.machine_path().resolve(), golden=task_dir.resolve(),
                            approval="park")

    def work() -> None:
        try:
            anyio.run(runs.drive, prepared)
        except (TurnstileError, OSError) as exc:
            logger.warning("run %s started by the console: %s", prepared.run_id, exc)
        finally:
            prepared.close()

    thread = threading.Thread(target=work, name=f"run-{prepared.run_id}", daemon=True)
    thread.start()
    _wait_created(db, prepared.run_id, thread)
    return prepared.run_id


def _wait_created(db: Path | StoreTarget, run_id: str, thread: threading.Thread,
                  timeout_s: float = 30.0) -> None:
    """The run's row exists once its model passed the preflight: the page can show it then."""
    import time

    from engine.store.url import open_store
    from engine.vocabulary.errors import UnknownRunError, UsageError

    reader = open_store(db)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                reader.get_run(run_id)
                return
            except UnknownRunError:
                if not thread.is_alive():
                    break
                time.sleep(0.02)
    finally:
        reader.close()
    raise UsageError(f"run {run_id} could not start (see the console's log)")
