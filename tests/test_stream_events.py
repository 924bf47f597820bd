"""Stored stream events: a run's streamed text and tool output, read by another process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine.store.sqlite import SqliteStore
from engine.tracing.stream_events import STREAM_EVENT, StreamRecorder
from tests.conftest import ROOT, EngineCLI


def _noop(kind: str, payload: object) -> None:
    return None


def test_a_run_stores_coalesced_text_and_output(cli: EngineCLI) -> None:
    info = cli.json("run", "machines/coding_agent.yaml")
    assert info["status"] == "completed"
    # another process reads them back
    code = ("import json,sys; from engine.store.sqlite import SqliteStore;"
            "s=SqliteStore(sys.argv[1]);"
            "print(json.dumps([[e.step, e.payload] for e in s.events(sys.argv[2], ['stream'])]))")
    out = subprocess.run([sys.executable, "-c", code, str(cli.db), info["run_id"]], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    events = json.loads(out)
    text = "".join(p["text"] for _, p in events if p["channel"] == "text")
    assert "Let me run the tests first to see what fails." in text
    output = "".join(p["text"] for _, p in events if p["channel"] == "tool_output")
    assert "FAILED (failures=1)" in output and all(
        p.get("call_id") for _, p in events if p["channel"] == "tool_output")
    deltas = text.count(" ")  # the scripted model streams a few characters at a time
    assert len([e for e in events if e[1]["channel"] == "text"]) < deltas


def test_secrets_are_redacted_even_split_across_deltas(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    secret = "hunter2-abcdef-123456"
    rec = StreamRecorder(store, "r1", _noop, window_s=0.0, environ={"DB_PASSWORD": secret})
    rec("step_begin", {"step": 3})
    for piece in ("my password is ", secret[:8], secret[8:], " ok", " and sk-ant-", "abc"):
        rec("text_delta", {"text": piece})
    rec("step_commit", {})
    events = store.events("r1", [STREAM_EVENT])
    text = "".join(e.payload["text"] for e in events)
    assert secret not in text and secret[:8] not in text and "[REDACTED]" in text
    assert text.startswith("my password is ") and {e.step for e in events} == {3}


def test_a_step_stores_at_most_its_bound(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    rec = StreamRecorder(store, "r1", _noop, window_s=0.0, max_chars=100, environ={})
    rec("step_begin", {"step": 0})
    for i in range(200):
        rec("tool_output", {"call_id": "c1", "line": f"line {i}"})
    rec("step_begin", {"step": 1})
    rec("tool_output", {"call_id": "c2", "line": "next step"})
    rec("run_end", {})
    events = store.events("r1", [STREAM_EVENT])
    first = [e for e in events if e.step == 0]
    assert sum(len(e.payload["text"]) for e in first) == 100
    assert first[-1].payload.get("truncated") is True
    assert [e.payload["text"] for e in events if e.step == 1] == ["next step\n"]
