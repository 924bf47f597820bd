"""``python -m engine worker --backend temporal``: serve a task queue until SIGINT/SIGTERM.

Any number of workers, on any number of machines, may serve one task queue; each run's store
and workspace must be reachable from every one of them (shared storage, same paths).
"""

from __future__ import annotations

import logging
import signal
from datetime import timedelta

import anyio
from temporalio.client import Client
from temporalio.worker import Worker

from engine.temporal.activities import StepActivities
from engine.temporal.client import TemporalUnavailableError, connect, short
from engine.temporal.workflow import RunWorkflow

logger = logging.getLogger(__name__)

GRACE = timedelta(seconds=5)
"""On SIGTERM, steps in flight get this long to commit; the rest are retried elsewhere."""


def make_worker(client: Client, task_queue: str, *, only_store: str | None = None,
                max_steps: int = 100) -> Worker:
    """A worker for the run workflow and its activities on ``task_queue``."""
    acts = StepActivities(only_store)
    return Worker(client, task_queue=task_queue, workflows=[RunWorkflow],
                  activities=[acts.step, acts.fail, acts.decided],
                  max_concurrent_activities=max_steps,
                  max_concurrent_local_activities=max_steps, graceful_shutdown_timeout=GRACE)


async def serve(address: str, namespace: str, task_queue: str, *,
                only_store: str | None = None) -> None:
    """Run a worker until a signal; say on stdout when it polls (scripts wait for the line),
    and nothing before: a server or namespace that is not there is one line (exit 2)."""
    client = await connect(address, namespace)  # the namespace checked too
    try:
        worker = make_worker(client, task_queue, only_store=only_store)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise TemporalUnavailableError(f"cannot start a worker on {address} (namespace "
                                       f"{namespace}): {short(exc)}") from exc
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, worker)
        print(f"worker polling task queue {task_queue!r} on {address} (namespace "
              f"{namespace}); stop with Ctrl-C", flush=True)
        try:
            await worker.run()
        except RuntimeError as exc:  # the SDK's fatal poll errors
            raise TemporalUnavailableError(f"the worker on {address} (namespace {namespace}) "
                                           f"stopped: {short(exc)}") from exc
        tg.cancel_scope.cancel()


async def _stop_on_signal(worker: Worker) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            logger.info("stopping the worker")
            await worker.shutdown()
            return
