"""Live OTLP export: spans reach a real receiver while the run goes on, and an interrupted then
resumed run sends each span exactly once (the store remembers what the collector accepted)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from conftest import ROOT, engine_env
from otlp_receiver import OtlpReceiver
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.providers.scripted import load_turns
from engine.store.sqlite import SqliteStore
from engine.tracing.otlp import complete_spans, export_otlp, schedule_delay_s
from engine.tracing.trace import build_trace

DEMO = ROOT / "golden_tasks" / "demo_fix_test"


def wait_for(predicate, timeout_s: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=ROOT,
                            env=engine_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def test_interrupted_then_resumed_run_sends_every_span_once(sse_server: SSEServer,
                                                           tmp_path: Path) -> None:
    turns = load_turns(DEMO / "turns.yaml")
    assert len(turns) >= 3
    db = tmp_path / "engine.db"
    path = PATHS["openai"]
    # The third model call hangs: the run is interrupted there, then resumed.
    sse_server.enqueue(path, Reply.turn("openai", turns[0]), Reply.turn("openai", turns[1]),
                       Reply.turn("openai", turns[2], hang_s=8))
    with OtlpReceiver() as receiver:
        env = {**provider_env(sse_server), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
               "OTEL_BSP_SCHEDULE_DELAY": "0"}
        proc = start(["run", "machines/coding_agent.yaml", "--golden", str(DEMO), "--model",
                      "openai:e2e-model", "--approval", "auto", "--db", str(db), "--json"], env)
        try:
            assert wait_for(lambda: len([r for r in sse_server.requests if r.path == path]) == 3
                            and bool(receiver.spans)), "no span arrived while the run ran"
            assert proc.poll() is None, "the spans arrived before the run ended"
            live = list(receiver.spans)
            assert any(s["name"].startswith("chat") for s in live)
            assert all(s["parent_id"] for s in live), "the run span waits for the run's end"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 3, err
        run_id = json.loads(out)["run_id"]
        first = Counter(s["span_id"] for s in receiver.spans)
        assert first and max(first.values()) == 1
        sse_server.enqueue(path, *[Reply.turn("openai", t) for t in turns[2:]])
        resumed = subprocess.run([sys.executable, "-m", "engine", "resume", run_id, "--db",
                                  str(db), "--approval", "auto", "--json"], cwd=ROOT,
                                 env=engine_env(env), capture_output=True, text=True,
                                 timeout=120)
        assert json.loads(resumed.stdout)["status"] == "completed", resumed.stderr
        sent = Counter(s["span_id"] for s in receiver.spans)
    store = SqliteStore(db)
    try:
        trace = build_trace(store, run_id)
        remembered = store.spans_sent(run_id)
    finally:
        store.close()
    duplicates = {i: n for i, n in sent.items() if n > 1}
    assert duplicates == {}, "no span id was sent twice"
    assert set(sent) == {s["span_id"] for s in trace["spans"]}, "every span was sent"
    assert remembered == set(sent)
    assert len(set(first) & set(sent)) == len(first)


def test_export_new_only_sends_nothing_twice(tmp_path: Path) -> None:
    db = tmp_path / "engine.db"
    proc = subprocess.run([sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml",
                           "--db", str(db), "--json"], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True, timeout=120)
    run_id = json.loads(proc.stdout)["run_id"]
    store = SqliteStore(db)
    try:
        trace = build_trace(store, run_id)
        assert len(complete_spans(trace)) == len(trace["spans"]), "a completed run is complete"
        with OtlpReceiver() as receiver:
            assert export_otlp(store, run_id, receiver.endpoint, new_only=True) == len(
                trace["spans"])
            assert export_otlp(store, run_id, receiver.endpoint, new_only=True) == 0
            assert export_otlp(store, run_id, receiver.endpoint) == len(trace["spans"])
        assert len(receiver.spans) == 2 * len(trace["spans"]), "trace --otlp sends them all"
        assert store.spans_sent(run_id) == {s["span_id"] for s in trace["spans"]}
    finally:
        store.close()


def test_schedule_delay_follows_the_sdk_variable() -> None:
    assert schedule_delay_s({}) == 5.0
    assert schedule_delay_s({"OTEL_BSP_SCHEDULE_DELAY": "250"}) == 0.25
    assert schedule_delay_s({"OTEL_BSP_SCHEDULE_DELAY": "soon"}) == 5.0
