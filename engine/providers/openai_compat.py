"""The OpenAI Chat Completions client: streaming SSE, for OpenAI and every compatible server.

``OPENAI_BASE_URL`` (or the ``ollama`` provider) points it at Ollama, vLLM or llama.cpp. The
request asks for ``stream_options.include_usage`` so the last chunk carries token counts; tool
calls arrive as fragments keyed by ``index`` and are passed on as ``ToolCallDelta``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from engine.models.base import (
    Done,
    FinishReason,
    ModelParams,
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
from engine.vocabulary.errors import ModelError
from engine.vocabulary.state import Message

logger = logging.getLogger(__name__)

CHAT_PATH = "/chat/completions"
MODELS_PATH = "/models"

FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "error",
}


class OpenAICompatClient:
    """A ``ModelClient`` speaking Chat Completions over one ``HttpStream``."""

    models_path = MODELS_PATH

    def __init__(
        self,
        model: str,
        http: HttpStream,
        *,
        provider: str = "openai",
        retry: RetryPolicy | None = None,
        max_tokens_field: str = "max_completion_tokens",
    ) -> None:
        self.provider = provider
        self.model = model
        self.http = http
        self.retry = retry or RetryPolicy()
        self.max_tokens_field = max_tokens_field
        """OpenAI wants ``max_completion_tokens``; Ollama and older servers ``max_tokens``."""
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
        """The JSON body of a streaming Chat Completions request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            self.max_tokens_field: params.max_tokens,
        }
        if tools:
            body["tools"] = [to_openai_tool(t) for t in tools]
        body.update(openai_options(params))
        body.update(params.extra)
        return body

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def _attempt(
        self, payload: Mapping[str, Any], ids: CallIds
    ) -> AsyncGenerator[StreamEvent, None]:
        parser = ChunkParser(self.provider, ids)
        saw_done = False
        async with aclosing(self.http.events(CHAT_PATH, payload)) as events:
            async for _event, data in events:
                if data == "[DONE]":
                    saw_done = True
                    await drain(events)
                    break
                for out in parser.feed(data):
                    yield out
        for out in parser.finish(saw_done):
            yield out


class ChunkParser:
    """Turns ``chat.completion.chunk`` data into stream events; holds usage until the end."""

    def __init__(self, provider: str, ids: CallIds | None = None) -> None:
        self.provider = provider
        self.ids = ids or CallIds(())
        self._started: set[int] = set()
        self.usage = Usage()
        self.finish_reason: FinishReason | None = None
        self.saw_tool_call = False
        self._ids: dict[str, int] = {}
        self._answered_by = False

    def feed(self, data: str) -> list[StreamEvent]:
        """Events for one ``data:`` payload; a wrongly shaped chunk is one ``ModelError``."""
        chunk = _decode(self.provider, data)
        try:
            return self._dispatch(chunk)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(
                f"{self.provider}: malformed stream event ({exc!r}): {data[:200]!r}"
            ) from exc

    def _dispatch(self, chunk: Mapping[str, Any]) -> list[StreamEvent]:
        if chunk.get("error"):
            raise _stream_error(self.provider, chunk["error"])
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        out: list[StreamEvent] = []
        if not self._answered_by and (chunk.get("id") or chunk.get("model")):
            self._answered_by = True
            out.append(ResponseInfo(chunk.get("id") or None, chunk.get("model") or None))
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out.append(TextDelta(delta["content"]))
            if delta.get("refusal"):
                out.append(Refusal(delta["refusal"]))
            for call in delta.get("tool_calls") or ():
                out.append(self._tool_delta(call))
            if choice.get("finish_reason"):
                self.finish_reason = FINISH_REASONS.get(choice["finish_reason"], "stop")
        return out

    def finish(self, saw_done: bool) -> list[StreamEvent]:
        """Usage, then ``Done``; a stream cut before ``[DONE]`` and any finish reason is retried."""
        reason = self.finish_reason
        if reason is None:
            if not saw_done:
                raise TransientError("the stream ended before its finish reason")
            reason = "tool_calls" if self.saw_tool_call else "stop"
        return [self.usage, Done(reason)]

    def _tool_delta(self, call: Mapping[str, Any]) -> ToolCallDelta:
        fn = call.get("function") or {}
        index = call.get("index")
        if index is None:  # some compatible servers omit it: a new id starts a new call
            call_id = call.get("id")
            if call_id and call_id not in self._ids:
                self._ids[call_id] = len(self._ids)
            index = self._ids[call_id] if call_id else max(len(self._ids) - 1, 0)
        self.saw_tool_call = True
        index = int(index)
        call_id = None
        if index not in self._started:
            self._started.add(index)
            call_id = self.ids.claim(index, call.get("id"))
        return ToolCallDelta(index, call_id, fn.get("name") or None, fn.get("arguments") or "")


def openai_options(params: ModelParams) -> dict[str, Any]:
    """The model settings in Chat Completions form (unset ones are left out)."""
    fields = {"temperature": params.temperature, "top_p": params.top_p, "seed": params.seed,
              "stop": list(params.stop) or None, "reasoning_effort": params.reasoning_effort}
    return {k: v for k, v in fields.items() if v is not None}


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Engine messages in Chat Completions form (arguments as JSON strings)."""
    return [_to_openai_message(m) for m in messages]


def _to_openai_message(m: Message) -> dict[str, Any]:
    if m.role == "assistant":
        d: dict[str, Any] = {"role": "assistant", "content": m.content or None}
        if m.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(dict(c.args))}}
                for c in m.tool_calls
            ]
        elif not m.content:
            d["content"] = ""
        return d
    if m.role == "tool":
        content = f"Error: {m.content}" if m.is_error else m.content
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": content}
    return {"role": m.role, "content": m.content}


def to_openai_tool(tool: ToolSchema) -> dict[str, Any]:
    """A tool in Chat Completions ``function`` form."""
    return {"type": "function", "function": {
        "name": tool.name, "description": tool.description, "parameters": dict(tool.input_schema),
    }}


def _usage(raw: Mapping[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0),
                 int(details.get("cached_tokens") or 0))


def _decode(provider: str, data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise ModelError(f"{provider}: malformed stream event (not JSON): {data[:200]!r}") from exc
    if not isinstance(chunk, dict):
        raise ModelError(f"{provider}: malformed stream event (not an object): {data[:200]!r}")
    return chunk


def _stream_error(provider: str, error: Any) -> Exception:
    message = error.get("message") if isinstance(error, dict) else str(error)
    return ModelError(f"{provider}: the server reported an error mid-stream: {message}")
