"""The update_plan tool: the agent's current plan, a short list of steps with a status each.

The tool only validates and renders the plan; its ``records`` puts ``result.data["plan"]`` in the
run's data under the key ``plan`` (so it is checkpointed and survives resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.tooling.spec import ToolContext, ToolResult, ToolSpec
from engine.vocabulary.run_data import PLAN

PLAN_KEY = PLAN.name
"""Run-state key under which the runner keeps the plan (``result.data["plan"]``)."""
Status = Literal["pending", "in_progress", "done"]
_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class PlanStep(BaseModel):
    """One step of the plan."""

    model_config = ConfigDict(extra="forbid")
    step: str = Field(min_length=1, max_length=500, description="What this step does.")
    status: Status = Field(description="pending, in_progress or done.")


class UpdatePlanArgs(BaseModel):
    """Arguments of update_plan."""

    model_config = ConfigDict(extra="forbid")
    steps: list[PlanStep] = Field(min_length=1, max_length=50,
                                  description="The whole plan, in order (replaces the old one).")
    explanation: str | None = Field(None, max_length=2000,
                                    description="Why the plan changed (optional).")

    @field_validator("steps")
    @classmethod
    def _one_in_progress(cls, steps: list[PlanStep]) -> list[PlanStep]:
        if sum(s.status == "in_progress" for s in steps) > 1:
            raise ValueError("at most one step may be in_progress")
        return steps


async def update_plan(args: UpdatePlanArgs, ctx: ToolContext) -> ToolResult:
    """Render the plan and hand it to the runner as ``data["plan"]``."""
    plan = [s.model_dump() for s in args.steps]
    done = sum(s.status == "done" for s in args.steps)
    lines = [f"Plan updated ({done}/{len(plan)} done):"]
    lines += [f"{_MARK[s.status]} {s.step}" for s in args.steps]
    if args.explanation:
        lines.append(f"Why: {args.explanation}")
    data: dict[str, object] = {PLAN_KEY: plan}
    if args.explanation:
        data["explanation"] = args.explanation
    return ToolResult("\n".join(lines), data=data)


def record_plan(run_data: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """``ToolSpec.records``: the run keeps the new plan (checkpointed, survives resume)."""
    plan = (result.data or {}).get(PLAN_KEY)
    return {PLAN_KEY: plan} if plan is not None and not result.is_error else {}


SPEC = ToolSpec(
    name="update_plan", version="1.0.0",
    description="Replace your plan: a list of steps, each pending, in_progress (at most one) or "
    "done. Keep it current as you work.",
    input_model=UpdatePlanArgs, handler=update_plan, risk="read", idempotent=True,
    side_effects=False, timeout_s=10.0, records=record_plan, reported=(PLAN_KEY,),
    records_keys=frozenset({PLAN_KEY}),
    changelog=("1.0.0: plan steps with pending/in_progress/done, kept in run state",),
)
