"""Live output that costs next to nothing: plain lines to a pipe, streamed text coalesced.

When stdout is not a terminal nobody reads colours, so a run's events become plain lines
written straight to the stream (no rich rendering), in the same words as the rich console
(both take them from ``engine.ui.event_lines``).
Streamed text deltas are gathered by ``engine.ui.coalesce.Coalescer``, as in the console.
Output is best effort: a closed or broken stream stops the output, never the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from engine.events import EventKind
from engine.ui.coalesce import Coalescer
from engine.ui.event_lines import event_lines, plain_text

_MARKUP = re.compile(r"(?<!\\)\[/?[a-z #0-9_.]*\]")
"""The console markup the CLI puts in ``line()`` texts: ``[bold red]``, ``[dim]``, ``[/]``."""


def strip_markup(text: str) -> str:
    """``text`` without console markup tags; ``\\[`` escapes become ``[``."""
    return _MARKUP.sub("", text).replace("\\[", "[")


def wants_plain(stream: TextIO) -> bool:
    """Plain lines unless the stream is a terminal or ``FORCE_COLOR`` asks for colour
    (``NO_COLOR`` wins over ``FORCE_COLOR``)."""
    try:
        if stream.isatty():
            return False
    except (OSError, ValueError):
        return True
    return not os.environ.get("FORCE_COLOR") or bool(os.environ.get("NO_COLOR"))


def make_ui(stream: TextIO, *, quiet: bool = False) -> tuple[Any, Any]:
    """The run's observer and interactive prompter for ``stream``.

    Piped: ``PlainObserver`` (rich is imported only if a person is asked something);
    a terminal: rich's ``ConsoleObserver``. ``quiet``: the summary lines only.
    """
    if wants_plain(stream):
        return PlainObserver(stream, events=not quiet), _lazy_prompter(stream)
    from engine.ui.console import ConsoleObserver, make_console, make_prompter

    console = make_console(stream)
    return ConsoleObserver(console, events=not quiet), make_prompter(console)


def _lazy_prompter(stream: TextIO) -> Any:
    async def prompter(questions: Sequence[Any]) -> Any:
        from engine.ui.console import make_console, make_prompter

        return await make_prompter(make_console(stream))(questions)

    return prompter




class PlainObserver:
    """Prints a run's events as plain lines on ``stream`` (an ``Observer``).

    ``events=False`` (``run --quiet``) drops the events and keeps ``line()`` (the summary).
    """

    def __init__(self, stream: TextIO, *, events: bool = True) -> None:
        self.stream = stream
        self.events = events
        self.quiet = False
        self._broken = False
        self._in_text = False
        self._text = Coalescer(self._put)

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        if not self.events or self._broken:
            return
        if kind == EventKind.TEXT_DELTA:
            if not self._in_text:
                self._put("  model: ")
                self._in_text = True
            self._text.add(payload["text"])
            return
        lines = event_lines(kind, payload)
        if lines is None and kind != EventKind.RUN_END:
            return
        self._end_text()
        for line in lines or ():
            self._put(plain_text(line) + "\n")
        if kind in (EventKind.STEP_COMMIT, EventKind.RUN_END):
            self._flush_stream()

    def line(self, text: str, style: str = "") -> None:
        """One line of the CLI's own (summary, notes); markup is dropped."""
        self._end_text()
        self._put(strip_markup(text) + "\n")
        self._flush_stream()

    def close(self) -> None:
        self._end_text()
        self._flush_stream()

    # -- writing ---------------------------------------------------------------------------

    def _end_text(self) -> None:
        if self._in_text:
            self._text.flush()
            self._put("\n")
            self._in_text = False

    def _put(self, text: str) -> None:
        if self._broken:
            return
        try:
            self.stream.write(text)
        except (OSError, ValueError):  # closed or broken stream: the run goes on silently
            self._broken = True

    def _flush_stream(self) -> None:
        if self._broken:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self._broken = True

