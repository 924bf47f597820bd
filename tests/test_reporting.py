"""What a run reports is complete: every tool call counted, files written by shell commands in
``files_changed`` and the checkpoints, the final state among the states visited, and a replay
that gives a person's recorded answers again instead of calling them divergences.

Runs are real: ``python -m engine`` in subprocesses on temp databases with golden-task-like
folders written here (scripted model), killed by ``ENGINE_FAULTS`` where a crash is the point.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, engine_env

from engine.harness.replay import format_report, replay_run, tool_outcomes
from engine.permissions.approvals import Answer, PendingQuestion
from engine.providers.scripted import ordinal
from engine.session.compose import RunRequest, execute, prepare_new
from engine.store.sqlite import SqliteStore
from turnstile_tools.changes import MAX_TEXT_BYTES, WorkspaceWatcher

AGENT = ROOT / "machines" / "coding_agent.yaml"


def engine(*args: str, cwd: Path, env: dict[str, str] | None = None,
           expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd,
                          env=engine_env({"PYTHONPATH": str(ROOT), **(env or {})}),
                          capture_output=True, text=True, timeout=180)
    if expect is not None:
        assert proc.returncode == expect, f"engine {args}: {proc.returncode}\n{proc.stderr}"
    return proc


def task(tmp: Path, turns: str, files: dict[str, str], approval: str = "auto") -> Path:
    """A golden-task-like folder: fixture files, a task.yaml and the scripted turns."""
    folder = tmp / "task"
    (folder / "fixture").mkdir(parents=True)
    for name, text in files.items():
        (folder / "fixture" / name).write_text(text)
    (folder / "task.yaml").write_text(
        f"prompt: Tidy the files.\nmachine: {AGENT}\napproval: {approval}\n")
    (folder / "turns.yaml").write_text(textwrap.dedent(turns))
    return folder


def run(tmp: Path, folder: Path, *extra: str, env: dict[str, str] | None = None,
        expect: int | None = 0) -> tuple[Path, str]:
    db = tmp / "engine.db"
    engine("run", str(AGENT), "--golden", str(folder), "--db", str(db), "--approval", "auto",
           *extra, cwd=tmp, env=env, expect=expect)
    store = SqliteStore(db)
    try:
        return db, store.list_runs()[-1].run_id
    finally:
        store.close()


def show(db: Path, run_id: str) -> dict[str, Any]:
    out = engine("show", run_id, "--db", str(db), "--json", cwd=db.parent).stdout
    return dict(json.loads(out))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


TWO_SHELL_CALLS = """\
    - text: "Two commands."
      tool_calls:
        - {name: run_shell, args: {command: "echo one > b.txt"}}
        - {name: run_shell, args: {command: "echo two > c.txt"}}
    - text: "Done."
    """


def test_show_counts_a_call_whose_result_row_died_with_the_process(tmp_path: Path) -> None:
    folder = task(tmp_path, TWO_SHELL_CALLS, {"a.txt": "hello\n"})
    db, run_id = run(tmp_path, folder, env={"ENGINE_FAULTS": "crash_after_effect:exec_tool:2"},
                     expect=None)
    engine("resume", run_id, "--db", str(db), cwd=tmp_path)
    shown = show(db, run_id)
    assert shown["status"] == "completed"
    assert shown["tool_calls"] == 2, "the second call ran; its result row was lost in the kill"
    trace = json.loads(engine("trace", run_id, "--db", str(db), "--json", cwd=tmp_path).stdout)
    assert trace["run"]["totals"]["tool_calls"] == 2


def test_states_visited_ends_in_the_final_state(tmp_path: Path) -> None:
    folder = task(tmp_path, TWO_SHELL_CALLS, {"a.txt": "hello\n"})
    db, run_id = run(tmp_path, folder)
    visited = show(db, run_id)["states_visited"]
    assert visited[-2:] == ["evaluate_stop", "done"]
    assert visited.count("done") == 1


SHELL_WRITES = """\
    - text: "Tidying with the shell."
      tool_calls:
        - {name: run_shell, args: {command: "cat keep.txt"}}
        - name: run_shell
          args: {command: "echo one > new.txt && printf 'world\\\\n' >> a.txt"}
        - {name: run_shell, args: {command: "sh drop_old.sh"}}
        - {name: run_shell, args: {command: "echo tmp > scratch.txt"}}
    - text: "And undoing the scratch file."
      tool_calls:
        - {name: run_shell, args: {command: "sh drop_scratch.sh"}}
    - text: "Done."
    """


def test_files_changed_by_shell_commands_are_reported(tmp_path: Path) -> None:
    # `rm` is destructive, so always denied: the deletions run from scripts (exec, approved).
    folder = task(tmp_path, SHELL_WRITES, {"a.txt": "hello\n", "old.txt": "bye\n",
                                          "keep.txt": "kept\n", "drop_old.sh": "rm old.txt\n",
                                          "drop_scratch.sh": "rm scratch.txt\n"})
    db, run_id = run(tmp_path, folder)
    shown = show(db, run_id)
    assert shown["files_changed"] == {
        "a.txt": {"base_hash": sha("hello\n"), "result_hash": sha("hello\nworld\n")},
        "new.txt": {"base_hash": None, "result_hash": sha("one\n"), "created": True},
        "old.txt": {"base_hash": sha("bye\n"), "result_hash": None, "deleted": True},
    }, "scratch.txt was created and deleted within the run: no change"
    notes = [s["note"] for s in shown["steps_detail"] if s["state"] == "checkpoint"]
    assert notes[0].endswith("(4 files changed)") and notes[1].endswith("(3 files changed)")
    text = engine("show", run_id, "--db", str(db), cwd=tmp_path).stdout
    bye, one = sha("bye\n")[:10], sha("one\n")[:10]
    assert f"old.txt  {bye} -> deleted" in text and f"new.txt  new -> {one}" in text

    store = SqliteStore(db)
    try:
        events = [e.payload for e in store.events(run_id, ("file_changed",))]
    finally:
        store.close()
    patches = {p["path"]: p.get("patch") for p in events}
    assert patches["a.txt"] == ("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n hello\n+world\n")
    assert patches["old.txt"] == "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    assert "keep.txt" not in patches, "a read-only command is not watched and changed nothing"


def test_snapshots_hash_only_what_moved(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("a\n")
    (tmp_path / "big.txt").write_text("x" * (MAX_TEXT_BYTES + 1))
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    (tmp_path / ".engine").mkdir()
    (tmp_path / ".engine" / "engine.db").write_bytes(b"db")
    (tmp_path / ".gitignore").write_text("build/\n")
    watcher = WorkspaceWatcher()
    before = watcher.snapshot(tmp_path)
    (tmp_path / "small.txt").write_text("a\n")  # rewritten with the same bytes
    (tmp_path / "big.txt").write_text("y" * (MAX_TEXT_BYTES + 1))
    (tmp_path / "blob.bin").write_bytes(b"\0\1\3")
    (tmp_path / ".engine" / "engine.db").write_bytes(b"db, changed")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.o").write_bytes(b"ignored")
    found = {c["path"]: c for c in watcher.changes(tmp_path, before).files}
    assert sorted(found) == ["big.txt", "blob.bin"]
    assert found["big.txt"]["base_hash"] is None, "too large to have been kept"
    assert found["big.txt"]["result_hash"] == sha("y" * (MAX_TEXT_BYTES + 1))
    assert "patch" not in found["big.txt"] and "patch" not in found["blob.bin"]
    assert found["blob.bin"]["base_hash"] == hashlib.sha256(b"\0\1\2").hexdigest()


# -- replay and wording -----------------------------------------------------------------------


DENIED_THEN_ALLOWED = """\
    - text: "First command."
      tool_calls:
        - {name: run_shell, args: {command: "echo first > one.txt"}}
    - text: "Then another."
      tool_calls:
        - {name: run_shell, args: {command: "echo second > two.txt"}}
    - text: "Done."
    """


class Person:
    """Answers the questions in order, as someone at the terminal would."""

    def __init__(self, answers: Sequence[Answer]) -> None:
        self.answers = list(answers)

    async def __call__(self, questions: Sequence[PendingQuestion]) -> list[Answer]:
        return [self.answers.pop(0) for _ in questions]


def test_replay_gives_the_recorded_answers_again(tmp_path: Path) -> None:
    folder = task(tmp_path, DENIED_THEN_ALLOWED, {"keep.txt": "k\n"}, approval="interactive")
    db = tmp_path / "recorded" / "engine.db"
    db.parent.mkdir()
    store = SqliteStore(db)
    try:
        req = RunRequest(machine=AGENT, golden=folder, approval="interactive")
        prepared = prepare_new(req, store, db_path=db, observer=lambda k, p: None,
                               prompter=Person(["no", "yes"]))
        anyio.run(execute, prepared)
        run_id = prepared.state.run_id
        outcomes = [o.outcome for o in tool_outcomes(store, run_id)]
        assert outcomes == ["denied", "ok"]
        report = replay_run(store, run_id, work_dir=tmp_path / "replay")
    finally:
        store.close()
    assert report.divergence is None, format_report(report)
    assert report.replay_status == "completed" and report.compared == 2
    assert "no divergence" in format_report(report)


def test_an_exhausted_script_says_2nd(tmp_path: Path) -> None:
    folder = task(tmp_path, """\
        - text: "One call, and then no turn left."
          tool_calls:
            - {name: run_shell, args: {command: "cat keep.txt"}}
        """, {"keep.txt": "k\n"})
    db, run_id = run(tmp_path, folder, expect=1)
    error = show(db, run_id)["error"]
    assert "the model was called a 2nd time but the script has 1 turn" in error, error


@pytest.mark.parametrize(("n", "text"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"),
                                         (11, "11th"), (12, "12th"), (13, "13th"), (21, "21st"),
                                         (102, "102nd"), (111, "111th")])
def test_ordinals(n: int, text: str) -> None:
    assert ordinal(n) == text
