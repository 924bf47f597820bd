"""One step of a run as a worker takes it: the runner's own loop, limited to one step.

Each call rebuilds the run's parts from its stored config (``Runs.prepare_resume``), reads the
run from the store, and lets the runner drive exactly one step: prepare, effect through
the ledger, commit. A retried attempt finds the step in the store as a resume would: committed
(the reply was lost: report it), or left running (``resumed``: the ledger settles its calls).
Nothing here imports ``temporalio``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.actions.registry import ACTIONS
from engine.spec.model import MachineSpec
from engine.store.base import LeaseOwner, Store
from engine.store.sql.rows import WORKERS_PREFIX
from engine.store.url import StoreTarget, parse_store_url
from engine.temporal.refs import FailRef, StepRef, StepReply
from engine.vocabulary.errors import StoreError, UsageError

logger = logging.getLogger(__name__)

EFFECT_ACTIONS = frozenset({"call_model", "run_machine"})
"""Actions without ``side_effects`` that still reach outside the run (a model call costs money
and time; a child run is driven to its end inside the step): run as heartbeating activities
like the tool-running ones."""
LEASE_TTL_S = 60.0
"""The run's lease while a step runs and between steps: held by "the workflow's workers", so a
single-process ``resume`` cannot drive the run while its workflow lives; it lapses this long
after the last step if every worker is gone (the run then shows as ``crashed``)."""
ENDED = ("completed", "failed")


def location_of(store: Store) -> str:
    """How a run's workflow names its store: the SQLite file's absolute path, or the server's
    URL without its password (workflow history is no place for a secret; workers that need
    one are given the full URL with ``--store``)."""
    path = getattr(store, "path", None)
    if path is not None:
        return str(Path(path).resolve())
    return str(store.where)  # type: ignore[attr-defined]


def same_location(a: str, b: str) -> bool:
    return _normal(a) == _normal(b)


def _normal(location: str) -> str:
    target = parse_store_url(location)
    return str(target.path.resolve()) if target.path is not None else target.display


def open_store(location: str, durability: str | None = None,
               served: StoreTarget | None = None) -> Store:
    """The run's store from its location in the workflow's reference; ``served``: the store
    this worker was given (``--store``), opened with its own URL when it is that one."""
    target = (served if served is not None and same_location(served.url, location)
              else parse_store_url(location))
    return target.open(durability="full" if durability == "full" else "normal")


def workflow_owner(run_id: str) -> LeaseOwner:
    """The lease identity shared by every worker driving ``run_id``'s workflow.

    Its host is not a real host name, so the lease holds by its expiry (renewed while a step
    runs), not by one worker process being alive: the next step may run on any worker."""
    return LeaseOwner(WORKERS_PREFIX + socket.gethostname(), os.getpid(), f"temporal-{run_id}")


def has_effects(machine: MachineSpec, state: str) -> bool:
    """Whether ``state``'s action reaches outside the run (model, tool or MCP call)."""
    spec = machine.states[state]
    if spec.final:
        return False
    info = ACTIONS[spec.action or ""]
    return info.side_effects or info.name in EFFECT_ACTIONS


def _silent(kind: str, payload: Mapping[str, Any]) -> None:
    if kind == "run_end":
        logger.info("run ended: %s", dict(payload))


class StorePool:
    """Open stores kept between steps, by location and durability: a worker takes the steps of
    many runs, and opening a server's store (a connection, the schema check) costs more than
    the step itself. A store serves one step at a time; idle ones beyond ``size`` close."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._idle: dict[tuple[str, str], list[Store]] = {}
        self._keys: dict[int, tuple[str, str]] = {}

    def acquire(self, location: str, durability: str | None = None,
                served: StoreTarget | None = None) -> Store:
        key = (_normal(location), "full" if durability == "full" else "normal")
        idle = self._idle.get(key)
        if idle:
            return idle.pop()
        store = open_store(location, durability, served)
        self._keys[id(store)] = key
        return store

    def release(self, store: Store) -> None:
        key = self._keys.get(id(store))
        idle = self._idle.setdefault(key, []) if key is not None else None
        if idle is None or len(idle) >= self.size:
            self._keys.pop(id(store), None)
            store.close()
            return
        idle.append(store)

    def discard(self, store: Store) -> None:
        """Close the store of a step that failed (it is never handed out again). What it still
        buffered belongs to the abandoned attempt: a failure to write it is logged, so the
        step's own error is the one Temporal sees and retries on."""
        self._keys.pop(id(store), None)
        try:
            store.close()
        except StoreError as exc:
            logger.info("closing the store of a failed step: %s", exc)


POOL = StorePool()


class RunCache:
    """This worker's prepared runs (parts, store connection, state after its last step),
    so consecutive steps of a run skip rebuilding them and reading its history back.

    An entry is used only when the store shows the run exactly where this worker left it (no
    other worker took a step since) and the step is not a resumed one; otherwise the run is
    prepared afresh from the store, as ``resume`` would."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._runs: OrderedDict[str, Any] = OrderedDict()

    def take(self, ref: StepRef, resumed: bool) -> Any | None:
        prepared = self._runs.pop(ref.run_id, None)
        if prepared is None:
            return None
        store = prepared.runner.store
        if (resumed or prepared.state.step != ref.step
                or not same_location(location_of(store), ref.store)):
            POOL.release(store)
            return None
        info = store.get_run(ref.run_id)
        if info.steps != ref.step or info.state != prepared.state.state:
            POOL.release(store)
            return None
        prepared.runner.parts.models.forget()  # the last step's execute closed it
        return prepared

    def keep(self, prepared: Any) -> None:
        self._runs[prepared.state.run_id] = prepared
        while len(self._runs) > self.size:
            _, old = self._runs.popitem(last=False)
            POOL.release(old.runner.store)


CACHE = RunCache()


async def drive_step(ref: StepRef, *, resumed: bool, cache: RunCache = CACHE,
                     served: StoreTarget | None = None) -> StepReply:
    """Take step ``ref.step`` of the run (or report it, when an earlier attempt took it)."""
    prepared = cache.take(ref, resumed)
    if prepared is None:
        store = POOL.acquire(ref.store, served=served)
        try:
            durability = store.get_run(ref.run_id).config.get("durability")
            if durability == "full":
                POOL.release(store)
                store = POOL.acquire(ref.store, durability, served)
            prepared = _prepare(store, ref)
        except BaseException:
            POOL.discard(store)  # it may be what failed
            raise
        if isinstance(prepared, StepReply):
            POOL.release(store)
            return prepared
        # Another worker (or a local activity lost with its worker) may have begun this step:
        # settle it as a resume does. For a step nobody began, that finds nothing to settle.
        resumed = resumed or ref.step > 0
    try:
        reply, keep = await _step(prepared, ref, resumed)
    except BaseException:
        POOL.discard(prepared.runner.store)
        raise
    if keep:
        cache.keep(prepared)
    else:
        POOL.release(prepared.runner.store)
    return reply


def _prepare(store: Store, ref: StepRef) -> Any:
    """The run ready to drive, or the reply for a run that is past this step or ended."""
    from engine.runs.service import Runs

    info = store.get_run(ref.run_id)
    if info.status in ENDED:
        return StepReply(info.status, info.steps, info.state, False, info.error)
    prepared = Runs(store).prepare_resume(ref.run_id, observer=_silent)
    state, machine = prepared.state, prepared.machine
    if state.step > ref.step:  # committed by an attempt whose reply was lost
        return StepReply("running", state.step, state.state, has_effects(machine, state.state))
    if state.step < ref.step:
        raise UsageError(f"run {ref.run_id}: the store is at step {state.step}, behind the "
                         f"workflow's step {ref.step} (was the store replaced?)")
    runner = prepared.runner
    runner.owner, runner.lease_ttl_s, runner.step_limit = workflow_owner(ref.run_id), \
        LEASE_TTL_S, 1
    return prepared


async def _step(prepared: Any, ref: StepRef, resumed: bool) -> tuple[StepReply, bool]:
    """Drive one step as every run is driven (``Runs.drive``); the reply, and whether the
    prepared run may serve its next step."""
    from engine.runs.service import Runs

    runner, parts = prepared.runner, prepared.runner.parts
    if ref.step > 0 or resumed:  # the run-start events were recorded by its first step
        parts.config = replace(parts.config, start_events=())
    parts.observer = _silent  # execute wraps it again (stored stream events, OTLP)
    prepared.resumed = resumed
    result = await Runs(runner.store).drive(prepared)
    new = result.state
    prepared.state = new
    running = result.status == "running"
    if running:  # the drive kept the lease; give it a full TTL for the next step
        runner.store.acquire_lease(ref.run_id, runner.owner, LEASE_TTL_S)
    effects = running and has_effects(prepared.machine, new.state)
    return StepReply(result.status, new.step, new.state, effects, result.error), running


def fail_run(ref: FailRef, served: StoreTarget | None = None) -> None:
    """End a run whose step could not be taken at all: the store says why."""
    import time

    store = open_store(ref.store, served=served)
    try:
        if store.get_run(ref.run_id).status in ENDED:  # ended elsewhere (a local resume)
            return
        store.end_step(ref.run_id, ref.step, "failed", ref.error, time.time())
        store.set_status(ref.run_id, "failed", ref.error)
    finally:
        store.close()
