"""Context budget: how many tokens a model call needs, and the compressed view that fits.

The run's history is append-only and stays whole in the database. What a model receives is a
*view* of it, a pure function of the history and ``data["context"]`` (``build_view``), so a
resumed run rebuilds exactly the view the model last saw. When a call would exceed
``compress_at * window``, ``prepare_view`` compresses in this order:

(a) tool outputs older than the ``keep_recent_turns`` latest turns become one-line stubs that
    keep the tool name, arguments, outcome, size and the message index of the full output;
(b) if still over, the turns before the recent ones are summarised by one model call with a
    dedicated prompt (no tools) into one message, appended to the history with
    ``meta={"summary": True, "replaces": [from, upto], "calls": n}``;
(c) the system prompt, the task (first user message) and the latest turn are never removed:
    if even they do not fit the window, ``ContextOverflowError``.

A turn starts at an assistant message and holds its tool results, so a tool result and the
tool call that asked for it are always kept or replaced together.

Token counts: ``BYTES_PER_TOKEN`` bytes a token, a heuristic that errs high (BPE tokenizers
average about 4 bytes a token on English and 3 to 4 on code and JSON), multiplied by a
correction ratio learnt from the input tokens the provider reported for the previous view.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.spec.model import ContextSpec
from engine.vocabulary.errors import ContextOverflowError, StoreError
from engine.vocabulary.run_data import CONTEXT, FILES_CHANGED, PLAN, TASK
from engine.vocabulary.state import Message, ToolCall

logger = logging.getLogger(__name__)

BYTES_PER_TOKEN = 3
"""UTF-8 bytes per token for the estimate; errs high for English, code, JSON and CJK."""
MESSAGE_OVERHEAD_TOKENS = 4
"""Role and framing tokens a provider adds per message."""
STUB_MIN_BYTES = 512
"""Tool outputs up to this size are kept as they are: a stub would not save much."""
SUMMARY_MAX_TOKENS = 1000
"""Upper bound on a summary's own text (also the summarising call's ``max_tokens``)."""
TRANSCRIPT_MESSAGE_BYTES = 4000
"""Each message is cut to this many bytes in the transcript given to the summariser."""
MIN_RATIO, MAX_RATIO = 0.6, 5.0
"""Bounds on the learnt correction: one report that leaves out part of the prompt (a provider
not counting tool definitions) must not make the estimate trust 5+ bytes a token."""
DEFAULT_COMPRESS_AT = 0.8
DEFAULT_KEEP_RECENT_TURNS = 6
UNKNOWN_WINDOW = 32_000
"""Window assumed for a model missing from ``WINDOWS`` (set ``window_tokens`` to override)."""

WINDOWS: tuple[tuple[str, str, int], ...] = (
    ("openai", "gpt-5", 400_000),
    ("openai", "gpt-4.1", 1_047_576),
    ("openai", "gpt-4o", 128_000),
    ("openai", "o3", 200_000),
    ("openai", "o4-mini", 200_000),
    ("anthropic", "claude-", 200_000),
    ("ollama", "", 4_096),  # Ollama's default num_ctx; set window_tokens when you raise it
    ("scripted", "", 1_000_000),
)
"""(provider, model prefix, window tokens): the first match wins."""

SUMMARY_PROMPT = """\
You compress the working history of a coding agent so that it can continue its task without \
the replaced messages. Write a factual summary, in plain text, of at most {words} words, with \
these parts: Task (one line); Plan (steps and which are done); Decisions taken and why; Files \
read or changed and what was learned from them; Commands run and their results; Open problems \
and next steps. Do not invent anything that is not in the messages. Do not call tools."""

Summarizer = Callable[[tuple[Message, ...], int], Awaitable[str]]
"""Runs the summarising model call: (request messages, max_tokens) -> summary text."""


@dataclass(frozen=True, slots=True)
class Budget:
    """The window a run's model calls must fit, and when compression starts."""

    window: int
    compress_at: float = DEFAULT_COMPRESS_AT
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS

    @property
    def limit(self) -> int:
        """Tokens a view may use before it is compressed."""
        return int(self.window * self.compress_at)

    @property
    def summary_tokens(self) -> int:
        """Room kept for a summary's text: small windows get a proportionally small summary."""
        return max(50, min(SUMMARY_MAX_TOKENS, self.limit // 8))


def default_window(provider: str, model: str) -> int:
    """The model's context window from ``WINDOWS``; ``UNKNOWN_WINDOW`` when not listed."""
    for prov, prefix, window in WINDOWS:
        if prov == provider and model.startswith(prefix):
            return window
    return UNKNOWN_WINDOW


def budget_for(spec: ContextSpec | None, provider: str, model: str) -> Budget:
    """The machine's ``context:`` settings, with the model's window when it sets none."""
    if spec is None:
        return Budget(default_window(provider, model))
    window = spec.window_tokens or default_window(provider, model)
    return Budget(window, spec.compress_at, max(1, spec.keep_recent_turns))


# -- persisted state ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SummaryRef:
    """Messages ``start`` to ``upto - 1`` are shown as the summary at ``message_index``."""

    start: int
    upto: int
    message_index: int


@dataclass(frozen=True, slots=True)
class ContextState:
    """What ``data["context"]`` holds: the view's shape and the token correction."""

    stubbed_before: int = 0
    """Tool outputs at indices below this are shown as stubs."""
    summary: SummaryRef | None = None
    ratio: float = 1.0
    """Provider tokens / estimated tokens for the last view sent (1.0 before any report)."""
    tokens: int = 0
    """Input tokens of the last main model call (reported, else estimated)."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ContextState:
        raw = CONTEXT.get(data)
        s = raw.get("summary")
        summary = SummaryRef(int(s["from"]), int(s["upto"]), int(s["message_index"])) if s else None
        return cls(int(raw.get("stubbed_before") or 0), summary, float(raw.get("ratio") or 1.0),
                   int(raw.get("tokens") or 0))

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {"stubbed_before": self.stubbed_before,
                "summary": {"from": s.start, "upto": s.upto, "message_index": s.message_index}
                if s else None,
                "ratio": self.ratio, "tokens": self.tokens}

    def observe(self, estimated: int, reported: int) -> ContextState:
        """Learn the correction ratio from the provider's count for a view estimated at
        ``estimated`` tokens; a call without reported usage keeps the old ratio."""
        if reported <= 0 or estimated <= 0:
            return replace(self, tokens=math.ceil(estimated * self.ratio))
        ratio = min(MAX_RATIO, max(MIN_RATIO, reported / estimated))
        return replace(self, ratio=round(ratio, 6), tokens=reported)


# -- counting -------------------------------------------------------------------------------


def estimate_text(text: str) -> int:
    """Tokens for ``text`` by the bytes-per-token heuristic (rounded up)."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


def estimate_message(m: Message) -> int:
    """Tokens for one message as a provider would frame it (content, tool calls, name)."""
    n = MESSAGE_OVERHEAD_TOKENS + estimate_text(m.content)
    for c in m.tool_calls:
        n += MESSAGE_OVERHEAD_TOKENS + estimate_text(c.id + c.name + _json(c.args))
    if m.name:
        n += estimate_text(m.name)
    if m.tool_call_id:
        n += estimate_text(m.tool_call_id)
    return n


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tools(tools: Iterable[Any]) -> int:
    """Tokens for tool definitions (objects with ``name``, ``description``, ``input_schema``)."""
    return sum(_tool_tokens(t) for t in tools)


_TOOL_TOKENS: dict[int, tuple[Any, int]] = {}
"""Estimates of frozen tool definitions by identity (the object is kept, so its id stays its
own): a model call estimates the same tools every turn."""
_TOOL_TOKENS_MAX = 4096


def _tool_tokens(tool: Any) -> int:
    known = _TOOL_TOKENS.get(id(tool))
    if known is not None and known[0] is tool:
        return known[1]
    n = MESSAGE_OVERHEAD_TOKENS + estimate_text(
        tool.name + tool.description + _json(tool.input_schema))
    if _frozen(tool):
        if len(_TOOL_TOKENS) >= _TOOL_TOKENS_MAX:
            _TOOL_TOKENS.clear()
        _TOOL_TOKENS[id(tool)] = (tool, n)
    return n


def _frozen(obj: Any) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
"""One encoder for every estimate (``json.dumps`` with options builds a new one per call)."""


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


# -- the view -------------------------------------------------------------------------------


def protected_prefix(messages: Sequence[Message]) -> int:
    """Index after the task (the first user message): the system prompt and the task."""
    for i, m in enumerate(messages):
        if m.role == "user" and not m.meta.get("summary"):
            return i + 1
    return sum(1 for m in messages if m.role == "system")


def turn_starts(messages: Sequence[Message], begin: int = 0) -> list[int]:
    """Indices (from ``begin``) where turns start: assistant messages that are not summaries."""
    return [i for i in range(begin, len(messages))
            if messages[i].role == "assistant" and not messages[i].meta.get("summary")]


def model_calls(messages: Iterable[Message]) -> int:
    """Model calls that produced ``messages``: assistant turns plus summaries."""
    return sum(1 for m in messages if m.role == "assistant" or m.meta.get("summary"))


def build_view(messages: Sequence[Message], state: ContextState) -> tuple[Message, ...]:
    """The messages a model is sent: the history with stubs and the current summary applied."""
    return tuple(m for _, m in _indexed_view(messages, state))


def _indexed_view(messages: Sequence[Message],
                  state: ContextState) -> list[tuple[int, Message]]:
    """The view with each message's position: its history index (a summary: its range start)."""
    summary = state.summary
    if summary is not None and summary.message_index >= len(messages):
        raise StoreError(f"data['context'] names summary message #{summary.message_index} but "
                         f"the history has {len(messages)} messages")
    calls = _calls_by_id(messages[:state.stubbed_before]) if state.stubbed_before else {}
    out: list[tuple[int, Message]] = []
    for i, m in enumerate(messages):
        if m.meta.get("summary"):
            continue
        if summary is not None and summary.start <= i < summary.upto:
            if i == summary.start:
                out.append((i, messages[summary.message_index]))
            continue
        if i < state.stubbed_before and _stubbable(m):
            out.append((i, stub_message(m, calls.get(m.tool_call_id or ""), i)))
        else:
            out.append((i, m))
    return out


@dataclass(frozen=True, slots=True)
class _CachedView:
    history: Sequence[Message]
    state_key: tuple[int, SummaryRef | None]
    view: tuple[Message, ...]
    tokens: int


_VIEWS: dict[int, _CachedView] = {}
MAX_CACHED_VIEWS = 4096


def view_and_tokens(history: Sequence[Message],
                    state: ContextState) -> tuple[tuple[Message, ...], int]:
    """``build_view`` and its token estimate, extending the last result when only new messages
    were appended under the same compression state: a step costs the same at turn 1,600 as at
    turn 25. Equal to ``(build_view(h, s), estimate_messages(build_view(h, s)))``; a view that
    leaves nothing out is the ``history`` tuple itself (no copy of the conversation per call)."""
    if not history:
        return (), 0
    key = id(history[0])
    hit = _VIEWS.get(key)
    state_key = (state.stubbed_before, state.summary)
    whole = history if type(history) is tuple and _whole(state) else None
    if hit is not None and _extends(hit, history, state):
        tail = tuple(m for m in history[len(hit.history):] if not m.meta.get("summary"))
        tokens = hit.tokens + estimate_messages(tail)
        view = (whole if whole is not None and len(hit.view) + len(tail) == len(whole)
                else hit.view + tail)
    else:
        view = build_view(history, state)
        tokens = estimate_messages(view)
        if whole is not None and len(view) == len(whole):
            view = whole
    if len(_VIEWS) >= MAX_CACHED_VIEWS and key not in _VIEWS:
        _VIEWS.clear()
    _VIEWS[key] = _CachedView(history, state_key, view, tokens)
    return view, tokens


def _whole(state: ContextState) -> bool:
    """True when nothing is stubbed or summarised: a view as long as its history is then
    the history, message for message (only summary messages are ever left out)."""
    return state.stubbed_before == 0 and state.summary is None


def _extends(hit: _CachedView, history: Sequence[Message], state: ContextState) -> bool:
    """True when ``history`` is ``hit.history`` plus messages the view passes through as-is."""
    n = len(hit.history)
    s = state.summary
    return (hit.state_key == (state.stubbed_before, s) and n <= len(history)
            and history[0] is hit.history[0] and history[n - 1] is hit.history[-1]
            and state.stubbed_before <= n
            and (s is None or (s.upto <= n and s.message_index < n)))


def _calls_by_id(messages: Sequence[Message]) -> dict[str, ToolCall]:
    return {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}


def _stubbable(m: Message) -> bool:
    return m.role == "tool" and len(m.content.encode("utf-8", "surrogatepass")) > STUB_MIN_BYTES


def stub_message(m: Message, call: ToolCall | None, index: int) -> Message:
    """A short stand-in for a tool output: tool, arguments, outcome, size, where the rest is."""
    name = m.name or (call.name if call else "tool")
    args = _clip(_json(dict(call.args)) if call else "{}", 200)
    first = _clip(next((line.strip() for line in m.content.splitlines() if line.strip()), ""), 120)
    size = len(m.content.encode("utf-8", "surrogatepass"))
    text = (f"[tool output elided to save context: {name} {args} -> "
            f"{'error' if m.is_error else 'ok'}, {size} bytes, first line: {first!r}; the full "
            f"output is message #{index} of the run's history]")
    return Message("tool", text, tool_call_id=m.tool_call_id, name=m.name, is_error=m.is_error,
                   meta={"stub_of": index})


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- the policy -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedView:
    """A view ready to send, and what to persist with the step that sends it."""

    view: tuple[Message, ...]
    state: ContextState
    """The new ``data["context"]`` (call ``observe`` with the provider's count afterwards)."""
    appended: tuple[Message, ...] = ()
    """A new summary message to append to the history in the same step (or nothing)."""
    estimated: int = 0
    """Uncorrected estimate of the view plus tool definitions."""
    tokens: int = 0
    """Corrected estimate: what the budget was checked against."""
    event: Mapping[str, Any] | None = None
    """The ``context_compressed`` event payload, when the view was compressed."""


@dataclass(frozen=True, slots=True)
class _Choice:
    strategy: str
    state: ContextState
    keep: int
    tokens: int


async def prepare_view(history: Sequence[Message], data: Mapping[str, Any], budget: Budget, *,
                       tools_tokens: int, summarize: Summarizer) -> PreparedView:
    """The view for the next model call, compressed (stubs, then a summary) when over budget."""
    state = ContextState.from_data(data)
    view, raw = view_and_tokens(history, state)
    raw += tools_tokens
    before = math.ceil(raw * state.ratio)
    if before <= budget.limit:
        return PreparedView(view, state, (), raw, before)
    facts = _facts(data)
    choice = _choose(history, state, budget, tools_tokens, facts)
    if choice.state == state:  # nothing to compress, but the view fits the window
        return PreparedView(view, state, (), raw, before)
    appended: tuple[Message, ...] = ()
    new_state = choice.state
    summary_text = None
    if choice.strategy == "summary":
        assert new_state.summary is not None
        request = _summary_request(history, new_state, budget, data, facts)
        text = _clip_bytes((await summarize(request, budget.summary_tokens)).strip(),
                           budget.summary_tokens * BYTES_PER_TOKEN)
        summary_text = text
        appended = (_summary_message(history, new_state.summary, text, facts),)
    full = (*history, *appended)
    view = build_view(full, new_state)
    raw = estimate_messages(view) + tools_tokens
    after = math.ceil(raw * new_state.ratio)
    stubbed = _newly_stubbed(full, state, new_state)
    s = new_state.summary
    event = {
        "tokens_before": before, "tokens_after": after, "window": budget.window,
        "budget": budget.limit, "strategy": "stub+summary" if stubbed and s and summary_text
        else choice.strategy, "kept_turns": choice.keep, "stubbed": stubbed,
        "summarized": [s.start, s.upto] if s and summary_text is not None else None,
        "summary_text": summary_text,
        "summary_message_index": s.message_index if s and summary_text is not None else None,
    }
    logger.info("context compressed: %d -> %d tokens (%s)", before, after, event["strategy"])
    return PreparedView(view, new_state, appended, raw, after, event)


def _choose(history: Sequence[Message], state: ContextState, budget: Budget,
            tools_tokens: int, facts: str) -> _Choice:
    """The gentlest compression that fits: stub, then summarise, keeping fewer turns only when
    keeping ``keep_recent_turns`` cannot fit."""
    start = protected_prefix(history)
    starts = turn_starts(history, start)
    covered = state.summary.upto if state.summary else start
    options = [_Choice("none", state, 0, _measure(history, state, tools_tokens, ()))]
    for keep in range(min(budget.keep_recent_turns, len(starts)), 0, -1):
        cut = starts[-keep]
        stubbed = replace(state, stubbed_before=max(state.stubbed_before, cut))
        options.append(_Choice("stub", stubbed, keep,
                               _measure(history, stubbed, tools_tokens, ())))
        if options[-1].tokens <= budget.limit:
            return options[-1]
        if cut > covered:
            ref = SummaryRef(start, cut, len(history))
            summarized = replace(stubbed, summary=ref)
            holder = _summary_message(history, ref, "x" * budget.summary_tokens
                                      * BYTES_PER_TOKEN, facts)
            options.append(_Choice("summary", summarized, keep,
                                   _measure(history, summarized, tools_tokens, (holder,))))
            if options[-1].tokens <= budget.limit:
                return options[-1]
    smallest = min(options, key=lambda c: c.tokens)
    if smallest.tokens <= budget.window:
        return smallest  # over compress_at but inside the window: better than failing
    raise _overflow(history, state, budget, tools_tokens, smallest)


def _measure(history: Sequence[Message], state: ContextState, tools_tokens: int,
             extra: tuple[Message, ...]) -> int:
    view = build_view((*history, *extra), state)
    return math.ceil((estimate_messages(view) + tools_tokens) * state.ratio)


def _overflow(history: Sequence[Message], state: ContextState, budget: Budget,
              tools_tokens: int, smallest: _Choice) -> ContextOverflowError:
    start = protected_prefix(history)
    starts = turn_starts(history, start)
    last = starts[-1] if starts else start
    r = state.ratio
    fixed = math.ceil(estimate_messages(history[:start]) * r)
    latest = math.ceil(estimate_messages(history[last:]) * r)
    total = smallest.tokens
    return ContextOverflowError(
        f"context overflow: even the minimal context needs {total} tokens (system prompt and "
        f"task {fixed}, latest turn {latest}, tool definitions {math.ceil(tools_tokens * r)}), "
        f"over the model's window of {budget.window} tokens; shorten the task or the tool "
        "output (read files by offset/limit), or raise context.window_tokens for a model with "
        "a larger window")


def _facts(data: Mapping[str, Any]) -> str:
    """The plan and the files changed, from the run's data: kept verbatim in every summary."""
    lines = []
    plan = PLAN.get(data)
    if plan:
        lines.append("Plan:")
        for step in plan:
            if isinstance(step, Mapping):
                lines.append(f"  - [{step.get('status', '?')}] {step.get('step', '')}")
            else:
                lines.append(f"  - {step}")
    files = FILES_CHANGED.get(data)
    if files:
        lines.append("Files changed: " + ", ".join(sorted(files)))
    return _clip_bytes("\n".join(lines), 1500)


def _summary_message(history: Sequence[Message], ref: SummaryRef, text: str,
                     facts: str) -> Message:
    """The summary as a user message standing for messages ``ref.start`` .. ``ref.upto - 1``."""
    outside = (*history[:ref.start], *history[ref.upto:])
    calls = model_calls(history) + 1 - sum(
        1 for m in outside if m.role == "assistant" and not m.meta.get("summary"))
    body = (f"[Summary of messages #{ref.start}-#{ref.upto - 1}, which were replaced to save "
            f"context; the full history is kept in the run's database.]\n{text}")
    if facts:
        body += f"\n\n{facts}"
    return Message("user", body, meta={"summary": True, "replaces": [ref.start, ref.upto],
                                       "calls": calls})


def _summary_request(history: Sequence[Message], state: ContextState, budget: Budget,
                     data: Mapping[str, Any], facts: str) -> tuple[Message, ...]:
    """The summarising call's messages: the dedicated prompt and the replaced messages.

    The summariser reads the original tool outputs, not their stubs, each cut to a fair share
    of the room left in the window, and the earlier summary in place of what it replaced.
    """
    ref = state.summary
    assert ref is not None
    old = ContextState.from_data(data).summary
    replaced = [(i, history[i]) for i in range(ref.start, ref.upto)
                if not history[i].meta.get("summary") and not (old and old.start <= i < old.upto)]
    system = Message("system", SUMMARY_PROMPT.format(words=budget.summary_tokens * 3 // 4))
    task = _clip_bytes(str(TASK.get(data) or history[ref.start - 1].content),
                       TRANSCRIPT_MESSAGE_BYTES)
    head = f"Task:\n{task}\n\n{facts}\n\nMessages #{ref.start}-#{ref.upto - 1} to summarise:\n"
    if old is not None:
        head += f"[earlier summary of #{old.start}-#{old.upto - 1}]\n" + _clip_bytes(
            history[old.message_index].content, TRANSCRIPT_MESSAGE_BYTES) + "\n"
    room = (int(budget.limit / state.ratio) - budget.summary_tokens
            - estimate_messages((system, Message("user", head)))) * BYTES_PER_TOKEN
    share = min(TRANSCRIPT_MESSAGE_BYTES, max(200, room // max(1, len(replaced))))
    transcript = "\n".join(_transcript_line(i, m, share) for i, m in replaced)
    request = Message("user", head + _middle_cut(transcript, max(room, 300)),
                      meta={"summary_request": True, "calls": model_calls(history)})
    return (system, request)


def _transcript_line(index: int, m: Message, limit: int) -> str:
    text = _clip_bytes(m.content, limit)
    calls = "".join(f"\n  -> {c.name}({_clip(_json(dict(c.args)), 300)})" for c in m.tool_calls)
    label = f"{m.role} {m.name}" if m.name else m.role
    return f"#{index} [{label}{' error' if m.is_error else ''}] {text}{calls}"


def _clip_bytes(text: str, limit: int) -> str:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    return raw[:max(0, limit - 20)].decode("utf-8", "ignore") + " [...cut]"


def _middle_cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` bytes, keeping its start and end (the task and the latest)."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    half = max(0, (limit - 60) // 2)
    omitted = len(raw) - 2 * half
    return (raw[:half].decode("utf-8", "ignore") + f"\n[... {omitted} bytes omitted ...]\n"
            + raw[len(raw) - half:].decode("utf-8", "ignore"))


def _newly_stubbed(messages: Sequence[Message], old: ContextState,
                   new: ContextState) -> list[int]:
    """History indices of tool outputs shown as stubs now and shown whole before."""
    before = {i for i, m in _indexed_view(messages, old) if m.meta.get("stub_of") is not None}
    return [i for i, m in _indexed_view(messages, new)
            if m.meta.get("stub_of") is not None and i not in before]


__all__ = [
    "BYTES_PER_TOKEN",
    "Budget",
    "ContextState",
    "PreparedView",
    "Summarizer",
    "SummaryRef",
    "budget_for",
    "build_view",
    "default_window",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
    "estimate_tools",
    "model_calls",
    "prepare_view",
    "protected_prefix",
    "stub_message",
    "turn_starts",
]
