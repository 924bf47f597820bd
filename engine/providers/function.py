"""A model from a plain function: deterministic agents, tests and demos without a provider.

``function_model(fn)`` makes a ``ModelClient`` of ``fn(messages)`` (sync or ``async``), which
returns the assistant's reply: its text (a ``str``), one tool call (``tool_call(name, **args)``)
or a list of them. The run treats it as any model: its calls are approved, executed, recorded
and resumed the same way. A run started with it is resumed by passing it again.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from engine.models.base import (
    Done,
    ModelParams,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from engine.vocabulary.errors import ModelConfigError
from engine.vocabulary.state import Message


@dataclass(frozen=True, slots=True)
class CallRequest:
    """A tool call a function model asks for."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


Reply: TypeAlias = str | CallRequest | Sequence[CallRequest]
ReplyFunction: TypeAlias = Callable[[Sequence[Message]], Reply | Awaitable[Reply]]


def tool_call(name: str, /, **args: Any) -> CallRequest:
    """The reply "call tool ``name`` with ``args``" (``tool_call("word_count", text="hi")``)."""
    return CallRequest(name, args)


class FunctionModel:
    """A ``ModelClient`` whose every answer is ``fn(messages)``."""

    provider = "function"
    server: tuple[str, int] | None = None

    def __init__(self, fn: ReplyFunction, name: str | None = None) -> None:
        self._fn = fn
        self.model: str = name or str(getattr(fn, "__name__", "function"))

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema],
                     params: ModelParams) -> AsyncIterator[StreamEvent]:
        reply = self._fn(messages)
        if inspect.isawaitable(reply):
            reply = await reply
        calls = _calls(reply, self.model)
        if calls is None:
            yield TextDelta(str(reply))
            yield Done("stop")
            return
        offered = {t.name for t in tools}
        for index, call in enumerate(calls):
            if call.name not in offered:
                raise ModelConfigError(f"model {self.model}: asked for tool {call.name!r}, "
                                       f"which the state does not offer ({sorted(offered)})")
            call_id = f"{self.model}-{len(messages)}-{index}"  # unique within the run
            yield ToolCallDelta(index, call_id, call.name, json.dumps(dict(call.args)))
        yield Done("tool_calls")

    async def aclose(self) -> None:
        return None


def _calls(reply: object, model: str) -> list[CallRequest] | None:
    """The tool calls of a reply, or None when it is text."""
    if isinstance(reply, str):
        return None
    if isinstance(reply, CallRequest):
        return [reply]
    if isinstance(reply, Sequence) and reply and all(isinstance(c, CallRequest) for c in reply):
        return list(reply)
    raise ModelConfigError(f"model {model}: a reply is text, tool_call(...) or a list of "
                           f"them, not {type(reply).__name__}")


def function_model(fn: ReplyFunction | None = None, *, name: str | None = None) -> Any:
    """A model of ``fn`` (also a decorator: ``@function_model`` or
    ``@function_model(name="counter")``)."""
    if fn is None:
        return lambda f: FunctionModel(f, name)
    return FunctionModel(fn, name)
