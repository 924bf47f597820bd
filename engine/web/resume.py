"""Drive runs inside the console's process: continue a run once its last parked call is
decided, and (with ``serve --allow-start``) start a golden task's run from the page.

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
from engine.store.url import StoreTarget

logger = logging.getLogger(__name__)


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def resume_in_background(db: Path | StoreTarget, run_id: str) -> threading.Thread:
    """Start driving ``run_id`` now; problems are logged (the page shows the run's status)."""
    thread = threading.Thread(target=_resume, args=(db, run_id), name=f"resume-{run_id}",
                              daemon=True)
    thread.start()
    return thread


def _resume(db: Path | StoreTarget, run_id: str) -> None:
    from engine.session import execute, prepare_resume
    from engine.store.url import as_target, open_store
    from engine.tracing.trace import write_trace_file

    try:
        store = open_store(db)
    except TurnstileError as exc:
        logger.warning("cannot resume %s: %s", run_id, exc)
        return
    try:
        from engine.temporal.commands import notify_decision

        if notify_decision(store, run_id):  # on Temporal: its workflow continues the run
            return
        prepared = prepare_resume(run_id, store, observer=_silent, prompter=None, overrides={})

        async def drive() -> Any:
            return await execute(prepared)

        result = anyio.run(drive)
        logger.info("run %s resumed by the console ended %s", run_id, result.status)
        write_trace_file(store, prepared.state.run_id, as_target(db).data_dir / "traces")
    except (TurnstileError, OSError) as exc:
        logger.warning("run %s resumed by the console: %s", run_id, exc)
    finally:
        store.close()


def start_in_background(db: Path | StoreTarget, task_dir: Path) -> str:
    """Create a run of the golden task in ``task_dir`` (parked approvals: nobody is at a
    terminal) and drive it in a thread; returns its id at once."""
    from engine.harness.golden import load_task
    from engine.session import RunRequest, execute, prepare_new
    from engine.store.url import as_target, open_store

    task = load_task(task_dir)
    store = open_store(db)
    req = RunRequest(machine=task.machine_path().resolve(), golden=task_dir.resolve(),
                     approval="park")
    prepared = prepare_new(req, store, data_dir=as_target(db).data_dir, observer=_silent,
                           prompter=None)

    def work() -> None:
        try:
            async def drive() -> Any:
                return await execute(prepared)

            anyio.run(drive)
        except (TurnstileError, OSError) as exc:
            logger.warning("run %s started by the console: %s", prepared.state.run_id, exc)
        finally:
            store.close()

    thread = threading.Thread(target=work, name=f"run-{prepared.state.run_id}", daemon=True)
    thread.start()
    _wait_created(db, prepared.state.run_id, thread)
    return prepared.state.run_id


def _wait_created(db: Path | StoreTarget, run_id: str, thread: threading.Thread,
                  timeout_s: float = 30.0) -> None:
    """The run's row exists once its model passed the preflight: the page can show it then."""
    import time

    from engine.errors import UnknownRunError, UsageError
    from engine.store.url import open_store

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
