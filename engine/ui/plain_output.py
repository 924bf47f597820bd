"""Live output that costs next to nothing: plain lines to a pipe.

When stdout is not a terminal nobody reads colours, so a run's events become plain lines
written straight to the stream (no rich rendering), in the same words as the rich console
(both take them from ``engine.ui.event_lines``).
Streamed text arrives already coalesced (``engine.models.base.collect_turn`` gathers a model's
pieces into few, larger deltas before any observer sees them), so each delta is written as it
comes: a slow model's answer appears as it is produced. Lines are gathered and written in one
write when something may wait next (a step begins, a tool starts, a retry sleeps, the run
ends), so the stream sees a few writes per step even when it is unbuffered
(``PYTHONUNBUFFERED``, ``python -u``) and nothing is held back while the run waits.
Output is best effort: a closed or broken stream stops the output, never the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from engine.events import EventKind
from engine.ui.event_lines import RENDER

MAX_PENDING_CHARS = 16_384
"""Gathered lines beyond this many characters are written at once."""
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
    from engine.ui.console import ConsoleObserver, make_console, make_prompter

    console = make_console(stream)
    return ConsoleObserver(console, events=not quiet), make_prompter(console)


def _lazy_prompter(stream: TextIO, before: Callable[[], None]) -> Any:
    async def prompter(questions: Sequence[Any]) -> Any:
        from engine.ui.console import make_console, make_prompter

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
        if self._in_text:
            self._end_text()
        lines = render(payload)
        if len(lines) == 1:  # most events: one line, joined without building a list
            text = "".join(lines[0][::2]) + "\n"
        else:
            text = "".join(["".join(line[::2]) + "\n" for line in lines])
        self._out.append(text)
        self._out_chars += len(text)
        waits = kind in WAITS_AFTER and (kind != STEP_BEGIN or payload.get("waits", True))
        if waits or self._out_chars >= MAX_PENDING_CHARS:
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

    def _text(self, text: str) -> None:
        """A piece of the model's answer, coalesced at its source: written now, so a slow
        model's answer appears as it is produced."""
        if not self._in_text:
            self._put("  model: ")
            self._in_text = True
        self._put(text)
        self._flush_stream()

    def _end_text(self) -> None:
        if self._in_text:
            self._put("\n")
            self._in_text = False

    def _put(self, text: str) -> None:
        """Gather ``text``; it is written with the next ``_flush_stream``."""
        self._out.append(text)
        self._out_chars += len(text)

    def _flush_stream(self) -> None:
        """Write the gathered lines in one write, then flush the stream."""
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
