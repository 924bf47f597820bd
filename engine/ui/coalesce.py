"""Coalescing streamed text: deltas of a few characters become few, larger writes.

Both live outputs (the rich console and the plain writer) take streamed model text through a
``Coalescer``: it writes on a newline, at a size threshold, or once the oldest buffered piece is
``max_delay_s`` old, so a 500-byte answer is one or a few writes instead of forty.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FLUSH_CHARS = 1024
"""Buffered text beyond this many characters is written at once."""
FLUSH_DELAY_S = 0.05
"""Buffered text this old is written when the next piece arrives."""


class Coalescer:
    """Buffers streamed text; ``write`` receives it in few, larger pieces."""

    def __init__(self, write: Callable[[str], None], *, max_chars: int = FLUSH_CHARS,
                 max_delay_s: float = FLUSH_DELAY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self._max_chars = max_chars
        self._max_delay_s = max_delay_s
        self._clock = clock
        self._parts: list[str] = []
        self._size = 0
        self._since = 0.0

    def add(self, text: str) -> None:
        if not text:
            return
        now = self._clock()
        if not self._parts:
            self._since = now
        self._parts.append(text)
        self._size += len(text)
        if ("\n" in text or self._size >= self._max_chars
                or now - self._since >= self._max_delay_s):
            self.flush()

    def flush(self) -> None:
        if self._parts:
            text = "".join(self._parts)
            self._parts.clear()
            self._size = 0
            self._write(text)

    @property
    def pending(self) -> str:
        return "".join(self._parts)

    def take(self) -> str:
        """The buffered text, which is no longer buffered (the caller writes it)."""
        text = self.pending
        self._parts.clear()
        self._size = 0
        return text


__all__ = ["FLUSH_CHARS", "FLUSH_DELAY_S", "Coalescer"]
