"""Live output that costs next to nothing: plain lines to a pipe, streamed text coalesced.

When stdout is not a terminal nobody reads colours, so a run's events become plain lines
written straight to the stream (no rich rendering), in the same words as the rich console.
Streamed text deltas arrive a few characters at a time; ``Coalescer`` gathers them and writes
on a newline, at a size threshold, or once the oldest buffered piece is ``max_delay_s`` old, so
a 500-byte answer is one or a few writes instead of forty. Output is best effort: a closed or
broken stream stops the output, never the run.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

FLUSH_CHARS = 1024
"""Buffered text beyond this many characters is written at once."""
FLUSH_DELAY_S = 0.05
"""Buffered text this old is written when the next piece arrives."""

_MARKUP = re.compile(r"(?<!\\)\[/?[a-z #0-9_.]*\]")
"""The console markup the CLI puts in ``line()`` texts: ``[bold red]``, ``[dim]``, ``[/]``."""


def strip_markup(text: str) -> str:
    """``text`` without console markup tags; ``\\[`` escapes become ``[``."""
    return _MARKUP.sub("", text).replace("\\[", "[")


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
        if not self._parts:
            self._since = self._clock()
        self._parts.append(text)
        self._size += len(text)
        if ("\n" in text or self._size >= self._max_chars
                or self._clock() - self._since >= self._max_delay_s):
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
    from engine.console import ConsoleObserver, make_console, make_prompter

    console = make_console(stream)
    return ConsoleObserver(console, events=not quiet), make_prompter(console)


def _lazy_prompter(stream: TextIO) -> Any:
    async def prompter(questions: Sequence[Any]) -> Any:
        from engine.console import make_console, make_prompter

        return await make_prompter(make_console(stream))(questions)

    return prompter


def short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def model_name(p: Mapping[str, Any]) -> str:
    provider, model = p.get("provider", ""), p.get("model", "")
    return provider if model in ("", provider) else f"{provider}:{model}"


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
        if kind == "text_delta":
            if not self._in_text:
                self._put("  model: ")
                self._in_text = True
            self._text.add(payload["text"])
            return
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return
        self._end_text()
        handler(payload)
        if kind in ("step_commit", "run_end"):
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

    def _say(self, text: str) -> None:
        self._put(text + "\n")

    # -- events (the same words as engine.console.ConsoleObserver) ---------------------------

    def _on_step_begin(self, p: Mapping[str, Any]) -> None:
        again = " (resumed: this step was in flight)" if p.get("resumed") else ""
        self._say(f"step {p['step']} {p['state']} ({p['action']}){again}")

    def _on_model_call(self, p: Mapping[str, Any]) -> None:
        cost = p.get("cost_usd")
        cost_text = "cost unknown" if cost is None else f"${cost:.4f}"
        retries = f", {p['retries']} retries" if p.get("retries") else ""
        self._say(f"  {model_name(p)}: {p['input_tokens']} in / {p['output_tokens']} out "
                  f"tokens, {cost_text}{retries}")
        for call in p.get("tool_calls") or ():
            self._say(f"  tool call: {call['name']} {short(call.get('args', {}))}")

    def _on_model_retry(self, p: Mapping[str, Any]) -> None:
        self._say(f"  retry {p['attempt']} in {p['wait_s']:.1f}s: {p['reason']}")

    def _on_approval(self, p: Mapping[str, Any]) -> None:
        self._say(f"  {p['decision']} {p['tool']} (risk {p['risk']}, {p['decided_by']}: "
                  f"{p['reason']})")

    def _on_tool_started(self, p: Mapping[str, Any]) -> None:
        box = p.get("sandbox")
        where = ""
        if isinstance(box, Mapping):
            where = (f" (sandboxed, network {box.get('network')})" if box.get("sandboxed")
                     else " (unconfined)")
        self._say(f"  → {p['tool']} {short(p.get('args', {}))}{where}")

    def _on_sandbox(self, p: Mapping[str, Any]) -> None:
        self._say(str(p.get("note", "")))

    def _on_tool_output(self, p: Mapping[str, Any]) -> None:
        self._say(f"    │ {p.get('line', '').rstrip()}")

    def _on_tool_call(self, p: Mapping[str, Any]) -> None:
        mark = "✗ error" if p["is_error"] else "✓ ok"
        first = (p.get("content") or "").strip().splitlines()[:1]
        self._say(f"  {mark} {p['tool']} ({p['duration_s']:.2f}s) "
                  f"{short(first[0] if first else '', 120)}")

    def _on_effect_resolved(self, p: Mapping[str, Any]) -> None:
        self._say(f"  ↻ {p['message']}")

    def _on_step_commit(self, p: Mapping[str, Any]) -> None:
        note = f" {p['note']}" if p.get("note") else ""
        self._say(f"  ⇒ {p['trigger']} → {p['dest']}{note}")

    def _on_mcp_tools_changed(self, p: Mapping[str, Any]) -> None:
        self._say(f"  MCP tools changed {short(dict(p))}")

    def _on_mcp_server_failed(self, p: Mapping[str, Any]) -> None:
        self._say(f"  MCP server failed {short(dict(p))}")

    def _on_context_compressed(self, p: Mapping[str, Any]) -> None:
        self._say(f"  context compressed {p.get('tokens_before')} → "
                  f"{p.get('tokens_after')} tokens")

    def _on_run_end(self, p: Mapping[str, Any]) -> None:
        return None
