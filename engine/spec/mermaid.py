"""Machine diagrams as Mermaid ``stateDiagram-v2`` text (GitHub renders it inside Markdown).

Pure text, deterministic (file order, no timestamps), like the DOT in ``engine.spec.diagram``: one
line per state (``id: action``), one per transition (``src --> dest: trigger``), ``[*] -->``
the initial state and every final state ``--> [*]``. A state name Mermaid would misread (a
keyword such as ``end``, or not a plain identifier) gets a safe id and keeps its name as label.
With a run's path, taken transitions carry their counts, a taken transition the machine does
not declare is drawn with ``(undeclared)``, and visited states and the current one are styled
with ``classDef``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.spec.model import MachineSpec

Transition = tuple[str, str, str]

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_RESERVED = frozenset({"end", "state", "note", "direction", "class", "classDef", "style",
                       "click", "as", "left", "right", "of", "over", "TB", "BT", "LR", "RL"})
TAKEN_STYLE = "stroke:#1f6feb,stroke-width:2px"
CURRENT_STYLE = "fill:#fff3b0,stroke:#1f6feb,stroke-width:2px"


def mermaid_source(spec: MachineSpec, *, path_taken: Sequence[Transition] = (),
                   current: str | None = None) -> str:
    """The machine as ``stateDiagram-v2`` text; with ``path_taken``, taken edges show counts."""
    ids = _ids(spec)
    counts: dict[Transition, int] = {}
    for step in path_taken:
        counts[step] = counts.get(step, 0) + 1
    lines = ["stateDiagram-v2", f"    %% {spec.name} ({spec.kind})", "    direction TB"]
    for name, state in spec.states.items():
        if ids[name] != name:
            lines.append(f'    state "{_label(name)}" as {ids[name]}')
        if not state.final:
            lines.append(f"    {ids[name]}: {_label(name)} ({_label(state.action_label())})")
    if spec.initial in ids:
        lines.append(f"    [*] --> {ids[spec.initial]}")
    declared = spec.transitions()
    for src, trigger, dest in declared:
        if src in ids and dest in ids:
            times = counts.get((src, trigger, dest), 0)
            label = _label(trigger) + (f" x{times}" if times else "")
            lines.append(f"    {ids[src]} --> {ids[dest]}: {label}")
    for (src, trigger, dest), times in counts.items():
        if (src, trigger, dest) not in declared and src in ids and dest in ids:
            lines.append(f"    {ids[src]} --> {ids[dest]}: {_label(trigger)} x{times} "
                         "(undeclared)")
    lines.extend(f"    {ids[name]} --> [*]" for name in spec.final_states if name in ids)
    lines.extend(_styles(ids, path_taken, current))
    return "\n".join(lines) + "\n"


def markdown(spec: MachineSpec, source: str) -> str:
    """``source`` fenced as a ``mermaid`` block under a heading, for a ``.md`` file."""
    return f"# {spec.name}\n\n```mermaid\n{source}```\n"


def _ids(spec: MachineSpec) -> dict[str, str]:
    """A Mermaid-safe id for each state: its own name when that is safe."""
    ids: dict[str, str] = {}
    for i, name in enumerate(spec.states):
        safe = _PLAIN.match(name) is not None and name not in _RESERVED
        ids[name] = name if safe else f"state_{i}"
    return ids


def _label(text: str) -> str:
    """Text Mermaid shows as is: no line breaks, colons or quotes that would end the label."""
    return re.sub(r"[\r\n:\";]+", " ", text).strip()


def _styles(ids: dict[str, str], path_taken: Sequence[Transition],
            current: str | None) -> list[str]:
    visited = [n for n in ids if any(n in (s, d) for s, _, d in path_taken)]
    lines = []
    if visited:
        lines.append(f"    classDef taken {TAKEN_STYLE}")
        lines.append(f"    class {','.join(ids[n] for n in visited)} taken")
    if current in ids:
        lines.append(f"    classDef current {CURRENT_STYLE}")
        lines.append(f"    class {ids[current]} current")
    return lines
