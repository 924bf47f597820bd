"""OTLP export: a run's trace document sent as OpenTelemetry spans to a collector over OTLP/HTTP.

The only module that imports ``opentelemetry``, and only inside ``export_otlp`` (it is the
optional ``otel`` extra). Spans are built as SDK ``ReadableSpan`` values straight from the trace
document, so their ids and timestamps are exactly the document's (stable across rebuilds and
re-exports), not the time of export. The exporter honours the standard variables:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (base URL, ``/v1/traces`` appended),
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (full URL), ``OTEL_EXPORTER_OTLP[_TRACES]_HEADERS``,
``..._TIMEOUT``, ``..._COMPRESSION``; ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``
shape the resource.

A live run streams its spans (``OtlpStream``): as steps commit (batched every
``OTEL_BSP_SCHEDULE_DELAY`` ms, 5000 by default, and at the end of each drive), each *complete*
span (its step committed or failed; the run span once the run ended) goes out once. The store
remembers what a collector accepted (``Store.mark_spans_sent``), so an interrupted and resumed
run sends every span exactly once. Only a process killed between a collector's reply and that
record can send one batch again.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.store.base import Store
from engine.tracing.trace import build_trace
from engine.vocabulary.errors import TurnstileError, UsageError
from engine.vocabulary.events import EventKind

logger = logging.getLogger(__name__)

INSTALL_HINT = "OTLP export needs the otel extra: pip install 'turnstile-fsm[otel]'"
SERVICE_NAME = "turnstile"
MAX_ATTRIBUTE_CHARS = 4096
"""Structured values (arguments, outputs) become JSON strings cut to this length."""

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SCHEDULE_DELAY_S = 5.0
"""Seconds between two batches of a live run (the SDK batch processor's default)."""


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


def _exporter(endpoint: str | None) -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    return OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None)


def _accepted(result: Any) -> bool:
    from opentelemetry.sdk.trace.export import SpanExportResult

    return result is SpanExportResult.SUCCESS


def export_otlp(store: Store, run_id: str, endpoint: str | None = None, *,
                new_only: bool = False) -> int:
    """Export the run's spans with the OTLP/HTTP exporter; returns how many were sent.

    ``endpoint`` is a base URL like ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or a full ``.../v1/traces``
    URL); None uses the environment, else the exporter's default ``http://localhost:4318``.
    ``new_only`` sends only the complete spans no collector accepted yet, and records them.
    """
    exporter = _exporter(endpoint)
    trace = build_trace(store, run_id)
    chosen = None
    if new_only:
        sent = store.spans_sent(trace["run"]["run_id"])
        chosen = [s for s in complete_spans(trace) if s["span_id"] not in sent]
        if not chosen:
            exporter.shutdown()
            return 0
    spans = to_readable_spans(trace, chosen)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
    if _accepted(result) and chosen is not None:
        store.mark_spans_sent(trace["run"]["run_id"], [s["span_id"] for s in chosen],
                              time.time())
    if not _accepted(result):
        target = endpoint or next((os.environ[v] for v in ENDPOINT_VARS if os.environ.get(v)),
                                  "http://localhost:4318")
        raise OtlpExportError(f"OTLP export of run {trace['run']['run_id']} to {target} "
                              "failed: the collector refused the spans or did not answer")
    logger.info("exported %d spans of run %s", len(spans), trace["run"]["run_id"])
    return len(spans)


def complete_spans(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The spans whose content is final: every span of a committed or failed step, and the
    run span once the run completed or failed. A step left running (or interrupted) may be
    run again under the same span ids, so its spans wait."""
    done = {"succeeded", "failed"}
    step_done = {s["span_id"] for s in trace["spans"] if s["kind"] == "step"
                 and s["attributes"].get("turnstile.step.status") in done}
    run_done = trace["run"]["status"] in ("completed", "failed")
    out = []
    for s in trace["spans"]:
        if s["parent_id"] is None:
            ready = run_done
        elif s["kind"] == "step":
            ready = s["span_id"] in step_done
        else:
            ready = s["parent_id"] in step_done
        if ready:
            out.append(s)
    return out


def to_readable_spans(trace: Mapping[str, Any],
                      spans: Sequence[Mapping[str, Any]] | None = None) -> list[Any]:
    """The document's spans (or ``spans`` of it) as SDK ``ReadableSpan`` values with the
    document's ids and times."""
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
    for s in trace["spans"] if spans is None else spans:
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


class OtlpStream:
    """Sends a live run's complete spans as its steps commit, each exactly once.

    The run's observer feeds it (``wrap``); the spans are chosen and recorded on the caller's
    thread (the only one using the store), and sent by one background thread so a slow or
    dead collector never holds a step. ``close`` sends what is left and waits for it.
    """

    def __init__(self, store: Store, run_id: str, *, endpoint: str | None = None,
                 interval_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.run_id = run_id
        self.interval_s = schedule_delay_s() if interval_s is None else interval_s
        self.clock = clock
        self.sent = store.spans_sent(run_id)
        self.in_flight: set[str] = set()
        self.failures = 0
        self._last = clock()
        self._exporter = _exporter(endpoint)
        self._outbox: queue.Queue[tuple[list[Any], list[str]] | None] = queue.Queue()
        self._replies: queue.Queue[tuple[list[str], bool]] = queue.Queue()
        self._thread = threading.Thread(target=self._send_loop, name="otlp-stream",
                                        daemon=True)
        self._thread.start()

    def wrap(self, observer: Callable[[str, Mapping[str, Any]], None]
             ) -> Callable[[str, Mapping[str, Any]], None]:
        """``observer`` that also streams spans on ``step_commit`` and ``run_end``."""
        def observe(kind: str, payload: Mapping[str, Any]) -> None:
            observer(kind, payload)
            if kind in (EventKind.STEP_COMMIT, EventKind.RUN_END):
                self.pump(force=kind == EventKind.RUN_END)

        return observe

    def pump(self, *, force: bool = False) -> None:
        """Record replies; when the batch delay has passed (or ``force``), queue new spans."""
        try:
            self._record_replies()
            if force or self.clock() - self._last >= self.interval_s:
                self._last = self.clock()
                self._queue_new()
        except Exception:  # telemetry never fails a run
            logger.warning("OTLP streaming of run %s failed", self.run_id, exc_info=True)

    def close(self, timeout_s: float = 30.0) -> None:
        """Queue what is left, wait for the sender (at most ``timeout_s``), record replies."""
        self.pump(force=True)
        self._outbox.put(None)
        self._thread.join(timeout_s)
        self._record_replies()
        if self.failures:
            logger.warning("OTLP: %d batch(es) of run %s were not accepted; they are sent "
                           "again on resume or with `trace --otlp`", self.failures, self.run_id)

    def _queue_new(self) -> None:
        trace = build_trace(self.store, self.run_id)
        skip = self.sent | self.in_flight
        new = [s for s in complete_spans(trace) if s["span_id"] not in skip]
        if not new:
            return
        ids = [s["span_id"] for s in new]
        self.in_flight.update(ids)
        self._outbox.put((to_readable_spans(trace, new), ids))

    def _record_replies(self) -> None:
        accepted: list[str] = []
        while True:
            try:
                ids, ok = self._replies.get_nowait()
            except queue.Empty:
                break
            self.in_flight.difference_update(ids)
            if ok:
                accepted += ids
            else:
                self.failures += 1
        if accepted:
            self.store.mark_spans_sent(self.run_id, accepted, time.time())
            self.sent.update(accepted)

    def _send_loop(self) -> None:
        while (item := self._outbox.get()) is not None:
            spans, ids = item
            try:
                ok = _accepted(self._exporter.export(spans))
            except Exception:
                logger.warning("OTLP export failed", exc_info=True)
                ok = False
            self._replies.put((ids, ok))
        self._exporter.shutdown()


def schedule_delay_s(environ: Mapping[str, str] | None = None) -> float:
    """``OTEL_BSP_SCHEDULE_DELAY`` (milliseconds, as for the SDK's batch processor) in seconds."""
    env = os.environ if environ is None else environ
    raw = env.get("OTEL_BSP_SCHEDULE_DELAY", "").strip()
    try:
        return max(0.0, float(raw) / 1000) if raw else DEFAULT_SCHEDULE_DELAY_S
    except ValueError:
        logger.warning("OTEL_BSP_SCHEDULE_DELAY=%r is not a number of milliseconds", raw)
        return DEFAULT_SCHEDULE_DELAY_S


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
    from engine.vocabulary.version import __version__

    return __version__


__all__ = ["OtlpExportError", "OtlpStream", "complete_spans", "export_otlp", "otlp_configured",
           "schedule_delay_s", "to_readable_spans", "traces_url"]
