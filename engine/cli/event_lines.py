"""What a run's live output says about each event, once for both outputs.

``event_lines(kind, payload)`` gives the lines an event prints. A line is a flat tuple of
text and style, alternating (``("step 3", "bold cyan", " plan", "")``): the rich console
(``engine.cli.console``) styles each text; the plain writer for pipes
(``engine.cli.plain_output``) joins ``line[::2]``, one slice and one join, with no per-segment
work. One table of words, so the two outputs cannot drift apart; no markup, so no value ever
needs escaping. Streamed text deltas are not here: both outputs print them as they come
(coalesced at their source, ``engine.models.base.collect_turn``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from engine.vocabulary.events import EventKind

Line = tuple[str, ...]
"""Text, style, text, style, ...: a style is a rich style (``""``: none)."""
Payload = Mapping[str, Any]

FIRST_LINE_SCAN = 200
"""A result's first line is looked for in this many characters: more than ``short`` shows,
and a long result is not split into lines to print one."""


_to_json = json.JSONEncoder(ensure_ascii=False).encode
"""One encoder for every line (``json.dumps`` with options makes a new one per call)."""


def short(value: Any, limit: int = 160) -> str:
    """One line of at most ``limit`` characters: JSON for values, newlines shown as ``\\n``."""
    text = value if isinstance(value, str) else _to_json(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def model_name(p: Payload) -> str:
    provider, model = p.get("provider", ""), p.get("model", "")
    return provider if model in ("", provider) else f"{provider}:{model}"


def event_lines(kind: str, p: Payload) -> tuple[Line, ...] | None:
    """The lines ``kind`` prints, or None for an event the live output does not show. Every
    text is ``visible``: what a command or a model printed reaches the terminal as text."""
    render = RENDER.get(kind)
    if render is None:
        return None
    return tuple(tuple(visible(t) if i % 2 == 0 else t for i, t in enumerate(line))
                 for line in render(p))


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))
             if c not in (0x09, 0x0A)}
"""C0 and C1 control characters but tab and newline, each shown as ``\\xNN``: an escape
sequence printed raw moves the cursor, erases the screen and its scrollback (hiding earlier
lines, a change a command reported among them), names a link or writes the clipboard."""


def visible(text: str) -> str:
    """``text`` with control characters shown, not obeyed (``\\x1b[2J`` prints as
    written); a line of plain text is returned as it is."""
    if text.isascii() and text.isprintable():
        return text
    return text.translate(_CONTROLS)


def plain_text(line: Line) -> str:
    """The line's words without their styles."""
    return "".join(line[::2])


def segments(line: Line) -> Iterator[tuple[str, str]]:
    """``(text, style)`` pairs, as rich's ``Text.assemble`` takes them."""
    return zip(line[::2], line[1::2], strict=True)


def _step_begin(p: Payload) -> tuple[Line, ...]:
    again = (" (resumed: this step was in flight)", "yellow") if p.get("resumed") else ()
    return (f"step {p['step']}", "bold cyan", " ", "", str(p["state"]), "bold",
            f" ({p['action']})", "dim", *again),


def _model_call(p: Payload) -> tuple[Line, ...]:
    cost = p.get("cost_usd")
    cost_text = "cost unknown" if cost is None else f"${cost:.4f}"
    retries = f", {p['retries']} retries" if p.get("retries") else ""
    usage: Line = ("  ", "", f"{model_name(p)}: {p['input_tokens']} in / "
                             f"{p['output_tokens']} out tokens, {cost_text}{retries}", "dim")
    calls = [("  ", "", "tool call:", "magenta", f" {call['name']} {short(call.get('args', {}))}",
              "") for call in p.get("tool_calls") or ()]
    return (usage, *calls)


def _model_retry(p: Payload) -> tuple[Line, ...]:
    return ("  ", "", f"retry {p['attempt']}", "yellow",
            f" in {p['wait_s']:.1f}s: {p['reason']}", ""),


def _approval(p: Payload) -> tuple[Line, ...]:
    color = "green" if p["decision"] == "allow" else "red"
    return ("  ", "", str(p["decision"]), color, f" {p['tool']} ", "",
            f"(risk {p['risk']}, {p['decided_by']}: {p['reason']})", "dim"),


def _tool_started(p: Payload) -> tuple[Line, ...]:
    box = p.get("sandbox")
    where: Line = ()
    if isinstance(box, Mapping):
        where = ((f" (sandboxed, network {box.get('network')})", "dim") if box.get("sandboxed")
                 else (" (unconfined)", "yellow"))
    return ("  ", "", f"→ {p['tool']}", "blue", f" {short(p.get('args', {}))}", "", *where),


def _sandbox(p: Payload) -> tuple[Line, ...]:
    style = "dim" if p.get("sandboxed") or p.get("mode") == "off" else "yellow"
    return (str(p.get("note", "")), style),


def _tool_output(p: Payload) -> tuple[Line, ...]:
    return ("    ", "", "│", "dim", f" {str(p.get('line', '')).rstrip()}", ""),


def _tool_call(p: Payload) -> tuple[Line, ...]:
    mark, style = ("✗ error", "red") if p["is_error"] else ("✓ ok", "green")
    first = (p.get("content") or "").strip()[:FIRST_LINE_SCAN].splitlines()[:1]
    return ("  ", "", mark, style, f" {p['tool']} ", "", f"({p['duration_s']:.2f}s)", "dim",
            f" {short(first[0] if first else '', 120)}", ""),


def _effect_resolved(p: Payload) -> tuple[Line, ...]:
    return ("  ", "", f"↻ {p['message']}", "yellow"),


def _step_commit(p: Payload) -> tuple[Line, ...]:
    note = (f" {p['note']}", "dim") if p.get("note") else ()
    return ("  ", "", "⇒", "dim", f" {p['trigger']} → ", "", str(p["dest"]), "bold", *note),


def _labelled(label: str, style: str) -> Callable[[Payload], tuple[Line, ...]]:
    def render(p: Payload) -> tuple[Line, ...]:
        return ("  ", "", label, style, f" {short(dict(p))}", ""),

    return render


def _file_changed(p: Payload) -> tuple[Line, ...]:
    """A change under ``.git/`` (a commit, a branch moved, files staged) is said as it
    happens; other files are listed in the run's summary."""
    path = str(p.get("path", ""))
    if not path.startswith(".git/"):
        return ()
    what = "created" if p.get("created") else "deleted" if p.get("deleted") else "changed"
    return ("    ", "", "± repository", "yellow", f" {path} {what}", ""),


def _context_compressed(p: Payload) -> tuple[Line, ...]:
    return ("  ", "", "context compressed", "yellow",
            f" {p.get('tokens_before')} → {p.get('tokens_after')} tokens", ""),


RENDER: dict[str, Callable[[Payload], tuple[Line, ...]]] = {
    EventKind.STEP_BEGIN: _step_begin,
    EventKind.MODEL_CALL: _model_call,
    EventKind.MODEL_RETRY: _model_retry,
    EventKind.APPROVAL: _approval,
    EventKind.TOOL_STARTED: _tool_started,
    EventKind.SANDBOX: _sandbox,
    EventKind.TOOL_OUTPUT: _tool_output,
    EventKind.TOOL_CALL: _tool_call,
    EventKind.EFFECT_RESOLVED: _effect_resolved,
    EventKind.STEP_COMMIT: _step_commit,
    EventKind.MCP_TOOLS_CHANGED: _labelled("MCP tools changed", "yellow"),
    EventKind.MCP_SERVER_FAILED: _labelled("MCP server failed", "red"),
    EventKind.CONTEXT_COMPRESSED: _context_compressed,
    EventKind.FILE_CHANGED: _file_changed,
}
