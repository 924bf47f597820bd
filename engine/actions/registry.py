"""The action registry: every name a machine's ``action:`` may use, with what it emits.

Machines name entries of this table; nothing is resolved by dotted import or ``getattr``.
"""

from __future__ import annotations

from engine.actions.agent import (
    CallModelParams,
    EvaluateStopParams,
    PlanParams,
    call_model,
    call_model_emits,
    checkpoint,
    evaluate_stop,
    plan,
)
from engine.actions.await_approval import await_approval
from engine.actions.base import ActionInfo, NoParams
from engine.actions.exec_tool import (
    CountRoundsParams,
    RunToolParams,
    count_rounds,
    exec_tool,
    run_tool,
    run_tool_emits,
)

ACTIONS: dict[str, ActionInfo] = {
    info.name: info
    for info in (
        ActionInfo("plan", frozenset({"ready"}), PlanParams, plan,
                   "Prepare the conversation: system prompt, workspace summary, task."),
        ActionInfo("call_model", frozenset({"tool_calls", "final"}), CallModelParams, call_model,
                   "Ask the model for the next turn (streams text and tool calls).",
                   templated=("prompt",), emits_for=call_model_emits),
        ActionInfo("await_approval", frozenset({"decided", "all_denied"}), NoParams,
                   await_approval, "Decide every pending tool call (policy, mode, or a person)."),
        ActionInfo("exec_tool", frozenset({"done"}), NoParams, exec_tool,
                   "Run the approved calls through the side-effect ledger.", side_effects=True),
        ActionInfo("checkpoint", frozenset({"saved"}), NoParams, checkpoint,
                   "Write a compact snapshot so resume reads one row and a short tail.",
                   snapshot=True, rides_along=True),
        ActionInfo("evaluate_stop", frozenset({"continue", "stop", "exhausted"}),
                   EvaluateStopParams, evaluate_stop,
                   "Stop on a final answer, or when a budget is exhausted.", rides_along=True),
        ActionInfo("run_tool", frozenset({"ok", "failed"}), RunToolParams, run_tool,
                   "Run one fixed tool call (workflows); args may be templates.",
                   side_effects=True, templated=("args",), emits_for=run_tool_emits),
        ActionInfo("count_rounds", frozenset({"again", "exhausted"}), CountRoundsParams,
                   count_rounds, "Count rounds of a workflow loop; exhausted past max."),
    )
}
