"""``delegate``: the tool a model calls to hand a task to a child machine its machine declares.

The tool is offered when the machine lists ``children:``. Its calls are decided like any
other tool's (risk ``exec``: ``ask`` unless a rule allows ``tool: delegate``); ``exec_tool``
runs an approved one here, not through the tool contract, because a child run needs the
front door (``RunParts.children``). The result the model sees is the child's final answer.
One child per call: a rerun of the step finds the child of each call id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.actions.context import ActionContext, ChildRequest, ChildResult
from engine.actions.run_machine import start_child
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec
from engine.vocabulary.state import ToolCall

DELEGATE = "delegate"


class DelegateInput(BaseModel):
    """The arguments of a ``delegate`` call."""

    model_config = ConfigDict(extra="forbid")
    machine: str = Field(description="Which child machine runs the task (one of those listed).")
    task: str = Field(description="The task for the child, complete on its own.")


async def _outside_a_run(args: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult.error("delegate runs only inside a run (its exec_tool step)")


def delegate_spec(children: Sequence[str]) -> ToolSpec:
    """The ``delegate`` tool for a machine whose children are ``children``."""
    return ToolSpec(
        DELEGATE, "1", "Hand a task to a child machine and get its final answer: "
        f"{', '.join(children)}. The child works in the same workspace, with at most this "
        "run's permissions and what is left of its budget.",
        DelegateInput, _outside_a_run, risk="exec", idempotent=False, side_effects=True)


async def delegate(ctx: ActionContext, call: ToolCall) -> tuple[ToolResult, ChildResult | None]:
    """Run the child an approved ``delegate`` call asks for; its answer is the result."""
    machine = str(call.args.get("machine") or "")
    task = str(call.args.get("task") or "")
    if machine not in ctx.machine.children:
        return ToolResult.error(f"delegate: {machine!r} is not a child machine of "
                                f"{ctx.machine.name} (choose one of: "
                                f"{', '.join(ctx.machine.children)})"), None
    child = await start_child(ctx, ChildRequest(machine=machine, task=task, call_id=call.id))
    data = {"child_run_id": child.run_id, "status": child.status}
    if child.status != "completed":
        return ToolResult.error(f"child run {child.run_id} ({machine}) {child.status}: "
                                f"{child.error or 'no answer'}", **data), child
    return ToolResult(child.answer or f"child run {child.run_id} completed", data=data), child
