"""The live console: steps, streamed model text, tool calls and output, approvals, the summary.

Rich on a terminal; plain lines when piped, unless ``FORCE_COLOR`` is set (non-empty, as
force-color.org says); ``NO_COLOR`` wins over both (rich reads it). The only
module that imports ``rich``. ``ConsoleObserver`` is an ``Observer``; ``ask_approvals`` is the
interactive ``Prompter``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import anyio
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from engine.cli.event_lines import event_lines, segments, visible
from engine.permissions.approvals import Answer, PendingQuestion
from engine.vocabulary.events import EventKind


def make_console(stream: TextIO | None = None) -> Console:
    stream = stream or sys.stdout
    return Console(file=stream, highlight=False, soft_wrap=True,
                   force_terminal=_force_terminal(stream))


def _force_terminal(stream: TextIO) -> bool | None:
    """``True`` forces colour (``FORCE_COLOR``), ``False`` forbids it, ``None`` lets rich look."""
    if os.environ.get("NO_COLOR"):
        return None if stream.isatty() else False
    if os.environ.get("FORCE_COLOR"):
        return True
    return None if stream.isatty() else False


class ConsoleObserver:
    """Prints a run as it happens; silent when ``quiet``; only ``line()`` without ``events``
    (``run --quiet``). The words come from ``engine.cli.event_lines``; streamed text comes
    coalesced at its source (``engine.models.base.collect_turn``) and is printed as it comes,
    so a slow model's answer appears as it is produced."""

    def __init__(self, console: Console, *, quiet: bool = False, events: bool = True) -> None:
        self.console = console
        self.quiet = quiet
        self.events = events
        self._in_text = False

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        if self.quiet or not self.events:
            return
        if kind == EventKind.TEXT_DELTA:
            self._on_text_delta(payload)
            return
        lines = event_lines(kind, payload)
        if not lines:
            return
        self._end_text()
        for line in lines:
            self.console.print(Text.assemble(*segments(line)))

    def line(self, text: str, style: str = "") -> None:
        self._end_text()
        if not self.quiet:
            self.console.print(visible(text), style=style or None)

    def close(self) -> None:
        """End the run's output (``PlainObserver.close``'s twin: rich holds nothing back,
        so only an open line of model text is ended)."""
        self._end_text()

    def _end_text(self) -> None:
        if self._in_text:
            self.console.print()
            self._in_text = False

    def _on_text_delta(self, p: Mapping[str, Any]) -> None:
        if not self._in_text:
            self.console.print("  [magenta]model:[/] ", end="")
            self._in_text = True
        self.console.print(escape(visible(p["text"])), end="", markup=True)


def make_prompter(console: Console, fd: int = 0) -> Any:
    """The interactive ``Prompter``: shows every pending call, then asks about each.

    Answers are read from ``fd`` without blocking the event loop, so Ctrl-C (which cancels
    the run) ends the wait at once instead of leaving a read that holds the process open.
    """
    reader = LineReader(fd)

    async def prompter(questions: Sequence[PendingQuestion]) -> list[Answer]:
        _show_all(console, questions)
        return [await _ask_one(console, reader, q) for q in questions]

    return prompter


class LineReader:
    """Lines from a file descriptor, awaited (a terminal or pipe) or read at once (a file)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = b""
        self.eof = False

    async def readline(self) -> str | None:
        """The next line without its end, or ``None`` at end of input."""
        while b"\n" not in self.pending and not self.eof:
            if self._waitable():
                await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                chunk = b""
            self.eof = not chunk
            self.pending += chunk
        if not self.pending:
            return None
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode(errors="replace")

    def _waitable(self) -> bool:
        """Terminals, pipes and sockets can be waited on; files and /dev/null never block."""
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            return False
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(self.fd)


def _show_all(console: Console, questions: Sequence[PendingQuestion]) -> None:
    console.print(f"\n[bold yellow]Approval needed for {len(questions)} call(s):[/]")
    for i, q in enumerate(questions, 1):
        d = q.decision
        console.print(f"[bold]{i}. {q.call.name}[/] risk [bold]{d.risk}[/]: {escape(d.reason)}")
        console.print(escape(_preview(d.preview)))


def _preview(text: str, lines: int = 40) -> str:
    rows = text.splitlines()
    more = f"\n... ({len(rows) - lines} more lines: answer d for details)" if len(
        rows) > lines else ""
    return "\n".join(rows[:lines]) + more


async def _ask_one(console: Console, reader: LineReader, q: PendingQuestion) -> Answer:
    cap = q.decision.capability
    while True:
        console.print(f"Allow [bold]{q.call.name}[/]? \\[y]es / \\[n]o / \\[a]lways allow "
                      f"`{escape(cap)}` for this run / \\[d]etails: ", end="")
        line = await reader.readline()
        if line is None:
            return "no"
        reply = line.strip().lower()
        if reply in ("y", "yes"):
            return "yes"
        if reply in ("n", "no", ""):
            return "no"
        if reply in ("a", "always"):
            return "always"
        if reply in ("d", "details"):
            console.print(escape(q.decision.preview))
            console.print(escape(json.dumps(dict(q.call.args), indent=2)))
