"""Invoking one tool call: look up, validate arguments, run with a timeout, cap the output.

Every failure becomes a ``ToolResult`` with ``is_error``: unknown tool, invalid arguments,
timeout, an exception inside the handler, a handler returning something else than a result.
Cancellation (Ctrl-C) is not caught: it propagates (after the handler's own shielded cleanup).

Timeouts: the effective timeout is the call's own ``timeout_s`` argument when the tool's input
model has one and it is set, else ``ctx.timeout_s``, else the spec's ``timeout_s``. The handler
receives it as ``ctx.timeout_s``; a tool that enforces it itself (a shell tool keeps the output
of a command that timed out) gets ``HANDLER_GRACE_S`` more before ``invoke`` cancels it.

``invoke`` emits no events itself: the caller records the call, using ``describe_call`` for the
``tool_call`` event payload (name, version, arguments, duration, outcome, file hashes and patch).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec
from engine.vocabulary.errors import StoreError
from engine.vocabulary.state import ToolCall

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS = 60_000
"""Content beyond this is cut to head + tail with the omitted size stated."""
HANDLER_GRACE_S = 5.0
"""Extra time past the effective timeout before a handler is cancelled from outside."""


async def invoke(registry: ToolRegistry, call: ToolCall, ctx: ToolContext, *,
                 grace_s: float = HANDLER_GRACE_S) -> ToolResult:
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
    timeout = effective_timeout(spec, parsed, ctx)
    result = None
    try:
        # ``fail_after`` without its generator wrapper: only the deadline cancels this scope
        with anyio.CancelScope(deadline=anyio.current_time() + timeout + grace_s) as scope:
            result = await spec.handler(parsed, dataclasses.replace(ctx, timeout_s=timeout))
    except TimeoutError:
        return _timed_out(call, timeout)
    except (anyio.get_cancelled_exc_class(), StoreError):
        raise  # a database fault met while recording output ends the run, resumable
    except Exception as exc:  # a broken tool must not kill the run
        logger.exception("tool %s raised", call.name)
        return ToolResult.error(f"{call.name} failed: {type(exc).__name__}: {exc}")
    if scope.cancelled_caught:
        return _timed_out(call, timeout)
    if not isinstance(result, ToolResult):
        return ToolResult.error(f"{call.name} returned {type(result).__name__}, not a ToolResult "
                                "(a bug in the tool)")
    return cap_result(result)


def _timed_out(call: ToolCall, timeout: float) -> ToolResult:
    return ToolResult.error(f"{call.name} timed out after {timeout:g}s",
                            timed_out=True, timeout_s=timeout)


def effective_timeout(spec: ToolSpec, parsed: Any, ctx: ToolContext) -> float:
    """The call's ``timeout_s`` argument if it has one, else the context's, else the spec's."""
    requested = getattr(parsed, "timeout_s", None) if _may_have_timeout(parsed) else None
    if isinstance(requested, int | float) and not isinstance(requested, bool) and requested > 0:
        return float(requested)
    return ctx.timeout_s or spec.timeout_s


def _may_have_timeout(parsed: Any) -> bool:
    """False when ``parsed`` is a pydantic model without a ``timeout_s`` field, extra value or
    class attribute: asking it through ``getattr`` costs pydantic's failing ``__getattr__``."""
    if not isinstance(parsed, BaseModel):
        return True
    cls = type(parsed)
    return ("timeout_s" in cls.model_fields or hasattr(cls, "timeout_s")
            or "timeout_s" in (parsed.__pydantic_extra__ or {}))


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
    omitted = len(text[half:-half].encode("utf-8", "replace"))
    content = f"{text[:half]}\n... [{omitted} bytes omitted] ...\n{text[-half:]}"
    return ToolResult(content, result.is_error, result.data, True, result.omitted_bytes + omitted)


def describe_call(spec: ToolSpec | None, call: ToolCall, result: ToolResult | None,
                  duration_s: float) -> dict[str, Any]:
    """The ``tool_call`` event payload: what ran, how long, how it ended, what it changed.

    ``result`` None means the call was cancelled. The keys of the result's data the tool
    declares in ``ToolSpec.reported`` are added (file tools: ``path``, ``base_hash``,
    ``result_hash``, ``patch``; a shell tool: ``exit_code``, ``timed_out``, ...).
    """
    d: dict[str, Any] = {
        "call_id": call.id, "tool": call.name, "version": spec.version if spec else None,
        "args": dict(call.args), "duration_s": round(duration_s, 6),
        "outcome": "cancelled" if result is None else "error" if result.is_error else "ok",
        "is_error": result is None or result.is_error,
    }
    if spec is not None:
        d.update(risk=spec.risk, idempotent=spec.idempotent, side_effects=spec.side_effects,
                 source=spec.source)
    if result is not None:
        data = result.data or {}
        reported = spec.reported if spec is not None else ()
        d.update({k: data[k] for k in reported if k in data})
        d["truncated"] = result.truncated
        d["content_chars"] = len(result.content)
    return d
