"""Views of a stored run for ``show``: states visited, transitions, checkpoints, file changes.

Pure projections of the store's rows; nothing here writes. Like the trace, every string passes
through ``engine.tracing.redact`` (file contents in patches, the final answer, notes, errors).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from engine.cli.event_lines import visible
from engine.forks.service import forkable_steps
from engine.store.base import Store
from engine.tracing.redact import redactor
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import FILES_CHANGED, FINAL_ANSWER, PLAN, REFUSAL
from engine.vocabulary.state import RunInfo, StepRecord


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


_KIND_ORDER = {"pre": 0, "post": 1, "snapshot": 2}


def show_json(store: Store, run_id: str) -> dict[str, Any]:
    """The ``show --json`` object: the run's row plus its steps, checkpoints and changes."""
    shown: dict[str, Any] = redactor().value(_show(store, run_id))
    return shown


def _show(store: Store, run_id: str) -> dict[str, Any]:
    info = store.get_run(run_id)
    run_id = info.run_id
    steps = store.steps(run_id)
    state = store.load_state(run_id)
    events = store.events(run_id, (
        EventKind.MODEL_CALL, EventKind.TOOL_STARTED, EventKind.TOOL_CALL, EventKind.APPROVAL,
        EventKind.MODEL_RETRY, EventKind.EFFECT_RESOLVED, EventKind.CONTEXT_COMPRESSED))
    counts: dict[str, int] = {}
    for e in events:
        counts[e.kind] = counts.get(e.kind, 0) + 1
    checkpoints = []
    for s in steps:
        checkpoints.append({"kind": "pre", "step": s.seq, "state": s.state,
                            "at": _iso(s.started_at)})
        if s.status == "succeeded":
            checkpoints.append({"kind": "post", "step": s.seq, "state": s.dest,
                                "at": _iso(s.ended_at)})
    snapshots = [{"kind": "snapshot", "step": c.seq, "state": c.state, "at": _iso(c.at),
                  "message_count": c.message_count} for c in store.checkpoints(run_id)
                 if c.seq >= 0]
    return {
        **info.to_json(),
        "children": [_child(c) for c in store.child_runs(run_id)],
        "states_visited": states_visited(steps),
        "transitions": [{"step": seq, "from": src, "trigger": trig, "to": dst}
                        for seq, src, trig, dst in store.transitions(run_id)],
        "steps_detail": [{"step": s.seq, "state": s.state, "action": s.action,
                          "status": s.status, "trigger": s.trigger, "dest": s.dest,
                          "note": s.note, "started_at": _iso(s.started_at),
                          "ended_at": _iso(s.ended_at)} for s in steps],
        "checkpoints": sorted(checkpoints + snapshots,
                              key=lambda c: (c["step"], _KIND_ORDER[c["kind"]])),
        "duration_s": round(max(info.updated_at - info.created_at, 0.0), 3),  # clock set back
        "files_changed": FILES_CHANGED.get(state.data),
        "plan": PLAN.get(state.data),
        "final_answer": FINAL_ANSWER.get(state.data),
        "refusal": bool(REFUSAL.get(state.data)),
        "messages": len(state.messages),
        "model_calls": counts.get(EventKind.MODEL_CALL, 0),
        "tool_calls": len({e.payload.get("call_id") for e in events if e.kind in TOOL_CALL_EVENTS}),
        "retries": sum(e.payload.get("retries", 0) for e in events
                       if e.kind == EventKind.MODEL_CALL),
        "denials": sum(1 for e in events
                       if e.kind == EventKind.APPROVAL and e.payload.get("decision") == "deny"),
        "compressions": counts.get(EventKind.CONTEXT_COMPRESSED, 0),
        "effects_resolved": [e.payload.get("message") for e in events
                             if e.kind == EventKind.EFFECT_RESOLVED],
        "config": dict(info.config),
        "forkable_steps": forkable_steps(store, run_id),
    }


TOOL_CALL_EVENTS = (EventKind.TOOL_STARTED, EventKind.TOOL_CALL, EventKind.EFFECT_RESOLVED)
"""A call that has any of these ran (or was settled on resume); counted once by its id, so a
call whose result row died with a killed process still counts."""


def states_visited(steps: list[StepRecord]) -> list[str]:
    """The state of every step in order, then the state the last committed step led to (a
    final state runs no step of its own)."""
    visited = [s.state for s in steps]
    if steps and steps[-1].status == "succeeded" and steps[-1].dest:
        visited.append(steps[-1].dest)
    return visited


def _child(info: RunInfo) -> dict[str, Any]:
    """A child run as its parent's ``show`` lists it."""
    return {"run_id": info.run_id, "machine": info.machine, "status": info.status,
            "state": info.state, "parent_step": info.parent_step, "steps": info.steps,
            "input_tokens": info.input_tokens, "output_tokens": info.output_tokens,
            "cost_usd": info.cost_usd, "error": info.error}


def show_text(store: Store, run_id: str) -> str:
    """A readable summary of one run."""
    d = show_json(store, run_id)
    cost = "unknown" if d["cost_usd"] is None else f"${d['cost_usd']:.4f}"
    lines = [
        f"run {d['run_id']}  machine {d['machine']}  status {d['status']}  state {d['state']}",
        f"  workspace {d['workspace']}",
        f"  steps {d['steps']}  messages {d['messages']}  model calls {d['model_calls']}  "
        f"tool calls {d['tool_calls']}  denials {d['denials']}  retries {d['retries']}",
        f"  tokens {d['input_tokens']} in / {d['output_tokens']} out  cost {cost}  "
        f"duration {d['duration_s']:.2f}s",
    ]
    if d.get("error"):
        lines.append(f"  error: {d['error']}")
    if d.get("parent_run_id"):
        lines.append(f"  child of run {d['parent_run_id']} (its step {d['parent_step']})")
    for c in d.get("children") or ():
        lines.append(f"  child run {c['run_id']} ({c['machine']}, step {c['parent_step']}): "
                     f"{c['status']}")
    if d.get("forked_from"):
        origin = d["forked_from"]
        lines.append(f"  forked from run {origin['run_id']} at step {origin['step']}")
    lines.append("transitions:")
    for t in d["transitions"]:
        lines.append(f"  {t['step']:>4}  {t['from']} --{t['trigger']}--> {t['to']}")
    open_steps = [s for s in d["steps_detail"] if s["status"] != "succeeded" and s["action"]]
    for s in open_steps:
        lines.append(f"  {s['step']:>4}  {s['state']} ({s['status']}) {s['note'] or ''}")
    lines.append("checkpoints:")
    for c in d["checkpoints"][-12:]:
        lines.append(f"  {c['kind']:<8} step {c['step']:>4}  {c['state']:<16} {c['at']}")
    if len(d["checkpoints"]) > 12:
        lines.append(f"  ... {len(d['checkpoints']) - 12} earlier (see --json)")
    if d["files_changed"]:
        lines.append("files changed:")
        for path, h in d["files_changed"].items():
            base = h.get("base_hash") or ("new" if h.get("created", True) else "?")
            result = h.get("result_hash") or ("deleted" if h.get("deleted") else "?")
            lines.append(f"  {path}  {base[:10]} -> {result[:10]}")
    for msg in d["effects_resolved"]:
        lines.append(f"  resume: {msg}")
    if d["final_answer"]:
        flag = " (refusal: the model declined)" if d["refusal"] else ""
        lines.append(f"final answer{flag}: {d['final_answer']}")
    return visible("\n".join(lines)) + "\n"  # a file's name, an answer: shown as text
