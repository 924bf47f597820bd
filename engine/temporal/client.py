"""Starting, following and signalling run workflows (the client side of the backend)."""

from __future__ import annotations

import atexit
import functools
import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from engine.errors import TurnstileError, UsageError
from engine.store.base import Store
from engine.temporal.refs import (
    DECIDED_SIGNAL,
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    WORKFLOW,
    RunRef,
    workflow_id,
)

FOLLOW_POLL_S = 0.1
SETTLED = ("completed", "failed", "waiting_approval")


class TemporalUnavailableError(UsageError):
    """The Temporal server cannot be reached, or refused a request."""


@dataclass(frozen=True)
class Target:
    """Where runs go: the server, the namespace and the task queue the workers serve."""

    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE

    def to_config(self) -> dict[str, str]:
        return {"address": self.address, "namespace": self.namespace,
                "task_queue": self.task_queue}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Target:
        return cls(config.get("address") or DEFAULT_ADDRESS,
                   config.get("namespace") or DEFAULT_NAMESPACE,
                   config.get("task_queue") or DEFAULT_TASK_QUEUE)


async def connect(address: str, namespace: str) -> Client:
    """A client, or one line saying the server cannot be reached."""
    _release_at_exit()
    try:
        return await Client.connect(address, namespace=namespace)
    except (RuntimeError, RPCError, OSError) as exc:
        raise TemporalUnavailableError(f"cannot reach Temporal at {address} (namespace "
                                       f"{namespace}): {_short(exc)}") from exc


async def start(client: Client, ref: RunRef, target: Target) -> WorkflowHandle[Any, Any]:
    """Start the run's workflow (its id is derived from the run id)."""
    try:
        return await client.start_workflow(WORKFLOW, ref, id=workflow_id(ref.run_id),
                                           task_queue=target.task_queue)
    except RPCError as exc:
        raise TemporalUnavailableError(f"Temporal refused to start run {ref.run_id}: "
                                       f"{_short(exc)}") from exc


async def signal_decided(target: Target, run_id: str) -> None:
    """Wake the run's workflow: a parked call was decided."""
    client = await connect(target.address, target.namespace)
    try:
        await client.get_workflow_handle(workflow_id(run_id)).signal(DECIDED_SIGNAL)
    except RPCError as exc:
        raise TemporalUnavailableError(f"the decision is recorded, but the workflow of run "
                                       f"{run_id} could not be told: {_short(exc)}") from exc


async def follow(store: Store, run_id: str, handle: WorkflowHandle[Any, Any],
                 observer: Callable[[str, Mapping[str, Any]], None]) -> str:
    """Show the run's events as workers store them, until it ends or parks; its status."""
    seen, last_check = 0, 0.0
    while True:
        events = store.events(run_id)
        for event in events[seen:]:
            observer(event.kind, event.payload)
        seen = len(events)
        status = store.get_run(run_id).status
        if status in SETTLED:
            return status
        if time.monotonic() - last_check > 2.0:
            last_check = time.monotonic()
            await _check_alive(handle, run_id)
        await anyio.sleep(FOLLOW_POLL_S)


async def _check_alive(handle: WorkflowHandle[Any, Any], run_id: str) -> None:
    """A workflow that ended while the store says the run goes on: say so (exit 2)."""
    try:
        desc = await handle.describe()
    except RPCError as exc:
        raise TemporalUnavailableError(f"lost Temporal while following run {run_id}: "
                                       f"{_short(exc)}") from exc
    if desc.status not in (WorkflowExecutionStatus.RUNNING,
                           WorkflowExecutionStatus.CONTINUED_AS_NEW,
                           WorkflowExecutionStatus.COMPLETED):
        name = desc.status.name.lower() if desc.status else "unknown"
        raise TurnstileError(f"the workflow of run {run_id} ended {name} while the run was "
                             "still running")


@functools.cache
def _release_at_exit() -> None:
    """Collect the clients' connections at exit, while the interpreter is whole: left to its
    finalization, the SDK's runtime threads can abort the process (exit code -6)."""
    atexit.register(gc.collect)


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
