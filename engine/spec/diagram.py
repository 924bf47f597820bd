"""Machine diagrams: a ``MachineSpec`` (and optionally a run's path) drawn as a graphviz graph.

The only ``graphviz`` importer. Building the graph is pure and deterministic (file order for
nodes and edges, no timestamps) so ``diagrams/*.dot`` can be checked for drift as text. Only
``render`` to an image format needs the ``dot`` binary; without it the user is told how to get
it, never silently given another format.

Transitions between the same two states share one edge whose label lists their triggers
(``final, tool_calls``), so two labels never sit side by side and run into each other
(``finaltool_calls``). Mermaid text is made by ``engine.spec.mermaid``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import graphviz

from engine.spec.mermaid import markdown, mermaid_source
from engine.spec.model import MachineSpec, StateSpec
from engine.vocabulary.errors import UsageError

logger = logging.getLogger(__name__)

Transition = tuple[str, str, str]
"""``(source, trigger, dest)`` as recorded for each step of a run."""

IMAGE_FORMATS = ("svg", "png", "pdf")
SUFFIXES = {"dot": "dot", **{f: f for f in IMAGE_FORMATS}, "mmd": "mmd", "md": "md"}
"""File suffix -> what ``render`` writes (``mmd``/``md``: Mermaid text, bare or fenced)."""
TAKEN_COLOR = "#1f6feb"
CURRENT_FILL = "#fff3b0"
UNDECLARED_COLOR = "#d1242f"
NODESEP = "0.6"
"""Inches between neighbouring nodes: room for the labels of edges that run side by side."""
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
                    "fontname": "Helvetica", "nodesep": NODESEP},
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
    for (src, dest), triggers in _parallel(declared).items():
        graph.edge(src, dest, **_edge_attrs([(t, counts[(src, t, dest)]) for t in triggers]))
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


def diagram_format(requested: str | None, out: Path | None) -> str:
    """``dot`` or ``mermaid`` for text; for a file, what its suffix names (``-f`` must agree)."""
    if out is None:
        return requested or "dot"
    suffix = out.suffix.lower().lstrip(".")
    fmt = SUFFIXES.get(suffix)
    if fmt is None:
        raise UsageError(f"{out}: unknown diagram format '{out.suffix}': use "
                         f"{', '.join('.' + s for s in SUFFIXES)}")
    text_format = "mermaid" if fmt in ("mmd", "md") else "dot"
    if requested is not None and requested != text_format:
        raise UsageError(f"{out}: -f {requested} does not fit '{out.suffix}' "
                         f"(a {text_format} file)")
    return fmt


def diagram_text(spec: MachineSpec, fmt: str, **kw: Any) -> str:
    """The diagram as text: DOT (``dot``) or Mermaid (``mermaid``)."""
    if fmt == "mermaid":
        return mermaid_source(spec, **kw)
    return dot_source(spec, **kw)


def render(spec: MachineSpec, out: Path, fmt: str | None = None, **kw: Any) -> Path:
    """Write the diagram to ``out`` in the format its suffix names (.dot, .svg, .png, .pdf,
    .mmd for Mermaid text, .md for Mermaid in a Markdown fence)."""
    out = Path(out)
    fmt = fmt or diagram_format(None, out)
    if fmt == "dot":
        data: bytes = dot_source(spec, **kw).encode("utf-8")
    elif fmt in ("mmd", "md"):
        text = mermaid_source(spec, **kw)
        data = (markdown(spec, text) if fmt == "md" else text).encode("utf-8")
    else:
        data = _pipe(machine_graph(spec, **kw), fmt)
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
                 "label": _text(state.name) + "\\n" + _text(state.action_label())}
    if visited:
        attrs.update(color=TAKEN_COLOR, penwidth="2")
    if current:
        attrs.update(style=",".join(filter(None, (attrs.get("style"), "filled"))),
                     fillcolor=CURRENT_FILL)
    return attrs


def _parallel(transitions: Sequence[Transition]) -> dict[tuple[str, str], list[str]]:
    """Triggers grouped by ``(source, dest)``, in file order."""
    edges: dict[tuple[str, str], list[str]] = {}
    for src, trigger, dest in transitions:
        edges.setdefault((src, dest), []).append(trigger)
    return edges


def _edge_attrs(triggers: Sequence[tuple[str, int]]) -> dict[str, str]:
    """One label naming every trigger, comma separated (with its count when the run took it)."""
    label = ", ".join(_text(t) + (f" x{n}" if n else "") for t, n in triggers)
    if not any(n for _, n in triggers):
        return {"label": label}
    return {"label": label, "color": TAKEN_COLOR, "fontcolor": TAKEN_COLOR, "penwidth": "2.5"}


def _text(value: str) -> str:
    """A label fragment with backslashes kept literal (DOT treats them as escapes)."""
    return value.replace("\\", "\\\\")
