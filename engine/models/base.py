"""The model contract: ``ModelClient.stream`` yields provider-neutral stream events.

Providers convert the engine's ``Message`` list and tool schemas to their wire format and their
stream back into ``TextDelta``, ``ToolCallDelta``, ``Usage`` and ``Done``. ``collect_turn``
assembles a stream into one assistant ``Message``; the runner never sees a wire format.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from engine.models.prices import estimate_cost
from engine.state import Message, ToolCall
from engine.state import Usage as RunUsage

FinishReason = Literal["stop", "tool_calls", "length", "error"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A fragment of the assistant's text."""

    text: str


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


async def collect_turn(
    stream: AsyncIterator[StreamEvent],
    on_event: Callable[[StreamEvent], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> ModelTurn:
    """Assemble a stream into a ``ModelTurn``; ``on_event`` sees every event as it arrives."""
    import time

    now = clock or time.monotonic
    start = now()
    ttft: float | None = None
    parts = _Assembly()
    usage = Usage()
    finish: FinishReason = "stop"
    retries = 0
    info = ResponseInfo()
    async for event in stream:
        if on_event is not None:
            on_event(event)
        if type(event) is TextDelta:  # most of a stream: one test, not the chain below
            if ttft is None:
                ttft = now() - start
            parts.text.append(event.text)
            continue
        if isinstance(event, TextDelta | ToolCallDelta | Refusal):
            ttft = now() - start if ttft is None else ttft
        if isinstance(event, TextDelta):
            parts.text.append(event.text)
        elif isinstance(event, ToolCallDelta):
            parts.add_call(event)
        elif isinstance(event, Refusal):
            parts.refusal = [*(parts.refusal or ()), event.text]
        elif isinstance(event, Reasoning):
            parts.reasoning.append(event.block)
        elif isinstance(event, ResponseInfo):
            info = ResponseInfo(event.id or info.id, event.model or info.model)
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, Retry):
            retries += 1
            parts.clear()
        elif isinstance(event, Done):
            finish = event.finish_reason
    return ModelTurn(parts.message(), usage, finish, retries, ttft, info.id, info.model,
                     parts.refusal is not None)


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
