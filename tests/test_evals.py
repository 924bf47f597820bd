"""The eval harness: every golden task passes (the regression suite), and every way a task can
fail is reported for that task alone, with a reason that says what was expected and found."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.harness.evals import find_tasks, format_table, run_suite, run_task
from engine.store.base import StepBegin, StepCommit
from engine.store.sqlite import SqliteStore
from engine.tasks.checks import (
    Attempt,
    CheckContext,
    check_names,
    parse_check,
    run_checks,
)
from engine.tasks.golden import load_task
from engine.vocabulary.errors import UsageError
from engine.vocabulary.hints import command
from engine.vocabulary.state import Message, RunInfo, RunState, Usage
from tests.conftest import ROOT, engine_env

GOLDEN = ROOT / "golden_tasks"
FAST_TASK = "search_call_sites"
"""A read-only task without shell commands: the quickest real run."""


def copy_task(name: str, dest: Path, as_name: str | None = None) -> Path:
    """A copy of a bundled task whose machine path still resolves from the copy."""
    folder = dest / (as_name or name)
    shutil.copytree(GOLDEN / name, folder)
    task = folder / "task.yaml"
    task.write_text(task.read_text().replace("machine: machines/", f"machine: {ROOT}/machines/"))
    return folder


# -- the regression suite -------------------------------------------------------------------


@pytest.mark.parametrize("folder", find_tasks(GOLDEN), ids=lambda p: p.name)
def test_golden_task_passes(folder: Path, tmp_path: Path) -> None:
    result = run_task(folder, tmp_path / "engine.db")
    failed = "\n".join(f"{c.name}: {c.message}" for c in result.checks if not c.ok)
    assert result.passed, f"{result.reason}\n{failed}"
    assert result.status is not None and result.steps > 0 and result.tokens > 0


def test_there_is_a_task_per_category() -> None:
    from engine.tasks.golden import load_task

    categories = {load_task(f).category for f in find_tasks(GOLDEN)}
    assert {"file_reading", "code_search", "single_file_edit", "multi_file_edit", "test_fix",
            "permission_denial", "tool_failure_recovery", "checkpoint_resume",
            "workflow"} <= categories


def test_every_bundled_workflow_machine_has_a_task() -> None:
    from engine.tasks.golden import load_task

    used = {load_task(f).machine_path().resolve().name for f in find_tasks(GOLDEN)}
    assert {p.name for p in (ROOT / "machines").glob("*.yaml")} <= used


# -- a task fails alone -----------------------------------------------------------------------


def test_broken_task_yaml_fails_only_that_task(tmp_path: Path) -> None:
    copy_task(FAST_TASK, tmp_path)
    broken = tmp_path / "broken_yaml"
    shutil.copytree(GOLDEN / FAST_TASK / "fixture", broken / "fixture")
    (broken / "task.yaml").write_text("prompt: [unclosed\nchecks: []\n")
    unknown = copy_task(FAST_TASK, tmp_path, "unknown_check")
    (unknown / "task.yaml").write_text(
        (unknown / "task.yaml").read_text().replace("final_answer_contains:", "answer_has:", 1))
    summaries = run_suite(find_tasks(tmp_path), workdir=tmp_path / "work")
    by_name = {s.task: s for s in summaries}
    assert sorted(by_name) == ["broken_yaml", FAST_TASK, "unknown_check"]
    assert by_name[FAST_TASK].passed
    bad = by_name["broken_yaml"].results[0]
    assert not bad.passed and bad.failed_check == "task"
    assert "broken_yaml/task.yaml:2: invalid YAML" in (bad.reason or ""), bad.reason
    wrong = by_name["unknown_check"].results[0]
    assert not wrong.passed
    assert "unknown check 'answer_has'; valid checks: audit_contains, command_succeeds" in (
        wrong.reason or "")


def test_diverging_script_fails_with_script_diverged(tmp_path: Path) -> None:
    folder = copy_task("demo_fix_test", tmp_path)
    turns = folder / "turns.yaml"
    turns.write_text(turns.read_text().replace('tool_result_contains: "FAILED"',
                                               'tool_result_contains: "all 7 tests passed"'))
    result = run_task(folder, tmp_path / "db" / "engine.db")
    assert not result.passed
    assert (result.reason or "").startswith(
        "script diverged at turn 2: expected tool result containing 'all 7 tests passed', got")
    assert result.failed_check == "command_succeeds python3 -m unittest -q"


def test_script_running_out_is_a_divergence(tmp_path: Path) -> None:
    folder = copy_task(FAST_TASK, tmp_path)
    turns = folder / "turns.yaml"
    text = turns.read_text()
    turns.write_text(text[:text.index("- expect: {tool_result_contains: \"reports/monthly.py:14:")])
    result = run_task(folder, tmp_path / "db" / "engine.db")
    assert not result.passed
    assert (result.reason or "").startswith("script diverged: script exhausted: the model was "
                                            "called a 3rd time but the script has 2 turns")


def test_failing_setup_fails_the_task_with_the_command(tmp_path: Path) -> None:
    folder = copy_task(FAST_TASK, tmp_path)
    task = folder / "task.yaml"
    task.write_text(task.read_text() + "setup:\n  - echo preparing\n  - echo no git >&2; exit 7\n")
    result = run_task(folder, tmp_path / "db" / "engine.db")
    assert not result.passed
    assert "setup[2] 'echo no git >&2; exit 7': exit code 7: no git" in (result.reason or "")


def test_failed_task_keeps_database_trace_and_audit(tmp_path: Path) -> None:
    folder = copy_task(FAST_TASK, tmp_path)
    task = folder / "task.yaml"
    task.write_text(task.read_text().replace("max_steps: 20}", "max_steps: 3}"))
    (summary,) = run_suite([folder], workdir=tmp_path / "work")
    result = summary.results[0]
    assert not result.passed and result.failed_check == "max_steps 3"
    assert result.reason == "expected at most 3 steps; found 13 steps"
    kept = Path(result.kept or "")
    assert (kept / "engine.db").exists()
    assert (kept / "traces" / f"{result.run_id}.json").exists()
    audit = json.loads((kept / f"audit-{result.run_id}.json").read_text())
    assert {row["tool"] for row in audit} == {"search_text"}
    table = format_table([summary])
    assert f"FAIL {FAST_TASK}: expected at most 3 steps; found 13 steps" in table
    show = command("show", result.run_id, "--db", str(kept / "engine.db"))
    assert f"inspect: {show}" in table


def test_passed_tasks_leave_nothing_behind_and_repeat_reports_rates(tmp_path: Path) -> None:
    folder = copy_task(FAST_TASK, tmp_path)
    (summary,) = run_suite([folder], repeat=2, workdir=tmp_path / "work")
    assert summary.passes == 2 and summary.to_json()["pass_rate"] == 1.0
    assert not any((tmp_path / "work").iterdir())
    row = format_table([summary], repeat=2).splitlines()[1]
    assert row.split()[:4] == [FAST_TASK, "code_search", "pass", "2/2"]


def test_cli_eval_table_json_filter_and_exit_code(tmp_path: Path) -> None:
    copy_task(FAST_TASK, tmp_path)
    broken = tmp_path / "zz_broken"
    shutil.copytree(GOLDEN / FAST_TASK / "fixture", broken / "fixture")
    (broken / "task.yaml").write_text("prompt: hi\nchecks: [{run_status: completed}]\n"
                                      "machine: machines/nope.yaml\n")
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path), "--json",
                           str(out)], cwd=ROOT, env=engine_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    header, first, second = proc.stdout.splitlines()[:3]
    assert header.split() == ["TASK", "CATEGORY", "RESULT", "FAILED", "CHECK", "STEPS", "TOKENS",
                              "COST", "TIME"]
    assert first.split()[:3] == [FAST_TASK, "code_search", "pass"]
    assert second.split()[:4] == ["zz_broken", "general", "FAIL", "task"]
    assert "machine 'machines/nope.yaml' not found" in proc.stdout
    assert "[2/2] zz_broken: FAIL (task)" in proc.stderr
    data = json.loads(out.read_text())
    assert (data["tasks"], data["tasks_passed"], data["passed"]) == (2, 1, False)
    assert data["results"][0]["steps"] == 13 and data["results"][0]["cost_usd"] == 0.0
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path), "-k", "search"],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1/1 tasks passed" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path), "-k", "nothing"],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no golden task folders (with task.yaml) matching 'nothing'" in proc.stderr


# -- each check fails with what was expected and what was found ----------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> CheckContext:
    """A real completed run of the read-only code-search task, with its store and workspace."""
    tmp = tmp_path_factory.mktemp("finished")
    result = run_task(GOLDEN / FAST_TASK, tmp / "engine.db")
    assert result.passed, result.reason
    store = SqliteStore(tmp / "engine.db")
    info = store.get_run(result.run_id or "")
    return CheckContext(store, info.run_id, Path(info.workspace), GOLDEN / FAST_TASK,
                        GOLDEN / FAST_TASK / "fixture", (Attempt("in-process", "completed", 13),))


FAILING = [
    ({"file_contains": {"path": "utils/dates.py", "text": "def parse_us_date("}},
     "expected utils/dates.py containing 'def parse_us_date('; found 6"),
    ({"file_contains": {"path": "nope.py", "text": "x"}},
     "expected nope.py containing 'x'; found no such file"),
    ({"file_equals": {"path": "billing/__init__.py", "text": "# billing\n"}},
     "expected billing/__init__.py equal to '# billing\\n'; found ''"),
    ({"file_equals": {"path": "utils/dates.py", "fixture_file": "fixture/billing/invoice.py"}},
     "(first difference at line 1: b'\"\"\"Invoices: one per customer and month.\"\"\"' "
     "expected, b'\"\"\"Date helpers shared by billing and reports.\"\"\"' found)"),
    ({"file_unchanged": "reports/yearly.py"},
     "expected reports/yearly.py unchanged from the fixture; found it changed (first difference "
     "at line 1: b'\"\"\"The yearly report: already migrated to ISO dates.\"\"\"' expected, "
     "b'# edited' found)"),
    ({"file_unchanged": "missing.py"}, "expected missing.py in the fixture; found no such file"),
    ({"command_succeeds": "echo broken >&2; exit 3"},
     "expected `echo broken >&2; exit 3` to exit 0; found exit code 3: broken"),
    ({"command_succeeds": {"command": "sleep 5", "timeout_s": 0.2}},
     "expected `sleep 5` to exit 0 within 0.2 s; found it timed out"),
    ({"tool_denied": "run_shell"},
     "expected an audit row denying run_shell; found 2 audit row(s): search_text allow by "
     "policy (risk read); search_text allow by policy (risk read)"),
    ({"audit_contains": {"tool": "search_text", "decision": "allow", "decided_by": "user"}},
     "expected an audit row with tool=search_text, decision=allow, decided_by=user; found 2"),
    ({"tool_failed": "search_text"},
     "expected a search_text call that returned an error; found 2 tool call(s): search_text "
     "ok, search_text ok"),
    ({"run_status": "failed"}, "expected status failed; found completed in state done"),
    ("resumed", "expected an earlier process leaving the run unfinished and a later one "
                "continuing it (or effect_resolved events); found 1 attempt(s) (in-process: "
                "completed after 13 steps), no effect_resolved events"),
    ("compressed", "expected a context_compressed event; found none in 3 model call(s)"),
    ({"max_steps": 5}, "expected at most 5 steps; found 13 steps"),
    ({"final_answer_contains": "utils/dates.py:99"},
     "expected a final answer containing 'utils/dates.py:99'; found 'parse_date is called in "
     "three places:"),
]


@pytest.mark.parametrize(("item", "message"), FAILING,
                         ids=[str(next(iter(i))) if isinstance(i, dict) else i
                              for i, _ in FAILING])
def test_each_check_fails_with_expected_and_found(finished: CheckContext, item: object,
                                                  message: str) -> None:
    (finished.workspace / "reports" / "yearly.py").write_text("# edited\n")
    (result,) = run_checks([item], finished)
    assert not result.ok
    assert message in result.message, result.message
    assert result.message.startswith("expected ")


def test_the_same_checks_pass_on_what_is_true(finished: CheckContext) -> None:
    items = [{"file_contains": {"path": "utils/dates.py", "text": "def parse_date("}},
             {"file_equals": {"path": "utils/dates.py", "fixture_file": "fixture/utils/dates.py"}},
             {"file_unchanged": "billing/invoice.py"}, {"command_succeeds": "true"},
             {"audit_contains": {"tool": "search_text", "decision": "allow"}},
             {"run_status": "completed"}, {"max_steps": 13}, {"max_cost_usd": 0},
             {"final_answer_contains": "billing/invoice.py:19"}]
    assert [(r.name, r.ok) for r in run_checks(items, finished) if not r.ok] == []


def _costed_run(tmp_path: Path, cost: float | None) -> CheckContext:
    store = SqliteStore(tmp_path / f"cost-{cost}.db")
    state = RunState("r1", "m", "a", 0, (Message("system", "s"),))
    store.create_run(RunInfo("r1", "m", "m.yaml", "h", "running", "a", str(tmp_path), 1.0, 1.0,
                             0, 0, 0, 0.0), state, StepBegin(0, "a", "act", 1.0))
    store.commit_step("r1", StepCommit(0, "a", "go", "done", 2.0, {}, (), 1,
                                       Usage(1000, 100, 0, cost), status="completed"))
    return CheckContext(store, "r1", tmp_path, tmp_path, tmp_path)


def test_max_cost_fails_on_a_costly_or_unpriced_run(tmp_path: Path) -> None:
    (over,) = run_checks([{"max_cost_usd": 0.25}], _costed_run(tmp_path, 0.75))
    assert over.message == "expected a cost of at most $0.25; found $0.7500"
    (unknown,) = run_checks([{"max_cost_usd": 0.25}], _costed_run(tmp_path, None))
    assert not unknown.ok
    assert "found an unknown cost (a model without a price in prices.yaml)" in unknown.message


def test_resumed_passes_on_attempts_or_settled_calls(tmp_path: Path) -> None:
    ctx = _costed_run(tmp_path, 0.0)
    crashed = CheckContext(ctx.store, "r1", tmp_path, tmp_path, tmp_path,
                           (Attempt("subprocess", "crashed", 0, -9),
                            Attempt("in-process", "completed", 1)))
    (ok,) = run_checks(["resumed"], crashed)
    assert ok.ok and "left crashed after 0 steps by one process" in ok.message
    ctx.store.append_event("r1", 0, "effect_resolved", {"message": "edit_file: already applied"},
                           3.0)
    (ok,) = run_checks([{"resumed": True}], ctx)
    assert ok.ok and "edit_file: already applied" in ok.message


@pytest.mark.parametrize(("item", "message"), [
    ({"answer_has": "x"}, "checks[0]: unknown check 'answer_has'; valid checks: "
                          + ", ".join(check_names())),
    ({"file_contains": "x.py"}, "check 'file_contains' takes a mapping "
                                "(file_contains: {path: FILE, text: TEXT}), got 'x.py'"),
    ({"file_contains": {"path": "x.py"}}, "takes a mapping with 'text'"),
    ({"file_equals": {"path": "x", "text": "a", "fixture_file": "b"}},
     "takes a mapping with exactly one of text or fixture_file"),
    ({"max_steps": "many"}, "check 'max_steps' takes a number >= 0 (max_steps: N), got 'many'"),
    ("file_unchanged", "check 'file_unchanged' needs an argument: file_unchanged: FILE"),
    ({"resumed": False}, "check 'resumed' takes true (or the bare name)"),
    ({"run_status": "completed", "max_steps": 3}, "each check is one `name: argument` mapping"),
])
def test_malformed_checks_are_refused_before_a_run(item: object, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_check(item, "checks[0]")
    assert message in str(err.value)


def test_check_paths_stay_in_the_workspace(finished: CheckContext) -> None:
    (result,) = run_checks([{"file_contains": {"path": "../../etc/passwd", "text": "root"}}],
                           finished)
    assert not result.ok and "leaves the workspace" in result.message


@pytest.mark.parametrize("machine", ["coding_agent", "machines/coding_agent.yaml",
                                     "own/agent.yaml"])
def test_a_task_finds_its_machine_beside_it_or_by_bundled_name(tmp_path: Path,
                                                                machine: str) -> None:
    """Copied out of the repository and run from elsewhere: a machine file beside the task
    (relative to the task file), a bundled name, or the bundled tasks' own
    ``machines/NAME.yaml`` where no such file is."""
    folder = tmp_path / "suite" / FAST_TASK
    shutil.copytree(GOLDEN / FAST_TASK, folder)
    if machine.startswith("own/"):
        (folder / "own").mkdir()
        shutil.copy(ROOT / "machines" / "coding_agent.yaml", folder / machine)
    task = folder / "task.yaml"
    task.write_text(re.sub(r"(?m)^machine: .*$", f"machine: {machine}", task.read_text()))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path / "suite")],
                          cwd=elsewhere, env=engine_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{FAST_TASK} " in proc.stdout and "1/1 tasks passed" in proc.stdout


def test_a_machine_found_nowhere_names_where_it_was_looked_for(tmp_path: Path) -> None:
    folder = tmp_path / FAST_TASK
    shutil.copytree(GOLDEN / FAST_TASK, folder)
    task = folder / "task.yaml"
    task.write_text(re.sub(r"(?m)^machine: .*$", "machine: machines/nope.yaml",
                           task.read_text()))
    with pytest.raises(UsageError, match=r"task.yaml: machine 'machines/nope.yaml' not found "
                                         r"beside the task.*bundled machine \(.*coding_agent"):
        load_task(folder).machine_path()
