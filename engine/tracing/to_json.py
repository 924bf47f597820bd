"""The trace document as JSON text, fast: one span a line, through json's C encoder.

``json.dump`` with ``indent`` runs the pure-Python encoder, which made writing a long run's
trace file cost more than a quarter of the run. Without ``indent`` the C encoder does the work;
one span per line keeps the file readable and diffable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""One encoder for the whole file (``json.dumps`` with options builds a new one per call)."""


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def trace_json(trace: Mapping[str, Any]) -> str:
    """``trace`` as JSON text: its fields on the first lines, then each span on its own line."""
    return "".join(trace_chunks(trace))


def trace_chunks(trace: Mapping[str, Any]) -> Iterator[str]:
    """``trace_json`` piece by piece (a span at a time), to write a long run's file without
    holding all of its text in memory."""
    yield "{"
    sep = "\n "
    for k, v in trace.items():
        if k != "spans":
            yield f"{sep}{_dumps(k)}: {_dumps(v)}"
            sep = ",\n "
    spans = trace.get("spans") or ()
    yield f'{sep}"spans": [' if spans else f'{sep}"spans": []'
    for i, span in enumerate(spans):
        yield ("\n  " if i == 0 else ",\n  ") + _dumps(span)
    yield "\n ]\n}\n" if spans else "\n}\n"
