"""The commands a Temporal message tells the user to run, runnable as printed: the program they
ran (``turnstile`` or ``python -m engine``), the store they chose when not the default (a
Postgres URL without its password), and where Temporal is when not the defaults.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from engine.temporal.refs import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    TEMPORAL_KEY,
)


@dataclass(frozen=True)
class Hints:
    """The commands a message tells the user to run, as they can run them: the program they
    ran and the store they chose (when not the default)."""

    prog: str = "python -m engine"
    store_flags: tuple[str, ...] = ()

    def command(self, *words: str) -> str:
        return " ".join([self.prog, *words, *self.store_flags])

    def worker(self, where: Any) -> str:
        return self.command("worker", *temporal_flags(where))

    def resume(self, run_id: str, where: Any) -> str:
        return self.command("resume", run_id, *temporal_flags(where))

    @staticmethod
    def warn(line: str) -> None:
        print(f"warning: {line}", file=sys.stderr, flush=True)


def hints_for(args: argparse.Namespace) -> Hints:
    """The hints of a command: the program as the user ran it and the store they chose
    (``engine.vocabulary.hints``: ``--db PATH`` or ``--store URL``, nothing for the default store; a
    Postgres URL without its password)."""
    from engine.store.base import display_url
    from engine.vocabulary.hints import program, store_args

    store, db = getattr(args, "store", None), getattr(args, "db", None)
    given = store or db
    if given and str(given).startswith(("postgresql://", "postgres://")):
        given = display_url(str(given))
    return Hints(program(), tuple(shlex.quote(a) for a in store_args(given)))


def resume_hint(args: argparse.Namespace, store: Any, run_id: str) -> str:
    """The command that starts a workflow for a run on Temporal again, runnable as printed."""
    from engine.temporal.client import Target

    where = Target.from_config(store.get_run(run_id).config.get(TEMPORAL_KEY) or {})
    return hints_for(args).resume(run_id, where)


def temporal_flags(where: Any) -> list[str]:
    """``--backend temporal`` and where Temporal is, when not the defaults."""
    flags = ["--backend", "temporal"]
    if where.address != (os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS):
        flags += ["--temporal-address", where.address]
    if where.namespace != DEFAULT_NAMESPACE:
        flags += ["--namespace", shlex.quote(where.namespace)]
    if where.task_queue != DEFAULT_TASK_QUEUE:
        flags += ["--task-queue", shlex.quote(where.task_queue)]
    return flags
