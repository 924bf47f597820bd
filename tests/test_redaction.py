"""Redaction by the same rules in every view of a run: trace JSON and text, ``show``, OTLP.

One real run of a golden-task-like folder written here: a settings file holding secrets is
read with ``read_file``, found with ``search_text``, printed by a shell command, and quoted in
the model's text and final answer. The stored rows keep what happened; no view shows a secret.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, engine_env
from otlp_receiver import OtlpReceiver

from engine.store.sqlite import SqliteStore
from engine.tracing.otlp import export_otlp
from engine.tracing.redact import MASK, looks_random, redact
from engine.tracing.trace import build_trace, trace_text

AGENT = ROOT / "machines" / "coding_agent.yaml"
OPENAI_KEY = "sk-proj-Zq8vN3xLr2TbW9yKc4HdFj7PmQs1VuXa"
DB_PASSWORD = "correct-horse-battery"
SIGNING = "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF"
SECRETS = (OPENAI_KEY, DB_PASSWORD, SIGNING)
LONG_NAME = "test_show_counts_every_tool_call_of_a_run"
SETTINGS = (f"OPENAI_API_KEY={OPENAI_KEY}\n"
            f'DB_PASSWORD = "{DB_PASSWORD}"\n'
            f"SIGNING_SALT={SIGNING}\n"
            f"key: {LONG_NAME}\n")


def engine(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd,
                          env=engine_env({"PYTHONPATH": str(ROOT)}), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, f"engine {args} exited {proc.returncode}:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A finished run whose tool results and model text all carry the settings' secrets."""
    tmp = tmp_path_factory.mktemp("leaky")
    golden = tmp / "task"
    (golden / "fixture").mkdir(parents=True)
    (golden / "fixture" / "settings.env").write_text(SETTINGS)
    (golden / "task.yaml").write_text(
        f"prompt: Audit the settings.\nmachine: {AGENT}\napproval: auto\n")
    (golden / "turns.yaml").write_text(textwrap.dedent(f"""\
        - text: "Looking for keys; the one I was handed is {OPENAI_KEY}."
          tool_calls:
            - {{name: search_text, args: {{pattern: "PASSWORD|SALT|KEY"}}}}
            - {{name: read_file, args: {{path: settings.env}}}}
            - {{name: run_shell, args: {{command: "cat settings.env"}}}}
        - text: "Found DB_PASSWORD={DB_PASSWORD} and SIGNING_SALT={SIGNING}: rotate them."
        """))
    db = tmp / "engine.db"
    proc = engine("run", str(AGENT), "--golden", str(golden), "--db", str(db), "--json",
                  "--approval", "auto", cwd=tmp)
    yield db, json.loads(proc.stdout)["run_id"]


def tool_output(trace: dict[str, Any], tool: str) -> str:
    span = next(s for s in trace["spans"] if s["name"] == f"execute_tool {tool}")
    return str(span["call"]["output"])


def assert_clean(rendered: str, where: str, *, masked: bool = True) -> None:
    for secret in SECRETS:
        assert secret not in rendered, f"{where} shows {secret!r}"
    assert MASK in rendered or not masked, where


def test_rows_keep_the_secrets_the_views_do_not(leaky: tuple[Path, str]) -> None:
    db, run_id = leaky
    store = SqliteStore(db)
    try:
        rows = json.dumps([e.payload for e in store.events(run_id)])
        trace = build_trace(store, run_id)
    finally:
        store.close()
    for secret in SECRETS:
        assert secret in rows, "the event rows keep what happened"
    assert_clean(json.dumps(trace), "trace JSON")
    assert_clean(trace_text(trace), "trace text", masked=False)
    assert_clean((db.parent / "traces" / f"{run_id}.json").read_text(), "trace file")


@pytest.mark.parametrize("tool", ["search_text", "read_file", "run_shell"])
def test_every_tool_result_is_redacted_by_the_same_rules(leaky: tuple[Path, str],
                                                         tool: str) -> None:
    db, run_id = leaky
    store = SqliteStore(db)
    try:
        out = tool_output(build_trace(store, run_id), tool)
    finally:
        store.close()
    assert_clean(out, tool)
    assert f"OPENAI_API_KEY={MASK}" in out and f"SIGNING_SALT={MASK}" in out
    assert f'DB_PASSWORD = "{MASK}' in out
    if tool != "search_text":
        assert f"key: {LONG_NAME}" in out, "an identifier after 'key:' is not a secret"


def test_model_text_and_final_answer_are_redacted(leaky: tuple[Path, str]) -> None:
    db, run_id = leaky
    store = SqliteStore(db)
    try:
        trace = build_trace(store, run_id)
    finally:
        store.close()
    chats = [s["call"]["text"] for s in trace["spans"] if s["kind"] == "chat"]
    assert len(chats) == 2
    assert chats[0] == f"Looking for keys; the one I was handed is {MASK}."
    assert chats[1] == f"Found DB_PASSWORD={MASK} and SIGNING_SALT={MASK}: rotate them."


def test_show_json_and_text_are_redacted(leaky: tuple[Path, str]) -> None:
    db, run_id = leaky
    shown = engine("show", run_id, "--db", str(db), "--json", cwd=db.parent).stdout
    assert_clean(shown, "show --json")
    answer = json.loads(shown)["final_answer"]
    assert answer == f"Found DB_PASSWORD={MASK} and SIGNING_SALT={MASK}: rotate them."
    assert_clean(engine("show", run_id, "--db", str(db), cwd=db.parent).stdout, "show")


def test_otlp_export_is_redacted(leaky: tuple[Path, str]) -> None:
    db, run_id = leaky
    store = SqliteStore(db)
    try:
        with OtlpReceiver() as receiver:
            sent = export_otlp(store, run_id, receiver.endpoint)
    finally:
        store.close()
    assert sent == len(receiver.spans) > 0
    assert_clean(json.dumps(receiver.spans, default=str), "OTLP spans")


def test_secret_env_values_are_redacted_in_show(leaky: tuple[Path, str]) -> None:
    """A value of a secret-named variable is masked wherever it appears, here in the task."""
    db, run_id = leaky
    os.environ["TURNSTILE_TEST_AUDIT_TOKEN"] = "Audit the settings"
    try:
        store = SqliteStore(db)
        try:
            from engine.cli.show import show_json
            shown = show_json(store, run_id)
        finally:
            store.close()
    finally:
        del os.environ["TURNSTILE_TEST_AUDIT_TOKEN"]
    assert shown["config"]["task"] == f"{MASK}."


# -- the rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (f'config.py:3:password = "{DB_PASSWORD}"', f'config.py:3:password = "{MASK}"'),
    (f"settings.env:1:OPENAI_API_KEY={SIGNING}", f"settings.env:1:OPENAI_API_KEY={MASK}"),
    ("a/b.env-2-DB_SECRET=abcdef", f"a/b.env-2-DB_SECRET={MASK}"),
    (f"app.py:7:    headers = {{'x-api-key': '{DB_PASSWORD}'}}",
     f"app.py:7:    headers = {{'x-api-key': '{MASK}'}}"),
])
def test_search_result_prefixes_hide_no_pair(text: str, expected: str) -> None:
    assert redact(text, {}) == expected


@pytest.mark.parametrize("value", [
    LONG_NAME, "TestShowCountsEveryToolCallOfARun", "src/engine/actions/tool_exec_module.py",
    "MAX_CONCURRENT_RUNS_PER_WORKER_PROCESS", "test_case_2_reports_the_second_call_ok",
    "test_sha256_of_utf8_file_is_stable_2", "getHTTPResponseCodeForURLAndRequestID",
    "LANGSMITH_SANDBOX_CALLBACK_SIGNING_JWK", "spring-set-inverse-stretch-strength",
])
def test_long_identifiers_are_not_secrets(value: str) -> None:
    assert not looks_random(value)
    for text in (f"key: {value}", f"name={value}", f'"id": "{value}"'):
        assert redact(text, {}) == text


@pytest.mark.parametrize("value", [
    SIGNING, "Zq8vN3xLr2TbW9yKc4HdFj7PmQs1VuXa", "k8s9d7f6g5h4j3k2l1m0n9b8v7c6x5z4",
    "0123456789abcdef0123456789abcdef", "bG9uZ3JhbmRvbWJhc2U2NHRva2VuMTIzNDU2Nzg5MA==",
    "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", "qwRtZxcVbnMkLpJhGfDsAqWeRtYuIoPz",
])
def test_random_tokens_after_any_key_are_secrets(value: str) -> None:
    assert looks_random(value)
    assert redact(f"key: {value}", {}) == f"key: {MASK}"
    assert redact(f"commit: {value}", {}) == f"commit: {value}", "hashes stay readable"


def test_a_urls_password_and_a_private_key_are_redacted() -> None:
    text = ("connect postgres://app:s3cr3t-pw@db:5432/x then\n-----BEGIN RSA PRIVATE KEY-----\n"
            "MIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nand https://example.com/a:b")
    out = redact(text)
    assert "s3cr3t-pw" not in out and "MIIEowIBAAKCAQEA" not in out
    assert f"postgres://app:{MASK}@db:5432/x" in out
    assert out.endswith(f"{MASK}\nand https://example.com/a:b")
