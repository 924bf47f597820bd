"""Fault injection: kill the process at a named point, as a crash would, to test recovery.

``ENGINE_FAULTS=crash_after:exec_tool:2`` kills the process with SIGKILL right after the second
``exec_tool`` step of this process has committed; ``crash_before:STATE:N`` right after the
step's pre-checkpoint, before its action runs; ``crash_during:STATE:N`` inside the step, after
the N-th tool call was recorded as started and before it runs; ``crash_after_effect:STATE:N``
after the N-th tool call returned and before its result is recorded (the effect happened, the
ledger does not know). Several faults: comma-separated.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from engine.vocabulary.errors import UsageError

Point = Literal["before", "during", "after_effect", "after"]
_POINTS = ("before", "during", "after_effect", "after")


@dataclass
class Faults:
    """The faults armed in this process and how often each point was reached."""

    armed: dict[tuple[str, str], int] = field(default_factory=dict)
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)

    @classmethod
    def parse(cls, text: str | None) -> Faults:
        armed: dict[tuple[str, str], int] = {}
        for item in filter(None, (t.strip() for t in (text or "").split(","))):
            parts = item.split(":")
            point = parts[0].removeprefix("crash_")
            if len(parts) != 3 or point not in _POINTS or not parts[2].isdigit():
                raise UsageError(
                    f"ENGINE_FAULTS: {item!r} is not crash_before|crash_during|"
                    "crash_after_effect|crash_after:STATE:N (e.g. crash_after:exec_tool:2)")
            armed[(point, parts[1])] = int(parts[2])
        return cls(armed)

    @classmethod
    def from_env(cls) -> Faults:
        return cls.parse(os.environ.get("ENGINE_FAULTS"))

    def __call__(self, point: str, state: str) -> None:
        """Reach ``point`` (one of ``Point``; a plain ``str`` as the runner's hook passes it)
        in ``state``; dies here if a fault is armed for this occurrence."""
        if not self.armed:
            return
        key = (point, state)
        self.seen[key] += 1
        if self.armed.get(key) == self.seen[key]:
            os.kill(os.getpid(), signal.SIGKILL)
