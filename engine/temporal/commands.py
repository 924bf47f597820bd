"""The command-line side of the Temporal backend: options, ``worker``, and driving a prepared
run (new or resumed) as a workflow while following its steps from the store.

``engine.cli.main`` and ``engine.harness.evals`` call in here only when ``--backend temporal`` is
given, so ``temporalio`` is imported only then.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from engine.temporal import require
from engine.temporal.hints import Hints, hints_for
from engine.temporal.refs import (
    BACKEND_KEY,
    CONTINUE_AS_NEW_AFTER,
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    TEMPORAL_KEY,
)
from engine.vocabulary.errors import UsageError

CONTINUE_ENV = "ENGINE_CONTINUE_AS_NEW_STEPS"
DECISION_POLL_ENV = "ENGINE_DECISION_POLL_S"


def add_backend_args(p: argparse.ArgumentParser, *, detach: bool = False) -> None:
    """``--backend`` and where Temporal is (``TEMPORAL_ADDRESS`` is the address's default)."""
    p.add_argument("--backend", choices=["local", "temporal"], default="local",
                   help="local: drive the run in this process (default); temporal: start it "
                        "as a Temporal workflow that workers drive")
    add_target_args(p)
    if detach:
        p.add_argument("--detach", action="store_true",
                       help="with --backend temporal: print the run id and exit")


def add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--temporal-address", metavar="HOST:PORT",
                   help=f"Temporal frontend (default $TEMPORAL_ADDRESS or {DEFAULT_ADDRESS})")
    p.add_argument("--namespace", help=f"Temporal namespace (default {DEFAULT_NAMESPACE})")
    p.add_argument("--task-queue", help=f"task queue (default {DEFAULT_TASK_QUEUE})")


def target(args: argparse.Namespace) -> Any:
    """The ``Target`` the options name."""
    require()
    from engine.temporal.client import Target

    return Target(getattr(args, "temporal_address", None) or os.environ.get("TEMPORAL_ADDRESS")
                  or DEFAULT_ADDRESS,
                  getattr(args, "namespace", None) or DEFAULT_NAMESPACE,
                  getattr(args, "task_queue", None) or DEFAULT_TASK_QUEUE)


def cmd_worker(args: argparse.Namespace) -> int:
    """``worker --backend temporal``: serve the task queue until SIGINT/SIGTERM."""
    if args.backend != "temporal":
        raise UsageError("worker: only --backend temporal has workers (the local backend "
                         "drives each run in the process that starts it)")
    where = target(args)
    import anyio

    from engine.temporal.worker import serve

    only = (getattr(args, "store", None) or getattr(args, "db", None)
            or os.environ.get("ENGINE_STORE_URL"))
    anyio.run(partial(serve, where.address, where.namespace, where.task_queue, only_store=only))
    return 0


PARK_NOTE = ("approvals: on Temporal a call that needs a person parks the run (decide with "
             "approve/deny)")


def mark_temporal(prepared: Any, where: Any) -> list[str]:
    """Say in a new run's config that Temporal drives it (``approve`` signals it); a run
    that would prompt at a terminal parks instead (nobody is at a worker's terminal). A
    resumed run's config is changed in the store by ``drive``, once its workflow starts."""
    create = prepared.create
    if create is None:
        changes = resumed_changes(prepared, where)
        return [PARK_NOTE] if changes.get("approval") == "park" else []
    config = {**create["config"], **_temporal_keys(create["config"], where)}
    config["model"] = absolute_script(config.get("model"))
    prepared.create = {**create, "config": config}
    return [PARK_NOTE] if create["config"].get("approval") == "interactive" else []


def absolute_script(model: str | None) -> str | None:
    """A ``scripted:PATH`` model with its path made absolute: workers run elsewhere (another
    folder, another machine on shared storage), where a relative path means another file."""
    if not model or not model.startswith("scripted:"):
        return model
    from pathlib import Path

    path = model.removeprefix("scripted:")
    return f"scripted:{Path(path).resolve()}" if path else model


def _temporal_keys(config: Mapping[str, Any], where: Any) -> dict[str, Any]:
    keys: dict[str, Any] = {BACKEND_KEY: TEMPORAL_KEY, TEMPORAL_KEY: where.to_config()}
    if config.get("approval") == "interactive":
        keys["approval"] = "park"
    return keys


def resumed_changes(prepared: Any, where: Any) -> dict[str, Any]:
    """What a resumed run's recorded config must become for its workers, who rebuild the run
    from it: this resume's overrides (model, approval, policy, options) and the backend."""
    recorded = prepared.runner.store.get_run(prepared.state.run_id).config
    chosen = dict(prepared.config or recorded)
    chosen.update(_temporal_keys(chosen, where))
    return {k: v for k, v in chosen.items() if recorded.get(k) != v}


def steps_per_execution() -> int:
    """Steps a workflow execution takes before it continues as new: ``$CONTINUE_ENV`` or
    ``CONTINUE_AS_NEW_AFTER``."""
    raw = os.environ.get(CONTINUE_ENV, "")
    if not raw:
        return CONTINUE_AS_NEW_AFTER
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{CONTINUE_ENV}={raw!r}: expected a number of steps >= 1")
    return int(raw)


def is_temporal(config: Mapping[str, Any]) -> bool:
    return config.get(BACKEND_KEY) == TEMPORAL_KEY


async def drive(prepared: Any, where: Any, *, observer: Any = None, detach: bool = False,
                continue_after: int | None = None, hints: Hints | None = None) -> Any:
    """Create the run if new, start its workflow from its current step (or attach to the one
    already running it), and follow it until it ends or parks (``detach``: return at once).
    A ``RunResult`` like a local drive's."""
    from engine.core.runner import RunResult
    from engine.session.compose import preflight_and_create
    from engine.temporal.client import Follow, connect, running_workflow
    from engine.temporal.refs import RunRef
    from engine.temporal.step import has_effects, location_of

    client = await connect(where.address, where.namespace)
    store = prepared.runner.store
    state = prepared.state
    handle = await running_workflow(client, state.run_id) if prepared.resumed else None
    if handle is not None:
        _check_attachable(prepared, where)
    else:
        await preflight_and_create(prepared)
        model = prepared.runner.parts.models.started()
        if model is not None:  # the workers build their own
            await model.aclose()
        ref = RunRef(state.run_id, location_of(store), state.step,
                     has_effects(prepared.machine, state.state), prepared.resumed,
                     continue_after=continue_after or steps_per_execution(),
                     decision_poll_s=decision_poll_s())
        if prepared.resumed:  # from now on its workflow drives it (approve signals it)
            changes = resumed_changes(prepared, where)
            if changes:
                store.update_config(state.run_id, changes)
        handle = await _start_held(client, ref, where, store)
        if handle is None:  # started by another command in between: follow that one
            handle = client.get_workflow_handle(workflow_id_of(state.run_id))
    if detach:
        return RunResult(state, "running")
    hints = hints or Hints()
    how = Follow(client, handle, where, observer or _silent, hints.warn,
                 hints.command("show", state.run_id),
                 hints.worker(where))
    status = await follow(store, state.run_id, how)
    info = store.get_run(state.run_id)
    error = info.error
    if status == "waiting_approval":
        from engine.permissions.parking import parked_line

        error = parked_line(state.run_id, store.approval_requests(state.run_id))
    return RunResult(store.load_state(state.run_id), status, error)  # type: ignore[arg-type]


async def _start_held(client: Any, ref: Any, where: Any, store: Any) -> Any:
    """Start the run's workflow with the workers' lease already on its row: until a worker
    takes the first step, ``runs`` and ``show`` call the run running, not crashed (a row
    left running without a lease reads as crashed). Taken before the start, so it never
    overwrites the lease of a worker that is already driving it."""
    from engine.temporal.client import start
    from engine.temporal.step import LEASE_TTL_S, workflow_owner

    owner = workflow_owner(ref.run_id)
    store.acquire_lease(ref.run_id, owner, LEASE_TTL_S)
    try:
        return await start(client, ref, where)
    except BaseException:
        store.release_lease(ref.run_id, owner)
        raise


async def follow(store: Any, run_id: str, how: Any) -> str:
    """Follow the run; a workflow that ended without the store saying so has its cause
    recorded in the run (``show`` and ``runs`` show it) and fails the command (exit 1)."""
    from engine.temporal.client import WorkflowEndedError
    from engine.temporal.client import follow as follow_events

    try:
        return await follow_events(store, run_id, how)
    except WorkflowEndedError as exc:
        info = store.get_run(run_id)
        if info.status not in ("completed", "failed"):
            store.set_status(run_id, "failed", str(exc))
        return "failed"


def _check_attachable(prepared: Any, where: Any) -> None:
    """Attaching to a running workflow keeps the run as its workflow drives it: a resume that
    asks for other options (model, approval, policy, task queue) is refused."""
    changes = {k: v for k, v in resumed_changes(prepared, where).items()
               if k not in (BACKEND_KEY,)}
    if changes:
        run_id = prepared.state.run_id
        raise UsageError(f"run {run_id} is being driven by its workflow on Temporal; a resume "
                         f"cannot change {', '.join(sorted(changes))} now (resume without "
                         "them to follow it)")


def decision_poll_s() -> float:
    """How often a parked workflow reads the store for a decision: ``$DECISION_POLL_ENV`` or
    ``DECISION_POLL_S`` (seconds)."""
    from engine.temporal.refs import DECISION_POLL_S

    raw = os.environ.get(DECISION_POLL_ENV, "")
    if not raw:
        return DECISION_POLL_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise UsageError(f"{DECISION_POLL_ENV}={raw!r}: expected a number of seconds > 0")
    return seconds


def workflow_id_of(run_id: str) -> str:
    from engine.temporal.refs import workflow_id

    return workflow_id(run_id)


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def notify_decision(store: Any, run_id: str) -> str | None:
    """After approve/deny: deliver the decision to the run's workflow when Temporal drives the
    run (``engine.temporal.outbox``); the line to print, or None for a local run.

    Temporal unreachable: the decision stays in the store, which the parked workflow reads
    once Temporal is back. No running workflow: ``DecisionUndeliveredError`` (exit 2)."""
    info = store.get_run(run_id)
    if not is_temporal(info.config):
        return None
    require()
    import anyio

    from engine.temporal.client import Target
    from engine.temporal.outbox import deliver
    from engine.vocabulary.errors import DecisionUndeliveredError

    where = Target.from_config(info.config.get(TEMPORAL_KEY) or {})
    delivery = anyio.run(deliver, where, info.run_id)
    if delivery.how == "told":
        return f"the run's workflow was told; a worker continues run {info.run_id}"
    if delivery.how == "later":
        return (f"Temporal cannot be reached now ({delivery.detail}); the decision is stored "
                "and the run's workflow takes it up once Temporal is back, with no further "
                "command")
    raise DecisionUndeliveredError(
        f"the decision is recorded, but run {info.run_id} has no running workflow on "
        f"Temporal at {where.address} (namespace {where.namespace}) to take it up",
        info.run_id)


def drive_command(args: argparse.Namespace, store: Any, prepared: Any, observer: Any,
                  report: Callable[..., int]) -> int:
    """``run``/``resume --backend temporal``: the exit codes of a local drive (0, 1, 5), or
    0 and the run id with ``--detach``; 6 when this command stops following a run that goes
    on (Ctrl-C, SIGTERM, SIGHUP, Temporal or the store lost)."""
    import anyio

    where = target(args)
    for note in mark_temporal(prepared, where):
        if not args.quiet:
            observer.line(f"[dim]{note}[/]")
    run_id = prepared.state.run_id
    detach = bool(getattr(args, "detach", False))
    hints = hints_for(args)
    try:
        result = anyio.run(partial(_until_signal, partial(
            drive, prepared, where, observer=observer, detach=detach, hints=hints)))
    except (KeyboardInterrupt, _Stopped):  # only the following stops: the workers go on
        from engine.vocabulary.errors import RunContinuesError

        raise RunContinuesError(f"stopped following run {run_id}; the workers go on with it: "
                                f"follow it with {hints.command('show', run_id)}") from None
    if detach:
        if args.json:
            sys.stdout.write(json.dumps({"run_id": run_id, "status": "running"}) + "\n")
        else:
            print(run_id)
        return 0
    return report(args, store, run_id, observer, result)


class _Stopped(Exception):
    """A signal asked the follower to stop."""


async def _until_signal(work: Callable[[], Any]) -> Any:
    """Await ``work()``; SIGINT, SIGTERM or SIGHUP stop it (``_Stopped``)."""
    import signal

    import anyio

    result: list[Any] = []
    stopped = False

    async def watch(scope: Any) -> None:
        nonlocal stopped
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as sigs:
            async for _ in sigs:
                stopped = True
                scope.cancel()
                return

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            result.append(await work())
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the work's own error, not the group anyio wraps it in
        leaves = group.exceptions
        if len(leaves) == 1:
            raise leaves[0] from None
        raise
    if stopped and not result:
        raise _Stopped
    return result[0]


def executor_for(args: argparse.Namespace) -> Callable[[Any], Any]:
    """``eval --backend temporal``: each task's run (new or resumed) driven by the workers."""
    where = target(args)

    async def run_on_temporal(prepared: Any) -> Any:
        mark_temporal(prepared, where)
        return await drive(prepared, where)

    return run_on_temporal

