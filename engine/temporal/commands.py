"""The command-line side of the Temporal backend: options, ``worker``, and driving a prepared
run (new or resumed) as a workflow while following its steps from the store.

``engine.ui.cli`` and ``engine.harness.evals`` call in here only when ``--backend temporal`` is
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

from engine.errors import EXIT_INTERRUPTED, UsageError
from engine.temporal import require
from engine.temporal.refs import (
    CONTINUE_AS_NEW_AFTER,
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
)

BACKEND_KEY = "backend"
CONTINUE_ENV = "ENGINE_CONTINUE_AS_NEW_STEPS"
TEMPORAL_KEY = "temporal"


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
    prepared.create = {**create, "config": config}
    return [PARK_NOTE] if create["config"].get("approval") == "interactive" else []


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
                continue_after: int | None = None) -> Any:
    """Create the run if new, start its workflow from its current step, and follow it until
    it ends or parks (``detach``: return at once). A ``RunResult`` like a local drive's."""
    from engine.core.runner import RunResult
    from engine.session import preflight_and_create
    from engine.temporal.client import connect, follow, start
    from engine.temporal.refs import RunRef
    from engine.temporal.step import has_effects, location_of

    client = await connect(where.address, where.namespace)
    store = prepared.runner.store
    await preflight_and_create(prepared)
    model = prepared.runner.parts.models.started()
    if model is not None:  # the workers build their own
        await model.aclose()
    state = prepared.state
    ref = RunRef(state.run_id, location_of(store), state.step,
                 has_effects(prepared.machine, state.state), prepared.resumed,
                 continue_after=continue_after or steps_per_execution())
    if prepared.resumed:  # from now on its workflow drives it (approve signals it)
        changes = resumed_changes(prepared, where)
        if changes:
            store.update_config(state.run_id, changes)
    handle = await start(client, ref, where)
    if detach:
        return RunResult(state, "running")
    status = await follow(store, state.run_id, handle, observer or _silent)
    info = store.get_run(state.run_id)
    error = info.error
    if status == "waiting_approval":
        from engine.permissions.parking import parked_line

        error = parked_line(state.run_id, store.approval_requests(state.run_id))
    return RunResult(store.load_state(state.run_id), status, error)  # type: ignore[arg-type]


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    return None


def notify_decision(store: Any, run_id: str) -> str | None:
    """After approve/deny: wake the run's workflow when Temporal drives the run; the line to
    print, or None for a local run."""
    info = store.get_run(run_id)
    if not is_temporal(info.config):
        return None
    require()
    import anyio

    from engine.temporal.client import Target, signal_decided

    where = Target.from_config(info.config.get(TEMPORAL_KEY) or {})
    anyio.run(signal_decided, where, info.run_id)
    return f"the run's workflow was told; a worker continues run {info.run_id}"


def drive_command(args: argparse.Namespace, store: Any, prepared: Any, observer: Any,
                  report: Callable[..., int]) -> int:
    """``run``/``resume --backend temporal``: the exit codes of a local drive (0, 1, 5), or
    0 and the run id with ``--detach``."""
    import anyio

    where = target(args)
    for note in mark_temporal(prepared, where):
        if not args.quiet:
            observer.line(f"[dim]{note}[/]")
    run_id = prepared.state.run_id
    detach = bool(getattr(args, "detach", False))
    try:
        result = anyio.run(partial(drive, prepared, where, observer=observer, detach=detach))
    except KeyboardInterrupt:  # only the following stops: the workers go on with the run
        print(f"stopped following run {run_id}; the workers go on with it (python -m engine "
              f"show {run_id})", file=sys.stderr)
        return EXIT_INTERRUPTED
    if detach:
        if args.json:
            sys.stdout.write(json.dumps({"run_id": run_id, "status": "running"}) + "\n")
        else:
            print(run_id)
        return 0
    return report(args, store, run_id, observer, result)


def executor_for(args: argparse.Namespace) -> Callable[[Any], Any]:
    """``eval --backend temporal``: each task's run (new or resumed) driven by the workers."""
    where = target(args)

    async def run_on_temporal(prepared: Any) -> Any:
        mark_temporal(prepared, where)
        return await drive(prepared, where)

    return run_on_temporal

