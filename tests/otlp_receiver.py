"""A real OTLP/HTTP trace receiver on 127.0.0.1: decodes ``ExportTraceServiceRequest`` protobufs.

Used by the trace tests and ``bench/trace.py`` in place of a collector (Jaeger, Tempo...). It
answers ``POST /v1/traces`` like a collector does and keeps every span it received, decoded
into plain dicts (ids as hex, attributes as Python values), plus the raw request headers.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def any_value(v: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    which = v.WhichOneof("value")
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def decode(body: bytes) -> list[dict[str, Any]]:
    """The spans of one export request, each with its resource and scope attributes."""
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    spans = []
    for rs in req.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append({
                    "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                    "parent_id": s.parent_span_id.hex() or None, "name": s.name,
                    "kind": s.kind, "start_ns": s.start_time_unix_nano,
                    "end_ns": s.end_time_unix_nano, "attributes": _attrs(s.attributes),
                    "events": [{"name": e.name, "time_ns": e.time_unix_nano,
                                "attributes": _attrs(e.attributes)} for e in s.events],
                    "links": [link.span_id.hex() for link in s.links],
                    "status": {"code": s.status.code, "message": s.status.message},
                    "resource": resource, "scope": ss.scope.name,
                })
    return spans


class OtlpReceiver:
    """``with OtlpReceiver() as r:`` serves on ``r.endpoint``; ``r.spans`` collects what arrived."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.spans: list[dict[str, Any]] = []
        self.requests: list[dict[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver.requests.append(dict(self.headers.items()))
                    receiver.spans.extend(spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()
            self.requests.clear()
