"""Files shell commands change, as the run_shell watcher reports them: every edit, creation and
deletion of a tracked file, nothing under an ignored tree, the base from git's index, in both
ways of finding them (inotify events; ``git status``/a walk when events cannot be had).

Real git repositories in tmp_path, real commands through ``bash -c``; each test runs with the
watcher in events mode and in scan mode (``events=False``: what a system without inotify, or a
user without watches left, gets).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import engine
from engine import build_machine
from engine.workspace import inotify
from turnstile_tools import changes
from turnstile_tools.changes import WorkspaceWatcher

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
MODES = [pytest.param(True, id="events"), pytest.param(False, id="scan")]


def sh(ws: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=ws, env=GIT_ENV, check=True,
                   capture_output=True)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def repo(tmp_path: Path, files: dict[str, str], ignore: str = "node_modules/\n*.log\n"
         ) -> Path:
    ws = tmp_path / "ws"
    for name, text in {**files, ".gitignore": ignore}.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    sh(ws, "git init -q && git add -A && git commit -qm init")
    return ws


def run(watcher: WorkspaceWatcher, ws: Path, command: str) -> dict[str, dict[str, Any]]:
    before = watcher.snapshot(ws)
    sh(ws, command)
    report = watcher.changes(ws, before)
    assert report.not_covered is None, report.not_covered
    return {c["path"]: c for c in report.files}


def needs_events(events: bool) -> None:
    if events and not inotify.available():
        pytest.skip("this system has no inotify")


@pytest.mark.parametrize("events", MODES)
def test_every_tracked_edit_creation_and_deletion_and_nothing_ignored(
        tmp_path: Path, events: bool) -> None:
    needs_events(events)
    ws = repo(tmp_path, {"a/b/c/d/deep.py": "x = 1\n", "gone.txt": "bye\n", "keep.txt": "k\n",
                         "node_modules/pkg/index.js": "1\n"})
    watcher = WorkspaceWatcher(events=events)
    found = run(watcher, ws, "sed -i 's/1/2/' a/b/c/d/deep.py && rm gone.txt && "
                             "echo new > a/new.txt && echo y > node_modules/pkg/index.js && "
                             "mkdir -p node_modules/more && echo z > node_modules/more/m.js && "
                             "echo log > a/run.log && touch keep.txt")
    assert sorted(found) == ["a/b/c/d/deep.py", "a/new.txt", "gone.txt"]
    deep = found["a/b/c/d/deep.py"]
    assert deep["base_hash"] == sha(b"x = 1\n") and deep["result_hash"] == sha(b"x = 2\n")
    assert deep["patch"].endswith("-x = 1\n+x = 2\n")
    assert found["gone.txt"] == {"path": "gone.txt", "base_hash": sha(b"bye\n"),
                                 "result_hash": None, "created": False, "deleted": True,
                                 "patch": "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"}
    assert found["a/new.txt"]["created"] and found["a/new.txt"]["base_hash"] is None
    again = run(watcher, ws, "echo more >> a/new.txt")
    assert again["a/new.txt"]["base_hash"] == sha(b"new\n"), "the last seen content is the base"


@pytest.mark.parametrize("events", MODES)
def test_a_file_dirty_before_the_run_has_its_working_copy_as_base(
        tmp_path: Path, events: bool) -> None:
    needs_events(events)
    ws = repo(tmp_path, {"f.txt": "committed\n"})
    (ws / "f.txt").write_text("edited by hand\n")
    (ws / "notes.txt").write_text("untracked\n")
    watcher = WorkspaceWatcher(events=events)
    found = run(watcher, ws, "echo more >> f.txt && echo more >> notes.txt")
    assert found["f.txt"]["base_hash"] == sha(b"edited by hand\n")
    assert found["notes.txt"]["base_hash"] == sha(b"untracked\n")
    assert not found["notes.txt"]["created"]


@pytest.mark.parametrize("events", MODES)
def test_a_checkout_that_moves_the_index_is_still_reported(tmp_path: Path,
                                                           events: bool) -> None:
    needs_events(events)
    ws = repo(tmp_path, {"f.txt": "one\n"})
    sh(ws, "echo two > f.txt && git commit -qam two")
    watcher = WorkspaceWatcher(events=events)
    found = run(watcher, ws, "git checkout -q HEAD~1 -- f.txt")
    assert found["f.txt"]["base_hash"] == sha(b"two\n")
    assert found["f.txt"]["result_hash"] == sha(b"one\n")


@pytest.mark.parametrize("events", MODES)
def test_a_renamed_folder_names_every_file_it_moved(tmp_path: Path, events: bool) -> None:
    needs_events(events)
    ws = repo(tmp_path, {"src/x/a.py": "a\n", "src/x/y/b.py": "b\n"})
    watcher = WorkspaceWatcher(events=events)
    found = run(watcher, ws, "mv src/x lib")
    assert {p: (c["created"], c["deleted"]) for p, c in found.items()} == {
        "src/x/a.py": (False, True), "src/x/y/b.py": (False, True),
        "lib/a.py": (True, False), "lib/y/b.py": (True, False)}
    after = run(watcher, ws, "echo c >> lib/y/b.py")
    assert after["lib/y/b.py"]["base_hash"] == sha(b"b\n"), "the moved folder is watched"


@pytest.mark.parametrize("events", MODES)
def test_a_tracked_file_inside_an_ignored_folder_is_reported(tmp_path: Path,
                                                             events: bool) -> None:
    needs_events(events)
    ws = tmp_path / "ws"
    (ws / "vendor").mkdir(parents=True)
    (ws / "vendor" / "kept.js").write_text("1\n")
    (ws / ".gitignore").write_text("vendor/\n")
    sh(ws, "git init -q && git add .gitignore && git add -f vendor/kept.js && git commit -qm i")
    found = run(WorkspaceWatcher(events=events), ws,
                "echo 2 > vendor/kept.js && echo 3 > vendor/other.js")
    assert sorted(found) == ["vendor/kept.js"]
    assert found["vendor/kept.js"]["base_hash"] == sha(b"1\n")


@pytest.mark.parametrize("events", MODES)
def test_a_tracked_file_in_a_folder_with_a_git_of_its_own_is_reported(
        tmp_path: Path, events: bool) -> None:
    """The index, not a walk, says which folders hold tracked files: a ``.git`` appearing in
    one (``git init`` there) does not hide the outer repository's files in it."""
    needs_events(events)
    ws = repo(tmp_path, {"lib/a.txt": "a\n", "r.txt": "r\n"})
    sh(ws, "git init -q lib")
    found = run(WorkspaceWatcher(events=events), ws, "echo b >> lib/a.txt")
    assert sorted(found) == ["lib/a.txt"]
    assert found["lib/a.txt"]["base_hash"] == sha(b"a\n")


@pytest.mark.parametrize("events", MODES)
def test_a_folder_the_repository_config_excludes_is_never_watched(
        tmp_path: Path, events: bool) -> None:
    """Ignored trees are the ones git ignores, ``core.excludesFile`` of the repository's own
    config included (the rules read in Python do not know it): nothing in them is watched or
    reported, while an untracked folder git does see is."""
    needs_events(events)
    ws = repo(tmp_path, {"src/m.py": "m\n", "build/old.o": "o\n"})
    sh(ws, "git rm -rq --cached build")
    excludes = tmp_path / "excludes"
    excludes.write_text("build/\n")
    sh(ws, f"git config core.excludesFile {excludes}")
    watcher = WorkspaceWatcher(events=events)
    found = run(watcher, ws, "echo p >> build/old.o && mkdir -p build/sub && "
                             "echo n > build/sub/new.o && mkdir -p drafts && echo d > drafts/d")
    assert sorted(found) == ["drafts/d"]
    tree = watcher.tracker(ws).tree
    if events:
        assert tree is not None and not any(r.startswith("build") for r in tree.by_rel)


@pytest.mark.parametrize("events", MODES)
def test_untracked_folders_are_watched_and_their_files_have_a_base(
        tmp_path: Path, events: bool) -> None:
    """Folders holding no tracked file are found as git lists them (whole, once): one with
    untracked files, an empty one, and one holding only ignored files are all watched."""
    needs_events(events)
    ws = repo(tmp_path, {"src/m.py": "m\n"})
    (ws / "drafts" / "sub").mkdir(parents=True)
    (ws / "drafts" / "sub" / "n.txt").write_text("draft\n")
    (ws / "empty").mkdir()
    (ws / "src" / "logs").mkdir()
    (ws / "src" / "logs" / "x.log").write_text("ignored\n")
    found = run(WorkspaceWatcher(events=events), ws,
                "echo more >> drafts/sub/n.txt && echo e > empty/e.txt && "
                "echo l > src/logs/l.txt && echo y >> src/logs/x.log")
    assert sorted(found) == ["drafts/sub/n.txt", "empty/e.txt", "src/logs/l.txt"]
    assert found["drafts/sub/n.txt"]["base_hash"] == sha(b"draft\n")
    assert not found["drafts/sub/n.txt"]["created"] and found["empty/e.txt"]["created"]


def test_lost_events_fall_back_to_git_status(tmp_path: Path) -> None:
    needs_events(True)
    ws = repo(tmp_path, {"t.txt": "t\n", "logs/.keep": ""})
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    many = queued // 2 + 10  # each file: a creation and a close, so the queue overflows
    found = run(WorkspaceWatcher(), ws, f"echo u >> t.txt && cd logs && "
                                        f"for i in $(seq {many}); do : > f$i.log; done")
    assert sorted(found) == ["t.txt"]
    assert found["t.txt"]["base_hash"] == sha(b"t\n")


def test_a_large_folder_outside_git_says_what_was_not_compared(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(8):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    watcher = WorkspaceWatcher(events=False, max_files=5)
    before = watcher.snapshot(ws)
    sh(ws, "echo x >> f1.txt")
    report = watcher.changes(ws, before)
    assert report.not_covered is not None and "only 5 were compared" in report.not_covered


# -- the one-time set-up, off the first command's step ----------------------------------------


def test_concurrent_first_snapshots_start_one_tracker(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot asked for while the tracker is being started (by ``prepare``) waits for that
    start instead of walking the workspace a second time."""
    needs_events(True)
    ws = repo(tmp_path, {"t.txt": "t\n"})
    started: list[str] = []
    gate = threading.Event()
    real_start = changes.Tracker.start.__func__  # type: ignore[attr-defined]

    def slow_start(cls: type[changes.Tracker], root: Path, *a: Any) -> changes.Tracker:
        started.append(str(root))
        gate.wait(60)  # held until the second caller is waiting on this start
        return real_start(cls, root, *a)

    monkeypatch.setattr(changes.Tracker, "start", classmethod(slow_start))
    watcher = WorkspaceWatcher()
    watcher.prepare(ws)
    while not watcher.preparing(ws):
        time.sleep(0.01)
    marks: list[Any] = []
    second = threading.Thread(target=lambda: marks.append(watcher.snapshot(ws)))
    second.start()
    while second.is_alive() and not started:
        time.sleep(0.01)
    gate.set()
    second.join(60)
    assert started == [os.path.realpath(ws)]  # one walk, though two callers asked
    sh(ws, "echo u >> t.txt")
    assert sorted(c["path"] for c in watcher.changes(ws, marks[0]).files) == ["t.txt"]


def test_a_run_starts_its_shell_watcher_before_any_command(tmp_path: Path) -> None:
    """A run whose tools include a watched one (run_shell) starts the workspace's tracker when
    it starts, so its first command does not pay the set-up; this run runs no command."""
    ws = repo(tmp_path, {"a.txt": "alpha\n"})
    assert not changes.WATCHER.preparing(ws)
    machine = build_machine(name="reader", initial="read", states={
        "read": {"action": "run_tool", "on": {"ok": "done", "failed": "failed"},
                 "with": {"tool": "read_file", "args": {"path": "a.txt"}}},
        "done": {"final": True}, "failed": {"final": True}}, tools=["read_file", "run_shell"])
    result = engine.run_sync(machine, store=tmp_path / "runs.db", workspace=ws)
    assert (result.status, result.state.state) == ("completed", "done"), result
    assert changes.WATCHER.preparing(ws)
    before = changes.WATCHER.snapshot(ws)
    sh(ws, "rm a.txt")
    report = changes.WATCHER.changes(ws, before)
    assert [(c["path"], c["deleted"]) for c in report.files] == [("a.txt", True)]


def test_a_folder_too_deep_to_watch_is_said_not_covered(tmp_path: Path) -> None:
    """A folder whose path is longer than the system allows gets no watch: the report says
    so instead of leaving out what changed there."""
    from turnstile_tools.changes import WATCHER
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    mark = WATCHER.snapshot(tmp_path)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(25):  # 25 x 200 characters: beyond PATH_MAX (4096)
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)
    report = WATCHER.changes(tmp_path, mark)
    assert report.not_covered is not None and "longer than the system allows" in \
        report.not_covered, report
