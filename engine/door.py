"""The public front door: ``Runs`` as a program (and the CLI) gets it, and the top-level
approval functions.

``engine.runs.Runs`` leaves waking a run's backend to its caller (it sits below the backends);
this ``Runs`` wakes a run that Temporal drives whenever a parked call of it is decided, so a
decision made from Python reaches such a run as one made on the command line does.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from engine.runs.approvals import DecidedApproval, PendingApproval, Wake
from engine.runs.service import Runs as _Runs
from engine.runs.service import StoreArg
from engine.store.base import Store

if TYPE_CHECKING:
    from engine.forks.service import ForkResult


class Runs(_Runs):
    """The runs of one store: start, resume, stream, cancel, list, show, and decide parked
    approvals. ``Runs()`` uses ``$ENGINE_STORE_URL``, ``$ENGINE_DB`` or ``.engine/engine.db``;
    ``Runs("postgresql://...")``, ``Runs("sqlite:///runs.db")`` or a path name another. A
    decision on a run that Temporal drives wakes its workflow."""

    def __init__(self, store: StoreArg = None, *, db: str | os.PathLike[str] | None = None,
                 durability: Literal["normal", "full"] | None = None,
                 wake: Wake | None = None) -> None:
        super().__init__(store, db=db, durability=durability, wake=wake or wake_backend)


def wake_backend(store: Store, run_id: str) -> str | None:
    """After a decision: signal the workflow of a run that Temporal drives (None for a run
    driven in a process, which its caller resumes)."""
    from engine.temporal.commands import notify_decision

    return notify_decision(store, run_id)


def pending_approvals(run_id: str | None = None, *, store: StoreArg = None,
                      db: str | os.PathLike[str] | None = None) -> list[PendingApproval]:
    """Calls of parked runs waiting for a person's decision (``approvals`` on the CLI)."""
    return Runs(store, db=db).pending_approvals(run_id)


def approve(run_id: str, call_id: str, *, always: str | None = None, who: str | None = None,
            store: StoreArg = None,
            db: str | os.PathLike[str] | None = None) -> DecidedApproval:
    """Allow a parked call as ``approve RUN_ID CALL_ID`` does: bound to the arguments it was
    parked with, recorded in the audit log (``by=api``); ``resume`` continues the run."""
    return Runs(store, db=db).approve(run_id, call_id, always=always, who=who)


def deny(run_id: str, call_id: str, *, reason: str = "", who: str | None = None,
         store: StoreArg = None, db: str | os.PathLike[str] | None = None) -> DecidedApproval:
    """Deny a parked call; the model is told ``reason`` when the run resumes."""
    return Runs(store, db=db).deny(run_id, call_id, reason=reason, who=who)


def fork(run_id: str, step: int, *, workspace: str | os.PathLike[str] | None = None,
         allow_partial: bool = False, store: StoreArg = None,
         db: str | os.PathLike[str] | None = None) -> ForkResult:
    """A new run at step ``step`` of ``run_id``, as ``fork RUN_ID --step N`` makes it
    (``Runs.fork``); ``resume`` continues it."""
    return Runs(store, db=db).fork(run_id, step, workspace=workspace,
                                   allow_partial=allow_partial)


__all__ = ["Runs", "approve", "deny", "fork", "pending_approvals", "wake_backend"]
