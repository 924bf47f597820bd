"""The trace document as JSON text, fast: one span a line, through json's C encoder.

``json.dump`` with ``indent`` runs the pure-Python encoder, which made writing a long run's
trace file cost more than a quarter of the run. Without ``indent`` the C encoder does the work;
one span per line keeps the file readable and diffable.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable, Iterator, Mapping
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


encode_str: Callable[[str], str] = json.encoder.encode_basestring
"""The string encoder the C encoder itself uses for ``ensure_ascii=False``."""


def value_text(value: Any) -> str:
    """``json_text(value)``: exact strings, numbers, booleans and None without entering the
    encoder (a trace writes hundreds of thousands of them), anything else through it."""
    kind = type(value)
    if kind is str:
        return encode_str(value)
    if value is None:
        return "null"
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is float and value - value == 0.0:  # finite: NaN and the infinities are the encoder's
        return float.__repr__(value)
    return _dumps(value)


def key_text(key: Any) -> str:
    """A mapping key as the encoder writes it, with the separator after it: ``"key": ``."""
    if type(key) is str:
        return encode_str(key) + ": "
    return _dumps({key: None})[1:-5]


def trace_json(trace: Mapping[str, Any]) -> str:
    """``trace`` as JSON text: its fields on the first lines, then each span on its own line."""
    return "".join(trace_chunks(trace))


def trace_chunks(trace: Mapping[str, Any]) -> Iterator[str]:
    """``trace_json`` piece by piece (a span at a time), to write a long run's file without
    holding all of its text in memory."""
    head = {k: v for k, v in trace.items() if k != "spans"}
    return document_chunks(head, map(_dumps, trace.get("spans") or ()))


def document_chunks(head: Mapping[str, Any], spans: Iterable[str]) -> Iterator[str]:
    """The trace document's text from its fields (``head``, in order) and the JSON text of
    each span: the fields on the first lines, then a span a line."""
    yield "{"
    sep = "\n "
    for k, v in head.items():
        yield f"{sep}{_dumps(k)}: {_dumps(v)}"
        sep = ",\n "
    first = True
    for span in spans:
        yield (f'{sep}"spans": [\n  ' if first else ",\n  ") + span
        first = False
    yield f'{sep}"spans": []\n}}\n' if first else "\n ]\n}\n"
