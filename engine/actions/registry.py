"""The action registry: every name a machine's ``action:`` may use, with what it emits.

Machines name entries of this table; nothing is resolved by dotted import or ``getattr``.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.actions.agent import (
    CallModelParams,
    EvaluateStopParams,
    PlanParams,
    call_model,
    call_model_emits,
    checkpoint,
    evaluate_stop,
    plan,
    plan_asks_model,
)
from engine.actions.await_approval import await_approval, decided_without_a_person
from engine.actions.base import ActionInfo, NoParams
from engine.actions.exec_tool import (
    CountRoundsParams,
    RunToolParams,
    count_rounds,
    exec_tool,
    run_tool,
    run_tool_emits,
)
from engine.actions.run_machine import RunMachineParams, run_machine
from engine.spec.model import MachineSpec
from engine.vocabulary.run_data import (
    APPROVALS,
    CONTEXT,
    COUNTERS,
    FILE_HASHES,
    FILES_CHANGED,
    FINAL_ANSWER,
    GRANTED,
    HISTORY,
    MODEL_TURNS,
    PENDING_CALLS,
    PLAN,
    PLAN_TEXT,
    REFUSAL,
    RESULTS,
    STOP_REASON,
    TASK,
    TOOL_KEYS,
    names,
)

_TEMPLATE_READS = names((TASK, RESULTS))
"""What a template names directly; ``data`` in a template reaches any key (read-only)."""

ACTIONS: dict[str, ActionInfo] = {
    info.name: info
    for info in (
        ActionInfo("plan", frozenset({"ready"}), PlanParams, plan,
                   "Prepare the conversation: system prompt, workspace summary, task.",
                   calls_model_if=plan_asks_model,
                   reads=names((TASK, HISTORY)), writes=names((PLAN, PLAN_TEXT))),
        ActionInfo("call_model", frozenset({"tool_calls", "final"}), CallModelParams, call_model,
                   "Ask the model for the next turn (streams text and tool calls).",
                   templated=("prompt",), emits_for=call_model_emits, calls_model=True,
                   reads=_TEMPLATE_READS | names((CONTEXT, MODEL_TURNS, PLAN, FILES_CHANGED)),
                   writes=names((CONTEXT, MODEL_TURNS, RESULTS, PENDING_CALLS, FINAL_ANSWER,
                                 REFUSAL))),
        ActionInfo("await_approval", frozenset({"decided", "all_denied"}), NoParams,
                   await_approval, "Decide every pending tool call (policy, mode, or a person).",
                   rides_along_if=decided_without_a_person, waits=False,
                   reads=names((PENDING_CALLS, GRANTED, FILE_HASHES)),
                   writes=names((APPROVALS, GRANTED, PENDING_CALLS))),
        ActionInfo("exec_tool", frozenset({"done"}), NoParams, exec_tool,
                   "Run the approved calls through the side-effect ledger.", side_effects=True,
                   waits=False, reads=names((PENDING_CALLS, APPROVALS, FILES_CHANGED, FILE_HASHES)),
                   writes=names((PENDING_CALLS, FILES_CHANGED)) | TOOL_KEYS),
        ActionInfo("checkpoint", frozenset({"saved"}), NoParams, checkpoint,
                   "Write a compact snapshot so resume reads one row and a short tail.",
                   snapshot=True, rides_along=True, waits=False, reads=names((FILES_CHANGED,))),
        ActionInfo("evaluate_stop", frozenset({"continue", "stop", "exhausted"}),
                   EvaluateStopParams, evaluate_stop,
                   "Stop on a final answer, or when a budget is exhausted.", rides_along=True,
                   waits=False, reads=names((FINAL_ANSWER, PENDING_CALLS, MODEL_TURNS)),
                   writes=names((STOP_REASON,))),
        ActionInfo("run_tool", frozenset({"ok", "failed"}), RunToolParams, run_tool,
                   "Run one fixed tool call (workflows); args may be templates.",
                   side_effects=True, templated=("args",), emits_for=run_tool_emits, waits=False,
                   reads=_TEMPLATE_READS | names((APPROVALS, FILES_CHANGED, FILE_HASHES)),
                   writes=names((RESULTS, FILES_CHANGED)) | TOOL_KEYS),
        ActionInfo("run_machine", frozenset({"ok", "failed"}), RunMachineParams, run_machine,
                   "Run another machine as a child run (its policy and budget only narrow).",
                   templated=("task", "inputs"),
                   reads=_TEMPLATE_READS | names((FILES_CHANGED,)),
                   writes=names((RESULTS, FILES_CHANGED))),
        ActionInfo("count_rounds", frozenset({"again", "exhausted"}), CountRoundsParams,
                   count_rounds, "Count rounds of a workflow loop; exhausted past max.",
                   waits=False, reads=names((COUNTERS,)), writes=names((COUNTERS,))),
    )
}


def machine_calls_model(machine: MachineSpec,
                        actions: Mapping[str, ActionInfo] = ACTIONS) -> bool:
    """Whether any state of ``machine`` calls the model (a workflow of fixed tool calls and
    counters does not, and runs without one). Each state's action says so in the registry,
    given the state's params."""
    for state in machine.states.values():
        if state.final or state.action is None:
            continue
        info = actions[state.action]
        if info.calls_model or (info.calls_model_if is not None and info.calls_model_if(
                info.params.model_validate(dict(state.params)))):
            return True
    return False
