"""What the console's pages show, read from a store: plain dicts, no HTML, no HTTP."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engine.permissions.parking import pending_json, still_waiting
from engine.store.base import RunReader
from engine.tracing.redact import Redactor, redactor
from engine.tracing.stream_events import STREAM_EVENT
from engine.vocabulary.state import RunInfo, StepRecord

RESUMABLE = ("interrupted", "crashed")
"""The statuses whose page offers Resume (a run nobody drives any more)."""


def run_row(info: RunInfo, now: float, depth: int = 0) -> dict[str, Any]:
    return {"run_id": info.run_id, "machine": info.machine, "status": info.status,
            "state": info.state, "steps": info.steps,
            "tokens": info.input_tokens + info.output_tokens,
            "cost": "?" if info.cost_usd is None else f"${info.cost_usd:.4f}",
            "age": age(now - info.created_at), "updated_at": info.updated_at,
            "parent_run_id": info.parent_run_id, "depth": depth}


def runs(store: RunReader, status: str | None = None) -> list[dict[str, Any]]:
    """Newest first, each run's children (oldest first) right below it, indented by
    ``depth``; with ``status``, only the runs of that status, flat."""
    now = time.time()
    listed = store.list_runs()
    if status:
        return [run_row(r, now) for r in reversed(listed) if r.status == status]
    known = {r.run_id for r in listed}
    below: dict[str, list[RunInfo]] = {}
    for r in listed:
        if r.parent_run_id in known:
            below.setdefault(str(r.parent_run_id), []).append(r)
    rows: list[dict[str, Any]] = []

    def add(info: RunInfo, depth: int) -> None:
        rows.append(run_row(info, now, depth))
        for child in below.get(info.run_id, ()):
            add(child, depth + 1)

    for r in reversed(listed):
        if r.parent_run_id not in known:
            add(r, 0)
    return rows


def step_row(s: StepRecord, red: Redactor) -> dict[str, Any]:
    return {"seq": s.seq, "state": s.state, "action": s.action, "status": s.status,
            "trigger": s.trigger or "", "dest": s.dest or "",
            "note": red.text((s.note or "")[:300]),
            "duration": duration(s)}


def duration(s: StepRecord) -> str:
    """How long a finished step took (``""`` while it runs)."""
    return "" if s.ended_at is None else f"{max(0.0, s.ended_at - s.started_at):.2f}s"


def stream_rows(store: RunReader, run_id: str, after: int = -1) -> list[dict[str, Any]]:
    return [{"seq": e.seq, "step": e.step, **dict(e.payload)}
            for e in store.events(run_id, (STREAM_EVENT,)) if e.seq > after]


def run_page(store: RunReader, run_id: str) -> dict[str, Any]:
    """Everything the run page shows at load; later changes come by the event stream."""
    info = store.get_run(run_id)
    run_id = info.run_id
    red = redactor()
    now = time.time()
    files = []
    for e in store.effects(run_id):
        if e.file and e.file.get("patch"):
            files.append({"path": e.file.get("path"), "tool": e.tool, "step": e.step,
                          "patch": red.text(str(e.file.get("patch")))})
    audit = [{"step": a.step, "decision": a.decision, "tool": a.tool, "risk": a.risk,
              "by": a.decided_by, "rule": a.rule or "-", "reason": red.text(a.reason),
              "at": time.strftime("%H:%M:%S", time.localtime(a.at))}
             for a in store.audit(run_id)]
    stream = stream_rows(store, run_id)
    return {"run": run_row(info, now), "workspace": info.workspace,
            "resumable": info.status in RESUMABLE,
            "error": red.text(info.error) if info.error else None,
            "steps": [step_row(s, red) for s in store.steps(run_id)],
            "stream": stream, "stream_seq": max((s["seq"] for s in stream), default=-1),
            "files": files, "audit": audit, "timeline": timeline(store, run_id),
            "approvals": [pending_json(r, now, Path(info.workspace))
                          for r in store.approval_requests(run_id) if still_waiting(info, r)],
            "machine_path": info.machine_path,
            "children": [run_row(c, now) for c in store.child_runs(run_id)],
            "forked_from": info.forked_from.to_json() if info.forked_from else None}


def timeline(store: RunReader, run_id: str) -> list[dict[str, Any]]:
    """The trace's shape: one bar per step, offset and width relative to the run."""
    steps = store.steps(run_id)
    if not steps:
        return []
    start = steps[0].started_at
    end = max((s.ended_at or s.started_at) for s in steps)
    span = max(end - start, 1e-6)
    return [{"seq": s.seq, "state": s.state, "status": s.status,
             "duration": duration(s),
             "left": round(100 * (s.started_at - start) / span, 2),
             "width": round(max(0.3, 100 * ((s.ended_at or end) - s.started_at) / span), 2)}
            for s in steps]


def diagram_svg(store: RunReader, run_id: str) -> str:
    """The machine with the path taken and the current state highlighted."""
    from engine.actions.registry import ACTIONS
    from engine.spec.diagram import svg
    from engine.validation import load_machine

    info = store.get_run(run_id)
    spec = load_machine(Path(info.machine_path), ACTIONS)
    return svg(spec, path_taken=[(s, t, d) for _, s, t, d in store.transitions(info.run_id)],
               current=info.state)


def age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
