"""Best-effort standard streams: output that cannot be written never stops a run.

A reader that went away (``| head``), a terminal that closed, or a stream closed before the
program started (``>&-``) must not turn a run that is doing its work into a traceback: the
run goes on, its database is the record, and the exit code says how it ended.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, TextIO

_STREAMS = ("stdin", "stdout", "stderr")


class BestEffortWriter(io.TextIOBase):
    """A text stream whose writes never raise: once the other end is gone, output is dropped.

    The descriptor is then pointed at ``/dev/null``, so the interpreter's final flush and
    anything else writing to it find somewhere to write.
    """

    def __init__(self, stream: TextIO, fd: int) -> None:
        self.stream = stream
        self.fd = fd
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                return self.stream.write(text)
            except (OSError, ValueError):
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._lose()

    def isatty(self) -> bool:
        try:
            return not self.lost and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self.fd

    def writable(self) -> bool:
        return True

    @property
    def buffer(self) -> Any:
        """The raw binary stream, for protocols that speak bytes (an MCP server on stdio)."""
        return self.stream.buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)

    def _lose(self) -> None:
        self.lost = True
        _to_devnull(self.fd)


def guard() -> dict[str, Any]:
    """Make stdin, stdout and stderr safe for the rest of the process; return the originals.

    A descriptor closed at start is opened on ``/dev/null`` (so no database or pipe can take
    its number), and stdout and stderr become ``BestEffortWriter`` s.
    """
    saved = {name: getattr(sys, name) for name in _STREAMS}
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            _to_devnull(fd)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        if isinstance(stream, BestEffortWriter):
            continue
        if stream is None:
            stream = open(fd, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        setattr(sys, name, BestEffortWriter(stream, fd))
    return saved


def release(saved: dict[str, Any]) -> None:
    """Flush what is pending (where it still can be written) and put the originals back."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, BestEffortWriter):
            stream.flush()
    for name, stream in saved.items():
        if stream is not None:
            setattr(sys, name, stream)


def _to_devnull(fd: int) -> None:
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        if devnull != fd:
            os.dup2(devnull, fd)
    finally:
        if devnull != fd:
            os.close(devnull)
