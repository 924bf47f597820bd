"""Replay: a recorded run re-run with its model's recorded outputs against a fresh fixture copy.

The demo replays without divergence (its test output differs only in timings and paths); a
changed fixture file or a changed tool version is reported at the first result it affects.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import anyio
import pytest

from engine.harness.evals import run_task, silent_observer
from engine.harness.replay import (
    ReplayReport,
    ToolOutcome,
    VersionChange,
    compare,
    current_versions,
    format_report,
    normalise,
    recorded_turns,
    replay_main,
    replay_run,
    tool_outcomes,
)
from engine.store.sqlite import SqliteStore
from engine.vocabulary.errors import UsageError
from tests.conftest import ROOT

GOLDEN = ROOT / "golden_tasks"


def copy_task(name: str, dest: Path) -> Path:
    folder = dest / name
    shutil.copytree(GOLDEN / name, folder)
    task = folder / "task.yaml"
    task.write_text(task.read_text().replace("machine: machines/", f"machine: {ROOT}/machines/"))
    return folder


def recorded_run(folder: Path, tmp: Path) -> tuple[SqliteStore, str]:
    result = run_task(folder, tmp / "recorded" / "engine.db")
    assert result.passed, result.reason
    return SqliteStore(tmp / "recorded" / "engine.db"), result.run_id or ""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[SqliteStore, str, Path]:
    tmp = tmp_path_factory.mktemp("demo")
    folder = copy_task("demo_fix_test", tmp)
    store, run_id = recorded_run(folder, tmp)
    return store, run_id, folder


def test_demo_replays_without_divergence(demo: tuple[SqliteStore, str, Path],
                                         tmp_path: Path) -> None:
    store, run_id, _ = demo
    report = replay_run(store, run_id, work_dir=tmp_path / "replay")
    assert report.divergence is None, format_report(report)
    assert report.replay_status == "completed" and report.replay_error is None
    assert report.compared == 5 and report.version_changes == []
    # how many results needed normalising depends on whether timings happened to round equal
    assert 0 <= report.normalised <= report.compared
    assert "no divergence" in format_report(report)


def test_the_script_is_the_recorded_assistant_turns(demo: tuple[SqliteStore, str, Path]) -> None:
    store, run_id, _ = demo
    turns = recorded_turns(store, run_id)
    assert len(turns) == 5
    assert turns[0] == {"text": "Let me run the tests first to see what fails.",
                        "tool_calls": [{"name": "run_shell",
                                        "args": {"command": "python3 -m unittest -q"}}]}
    assert turns[-1]["tool_calls"] == []
    assert [o.tool for o in tool_outcomes(store, run_id)] == [
        "run_shell", "read_file", "update_plan", "edit_file", "run_shell"]


def test_changed_fixture_file_is_the_first_divergence(demo: tuple[SqliteStore, str, Path],
                                                      tmp_path: Path) -> None:
    store, run_id, folder = demo
    source = folder / "fixture" / "inventory.py"
    original = source.read_text()
    source.write_text(original.replace('"""', '"""Stock levels. ', 1))
    try:
        report = replay_run(store, run_id, work_dir=tmp_path / "replay")
    finally:
        source.write_text(original)
    d = report.divergence
    assert d is not None, format_report(report)
    assert d.index == 1 and report.compared == 1
    assert d.reason == "read_file returned a different result"
    assert d.recorded is not None and d.replayed is not None
    assert d.recorded.args == {"path": "inventory.py"} == d.replayed.args
    text = format_report(report)
    assert "first divergence at tool result #2: read_file returned a different result" in text
    assert "recorded: #2 read_file@1.0.0 {\"path\": \"inventory.py\"}" in text
    assert '"""Stock levels. ' in d.replayed_text and "Stock levels" not in d.recorded_text


def test_changed_tool_version_is_reported(demo: tuple[SqliteStore, str, Path],
                                          tmp_path: Path) -> None:
    store, run_id, _ = demo
    versions = {**current_versions(), "read_file": "1.1.0"}
    versions.pop("update_plan")
    report = replay_run(store, run_id, work_dir=tmp_path / "replay", versions=versions)
    assert report.version_changes == [VersionChange("read_file", "1.0.0", "1.1.0"),
                                      VersionChange("update_plan", "1.0.0", None)]
    text = format_report(report)
    assert "tool version changed: read_file: 1.0.0 when recorded, now 1.1.0" in text
    assert "tool version changed: update_plan: 1.0.0 when recorded, now no longer a built-in" \
        in text


def test_divergence_names_the_version_change_of_its_tool() -> None:
    rec = [ToolOutcome(0, 3, "read_file", {"path": "a.py"}, "ok", "x = 1", "1.0.0")]
    new = [ToolOutcome(0, 3, "read_file", {"path": "a.py"}, "ok", "x = 2", "1.1.0")]
    report = ReplayReport("r")
    change = VersionChange("read_file", "1.0.0", "1.1.0")
    compare(rec, new, [], report, [change])
    assert report.divergence is not None and report.divergence.version_change == change
    assert "note: read_file: 1.0.0 when recorded, now 1.1.0" in format_report(report)


def test_missing_and_extra_calls_and_outcomes_diverge() -> None:
    a = ToolOutcome(0, 3, "run_shell", {"command": "make"}, "ok", "built", "1.0.0")
    denied = ToolOutcome(0, 3, "run_shell", {"command": "make"}, "denied", "Permission denied")
    other = ToolOutcome(0, 3, "read_file", {"path": "x"}, "ok", "built", "1.0.0")
    cases = [([a], [], "the replay never made #1 run_shell"),
             ([], [a], "the replay made an extra call: #1 run_shell"),
             ([a], [denied], "run_shell was ok when recorded, denied now"),
             ([a], [other], "a different call: #1 run_shell")]
    for recorded, replayed, reason in cases:
        report = ReplayReport("r")
        compare(recorded, replayed, [], report)
        assert report.divergence is not None and report.divergence.reason.startswith(reason)


def test_normalise_times_durations_paths_and_run_ids(tmp_path: Path) -> None:
    ws = str(tmp_path / "workspaces" / "20250101-120000-abcdef")
    text = (f"exit code 1 after 0.41 s\nRan 3 tests in 0.001s\nFile \"{ws}/test_x.py\", line 4\n"
            "at 2025-03-01T12:30:45.123Z took 12ms; run 20250101-120000-abcdef; 10:11:12\n"
            f"tmp {Path('/tmp') / 'pytest-of-x' / 'a.txt'}")
    assert normalise(text, [ws]) == (
        "exit code 1 after <duration>\nRan 3 tests in <duration>\n"
        "File \"<workspace>/test_x.py\", line 4\nat <time> took <duration>; run <run-id>; "
        "<time>\ntmp <tmp>")
    assert normalise("sha256 0123abcd, 3 lines", []) == "sha256 0123abcd, 3 lines"


def test_workflow_run_replays_its_fixed_tool_calls(tmp_path: Path) -> None:
    folder = copy_task("workflow_test_fix_loop", tmp_path)
    store, run_id = recorded_run(folder, tmp_path)
    report = replay_run(store, run_id, work_dir=tmp_path / "replay")
    assert report.divergence is None, format_report(report)
    assert report.compared == 3  # run_tests, the fix, run_tests again
    (folder / "fixture" / "slug.py").write_text(
        (folder / "fixture" / "slug.py").read_text().replace("_", "~"))
    report = replay_run(store, run_id, work_dir=tmp_path / "replay2")
    assert report.divergence is not None and report.divergence.index == 0


@pytest.mark.parametrize(("task", "results"), [("resume_after_crash", 5),
                                               ("resume_in_flight_edit", 3)])
def test_crashed_and_resumed_run_replays_like_a_straight_one(task: str, results: int,
                                                             tmp_path: Path) -> None:
    folder = copy_task(task, tmp_path)
    store, run_id = recorded_run(folder, tmp_path)
    report = replay_run(store, run_id, work_dir=tmp_path / "replay")
    assert report.divergence is None, format_report(report)
    assert report.compared == results


def test_free_task_cannot_be_replayed(tmp_path: Path) -> None:
    from engine.session.compose import RunRequest, execute, prepare_new

    turns = tmp_path / "turns.yaml"
    turns.write_text('- text: "Nothing to do."\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = SqliteStore(tmp_path / "engine.db")
    prepared = prepare_new(RunRequest(machine=ROOT / "machines" / "coding_agent.yaml",
                                      task="say hi", workspace=workspace,
                                      model=f"scripted:{turns}", approval="deny"),
                           store, db_path=tmp_path / "engine.db", observer=silent_observer,
                           prompter=None)
    anyio.run(execute, prepared)
    with pytest.raises(UsageError, match=r"ran a free task .* replay needs a golden task"):
        replay_run(store, prepared.state.run_id, work_dir=tmp_path / "replay")


def test_replay_command_exit_codes_and_json(demo: tuple[SqliteStore, str, Path],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    store, run_id, folder = demo
    args = argparse.Namespace(run_id=run_id, db=str(store.path), json=True)
    assert replay_main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["diverged"], out["compared"], out["kept"]) == (False, 5, None)
    source = folder / "fixture" / "inventory.py"
    original = source.read_text()
    source.write_text(original + "\n# changed\n")
    try:
        assert replay_main(argparse.Namespace(run_id=run_id, db=str(store.path),
                                              json=False)) == 1
    finally:
        source.write_text(original)
    text = capsys.readouterr().out
    assert "first divergence at tool result #2: read_file returned a different result" in text
    kept = text.split("replay database kept: ")[1].strip()
    assert Path(kept).exists()
    shutil.rmtree(Path(kept).parent)
    with pytest.raises(UsageError, match="no database"):
        replay_main(argparse.Namespace(run_id=run_id, db=str(folder / "none.db"), json=False))
