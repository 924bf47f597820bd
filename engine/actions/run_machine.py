"""``run_machine``: a state that runs another machine as a child run and waits for its end.

The child is a run of its own in the same store (its steps, ledger, audit and trace), linked to
this run and step. It decides under the stricter of its policy and this run's, in this run's
approval mode, within what this run has left of its budget (``engine.runs.children``). A rerun
of the step (resume after a kill) finds the child the step started and resumes it, or reads
how it ended: a child is never started twice for one step.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.actions.agent import template_context
from engine.actions.context import ActionContext, ChildRequest, ChildResult
from engine.spec.templates import render_value
from engine.vocabulary.errors import UsageError
from engine.vocabulary.run_data import FILES_CHANGED, RESULTS
from engine.vocabulary.state import Outcome


class RunMachineParams(BaseModel):
    """Params of ``run_machine``: the child machine, its task and what narrows it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    machine: str
    """A machine file (relative to this machine's file) or a bundled machine's name."""
    task: str = ""
    """The child's task (a template: ``{{ results.fetch.output }}``)."""
    model: str | None = None
    """The child's model spec; default: this run's."""
    policy: str | None = None
    """The child's policy file (relative to this machine's file); this run's still applies."""
    limits: dict[str, Any] = Field(default_factory=dict)
    """The child's limits (``max_steps``, ``max_tokens``, ``max_cost_usd``, ``timeout_s``),
    capped by what this run has left."""
    inputs: dict[str, Any] = Field(default_factory=dict)
    """Values for the child's run data (``data.inputs``); strings may be templates."""


async def run_machine(ctx: ActionContext, params: RunMachineParams) -> Outcome:
    """Run the child machine to its end; emits ``ok`` when it completed, else ``failed``."""
    where = f"{ctx.machine.path}: state {ctx.state.name}"
    names = template_context(ctx)
    request = ChildRequest(
        machine=params.machine,
        task=str(render_value(params.task, names, where=f"{where}, with.task")),
        model=params.model, policy=params.policy, limits=dict(params.limits),
        inputs=dict(render_value(params.inputs, names, where=f"{where}, with.inputs")))
    result = await start_child(ctx, request)
    ctx.fault("after_effect")  # the child ended; this step is not committed yet
    results = dict(RESULTS.get(ctx.run.data))
    results[ctx.state.name] = child_summary(result)
    updates: dict[str, Any] = {RESULTS.name: results}
    files = {**FILES_CHANGED.get(ctx.run.data), **result.files_changed}
    if files != FILES_CHANGED.get(ctx.run.data):
        updates[FILES_CHANGED.name] = files
    ok = result.status == "completed"
    return Outcome("ok" if ok else "failed", updates=updates, usage=result.usage,
                   note=f"child run {result.run_id}: {result.status}")


async def start_child(ctx: ActionContext, request: ChildRequest) -> ChildResult:
    """The child run of this step, through the front door that prepared this run."""
    if ctx.parts.children is None:
        raise UsageError(f"{ctx.machine.path}: state {ctx.state.name}: child runs need a run "
                         "started through engine.Runs (the CLI, the API)")
    return await ctx.parts.children.run_child(ctx, request)


def child_summary(result: ChildResult) -> dict[str, Any]:
    """What ``results.STATE`` holds of a child run (templates and ``show`` read it)."""
    return {"ok": result.status == "completed", "run_id": result.run_id,
            "status": result.status, "output": result.answer, "answer": result.answer,
            "files_changed": sorted(result.files_changed), "error": result.error,
            "limits": dict(result.limits)}
