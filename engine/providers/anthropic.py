"""The Anthropic Messages client: streaming SSE with typed events and content blocks.

System messages travel separately; tool calls are ``tool_use`` blocks and tool results
``tool_result`` blocks in a user message (consecutive results merged). The stream's
``content_block_*`` events become ``TextDelta`` and ``ToolCallDelta`` (numbered per tool call,
not per block); usage comes from ``message_start`` and ``message_delta``. ``thinking`` and
``redacted_thinking`` blocks are kept whole (with their signature) as ``Reasoning`` and sent back
in the same assistant turn, as extended thinking with tools requires. Every request asks for
prompt caching: ``cache_control`` marks the system prompt, the last tool and the last message.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from engine.models.base import (
    Done,
    FinishReason,
    ModelParams,
    Reasoning,
    Refusal,
    ResponseInfo,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
    Usage,
    server_of,
)
from engine.models.callids import CallIds
from engine.providers.http import HttpStream, drain
from engine.providers.retry import RetryPolicy, TransientError, retrying
from engine.vocabulary.errors import ModelConfigError, ModelError
from engine.vocabulary.state import Message

logger = logging.getLogger(__name__)

API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value."""
MESSAGES_PATH = "/v1/messages"
MODELS_PATH = "/v1/models?limit=1000"

STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "stop",
}

CACHE = {"type": "ephemeral"}
"""The ``cache_control`` of a prompt-cache breakpoint (the default five-minute cache)."""

THINKING_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}
"""``reasoning_effort`` -> extended thinking's ``budget_tokens`` (the API's minimum is 1024)."""

REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")

TRANSIENT_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
"""``event: error`` types sent mid-stream that are worth another attempt."""


def anthropic_headers(api_key: str | None, auth_token: str | None = None) -> dict[str, str]:
    """The headers every Messages request carries: the key as ``x-api-key``, a token (as
    ``ANTHROPIC_AUTH_TOKEN`` gives, for gateways) as ``Authorization: Bearer``."""
    headers = {"anthropic-version": API_VERSION}
    if api_key:
        headers["x-api-key"] = api_key
    if auth_token:
        headers["authorization"] = f"Bearer {auth_token}"
    return headers


class AnthropicClient:
    """A ``ModelClient`` speaking the Messages API over one ``HttpStream``."""

    provider = "anthropic"
    models_path = MODELS_PATH

    def __init__(self, model: str, http: HttpStream, *, retry: RetryPolicy | None = None) -> None:
        self.model = model
        self.http = http
        self.retry = retry or RetryPolicy()
        self.server = server_of(http.base_url)

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], params: ModelParams
    ) -> AsyncIterator[StreamEvent]:
        """Stream one answer, retrying transient failures (each retry is a ``Retry`` event)."""
        payload = self.request(messages, tools, params)
        return retrying(self.provider, lambda: self._attempt(payload, CallIds(messages)),
                        self.retry)

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], params: ModelParams
    ) -> dict[str, Any]:
        """The JSON body of a streaming Messages request."""
        system, wire = to_anthropic_messages(messages)
        mark_last_block(wire)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "messages": wire,
            "stream": True,
        }
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": CACHE}]
        if tools:
            body["tools"] = [to_anthropic_tool(t) for t in tools]
            body["tools"][-1]["cache_control"] = CACHE
        body.update(anthropic_options(params))
        body.update(params.extra)
        return body

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def _attempt(
        self, payload: Mapping[str, Any], ids: CallIds
    ) -> AsyncGenerator[StreamEvent, None]:
        parser = EventParser(ids)
        async with aclosing(self.http.events(MESSAGES_PATH, payload)) as events:
            async for event, data in events:
                for out in parser.feed(event, data):
                    yield out
                if parser.stopped:
                    await drain(events)
                    break
        for out in parser.finish():
            yield out


def anthropic_options(params: ModelParams) -> dict[str, Any]:
    """The model settings in Messages form; ``reasoning_effort`` turns on extended thinking.

    The API has no ``seed``, and thinking refuses a changed ``temperature``: both are
    ``ModelConfigError`` (``check_anthropic_options`` says so before a run starts).
    """
    check_anthropic_options(params)
    out: dict[str, Any] = {}
    if params.temperature is not None:
        out["temperature"] = params.temperature
    if params.top_p is not None:
        out["top_p"] = params.top_p
    if params.stop:
        out["stop_sequences"] = list(params.stop)
    if params.reasoning_effort is not None:
        budget = THINKING_BUDGET[params.reasoning_effort]
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        out["max_tokens"] = max(params.max_tokens, budget + 1024)  # budget < max_tokens
    return out


def check_anthropic_options(params: ModelParams) -> None:
    """Refuse the settings the Messages API cannot honour, naming the fix."""
    if params.seed is not None:
        raise ModelConfigError("anthropic: the Messages API has no seed; remove `seed` from "
                               "model_options (or --model-option) for this model")
    if params.temperature is not None and params.temperature > 1:
        raise ModelConfigError(f"anthropic: temperature {params.temperature:g} is out of range; "
                               "the Messages API takes 0 to 1")
    if params.reasoning_effort is not None and params.temperature is not None:
        raise ModelConfigError("anthropic: extended thinking (reasoning_effort) cannot be "
                               "combined with temperature; remove one of them")


def mark_last_block(wire: list[dict[str, Any]]) -> None:
    """Put a cache breakpoint on the last message's last block (thinking blocks take none)."""
    if not wire:
        return
    for block in reversed(wire[-1]["content"]):
        if block.get("type") not in REASONING_BLOCKS:
            block["cache_control"] = CACHE
            return


class EventParser:
    """Turns Messages stream events into stream events; holds usage until the end."""

    def __init__(self, ids: CallIds | None = None) -> None:
        self.ids = ids or CallIds(())
        self.input_tokens = 0
        self.cached_tokens = 0
        self.cache_write_tokens = 0
        self.output_tokens = 0
        self.stop_reason: FinishReason | None = None
        self.refused = False
        self.stopped = False
        self._tool_index: dict[int, int] = {}
        """Content block index -> tool call ordinal."""
        self._reasoning: dict[int, dict[str, Any]] = {}
        """Content block index -> the reasoning block being assembled."""

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """Events for one SSE event; a wrongly shaped event is one ``ModelError``."""
        if event == "ping":
            return []
        body = _decode(event, data)
        try:
            return self._dispatch(event, body)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(
                f"anthropic: malformed stream event {event!r} ({exc!r}): {data[:200]!r}"
            ) from exc

    def _dispatch(self, event: str, body: Mapping[str, Any]) -> list[StreamEvent]:
        kind = body.get("type", event)
        if kind == "content_block_delta":
            return self._block_delta(body)
        if kind == "content_block_start":
            return self._block_start(body)
        if kind == "content_block_stop":
            block = self._reasoning.pop(int(body["index"]), None)
            return [Reasoning(block)] if block is not None else []
        if kind == "message_start":
            message = body.get("message") or {}
            self._read_usage(message.get("usage") or {})
            return [ResponseInfo(message.get("id") or None, message.get("model") or None)]
        if kind == "message_delta":
            reason = (body.get("delta") or {}).get("stop_reason")
            if reason:
                self.stop_reason = STOP_REASONS.get(reason, "stop")
                self.refused = reason == "refusal"
            self._read_usage(body.get("usage") or {})
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise _stream_error(body.get("error") or {})
        return []

    def finish(self) -> list[StreamEvent]:
        """Usage, then ``Done``; a stream cut before ``message_stop`` is worth a retry."""
        if not self.stopped:
            raise TransientError("the stream ended before message_stop")
        usage = Usage(self.input_tokens, self.output_tokens, self.cached_tokens,
                      self.cache_write_tokens)
        refusal: list[StreamEvent] = [Refusal("")] if self.refused else []
        return [*refusal, usage, Done(self.stop_reason or "stop")]

    def _block_start(self, body: Mapping[str, Any]) -> list[StreamEvent]:
        block = body.get("content_block") or {}
        if block.get("type") == "tool_use":
            ordinal = self._tool_index.setdefault(int(body["index"]), len(self._tool_index))
            call_id = self.ids.claim(ordinal, block.get("id"))
            return [ToolCallDelta(ordinal, call_id, block.get("name"))]
        if block.get("type") == "text" and block.get("text"):
            return [TextDelta(block["text"])]
        if block.get("type") in REASONING_BLOCKS:
            self._reasoning[int(body["index"])] = dict(block)
        return []

    def _block_delta(self, body: Mapping[str, Any]) -> list[StreamEvent]:
        delta = body.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [TextDelta(delta["text"])]
        if kind == "input_json_delta" and delta.get("partial_json"):
            ordinal = self._tool_index.get(int(body["index"]))
            if ordinal is None:
                raise ModelError(f"anthropic: input_json_delta for unknown block {body['index']}")
            return [ToolCallDelta(ordinal, arguments=delta["partial_json"])]
        block = self._reasoning.get(int(body.get("index", -1)))
        if block is not None and kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking") or "")
        elif block is not None and kind == "signature_delta":
            block["signature"] = str(delta.get("signature") or "")
        return []

    def _read_usage(self, usage: Mapping[str, Any]) -> None:
        """Input counts cached and cache-writing tokens too; output is cumulative."""
        if "input_tokens" in usage or "cache_read_input_tokens" in usage:
            read = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            self.cached_tokens = read
            self.cache_write_tokens = written
            self.input_tokens = int(usage.get("input_tokens") or 0) + read + written
        if usage.get("output_tokens") is not None:
            self.output_tokens = int(usage["output_tokens"])


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in Messages form; same-role neighbours are merged into one."""
    system: list[str] = []
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            if m.content:
                system.append(m.content)
            continue
        role = "assistant" if m.role == "assistant" else "user"
        blocks = _blocks(m)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return "\n\n".join(system), wire


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        block: dict[str, Any] = {"type": "tool_result",
                                 "tool_use_id": _safe_id(m.tool_call_id or "")}
        if m.content:
            block["content"] = m.content
        if m.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = [dict(b) for b in m.reasoning
                                     if m.role == "assistant" and b.get("type") in REASONING_BLOCKS]
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for call in m.tool_calls:
        blocks.append({"type": "tool_use", "id": _safe_id(call.id), "name": call.name,
                       "input": dict(call.args)})
    return blocks


def _safe_id(call_id: str) -> str:
    """Anthropic accepts ids of ``[A-Za-z0-9_-]`` only; ids from other providers may differ."""
    return _UNSAFE_ID.sub("_", call_id) or "call"


def to_anthropic_tool(tool: ToolSchema) -> dict[str, Any]:
    """A tool in Messages form."""
    return {"name": tool.name, "description": tool.description,
            "input_schema": dict(tool.input_schema)}


def _decode(event: str, data: str) -> dict[str, Any]:
    try:
        body = json.loads(data)
    except ValueError as exc:
        raise ModelError(
            f"anthropic: malformed stream event {event!r} (not JSON): {data[:200]!r}"
        ) from exc
    if not isinstance(body, dict):
        raise ModelError(f"anthropic: malformed stream event {event!r}: {data[:200]!r}")
    return body


def _stream_error(error: Mapping[str, Any]) -> Exception:
    kind = str(error.get("type") or "error")
    message = f"{kind}: {error.get('message') or ''}".rstrip(": ")
    if kind in TRANSIENT_ERROR_TYPES:
        return TransientError(f"server error mid-stream ({message})")
    return ModelError(f"anthropic: the server reported an error mid-stream: {message}")
