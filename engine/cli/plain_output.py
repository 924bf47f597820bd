"""Live output that costs next to nothing: plain lines to a pipe.

When stdout is not a terminal nobody reads colours, so a run's events become plain lines
written straight to the stream (no rich rendering), in the same words as the rich console
(both take them from ``engine.cli.event_lines``).
Streamed text arrives already coalesced (``engine.models.base.collect_turn`` gathers a model's
pieces into few, larger deltas before any observer sees them), so each delta is written as it
comes: a slow model's answer appears as it is produced. Lines are gathered and written in one
write when something may wait next (a step begins, a tool starts, a retry sleeps, the run
ends), so nothing is held back while the run waits. Inside the run's event loop that write
waits ``FLUSH_AFTER_S`` for what follows: a run that does not wait (a scripted model, a file
read) writes its lines a few times a second, not several times per step (each write to a pipe
is a system call and wakes the reader), and a run that waits is shown within that time;
``close`` writes what is held when the loop has ended.
Output is best effort: a closed or broken stream stops the output, never the run.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from engine.cli.event_lines import RENDER, visible
from engine.vocabulary.events import EventKind

MAX_PENDING_CHARS = 16_384
"""Gathered lines beyond this many characters are written at once."""
FLUSH_AFTER_S = 0.05
"""Inside an event loop, how long gathered lines wait for more before they are written."""
WAITS_AFTER: frozenset[str] = frozenset({
    EventKind.STEP_BEGIN, EventKind.TOOL_STARTED, EventKind.TOOL_OUTPUT, EventKind.MODEL_RETRY,
    EventKind.SANDBOX, EventKind.MCP_TOOLS_CHANGED, EventKind.MCP_SERVER_FAILED,
    EventKind.CONTEXT_COMPRESSED, EventKind.RUN_END})

"""Events after which the run may wait (a model, a command, a retry's sleep) or end: the
gathered lines are written then (a step's beginning only when its action ``waits``). Others
(a model call's totals, a tool's result, an approval, a step's commit) are followed at once by
more output or by one of these (a commit by the next step's begin or the run's end)."""

TEXT_DELTA, RUN_END = str(EventKind.TEXT_DELTA), str(EventKind.RUN_END)
STEP_BEGIN = str(EventKind.STEP_BEGIN)

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
        observer = PlainObserver(stream, events=not quiet)
        return observer, _lazy_prompter(stream, observer.close)
    from engine.cli.console import ConsoleObserver, make_console, make_prompter

    console = make_console(stream)
    return ConsoleObserver(console, events=not quiet), make_prompter(console)


def _lazy_prompter(stream: TextIO, before: Callable[[], None]) -> Any:
    async def prompter(questions: Sequence[Any]) -> Any:
        from engine.cli.console import make_console, make_prompter

        before()  # the gathered lines come before the question
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
        self._out: list[str] = []
        self._out_chars = 0
        self._timer: asyncio.TimerHandle | None = None

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        if not self.events or self._broken:
            return
        render = RENDER.get(kind)
        if render is None:
            if kind == TEXT_DELTA:
                self._text(payload["text"])
            elif kind == RUN_END:
                self.close()
            return
        lines = render(payload)
        if not lines:
            return
        if self._in_text:
            self._end_text()
        if len(lines) == 1:  # most events: one line, joined without building a list
            text = visible("".join(lines[0][::2])) + "\n"
        else:
            text = "".join([visible("".join(line[::2])) + "\n" for line in lines])
        self._out.append(text)
        self._out_chars += len(text)
        if self._out_chars >= MAX_PENDING_CHARS:
            self._flush_stream()
        elif kind in WAITS_AFTER and (kind != STEP_BEGIN or payload.get("waits", True)):
            self._flush_soon()

    def line(self, text: str, style: str = "") -> None:
        """One line of the CLI's own (summary, notes); markup is dropped."""
        self._end_text()
        self._put(visible(strip_markup(text)) + "\n")
        self._flush_stream()

    def close(self) -> None:
        """Write everything gathered. The CLI calls it once the run's event loop has ended,
        however it ended: no timer of that loop will write the held lines any more."""
        self._end_text()
        self._flush_stream()

    # -- writing ---------------------------------------------------------------------------

    def _text(self, text: str) -> None:
        """A piece of the model's answer, coalesced at its source: written now, so a slow
        model's answer appears as it is produced."""
        if not self._in_text:
            self._put("  model: ")
            self._in_text = True
        self._put(visible(text))
        self._flush_soon()

    def _end_text(self) -> None:
        if self._in_text:
            self._put("\n")
            self._in_text = False

    def _put(self, text: str) -> None:
        """Gather ``text``; it is written with the next ``_flush_stream``."""
        self._out.append(text)
        self._out_chars += len(text)

    def _flush_soon(self) -> None:
        """Write the gathered lines within ``FLUSH_AFTER_S`` (inside an event loop), or now."""
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: nothing could write them later
            self._flush_stream()
            return
        self._timer = loop.call_later(FLUSH_AFTER_S, self._flush_stream)

    def _flush_stream(self) -> None:
        """Write the gathered lines in one write, then flush the stream."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = "".join(self._out)
        self._out.clear()
        self._out_chars = 0
        if self._broken:
            return
        try:
            if text:
                self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # closed or broken stream: the run goes on silently
            self._broken = True
