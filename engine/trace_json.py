"""The trace document as JSON text, fast: one span a line, through json's C encoder.

``json.dump`` with ``indent`` runs the pure-Python encoder, which made writing a long run's
trace file cost more than a quarter of the run. Without ``indent`` the C encoder does the work;
one span per line keeps the file readable and diffable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def trace_json(trace: Mapping[str, Any]) -> str:
    """``trace`` as JSON text: its fields on the first lines, then each span on its own line."""
    head = {k: v for k, v in trace.items() if k != "spans"}
    lines = [f"{_dumps(k)}: {_dumps(v)}" for k, v in head.items()]
    spans = ",\n  ".join(_dumps(s) for s in trace.get("spans", ()))
    lines.append(f'"spans": [\n  {spans}\n ]' if spans else '"spans": []')
    return "{\n " + ",\n ".join(lines) + "\n}\n"
