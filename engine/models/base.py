"""The model contract: ``ModelClient.stream`` yields provider-neutral stream events.

Providers convert the engine's ``Message`` list and tool schemas to their wire format and their
stream back into ``TextDelta``, ``ToolCallDelta``, ``Usage`` and ``Done``. ``collect_turn``
assembles a stream into one assistant ``Message``; the runner never sees a wire format.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

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
    output_tokens: int = 0
    cached_tokens: int = 0


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


StreamEvent = TextDelta | ToolCallDelta | Usage | Retry | Done


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """A tool as offered to a model."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelParams:
    """Per-call parameters."""

    max_tokens: int = 4096
    temperature: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class ModelClient(Protocol):
    """A streaming chat model."""

    provider: str
    """``openai``, ``anthropic``, ``ollama``, ``scripted``."""
    model: str

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
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage = Usage()
    finish: FinishReason = "stop"
    retries = 0
    async for event in stream:
        if on_event is not None:
            on_event(event)
        if isinstance(event, TextDelta):
            ttft = now() - start if ttft is None else ttft
            text.append(event.text)
        elif isinstance(event, ToolCallDelta):
            ttft = now() - start if ttft is None else ttft
            slot = calls.setdefault(event.index, {"id": None, "name": None, "args": []})
            slot["id"] = slot["id"] or event.id
            slot["name"] = slot["name"] or event.name
            slot["args"].append(event.arguments)
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, Retry):
            retries += 1
            text.clear()
            calls.clear()
        elif isinstance(event, Done):
            finish = event.finish_reason
    tool_calls = tuple(_finish_call(i, slot) for i, slot in sorted(calls.items()))
    message = Message("assistant", "".join(text), tool_calls)
    return ModelTurn(message, usage, finish, retries, ttft)


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


def to_run_usage(usage: Usage, cost_usd: float | None) -> RunUsage:
    return RunUsage(usage.input_tokens, usage.output_tokens, usage.cached_tokens, cost_usd)
