"""The trace file of a varied run, byte for byte: any change to a field, its order, its
redaction, a time's ISO form or the JSON layout fails here.

``trace_golden.json`` was written by the trace builder before it was made fast (one dict per
span, memoised redaction, ISO times from a cached second, one C encoder); the run below is
rebuilt in a real SQLite file with fixed ids and times, so the document is deterministic.
To accept an intended change of the format, set ``TURNSTILE_REGEN_TRACE_GOLDEN=1`` once and
review the diff of ``tests/trace_golden.json``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
from pathlib import Path

import pytest

from engine.store.base import StepBegin, StepCommit
from engine.store.sqlite import SqliteStore
from engine.tracing.redact import MASK
from engine.tracing.to_json import trace_json
from engine.tracing.trace import build_trace, span_id_of, write_trace_file
from engine.vocabulary.state import RunInfo, RunState

GOLDEN = Path(__file__).resolve().parent / "trace_golden.json"
FAKE_OPENAI = "sk-proj-Zq8vN3xLr2TbW9yKc4HdFj7PmQs1VuXa"
FAKE_GITHUB = "ghp_Q1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHhJjKk"
ENV_SECRET_NAME = "TURNSTILE_TEST_SERVICE_TOKEN"
ENV_SECRET = "plain-words-but-secret-4711"
T0 = 4102444800.0
"""2100-01-01: later than any wall-clock time the store writes (``set_status``), so the
run's end is a span's, not the clock's."""


def _run(store: SqliteStore, run_id: str, status: str | None) -> None:
    """A run with retries, a denied and an allowed call, tool output lines (one for no open
    call), a failed tool with secrets in its output, an interrupted call resolved later, a
    sandboxed call, an event of a step with no row, a failed step and secrets in notes."""
    info = RunInfo(run_id, "review_changes", "no/such/machine.yaml", "h", "running", "start",
                   "/work/space", T0, T0, 0, 0, 0, 0.0, {"model": "scripted"})
    usage = RunState(run_id, "x", "y").usage
    store.create_run(info, RunState(run_id, "review_changes", "start"),
                     StepBegin(0, "start", "plan", T0))
    store.commit_step(run_id, StepCommit(0, "start", "ok", "act", T0 + 0.9995, {}, (), 0, usage,
                                         note=f"token={FAKE_GITHUB}",
                                         next_step=StepBegin(1, "act", "call_model", T0 + 1)))
    ev = store.append_event
    ev(run_id, 1, "model_retry", {"error": "rate limited api_key=abcd1234", "attempt": 1},
       T0 + 1.0004999)
    ev(run_id, 1, "model_call", {
        "provider": "openai", "model": "gpt-x", "response_model": "gpt-x-2",
        "response_id": FAKE_OPENAI, "server_address": "127.0.0.1", "server_port": 8080,
        "request": {"temperature": 0.5, "seed": 3, "stop_sequences": ["END"]},
        "input_tokens": 120, "output_tokens": 30, "cached_tokens": 10, "cost_usd": 0.0012,
        "duration_s": 0.25, "ttft_s": 0.05, "retries": 1, "finish_reason": "tool_calls",
        "messages": 3, "purpose": "turn", "context_tokens": 900,
        "text": f"key {FAKE_OPENAI} and caf\u00e9 \u2603 \"quoted\"\n" + "long " * 900,
        "tool_calls": [{"id": "c1", "name": "run_command",
                        "args": {"command": "cat .env", "password": "hunter2hunter2"}},
                       {"id": "c2", "name": "write_file", "args": {"path": "a.py"}},
                       {"id": "c3", "name": "read_file", "args": {"path": "b.txt"}}]},
       T0 + 1.5)
    ev(run_id, 1, "approval", {"call_id": "c1", "tool": "run_command", "decision": "deny",
                               "decided_by": "policy", "rule": "no-secrets", "risk": "exec",
                               "reason": f"reads {FAKE_GITHUB}", "capability": "exec:*",
                               "args": {"command": "cat .env"}}, T0 + 1.6)
    ev(run_id, 1, "approval", {"call_id": "c3", "tool": "read_file", "decision": "allow",
                               "decided_by": "policy", "risk": "read",
                               "reason": "read inside the workspace",
                               "args": {"path": "b.txt"}}, T0 + 1.61)
    ev(run_id, 1, "tool_started", {"call_id": "c3", "tool": "read_file", "version": "1.0.0",
                                   "args": {"path": "b.txt"},
                                   "sandbox": {"sandboxed": True, "network": "none",
                                               "writable": ["/work/space"]}}, T0 + 1.62)
    ev(run_id, 1, "tool_output", {"call_id": "c3", "stream": "stdout",
                                  "line": f"AWS=AKIAABCDEFGHIJKLMNOP {FAKE_OPENAI}"}, T0 + 1.63)
    ev(run_id, 1, "tool_output", {"call_id": "zz", "stream": "stderr", "line": "orphan"},
       T0 + 1.64)
    ev(run_id, 1, "tool_call", {
        "call_id": "c3", "tool": "read_file", "version": "1.0.0", "args": {"path": "b.txt"},
        "duration_s": 0.07, "outcome": "error", "is_error": True, "risk": "read",
        "idempotent": True, "side_effects": False, "source": "builtin",
        "path": f"secret={FAKE_OPENAI}", "truncated": True, "exit_code": 2,
        "content": f"Error: {ENV_SECRET} leaked\nsecond line " + "x" * 5000}, T0 + 1.7)
    ev(run_id, 1, "tool_started", {"call_id": "c2", "tool": "write_file", "version": "2",
                                   "args": {"path": "a.py"}}, T0 + 1.71)
    ev(run_id, 1, "stream", {"text": f"Bearer abcdefghijklmnop1234 {FAKE_GITHUB}"}, T0 + 1.72)
    store.end_step(run_id, 1, "failed", f"crashed with {FAKE_OPENAI}", T0 + 1.8)
    store.begin_step(run_id, StepBegin(2, "act", "call_model", T0 + 2.0))
    ev(run_id, 2, "effect_resolved", {"call_id": "c2", "resolution": "applied"}, T0 + 2.1)
    ev(run_id, 2, "model_call", {"model": "gpt-x", "input_tokens": 5, "output_tokens": 1,
                                 "cost_usd": None, "duration_s": 0.1, "text": "done",
                                 "refusal": "no"}, T0 + 2.2)
    ev(run_id, 7, "note", {"text": "an event of a step with no row", "n": 1.5}, T0 - 0.5)
    if status is not None:
        store.set_status(run_id, status, f"error: {FAKE_GITHUB}")


def _documents(tmp_path: Path) -> str:
    """The trace files of a failed, a completed and a still running run, concatenated."""
    store = SqliteStore(tmp_path / "engine.db")
    out = []
    try:
        for run_id, status in (("r-failed", "failed"), ("r-done", "completed"),
                               ("r-live", None)):
            _run(store, run_id, status)
            path = write_trace_file(store, run_id, tmp_path / "traces")
            written = path.read_text(encoding="utf-8")
            assert written == trace_json(build_trace(store, run_id))
            out.append(written)
    finally:
        store.close()
    return "".join(out)


def test_the_trace_of_a_varied_run_is_byte_for_byte_the_expected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV_SECRET_NAME, ENV_SECRET)
    text = _documents(tmp_path)
    for secret in (FAKE_OPENAI, FAKE_GITHUB, ENV_SECRET, "hunter2hunter2"):
        assert secret not in text
    assert MASK in text
    if os.environ.get("TURNSTILE_REGEN_TRACE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    got, want = text.splitlines(), expected.splitlines()
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        assert a == b, f"line {i + 1} differs"
    assert len(got) == len(want) and text == expected


def test_iso_times_match_datetime_at_every_millisecond_edge():
    from engine.tracing.trace import _iso

    rng = random.Random(7)
    stamps = [0.0, 0.0005, 0.9994999, 0.9995, 0.9999995, T0 + 0.9999995, T0 + 0.0000005,
              T0 + 59.9995, -1.5, 253402300799.0, 253402300800.5]
    stamps += [rng.uniform(0, 4e9) for _ in range(20000)]
    stamps += [T0 + rng.randrange(10**7) / 1e6 + rng.choice((0, 5e-7, -5e-7))
               for _ in range(20000)]
    for ts in stamps:
        try:
            want = dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            continue
        assert _iso(ts) == want, ts


def test_span_ids_are_the_sha256_of_run_kind_and_sequence():
    for kind in ("run", "step", "chat", "tool", "approval"):
        for seq in (0, 1, 17, 10**6):
            digest = hashlib.sha256(f"turnstile-span:r-1:{kind}:{seq}".encode()).hexdigest()
            assert span_id_of("r-1", kind, seq) == digest[:16]


def test_the_json_text_is_what_json_dumps_writes():
    class Tag(str):
        pass

    odd = {"a": [1.5, float("nan"), float("inf"), -0.0, 10**20, True, None],
           "caf\u00e9": "\u2603 \"q\" \n\t\x00 \ud83d\ude00", "t": Tag("x"), "o": object}
    trace = {"format": 1, "run": odd, "spans": [odd, {"k": []}]}
    lines = trace_json(trace)
    dumps = json.dumps
    assert lines == ("{\n \"format\": 1,\n \"run\": " + dumps(odd, ensure_ascii=False, default=str)
                     + ",\n \"spans\": [\n  " + dumps(odd, ensure_ascii=False, default=str)
                     + ",\n  {\"k\": []}\n ]\n}\n")
