"""The trace file's JSON text: the same document as ``build_trace``, one span a line."""

from __future__ import annotations

import json
from pathlib import Path

from engine.tracing.to_json import trace_json


def test_trace_json_is_the_document_with_one_span_a_line() -> None:
    spans = [{"span_id": f"{i:016x}", "name": "step plan", "attributes": {"é": "ü\n"}}
             for i in range(3)]
    doc = {"format": 1, "trace_id": "ab" * 16, "run": {"run_id": "r", "totals": {"steps": 3}},
           "spans": spans, "when": Path("/tmp/x")}
    text = trace_json(doc)
    assert json.loads(text) == {**doc, "when": "/tmp/x"}
    lines = text.splitlines()
    assert sum(1 for line in lines if '"span_id"' in line) == 3
    assert all(json.loads(line.strip().rstrip(",")) in spans
               for line in lines if '"span_id"' in line)
    assert "ü" in text  # kept as text, not \\u escapes
    assert text.endswith("}\n")


def test_trace_json_without_spans() -> None:
    assert json.loads(trace_json({"format": 1, "spans": []})) == {"format": 1, "spans": []}
