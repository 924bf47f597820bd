"""The trace as text: a tree and timeline of a trace document, one line per step and per call.

Reads only the document built by ``engine.tracing.trace.build_trace`` (already redacted): run header
with totals, then each step (state, trigger -> destination, duration) and under it its model
calls (model, tokens in/out, time to first token, duration, retries, cost), approvals (decision
and who decided) and tool calls (tool@version, arguments, duration, ok or error, approval).
Each line starts with its offset from the start of the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def trace_text(trace: Mapping[str, Any]) -> str:
    """A readable tree and timeline: run -> steps -> model calls, approvals and tool calls."""
    run, spans = trace["run"], trace["spans"]
    t0 = run["started_at"]
    lines = _run_header(trace)
    kids: dict[str | None, list[Mapping[str, Any]]] = {}
    for s in spans[1:]:
        kids.setdefault(s["parent_id"], []).append(s)
    steps = kids.get(spans[0]["span_id"], [])
    for i, step in enumerate(steps):
        last_step = i == len(steps) - 1
        lines.append(f"{_offset(step, t0)}  {'└─' if last_step else '├─'} {_step_line(step)}")
        calls = kids.get(step["span_id"], [])
        for j, call in enumerate(calls):
            bar = "   " if last_step else "│  "
            glyph = "└─" if j == len(calls) - 1 else "├─"
            lines.append(f"{_offset(call, t0)}  {bar}{glyph} {_call_line(call)}")
    return "\n".join(lines) + "\n"


def _run_header(trace: Mapping[str, Any]) -> list[str]:
    run = trace["run"]
    t = run["totals"]
    cost = "unknown" if t["cost_usd"] is None else f"${t['cost_usd']:.4f}"
    reruns = f", {t['tool_reruns']} re-run after resume" if t["tool_reruns"] else ""
    lines = [
        f"run {run['run_id']}  invoke_{run['kind']} {run['machine']}  {run['status']}  "
        f"(state {run['state']})  trace {trace['trace_id']}",
        f"  started {run['started_iso']}  duration {_dur(t['duration_s'])}  steps {t['steps']}  "
        f"model calls {t['model_calls']}  tool calls {t['tool_calls']} "
        f"({_plural(t['tool_errors'], 'error')}{reruns})  denials {t['denials']}  "
        f"retries {t['retries']}",
        f"  tokens {t['input_tokens']} in / {t['output_tokens']} out  cost {cost}",
    ]
    if run.get("error"):
        lines.append(f"  error: {run['error']}")
    origin = run.get("forked_from")
    if origin:
        lines.append(f"  forked from run {origin['run_id']} at step {origin['step']} (steps "
                     f"before {origin['step']} are that run's, copied)")
    return lines


def _step_line(span: Mapping[str, Any]) -> str:
    a = span["attributes"]
    move = f"{a.get('turnstile.trigger')} -> {a.get('turnstile.dest')}" if a.get(
        "turnstile.trigger") else a.get("turnstile.step.status", "")
    resumed = "  (resumed)" if a.get("turnstile.step.resumed") else ""
    error = f"  error: {span['error']}" if span.get("error") else ""
    return (f"step {span['step']} {a.get('turnstile.state')}  {move}  "
            f"{_dur(span['duration_s'])}{resumed}{error}")


def _call_line(span: Mapping[str, Any]) -> str:
    c, a = span.get("call") or {}, span["attributes"]
    if span["kind"] == "chat":
        cost = "cost ?" if c["cost_usd"] is None else f"${c['cost_usd']:.4f}"
        ttft = f"ttft {_dur(c['ttft_s'])}  " if c.get("ttft_s") is not None else ""
        asked = ", ".join(t.get("name", "?") for t in c.get("tool_calls") or ())
        tail = f"  -> {asked}" if asked else "  -> final answer"
        stale = "  (attempt superseded by resume)" if a.get("turnstile.superseded") else ""
        return (f"chat {c['model']}  {c['prompt_tokens']} in / {c['completion_tokens']} out "
                f"tok  {ttft}{_dur(c['duration_s'])}  retries {c['retries']}  {cost}{tail}"
                f"{stale}")
    if span["kind"] == "approval":
        ap = c["approval"] or {}
        rule = f" (rule {ap['rule']})" if ap.get("rule") else ""
        return (f"approval {c['tool']} {_args(c['arguments'])}  {ap.get('decision')} by "
                f"{ap.get('decided_by')}{rule}  risk {ap.get('risk')}")
    if span["kind"] == "tool":
        ap = c.get("approval") or {}
        who = f"  [{ap.get('decision')} by {ap.get('decided_by')}]" if ap else ""
        status = "ok" if c["ok"] else c.get("outcome") or "error"
        if c["ok"] is False and span.get("error"):
            status = f"{status}: {span['error']}"
        version = f"@{c['version']}" if c.get("version") else ""
        attempt = f"  attempt {c['attempt']}" if c.get("attempt", 1) > 1 else ""
        dur = _dur(c["duration_s"]) if c.get("duration_s") is not None else "-"
        return (f"execute_tool {c['tool']}{version} {_args(c['arguments'])}  {dur}  "
                f"{status}{who}{attempt}")
    return str(span["name"])


def _args(args: Any, limit: int = 100) -> str:
    text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _offset(span: Mapping[str, Any], t0: float) -> str:
    return f"+{span['start'] - t0:.3f}s".rjust(9)


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f}ms" if seconds < 1 else f"{seconds:.2f}s"
