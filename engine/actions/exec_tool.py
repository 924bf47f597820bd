"""``exec_tool`` runs the approved calls of a model turn; ``run_tool`` a workflow's fixed call."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.actions.agent import template_context
from engine.actions.await_approval import decide_calls, denial_message
from engine.actions.base import NoParams
from engine.actions.context import ActionContext
from engine.actions.delegate import DELEGATE, delegate
from engine.actions.ledger import Ledger
from engine.actions.side_effects import run_call
from engine.spec.templates import render_value
from engine.tooling.spec import ToolResult
from engine.vocabulary.errors import PolicyRefusedError, ToolError
from engine.vocabulary.run_data import APPROVALS, COUNTERS, FILES_CHANGED, PENDING_CALLS, RESULTS
from engine.vocabulary.state import Message, Outcome, ToolCall, Usage

logger = logging.getLogger(__name__)


async def exec_tool(ctx: ActionContext, params: NoParams) -> Outcome:
    """Run every approved pending call in order; denied calls get a denial result."""
    data = ctx.run.data
    approvals = APPROVALS.get(data)
    ledger = Ledger(ctx.store, ctx.run.run_id, ctx.step, ctx.parts.clock,
                    resumed=ctx.resumed)
    messages: list[Message] = []
    updates: dict[str, Any] = {PENDING_CALLS.name: []}
    files = dict(FILES_CHANGED.get(data))
    recorded: dict[str, Any] = {}  # what tools recorded this turn: a second edit builds on it
    errors = 0
    usage: Usage | None = None  # what child runs (``delegate``) spent
    for raw in PENDING_CALLS.get(data):
        call = ToolCall.from_dict(raw)
        approval = approvals.get(call.id)
        if approval is None or approval["decision"] != "allow":
            messages.append(denial_message(approval or _missing(call)))
            continue
        seen_by_call = {**data, **recorded}
        if call.name == DELEGATE:
            result, child = await delegate(ctx, call)
            if child is not None:
                usage = child.usage if usage is None else usage + child.usage
                files.update(child.files_changed)
        else:
            result = await run_call(ctx, call, ledger, seen_by_call,
                                    approval.get("post_images"),
                                    approved_risk=approval.get("risk"))
        errors += result.is_error
        messages.append(Message("tool", result.content, tool_call_id=call.id, name=call.name,
                                is_error=result.is_error))
        _collect(result, files)
        recorded.update(_record(ctx, call, seen_by_call, result))
    updates.update({k: v for k, v in recorded.items() if v != data.get(k)})
    if files:
        updates[FILES_CHANGED.name] = files
    note = f"{len(messages)} result(s), {errors} error(s)"
    return Outcome("done", updates=updates, messages=tuple(messages), usage=usage, note=note)


def _missing(call: ToolCall) -> dict[str, Any]:
    return {"call_id": call.id, "tool": call.name, "risk": "unknown",
            "reason": "no approval was recorded for this call"}


def _record(ctx: ActionContext, call: ToolCall, run_data: Mapping[str, Any],
            result: ToolResult) -> dict[str, Any]:
    """What the call's tool records in the run's data (``ToolSpec.records``)."""
    spec = ctx.tools.get(call.name)
    return spec.record(run_data, result) if spec is not None else {}


def _collect(result: ToolResult, files: dict[str, Any]) -> None:
    """Fold the files a result says it changed into the run's ``files_changed``."""
    data = result.data or {}
    if "result_hash" in data and "path" in data and not result.is_error:
        prev = files.get(data["path"], {})
        files[data["path"]] = {"base_hash": prev.get("base_hash", data.get("base_hash")),
                               "result_hash": data["result_hash"]}
    for change in data.get("files_changed") or ():  # a shell command's, failed or not
        _fold_change(files, change)


def _fold_change(files: dict[str, Any], change: Mapping[str, Any]) -> None:
    """One file a shell command changed, folded into the run's ``files_changed``: the first
    base stays; a file created and then deleted in the run is no change at all."""
    path = str(change["path"])
    prev = files.get(path)
    created = prev.get("created", False) if prev else bool(change.get("created"))
    if created and change.get("deleted"):
        files.pop(path, None)
        return
    entry = {"base_hash": prev.get("base_hash") if prev else change.get("base_hash"),
             "result_hash": change.get("result_hash")}
    files[path] = entry | ({"created": True} if created else {}) | (
        {"deleted": True} if change.get("deleted") else {}) | {
        k: change[k] for k in ("kind", "executable") if k in change}  # a link, chmod +x


class RunToolParams(BaseModel):
    """Params of ``run_tool``: the fixed tool and its arguments (strings may be templates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    on_error: Literal["transition", "fail_run"] = "transition"
    """``transition``: a failed call emits ``failed``; ``fail_run``: it ends the run ``failed``
    with the tool's error (the state then needs no ``failed:`` transition)."""


def run_tool_emits(params: RunToolParams) -> frozenset[str]:
    """``ok`` always; ``failed`` only when failures are transitions."""
    return frozenset({"ok", "failed"} if params.on_error == "transition" else {"ok"})


async def run_tool(ctx: ActionContext, params: RunToolParams) -> Outcome:
    """Run one fixed tool call through approval and the ledger; emits ``ok`` or ``failed``."""
    where = f"{ctx.machine.path}: state {ctx.state.name}, with.args"
    args = render_value(params.args, template_context(ctx), where=where)
    call = ToolCall(f"{ctx.state.name}_{ctx.step}", params.tool, args)
    (approval,) = await decide_calls(ctx, [call])
    if approval.decision != "allow":
        if not ctx.config.interactive:
            raise PolicyRefusedError(
                f"state {ctx.state.name}: {params.tool} was refused: {approval.reason}")
        result = ToolResult.error(f"refused: {approval.reason}")
    else:
        ledger = Ledger(ctx.store, ctx.run.run_id, ctx.step, ctx.parts.clock,
                        resumed=ctx.resumed)
        result = await run_call(ctx, call, ledger, approved=approval.post_images,
                                approved_risk=approval.risk)
    results = dict(RESULTS.get(ctx.run.data))
    results[ctx.state.name] = {"ok": not result.is_error, "output": result.content,
                               **({"data": dict(result.data)} if result.data else {})}
    if result.is_error and params.on_error == "fail_run":
        raise ToolError(f"state {ctx.state.name}: {params.tool} failed: "
                        f"{_first_line(result.content)}")
    trigger = "failed" if result.is_error else "ok"
    updates: dict[str, Any] = {RESULTS.name: results,
                               **_record(ctx, call, ctx.run.data, result)}
    files = dict(FILES_CHANGED.get(ctx.run.data))
    _collect(result, files)
    if files != FILES_CHANGED.get(ctx.run.data):
        updates[FILES_CHANGED.name] = files
    return Outcome(trigger, updates=updates,
                   note=f"{params.tool}: {'error' if result.is_error else 'ok'}")


def _first_line(text: str, limit: int = 300) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


class CountRoundsParams(BaseModel):
    """Params of ``count_rounds``: a named counter and how many rounds are allowed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    counter: str = "rounds"
    max: int = Field(3, gt=0)


async def count_rounds(ctx: ActionContext, params: CountRoundsParams) -> Outcome:
    """Count one more round; emits ``again`` below the limit and ``exhausted`` at it."""
    counters = dict(COUNTERS.get(ctx.run.data))
    n = int(counters.get(params.counter, 0)) + 1
    counters[params.counter] = n
    trigger = "again" if n <= params.max else "exhausted"
    return Outcome(trigger, updates={COUNTERS.name: counters},
                   note=f"{params.counter} {n} of {params.max}")
