"""Machine diagrams: deterministic DOT text, run paths highlighted, rendering with real ``dot``."""

from __future__ import annotations

import html
import re
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.spec import MachineSpec, StateSpec, parse_machine
from engine.spec.diagram import DOT_MISSING, diagram_format, dot_source, machine_graph, render
from engine.spec.mermaid import mermaid_source
from engine.vocabulary.errors import UsageError
from tests.conftest import ROOT

VALID = Path(__file__).parent / "machines_valid"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text, encoding="utf-8")
    return path

TEST_FIX_DOT = """\
digraph test_fix {
	graph [fontname=Helvetica label="test_fix (workflow)" labelloc=t nodesep=0.6 rankdir=TB]
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


# -- labels that do not run into each other ---------------------------------------------------

PARALLEL = """\
name: parallel
kind: workflow
initial: review
states:
  review:
    action: call_model
    on: {final: write, tool_calls: write}
  write:
    action: run_tool
    with: {tool: write_file, args: {path: R.md, content: x}}
    on: {ok: done, failed: failed}
  done: {final: true}
  failed: {final: true}
"""

_SVG_TEXT = re.compile(r'<text text-anchor="(\w+)" x="([-\d.]+)" y="([-\d.]+)"[^>]*'
                       r'font-size="([\d.]+)"[^>]*>([^<]*)</text>')


def svg_label_boxes(svg: str) -> list[tuple[str, float, float, float, float]]:
    """Every text of an SVG with a box from its anchor, font size and length (Helvetica's
    average glyph is about 0.55 em wide; 0.6 em plus 2 px keeps a margin)."""
    boxes = []
    for m in _SVG_TEXT.finditer(svg):
        anchor, x, y, size = m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))
        text = html.unescape(m.group(5))
        width = len(text) * size * 0.6
        left = {"middle": x - width / 2, "start": x}.get(anchor, x - width)
        boxes.append((text, left - 2, y - size, left + width + 2, y))
    return boxes


def overlapping(svg: str) -> list[tuple[str, str]]:
    boxes = svg_label_boxes(svg)
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]]


def test_parallel_transitions_share_one_edge_with_both_triggers(tmp_path: Path) -> None:
    spec = parse_machine(write(tmp_path, PARALLEL))
    dot = dot_source(spec)
    assert '\treview -> write [label="final, tool_calls"]\n' in dot
    assert dot.count("review -> write") == 1
    taken = dot_source(spec, path_taken=[("review", "tool_calls", "write")] * 2)
    assert 'review -> write [label="final, tool_calls x2" color="#1f6feb"' in taken
    svg = render(spec, tmp_path / "p.svg").read_text(encoding="utf-8")
    texts = [b[0] for b in svg_label_boxes(svg)]
    assert "final, tool_calls" in texts and "finaltool_calls" not in "".join(texts)
    assert overlapping(svg) == []


def test_the_overlap_check_sees_glued_labels() -> None:
    """The check itself: two labels placed edge to edge, as the old diagrams had them."""
    glued = ('<text text-anchor="middle" x="42.37" y="-168.53" font-size="10.00">final</text>'
             '<text text-anchor="middle" x="74.37" y="-168.53" font-size="10.00">tool_calls'
             '</text>')
    assert overlapping(glued) == [("final", "tool_calls")]


@pytest.mark.parametrize("machine", sorted((ROOT / "machines").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_bundled_diagrams_have_no_overlapping_labels(machine: Path, tmp_path: Path) -> None:
    spec = parse_machine(machine)
    fresh = render(spec, tmp_path / "m.svg").read_text(encoding="utf-8")
    assert overlapping(fresh) == []
    committed = (ROOT / "diagrams" / f"{machine.stem}.svg").read_text(encoding="utf-8")
    assert overlapping(committed) == [], f"regenerate diagrams/{machine.stem}.svg"


# -- Mermaid ------------------------------------------------------------------------------------

_ARROW = re.compile(r"(\S+) --> (\S+?)(?:: (.*))?\Z")


@dataclass
class Parsed:
    """What a stateDiagram-v2 declares."""

    names: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    ends: list[str] = field(default_factory=list)
    classes: dict[str, list[str]] = field(default_factory=dict)

    def name(self, ident: str) -> str:
        return self.names.get(ident, ident)


def parse_mermaid(text: str) -> Parsed:
    """The structure of a stateDiagram-v2: states (id -> label), transitions, start, ends.
    Refuses any line it does not understand, so a malformed diagram fails the test."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    assert lines[0] == "stateDiagram-v2"
    out = Parsed()
    names, labels, edges, start, ends, classes = (out.names, out.labels, out.edges, out.start,
                                                  out.ends, out.classes)
    for line in lines[1:]:
        if line.startswith("%%") or line == "direction TB" or line.startswith("classDef "):
            continue
        if m := re.fullmatch(r'state "([^"]+)" as (\w+)', line):
            names[m.group(2)] = m.group(1)
        elif m := re.fullmatch(r"class ([\w,]+) (\w+)", line):
            classes[m.group(2)] = m.group(1).split(",")
        elif m := _ARROW.fullmatch(line):
            src, dest, label = m.groups()
            if src == "[*]":
                start.append(dest)
            elif dest == "[*]":
                ends.append(src)
            else:
                assert label, line
                edges.append((src, label, dest))
        elif m := re.fullmatch(r"(\w+): (.+)", line):
            labels[m.group(1)] = m.group(2)
        else:
            raise AssertionError(f"not stateDiagram-v2: {line!r}")
    return out


@pytest.mark.parametrize("machine", [*sorted((ROOT / "machines").glob("*.yaml")),
                                     VALID / "coding_agent.yaml", VALID / "test_fix.yaml"],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_mermaid_has_every_state_and_transition(machine: Path) -> None:
    spec = parse_machine(machine)
    parsed = parse_mermaid(mermaid_source(spec))
    edges = [(parsed.name(s), t, parsed.name(d)) for s, t, d in parsed.edges]
    assert edges == spec.transitions()
    assert [parsed.name(s) for s in parsed.start] == [spec.initial]
    assert [parsed.name(s) for s in parsed.ends] == list(spec.final_states)
    labelled = {parsed.name(i): text for i, text in parsed.labels.items()}
    for name, state in spec.states.items():
        if not state.final:
            assert labelled[name] == f"{name} ({state.action})"


def test_mermaid_keywords_and_odd_names_get_safe_ids(tmp_path: Path) -> None:
    text = """\
        name: odd
        initial: state
        states:
          state: {action: plan, on: {ready: end}}
          end: {final: true}
        """
    spec = parse_machine(write(tmp_path, textwrap.dedent(text)))
    source = mermaid_source(spec)
    parsed = parse_mermaid(source)
    assert parsed.names == {"state_0": "state", "state_1": "end"}
    assert parsed.edges == [("state_0", "ready", "state_1")]
    assert parsed.start == ["state_0"] and parsed.ends == ["state_1"]
    assert "\n    end" not in source and " --> end" not in source


def test_mermaid_run_path_has_counts_and_classes(agent: MachineSpec) -> None:
    path = [("plan", "ready", "call_model"), ("call_model", "tool_calls", "await_approval"),
            ("await_approval", "all_denied", "call_model"),
            ("call_model", "tool_calls", "await_approval")]
    path.append(("await_approval", "bogus", "done"))
    parsed = parse_mermaid(mermaid_source(agent, path_taken=path, current="await_approval"))
    assert ("await_approval", "bogus x1 (undeclared)", "done") in parsed.edges
    assert ("call_model", "tool_calls x2", "await_approval") in parsed.edges
    assert ("call_model", "final", "evaluate_stop") in parsed.edges
    assert parsed.classes == {"taken": ["plan", "call_model", "await_approval", "done"],
                                 "current": ["await_approval"]}


def test_mermaid_files_md_and_mmd(agent: MachineSpec, tmp_path: Path) -> None:
    mmd = render(agent, tmp_path / "a.mmd").read_text(encoding="utf-8")
    assert mmd == mermaid_source(agent)
    md = render(agent, tmp_path / "a.md").read_text(encoding="utf-8")
    assert md == f"# coding_agent\n\n```mermaid\n{mmd}```\n"


def test_format_must_fit_the_suffix(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"-f mermaid does not fit '\.svg'"):
        diagram_format("mermaid", tmp_path / "a.svg")
    assert diagram_format(None, tmp_path / "a.md") == "md"
    assert diagram_format("dot", tmp_path / "a.png") == "png"
    assert diagram_format(None, None) == "dot"
