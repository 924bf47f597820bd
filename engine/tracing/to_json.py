"""The trace document as JSON text, fast: one span a line, through json's C encoder.

``json.dump`` with ``indent`` runs the pure-Python encoder, which made writing a long run's
trace file cost more than a quarter of the run. Without ``indent`` the C encoder does the work;
one span per line keeps the file readable and diffable.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""One encoder for the whole file (``json.dumps`` with options builds a new one per call)."""


def _c_encoder() -> Callable[[Any], str]:
    """``_ENCODER.encode`` with json's C encoder made once, not once per call as ``encode``
    makes it (a long run's file is tens of thousands of calls); ``encode`` where there is no
    C encoder. No circular-reference bookkeeping (a shared ``markers`` dict would not be safe
    across threads): a trace document is a tree built here, never cyclic."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODER.encode
    e = _ENCODER
    encoder = make(None, e.default, json.encoder.encode_basestring, e.indent, e.key_separator,
                   e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)

    def dumps(value: Any) -> str:
        return "".join(encoder(value, 0))
    return dumps


_dumps = _c_encoder()


def json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``, without making an encoder."""
    return _dumps(value)


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
