"""The agent loop's actions: plan, call_model, checkpoint and evaluate_stop.

``call_model`` also serves workflows: with a ``prompt`` template it first appends the rendered
prompt as a user message, and stores the answer under ``results[<state>]``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from engine.actions.base import NoParams
from engine.actions.context import ActionContext
from engine.actions.context_window import budget_for, estimate_tools, prepare_view
from engine.models.base import (
    COALESCE_TEXT,
    Refusal,
    Retry,
    StreamEvent,
    TextDelta,
    ToolSchema,
    call_cost,
    collect_turn,
    to_run_usage,
)
from engine.models.options import merge_options, request_attributes, to_params
from engine.spec.model import ModelOptions
from engine.spec.templates import render
from engine.tooling.spec import ToolSpec
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import (
    CONTEXT,
    FILES_CHANGED,
    FINAL_ANSWER,
    HISTORY,
    MODEL_TURNS,
    PENDING_CALLS,
    PLAN,
    PLAN_TEXT,
    REFUSAL,
    RESULTS,
    STOP_REASON,
    TASK,
)
from engine.vocabulary.state import Message, Outcome
from engine.workspace.listing import summary

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = """\
You are a careful coding agent working in the workspace {{ workspace }}.
Use the tools to inspect files before changing them, keep changes minimal, run the tests to
check your work, and {planning}. When the task is done, answer
with a short summary and no tool calls."""
"""``{planning}`` names the run's planning tool: the one that records ``plan``."""


class PlanParams(BaseModel):
    """Params of ``plan``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ask_model: bool = False
    """Ask the model for an initial plan before the loop starts."""


def plan_asks_model(params: PlanParams) -> bool:
    """``plan`` calls the model only when the state says ``ask_model: true``."""
    return params.ask_model


async def plan(ctx: ActionContext, params: PlanParams) -> Outcome:
    """Prepare the conversation: system prompt, workspace summary, the task."""
    if ctx.run.messages:  # resumed after plan committed its messages: nothing to redo
        return Outcome("ready", note="conversation already prepared")
    task = TASK.get(ctx.run.data)
    system = ctx.machine.system_prompt or _default_prompt(ctx)
    system = render(system, template_context(ctx), where=f"{ctx.machine.path}: system_prompt")
    names = ", ".join(ctx.tools.names()) or "none"
    summary = await _workspace_summary(ctx)
    earlier = tuple(Message.from_dict(m) for m in HISTORY.get(ctx.run.data))
    messages = (
        Message("system", f"{system}\n\nTools available: {names}.\nWorkspace files:\n{summary}"),
        *earlier,
        Message("user", task),
    )
    updates: dict[str, Any] = {PLAN.name: []}
    if params.ask_model:
        turn_msg = Message("user", "Before starting, write a short numbered plan.")
        answer = await _call(ctx, (*messages, turn_msg), tools=False, options=call_options(ctx))
        return Outcome("ready", updates={**updates, PLAN_TEXT.name: answer.message.content},
                       messages=(*messages, turn_msg, answer.message), usage=answer.usage_run,
                       note="planned")
    return Outcome("ready", updates=updates, messages=messages,
                   note=f"task: {task[:80]}" if task else "no task text")


def _default_prompt(ctx: ActionContext) -> str:
    """The default system prompt, naming the run's planning tool (whichever records ``plan``)."""
    planner = next((s.name for s in ctx.tools if PLAN.name in s.records_keys), None)
    planning = f"keep your plan current with {planner}" if planner else "keep a short plan"
    return DEFAULT_SYSTEM_PROMPT.replace("{planning}", planning)


async def _workspace_summary(ctx: ActionContext, limit: int = 40) -> str:
    """The first files of the workspace for the prompt (tracked first, ignored trees never
    walked, in a worker thread) and how many more there are."""
    try:
        found = await anyio.to_thread.run_sync(summary, ctx.workspace, limit)
    except OSError:
        return "(unreadable)"
    shown = "\n".join(f"  {n}" for n in found.shown)
    if found.more:
        shown += f"\n  ... and {'' if found.exact else 'at least '}{found.more} more"
    if found.tracked is not None:
        shown += (f"\n  ({found.tracked} files tracked by git; untracked files are not "
                  "listed here)")
    return shown or "  (empty)"


def template_context(ctx: ActionContext) -> dict[str, Any]:
    """The names a prompt or argument template can use (documented in engine.spec.templates)."""
    data = ctx.run.data
    return {"task": TASK.get(data), "results": RESULTS.get(data), "data": data,
            "workspace": str(ctx.workspace)}


class CallModelParams(BaseModel):
    """Params of ``call_model``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    prompt: str | None = None
    """A template appended as a user message before the call (workflows)."""
    tools: bool = True
    """Offer the run's tools to the model."""
    max_tokens: int = Field(4096, gt=0)
    """Most tokens of one answer (``model_options.max_tokens`` of the state or CLI wins)."""
    model_options: ModelOptions | None = None
    """Model settings for this state's calls, over the machine's; the CLI's override them."""


def call_options(ctx: ActionContext, params: CallModelParams | None = None) -> dict[str, Any]:
    """The model settings of this step: machine, then state, then ``--model-option``."""
    state: dict[str, Any] = {}
    if params is not None:
        if "max_tokens" in params.model_fields_set:
            state["max_tokens"] = params.max_tokens
        state = merge_options(state, params.model_options)
    return merge_options(ctx.machine.model_options, state, ctx.config.model_options)


def call_model_emits(params: CallModelParams) -> frozenset[str]:
    """Without tools the model is offered none, and any it names anyway are dropped."""
    return frozenset({"tool_calls", "final"} if params.tools else {"final"})


_SHOWN_AS_TEXT = (TextDelta, Refusal)


class _Answer:
    __slots__ = ("message", "usage_run")

    def __init__(self, message: Message, usage_run: Any) -> None:
        self.message = message
        self.usage_run = usage_run


async def call_model(ctx: ActionContext, params: CallModelParams) -> Outcome:
    """Ask the model for the next turn; emits ``tool_calls`` or ``final``."""
    new: tuple[Message, ...] = ()
    if params.prompt:
        where = f"{ctx.machine.path}: state {ctx.state.name}, with.prompt"
        new = (Message("user", render(params.prompt, template_context(ctx), where=where)),)
    spent: list[Any] = []
    options = call_options(ctx, params)

    async def summarize(request: tuple[Message, ...], max_tokens: int) -> str:
        done = await _call(ctx, request, tools=False, purpose="summary",
                           options={**options, "max_tokens": max_tokens})
        spent.append(done.usage_run)
        return done.message.content

    model = ctx.model()
    history = (*ctx.run.messages, *new) if new else ctx.run.messages  # no copy per turn
    view = await prepare_view(
        history, ctx.run.data,
        budget_for(ctx.machine.context, model.provider, model.model),
        tools_tokens=estimate_tools(ctx.tools) if params.tools else 0,
        summarize=summarize)
    if view.event is not None:
        ctx.emit(EventKind.CONTEXT_COMPRESSED, view.event)
    answer = await _call(ctx, view.view, tools=params.tools, options=options,
                         context_tokens=view.tokens)
    usage = sum(spent, answer.usage_run)
    context = view.state.observe(view.estimated, answer.usage_run.input_tokens).to_dict()
    msg = answer.message
    if msg.tool_calls and not params.tools:
        logger.warning("state %s: the model named %d tool(s) although none were offered; "
                       "ignored", ctx.state.name, len(msg.tool_calls))
        msg = replace(msg, tool_calls=())
    turns = MODEL_TURNS.get(ctx.run.data) + 1
    updates: dict[str, Any] = {CONTEXT.name: context, MODEL_TURNS.name: turns}
    if params.prompt or ctx.machine.kind == "workflow":  # templates of later states read it
        results = dict(RESULTS.get(ctx.run.data))
        results[ctx.state.name] = {"text": msg.content, "tool_calls": len(msg.tool_calls)}
        updates[RESULTS.name] = results
    messages = (*new, *view.appended, msg)
    if msg.tool_calls:
        calls = [c.to_dict() for c in msg.tool_calls]
        names = ", ".join(c.name for c in msg.tool_calls)
        return Outcome("tool_calls", updates={**updates, PENDING_CALLS.name: calls},
                       messages=messages, usage=usage, note=f"calls {names}")
    refused = bool(msg.meta.get("refusal"))
    return Outcome("final", updates={**updates, FINAL_ANSWER.name: msg.content,
                                     REFUSAL.name: refused, PENDING_CALLS.name: []},
                   messages=messages, usage=usage,
                   note="refused: " + msg.content[:60] if refused else "final answer")


_SCHEMAS: dict[int, tuple[ToolSpec, ToolSchema]] = {}
"""Each tool as offered to a model, by the identity of its frozen spec (the spec is kept, so
its id stays its own): every model call offers the same tools, built once, not per call."""
_SCHEMAS_MAX = 4096


def _schema(spec: ToolSpec) -> ToolSchema:
    hit = _SCHEMAS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    schema = ToolSchema(spec.name, spec.description, spec.input_schema)
    if len(_SCHEMAS) >= _SCHEMAS_MAX:
        _SCHEMAS.clear()
    _SCHEMAS[id(spec)] = (spec, schema)
    return schema


async def _call(ctx: ActionContext, messages: tuple[Message, ...], *, tools: bool,
                options: dict[str, Any], purpose: str = "turn",
                context_tokens: int | None = None) -> _Answer:
    model = ctx.model()
    schemas = [_schema(s) for s in ctx.tools] if tools else []
    started = time.monotonic()
    show, emit = ctx.show, ctx.emit

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, _SHOWN_AS_TEXT):
            show(EventKind.TEXT_DELTA, {"text": event.text})
        elif isinstance(event, Retry):
            emit(EventKind.MODEL_RETRY, {"attempt": event.attempt, "reason": event.reason,
                                         "wait_s": event.wait_s})

    params = to_params(options)
    # Text reaches the observers coalesced, once, here: every consumer downstream (stored
    # stream events, the console, the API's event stream) sees few, larger deltas.
    turn = await collect_turn(model.stream(messages, schemas, params), on_event,
                              coalesce=COALESCE_TEXT)
    cost = call_cost(model, turn.usage)
    usage = to_run_usage(turn.usage, cost)
    server = getattr(model, "server", None)
    ctx.emit(EventKind.MODEL_CALL, {
        "provider": model.provider, "model": model.model,
        "response_model": turn.response_model, "response_id": turn.response_id,
        "server_address": server[0] if server else None,
        "server_port": server[1] if server else None,
        "request": {k: v for k, v in request_attributes(params).items() if v is not None},
        "input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens,
        "cached_tokens": turn.usage.cached_tokens,
        "cache_write_tokens": turn.usage.cache_write_tokens, "cost_usd": cost,
        "refusal": turn.refusal or None,
        "reasoning_blocks": len(turn.message.reasoning) or None,
        "duration_s": round(time.monotonic() - started, 6),
        "ttft_s": turn.time_to_first_token_s, "retries": turn.retries,
        "finish_reason": turn.finish_reason, "messages": len(messages), "purpose": purpose,
        "context_tokens": context_tokens,
        "tool_calls": [c.to_dict() for c in turn.message.tool_calls],
        "text": turn.message.content,
    })
    return _Answer(turn.message, usage)


async def checkpoint(ctx: ActionContext, params: NoParams) -> Outcome:
    """Mark a snapshot point; the runner writes the compact snapshot when it commits."""
    changed = FILES_CHANGED.get(ctx.run.data)
    return Outcome("saved", note=f"snapshot at step {ctx.step} ({len(changed)} files changed)")


class EvaluateStopParams(BaseModel):
    """Params of ``evaluate_stop``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_turns: int | None = Field(None, gt=0)
    """Model turns allowed before ``exhausted`` (defaults to the machine's step limit)."""


async def evaluate_stop(ctx: ActionContext, params: EvaluateStopParams) -> Outcome:
    """Decide whether the loop goes on: ``stop`` on a final answer, ``exhausted`` on limits."""
    data = ctx.run.data
    if FINAL_ANSWER.get(data) is not None and not PENDING_CALLS.get(data):
        return Outcome("stop", note="the model gave its final answer")
    limits = ctx.machine.limits
    usage = ctx.run.usage
    turns = MODEL_TURNS.get(data)
    reasons = []
    if params.max_turns and turns >= params.max_turns:
        reasons.append(f"{turns} model turns (max_turns {params.max_turns})")
    if limits.max_steps and ctx.step + 2 >= limits.max_steps:
        reasons.append(f"step {ctx.step} of max_steps {limits.max_steps}")
    if limits.max_tokens and usage.input_tokens + usage.output_tokens >= limits.max_tokens:
        reasons.append(f"{usage.input_tokens + usage.output_tokens} tokens "
                       f"(max_tokens {limits.max_tokens})")
    if limits.max_cost_usd and usage.cost_usd and usage.cost_usd >= limits.max_cost_usd:
        reasons.append(f"${usage.cost_usd:.4f} (max_cost_usd {limits.max_cost_usd})")
    if reasons:
        return Outcome("exhausted", updates={STOP_REASON.name: "; ".join(reasons)},
                       note="budget exhausted: " + "; ".join(reasons))
    return Outcome("continue", note=f"turn {turns} done")
