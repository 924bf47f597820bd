"""Invoking one tool call: look up, validate arguments, run with a timeout, cap the output.

Every failure becomes a ``ToolResult`` with ``is_error``: unknown tool, invalid arguments,
timeout, an exception inside the handler. Cancellation (Ctrl-C) is not caught: it propagates.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from pydantic import ValidationError

from engine.state import ToolCall
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS = 60_000
"""Content beyond this is cut to head + tail with the omitted size stated."""


async def invoke(registry: ToolRegistry, call: ToolCall, ctx: ToolContext) -> ToolResult:
    """Run ``call`` against ``registry``; never raises except for cancellation."""
    spec = registry.get(call.name)
    if spec is None:
        known = ", ".join(registry.names()) or "none"
        return ToolResult.error(f"unknown tool {call.name!r}; available tools: {known}")
    if call.args_error:
        return ToolResult.error(f"invalid JSON arguments for {call.name}: {call.args_error}")
    parsed = validate_args(spec, call.args)
    if isinstance(parsed, ToolResult):
        return parsed
    timeout = ctx.timeout_s or spec.timeout_s
    try:
        with anyio.fail_after(timeout):
            result = await spec.handler(parsed, ctx)
    except TimeoutError:
        return ToolResult.error(f"{call.name} timed out after {timeout:g}s")
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:  # a broken tool must not kill the run
        logger.exception("tool %s raised", call.name)
        return ToolResult.error(f"{call.name} failed: {type(exc).__name__}: {exc}")
    return cap_result(result)


def validate_args(spec: ToolSpec, args: Any) -> Any:
    """The handler's argument object, or an error result naming every invalid field."""
    if spec.input_model is None:
        return dict(args or {})
    try:
        return spec.input_model.model_validate(dict(args or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return ToolResult.error(f"invalid arguments for {spec.name}: {problems}")


def cap_result(result: ToolResult, limit: int = MAX_RESULT_CHARS) -> ToolResult:
    """Keep head and tail of an over-long result and say how much was left out."""
    text = result.content
    if len(text) <= limit:
        return result
    half = limit // 2
    omitted = len(text.encode()) - len(text[:half].encode()) - len(text[-half:].encode())
    content = f"{text[:half]}\n... [{omitted} bytes omitted] ...\n{text[-half:]}"
    return ToolResult(content, result.is_error, result.data, True, result.omitted_bytes + omitted)
