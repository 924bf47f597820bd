"""Running approved tool calls through the side-effect ledger: the one door for side effects.

``exec_tool`` (agents) and ``run_tool`` (workflows) both call ``run_call``. A call found in the
ledger from an earlier, crashed attempt is resolved (re-run, already applied, conflict,
unknown) and the console and events say what was done about it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio

from engine.actions.context import ActionContext
from engine.actions.ledger import Ledger, plan_file_change, resolve_in_flight
from engine.tooling.confine import UNCONFINED
from engine.tooling.invoke import describe_call, invoke
from engine.tooling.process import end_leftover_group
from engine.tooling.spec import RISK_ORDER, ToolContext, ToolResult, ToolSpec, Watcher
from engine.vocabulary.errors import TurnstileError, WorkspaceMissingError
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import APPROVALS
from engine.vocabulary.state import ToolCall

logger = logging.getLogger(__name__)

MAX_OUTPUT_EVENTS = 2000
"""Streamed output lines persisted per call; later lines are shown but not stored."""
WATCHED_FROM_RISK = "exec"
"""Calls of a tool with a ``watcher`` (shell commands) judged this risky or more get the
workspace compared before and after them: all but plain reads, since a program or script the
classifier cannot see into may write anything."""


IDEMPOTENCY_ENV = "ENGINE_IDEMPOTENCY_KEY"
"""The variable a shell command finds its call's idempotency key in."""


def idempotency_key(run_id: str, call_id: str) -> str:
    """One key per tool call of a run, the same on every attempt at it."""
    return f"{run_id}:{call_id}"


class UnknownEffectFailure(TurnstileError):
    """Policy ``on_unknown_effect: fail``: a call may or may not have run, and that is fatal."""


async def run_call(ctx: ActionContext, call: ToolCall, ledger: Ledger,
                   run_data: Mapping[str, Any] | None = None,
                   approved: Mapping[str, str] | None = None,
                   approved_risk: str | None = None) -> ToolResult:
    """Run one approved call, or settle a call an earlier process left in flight.

    ``run_data`` is what the tool may read of the run (default: the data at the step's start);
    ``exec_tool`` passes the file hashes seen so far in this turn, so a second edit of a file
    in one turn builds on the first. ``approved`` is the approval's post-images (path ->
    sha256): a write that would now leave anything else is not run. ``approved_risk`` is the
    approval's
    judgement of the call: a watched call (its tool has a ``watcher``) of ``WATCHED_FROM_RISK``
    or more (or of unknown risk) reports the files it changed.
    """
    record = ledger.get(call.id)
    if record is not None and record.status in ("done", "failed", "unknown") and record.result:
        ctx.emit(EventKind.EFFECT_RESOLVED, {"call_id": call.id, "tool": call.name,
                                     "resolution": "recorded",
                                     "message": f"{call.name}: result recorded before the "
                                                "interruption, not run again"})
        return ToolResult.from_dict(record.result)
    if not ctx.workspace.is_dir():  # one stat: a deleted workspace fails the run, clearly
        raise WorkspaceMissingError(f"the workspace {ctx.workspace} no longer exists; restore "
                                    f"it, then resume the run ({call.name} was not run)")
    if record is not None and record.status == "started":
        settled = await _settle(ctx, call, ledger, record)
        if settled is not None:
            return settled
    data = ctx.run.data if run_data is None else run_data
    file_plan = _file_plan(ctx, call, data)
    if approved and (file_plan is None or approved.get(file_plan.path) != file_plan.post_hash):
        return _not_as_approved(ctx, call, file_plan)
    if approved_risk is None:
        approved_risk = (APPROVALS.get(ctx.run.data).get(call.id) or {}).get("risk")
    return await _execute(ctx, call, ledger, file_plan, data, approved_risk)


def _not_as_approved(ctx: ActionContext, call: ToolCall, plan: Any) -> ToolResult:
    """The refusal of a write whose dry run no longer gives the change a person approved."""
    path = plan.path if plan is not None else call.args.get("path", "?")
    message = (f"{call.name} {path}: not run, because it would no longer write what was "
               "approved (an earlier call of the same turn was refused, or the file changed "
               "since); read the file again and redo the change")
    result = ToolResult.error(message, path=path, not_as_approved=True)
    spec = ctx.tools.get(call.name)
    ctx.emit(EventKind.TOOL_CALL, {**describe_call(spec, call, result, 0.0), "content": message})
    return result


def _file_plan(ctx: ActionContext, call: ToolCall, data: Mapping[str, Any]) -> Any:
    """Base and post-image hashes of a file write, from the tool's own dry run."""
    return plan_file_change(ctx.tools.get(call.name), call, ctx.workspace, data)


async def _settle(ctx: ActionContext, call: ToolCall, ledger: Ledger,
                  record: Any) -> ToolResult | None:
    """A result for a call left ``started``, or None when it is safe to run it again."""
    await _end_leftovers(ctx, call)
    spec = ctx.tools.get(call.name)
    resolution, message = resolve_in_flight(record, spec, ctx.workspace)
    policy = ctx.config.policy
    if resolution == "unknown" and spec is not None and policy is not None and (
            policy.declares_idempotent(call, spec, ctx.workspace)):
        resolution, message = "rerun", f"re-ran {call.name} (declared idempotent by the policy)"
    if resolution == "unknown":
        resolution, message = await _decide_unknown(ctx, call, message)
    ctx.emit(EventKind.EFFECT_RESOLVED, {"call_id": call.id, "tool": call.name,
                                 "resolution": resolution, "message": message})
    if resolution == "rerun":
        return None
    if resolution == "applied":
        patch = (record.file or {}).get("patch")
        change = f" The change:\n{patch}" if patch else ""
        data = {**(record.file or {}), "result_hash": (record.file or {}).get("post_hash")}
        result = ToolResult(f"{message}; not applied again.{change}", data=data)
        ledger.mark(call, spec, "done", result=result)
        return result
    status = "unknown" if resolution == "unknown" else "failed"
    result = ToolResult.error(f"{message}. It was not repeated; check the workspace before "
                              "relying on it.")
    ledger.mark(call, spec, status, result=result)
    return result


async def _end_leftovers(ctx: ActionContext, call: ToolCall) -> None:
    """Stop what a crashed engine's command left running (unconfined commands only: in the
    sandbox the pid namespace died with the engine), so a resumed run never overlaps it."""
    for event in ctx.store.events(ctx.run.run_id, [EventKind.TOOL_PROCESS]):
        p = event.payload
        if p.get("call_id") != call.id or not isinstance(p.get("pgid"), int):
            continue
        if await end_leftover_group(p["pgid"], p.get("start_ticks")):
            ctx.emit(EventKind.LEFTOVER_STOPPED, {"call_id": call.id, "pgid": p["pgid"],
                                          "message": f"stopped processes of {call.name} left "
                                                     "running by the interrupted engine"})


async def _decide_unknown(ctx: ActionContext, call: ToolCall, message: str) -> tuple[Any, str]:
    policy = ctx.config.on_unknown_effect
    if ctx.config.interactive:
        answer = await ctx.approver.confirm_unknown(call, message)
        return ("rerun", f"{message}: repeated (user)") if answer else (
            "unknown", f"{message}: not repeated (user)")
    if policy == "repeat":
        return "rerun", f"{message}: repeated (on_unknown_effect: repeat)"
    if policy == "fail":
        raise UnknownEffectFailure(f"{message}; policy on_unknown_effect is 'fail'")
    return "unknown", f"{message}: not repeated (on_unknown_effect: skip)"


async def _execute(ctx: ActionContext, call: ToolCall, ledger: Ledger,
                   file_plan: Any, run_data: Mapping[str, Any],
                   approved_risk: str | None) -> ToolResult:
    spec = ctx.tools.get(call.name)
    lines = 0

    def tool_emit(kind: str, payload: Mapping[str, Any]) -> None:
        nonlocal lines
        if kind == EventKind.TOOL_PROCESS:  # pid and group, written now: resume ends a leftover
            ctx.show(kind, {**payload, "call_id": call.id})
            ctx.store.append_event(ctx.run.run_id, ctx.step, kind,
                                            {**payload, "call_id": call.id},
                                            ctx.now())
            ctx.store.flush()
            return
        if kind == EventKind.TOOL_OUTPUT:
            lines += 1
            ctx.show(kind, {**payload, "call_id": call.id})
            if lines <= MAX_OUTPUT_EVENTS:
                ctx.store.append_event(ctx.run.run_id, ctx.step, kind,
                                                {**payload, "call_id": call.id},
                                                ctx.now())
        else:
            ctx.emit(kind, {**payload, "call_id": call.id})

    jail = ctx.config.confinement
    key = idempotency_key(ctx.run.run_id, call.id)
    tool_ctx = ToolContext(workspace=ctx.workspace, emit=tool_emit, run_data=run_data,
                           call_id=call.id, confinement=jail or UNCONFINED,
                           approved_risk=approved_risk,
                           env={IDEMPOTENCY_ENV: key}, idempotency_key=key,
                           read_text=ctx.parts.read_text)
    started_event: dict[str, Any] = {"call_id": call.id, "tool": call.name,
                                     "version": spec.version if spec else None,
                                     "args": dict(call.args)}
    if spec is not None and spec.command_arg is not None and jail is not None:
        started_event["sandbox"] = jail.describe(jail.network_for(approved_risk))
    ctx.emit(EventKind.TOOL_STARTED, started_event)
    ledger.mark(call, spec, "started", file=file_plan)
    ctx.fault("during")
    watcher = spec.watcher if spec is not None and _watched(spec, approved_risk) else None
    before = (await anyio.to_thread.run_sync(watcher.snapshot, ctx.workspace)
              if watcher is not None else None)
    started = time.monotonic()
    result = await invoke(ctx.tools, call, tool_ctx)
    duration = time.monotonic() - started
    if watcher is not None:
        result = await _with_changes(ctx, call, result, watcher, before)
    ctx.fault("after_effect")
    file_data = (dict(result.data or {}) | {"post_hash": (result.data or {}).get("result_hash")}
                 if file_plan is not None and not result.is_error else None)
    ledger.mark(call, spec, "failed" if result.is_error else "done", result=result,
                file_data=file_data)
    ctx.emit(EventKind.TOOL_CALL, {**describe_call(spec, call, result, duration),
                           "content": result.content[:4000]})
    return result


def _watched(spec: ToolSpec, risk: str | None) -> bool:
    """Whether a call of ``spec`` is watched: its tool has a watcher and the call may write
    (an unknown risk counts: fail closed)."""
    if spec.watcher is None:
        return False
    if risk not in RISK_ORDER:
        return True
    return RISK_ORDER.index(risk) >= RISK_ORDER.index(WATCHED_FROM_RISK)


async def _with_changes(ctx: ActionContext, call: ToolCall, result: ToolResult,
                        watcher: Watcher, before: Any) -> ToolResult:
    """``result`` with the files the call changed in its data (``files_changed``); each change
    is also a ``file_changed`` event with its patch, as the edit tools report theirs."""
    report = await anyio.to_thread.run_sync(watcher.changes, ctx.workspace, before)
    for change in report.files:
        ctx.emit(EventKind.FILE_CHANGED, {"call_id": call.id, "tool": call.name, **change})
    data = dict(result.data or {})
    if report.files:
        data["files_changed"] = [{k: v for k, v in c.items() if k != "patch"}
                                 for c in report.files]
    if report.not_covered:
        data["changes_not_covered"] = report.not_covered
        result = dataclasses.replace(result, content=f"{result.content}\n({report.not_covered})")
    if not report.files and not report.not_covered:
        return result
    return dataclasses.replace(result, data=data)
