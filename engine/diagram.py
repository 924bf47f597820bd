"""Machine diagrams: a ``MachineSpec`` (and optionally a run's path) drawn as a graphviz graph.

The only ``graphviz`` importer. Building the graph is pure and deterministic (file order for
nodes and edges, no timestamps) so ``diagrams/*.dot`` can be checked for drift as text. Only
``render`` to an image format needs the ``dot`` binary; without it the user is told how to get
it, never silently given another format.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import graphviz

from engine.errors import UsageError
from engine.spec.model import MachineSpec, StateSpec

logger = logging.getLogger(__name__)

Transition = tuple[str, str, str]
"""``(source, trigger, dest)`` as recorded for each step of a run."""

IMAGE_FORMATS = ("svg", "png", "pdf")
TAKEN_COLOR = "#1f6feb"
CURRENT_FILL = "#fff3b0"
UNDECLARED_COLOR = "#d1242f"
DOT_MISSING = ("graphviz 'dot' not found: install it (apt-get install graphviz / "
               "brew install graphviz) or write .dot with -o FILE.dot")


def machine_graph(spec: MachineSpec, *, path_taken: Sequence[Transition] = (),
                  current: str | None = None) -> graphviz.Digraph:
    """The machine as a graph; with ``path_taken``, the run's edges bold with their counts."""
    counts = Counter(path_taken)
    visited = {s for s, _, _ in path_taken} | {d for _, _, d in path_taken}
    graph = graphviz.Digraph(
        spec.name,
        graph_attr={"rankdir": "TB", "label": f"{spec.name} ({spec.kind})", "labelloc": "t",
                    "fontname": "Helvetica"},
        node_attr={"fontname": "Helvetica", "fontsize": "11"},
        edge_attr={"fontname": "Helvetica", "fontsize": "10"},
    )
    start = _start_node(spec)
    graph.node(start, label="", shape="point", width="0.15")
    for name, state in spec.states.items():
        graph.node(name, **_node_attrs(state, name in visited, name == current))
    if spec.initial in spec.states:
        graph.edge(start, spec.initial)
    declared = spec.transitions()
    for src, trigger, dest in declared:
        graph.edge(src, dest, **_edge_attrs(trigger, counts[(src, trigger, dest)]))
    for (src, trigger, dest), times in counts.items():
        if (src, trigger, dest) not in declared:
            graph.edge(src, dest, label=f"{trigger} x{times} (undeclared)", style="dashed",
                       color=UNDECLARED_COLOR, fontcolor=UNDECLARED_COLOR)
    return graph


def dot_source(spec: MachineSpec, *, path_taken: Sequence[Transition] = (),
               current: str | None = None) -> str:
    """The DOT text of ``machine_graph``: stable across calls, fit for drift checks."""
    source: str = machine_graph(spec, path_taken=path_taken, current=current).source
    return source


def svg(spec: MachineSpec, **kw: Any) -> str:
    """The diagram as SVG text (the web console shows it inline)."""
    return _pipe(machine_graph(spec, **kw), "svg").decode("utf-8")


def render(spec: MachineSpec, out: Path, **kw: Any) -> Path:
    """Write the diagram to ``out`` in the format its suffix names (.dot, .svg, .png, .pdf)."""
    out = Path(out)
    fmt = out.suffix.lower().lstrip(".")
    graph = machine_graph(spec, **kw)
    if fmt == "dot":
        data: bytes = graph.source.encode("utf-8")
    elif fmt in IMAGE_FORMATS:
        data = _pipe(graph, fmt)
    else:
        raise UsageError(f"{out}: unknown diagram format '{out.suffix}': "
                         f"use .dot, {', '.join('.' + f for f in IMAGE_FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    logger.debug("wrote %s (%d bytes)", out, len(data))
    return out


def _pipe(graph: graphviz.Digraph, fmt: str) -> bytes:
    try:
        data: bytes = graph.pipe(format=fmt)
        return data
    except graphviz.ExecutableNotFound as exc:
        raise UsageError(DOT_MISSING) from exc
    except graphviz.CalledProcessError as exc:
        stderr = (exc.stderr or b"").decode("utf-8", "replace").strip()
        raise UsageError(f"graphviz 'dot' failed to render {fmt}: {stderr}") from exc


def _start_node(spec: MachineSpec) -> str:
    name = "__start__"
    while name in spec.states:
        name += "_"
    return name


def _node_attrs(state: StateSpec, visited: bool, current: bool) -> dict[str, str]:
    if state.final:
        attrs = {"shape": "doublecircle", "label": _text(state.name)}
    else:
        attrs = {"shape": "box", "style": "rounded",
                 "label": _text(state.name) + "\\n" + _text(state.action or "?")}
    if visited:
        attrs.update(color=TAKEN_COLOR, penwidth="2")
    if current:
        attrs.update(style=",".join(filter(None, (attrs.get("style"), "filled"))),
                     fillcolor=CURRENT_FILL)
    return attrs


def _edge_attrs(trigger: str, times: int) -> dict[str, str]:
    if not times:
        return {"label": _text(trigger)}
    return {"label": f"{_text(trigger)} x{times}", "color": TAKEN_COLOR,
            "fontcolor": TAKEN_COLOR, "penwidth": "2.5"}


def _text(value: str) -> str:
    """A label fragment with backslashes kept literal (DOT treats them as escapes)."""
    return value.replace("\\", "\\\\")
