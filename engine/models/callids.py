"""Tool-call ids that stay unique within a run, whatever id a provider sends.

The runner pairs each tool result with its call by id, across the whole history. Providers
normally send unique ids, but some OpenAI-compatible servers send none, or reuse ``call_0`` on
every turn; such an id is replaced by ``call_<turn>_<index>`` the moment the call starts.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.vocabulary.state import Message


class CallIds:
    """Hands out the id of each new tool call in one model answer."""

    def __init__(self, history: Sequence[Message]) -> None:
        self._taken = {c.id for m in history for c in m.tool_calls}
        self._turn = sum(1 for m in history if m.role == "assistant")

    def claim(self, index: int, proposed: str | None) -> str:
        """``proposed`` when it is new to the run, else a fresh ``call_<turn>_<index>``."""
        if proposed and proposed not in self._taken:
            self._taken.add(proposed)
            return proposed
        fresh = f"call_{self._turn}_{index}"
        while fresh in self._taken:
            fresh += "x"
        self._taken.add(fresh)
        return fresh
