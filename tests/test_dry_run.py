"""One truth for what a write changes: the approval preview, the ledger's planned post-image and
the file after the call all come from the tool's own dry run, for every write tool and option."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.actions.ledger import plan_file_change
from engine.permissions.approvals import Approver
from engine.permissions.policy import Policy, PolicyContext, decide
from engine.tooling import ToolContext, ToolRegistry, ToolResult
from engine.tooling.invoke import invoke
from engine.vocabulary.state import ToolCall
from tests.conftest import ROOT, engine_env
from turnstile_tools import SEEN_HASHES_KEY, builtin_specs
from turnstile_tools.patch import apply_diff

SPECS = {s.name: s for s in builtin_specs()}
ORIGINAL = "alpha = 1\nbeta = 1\nalpha = 1\n\ndef f():\n    return alpha\n" + "pad\n" * 12 + \
    "tail = 'alpha'\n"


@dataclass(frozen=True)
class Case:
    """One write call on ``target`` (created from ``before`` unless None)."""

    tool: str
    args: dict[str, Any]
    before: bytes | None = ORIGINAL.encode()
    seen: bool = True
    """The agent has read the file (its hash is in the run's data)."""
    extra: dict[str, str] = field(default_factory=dict)


def _diff(*hunks: str) -> str:
    return "--- a/m.py\n+++ b/m.py\n" + "".join(hunks)


CASES = {
    "write_file create": Case("write_file", {"path": "pkg/new.py", "content": "x = 1\ny = 2\n"},
                              before=None, seen=False),
    "write_file create without final newline": Case(
        "write_file", {"path": "n.txt", "content": "no newline"}, before=None, seen=False),
    "write_file overwrite (seen)": Case("write_file", {"path": "m.py", "content": "short\n"}),
    "write_file overwrite (base_hash)": Case(
        "write_file", {"path": "m.py", "content": "alpha = 2\n",
                       "base_hash": hashlib.sha256(ORIGINAL.encode()).hexdigest()},
        seen=False),
    "write_file overwrite to empty": Case("write_file", {"path": "m.py", "content": ""}),
    "edit_file old/new": Case("edit_file", {"path": "m.py", "old": "beta = 1",
                                            "new": "beta = 2\ngamma = 3"}),
    "edit_file replace_all": Case("edit_file", {"path": "m.py", "old": "alpha",
                                                "new": "omega", "replace_all": True}),
    "edit_file replace_all multi-line": Case(
        "edit_file", {"path": "m.py", "old": "alpha = 1\n", "new": "", "replace_all": True}),
    "edit_file old/new on CRLF file": Case(
        "edit_file", {"path": "m.py", "old": "beta = 1\nalpha", "new": "beta = 9\nalpha"},
        before=ORIGINAL.replace("\n", "\r\n").encode()),
    "edit_file diff, several hunks": Case("edit_file", {"path": "m.py", "diff": _diff(
        "@@ -1,3 +1,3 @@\n alpha = 1\n-beta = 1\n+beta = 2\n alpha = 1\n",
        "@@ -5,2 +5,3 @@\n def f():\n-    return alpha\n+    # doubled\n+    return 2 * alpha\n",
        "@@ -19,1 +20,1 @@\n-tail = 'alpha'\n+tail = 'omega'\n\\ No newline at end of file\n",
    )}),
    "edit_file diff, wrong line numbers": Case("edit_file", {"path": "m.py", "diff": _diff(
        "@@ -40,2 +40,2 @@\n def f():\n-    return alpha\n+    return None\n")}),
}


def _ws(tmp_path: Path, case: Case) -> tuple[Path, dict[str, Any]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / str(case.args["path"])
    seen: dict[str, str] = {}
    if case.before is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.before)
        if case.seen:
            seen[str(case.args["path"])] = hashlib.sha256(case.before).hexdigest()
    return ws, {SEEN_HASHES_KEY: seen}


def _after_preview(before: bytes | None, preview: str) -> bytes:
    """The file the person was shown: the preview's patch applied to the content before."""
    text = "" if before is None else before.decode()
    return apply_diff(text, preview).encode()


@pytest.mark.parametrize("name", sorted(CASES))
def test_preview_plan_and_result_agree(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    ws, run_data = _ws(tmp_path, case)
    spec = SPECS[case.tool]
    call = ToolCall("c1", case.tool, case.args)

    decision = decide(call, spec, PolicyContext(ws, Policy(), {}, run_data=run_data))
    plan = plan_file_change(spec, call, ws, run_data)
    assert decision.decision == "ask" and "would fail" not in decision.preview
    assert plan is not None and plan.post_hash is not None

    result = anyio.run(invoke, ToolRegistry([spec]), call,
                       ToolContext(workspace=ws, run_data=run_data))
    assert not result.is_error, result.content
    after = (ws / str(case.args["path"])).read_bytes()
    assert _after_preview(case.before, decision.preview) == after
    assert hashlib.sha256(after).hexdigest() == plan.post_hash
    assert plan.base_hash == (None if case.before is None
                              else hashlib.sha256(case.before).hexdigest())


def test_replace_all_preview_shows_every_replacement(tmp_path: Path) -> None:
    case = CASES["edit_file replace_all"]
    ws, run_data = _ws(tmp_path, case)
    d = decide(ToolCall("c1", "edit_file", case.args), SPECS["edit_file"],
               PolicyContext(ws, Policy(), {}, run_data=run_data))
    lines = d.preview.splitlines()
    added = [ln for ln in lines if ln.startswith("+") and "omega" in ln]
    removed = [ln for ln in lines if ln.startswith("-") and "alpha" in ln]
    assert len(added) == len(removed) == ORIGINAL.count("alpha") == 4


def test_every_write_tool_declares_a_dry_run_and_is_covered() -> None:
    writers = {s.name for s in builtin_specs() if s.side_effects and s.risk == "write"}
    assert writers == {s.name for s in builtin_specs() if s.dry_run is not None}
    assert writers == {c.tool for c in CASES.values()}


def test_a_failing_call_previews_its_failure_and_plans_no_post_image(tmp_path: Path) -> None:
    case = CASES["edit_file old/new"]
    ws, run_data = _ws(tmp_path, case)
    args = {"path": "m.py", "old": "alpha", "new": "x"}  # ambiguous without replace_all
    call = ToolCall("c1", "edit_file", args)
    d = decide(call, SPECS["edit_file"], PolicyContext(ws, Policy(), {}, run_data=run_data))
    assert d.preview.startswith("edit_file would fail: edit_file m.py: `old` occurs 4 times")
    plan = plan_file_change(SPECS["edit_file"], call, ws, run_data)
    assert plan is not None and plan.post_hash is None
    result = anyio.run(invoke, ToolRegistry([SPECS["edit_file"]]), call,
                       ToolContext(workspace=ws, run_data=run_data))
    assert result.is_error and (ws / "m.py").read_bytes() == case.before


def test_approver_previews_with_the_hashes_the_agent_has_seen(tmp_path: Path) -> None:
    case = CASES["write_file overwrite (seen)"]
    ws, run_data = _ws(tmp_path, case)
    approver = Approver("auto", PolicyContext(ws, Policy(), {}))
    call = ToolCall("c1", "write_file", case.args)
    blind, = anyio.run(approver.decide_batch, [call], ToolRegistry([SPECS["write_file"]]), ())
    seen, = anyio.run(approver.decide_batch, [call], ToolRegistry([SPECS["write_file"]]), (),
                      run_data)
    assert blind.preview.startswith("write_file would fail:")
    assert seen.preview.startswith("--- a/m.py\n+++ b/m.py") and "+short" in seen.preview


def test_tools_without_a_dry_run_plan_nothing(tmp_path: Path) -> None:
    call = ToolCall("c1", "run_shell", {"command": "true"})
    assert plan_file_change(SPECS["run_shell"], call, tmp_path, {}) is None
    dry_run = SPECS["write_file"].dry_run
    assert dry_run is not None
    planned = dry_run({"path": "../out.txt", "content": "x"}, ToolContext(workspace=tmp_path))
    assert isinstance(planned, ToolResult) and "outside the workspace" in planned.content


def test_a_batch_previews_each_write_on_top_of_the_earlier_ones(tmp_path: Path) -> None:
    case = CASES["edit_file old/new"]
    ws, run_data = _ws(tmp_path, case)
    first = ToolCall("c1", "edit_file", {"path": "m.py", "old": "beta = 1", "new": "beta = 2"})
    second = ToolCall("c2", "edit_file", {"path": "m.py", "old": "beta = 2\nalpha",
                                          "new": "beta = 3\nalpha"})  # only after the first
    tools = ToolRegistry([SPECS["edit_file"]])
    a1, a2 = anyio.run(Approver("auto", PolicyContext(ws, Policy(), {})).decide_batch,
                       [first, second], tools, (), run_data)
    assert "would fail" not in a2.preview
    data: dict[str, Any] = dict(run_data)
    shown = case.before
    for call, approval in ((first, a1), (second, a2)):
        result = anyio.run(invoke, tools, call, ToolContext(workspace=ws, run_data=data))
        assert not result.is_error, result.content
        data[SEEN_HASHES_KEY] = {"m.py": (result.data or {})["result_hash"]}
        after = (ws / "m.py").read_bytes()
        shown = _after_preview(shown, approval.preview)
        assert shown == after
        assert approval.post_images == {"m.py": hashlib.sha256(after).hexdigest()}
    assert b"beta = 3" in (ws / "m.py").read_bytes()


def test_a_write_that_would_not_write_what_was_approved_is_not_run(tmp_path: Path) -> None:
    """The edit was approved on top of a write that was then refused: it is not run."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text("a = 0\n")
    turns = tmp_path / "turns.yaml"
    turns.write_text(
        "- tool_calls: [{name: read_file, args: {path: m.py}}]\n"
        "- tool_calls:\n"
        "    - {name: write_file, args: {path: m.py, content: \"a = 1\\nb = 2\\n\"}}\n"
        "    - {name: edit_file, args: {path: m.py, old: a, new: z, replace_all: true}}\n"
        "- text: done\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - {decision: allow, tool: edit_file}\n")
    db = tmp_path / "engine.db"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(ROOT / "machines" / "coding_agent.yaml"),
         "--task", "edit", "--workspace", str(ws), "--model", f"scripted:{turns}",
         "--approval", "policy", "--policy", str(policy), "--db", str(db), "--json"],
        cwd=tmp_path, env=engine_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "m.py").read_text() == "a = 0\n"
    audit = subprocess.run([sys.executable, "-m", "engine", "audit",
                            json.loads(proc.stdout)["run_id"], "--json", "--db", str(db)],
                           cwd=tmp_path, env=engine_env(), capture_output=True, text=True,
                           timeout=60)
    decided = {row["tool"]: row["decision"] for row in json.loads(audit.stdout)}
    assert decided == {"read_file": "allow", "write_file": "deny", "edit_file": "allow"}
    with sqlite3.connect(db) as conn:
        events = " ".join(r[0] for r in conn.execute("SELECT payload FROM events"))
    assert "no longer write what was approved" in events
