"""Each action on its own: the outcome it returns for the run it is given, in this process.

The run is created in a real SQLite file through ``tests.inprocess`` (the composition root);
each test hands one state's action the run data it would find there and checks the
``Outcome`` (trigger, updates, messages) and what it recorded (events, audit, ledger).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.vocabulary.errors import RunParked
from engine.vocabulary.state import Message, Usage
from tests.inprocess import AGENT, ROOT, InProcess, Started

ALLOW = "default: allow\n"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[InProcess]:
    harness = InProcess(tmp_path)
    yield harness
    harness.close()


def created(engine: InProcess, turns: Sequence[Mapping[str, Any]] = ({"text": "ok"},),
            **kw: Any) -> Started:
    """A run of the coding agent written to the store, not yet driven."""
    run = engine.start(turns, **kw)
    engine.create(run)
    return run


def call(name: str, args: Mapping[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": dict(args)}


def allowed(*calls: dict[str, Any]) -> dict[str, Any]:
    """Run data as ``await_approval`` leaves it when every call was allowed."""
    return {"pending_calls": list(calls), "approvals": {
        c["id"]: {"call_id": c["id"], "tool": c["name"], "decision": "allow", "risk": "read",
                  "reason": "test", "decided_by": "policy"} for c in calls}}


# -- plan -----------------------------------------------------------------------------------


def test_plan_writes_the_system_prompt_tools_workspace_and_task(engine: InProcess) -> None:
    ws = engine.workspace({"notes.txt": "x\n", "src/app.py": "pass\n"})
    run = created(engine, workspace=ws, task="fix the app")
    out = engine.act(engine.context(run, "plan", step=0))
    assert out.trigger == "ready" and out.updates == {"plan": []}
    system, user = out.messages
    assert system.role == "system" and str(ws) in system.content
    assert ("Tools available: edit_file, list_files, read_file, run_shell, search_text, "
            "update_plan, write_file.") in system.content
    assert "  notes.txt\n  src/app.py" in system.content
    assert (user.role, user.content) == ("user", "fix the app")


def test_plan_on_a_resumed_run_keeps_the_conversation(engine: InProcess) -> None:
    run = created(engine)
    out = engine.act(engine.context(run, "plan", step=0,
                                    messages=(Message("user", "already here"),)))
    assert (out.trigger, out.messages, out.note) == ("ready", (),
                                                     "conversation already prepared")


# -- call_model -----------------------------------------------------------------------------


def test_call_model_with_tool_calls_leaves_them_pending(engine: InProcess) -> None:
    turn = {"text": "reading", "tool_calls": [{"name": "read_file",
                                               "args": {"path": "notes.txt"}}]}
    run = created(engine, [turn])
    out = engine.act(engine.context(run, "call_model",
                                    messages=(Message("user", "go"),)))
    assert out.trigger == "tool_calls"
    assert out.updates["pending_calls"] == [call("read_file", {"path": "notes.txt"},
                                                 "call_0_0")]
    assert out.updates["model_turns"] == 1
    (answer,) = out.messages
    assert answer.role == "assistant" and answer.content == "reading"
    assert out.usage is not None and out.usage.output_tokens > 0
    (event,) = engine.store.events(run.run_id, ["model_call"])
    assert event.payload["provider"] == "scripted" and event.payload["text"] == "reading"


def test_call_model_with_a_final_answer_ends_the_turn(engine: InProcess) -> None:
    run = created(engine, [{"text": "all done"}])
    out = engine.act(engine.context(run, "call_model", data={"model_turns": 2},
                                    messages=(Message("user", "go"),)))
    assert out.trigger == "final"
    assert {k: out.updates[k] for k in ("final_answer", "refusal", "pending_calls",
                                         "model_turns")} == {
        "final_answer": "all done", "refusal": False, "pending_calls": [], "model_turns": 3}
    assert out.note == "final answer"


# -- await_approval -------------------------------------------------------------------------


def test_await_approval_allows_by_policy_and_audits(engine: InProcess) -> None:
    run = created(engine, policy=ALLOW)
    c = call("read_file", {"path": "notes.txt"})
    out = engine.act(engine.context(run, "await_approval", data={"pending_calls": [c]}))
    assert out.trigger == "decided"
    assert out.updates["approvals"]["c1"]["decision"] == "allow"
    assert out.updates["approvals"]["c1"]["decided_by"] == "policy"
    (row,) = engine.store.audit(run.run_id)
    assert (row.call_id, row.decision, row.step) == ("c1", "allow", 1)


def test_await_approval_denies_every_call_and_tells_the_model(engine: InProcess) -> None:
    run = created(engine, policy="default: deny\n")
    c = call("run_shell", {"command": "rm -rf build"})
    out = engine.act(engine.context(run, "await_approval", data={"pending_calls": [c]}))
    assert out.trigger == "all_denied" and out.updates["pending_calls"] == []
    (denial,) = out.messages
    assert denial.role == "tool" and denial.is_error and denial.tool_call_id == "c1"
    assert denial.content.startswith("Permission denied for run_shell")
    assert [r.decision for r in engine.store.audit(run.run_id)] == ["deny"]


def test_await_approval_parks_a_call_that_needs_a_person(engine: InProcess) -> None:
    run = created(engine, approval="park",
                       policy="default: deny\nrules:\n  - {decision: ask, tool: write_file}\n")
    c = call("write_file", {"path": "out.txt", "content": "x\n"})
    ctx = engine.context(run, "await_approval", data={"pending_calls": [c]})
    with pytest.raises(RunParked) as parked:
        engine.act(ctx)
    (request,) = parked.value.requests
    assert (request.call_id, request.tool, request.step) == ("c1", "write_file", 1)
    assert engine.store.audit(run.run_id) == []  # nobody decided yet


# -- exec_tool ------------------------------------------------------------------------------


def test_exec_tool_runs_an_approved_write_through_the_ledger(engine: InProcess) -> None:
    ws = engine.workspace()
    run = created(engine, workspace=ws)
    c = call("write_file", {"path": "out.txt", "content": "hello\n"})
    out = engine.act(engine.context(run, "exec_tool", data=allowed(c), step=3))
    assert (out.trigger, out.note) == ("done", "1 result(s), 0 error(s)")
    (result,) = out.messages
    assert result.tool_call_id == "c1" and not result.is_error
    assert (ws / "out.txt").read_text() == "hello\n"
    assert set(out.updates["files_changed"]) == {"out.txt"}
    assert out.updates["pending_calls"] == []
    (effect,) = engine.store.effects(run.run_id)
    assert (effect.call_id, effect.status, effect.step) == ("c1", "done", 3)
    assert effect.file is not None and effect.file["path"] == "out.txt"


def test_exec_tool_records_a_failing_call_as_failed(engine: InProcess) -> None:
    run = created(engine)
    c = call("read_file", {"path": "missing.txt"})
    out = engine.act(engine.context(run, "exec_tool", data=allowed(c)))
    assert (out.trigger, out.note) == ("done", "1 result(s), 1 error(s)")
    (result,) = out.messages
    assert result.is_error and "missing.txt" in result.content
    assert [e.status for e in engine.store.effects(run.run_id)] == ["failed"]


def test_exec_tool_stops_a_command_at_its_timeout(engine: InProcess) -> None:
    ws = engine.workspace()
    run = created(engine, workspace=ws)
    c = call("run_shell", {"command": "sleep 30; touch late", "timeout_s": 0.5})
    out = engine.act(engine.context(run, "exec_tool", data=allowed(c)))
    (result,) = out.messages
    assert result.is_error and "timed out after 0.5 s" in result.content
    assert not (ws / "late").exists()
    assert [e.status for e in engine.store.effects(run.run_id)] == ["failed"]


def test_exec_tool_gives_a_denied_call_its_denial_and_runs_nothing(engine: InProcess) -> None:
    ws = engine.workspace()
    run = created(engine, workspace=ws)
    c = call("write_file", {"path": "out.txt", "content": "x\n"})
    data = allowed(c)
    data["approvals"]["c1"].update(decision="deny", reason="not today")
    out = engine.act(engine.context(run, "exec_tool", data=data))
    (result,) = out.messages
    assert result.is_error and "not today" in result.content
    assert not (ws / "out.txt").exists()
    assert engine.store.effects(run.run_id) == []


# -- checkpoint and evaluate_stop -----------------------------------------------------------


def test_checkpoint_marks_the_snapshot_point(engine: InProcess) -> None:
    run = created(engine)
    changed = {"a.py": {"base_hash": None, "result_hash": "x"}}
    out = engine.act(engine.context(run, "checkpoint", step=4,
                                    data={"files_changed": changed}))
    assert (out.trigger, out.updates, out.note) == ("saved", {},
                                                    "snapshot at step 4 (1 files changed)")


def test_evaluate_stop_stops_on_a_final_answer(engine: InProcess) -> None:
    run = created(engine)
    out = engine.act(engine.context(run, "evaluate_stop",
                                    data={"final_answer": "done", "pending_calls": []}))
    assert out.trigger == "stop"


def test_evaluate_stop_continues_within_the_budget(engine: InProcess) -> None:
    run = created(engine)
    out = engine.act(engine.context(run, "evaluate_stop", step=5,
                                    data={"model_turns": 2}))
    assert (out.trigger, out.note) == ("continue", "turn 2 done")


@pytest.mark.parametrize(("limits", "step", "usage", "reason"), [
    ({"max_steps": 10}, 8, Usage(), "step 8 of max_steps 10"),
    ({"max_tokens": 1000}, 5, Usage(900, 100), "1000 tokens (max_tokens 1000)"),
    ({"max_cost_usd": 0.5}, 5, Usage(10, 10, cost_usd=0.75), "$0.7500 (max_cost_usd 0.5)"),
])
def test_evaluate_stop_reports_an_exhausted_budget(engine: InProcess, limits: dict[str, Any],
                                                   step: int, usage: Usage,
                                                   reason: str) -> None:
    run = created(engine, limits=limits)
    out = engine.act(engine.context(run, "evaluate_stop", step=step, usage=usage))
    assert out.trigger == "exhausted"
    assert out.updates == {"stop_reason": reason}


def test_evaluate_stop_counts_model_turns_against_max_turns(engine: InProcess) -> None:
    machine = engine.tmp / "agent.yaml"
    machine.write_text(AGENT.read_text().replace(
        "evaluate_stop:  {action: evaluate_stop,",
        "evaluate_stop:  {action: evaluate_stop, with: {max_turns: 2},"))
    run = created(engine, machine=machine)
    below = engine.act(engine.context(run, "evaluate_stop", data={"model_turns": 1}))
    at = engine.act(engine.context(run, "evaluate_stop", data={"model_turns": 2}))
    assert below.trigger == "continue"
    assert (at.trigger, at.updates) == ("exhausted",
                                        {"stop_reason": "2 model turns (max_turns 2)"})


# -- workflows: run_tool and count_rounds ---------------------------------------------------


@pytest.mark.parametrize(("test", "trigger"), [
    ("def test_ok(self): pass", "ok"), ("def test_red(self): self.fail('red')", "failed")])
def test_run_tool_runs_the_fixed_call_and_records_its_result(engine: InProcess, test: str,
                                                             trigger: str) -> None:
    ws = engine.workspace({"test_it.py": "import unittest\n\nclass T(unittest.TestCase):\n"
                                         f"    {test}\n"})
    run = created(engine, workspace=ws, machine=ROOT / "machines" / "test_fix_loop.yaml",
                       policy=ALLOW)
    out = engine.act(engine.context(run, "run_tests"))
    assert out.trigger == trigger
    result = out.updates["results"]["run_tests"]
    assert result["ok"] is (trigger == "ok")
    assert [e.status for e in engine.store.effects(run.run_id)] == [
        "done" if trigger == "ok" else "failed"]


def test_count_rounds_is_exhausted_past_its_maximum(engine: InProcess) -> None:
    run = created(engine, machine=ROOT / "machines" / "test_fix_loop.yaml")
    third = engine.act(engine.context(run, "count_round",
                                      data={"counters": {"fix_rounds": 2}}))
    fourth = engine.act(engine.context(run, "count_round",
                                       data={"counters": {"fix_rounds": 3}}))
    assert (third.trigger, third.updates) == ("again", {"counters": {"fix_rounds": 3}})
    assert fourth.trigger == "exhausted" and fourth.note == "fix_rounds 4 of 3"
