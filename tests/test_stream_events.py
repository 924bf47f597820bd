"""Stored stream events: a run's streamed text and tool output, read by another process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from sse_server import (  # noqa: F401
    PATHS,
    Reply,
    SSEServer,
    provider_env,
    render_turn,
    sse_server_fixture,
)

from engine.store.base import StepBegin
from engine.store.sqlite import SqliteStore
from engine.tracing.stream_events import STREAM_EVENT, StreamRecorder
from engine.vocabulary.state import RunInfo, RunState
from tests.conftest import ROOT, EngineCLI, engine_env


def _noop(kind: str, payload: object) -> None:
    return None


def _store_with_run(path: Path, run_id: str = "r1") -> SqliteStore:
    """A store holding an empty run ``run_id`` (a run's rows are written once it exists)."""
    store = SqliteStore(path)
    info = RunInfo(run_id, "m", "m.yaml", "hash", "running", "a", "/ws", 1.0, 1.0, 0, 0, 0,
                   0.0, {})
    store.create_run(info, RunState(run_id, "m", "a", 0, (), {}), StepBegin(0, "a", "act", 1.0))
    return store


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
    store = _store_with_run(tmp_path / "s.db")
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
    store = _store_with_run(tmp_path / "s.db")
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


SECRET = "hunter2-abcdef-123456"
SLOW_ANSWER = ("Reading the notes, one at a time, as they come in over the wire. The password is "
               f"{SECRET} and must never be stored. " + "More words follow, slowly. " * 9)


def test_a_reader_of_the_store_follows_a_slow_model_live(sse_server: SSEServer,
                                                         tmp_path: Path) -> None:
    """A real provider stream (OpenAI wire format over SSE, 5 characters an event, 25 ms
    apart): another process's view of the store shows the answer growing while the model is
    still streaming, in far fewer events than pieces, with a secret split across pieces
    masked whole."""
    body = render_turn("openai", {"text": SLOW_ANSWER})
    pieces = len(SLOW_ANSWER) // 5
    sse_server.enqueue(PATHS["openai"], Reply.sse(body, pause_s=0.025))
    db = tmp_path / "engine.db"
    env = engine_env({**provider_env(sse_server), "DB_PASSWORD": SECRET})
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml", "--task",
         "Say what the notes say.", "--model", "openai:e2e-model", "--approval", "auto",
         "--workspace", str(tmp_path), "--db", str(db), "--json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)
    partial: list[str] = []
    try:
        partial = _watch_stream_text(db, proc, sse_server)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert json.loads(out)["status"] == "completed", err
    assert len(set(partial)) >= 2, f"the stored text did not grow while streaming: {partial}"
    assert all(SLOW_ANSWER.replace(SECRET, "[REDACTED]").startswith(p) for p in partial)
    store = SqliteStore(db)
    try:
        run_id = store.list_runs()[0].run_id
        events = [e.payload for e in store.events(run_id, [STREAM_EVENT])
                  if e.payload["channel"] == "text"]
    finally:
        store.close()
    stored = "".join(p["text"] for p in events)
    assert stored == SLOW_ANSWER.replace(SECRET, "[REDACTED]"), err
    assert SECRET[:7] not in stored
    assert 2 <= len(events) < pieces, len(events)  # at most one event a window


def _watch_stream_text(db: Path, proc: subprocess.Popen[str], server: SSEServer) -> list[str]:
    """The stored model text, read every 20 ms while the model's reply is still being sent."""
    seen: list[str] = []
    deadline = time.monotonic() + 60
    store: SqliteStore | None = None
    try:
        while proc.poll() is None and time.monotonic() < deadline and not server.completed:
            time.sleep(0.02)
            if store is None:
                if not db.exists():
                    continue
                store = SqliteStore(db)
            runs = store.list_runs()
            if not runs:
                continue
            text = "".join(e.payload["text"] for e in store.events(runs[0].run_id,
                                                                   [STREAM_EVENT])
                           if e.payload["channel"] == "text")
            if text and not server.completed:
                seen.append(text)
    finally:
        if store is not None:
            store.close()
    return seen
