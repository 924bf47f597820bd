"""The declared contracts: run-data keys, event kinds, and the tool spec as the engine's only
knowledge of a tool. Runs are driven in-process on real SQLite files with the real tools and
the demo task's scripted model."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.actions.base import ActionInfo
from engine.actions.ledger import plan_file_change
from engine.actions.registry import ACTIONS
from engine.core.runner import RunResult
from engine.permissions.approvals import Approver
from engine.permissions.policy import PolicyContext, decide
from engine.session.compose import RunRequest, execute, prepare_new
from engine.store.sqlite import SqliteStore, row_key
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import FileChange, ToolContext, ToolResult
from engine.vocabulary.errors import ToolError, UndeclaredDataError
from engine.vocabulary.events import PAYLOADS, EventKind, kind_of
from engine.vocabulary.run_data import KEYS, TOOL_KEYS, check_updates
from engine.vocabulary.state import Outcome, ToolCall
from turnstile_tools import builtin_specs

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
DEMO = ROOT / "golden_tasks" / "demo_fix_test"
MACHINE = ROOT / "machines" / "coding_agent.yaml"
BUILTIN = {s.name: s for s in builtin_specs()}


def _quiet(kind: str, payload: Mapping[str, Any]) -> None:
    return None


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "engine.db")
    yield s
    s.close()


def _drive(store: SqliteStore, tmp_path: Path,
           actions: Mapping[str, ActionInfo] | None = None) -> tuple[str, RunResult]:
    """The demo task, start to end, in this process; ``actions`` replaces the registry."""
    prepared = prepare_new(RunRequest(machine=MACHINE, golden=DEMO, approval="policy"), store,
                           db_path=tmp_path / "engine.db", observer=_quiet, prompter=None)
    if actions is not None:
        prepared.runner.actions = actions
    result = anyio.run(lambda: execute(prepared))
    return prepared.state.run_id, result


# ---------------------------------------------------------------- run-data keys


def test_a_completed_run_holds_only_declared_keys_under_their_stored_names(
        store: SqliteStore, tmp_path: Path) -> None:
    run_id, result = _drive(store, tmp_path)
    assert result.status == "completed", result.error
    data = store.load_state(run_id).data
    assert set(data) <= set(KEYS), set(data) - set(KEYS)
    # the names persisted runs use: a rename here would orphan every stored run's data
    assert {"task", "plan", "file_hashes", "files_changed", "final_answer"} <= set(data)


def test_the_runner_refuses_an_update_to_a_key_the_action_did_not_declare(
        store: SqliteStore, tmp_path: Path) -> None:
    plan = ACTIONS["plan"]
    narrowed = {**ACTIONS, "plan": dataclasses.replace(plan, writes=plan.writes - {"plan"})}
    run_id, result = _drive(store, tmp_path, narrowed)
    assert result.status == "failed"
    assert result.error is not None
    assert "action plan" in result.error and "'plan'" in result.error, result.error
    assert "plan" not in store.load_state(run_id).data  # nothing of the step was committed
    assert store.get_run(run_id).status == "failed"


def test_the_runner_refuses_a_value_of_the_wrong_type(store: SqliteStore,
                                                      tmp_path: Path) -> None:
    plan = ACTIONS["plan"]

    async def counts_in_words(ctx: Any, params: Any) -> Outcome:
        out = await plan.fn(ctx, params)
        return dataclasses.replace(out, updates={**out.updates, "model_turns": "three"})

    rogue = dataclasses.replace(plan, fn=counts_in_words, writes=plan.writes | {"model_turns"})
    run_id, result = _drive(store, tmp_path, {**ACTIONS, "plan": rogue})
    assert result.status == "failed"
    assert "'model_turns' as str" in (result.error or ""), result.error
    assert "model_turns" not in store.load_state(run_id).data


def test_the_stored_names_of_the_keys_never_change() -> None:
    """Persisted runs hold these names as JSON keys: renaming one orphans their data."""
    assert set(KEYS) == {
        "task", "history", "plan", "plan_text", "pending_calls", "approvals", "granted", "results",
        "files_changed", "file_hashes", "planned_files", "context", "model_turns",
        "final_answer", "refusal", "stop_reason", "counters", "inputs"}


def test_every_action_declares_only_registered_keys() -> None:
    for info in ACTIONS.values():
        assert info.reads <= KEYS.keys(), info.name
        assert info.writes <= KEYS.keys(), info.name
    with pytest.raises(UndeclaredDataError, match="no_such_key"):
        check_updates({"no_such_key": 1}, frozenset({"no_such_key"}), "test")
    with pytest.raises(UndeclaredDataError, match="planned_files"):  # dry runs only
        check_updates({"planned_files": {}}, frozenset({"planned_files"}), "test")


def test_a_tool_records_only_the_keys_it_declares(tmp_path: Path) -> None:
    update_plan = BUILTIN["update_plan"]
    result = ToolResult("ok", data={"plan": [{"step": "x", "status": "done"}]})
    assert update_plan.record({}, result) == {"plan": [{"step": "x", "status": "done"}]}
    silent = dataclasses.replace(update_plan, records_keys=frozenset())
    with pytest.raises(UndeclaredDataError, match="tool update_plan"):
        silent.record({}, result)
    with pytest.raises(ToolError, match="records_keys"):
        dataclasses.replace(update_plan, records_keys=frozenset({"task"}))
    assert {k for s in BUILTIN.values() for k in s.records_keys} <= TOOL_KEYS


# ---------------------------------------------------------------- event kinds


def test_event_kinds_round_trip_through_the_store_as_plain_strings(
        store: SqliteStore, tmp_path: Path) -> None:
    run_id, result = _drive(store, tmp_path)
    assert result.status == "completed", result.error
    store.append_event(run_id, 99, EventKind.TOOL_CALL, {"call_id": "x"}, 1.0)
    store.flush()
    with sqlite3.connect(tmp_path / "engine.db") as raw:
        (rid,) = raw.execute("SELECT rid FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        raw.execute("INSERT INTO events (key, run_id, seq, step, kind, at, payload) "
                    "VALUES (?, ?, 100000, 99, 'kind_of_a_newer_engine', 2.0, '{}')",
                    (row_key(rid, 100000), run_id))
        stored = raw.execute("SELECT kind, typeof(kind) FROM events WHERE run_id = ? AND "
                             "step = 99 ORDER BY seq", (run_id,)).fetchall()
    assert stored == [("tool_call", "text"), ("kind_of_a_newer_engine", "text")]
    events = store.events(run_id)
    last_two = events[-2:]
    assert last_two[0].kind is EventKind.TOOL_CALL
    assert last_two[1].kind == "kind_of_a_newer_engine"  # unknown kinds still read
    # every kind the demo run recorded is declared, with a payload type
    recorded = {e.kind for e in events[:-1]}
    assert recorded <= set(EventKind), recorded - set(EventKind)
    assert {EventKind.MODEL_CALL, EventKind.TOOL_CALL, EventKind.APPROVAL} <= recorded
    assert len(store.events(run_id, [EventKind.TOOL_CALL])) == len(
        store.events(run_id, ["tool_call"]))


def test_every_event_kind_has_a_payload_type() -> None:
    assert set(PAYLOADS) == set(EventKind)
    assert kind_of("model_call") is EventKind.MODEL_CALL
    assert kind_of("nope") == "nope"


# ---------------------------------------------------------------- the dry run is the preview


def _planted(after: bytes) -> Any:
    """A dry run that plans ``after`` for ``target.txt`` whatever the arguments say."""

    def dry_run(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileChange, ...]:
        before = (ctx.workspace / "target.txt").read_bytes()
        return (FileChange("target.txt", before, after, f"PLANTED PATCH {after!r}"),)

    return dry_run


def test_the_approval_preview_post_image_and_ledger_plan_all_come_from_the_dry_run(
        tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_bytes(b"old\n")
    spec = dataclasses.replace(BUILTIN["write_file"], dry_run=_planted(b"planted\n"))
    call = ToolCall("c1", "write_file", {"path": "target.txt", "content": "what the args say"})
    ctx = PolicyContext(tmp_path.resolve())
    decision = decide(call, spec, ctx)
    assert decision.preview == "PLANTED PATCH b'planted\\n'"
    assert [c.after for c in decision.changes] == [b"planted\n"]
    approver = Approver("auto", ctx)
    (approval,) = anyio.run(lambda: approver.decide_batch([call], ToolRegistry([spec]), ()))
    assert approval.post_images == {"target.txt": hashlib.sha256(b"planted\n").hexdigest()}
    plan = plan_file_change(spec, call, tmp_path, {})
    assert plan is not None and plan.post_hash == hashlib.sha256(b"planted\n").hexdigest()
    assert plan.patch == "PLANTED PATCH b'planted\\n'"


UNDOES_RECORDED_CHANGES = {"engine/forks/patches.py"}
"""A fork rebuilds a step's workspace by undoing the diffs the run recorded (hash-checked at
both ends); it applies stored diffs and never makes a preview."""


def test_no_engine_module_works_out_a_diff_of_its_own() -> None:
    """Previews and planned post-images come from ``ToolSpec.dry_run`` only."""
    offenders = [str(p.relative_to(ROOT)) for p in ENGINE.rglob("*.py")
                 if re.search(r"unified_diff|make_patch|apply_diff", p.read_text())]
    assert sorted(offenders) == sorted(UNDOES_RECORDED_CHANGES)
    for rel in UNDOES_RECORDED_CHANGES:  # it applies diffs; it makes none
        assert not re.search(r"unified_diff|make_patch", (ROOT / rel).read_text()), rel


# ---------------------------------------------------------------- the engine names no tool

COMPOSITION_IMPORTS = {
    "engine/session/compose.py": {("turnstile_tools", "builtin_specs")},
    "engine/cli/main.py": {("turnstile_tools.project_server", "serve")},
    "engine/forks/patches.py": {("turnstile_tools.patch", "apply_diff")},
}
"""The only imports of the ``tools`` package the engine has: the composition root registers
the built-in specs as a whole; the CLI starts the bundled MCP server; a fork applies recorded
diffs with the edit tools' own applier (the same hunks, the same line-ending rules)."""


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)
            and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}


def scan(root: Path, names: list[str]) -> list[str]:
    """Code (not docstrings or comments) under ``root`` that names a built-in tool or imports
    from the ``tools`` package outside ``COMPOSITION_IMPORTS``."""
    alternatives = "|".join(map(re.escape, names))
    word = re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])")
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstrings(tree)
        allowed = COMPOSITION_IMPORTS.get(rel, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    id(node) not in docs) and (m := word.search(node.value)):
                found.append(f"{rel}:{node.lineno}: names {m.group(1)}")
            elif isinstance(node, ast.Name | ast.Attribute):
                ident = node.id if isinstance(node, ast.Name) else node.attr
                if word.fullmatch(ident):
                    found.append(f"{rel}:{node.lineno}: names {ident}")
            elif isinstance(node, ast.ImportFrom) and node.module and (
                    node.module.split(".")[0] == "turnstile_tools"):
                found += [f"{rel}:{node.lineno}: imports {node.module}.{a.name}"
                          for a in node.names if (node.module, a.name) not in allowed]
            elif isinstance(node, ast.Import):
                found += [f"{rel}:{node.lineno}: imports {a.name}" for a in node.names
                          if a.name.split(".")[0] == "turnstile_tools"]
    return found


def test_the_engine_names_no_built_in_tool() -> None:
    assert scan(ENGINE, list(BUILTIN)) == []


def test_the_scan_finds_a_tool_named_in_engine_code(tmp_path: Path) -> None:
    fake = tmp_path / "engine"
    (fake / "actions").mkdir(parents=True)
    (fake / "actions" / "bad.py").write_text(
        '"""Mentions run_shell in a docstring, which is allowed."""\n'
        'from turnstile_tools.files import record_seen\n'
        'SHELL = frozenset({"run_shell"})\n'
        'def f(call):\n    return call.name == f"edit_file"\n')
    found = scan(fake, list(BUILTIN))
    assert found == ["engine/actions/bad.py:2: imports turnstile_tools.files.record_seen",
                     "engine/actions/bad.py:3: names run_shell",
                     "engine/actions/bad.py:5: names edit_file"], found


def test_actions_import_neither_prices_nor_the_tools_package() -> None:
    for path in (ENGINE / "actions").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                       else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for module in modules:
                assert module != "engine.models.prices", path
                assert module.split(".")[0] != "turnstile_tools", path


def test_a_tool_is_judged_by_what_its_spec_declares(tmp_path: Path) -> None:
    """A renamed shell tool is still judged command by command; a renamed reader by path."""
    ctx = PolicyContext(tmp_path.resolve())
    shell = dataclasses.replace(BUILTIN["run_shell"], name="sh")
    d = decide(ToolCall("c", "sh", {"command": "rm -rf /"}), shell, ctx)
    assert d.decision == "deny" and d.capability == "sh:rm"
    reader = dataclasses.replace(BUILTIN["read_file"], name="cat_file")
    assert decide(ToolCall("c", "cat_file", {"path": "/etc/passwd"}), reader,
                  ctx).decision == "ask"
    assert decide(ToolCall("c", "cat_file", {"path": "notes.txt"}), reader,
                  ctx).decision == "allow"
