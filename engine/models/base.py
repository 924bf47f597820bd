"""The model contract: ``ModelClient.stream`` yields provider-neutral stream events.

Providers convert the engine's ``Message`` list and tool schemas to their wire format and their
stream back into ``TextDelta``, ``ToolCallDelta``, ``Usage`` and ``Done``. ``collect_turn``
assembles a stream into one assistant ``Message``; the runner never sees a wire format. It is
also where streamed text is coalesced, once for every observer (``TextCoalescing``): a
provider's forty pieces of an answer reach the console, the stored stream events and the API's
event stream as one or a few deltas.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio

from engine.models.prices import estimate_cost
from engine.vocabulary.state import Message, ToolCall
from engine.vocabulary.state import Usage as RunUsage

FinishReason = Literal["stop", "tool_calls", "length", "error"]


@dataclass(frozen=True, slots=True, init=False)
class TextDelta:
    """A fragment of the assistant's text."""

    text: str

    def __init__(self, text: str) -> None:
        # One per piece a provider streams (forty for a 500-byte answer): the slot is set
        # directly; a frozen dataclass's own __init__ goes through object.__setattr__, at
        # three times the cost. Still frozen: assigning afterwards raises.
        _set_text(self, text)


_set_text = TextDelta.__dict__["text"].__set__


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call; ``id`` and ``name`` come with the first fragment of an index."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens reported by the provider for this call."""

    input_tokens: int = 0
    """All input tokens, cached and cache-writing ones included."""
    output_tokens: int = 0
    cached_tokens: int = 0
    """Input tokens read from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the prompt cache (Anthropic bills them above the input price)."""


@dataclass(frozen=True, slots=True)
class Reasoning:
    """One complete reasoning block to keep verbatim and send back (Anthropic ``thinking``
    with its ``signature``, or ``redacted_thinking`` with its ``data``)."""

    block: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A fragment of a refusal: the model declined, and this text says so."""

    text: str


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """Who answered: the provider's response id and the model that actually served the call."""

    id: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """The client is retrying: shown in the console and recorded as an event."""

    attempt: int
    reason: str
    wait_s: float


@dataclass(frozen=True, slots=True)
class Done:
    """The end of the stream."""

    finish_reason: FinishReason = "stop"


StreamEvent = (TextDelta | ToolCallDelta | Reasoning | Refusal | ResponseInfo | Usage | Retry
               | Done)


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as offered to a model."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


ReasoningEffort = Literal["minimal", "low", "medium", "high"]


@dataclass(frozen=True, slots=True)
class ModelParams:
    """Per-call parameters: the run's model settings (``model_options``) as each client sends
    them in its own wire format; ``None`` leaves the provider's default."""

    max_tokens: int = 4096
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    reasoning_effort: ReasoningEffort | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider fields sent as given (merged into the request body last)."""


class ModelClient(Protocol):
    """A streaming chat model."""

    provider: str
    """``openai``, ``anthropic``, ``ollama``, ``scripted``."""
    model: str
    server: tuple[str, int] | None
    """``(host, port)`` of the endpoint called, or None when no server is involved."""

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], params: ModelParams
    ) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One complete model answer, assembled from its stream."""

    message: Message
    usage: Usage
    finish_reason: FinishReason
    retries: int = 0
    time_to_first_token_s: float | None = None
    response_id: str | None = None
    response_model: str | None = None
    """The model that answered, as the provider reported it (may be a dated snapshot)."""
    refusal: bool = False
    """The model declined; the message's text is the refusal."""


REFUSED_WITHOUT_TEXT = "(the model refused to answer)"
"""The answer of a refusal that came with no text of its own."""


@dataclass(frozen=True, slots=True)
class TextCoalescing:
    """How streamed text is gathered before an observer sees it (``collect_turn``'s
    ``coalesce``): held text is let go on a newline, at ``max_chars``, or once its oldest piece
    is ``max_delay_s`` old, and always before any other event and at the end of the stream."""

    max_chars: int = 1024
    max_delay_s: float = 0.05


COALESCE_TEXT = TextCoalescing()
"""The run's coalescing: a 500-byte answer streamed in 40 pieces reaches observers as one."""

WAIT_S = 0.01
"""A gap between events this long means the stream is waiting on the model: from then on a
timer lets held text go after ``max_delay_s`` even while no event arrives."""


class _Assembly:
    """The parts of one answer while its stream is read."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] | None = None
        self.reasoning: list[Mapping[str, Any]] = []
        self.calls: dict[int, dict[str, Any]] = {}

    def clear(self) -> None:
        """Forget a failed attempt: the retry streams the whole answer again."""
        self.text, self.refusal, self.reasoning, self.calls = [], None, [], {}

    def add_call(self, event: ToolCallDelta) -> None:
        slot = self.calls.setdefault(event.index, {"id": None, "name": None, "args": []})
        slot["id"] = slot["id"] or event.id
        slot["name"] = slot["name"] or event.name
        slot["args"].append(event.arguments)

    def message(self) -> Message:
        tool_calls = tuple(_finish_call(i, slot) for i, slot in sorted(self.calls.items()))
        text = "".join(self.text)
        if self.refusal is not None:
            said = "".join(self.refusal).strip() or text.strip() or REFUSED_WITHOUT_TEXT
            return Message("assistant", said, tool_calls, meta={"refusal": True},
                           reasoning=tuple(self.reasoning))
        return Message("assistant", text, tool_calls, reasoning=tuple(self.reasoning))


def _ignore(event: StreamEvent) -> None:
    return None


class _Reader:
    """One stream being read: the answer so far, and the text its observer has not seen yet
    (``parts.text[shown:]``, the oldest piece of it arrived at ``since``)."""

    def __init__(self, on_event: Callable[[StreamEvent], None], now: Callable[[], float],
                 hold: TextCoalescing | None) -> None:
        self.on_event = on_event
        self.now = now
        self.holding = hold is not None
        """False: every event is shown as it arrives (``read_each``)."""
        self.max_chars = (hold or COALESCE_TEXT).max_chars
        self.max_delay = (hold or COALESCE_TEXT).max_delay_s
        self.start = now()
        self.ttft: float | None = None
        self.parts = _Assembly()
        self.usage = Usage()
        self.finish: FinishReason = "stop"
        self.retries = 0
        self.info = ResponseInfo()
        self.shown = 0
        self.since = 0.0
        self.chars = 0

    def turn(self) -> ModelTurn:
        return ModelTurn(self.parts.message(), self.usage, self.finish, self.retries, self.ttft,
                         self.info.id, self.info.model, self.parts.refusal is not None)

    def release(self) -> None:
        """Show the held text now, as one ``TextDelta``."""
        text = self.parts.text
        if self.holding and self.shown < len(text):
            piece = "".join(text[self.shown:])
            self.shown, self.chars = len(text), 0
            if piece:
                self.on_event(TextDelta(piece))

    async def read_each(self, events: AsyncIterator[StreamEvent]) -> None:
        """Read to the end of the stream, showing every event as it arrives."""
        on_event, now = self.on_event, self.now
        async for event in events:
            on_event(event)
            if type(event) is TextDelta:  # most of a stream: one test, not the chain
                if self.ttft is None:
                    self.ttft = now() - self.start
                self.parts.text.append(event.text)
            else:
                self.assemble(event, now())

    async def read(self, events: AsyncIterator[StreamEvent]) -> bool:
        """Read to the end of the stream, holding text; True as soon as the stream makes us
        wait (``WAIT_S``): the caller reads the rest with a timer (``read_timed``).

        The hot loop of a turn: one test per text piece, locals only, the observer called
        once per release instead of once per piece."""
        now, text = self.now, self.parts.text
        max_chars, max_delay, wait = self.max_chars, self.max_delay, WAIT_S
        last = self.start
        shown, since, chars = self.shown, self.since, self.chars
        async for event in events:
            t = now()
            if type(event) is not TextDelta or t - last >= wait:
                self.shown, self.since, self.chars = shown, since, chars
                self.take(event, t)
                if t - last >= wait:
                    return True
                last, text = t, self.parts.text
                shown, since, chars = self.shown, self.since, self.chars
                continue
            last = t
            piece = event.text
            text.append(piece)
            if not chars:
                since = t
                if self.ttft is None:
                    self.ttft = t - self.start
            chars += len(piece)
            if chars >= max_chars or t - since >= max_delay or "\n" in piece:
                held = "".join(text[shown:])
                self.shown = shown = len(text)  # kept current: a failure shows only the rest
                chars = 0
                self.on_event(TextDelta(held))
        self.shown, self.since, self.chars = shown, since, chars
        return False

    async def read_timed(self, events: AsyncIterator[StreamEvent]) -> None:
        """Read the rest of a stream that waits on the model, while a timer lets held text
        go once it is ``max_delay_s`` old (a model that pauses mid-sentence still shows it).
        A failure of either (the stream's, or the observer's in the timer) is raised as
        itself, not inside the task group's ``ExceptionGroup``."""
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._tick, failed, tg.cancel_scope)
            try:
                async for event in events:
                    self.take(event, self.now())
            except Exception as exc:
                failed.append(exc)
            tg.cancel_scope.cancel()
        if failed:
            raise failed[0]

    async def _tick(self, failed: list[Exception], scope: anyio.CancelScope) -> None:
        delay = self.max_delay
        while True:
            held = self.shown < len(self.parts.text)
            wait = self.since + delay - self.now() if held else delay
            if wait > 0:
                await anyio.sleep(wait)
                continue
            try:
                self.release()
            except Exception as exc:
                failed.append(exc)
                scope.cancel()
                return

    def take(self, event: StreamEvent, t: float) -> None:
        """One event: text is held (and let go by the coalescing rules), anything else lets
        the held text go first, so the observer sees every event in stream order."""
        if type(event) is TextDelta:
            if self.shown == len(self.parts.text):
                self.since = t
            self.parts.text.append(event.text)
            self.chars += len(event.text)
            self.ttft = t - self.start if self.ttft is None else self.ttft
            if (self.chars >= self.max_chars or t - self.since >= self.max_delay
                    or "\n" in event.text):
                self.release()
            return
        self.release()
        self.on_event(event)
        self.assemble(event, t)

    def assemble(self, event: StreamEvent, t: float) -> None:
        """Add one event to the answer (the observer has been told already); the commonest
        kinds of a stream are tested first."""
        if isinstance(event, _ANSWER_STARTS):
            self.ttft = t - self.start if self.ttft is None else self.ttft
        if isinstance(event, ToolCallDelta):
            self.parts.add_call(event)
        elif isinstance(event, Usage):
            self.usage = event
        elif isinstance(event, Done):
            self.finish = event.finish_reason
        elif isinstance(event, TextDelta):
            self.parts.text.append(event.text)
            self.shown = len(self.parts.text)
        elif isinstance(event, ResponseInfo):
            self.info = ResponseInfo(event.id or self.info.id, event.model or self.info.model)
        elif isinstance(event, Refusal):
            self.parts.refusal = [*(self.parts.refusal or ()), event.text]
        elif isinstance(event, Reasoning):
            self.parts.reasoning.append(event.block)
        elif isinstance(event, Retry):
            self.retries += 1
            self.parts.clear()
            self.shown = 0


_ANSWER_STARTS = (TextDelta, ToolCallDelta, Refusal)
"""The first of these starts the answer (time to first token)."""


async def collect_turn(
    stream: AsyncIterator[StreamEvent],
    on_event: Callable[[StreamEvent], None] | None = None,
    clock: Callable[[], float] | None = None,
    *,
    coalesce: TextCoalescing | None = None,
) -> ModelTurn:
    """Assemble a stream into a ``ModelTurn``; ``on_event`` sees every event as it arrives.

    With ``coalesce`` (``COALESCE_TEXT`` for a run), text reaches ``on_event`` in few, larger
    ``TextDelta``s instead of one per piece the provider sent (``TextCoalescing``); the other
    events and their order are unchanged, and held text is still shown when the stream fails
    or is cancelled (what the model said before it stopped)."""
    hold = coalesce if on_event is not None else None
    reader = _Reader(on_event or _ignore, clock or time.monotonic, hold)
    events = aiter(stream)
    try:
        if hold is None:
            await reader.read_each(events)
        elif await reader.read(events):
            await reader.read_timed(events)
    finally:
        reader.release()
    return reader.turn()


def _finish_call(index: int, slot: Mapping[str, Any]) -> ToolCall:
    raw = "".join(slot["args"]).strip()
    call_id = slot["id"] or f"call_{index}"
    name = slot["name"] or ""
    if not raw:
        return ToolCall(call_id, name, {})
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, {}, f"{exc.msg} at position {exc.pos} in {raw[:200]!r}")
    if not isinstance(args, dict):
        return ToolCall(call_id, name, {}, f"arguments must be a JSON object, got {raw[:200]!r}")
    return ToolCall(call_id, name, args)


def server_of(base_url: str) -> tuple[str, int] | None:
    """``(host, port)`` of a base URL, the port defaulted from the scheme."""
    parts = urllib.parse.urlsplit(base_url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def call_cost(model: ModelClient, usage: Usage) -> float | None:
    """The estimated dollars of one call of ``model`` (``engine.models.prices``), or None when
    its price is unknown: callers reach prices through the model layer, never directly."""
    return estimate_cost(model.provider, model.model, usage)


def to_run_usage(usage: Usage, cost_usd: float | None) -> RunUsage:
    return RunUsage(usage.input_tokens, usage.output_tokens, usage.cached_tokens, cost_usd)
