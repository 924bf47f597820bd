"""The scripted model: replays a task's recorded turns (``turns.yaml``), offline and deterministic.

It is both the default model when none is configured and the test double for every other
client: it streams text in small chunks and tool calls as argument fragments, like a provider.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from engine.models.base import (
    Done,
    ModelParams,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
)
from engine.spec.documents import Document, load_document, read_limited_text
from engine.spec.load import did_you_mean
from engine.vocabulary.errors import ScriptDivergedError, UsageError
from engine.vocabulary.state import Message

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""Synthetic usage: about four characters a token, like the providers' rule of thumb."""


TURN_FIELDS = ("text", "tool_calls", "expect", "summary")
CALL_FIELDS = ("name", "args")
EXPECT_FIELDS = ("tool_result_contains",)


def load_turns(path: Path) -> list[dict[str, Any]]:
    """Read and check a turns file: a list of ``{text?, tool_calls?, expect?}`` or
    ``{summary: TEXT}`` (the answer to a context-compression call).

    ``.json`` files are read as JSON (as the replay writes them); anything else as YAML. Every
    key is checked, down to ``expect:`` and each tool call, so a typo is an error with its line
    instead of an expectation silently never checked.
    """
    path = Path(path)
    doc = _load_json(path) if path.suffix.lower() == ".json" else load_document(path)
    data = doc.value
    if not isinstance(data, list) or not data:
        raise UsageError(f"{path}: a turns file is a non-empty list of turns")
    for i, turn in enumerate(data):
        _check_turn(path, doc, i, turn)
    return data


def _check_turn(path: Path, doc: Document, i: int, turn: Any) -> None:
    def fail(where: tuple[str | int, ...], message: str) -> UsageError:
        line = doc.line((i, *where))
        return UsageError(f"{path}:{line}: turn {i + 1}: {message}" if line
                          else f"{path}: turn {i + 1}: {message}")

    if not isinstance(turn, dict):
        raise fail((), "expected a mapping with text and/or tool_calls")
    _known(turn, TURN_FIELDS, (), fail)
    expect = turn.get("expect")
    if expect is not None:
        if not isinstance(expect, dict):
            raise fail(("expect",), "expect: expected a mapping (tool_result_contains: TEXT)")
        _known(expect, EXPECT_FIELDS, ("expect",), fail)
    calls = turn.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise fail(("tool_calls",), "tool_calls: expected a list of {name, args}")
    for j, call in enumerate(calls or ()):
        where: tuple[str | int, ...] = ("tool_calls", j)
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise fail(where, f"tool call {j + 1} needs a name")
        _known(call, CALL_FIELDS, where, fail)
        if not isinstance(call.get("args") or {}, dict):
            raise fail((*where, "args"), f"tool call {j + 1}: args: expected a mapping")


def _known(data: dict[str, Any], valid: tuple[str, ...], where: tuple[str | int, ...],
           fail: Any) -> None:
    for key in data:
        if key not in valid:
            prefix = "".join(f"{w}." if isinstance(w, str) else f"{w + 1}." for w in where)
            hint = did_you_mean(str(key), valid)
            raise fail((*where, key), f"unknown field '{prefix}{key}'{hint}; valid fields: "
                                      f"{', '.join(valid)}")


def _load_json(path: Path) -> Document:
    """A JSON turns file, as is (duplicate keys refused, as in YAML); no line table."""
    text = read_limited_text(path, "turns file")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise UsageError(f"{path}: duplicate key {key!r}")
            out[key] = value
        return out

    try:
        return Document(json.loads(text, object_pairs_hook=no_duplicates))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc


class ScriptedModel:
    """Replays turns in order; which turn comes next is derived from the conversation itself.

    The turn index is the number of model calls behind ``messages`` (``turn_index``), so a
    resumed run continues the script where it stopped, with no hidden state. A call whose last
    message is a summary request (``engine.actions.context_window``) must land on a
    ``{summary: TEXT}`` turn.
    """

    provider = "scripted"
    server: tuple[str, int] | None = None

    def __init__(self, turns: Sequence[Mapping[str, Any]], *, model: str = "scripted",
                 chunk_chars: int = 12, delay_s: float = 0.0) -> None:
        self.turns = list(turns)
        self.model = model
        self.chunk_chars = chunk_chars
        self.delay_s = delay_s
        self._tally = _Tally()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], params: ModelParams
    ) -> AsyncIterator[StreamEvent]:
        prompt_chars, index = self._tally.update(messages)
        if index >= len(self.turns):
            raise ScriptDivergedError(
                f"script exhausted: the model was called a {ordinal(index + 1)} time but the "
                f"script has {len(self.turns)} turn{'' if len(self.turns) == 1 else 's'}"
            )
        turn = self.turns[index]
        summarizing = bool(messages and messages[-1].meta.get("summary_request"))
        if summarizing != ("summary" in turn):
            raise ScriptDivergedError(
                f"script diverged at turn {index + 1}: the engine asked for "
                f"{'a summary' if summarizing else 'a normal turn'} but the script has "
                f"{'a summary turn' if 'summary' in turn else 'a normal turn'} there")
        if not summarizing:
            self._check_expectation(index, turn, messages)
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        text = str(turn.get("summary") if summarizing else turn.get("text") or "")
        for start in range(0, len(text), self.chunk_chars):
            yield TextDelta(text[start:start + self.chunk_chars])
        calls = turn.get("tool_calls") or ()
        for i, call in enumerate(calls):
            args = json.dumps(call.get("args") or {})
            yield ToolCallDelta(i, id=f"call_{index}_{i}", name=str(call["name"]))
            for start in range(0, len(args), self.chunk_chars * 4):
                yield ToolCallDelta(i, arguments=args[start:start + self.chunk_chars * 4])
        completion_chars = len(text) + sum(len(json.dumps(c)) for c in calls)
        yield Usage(max(1, prompt_chars // CHARS_PER_TOKEN),
                    max(1, completion_chars // CHARS_PER_TOKEN))
        yield Done("tool_calls" if calls else "stop")

    def _check_expectation(self, index: int, turn: Mapping[str, Any],
                           messages: Sequence[Message]) -> None:
        """The turn's ``expect`` must hold for the tool results since the previous answer."""
        expect = turn.get("expect") or {}
        wanted = expect.get("tool_result_contains")
        if wanted is None:
            return
        results = _results_since_last_turn(messages)
        if any(str(wanted) in m.content for m in results):
            return
        got = " | ".join(m.content for m in results) if results else "no tool result"
        raise ScriptDivergedError(
            f"script diverged at turn {index + 1}: expected tool result containing "
            f"{str(wanted)!r}, got {got[:200]!r}"
        )

    async def aclose(self) -> None:
        return None


_CHARS: dict[int, tuple[Message, int]] = {}


def _message_chars(m: Message) -> int:
    """Characters of a message for synthetic usage, remembered per message object so a long
    conversation is not serialised again on every call."""
    hit = _CHARS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    n = len(m.content) + sum(len(json.dumps(dict(c.args))) for c in m.tool_calls)
    if len(_CHARS) > 200_000:
        _CHARS.clear()
    _CHARS[id(m)] = (m, n)
    return n


def _calls_behind(m: Message) -> int:
    return (int(m.meta["calls"]) if "calls" in m.meta
            else int(m.role == "assistant" and not m.meta.get("summary")))


class _Tally:
    """Characters and model calls behind a conversation, extended by the messages added since
    the previous call (a long scripted run must not rescan its whole history every turn)."""

    def __init__(self) -> None:
        self.seen: tuple[Message, ...] = ()
        """The conversation of the previous call: the caller's own tuple, kept, not copied."""
        self.chars = 0
        self.calls = 0

    def update(self, messages: Sequence[Message]) -> tuple[int, int]:
        """(characters, model calls) of ``messages``; a changed prefix (compression, another
        conversation) is counted from scratch.

        The prefix is compared as a tuple: one C loop that short-cuts on identical messages
        (a few nanoseconds each); a message equal but not identical counts the same. Only the
        messages added since are counted, and the caller's tuple is kept as it is (no copy of
        the conversation grows by concatenation every call)."""
        seen = self.seen
        k = len(seen)
        if type(messages) is not tuple:
            messages = tuple(messages)
        if k and (len(messages) < k or messages[:k] != seen):
            self.chars, self.calls, k = 0, 0, 0
        for m in messages[k:]:
            self.chars += _message_chars(m)
            self.calls += _calls_behind(m)
        self.seen = messages
        return self.chars, self.calls


def turn_index(messages: Sequence[Message]) -> int:
    """Model calls behind ``messages``: one per assistant turn; a summary counts the calls it
    stands for and a summary request the calls before it (their ``meta["calls"]``)."""
    return sum(map(_calls_behind, messages))


def _results_since_last_turn(messages: Sequence[Message]) -> list[Message]:
    """The tool results that answered the model's previous turn (all of them, in order)."""
    out: list[Message] = []
    for m in reversed(messages):
        if m.role == "assistant":
            break
        if m.role == "tool":
            out.append(m)
    return out[::-1]


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``12th``, ``13th``, ``21st``, ..."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
