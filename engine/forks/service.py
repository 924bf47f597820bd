"""Forking a run: a new run at step N of a stored one, with its workspace as it was then.

``fork`` reads the run as it stood when step N began (``Store.state_at``), rebuilds the
workspace in a new folder (``engine.forks.workspace``), and stores the new run in one
transaction (``Store.fork_run``): the original's rows of steps 0 to N-1 copied, step N begun
and ``interrupted``, ``forked_from`` recorded. ``resume`` continues it like any stopped run.
The original run, its rows and its folder are only read.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.forks.workspace import History, NotRebuilt, build, read_history
from engine.store.base import Store
from engine.vocabulary.errors import ForkNotExactError, UsageError
from engine.vocabulary.state import ForkOrigin, RunInfo, StepRecord


@dataclass(frozen=True, slots=True)
class ForkResult:
    """A fork made: the new run, where it came from, and how exact its workspace is."""

    run_id: str
    forked_from: ForkOrigin
    state: str
    workspace: str
    not_rebuilt: tuple[NotRebuilt, ...] = ()
    """Files that hold their latest content, not the step's (only with ``allow_partial``)."""

    @property
    def exact(self) -> bool:
        return not self.not_rebuilt

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "forked_from": self.forked_from.to_json(),
                "status": "interrupted", "state": self.state, "step": self.forked_from.step,
                "workspace": self.workspace, "exact": self.exact,
                "not_rebuilt": [n.to_json() for n in self.not_rebuilt]}


def fork(store: Store, run_id: str, step: int, *, new_id: str,
         workspace: Path | None = None, allow_partial: bool = False,
         clock: Callable[[], float] = time.time) -> ForkResult:
    """Make run ``new_id`` from ``run_id`` at ``step``; ``ForkNotExactError`` (nothing made)
    when some file cannot be rebuilt and ``allow_partial`` is not given."""
    info = store.get_run(run_id)
    committed = store.transitions(info.run_id)  # no row decoded: the cheap check first
    if not (0 <= step < len(committed) and committed[step][0] == step):
        _check_step(info, store.steps(info.run_id), step)
    source = Path(info.workspace)
    if not source.is_dir():
        raise UsageError(f"run {info.run_id}: its workspace {source} is gone; a fork copies it")
    history = read_history(store, info.run_id, source)
    missing = history.not_rebuilt(step)
    if missing and not allow_partial:
        raise ForkNotExactError(_refusal(info.run_id, step, missing))
    dest = (workspace or source.parent / new_id).resolve()
    _check_dest(source.resolve(), dest)
    state = store.state_at(info.run_id, step)
    now = clock()
    new = RunInfo(new_id, info.machine, info.machine_path, info.machine_hash, "interrupted",
                  state.state, str(dest), now, now, step, state.usage.input_tokens,
                  state.usage.output_tokens, state.usage.cost_usd, _settings(info),
                  forked_from=ForkOrigin(info.run_id, step))
    build(source, dest, history.files_at(step))
    try:
        store.fork_run(new, info.run_id, step)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # no folder without its run
        raise
    return ForkResult(new_id, ForkOrigin(info.run_id, step), state.state, str(dest),
                      tuple(missing))


DRIVER_KEYS = ("backend", "temporal")
"""Keys of a run's recorded config that say who drives it (``resume --backend temporal``
records them): a fork is driven by whoever resumes it, so it does not inherit them."""


def _settings(info: RunInfo) -> dict[str, Any]:
    """The original's recorded settings (machine, model, approval, policy, ...) for the fork."""
    return {k: v for k, v in info.config.items() if k not in DRIVER_KEYS}


def forkable_steps(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Each step a fork can start at: its state, the snapshot its data is read from (-1: the
    run's start), and whether its workspace can be rebuilt: ``exact``, ``partial`` (which
    files not, and why) or ``missing`` (the run's folder is gone: no fork)."""
    info = store.get_run(run_id)
    steps = store.steps(info.run_id)
    snapshots = [c.seq for c in store.checkpoints(info.run_id)]
    history = _history(store, info)
    out = []
    for s in steps:
        if not s.action or not _committed_before(steps, s.seq):
            continue
        missing = history.not_rebuilt(s.seq) if history else []
        rebuilt = "missing" if history is None else "partial" if missing else "exact"
        out.append({"step": s.seq, "state": s.state,
                    "checkpoint": _snapshot_before(snapshots, s.seq), "workspace": rebuilt,
                    "not_rebuilt": [m.to_json() for m in missing]})
    return out


def _history(store: Store, info: RunInfo) -> History | None:
    root = Path(info.workspace)
    return read_history(store, info.run_id, root) if root.is_dir() else None


def _snapshot_before(snapshots: list[int], step: int) -> int:
    return max((s for s in snapshots if s < step), default=-1)


def _committed_before(steps: list[StepRecord], step: int) -> bool:
    return all(s.status == "succeeded" for s in steps[:step])


def _check_step(info: RunInfo, steps: list[StepRecord], step: int) -> None:
    """A fork starts at a step that ran an action, with every step before it committed."""
    numbers = f"0 to {steps[-1].seq}" if steps else "none"
    where = f"run {info.run_id} has steps {numbers} (show --json lists forkable_steps)"
    if step == len(steps) and steps and steps[-1].status == "succeeded":
        raise UsageError(f"--step {step}: the run ended there ({steps[-1].dest}); fork an "
                         "earlier step")
    if not 0 <= step < len(steps) or steps[step].seq != step:
        raise UsageError(f"--step {step}: {where}")
    if not steps[step].action:
        raise UsageError(f"--step {step}: step {step} is the run's end ({steps[step].state}); "
                         f"fork an earlier step")
    if not _committed_before(steps, step):
        raise UsageError(f"--step {step}: a step before it did not commit; {where}")


def _check_dest(source: Path, dest: Path) -> None:
    if dest.exists():
        raise UsageError(f"--workspace {dest}: it exists; a fork's workspace is a new folder")
    if dest.is_relative_to(source):
        raise UsageError(f"--workspace {dest}: it is inside the workspace it is copied from")


def _refusal(run_id: str, step: int, missing: list[NotRebuilt]) -> str:
    first = missing[0]
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return (f"run {run_id} at step {step}: {first.path} cannot be rebuilt as it was: "
            f"{first.reason}{more}; --allow-partial forks anyway, keeping its latest content")


__all__ = ["ForkResult", "fork", "forkable_steps"]
