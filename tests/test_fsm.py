"""The transition table: pure lookups built from a machine through ``transitions.Machine``."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.fsm import TransitionTable
from engine.spec import MachineSpec, StateSpec, parse_machine
from engine.vocabulary.errors import SpecError, TransitionError

VALID = Path(__file__).parent / "machines_valid"


@pytest.fixture(scope="module")
def table() -> TransitionTable:
    return TransitionTable(parse_machine(VALID / "coding_agent.yaml"))


def test_fire_follows_every_declared_transition(table: TransitionTable) -> None:
    spec = parse_machine(VALID / "coding_agent.yaml")
    for src, trigger, dest in spec.transitions():
        assert table.fire(src, trigger) == dest
    assert table.fire("evaluate_stop", "continue") == "call_model"


def test_undeclared_trigger_names_the_declared_ones(table: TransitionTable) -> None:
    with pytest.raises(TransitionError) as info:
        table.fire("call_model", "done")
    assert str(info.value) == (
        "state 'call_model' has no transition for trigger 'done' (declared: final, tool_calls)")
    with pytest.raises(TransitionError, match=r"state 'done' has no transition for trigger "
                                              r"'again' \(declared: none\)"):
        table.fire("done", "again")
    with pytest.raises(TransitionError, match="has no state 'nowhere'"):
        table.fire("nowhere", "ready")


def test_triggers_and_finals(table: TransitionTable) -> None:
    assert table.triggers("evaluate_stop") == ["continue", "exhausted", "stop"]
    assert table.triggers("done") == []
    assert [s for s in table.machine.states if table.is_final(s)] == ["done", "failed"]
    assert not table.is_final("plan")
    with pytest.raises(TransitionError):
        table.triggers("nowhere")


def test_table_is_built_from_a_plain_machine(table: TransitionTable) -> None:
    kind = type(table.machine)
    assert (kind.__module__, kind.__name__) == ("transitions.core", "Machine")  # not AsyncMachine
    assert table.machine.auto_transitions is False
    assert table.machine.models == []
    assert "to_done" not in table.machine.events
    # Firing is a lookup: the machine is never driven, so nothing changes between calls.
    assert table.fire("plan", "ready") == table.fire("plan", "ready") == "call_model"


def test_trigger_names_that_shadow_python_names_work() -> None:
    spec = MachineSpec(name="odd", initial="a", states={
        "a": StateSpec(name="a", action="x", on={"continue": "a", "trigger": "b",
                                                 "__init__": "b"}),
        "b": StateSpec(name="b", final=True),
    })
    table = TransitionTable(spec)
    assert (table.fire("a", "continue"), table.fire("a", "trigger")) == ("a", "b")
    assert table.fire("a", "__init__") == "b"


def test_unchecked_spec_with_unknown_destination_is_refused() -> None:
    spec = MachineSpec(name="bad", initial="a", path="bad.yaml", states={
        "a": StateSpec(name="a", action="x", on={"go": "b"}, on_lines={"go": 4}),
    })
    with pytest.raises(SpecError, match=r"^bad.yaml:4: 'b' is not a state$"):
        TransitionTable(spec)
