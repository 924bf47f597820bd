"""The trace: demo runs projected into span trees, crash-resume, OTLP export, redaction.

Runs are real: ``python -m engine run`` in a subprocess on a temp database (the offline demo
with the scripted model), killed by ``ENGINE_FAULTS`` and resumed. The OTLP collector is
``tests/otlp_receiver.py``, a real HTTP server on 127.0.0.1 decoding the protobuf.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import engine_env
from otlp_receiver import OtlpReceiver

from engine.store.base import StepBegin, StepCommit
from engine.store.sqlite import SqliteStore
from engine.tracing.otlp import OtlpExportError, export_otlp, otlp_configured, traces_url
from engine.tracing.redact import MASK, redact
from engine.tracing.trace import (
    REQUIRED_CALL_FIELDS,
    build_trace,
    call_spans,
    span_id_of,
    trace_id_of,
    trace_text,
    write_trace_file,
)
from engine.vocabulary.errors import UsageError
from engine.vocabulary.state import RunInfo, RunState

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "machines" / "coding_agent.yaml"
FAKE_OPENAI = "sk-proj-Zq8vN3xLr2TbW9yKc4HdFj7PmQs1VuXa"
FAKE_GITHUB = "ghp_Q1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHhJjKk"
ENV_SECRET_NAME = "TURNSTILE_TEST_SERVICE_TOKEN"
ENV_SECRET = "plain-words-but-secret-4711"


def engine(*args: str, cwd: Path, env: dict[str, str] | None = None,
           check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m engine ARGS`` in ``cwd`` (the project on PYTHONPATH, no ambient OTLP)."""
    full = engine_env({"PYTHONPATH": str(ROOT), **(env or {})})
    proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"engine {args} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def run_demo(tmp: Path, *extra: str, env: dict[str, str] | None = None,
             check: bool = True) -> tuple[subprocess.CompletedProcess[str], Path]:
    db = tmp / ".engine" / "engine.db"
    proc = engine("run", str(AGENT), "--db", str(db), "--json", *extra, cwd=tmp, env=env,
                  check=check)
    return proc, db


def only_run_id(db: Path) -> str:
    store = SqliteStore(db)
    try:
        (info,) = store.list_runs()
        return info.run_id
    finally:
        store.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("demo")
    proc, db = run_demo(tmp)
    return db, json.loads(proc.stdout)["run_id"]


@pytest.fixture
def demo_store(demo: tuple[Path, str]) -> Any:
    store = SqliteStore(demo[0])
    yield store
    store.close()


def tree_problems(trace: dict[str, Any], steps: list[Any]) -> list[str]:
    """Everything that makes a span tree inconsistent with the run's step rows."""
    spans = trace["spans"]
    problems = []
    ids = Counter(s["span_id"] for s in spans)
    problems += [f"duplicate span id {i}" for i, n in ids.items() if n > 1]
    root, rest = spans[0], spans[1:]
    if root["parent_id"] is not None or root["kind"] != "run":
        problems.append("the first span is not the run")
    step_spans = [s for s in rest if s["kind"] == "step"]
    if [(s["step"], s["attributes"]["turnstile.state"]) for s in step_spans] != [
            (r.seq, r.state) for r in steps]:
        problems.append("step spans do not match the step rows")
    for s, r in zip(step_spans, steps, strict=False):
        if s["parent_id"] != root["span_id"] or s["attributes"].get("turnstile.trigger") != (
                r.trigger):
            problems.append(f"step {r.seq}: wrong parent or trigger")
    by_step = {s["span_id"]: s for s in step_spans}
    for s in rest:
        if s["kind"] == "step":
            continue
        parent = by_step.get(s["parent_id"])
        if parent is None or parent["step"] != s["step"]:
            problems.append(f"{s['name']} (step {s['step']}) is not under its step")
        elif s["start"] < parent["start"] - 1e-6 or s["end"] > parent["end"] + 1e-6:
            problems.append(f"{s['name']} lies outside its step's time")
    return problems


# -- the demo run -----------------------------------------------------------------------


def test_demo_trace_has_every_required_field(demo_store: SqliteStore, demo: tuple[Path, str]):
    run_id = demo[1]
    trace = build_trace(demo_store, run_id)
    events = Counter(e.kind for e in demo_store.events(run_id))
    chats = [s for s in trace["spans"] if s["kind"] == "chat"]
    tools = [s for s in trace["spans"] if s["kind"] == "tool"]
    approvals = [s for s in trace["spans"] if s["kind"] == "approval"]
    assert len(chats) == events["model_call"] and chats
    assert len(tools) == events["tool_call"] and tools
    assert len(approvals) == events["approval"] and approvals
    for span in call_spans(trace):
        assert set(REQUIRED_CALL_FIELDS) <= set(span["call"]), span["name"]
    for c in (s["call"] for s in chats):
        assert c["model"] == "scripted" and c["prompt_tokens"] > 0 and c["completion_tokens"] > 0
        assert c["duration_s"] >= 0 and c["ok"] is True and c["retries"] == 0
        assert "cost_usd" in c
    for span in tools:
        c = span["call"]
        assert c["tool"] == span["attributes"]["gen_ai.tool.name"] and isinstance(
            c["arguments"], dict)
        assert c["duration_s"] >= 0 and isinstance(c["ok"], bool) and c["retries"] == 0
        assert c["approval"]["decision"] == "allow" and c["approval"]["decided_by"] == "policy"
        assert span["links"], "a tool span links to its approval"
        assert span["attributes"]["turnstile.tool.version"]
        assert span["attributes"]["turnstile.approval.decided_by"] == "policy"
    # the first test run fails (the demo's bug), the last one passes
    shells = [s["call"] for s in tools if s["call"]["tool"] == "run_shell"]
    assert [c["exit_code"] for c in shells] == [1, 0]
    totals = trace["run"]["totals"]
    info = demo_store.get_run(run_id)
    assert totals["input_tokens"] == info.input_tokens > 0
    assert totals["output_tokens"] == info.output_tokens > 0
    assert totals["tool_calls"] == len(tools) and totals["denials"] == 0
    assert totals["model_calls"] == len(chats) and totals["retries"] == 0
    assert totals["duration_s"] > 0 and trace["run"]["status"] == "completed"


def test_demo_attributes_follow_genai_semconv(demo_store: SqliteStore, demo: tuple[Path, str]):
    trace = build_trace(demo_store, demo[1])
    root = trace["spans"][0]
    assert root["name"] == "invoke_agent coding_agent"
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    for s in trace["spans"]:
        assert s["attributes"]["gen_ai.conversation.id"] == demo[1]
        if s["kind"] == "chat":
            a = s["attributes"]
            assert s["name"] == "chat scripted"
            assert a["gen_ai.operation.name"] == "chat"
            assert a["gen_ai.provider.name"] == "scripted"
            assert a["gen_ai.request.model"] == "scripted"
            assert a["gen_ai.usage.input_tokens"] == s["call"]["prompt_tokens"]
            assert a["gen_ai.usage.output_tokens"] == s["call"]["completion_tokens"]
            assert a["turnstile.retries"] == 0 and a["turnstile.state"] == "call_model"
        if s["kind"] == "tool":
            a = s["attributes"]
            assert s["name"] == f"execute_tool {a['gen_ai.tool.name']}"
            assert a["gen_ai.operation.name"] == "execute_tool"
            assert a["gen_ai.tool.call.id"] == s["call"]["call_id"]
            assert isinstance(a["turnstile.tool.idempotent"], bool)
            assert isinstance(a["turnstile.tool.side_effects"], bool)
            assert ("error.type" in a) == (s["status"] == "error")


def test_demo_span_tree_matches_the_steps(demo_store: SqliteStore, demo: tuple[Path, str]):
    trace = build_trace(demo_store, demo[1])
    steps = demo_store.steps(demo[1])
    assert tree_problems(trace, steps) == []
    assert trace["trace_id"] == trace_id_of(demo[1]) and len(trace["trace_id"]) == 32
    step_ids = [s["span_id"] for s in trace["spans"] if s["kind"] == "step"]
    assert step_ids == [span_id_of(demo[1], "step", r.seq) for r in steps]
    chat_steps = {s["step"] for s in trace["spans"] if s["kind"] == "chat"}
    assert chat_steps == {r.seq for r in steps if r.state == "call_model"}


def test_rebuilds_are_identical_and_the_cli_wrote_the_file(demo_store: SqliteStore,
                                                          demo: tuple[Path, str]):
    db, run_id = demo
    first, second = build_trace(demo_store, run_id), build_trace(demo_store, run_id)
    assert first == second
    written = json.loads((db.parent / "traces" / f"{run_id}.json").read_text())
    assert written == json.loads(json.dumps(first))


def test_write_trace_file_is_atomic_and_named_by_run(demo_store: SqliteStore,
                                                    demo: tuple[Path, str], tmp_path: Path):
    path = write_trace_file(demo_store, demo[1][:8], tmp_path / "traces")
    assert path == tmp_path / "traces" / f"{demo[1]}.json"
    assert json.loads(path.read_text())["run"]["run_id"] == demo[1]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_trace_text_shows_the_timeline(demo_store: SqliteStore, demo: tuple[Path, str]):
    text = trace_text(build_trace(demo_store, demo[1]))
    lines = text.splitlines()
    assert lines[0].startswith(f"run {demo[1]}  invoke_agent coding_agent  completed")
    assert "tokens " in lines[2] and " in / " in lines[2]
    chat = next(line for line in lines if "chat scripted" in line)
    assert " in / " in chat and "ttft " in chat and "retries 0" in chat and "-> run_shell" in chat
    tool = next(line for line in lines if "execute_tool run_shell@" in line)
    assert '{"command": "python3 -m unittest -q"}' in tool and "[allow by policy]" in tool
    assert "exit" not in tool or "error" in tool
    assert any("approval edit_file" in line and "allow by policy" in line for line in lines)
    steps = [line for line in lines if " step " in line]
    assert len(steps) == len(demo_store.steps(demo[1]))
    assert "step 0 plan  ready -> call_model" in steps[0]


def test_cli_trace_prints_text_and_json(demo: tuple[Path, str], tmp_path: Path):
    db, run_id = demo
    as_json = engine("trace", run_id, "--db", str(db), "--json", cwd=tmp_path)
    store = SqliteStore(db)
    try:
        expected = json.loads(json.dumps(build_trace(store, run_id)))
    finally:
        store.close()
    assert json.loads(as_json.stdout) == expected
    as_text = engine("trace", run_id, "--db", str(db), cwd=tmp_path)
    assert as_text.stdout.startswith(f"run {run_id}")


# -- crash and resume -------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["crash_after:exec_tool:1", "crash_during:exec_tool:1",
                                   "crash_before:exec_tool:2"])
def test_crash_resume_gives_one_consistent_tree(tmp_path: Path, fault: str):
    proc, db = run_demo(tmp_path, env={"ENGINE_FAULTS": fault}, check=False)
    assert proc.returncode == -9, proc.stderr
    run_id = only_run_id(db)
    store = SqliteStore(db)
    try:
        crashed = build_trace(store, run_id)
        assert crashed["run"]["status"] == "crashed"
        assert tree_problems(crashed, store.steps(run_id)) == []
        engine("resume", run_id, "--db", str(db), "--json", cwd=tmp_path)
        trace = build_trace(store, run_id)
        steps = store.steps(run_id)
    finally:
        store.close()
    assert trace["run"]["status"] == "completed"
    assert tree_problems(trace, steps) == []
    assert Counter(r.seq for r in steps) == Counter(range(len(steps)))
    before = {s["span_id"]: s["name"] for s in crashed["spans"]}
    after = {s["span_id"]: s["name"] for s in trace["spans"]}
    assert all(after.get(i) == name for i, name in before.items()), "span ids changed"
    tools = [s for s in trace["spans"] if s["kind"] == "tool"]
    attempts = Counter((s["call"]["call_id"], s["call"]["attempt"]) for s in tools)
    assert all(n == 1 for n in attempts.values())
    written = json.loads((db.parent / "traces" / f"{run_id}.json").read_text())
    assert written["run"]["status"] == "completed"
    assert [s["span_id"] for s in written["spans"]] == [s["span_id"] for s in trace["spans"]]
    if fault.startswith("crash_during"):
        first = next(s for s in tools if s["call"]["attempt"] == 1
                     and s["call"]["outcome"] != "ok")
        assert first["attributes"]["turnstile.effect.resolution"]
        assert any(e["name"] == "effect_resolved" for e in first["events"])
        assert any(s["attributes"].get("turnstile.step.resumed") for s in trace["spans"])


# -- OTLP -------------------------------------------------------------------------------


def test_otlp_receiver_gets_every_span_with_its_attributes(demo_store: SqliteStore,
                                                          demo: tuple[Path, str]):
    run_id = demo[1]
    trace = build_trace(demo_store, run_id)
    with OtlpReceiver() as receiver:
        sent = export_otlp(demo_store, run_id, receiver.endpoint)
    got = {s["span_id"]: s for s in receiver.spans}
    assert sent == len(trace["spans"]) == len(got)
    for span in trace["spans"]:
        r = got[span["span_id"]]
        assert r["trace_id"] == trace["trace_id"] and r["name"] == span["name"]
        assert r["parent_id"] == span["parent_id"]
        assert abs(r["start_ns"] - span["start"] * 1e9) < 1e3
        assert r["resource"]["service.name"] == "turnstile"
        assert r["status"]["code"] == {"unset": 0, "ok": 1, "error": 2}[span["status"]]
    chat = next(s for s in receiver.spans if s["name"] == "chat scripted")
    assert chat["attributes"]["gen_ai.operation.name"] == "chat"
    assert chat["attributes"]["gen_ai.provider.name"] == "scripted"
    assert chat["attributes"]["gen_ai.usage.input_tokens"] > 0
    assert chat["attributes"]["gen_ai.conversation.id"] == run_id
    tool = next(s for s in receiver.spans if s["name"] == "execute_tool run_shell")
    assert tool["attributes"]["gen_ai.tool.name"] == "run_shell"
    assert tool["attributes"]["turnstile.approval.decision"] == "allow"
    assert tool["attributes"]["turnstile.approval.decided_by"] == "policy"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {
        "command": "python3 -m unittest -q"}
    assert tool["links"] and tool["links"][0] in got
    assert any(e["name"] == "tool_output" for e in tool["events"])
    root = next(s for s in receiver.spans if s["parent_id"] is None)
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"


def test_cli_trace_otlp_honours_the_standard_variables(demo: tuple[Path, str], tmp_path: Path):
    db, run_id = demo
    with OtlpReceiver() as receiver:
        proc = engine("trace", run_id, "--db", str(db), "--otlp", cwd=tmp_path, env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=turnstile",
            "OTEL_SERVICE_NAME": "ci-agents"})
    assert f"exported {len(receiver.spans)} spans" in proc.stdout and receiver.spans
    assert receiver.requests[0].get("x-team") == "turnstile"
    assert {s["resource"]["service.name"] for s in receiver.spans} == {"ci-agents"}
    assert {s["trace_id"] for s in receiver.spans} == {trace_id_of(run_id)}


def test_otlp_export_refused_by_the_collector_is_an_error(demo_store: SqliteStore,
                                                         demo: tuple[Path, str]):
    with OtlpReceiver(status=400) as receiver, pytest.raises(OtlpExportError,
                                                              match="OTLP export of run"):
        export_otlp(demo_store, demo[1], receiver.endpoint)


def test_otlp_without_the_extra_names_it(demo: tuple[Path, str], tmp_path: Path):
    """A child process where ``opentelemetry`` cannot be imported, as without the extra."""
    db, run_id = demo
    script = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.startswith("opentelemetry"):
                    raise ImportError("No module named " + repr(name))
        sys.meta_path.insert(0, Block())
        from engine.cli.main import main
        sys.exit(main(["trace", {run_id!r}, "--db", {str(db)!r}, "--otlp"]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.returncode == UsageError.exit_code, proc.stderr
    assert "OTLP export needs the otel extra: pip install 'turnstile-fsm[otel]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_otlp_endpoint_helpers():
    assert traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("http://c:4318/v1/traces/") == "http://c:4318/v1/traces"
    assert otlp_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert otlp_configured({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert not otlp_configured({"OTEL_SERVICE_NAME": "x"})


# -- redaction --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "secret"), [
    (f"OPENAI_API_KEY={FAKE_OPENAI}", FAKE_OPENAI),
    ("x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"),
    (f"git remote https://{FAKE_GITHUB}@github.com/o/r", FAKE_GITHUB),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("SLACK=xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("Authorization: Bearer eyJhbGciOi.JIUzI1NiIsInR5cCI6.IkpXVCJ9abc", "eyJhbGciOi"),
    ("password=hunter22 user=bob", "hunter22"),
    ('{"client_secret": "s3cr3t-value"}', "s3cr3t-value"),
    ("session=" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF"),
])
def test_redact_masks_credential_shapes(text: str, secret: str):
    out = redact(text, {})
    assert secret not in out and MASK in out


def test_redact_keeps_ordinary_text_and_hashes():
    for text in ("input_tokens: 1234 max_tokens=4096", "see http://example.com/a/b",
                 "base_hash=" + "ab" * 32, "total += item.price * item.quantity",
                 "Tokens: 1200 in"):
        assert redact(text, {}) == text


def test_redact_masks_secret_env_values_and_secret_keys_in_trees():
    env = {ENV_SECRET_NAME: ENV_SECRET, "MY_DB_PASSWORD": "pw-0987654", "HOME": "/root/xyz",
           "DEBUG": "1"}
    value = {"args": {"command": f"curl -u me:{ENV_SECRET} x", "api_key": "k",
                      "headers": {"Authorization": "Basic Zm9v"}, "n": 3},
             "lines": ["db pw-0987654 at /root/xyz", None, True]}
    out = redact(value, env)
    assert out == {"args": {"command": f"curl -u me:{MASK} x", "api_key": MASK,
                            "headers": {"Authorization": MASK}, "n": 3},
                   "lines": [f"db {MASK} at /root/xyz", None, True]}
    assert value["args"]["api_key"] == "k", "the input is not mutated"


def test_a_run_whose_tool_output_holds_keys_shows_them_redacted(tmp_path: Path):
    golden = tmp_path / "leaky"
    (golden / "fixture").mkdir(parents=True)
    (golden / "fixture" / "settings.env").write_text(
        f"OPENAI_API_KEY={FAKE_OPENAI}\nGITHUB={FAKE_GITHUB}\nSERVICE={ENV_SECRET}\n")
    (golden / "task.yaml").write_text(
        f"prompt: Check the settings.\nmachine: {AGENT}\napproval: policy\n")
    (golden / "turns.yaml").write_text(textwrap.dedent(f"""\
        - text: "Reading the settings; the key I was given is {FAKE_OPENAI}."
          tool_calls:
            - {{name: read_file, args: {{path: settings.env}}}}
            - {{name: search_text, args: {{pattern: "{FAKE_GITHUB}"}}}}
        - text: "The settings hold keys; they should not be committed."
        """))
    proc, db = run_demo(tmp_path, "--golden", str(golden),
                        env={ENV_SECRET_NAME: ENV_SECRET})
    run_id = json.loads(proc.stdout)["run_id"]
    written = (db.parent / "traces" / f"{run_id}.json").read_text()
    store = SqliteStore(db)
    try:
        assert FAKE_OPENAI in json.dumps([e.payload for e in store.events(run_id)]), (
            "the rows keep what happened; only the trace is redacted")
        os.environ[ENV_SECRET_NAME] = ENV_SECRET
        try:
            trace = build_trace(store, run_id)
        finally:
            del os.environ[ENV_SECRET_NAME]
    finally:
        store.close()
    text = trace_text(trace)
    for rendered in (written, json.dumps(trace), text):
        for secret in (FAKE_OPENAI, FAKE_GITHUB, ENV_SECRET):
            assert secret not in rendered
        assert MASK in rendered
    read = next(s for s in trace["spans"] if s["name"] == "execute_tool read_file")
    assert f"OPENAI_API_KEY={MASK}" in read["call"]["output"]
    search = next(s for s in trace["spans"] if s["name"] == "execute_tool search_text")
    assert search["call"]["arguments"] == {"pattern": MASK}


def test_every_field_of_the_run_is_redacted_once_spans_are_made(tmp_path: Path):
    """Notes, errors, names and payload fields the builder does not redact where they enter
    are redacted when the span is written; what it redacted on entry is not changed again."""
    store = SqliteStore(tmp_path / "x.db")
    info = RunInfo("r-leak", "review_changes", str(ROOT / "machines" / "review_changes.yaml"),
                   "", "running", "start", str(tmp_path), 100.0, 100.0, 0, 0, 0, 0.0, {})
    store.create_run(info, RunState("r-leak", "review_changes", "start"),
                     StepBegin(0, "start", "run_tool", 100.0))
    store.commit_step("r-leak", StepCommit(0, "start", "ok", "next", 101.5, {}, (), 0,
                                           RunState("r-leak", "x", "y").usage,
                                           note=f"token={FAKE_GITHUB}",
                                           next_step=StepBegin(1, "next", "run_tool", 101.5)))
    store.append_event("r-leak", 1, "model_call", {
        "model": "m", "text": f"key {FAKE_OPENAI}", "response_id": FAKE_OPENAI,
        "tool_calls": [{"id": "c1", "name": "t", "args": {"password": "hunter2hunter2"}}]},
        101.6)
    store.append_event("r-leak", 1, "tool_call", {
        "call_id": "c1", "tool": "t", "args": {"q": FAKE_GITHUB}, "content": FAKE_OPENAI,
        "is_error": True, "path": f"secret={FAKE_OPENAI}"}, 101.7)
    store.end_step("r-leak", 1, "failed", f"crashed with {FAKE_OPENAI}", 101.8)
    store.set_status("r-leak", "failed", f"error: {FAKE_GITHUB}")
    trace = build_trace(store, "r-leak")
    store.close()
    rendered = json.dumps(trace)
    for secret in (FAKE_OPENAI, FAKE_GITHUB, "hunter2hunter2"):
        assert secret not in rendered
    step = next(s for s in trace["spans"] if s["name"] == "step next")
    assert step["error"] == f"crashed with {MASK}"
    assert trace["spans"][1]["attributes"]["turnstile.note"] == f"token={MASK}"
    chat = next(s for s in trace["spans"] if s["kind"] == "chat")
    assert chat["attributes"]["gen_ai.response.id"] == MASK
    assert chat["call"]["text"] == f"key {MASK}"
    tool = next(s for s in trace["spans"] if s["kind"] == "tool")
    assert tool["call"]["output"] == MASK and tool["call"]["path"] == f"secret={MASK}"
    assert tool["error"] == MASK and trace["run"]["error"] == f"error: {MASK}"


# -- rows that are not a finished run ----------------------------------------------------


def test_a_run_without_events_is_one_run_span_and_its_step(tmp_path: Path):
    store = SqliteStore(tmp_path / "x.db")
    info = RunInfo("r-empty", "review_changes", str(ROOT / "machines" / "review_changes.yaml"),
                   "", "running", "start", str(tmp_path), 100.0, 100.0, 0, 0, 0, 0.0, {})
    store.create_run(info, RunState("r-empty", "review_changes", "start"),
                     StepBegin(0, "start", "run_tool", 100.0))
    store.commit_step("r-empty", StepCommit(0, "start", "ok", "next", 101.5, {}, (), 0,
                                            RunState("r-empty", "x", "y").usage,
                                            next_step=StepBegin(1, "next", "noop", 101.5)))
    trace = build_trace(store, "r-empty")
    store.close()
    kinds = [(s["kind"], s["name"]) for s in trace["spans"]]
    assert kinds == [("run", "invoke_workflow review_changes"), ("step", "step start"),
                     ("step", "step next")]
    assert trace["spans"][1]["duration_s"] == 1.5
    assert trace["run"]["status"] == "crashed" and trace["spans"][0]["status"] == "unset"
    assert trace["spans"][2]["status"] == "unset"
    assert trace["run"]["totals"]["cost_usd"] == 0


def _write_turns(store: SqliteStore, run_id: str, rows: list[tuple[str, str, str, list[Any]]],
                 *, rebegin: dict[int, float] | None = None) -> None:
    """Steps ``(state, trigger, dest, [(kind, payload, at)])`` written as the runner would."""
    t0 = 1000.0
    info = RunInfo(run_id, "coding_agent", str(AGENT), "", "running", rows[0][0], "/w", t0, t0,
                   0, 0, 0, 0.0, {})
    store.create_run(info, RunState(run_id, "coding_agent", rows[0][0]),
                     StepBegin(0, rows[0][0], rows[0][0], t0))
    usage = RunState(run_id, "x", "y").usage
    for seq, (state, trigger, dest, events) in enumerate(rows):
        for kind, payload, at in events:
            store.append_event(run_id, seq, kind, payload, at)
        if seq in (rebegin or {}):
            store.begin_step(run_id, StepBegin(seq, state, state, (rebegin or {})[seq]))
        end = max([t0 + seq + 0.9, *(at for _, _, at in events)])
        if trigger == "-":  # the step that failed
            store.end_step(run_id, seq, "failed", "model failed after 2 retries", end)
            store.set_status(run_id, "failed", "model failed after 2 retries")
            return
        store.commit_step(run_id, StepCommit(seq, state, trigger, dest, end, {}, (), 0, usage,
                                             next_step=StepBegin(seq + 1, dest, dest, end)))


def _model_call(at: float, *, retries: int = 0, calls: tuple[str, ...] = ()) -> tuple:
    return ("model_call", {"provider": "openai", "model": "gpt-x", "input_tokens": 10,
                           "output_tokens": 5, "cost_usd": None, "duration_s": 0.5,
                           "retries": retries, "finish_reason": "tool_calls",
                           "tool_calls": [{"id": c, "name": "write_file", "args": {}}
                                          for c in calls], "text": ""}, at)


def test_retries_superseded_attempts_denials_and_a_failed_step(tmp_path: Path):
    store = SqliteStore(tmp_path / "x.db")
    retry = ("model_retry", {"attempt": 1, "reason": "HTTP 429", "wait_s": 0.1}, 0.0)
    deny = ("approval", {"call_id": "c1", "tool": "write_file", "decision": "deny",
                         "decided_by": "deny-mode", "risk": "write", "reason": "no",
                         "args": {"path": "a"}}, 2.5)
    rows = [
        # step 0 ran twice: a model call before the crash, the step begun again, a second call
        ("call_model", "tool_calls", "await_approval",
         [(retry[0], retry[1], 1000.2), _model_call(1000.6, retries=1, calls=("c0",)),
          _model_call(1000.95, calls=("c1",))]),
        ("await_approval", "all_denied", "call_model",
         [(deny[0], deny[1], 1001.5)]),
        ("call_model", "-", "", [(retry[0], retry[1], 1002.2), (retry[0], retry[1], 1002.4)]),
    ]
    _write_turns(store, "r-x", rows, rebegin={0: 1000.7})
    trace = build_trace(store, "r-x")
    steps = store.steps("r-x")
    store.close()
    assert tree_problems(trace, steps) == []
    chats = [s for s in trace["spans"] if s["kind"] == "chat"]
    assert [c["attributes"]["turnstile.attempt"] for c in chats] == [1, 2]
    assert chats[0]["attributes"]["turnstile.superseded"] is True
    assert "turnstile.superseded" not in chats[1]["attributes"]
    assert [e["name"] for e in chats[0]["events"]] == ["model_retry"]
    assert chats[0]["call"]["retries"] == 1 and chats[0]["call"]["cost_usd"] is None
    assert trace["spans"][1]["attributes"]["turnstile.step.resumed"] is True
    approval = next(s for s in trace["spans"] if s["kind"] == "approval")
    assert approval["call"]["approval"]["decision"] == "deny" and approval["call"]["ok"] is False
    failed = [s for s in trace["spans"] if s["kind"] == "step"][-1]
    assert failed["status"] == "error" and failed["error"] == "model failed after 2 retries"
    assert [e["name"] for e in failed["events"]] == ["model_retry", "model_retry"]
    totals = trace["run"]["totals"]
    assert totals["denials"] == 1 and totals["retries"] == 1 and totals["cost_usd"] is None
    assert totals["model_calls"] == 2 and totals["tool_calls"] == 0
    root = trace["spans"][0]
    assert root["status"] == "error" and root["attributes"]["error.type"] == "run_failed"
    text = trace_text(trace)
    assert "cost unknown" in text and "write_file {\"path\": \"a\"}  deny by deny-mode" in text
    assert "(attempt superseded by resume)" in text and "error: model failed" in text
