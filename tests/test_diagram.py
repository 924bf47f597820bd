"""Machine diagrams: deterministic DOT text, run paths highlighted, rendering with real ``dot``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.diagram import DOT_MISSING, dot_source, machine_graph, render
from engine.errors import UsageError
from engine.spec import MachineSpec, StateSpec, parse_machine

VALID = Path(__file__).parent / "machines_valid"

TEST_FIX_DOT = """\
digraph test_fix {
	graph [fontname=Helvetica label="test_fix (workflow)" labelloc=t rankdir=TB]
	node [fontname=Helvetica fontsize=11]
	edge [fontname=Helvetica fontsize=10]
	__start__ [label="" shape=point width=0.15]
	run_tests [label="run_tests\\nrun_tool" shape=box style=rounded]
	fix [label="fix\\ncall_model" shape=box style=rounded]
	apply [label="apply\\nexec_tool" shape=box style=rounded]
	done [label=done shape=doublecircle]
	__start__ -> run_tests
	run_tests -> done [label=ok]
	run_tests -> fix [label=failed]
	fix -> apply [label=tool_calls]
	fix -> run_tests [label=final]
	apply -> run_tests [label=done]
}
"""


@pytest.fixture(scope="module")
def agent() -> MachineSpec:
    return parse_machine(VALID / "coding_agent.yaml")


def test_dot_text_is_exact() -> None:
    assert dot_source(parse_machine(VALID / "test_fix.yaml")) == TEST_FIX_DOT


def test_every_state_and_transition_is_drawn(agent: MachineSpec) -> None:
    dot = dot_source(agent)
    for name, state in agent.states.items():
        label = name if state.final else f"{name}\\n{state.action}"
        assert f'{name} [label="{label}"' in dot or f"{name} [label={label} " in dot
    for src, trigger, dest in agent.transitions():
        assert f"\t{src} -> {dest} [label={trigger}]\n" in dot
    assert "\t__start__ -> plan\n" in dot
    assert dot.count("shape=doublecircle") == 2


def test_dot_is_deterministic(agent: MachineSpec) -> None:
    again = parse_machine(VALID / "coding_agent.yaml")
    path = [("plan", "ready", "call_model"), ("call_model", "final", "evaluate_stop")]
    assert dot_source(agent) == dot_source(again)
    assert dot_source(agent, path_taken=path, current="evaluate_stop") == dot_source(
        again, path_taken=list(path), current="evaluate_stop")


def test_path_taken_is_highlighted_with_counts(agent: MachineSpec) -> None:
    path = [("plan", "ready", "call_model"),
            ("call_model", "tool_calls", "await_approval"),
            ("await_approval", "all_denied", "call_model"),
            ("call_model", "tool_calls", "await_approval"),
            ("await_approval", "decided", "exec_tool"),
            ("exec_tool", "bogus", "done")]
    dot = dot_source(agent, path_taken=path, current="exec_tool")
    assert ('\tcall_model -> await_approval [label="tool_calls x2" color="#1f6feb" '
            'fontcolor="#1f6feb" penwidth=2.5]\n') in dot
    assert '\tplan -> call_model [label="ready x1" color="#1f6feb"' in dot
    assert "\tcall_model -> evaluate_stop [label=final]\n" in dot
    assert ('\texec_tool [label="exec_tool\\nexec_tool" color="#1f6feb" fillcolor="#fff3b0" '
            'penwidth=2 shape=box style="rounded,filled"]') in dot
    assert '\tcheckpoint [label="checkpoint\\ncheckpoint" shape=box style=rounded]' in dot
    assert ('\texec_tool -> done [label="bogus x1 (undeclared)" color="#d1242f" '
            'fontcolor="#d1242f" style=dashed]') in dot
    assert dot != dot_source(agent)


def test_graph_is_a_digraph_value(agent: MachineSpec) -> None:
    graph = machine_graph(agent, current="done")
    assert graph.name == "coding_agent"
    assert 'done [label=done fillcolor="#fff3b0" shape=doublecircle style=filled]' in graph.source


def test_state_named_like_the_entry_point_keeps_its_own_node() -> None:
    spec = MachineSpec(name="m", initial="__start__", states={
        "__start__": StateSpec(name="__start__", action="plan", on={"ready": "end"}),
        "end": StateSpec(name="end", final=True),
    })
    dot = dot_source(spec)
    assert "\t__start___ -> __start__\n" in dot


def test_render_dot_svg_and_png(agent: MachineSpec, tmp_path: Path) -> None:
    assert shutil.which("dot"), "the graphviz 'dot' binary is a test requirement"
    dot_file = render(agent, tmp_path / "out" / "agent.dot")
    assert dot_file.read_text(encoding="utf-8") == dot_source(agent)
    svg = render(agent, tmp_path / "agent.svg", current="plan").read_text(encoding="utf-8")
    assert "<svg" in svg and ">await_approval</text>" in svg and ">tool_calls</text>" in svg
    png = render(agent, tmp_path / "agent.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.png", "agent.svg", "out"]


def test_unknown_suffix_is_refused(agent: MachineSpec, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown diagram format '\.gif': use \.dot, \.svg"):
        render(agent, tmp_path / "agent.gif")
    assert not (tmp_path / "agent.gif").exists()


def test_missing_dot_says_how_to_fix(agent: MachineSpec, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without the dot binary
    with pytest.raises(UsageError) as info:
        render(agent, tmp_path / "agent.svg")
    assert str(info.value) == DOT_MISSING
    assert str(info.value).startswith("graphviz 'dot' not found: install it (apt-get install")
    assert not (tmp_path / "agent.svg").exists()
    assert render(agent, tmp_path / "agent.dot").exists()  # .dot never needs the binary
