"""OTLP export: a run's trace document sent as OpenTelemetry spans to a collector over OTLP/HTTP.

The only module that imports ``opentelemetry``, and only inside ``export_otlp`` (it is the
optional ``otel`` extra). Spans are built as SDK ``ReadableSpan`` values straight from the trace
document, so their ids and timestamps are exactly the document's (stable across rebuilds and
re-exports), not the time of export. The exporter honours the standard variables:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (base URL, ``/v1/traces`` appended),
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (full URL), ``OTEL_EXPORTER_OTLP[_TRACES]_HEADERS``,
``..._TIMEOUT``, ``..._COMPRESSION``; ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``
shape the resource.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import TurnstileError, UsageError
from engine.store.base import Store
from engine.trace import build_trace

logger = logging.getLogger(__name__)

INSTALL_HINT = "OTLP export needs the otel extra: pip install 'turnstile[otel]'"
SERVICE_NAME = "turnstile"
MAX_ATTRIBUTE_CHARS = 4096
"""Structured values (arguments, outputs) become JSON strings cut to this length."""

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class OtlpExportError(TurnstileError):
    """The collector did not accept the spans (unreachable, refused, timed out)."""


def otlp_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard variables name a collector (the CLI then exports every run)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in ENDPOINT_VARS)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL for a base endpoint (``/v1/traces`` appended once)."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"


def export_otlp(store: Store, run_id: str, endpoint: str | None = None) -> int:
    """Export the run's spans with the OTLP/HTTP exporter; returns how many were sent.

    ``endpoint`` is a base URL like ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or a full ``.../v1/traces``
    URL); None uses the environment, else the exporter's default ``http://localhost:4318``.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    trace = build_trace(store, run_id)
    spans = to_readable_spans(trace)
    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not SpanExportResult.SUCCESS:
        target = endpoint or next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)),
                                  "http://localhost:4318")
        raise OtlpExportError(f"OTLP export of run {trace['run']['run_id']} to {target} "
                              "failed: the collector refused the spans or did not answer")
    logger.info("exported %d spans of run %s", len(spans), trace["run"]["run_id"])
    return len(spans)


def to_readable_spans(trace: Mapping[str, Any]) -> list[Any]:
    """The document's spans as SDK ``ReadableSpan`` values with the document's ids and times."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace_id = int(trace["trace_id"], 16)
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME")
                                or SERVICE_NAME})
    scope = InstrumentationScope("turnstile", _version())

    def ctx(span_id: str) -> Any:
        return SpanContext(trace_id, int(span_id, 16), is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    codes = {"ok": StatusCode.OK, "error": StatusCode.ERROR, "unset": StatusCode.UNSET}
    out = []
    for s in trace["spans"]:
        status = Status(codes[s["status"]], s.get("error") if s["status"] == "error" else None)
        out.append(ReadableSpan(
            name=s["name"], context=ctx(s["span_id"]),
            parent=ctx(s["parent_id"]) if s.get("parent_id") else None,
            resource=resource, attributes=otel_attributes(s["attributes"]),
            events=[Event(e["name"], otel_attributes(e.get("attributes") or {}), _ns(e["at"]))
                    for e in s.get("events") or ()],
            links=[Link(ctx(link)) for link in s.get("links") or ()],
            kind=SpanKind.CLIENT if s["kind"] == "chat" else SpanKind.INTERNAL,
            instrumentation_scope=scope, status=status,
            start_time=_ns(s["start"]), end_time=_ns(max(s["end"], s["start"])),
        ))
    return out


def otel_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes OTLP can carry: primitives and lists of one primitive type; the rest as JSON."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            out[key] = value
        elif isinstance(value, Sequence) and _homogeneous(value):
            out[key] = list(value)
        else:
            text = json.dumps(value, ensure_ascii=False, default=str)
            out[key] = text[:MAX_ATTRIBUTE_CHARS]
    return out


def _homogeneous(values: Sequence[Any]) -> bool:
    kinds = {type(v) for v in values}
    return len(kinds) == 1 and kinds <= {str, bool, int, float}


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _version() -> str:
    from engine import __version__

    return __version__


__all__ = ["OtlpExportError", "export_otlp", "otlp_configured", "to_readable_spans",
           "traces_url"]
