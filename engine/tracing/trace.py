"""The trace: a run's rows projected into one tree of spans (run, steps, calls), as JSON or text.

No second bookkeeping path: everything comes from the store's run row, step rows and event rows,
so the trace can be rebuilt at any time (after a crash-resume too) and comes out the same. Span
ids are derived from the run id, the span's kind and the row's sequence number; the trace id from
the run id. Attributes follow the OpenTelemetry GenAI semantic conventions (``gen_ai.*``) plus
Turnstile's own (``turnstile.*``). Every string of the document passes through
``engine.tracing.redact`` (arguments, tool results of every tool, model text, notes, errors).
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import hashlib
import json
import logging
import math
import operator
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.store.base import Event, RunReader
from engine.tracing.redact import MASK, Redactor, redactor
from engine.tracing.to_json import document_chunks, encode_str, json_text, key_text, value_text
from engine.tracing.to_text import trace_text
from engine.vocabulary.errors import TurnstileError
from engine.vocabulary.events import EventKind
from engine.vocabulary.state import RunInfo, StepRecord

logger = logging.getLogger(__name__)

TRACE_FORMAT = 1
"""Version of the trace document; bump when a field changes meaning."""

REQUIRED_CALL_FIELDS = ("model", "prompt_tokens", "completion_tokens", "tool", "arguments",
                        "duration_s", "ok", "retries", "cost_usd", "approval")
"""Keys every ``call`` record carries (None where they do not apply), issue 8 item 3."""

MAX_TEXT_CHARS = 4000
"""Model text and tool output kept per call in the document."""

MAX_SPAN_EVENTS = 200
MAX_NESTING = 16
"""Child runs deeper than this below a run are left out of its trace (each has its own)."""
"""Span events (tool output lines, retries) kept per span; the rest are counted."""

MAX_ATTRIBUTE_CHARS = 1000
"""Tool output kept in the ``gen_ai.tool.call.result`` attribute (the ``call`` has more)."""


# -- ids --------------------------------------------------------------------------------


def trace_id_of(run_id: str) -> str:
    """The run's trace id: 32 hex digits, the same on every rebuild."""
    return _hex(f"turnstile-trace:{run_id}", 32)


def span_id_of(run_id: str, kind: str, seq: int) -> str:
    """A span id: 16 hex digits from (run, kind, row sequence), the same on every rebuild."""
    return _span_ids(run_id)(kind, seq)


def _span_ids(run_id: str) -> Callable[[str, int], str]:
    """``span_id_of`` for one run: the hash of the run's prefix is computed once and copied
    for each span (a long run has tens of thousands of spans)."""
    prefix = hashlib.sha256(f"turnstile-span:{run_id}:".encode())

    def span_id(kind: str, seq: int) -> str:
        h = prefix.copy()
        h.update(f"{kind}:{seq}".encode())
        return _nonzero(h.hexdigest()[:16])
    return span_id


def _hex(text: str, digits: int) -> str:
    return _nonzero(hashlib.sha256(text.encode()).hexdigest()[:digits])


def _nonzero(h: str) -> str:
    """``h``, or ``0...01`` if it is all zeros (all-zero ids are invalid in OTLP)."""
    return h if h.strip("0") else "1".rjust(len(h), "0")


# -- the document -----------------------------------------------------------------------


@dataclass(slots=True)
class Span:
    """One span while the tree is being built; ``to_json`` is its form in the document."""

    span_id: str
    parent_id: str | None
    name: str
    kind: str
    """``run``, ``step``, ``chat``, ``tool`` or ``approval``."""
    start: float
    end: float
    step: int | None = None
    ok: bool | None = True
    error: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped_events: int = 0
    links: list[str] = field(default_factory=list)
    call: dict[str, Any] | None = None

    def add_event(self, name: str, at: float, attributes: Mapping[str, Any]) -> None:
        """``attributes`` come redacted (``Redactor.value``): events are not read again."""
        if len(self.events) >= MAX_SPAN_EVENTS:
            self.dropped_events += 1
            return
        self.events.append({"name": name, "at": at, "attributes": _clean(attributes)})
        self.end = max(self.end, at)

    def to_json(self, red: Redactor) -> dict[str, Any]:
        """The span in the document, redacted once: the fields redacted where they entered
        (events, ``ENTERED_REDACTED``) as they are, everything else of the run's through
        ``red``; ids, links and times are the trace's own."""
        parsed: dict[str, Any] = json.loads(_SpanWriter(red).text(self))
        return parsed


ENTERED_REDACTED = frozenset({"gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                              "arguments", "text", "output", "tool_calls", "approval"})
"""Attribute and call-record keys whose values the builder redacts where they enter (tool
arguments, model text, tool output, approvals): not read a second time."""


_KEEP, _MASK, _TEXT = "keep", "mask", "text"
"""``_SpanWriter._key``'s rules."""

class _SpanWriter:
    """Writes spans as the document's JSON text, each distinct string of the run redacted and
    encoded once: a long run repeats the same names, states and ids in thousands of spans, and
    the keys are the trace's own vocabulary. The text is what ``json_text`` would write of the
    span as a dict; no dict is built for it."""

    def __init__(self, red: Redactor) -> None:
        self.red = red
        self.texts: dict[str, str] = {}
        """Strings of the run -> their redacted JSON text."""
        self.secret_keys: dict[str, bool] = {}
        """Keys already judged by ``Redactor.secret_key``."""
        self.keys: dict[Any, tuple[str, str]] = {}
        """Keys -> their JSON text with the separator after it, and their rule (``_key``)."""
        self.floats: dict[float, str] = {}
        self.isos: dict[float, str] = {}

    def text(self, span: Span) -> str:
        """The span's JSON text. Ids, the kind and the ISO time are the trace's own ASCII
        words (hex digits, a name, digits): quoted without escaping."""
        start, end, ok, parent = span.start, span.end, span.ok, span.parent_id
        parts = [
            f'{{"span_id": "{span.span_id}", "parent_id": ',
            "null" if parent is None else f'"{parent}"',
            ', "name": ', self.value(span.name, "name"),
            f', "kind": "{span.kind}", "step": ', value_text(span.step),
            ', "start": ', self.number(start), ', "end": ', self.number(end),
            f', "start_iso": "{self.iso(start)}", "duration_s": ',
            value_text(round(max(end - start, 0), 6)),
            ', "status": "unset", "error": ' if ok is None else
            ', "status": "ok", "error": ' if ok else ', "status": "error", "error": ',
            self.value(span.error, "error"),
            ', "attributes": ', self.fields(span.attributes, drop_none=True),
            ', "events": ', json_text(span.events) if span.events else "[]",
            ', "links": ', json_text(span.links) if span.links else "[]",
        ]
        if span.dropped_events:
            parts += (', "dropped_events": ', value_text(span.dropped_events))
        if span.call is not None:
            parts += (', "call": ', self.fields(span.call, drop_none=False))
        parts.append("}")
        return "".join(parts)

    def fields(self, fields: Mapping[str, Any], *, drop_none: bool) -> str:
        """``fields`` as JSON text, redacted as ``Redactor.value`` would, key by key, except
        the ``ENTERED_REDACTED`` ones (kept as they are); without the Nones if ``drop_none``.
        A key's text and rule are looked up together (this loop runs for every span field)."""
        out: list[str] = []
        texts, keys = self.texts, self.keys
        for k, v in fields.items():
            kind = type(v)
            if v is None:
                if drop_none:
                    continue
                text = "null"
            elif kind is str:
                try:
                    key, rule = keys[k]
                except KeyError:
                    key, rule = self._key(k)
                if rule is _TEXT:
                    try:
                        text = texts[v]
                    except KeyError:
                        text = self._text(v)
                elif rule is _KEEP:
                    text = encode_str(v)
                else:
                    text = _MASK_TEXT if v else self._text(v)
                out.append(key + text)
                continue
            elif kind is int:
                text = int.__repr__(v)
            elif kind is bool:
                text = "true" if v else "false"
            elif kind is float:  # not remembered: a field's float rarely recurs (durations)
                text = float.__repr__(v) if v - v == 0.0 else value_text(v)
            elif k in ENTERED_REDACTED:
                text = json_text(v)
            else:
                text = value_text(self.red.value(v, k))
            try:
                out.append(keys[k][0] + text)
            except KeyError:
                out.append(self._key(k)[0] + text)
        return "{" + ", ".join(out) + "}"

    def number(self, value: Any) -> str:
        """``value_text(value)``, remembered for floats: a float's shortest form costs about
        a microsecond, and a run's times recur (a step ends when the next one begins). Zero
        is not remembered (``-0.0 == 0.0``, but they are written differently)."""
        if type(value) is not float or not value:
            return value_text(value)
        return _remembered(self.floats, value, value_text)

    def iso(self, ts: float) -> str:
        """``_iso(ts)``, remembered like ``number``."""
        return _iso(ts) if not ts else _remembered(self.isos, ts, _iso)

    def _key(self, key: Any) -> tuple[str, str]:
        """``key``'s JSON text with the separator after it, and what ``fields`` does with a
        string under it: keep it (redacted where it entered), mask it (the key names a
        secret), or redact it as text."""
        rule = (_KEEP if key in ENTERED_REDACTED else
                _MASK if type(key) is str and self.red.secret_key(key) else _TEXT)
        done = self.keys[key] = (key_text(key), rule)
        return done

    def value(self, value: Any, key: str) -> str:
        """A field of the span (``name``, ``error``) as JSON text, as ``Redactor.value``
        has it (most spans have no error: None is written without asking the redactor)."""
        if value is None:
            return "null"
        if type(value) is not str:
            return value_text(self.red.value(value, key))
        if value and self._secret_key(key):
            return _MASK_TEXT
        done = self.texts.get(value)
        return done if done is not None else self._text(value)

    def _text(self, text: str) -> str:
        done = self.texts[text] = value_text(self.red.text(text))
        return done

    def _secret_key(self, key: str) -> bool:
        named = self.secret_keys.get(key)
        if named is None:
            named = self.secret_keys[key] = self.red.secret_key(key)
        return named


_MASK_TEXT = value_text(MASK)


def _remembered(texts: dict[float, str], value: float, write: Callable[[float], str]) -> str:
    """``write(value)``, made once per value (``texts`` remembers it)."""
    done = texts.get(value)
    if done is None:
        done = texts[value] = write(value)
    return done


def build_trace(store: RunReader, run_id: str) -> dict[str, Any]:
    """The trace document of ``run_id``: ``{format, trace_id, run, spans}``, spans in tree order.

    ``run`` holds the totals (tokens, cost, duration, model and tool calls, denials, retries);
    each span has ids, times (epoch seconds), status, ``gen_ai.*``/``turnstile.*`` attributes,
    events, and for calls a ``call`` record with ``REQUIRED_CALL_FIELDS``. It is the parsed
    text of ``trace_document``: the file and this dict cannot disagree.
    """
    with _collector_paused():
        head, spans = trace_document(store, run_id)
        document: dict[str, Any] = json.loads("".join(document_chunks(head, spans)))
    return document


def trace_document(store: RunReader, run_id: str) -> tuple[dict[str, Any], Iterator[str]]:
    """The trace document of ``run_id`` as its fields (``format``, ``trace_id``, ``run``) and
    the JSON text of each span, written as they are read (``to_json.document_chunks`` joins
    them); call it with the collector paused (``_collector_paused``).

    Fields are redacted where they enter (arguments before they become JSON text), every
    other string of a span as the span is written (``_SpanWriter``), once; the fields of the
    document are redacted here by the same rules.
    """
    store.flush()  # steps whose commit rides in the next transaction are written first
    info = store.get_run(run_id)
    red = redactor()
    builder = _Builder(info, store.steps(info.run_id), red)
    builder.project(store.events(info.run_id))
    builder.nest(store)
    head, spans = builder.document()
    redacted: dict[str, Any] = red.value(head)
    return redacted, spans


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the document is built: it is hundreds of thousands
    of new dicts and lists, none of them garbage yet, and each full collection would walk them
    all again (a quarter of the build time). Reference counting still frees as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def call_spans(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The spans of ``trace`` that are calls (model calls, tool calls, approvals)."""
    return [s for s in trace["spans"] if "call" in s]


_STEP_OK = {"succeeded": True, "failed": False}
"""A step row's status -> its span's ``ok`` (None: neither, e.g. still running)."""

_TREE_ORDER = operator.attrgetter("start", "span_id")
"""The order of a step's child spans: by start time, ties by id."""


class _Builder:
    """Folds event rows, in sequence order, into spans under their step spans."""

    def __init__(self, info: RunInfo, steps: list[StepRecord], red: Redactor) -> None:
        self.info = info
        self.run_id = info.run_id
        self.span_id = _span_ids(info.run_id)
        self.red = red
        self.kind = machine_kind(info)
        self.root = Span(self.span_id("run", 0), None,
                         f"invoke_{self.kind} {info.machine}", "run", info.created_at,
                         info.updated_at)
        self.steps: dict[int, Span] = {}
        self.step_rows = {s.seq: s for s in steps}
        for s in steps:
            self.steps[s.seq] = self._step_span(s)
        self.children: dict[int, list[Span]] = {}
        self.by_id: dict[str, Span] = {}
        self.open_tools: dict[str, Span] = {}
        self.last_tool: dict[str, Span] = {}
        self.tool_attempts: dict[str, int] = {}
        self.approvals: dict[str, dict[str, Any]] = {}
        self.approval_spans: dict[str, str] = {}
        self.approval_records: dict[str, dict[str, Any]] = {}
        """Approvals as the call records hold them: redacted once, for the approval span and
        the tool span (``ENTERED_REDACTED``)."""
        self.requested_by: dict[str, str] = {}
        self.pending_retries: dict[int, list[Event]] = {}
        self.model_calls_in_step: dict[int, int] = {}
        self.nested: dict[int, list[Span]] = {}
        """The spans of child runs, by the step that started them (``nest``)."""

    # -- steps ------------------------------------------------------------------------

    def _step_span(self, s: StepRecord) -> Span:
        span = Span(self.span_id("step", s.seq), self.root.span_id,
                    f"step {s.state}", "step", s.started_at, s.ended_at or s.started_at,
                    step=s.seq)
        span.ok = _STEP_OK.get(s.status)
        if s.status == "failed":
            span.error = s.note or "step failed"
        span.attributes = {
            "turnstile.step": s.seq, "turnstile.state": s.state, "turnstile.action": s.action,
            "turnstile.trigger": s.trigger, "turnstile.dest": s.dest,
            "turnstile.step.status": s.status, "turnstile.note": s.note or None,
            "gen_ai.conversation.id": self.run_id,
        }
        if s.status == "failed":
            span.attributes["error.type"] = "step_failed"
        return span

    def _step(self, seq: int, at: float) -> Span:
        """The step span of ``seq``; events of a step with no row get a placeholder."""
        span = self.steps.get(seq)
        if span is None:
            row = StepRecord(self.run_id, seq, "?", "", "running", started_at=at)
            span = self.steps[seq] = self._step_span(row)
            self.step_rows[seq] = row
        return span

    def _interrupted_attempt(self, e: Event) -> bool:
        """Whether ``e`` happened before the step was begun again (an attempt that died)."""
        row = self.step_rows.get(e.step)
        return row is not None and e.at < row.started_at

    # -- events -----------------------------------------------------------------------

    def project(self, events: Iterable[Event]) -> None:
        handlers: dict[str, Callable[[Event, Span], None]] = {
            EventKind.MODEL_CALL: self._model_call, EventKind.MODEL_RETRY: self._model_retry,
            EventKind.APPROVAL: self._approval, EventKind.TOOL_STARTED: self._tool_started,
            EventKind.TOOL_OUTPUT: self._tool_output, EventKind.TOOL_CALL: self._tool_call,
        }
        steps, rows = self.steps, self.step_rows
        for e in events:  # ``_step`` and ``_interrupted_attempt`` inline: once per event
            seq, at = e.step, e.at
            step = steps.get(seq) or self._step(seq, at)
            row = rows.get(seq)
            if row is not None and at < row.started_at:
                step.attributes["turnstile.step.resumed"] = True
                step.start = min(step.start, at)
            handler = handlers.get(e.kind)
            if handler is not None:
                handler(e, step)
            else:
                self._other(e, step)
        for span in self.open_tools.values():
            self._unfinished(span)
        for seq, retries in self.pending_retries.items():
            for r in retries:
                self.steps[seq].add_event("model_retry", r.at, self.red.value(dict(r.payload)))

    def _add(self, step: Span, span: Span) -> Span:
        self.children.setdefault(step.step or 0, []).append(span)
        self.by_id[span.span_id] = span
        step.end = max(step.end, span.end)
        step.start = min(step.start, span.start)
        return span

    def _model_retry(self, e: Event, step: Span) -> None:
        self.pending_retries.setdefault(e.step, []).append(e)

    def _model_call(self, e: Event, step: Span) -> None:
        p = e.payload
        duration = float(p.get("duration_s") or 0.0)
        model = str(p.get("model") or "unknown")
        n = self.model_calls_in_step[e.step] = self.model_calls_in_step.get(e.step, 0) + 1
        span = Span(self.span_id("chat", e.seq), step.span_id, f"chat {model}",
                    "chat", e.at - duration, e.at, step=e.step)
        finish = p.get("finish_reason")
        span.attributes = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": p.get("provider"),
            "gen_ai.request.model": model,
            "gen_ai.response.model": p.get("response_model") or model,
            "gen_ai.response.id": p.get("response_id"),
            "server.address": p.get("server_address"), "server.port": p.get("server_port"),
            **_request_attributes(p.get("request") or {}),
            "gen_ai.usage.input_tokens": p.get("input_tokens"),
            "gen_ai.usage.output_tokens": p.get("output_tokens"),
            "gen_ai.usage.cache_read.input_tokens": p.get("cached_tokens"),
            "gen_ai.usage.cache_creation.input_tokens": p.get("cache_write_tokens"),
            "turnstile.refusal": p.get("refusal"),
            "turnstile.reasoning_blocks": p.get("reasoning_blocks"),
            "gen_ai.response.finish_reasons": [finish] if finish else None,
            "gen_ai.conversation.id": self.run_id, "turnstile.step": e.step,
            "turnstile.state": step.attributes.get("turnstile.state"),
            "turnstile.retries": p.get("retries") or 0, "turnstile.cost_usd": p.get("cost_usd"),
            "turnstile.ttft_s": p.get("ttft_s"), "turnstile.messages": p.get("messages"),
            "turnstile.purpose": p.get("purpose"),
            "turnstile.context_tokens": p.get("context_tokens"),
            "turnstile.attempt": n,
        }
        if self._interrupted_attempt(e):
            span.attributes["turnstile.superseded"] = True
        for r in self.pending_retries.pop(e.step, []):
            span.add_event("model_retry", r.at, self.red.value(dict(r.payload)))
        span.start = min([span.start, *(ev["at"] for ev in span.events)])
        calls = [self.red.value(_as_dict(c)) for c in p.get("tool_calls") or ()]
        for c in calls:
            self.requested_by[str(c.get("id"))] = span.span_id
        span.call = _call_record(
            model=model, provider=p.get("provider"), prompt_tokens=p.get("input_tokens"),
            completion_tokens=p.get("output_tokens"), cached_tokens=p.get("cached_tokens"),
            duration_s=duration, ttft_s=p.get("ttft_s"), ok=True, retries=p.get("retries") or 0,
            cost_usd=p.get("cost_usd"), finish_reason=finish, tool_calls=calls,
            text=_cut(self.red.text(str(p.get("text") or ""))), attempt=n,
            response_model=p.get("response_model"), refusal=bool(p.get("refusal")))
        self._add(step, span)

    def _approval(self, e: Event, step: Span) -> None:
        p = e.payload
        call_id, tool = str(p.get("call_id")), str(p.get("tool") or "?")
        previous = [s.end for s in self.children.get(e.step, []) if s.kind == "approval"]
        start = max([step.start, *previous]) if e.at >= step.start else e.at
        span = Span(self.span_id("approval", e.seq), step.span_id,
                    f"approval {tool}", "approval", min(start, e.at), e.at, step=e.step)
        approval = {k: p.get(k) for k in ("decision", "decided_by", "rule", "risk", "reason",
                                          "capability")}
        approval["reason"] = self.red.text(str(approval["reason"] or ""))
        self.approvals[call_id] = approval
        self.approval_records[call_id] = record = self.red.value(approval)
        self.approval_spans[call_id] = span.span_id
        span.attributes = {
            "turnstile.operation": "approval", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id, "gen_ai.conversation.id": self.run_id,
            "turnstile.step": e.step, "turnstile.approval.decision": p.get("decision"),
            "turnstile.approval.decided_by": p.get("decided_by"),
            "turnstile.approval.rule": p.get("rule"), "turnstile.approval.risk": p.get("risk"),
        }
        span.call = _call_record(tool=tool, call_id=call_id,
                                 arguments=self.red.value(dict(p.get("args") or {})),
                                 duration_s=round(max(span.end - span.start, 0.0), 6),
                                 ok=p.get("decision") == "allow", retries=0,
                                 approval=record)
        self._add(step, span)

    def _tool_span(self, e: Event, step: Span, start: float) -> Span:
        p = e.payload
        call_id, tool = str(p.get("call_id")), str(p.get("tool") or "?")
        attempt = self.tool_attempts[call_id] = self.tool_attempts.get(call_id, 0) + 1
        span = Span(self.span_id("tool", e.seq), step.span_id,
                    f"execute_tool {tool}", "tool", start, max(start, e.at), step=e.step)
        approval = self.approvals.get(call_id)
        arguments = self.red.value(_as_dict(p.get("args") or {}))  # once: attribute, call
        if call_id in self.approval_spans:
            span.links.append(self.approval_spans[call_id])
        span.attributes = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": _json(arguments),
            "gen_ai.conversation.id": self.run_id, "turnstile.step": e.step,
            "turnstile.tool.version": p.get("version"), "turnstile.attempt": attempt,
            "turnstile.retries": attempt - 1,
            "turnstile.approval.decision": approval and approval.get("decision"),
            "turnstile.approval.decided_by": approval and approval.get("decided_by"),
        }
        box = p.get("sandbox")
        if isinstance(box, Mapping):
            span.attributes.update({
                "turnstile.sandbox.sandboxed": bool(box.get("sandboxed")),
                "turnstile.sandbox.network": box.get("network"),
                "turnstile.sandbox.writable": _json(box.get("writable") or [])})
        requester = self.by_id.get(self.requested_by.get(call_id) or "")
        span.call = _call_record(
            model=requester.call.get("model") if requester and requester.call else None,
            tool=tool, version=p.get("version"), call_id=call_id,
            arguments=arguments, duration_s=None, ok=None,
            outcome="running", retries=attempt - 1, cost_usd=0.0,
            approval=self.approval_records.get(call_id),
            attempt=attempt, requested_by=requester.span_id if requester else None)
        self.last_tool[call_id] = span
        return self._add(step, span)

    def _tool_started(self, e: Event, step: Span) -> None:
        call_id = str(e.payload.get("call_id"))
        earlier = self.open_tools.pop(call_id, None)
        if earlier is not None:
            self._unfinished(earlier)
        self.open_tools[call_id] = self._tool_span(e, step, e.at)

    def _tool_output(self, e: Event, step: Span) -> None:
        span = self.open_tools.get(str(e.payload.get("call_id")))
        target = span or step
        attrs = {k: e.payload.get(k) for k in ("stream", "line")}
        target.add_event("tool_output", e.at, self.red.value(attrs))
        if span is not None:
            step.end = max(step.end, span.end)

    def _tool_call(self, e: Event, step: Span) -> None:
        p = e.payload
        call_id = str(p.get("call_id"))
        duration = float(p.get("duration_s") or 0.0)
        span = self.open_tools.pop(call_id, None)
        if span is None:
            span = self._tool_span(e, step, e.at - duration)
        span.end = max(span.end, e.at)
        is_error = bool(p.get("is_error"))
        outcome = p.get("outcome") or ("error" if is_error else "ok")
        span.ok = not is_error
        content = self.red.text(str(p.get("content") or ""))
        if is_error:
            span.error = _first_line(content) or outcome
            span.attributes["error.type"] = "cancelled" if outcome == "cancelled" else "tool_error"
        span.attributes.update({
            "turnstile.tool.version": p.get("version"), "turnstile.tool.idempotent":
            p.get("idempotent"), "turnstile.tool.side_effects": p.get("side_effects"),
            "turnstile.tool.risk": p.get("risk"), "turnstile.tool.source": p.get("source"),
            "turnstile.tool.outcome": outcome, "turnstile.tool.exit_code": p.get("exit_code"),
            "gen_ai.tool.call.result": _cut(content, MAX_ATTRIBUTE_CHARS),
        })
        assert span.call is not None
        span.call.update(duration_s=duration, ok=not is_error, outcome=outcome,
                         output=_cut(content), truncated=p.get("truncated"),
                         exit_code=p.get("exit_code"), path=p.get("path"))
        step.end = max(step.end, span.end)

    def _unfinished(self, span: Span) -> None:
        """A tool call with no result row: interrupted (or still running in a live run)."""
        live = self.info.status == "running"
        span.ok = None if live else False
        outcome = "running" if live else "interrupted"
        if not live:
            span.error = "the process ended before the call finished"
            span.attributes["error.type"] = "interrupted"
        assert span.call is not None
        span.call.update(duration_s=round(max(span.end - span.start, 0.0), 6), ok=span.ok,
                         outcome=outcome)

    def _other(self, e: Event, step: Span) -> None:
        payload = self.red.value(_as_dict(e.payload))
        call_id = e.payload.get("call_id")
        target = self.last_tool.get(str(call_id)) if call_id else None
        if target is not None and e.kind == EventKind.EFFECT_RESOLVED and target.call is not None:
            resolution = str(e.payload.get("resolution") or "")
            target.attributes["turnstile.effect.resolution"] = resolution
            if target.call.get("outcome") == "interrupted" and resolution != "rerun":
                target.call["outcome"] = resolution
                target.ok = resolution in ("applied", "recorded")
                target.error = None if target.ok else target.error
            target.events.append({"name": e.kind, "at": e.at, "attributes": _clean(payload)})
            return
        (target or step).add_event(e.kind, e.at, payload)

    # -- child runs ---------------------------------------------------------------------

    def nest(self, store: RunReader, depth: int = 0) -> None:
        """Put each child run's spans under the step that started it (its root span's parent
        is that step's span), children of children too."""
        if depth >= MAX_NESTING:
            return
        for child in store.child_runs(self.run_id):
            builder = _Builder(child, store.steps(child.run_id), self.red)
            builder.project(store.events(child.run_id))
            builder.nest(store, depth + 1)
            root, spans = builder.tree()
            builder.finish(root, builder._totals(spans, root))
            step = self._step(child.parent_step or 0, root.start)
            root.parent_id = step.span_id
            self.nested.setdefault(step.step or 0, []).extend((root, *spans))

    # -- assembly -----------------------------------------------------------------------

    def tree(self) -> tuple[Span, list[Span]]:
        """The run's root span and every other span, in tree order (child runs' spans right
        after the step that started them)."""
        spans: list[Span] = []
        seen: set[str] = set()
        for seq in sorted(self.steps):
            step = self.steps[seq]
            kids = self.children.get(seq)
            for span in (step, *sorted(kids, key=_TREE_ORDER)) if kids else (step,):
                if span.span_id in seen:  # a re-read row: one span per stable id
                    continue
                seen.add(span.span_id)
                spans.append(span)
            nested = self.nested.get(seq)
            if nested:
                step.end = max(step.end, *(s.end for s in nested))
                spans.extend(nested)
        root = self.root
        root.end = max([root.end, *(s.end for s in spans)])
        root.start = min([root.start, *(s.start for s in spans)])
        return root, spans

    def document(self) -> tuple[dict[str, Any], Iterator[str]]:
        """The document's fields and its spans' JSON text, in tree order (written lazily)."""
        root, spans = self.tree()
        totals = self._totals(spans, root)
        self.finish(root, totals)
        writer = _SpanWriter(self.red)
        head = {"format": TRACE_FORMAT, "trace_id": trace_id_of(self.run_id),
                "run": self._run_json(root, totals)}
        return head, map(writer.text, (root, *spans))

    def finish(self, root: Span, totals: dict[str, Any]) -> None:
        """The root span's status and attributes, once the totals are known."""
        status = self.info.status
        root.ok = {"completed": True, "failed": False}.get(status)
        root.error = self.info.error if status == "failed" else None
        root.attributes = {
            "gen_ai.operation.name": f"invoke_{self.kind}", "gen_ai.agent.name":
            self.info.machine, "gen_ai.conversation.id": self.run_id,
            "gen_ai.usage.input_tokens": totals["input_tokens"],
            "gen_ai.usage.output_tokens": totals["output_tokens"],
            "turnstile.machine": self.info.machine, "turnstile.run.status": status,
            "turnstile.run.state": self.info.state, "turnstile.cost_usd": totals["cost_usd"],
            "turnstile.retries": totals["retries"], "turnstile.tool_calls":
            totals["tool_calls"], "turnstile.denials": totals["denials"],
            "error.type": "run_failed" if status == "failed" else None,
        }
        if self.info.parent_run_id:
            root.attributes["turnstile.parent_run_id"] = self.info.parent_run_id
        if self.info.forked_from is not None:  # where a fork's first steps were taken
            root.attributes["turnstile.forked_from.run_id"] = self.info.forked_from.run_id
            root.attributes["turnstile.forked_from.step"] = self.info.forked_from.step

    def _totals(self, spans: list[Span], root: Span) -> dict[str, Any]:
        chats: list[dict[str, Any]] = []
        tools: list[Span] = []
        steps = denials = 0
        for s in spans:  # one pass: a long run has tens of thousands of spans
            if s.kind == "step":
                steps += s.parent_id == root.span_id  # a child run's steps are its own
            elif not s.call:
                continue
            elif s.kind == "chat":
                chats.append(s.call)
            elif s.kind == "tool":
                tools.append(s)
            elif (s.kind == "approval"
                  and s.attributes.get("turnstile.approval.decision") == "deny"):
                denials += 1
        costs: list[float | None] = [c.get("cost_usd") for c in chats]
        known = [c for c in costs if c is not None]
        return {
            "input_tokens": sum(c.get("prompt_tokens") or 0 for c in chats),
            "output_tokens": sum(c.get("completion_tokens") or 0 for c in chats),
            "cached_tokens": sum(c.get("cached_tokens") or 0 for c in chats),
            "cost_usd": round(sum(known), 6) if len(known) == len(costs) else None,
            "duration_s": round(max(root.end - root.start, 0.0), 6),
            "steps": steps,
            "model_calls": len(chats),
            "tool_calls": len({s.call["call_id"] for s in tools if s.call}),
            "tool_errors": sum(1 for s in tools if s.ok is False),
            "tool_reruns": sum(1 for s in tools if s.call and s.call["attempt"] > 1),
            "denials": denials,
            "retries": sum(c.get("retries") or 0 for c in chats),
        }

    def _run_json(self, root: Span, totals: dict[str, Any]) -> dict[str, Any]:
        info = self.info
        return {
            "run_id": info.run_id, "machine": info.machine, "kind": self.kind,
            "machine_path": info.machine_path, "status": info.status, "state": info.state,
            "error": info.error, "workspace": info.workspace, "started_at": root.start,
            "ended_at": root.end, "started_iso": _iso(root.start),
            "model": info.config.get("model") if info.config else None,
            "totals": totals,
            "committed": {"steps": info.steps, "input_tokens": info.input_tokens,
                          "output_tokens": info.output_tokens, "cost_usd": info.cost_usd},
            "forked_from": info.forked_from.to_json() if info.forked_from else None,
        }


REQUEST_ATTRIBUTES = {
    "temperature": "gen_ai.request.temperature", "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens", "seed": "gen_ai.request.seed",
    "stop_sequences": "gen_ai.request.stop_sequences",
    "reasoning_effort": "turnstile.request.reasoning_effort",
}
"""A model call's settings (its event's ``request``) -> span attribute names."""


def _request_attributes(request: Mapping[str, Any]) -> dict[str, Any]:
    return {name: request.get(key) for key, name in REQUEST_ATTRIBUTES.items()}


def _call_record(**fields: Any) -> dict[str, Any]:
    return {**dict.fromkeys(REQUIRED_CALL_FIELDS), **fields}


def machine_kind(info: RunInfo) -> str:
    """``agent`` or ``workflow``, read from the run's machine file; ``agent`` if unreadable."""
    paths = [info.machine_path, str((info.config or {}).get("machine_path") or "")]
    for path in filter(None, paths):
        kind = _kind_of(path, info.machine_hash)
        if kind is not None:
            return kind
    return "agent"


@functools.lru_cache(maxsize=64)
def _kind_of(path: str, machine_hash: str) -> str | None:
    from engine.spec import parse_machine

    try:
        return str(parse_machine(Path(path)).kind)
    except (TurnstileError, OSError, ValueError):
        return None


def _as_dict(m: Mapping[str, Any]) -> dict[str, Any]:
    """``m`` as a dict to hand to ``Redactor.value``, which builds a new one anyway: copied
    only if it is some other mapping (a payload read from the store is a dict already)."""
    return m if type(m) is dict else dict(m)


def _clean(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _json(value: Any) -> str:
    return json_text(value)


def _cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""


def _iso(ts: float) -> str:
    """``ts`` as ISO 8601 UTC to the millisecond, as ``datetime.isoformat`` writes it; the
    text up to the second is cached (spans of a run share few seconds)."""
    if not 0 <= ts < _MAX_ISO_TS:
        return _iso_datetime(ts)
    frac, whole = math.modf(ts)
    micros = round(frac * 1e6)  # as datetime.fromtimestamp rounds: half to even
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    return f"{_iso_second(int(whole))}.{micros // 1000:03d}+00:00"


_MAX_ISO_TS = 253_402_300_799.0
"""The end of year 9999 (``datetime``'s range): later times take the ``datetime`` path."""


@functools.lru_cache(maxsize=4096)
def _iso_second(second: int) -> str:
    return dt.datetime.fromtimestamp(second, dt.UTC).isoformat(timespec="seconds")[:-6]


def _iso_datetime(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


# -- files --------------------------------------------------------------------------------


def write_trace_file(store: RunReader, run_id: str, directory: Path) -> Path:
    """Write ``<directory>/<run_id>.json`` atomically (temp file + rename) and return its path.

    Each span's text is written as it is made; the collector stays paused until the file is
    written (the spans being built are hundreds of thousands of objects, none garbage yet)."""
    with _collector_paused():
        head, spans = trace_document(store, run_id)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{head['run']['run_id']}.json"
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines(document_chunks(head, spans))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        finally:
            del spans
    return target


__all__ = ["REQUIRED_CALL_FIELDS", "TRACE_FORMAT", "build_trace", "call_spans",
           "machine_kind", "span_id_of", "trace_document", "trace_id_of", "trace_text",
           "write_trace_file"]
