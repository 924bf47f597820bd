"""The effects ledger's decisions on resume, in this process.

A run is stopped by an in-process crash (``tests.inprocess``) at a chosen instant around a
tool call, then resumed on the same SQLite file: a call whose result was recorded is not run
again, a read or idempotent call is run again, a file write is settled by the file's hash, and
a call nobody can prove is handled as the policy's ``on_unknown_effect`` says (or a person
answers, at an interactive resume). The same decisions under a real SIGKILL are
``test_recovery``'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.store.base import EffectRecord
from tests.inprocess import InProcess

SHELL = "echo effect >> effects.log && echo logged"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[InProcess]:
    harness = InProcess(tmp_path)
    yield harness
    harness.close()


def crashed(engine: InProcess, calls: list[Mapping[str, Any]], point: str, *,
            on_unknown: str = "skip", policy: str = "default: allow\n") -> tuple[str, Path]:
    """A run of one model turn making ``calls``, crashed at ``point``: its id and workspace."""
    ws = engine.workspace({"notes.txt": "remember the milk\n"})
    turns = [{"text": "doing it", "tool_calls": calls}, {"text": "all done"}]
    run = engine.start(turns, workspace=ws,
                            policy=f"{policy}on_unknown_effect: {on_unknown}\n")
    assert engine.drive(run, crash_at=point) is None
    return run.run_id, ws


def resumed(engine: InProcess, run_id: str, **kw: Any) -> list[dict[str, Any]]:
    """Resume to completion; the ``effect_resolved`` events it showed."""
    result = engine.resume(run_id, **kw)
    assert result is not None and result.status == "completed", result
    return engine.kinds("effect_resolved")


def effects(engine: InProcess, run_id: str) -> dict[str, EffectRecord]:
    return {e.call_id: e for e in engine.store.effects(run_id)}


def shell(command: str = SHELL) -> dict[str, Any]:
    return {"name": "run_shell", "args": {"command": command}}


def write(content: str = "written once\n") -> dict[str, Any]:
    return {"name": "write_file", "args": {"path": "out.txt", "content": content}}


def logged(ws: Path) -> int:
    log = ws / "effects.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


# -- provable: recorded, idempotent, settled by hash ----------------------------------------


def test_a_recorded_result_is_returned_not_run_again(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [shell("echo one >> effects.log"),
                                  shell("echo two >> effects.log")], "during:exec_tool:2")
    assert [e.status for e in effects(engine, run_id).values()] == ["done", "started"]
    first, second = resumed(engine, run_id)
    assert (first["call_id"], first["resolution"]) == ("call_0_0", "recorded")
    assert "not run again" in first["message"]
    assert second["resolution"] == "unknown"
    assert (ws / "effects.log").read_text() == "one\n"  # once, and the unknown one skipped


def test_a_read_left_in_flight_is_run_again(engine: InProcess) -> None:
    run_id, _ws = crashed(engine, [{"name": "read_file", "args": {"path": "notes.txt"}}],
                          "after_effect:exec_tool:1")
    (resolved,) = resumed(engine, run_id)
    assert (resolved["resolution"], resolved["message"]) == (
        "rerun", "re-ran read_file (idempotent)")
    assert "remember the milk" in engine.tool_results(run_id)[-1]
    assert effects(engine, run_id)["call_0_0"].status == "done"


def test_a_command_the_policy_declares_idempotent_is_run_again(engine: InProcess) -> None:
    policy = "default: allow\nrules:\n  - {decision: allow, tool: run_shell, idempotent: true}\n"
    run_id, ws = crashed(engine, [shell()], "after_effect:exec_tool:1", policy=policy)
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "rerun"
    assert resolved["message"] == "re-ran run_shell (declared idempotent by the policy)"
    assert logged(ws) == 2  # the policy said running it twice is harmless


def test_a_write_that_happened_is_settled_by_its_hash(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [write()], "after_effect:exec_tool:1")
    assert effects(engine, run_id)["call_0_0"].status == "started"
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "applied"
    assert "already applied (hash matches)" in resolved["message"]
    assert (ws / "out.txt").read_text() == "written once\n"
    assert "not applied again" in engine.tool_results(run_id)[-1]
    assert effects(engine, run_id)["call_0_0"].status == "done"


def test_a_write_that_did_not_happen_is_applied_once(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [write()], "during:exec_tool:1")
    assert not (ws / "out.txt").exists()
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "rerun"
    assert "had not been applied (base hash matches)" in resolved["message"]
    assert (ws / "out.txt").read_text() == "written once\n"
    assert effects(engine, run_id)["call_0_0"].status == "done"


def test_a_write_whose_file_changed_since_is_a_conflict(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [write()], "during:exec_tool:1")
    (ws / "out.txt").write_text("someone else's\n")
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "conflict"
    assert "matches neither the base nor the result" in resolved["message"]
    assert (ws / "out.txt").read_text() == "someone else's\n"  # left alone
    assert effects(engine, run_id)["call_0_0"].status == "failed"
    assert "It was not repeated" in engine.tool_results(run_id)[-1]


# -- unknown: on_unknown_effect, or a person ------------------------------------------------


def test_unknown_effect_skip_does_not_repeat_it(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [shell()], "after_effect:exec_tool:1")
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "unknown"
    assert resolved["message"] == (f"shell command `{SHELL}` may or may not have run: "
                                   "not repeated (on_unknown_effect: skip)")
    assert logged(ws) == 1  # it ran before the crash, and was not repeated
    assert "not repeated" in engine.tool_results(run_id)[-1]
    assert effects(engine, run_id)["call_0_0"].status == "unknown"


def test_unknown_effect_repeat_runs_it_again(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [shell()], "after_effect:exec_tool:1", on_unknown="repeat")
    (resolved,) = resumed(engine, run_id)
    assert resolved["resolution"] == "rerun"
    assert resolved["message"].endswith("repeated (on_unknown_effect: repeat)")
    assert logged(ws) == 2  # the policy said: repeat
    assert effects(engine, run_id)["call_0_0"].status == "done"


def test_unknown_effect_fail_stops_the_run(engine: InProcess) -> None:
    run_id, ws = crashed(engine, [shell()], "after_effect:exec_tool:1", on_unknown="fail")
    result = engine.resume(run_id)
    assert result is not None and result.status == "failed"
    assert "on_unknown_effect is 'fail'" in (result.error or "")
    assert engine.store.get_run(run_id).status == "failed"
    assert logged(ws) == 1


@pytest.mark.parametrize(("answer", "resolution", "runs"), [
    ("y\n", "rerun", 2), ("n\n", "unknown", 1), ("", "unknown", 1)])
def test_unknown_effect_at_an_interactive_resume_asks_a_person(
        engine: InProcess, answer: str, resolution: str, runs: int) -> None:
    run_id, ws = crashed(engine, [shell()], "after_effect:exec_tool:1")
    (resolved,) = resumed(engine, run_id, approval="interactive", answers=answer)
    assert resolved["resolution"] == resolution
    said = "repeated (user)" if resolution == "rerun" else "not repeated (user)"
    assert resolved["message"].endswith(said)
    assert logged(ws) == runs
