"""Temporal as a second backend: the same machines, driven one step per Temporal activity.

The workflow (``workflow.py``) only asks, step after step, for the runner's own loop to take one
step against the store (``step.py``); the store keeps messages, events, checkpoints and the
side-effect ledger, and Temporal keeps the schedule, the retries and the waiting. Payloads are
references (run id, store, step number), never messages.

Everything here but ``refs`` imports ``temporalio``, an optional extra: ``require`` turns its
absence into one line naming the extra.
"""

from __future__ import annotations

from engine.vocabulary.errors import UsageError

EXTRA_HINT = "pip install 'turnstile-fsm[temporal]'"


def require() -> None:
    """Fail with one line when the ``temporal`` extra is not installed."""
    try:
        import temporalio  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"--backend temporal needs the temporal extra: {EXTRA_HINT}") from exc


__all__ = ["EXTRA_HINT", "require"]
