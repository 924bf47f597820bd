"""The runner in this process: whole runs, limits, parking and resume after an interruption.

Built through ``tests.inprocess`` (the composition root, a real SQLite file, the built-in
tools, the scripted model); the kill tests with a real SIGKILL stay in ``test_runner``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.permissions.parking import record_decision
from tests.conftest import read_tree
from tests.inprocess import DEMO, InProcess

SHELL_ONCE = [{"text": "doing it", "tool_calls": [
    {"name": "run_shell", "args": {"command": "echo effect >> effects.log && echo logged"}}]},
    {"text": "all done"}]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[InProcess]:
    harness = InProcess(tmp_path)
    yield harness
    harness.close()


@pytest.fixture(scope="module")
def demo_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The demo's workspace after an uninterrupted run."""
    harness = InProcess(tmp_path_factory.mktemp("demo"))
    result = harness.run(golden=DEMO)
    harness.close()
    assert result.status == "completed", result.error
    return read_tree(harness.tmp / "workspaces" / result.state.run_id)


def test_the_demo_runs_to_completion_and_fixes_the_bug(engine: InProcess) -> None:
    result = engine.run(golden=DEMO)
    assert (result.status, result.state.state, result.state.step) == ("completed", "done", 23)
    run = engine.store.get_run(result.state.run_id)
    assert run.input_tokens > 0 and run.output_tokens > 0
    workspace = Path(run.workspace)
    assert workspace.parts[-2] == "workspaces"
    assert "item.price * item.quantity" in (workspace / "inventory.py").read_text()
    assert engine.kinds("run_end")[-1] == {"status": "completed", "state": "done"}


def test_every_transition_and_step_is_recorded_in_order(engine: InProcess) -> None:
    run_id = engine.run(golden=DEMO).state.run_id
    rows = engine.store.transitions(run_id)
    assert [r[0] for r in rows] == list(range(len(rows))) == list(range(23))
    assert all(a[3] == b[1] for a, b in itertools.pairwise(rows))
    assert rows[0][1] == "plan" and rows[-1][3] == "done"
    assert [s.status for s in engine.store.steps(run_id)] == ["succeeded"] * len(rows)
    events = engine.store.events(run_id)
    assert sum(e.kind == "tool_call" for e in events) == 5
    assert sum(e.kind == "model_call" for e in events) == 5
    # the run's start, then one snapshot per checkpoint step (taken as it moves on)
    snapshots = [c.state for c in engine.store.checkpoints(run_id)]
    assert snapshots == ["plan"] + ["evaluate_stop"] * 4


def test_max_steps_fails_the_run_before_the_next_step(engine: InProcess) -> None:
    result = engine.run(SHELL_ONCE, limits={"max_steps": 3}, policy="default: allow\n")
    assert result.status == "failed"
    assert result.error == "max_steps reached (3) in state exec_tool"
    assert [r[1] for r in engine.store.transitions(result.state.run_id)] == [
        "plan", "call_model", "await_approval"]
    assert engine.store.get_run(result.state.run_id).status == "failed"


def test_max_tokens_is_enforced_before_the_step_commits(engine: InProcess) -> None:
    big = "x" * 120_000  # about 30,000 tokens in one turn
    turns = [{"text": big, "tool_calls": [
        {"name": "run_shell", "args": {"command": "touch marker"}}]}, {"text": "done"}]
    ws = engine.workspace()
    result = engine.run(turns, workspace=ws, limits={"max_tokens": 20000},
                        policy="default: allow\n")
    assert result.status == "failed"
    assert "max_tokens 20000 exceeded" in (result.error or "")
    run = engine.store.get_run(result.state.run_id)
    assert run.input_tokens + run.output_tokens <= 20_000  # nothing over the limit kept
    visited = [r[1] for r in engine.store.transitions(run.run_id)]
    assert "await_approval" not in visited  # the turn's tool call never ran
    assert not (ws / "marker").exists()


def test_a_parked_call_runs_once_approved(engine: InProcess) -> None:
    ws = engine.workspace()
    turns = [{"tool_calls": [{"name": "write_file",
                              "args": {"path": "out.txt", "content": "new\n"}}]},
             {"expect": {"tool_result_contains": "out.txt"}, "text": "done"}]
    parked = engine.run(turns, workspace=ws, approval="park",
                        policy="default: deny\nrules:\n  - {decision: ask, tool: write_file}\n")
    assert parked.status == "waiting_approval"
    run_id = parked.state.run_id
    (req,) = engine.store.approval_requests(run_id)
    assert (req.tool, req.status, dict(req.args)["path"]) == ("write_file", "pending",
                                                              "out.txt")
    assert not (ws / "out.txt").exists()  # nothing ran without a decision
    record_decision(engine.store, run_id, req.call_id, "allow", channel="cli", who="tester")
    result = engine.resume(run_id)
    assert result is not None and result.status == "completed"
    assert (ws / "out.txt").read_text() == "new\n"
    audit = [a for a in engine.store.audit(run_id) if a.call_id == req.call_id]
    assert [(a.decision, a.decided_by) for a in audit] == [("allow", "cli")]


def test_a_parked_call_denied_gives_the_model_the_denial(engine: InProcess) -> None:
    ws = engine.workspace()
    turns = [{"tool_calls": [{"name": "write_file",
                              "args": {"path": "out.txt", "content": "new\n"}}]},
             {"expect": {"tool_result_contains": "Permission denied"}, "text": "done"}]
    parked = engine.run(turns, workspace=ws, approval="park",
                        policy="default: deny\nrules:\n  - {decision: ask, tool: write_file}\n")
    run_id = parked.state.run_id
    (req,) = engine.store.approval_requests(run_id)
    record_decision(engine.store, run_id, req.call_id, "deny", channel="cli",
                    note="touch only tests")
    result = engine.resume(run_id)
    assert result is not None and result.status == "completed"
    assert not (ws / "out.txt").exists()
    (denial,) = engine.tool_results(run_id)
    assert "Permission denied" in denial and "touch only tests" in denial


@pytest.mark.parametrize("point", [
    "before:plan:1", "after:call_model:1", "before:await_approval:2", "during:exec_tool:1",
    "after_effect:exec_tool:3", "after:exec_tool:3", "before:checkpoint:2",
    "after:checkpoint:4", "before:evaluate_stop:5"])
def test_crash_anywhere_then_resume_completes_identically(point: str, engine: InProcess,
                                                          demo_tree: dict[str, bytes]) -> None:
    run = engine.start(golden=DEMO)
    assert engine.drive(run, crash_at=point) is None
    run_id = run.run_id
    assert engine.store.get_run(run_id).status == "crashed"  # left mid-step, no lease
    result = engine.resume(run_id)
    assert result is not None and result.status == "completed", result
    assert read_tree(engine.tmp / "workspaces" / run_id) == demo_tree
    seqs = [r[0] for r in engine.store.transitions(run_id)]
    assert seqs == list(range(len(seqs)))  # no step recorded twice, none missing
    edits = [e.status for e in engine.store.effects(run_id) if e.tool == "edit_file"]
    assert edits == ["done"]


def test_an_interrupted_command_is_recorded_and_not_repeated_on_resume(
        engine: InProcess) -> None:
    ws = engine.workspace()
    turns = [{"tool_calls": [{"name": "run_shell", "args": {
        "command": "sleep 5 && echo effect >> effects.log"}}]}, {"text": "all done"}]
    run = engine.start(turns, workspace=ws, policy="default: allow\n")
    assert engine.drive(run, interrupt_at="during:exec_tool:1") is None
    run_id = run.run_id
    info = engine.store.get_run(run_id)
    assert (info.status, info.state) == ("interrupted", "exec_tool")
    assert engine.kinds("run_end")[-1] == {"status": "interrupted", "state": "exec_tool"}
    assert engine.store.steps(run_id)[-1].status == "interrupted"
    assert [e.status for e in engine.store.effects(run_id)] == ["started"]
    result = engine.resume(run_id)
    assert result is not None and result.status == "completed"
    (resolved,) = engine.kinds("effect_resolved")
    assert resolved["resolution"] == "unknown" and "not repeated" in resolved["message"]
    assert not (ws / "effects.log").exists()  # cut short, and not run again silently
