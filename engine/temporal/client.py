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
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from engine.store.base import RunReader
from engine.temporal.refs import (
    DECIDED_SIGNAL,
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    WORKFLOW,
    RunRef,
    workflow_id,
)
from engine.vocabulary.errors import RunContinuesError, StoreError, TurnstileError, UsageError

FOLLOW_POLL_S = 0.1
SETTLED = ("completed", "failed", "waiting_approval")
CHECK_EVERY_S = 2.0
"""How often a follower asks Temporal whether the workflow lives and a worker polls."""
NO_WORKER_AFTER_S = 5.0
"""A run that took no step this long after its workflow started, on a task queue no worker
polls, is said to wait for a worker (once)."""


class TemporalUnavailableError(UsageError):
    """The Temporal server cannot be reached, or refused a request."""


class WorkflowEndedError(TurnstileError):
    """The run's workflow ended (failed, terminated, timed out) while the store says the run
    goes on; the message is the workflow's own cause."""


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
    """A client of a namespace that exists, or one line saying what is wrong."""
    _release_at_exit()
    try:
        client = await Client.connect(address, namespace=namespace)
    except (RuntimeError, RPCError, OSError) as exc:
        raise TemporalUnavailableError(f"cannot reach Temporal at {address} (namespace "
                                       f"{namespace}): {short(exc)}") from exc
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise TemporalUnavailableError(
                f"Temporal at {address} has no namespace {namespace!r} (create it: temporal "
                f"operator namespace create --namespace {namespace})") from exc
        raise TemporalUnavailableError(f"cannot reach Temporal at {address} (namespace "
                                       f"{namespace}): {short(exc)}") from exc
    return client


async def start(client: Client, ref: RunRef, target: Target) -> WorkflowHandle[Any, Any] | None:
    """Start the run's workflow (its id is derived from the run id); None when it is already
    running (the caller attaches to it)."""
    try:
        return await client.start_workflow(WORKFLOW, ref, id=workflow_id(ref.run_id),
                                           task_queue=target.task_queue)
    except WorkflowAlreadyStartedError:
        return None
    except RPCError as exc:
        raise TemporalUnavailableError(f"Temporal refused to start run {ref.run_id}: "
                                       f"{short(exc)}") from exc


async def running_workflow(client: Client, run_id: str) -> WorkflowHandle[Any, Any] | None:
    """The run's workflow when one is running (or parked), else None."""
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(workflow_id(run_id))
    try:
        desc = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise TemporalUnavailableError(f"Temporal could not describe the workflow of run "
                                       f"{run_id}: {short(exc)}") from exc
    return handle if desc.status == WorkflowExecutionStatus.RUNNING else None


async def signal_decided(target: Target, run_id: str) -> bool:
    """Wake the run's workflow: a parked call was decided. False when the run has no running
    workflow to tell; ``TemporalUnavailableError`` when Temporal cannot be reached."""
    client = await connect(target.address, target.namespace)
    handle = await running_workflow(client, run_id)
    if handle is None:
        return False
    try:
        await handle.signal(DECIDED_SIGNAL)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise TemporalUnavailableError(f"the workflow of run {run_id} could not be told: "
                                       f"{short(exc)}") from exc
    return True


@dataclass(frozen=True)
class Follow:
    """What following a run needs besides the store: the workflow, where it runs, and how to
    show events and say a warning (on stderr, also with ``--quiet``)."""

    client: Client
    handle: WorkflowHandle[Any, Any]
    target: Target
    observer: Callable[[str, Mapping[str, Any]], None]
    warn: Callable[[str], None]
    follow_hint: str
    """The command that follows the run from elsewhere (``show RUN``), runnable as printed."""
    worker_hint: str
    """The command that starts a worker for this run, runnable as printed."""


async def follow(store: RunReader, run_id: str, how: Follow) -> str:
    """Show the run's events as workers store them, until it ends or parks; its status.

    Losing the store or Temporal ends the following, not the run: ``RunContinuesError``
    (exit 6) says so and how to follow it."""
    seen, last_check, started = 0, 0.0, time.monotonic()
    first_events, warned = -1, False
    while True:
        try:
            events = store.events(run_id)
            status = store.get_run(run_id).status
        except StoreError as exc:
            raise RunContinuesError(f"lost the store while following run {run_id} ({exc}); "
                                    "the workers go on with the run once it is back: follow "
                                    f"it with {how.follow_hint}") from exc
        for event in events[seen:]:
            how.observer(event.kind, event.payload)
        seen = len(events)
        first_events = seen if first_events < 0 else first_events
        if status in SETTLED:
            return status
        if time.monotonic() - last_check > CHECK_EVERY_S:
            last_check = time.monotonic()
            await _check_alive(how, run_id)
            idle = seen == first_events and time.monotonic() - started > NO_WORKER_AFTER_S
            if idle and not warned and not await has_pollers(how.client, how.target):
                warned = True
                how.warn(f"no worker polls task queue {how.target.task_queue!r} on "
                         f"{how.target.address} (namespace {how.target.namespace}): run "
                         f"{run_id} waits for one; start it with: {how.worker_hint}")
        await anyio.sleep(FOLLOW_POLL_S)


async def has_pollers(client: Client, target: Target) -> bool:
    """Whether a worker polled the run's task queue lately (Temporal's list of pollers)."""
    try:
        reply = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(namespace=target.namespace,
                                     task_queue=TaskQueue(name=target.task_queue),
                                     task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    except RPCError:
        return True  # unknown: say nothing rather than something false
    return bool(reply.pollers)


async def _check_alive(how: Follow, run_id: str) -> None:
    """A workflow that ended while the store says the run goes on: say so; Temporal lost:
    the run goes on once it is back (exit 6)."""
    try:
        desc = await how.handle.describe()
    except RPCError as exc:
        raise RunContinuesError(
            f"lost Temporal at {how.target.address} while following run {run_id} "
            f"({short(exc)}); its workflow goes on once Temporal is back: follow it with "
            f"{how.follow_hint}") from exc
    if desc.status not in (WorkflowExecutionStatus.RUNNING,
                           WorkflowExecutionStatus.CONTINUED_AS_NEW,
                           WorkflowExecutionStatus.COMPLETED):
        name = desc.status.name.lower() if desc.status else "unknown"
        raise WorkflowEndedError(f"the workflow of run {run_id} ended {name}: "
                                 f"{await _cause(how.handle)}")


async def _cause(handle: WorkflowHandle[Any, Any]) -> str:
    """Why a workflow that ended did: its failure's innermost message."""
    try:
        await handle.result(follow_runs=False)
    except Exception as exc:  # the SDK raises the workflow's failure as an exception
        inner: BaseException = exc
        while getattr(inner, "cause", None) is not None:
            inner = inner.cause  # type: ignore[attr-defined]
        return short(inner)
    return "no cause recorded"


@functools.cache
def _release_at_exit() -> None:
    """Collect the clients' connections at exit, while the interpreter is whole: left to its
    finalization, the SDK's runtime threads can abort the process (exit code -6)."""
    atexit.register(gc.collect)


def short(exc: BaseException) -> str:
    """An error's message on one line, at most 300 characters."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__
