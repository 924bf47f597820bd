"""The engine's git calls run no program a repository names, and read only the workspace's own.

A repository is planted with every kind of program git runs on its own: ``core.fsmonitor``
(also through an ``include.path`` file), a filter driver (``clean``, ``smudge``, ``process``)
assigned to every file by ``.gitattributes``, a textconv and an external diff, a pager and
hooks. Each writes a marker file. A plain ``git status`` in that repository does write it (the
trap works); every reader of the engine (status, ls-files listings, index blobs, the plan
summary, the shell watcher in both modes, search_text and list_files) leaves it absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from engine.tooling import ToolContext
from engine.workspace import git, listing
from turnstile_tools.changes import WorkspaceWatcher
from turnstile_tools.files import ListFilesArgs, list_files
from turnstile_tools.search import SearchTextArgs, search_text

ROOT = Path(__file__).resolve().parent.parent
CLEAN_ENV = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"),
             "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
             "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
             "GIT_COMMITTER_EMAIL": "t@t"}


def sh(ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=ws, env=CLEAN_ENV, check=True,
                          capture_output=True, text=True)


def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config runs ``touch MARKER`` in every way it can; (ws, marker)."""
    ws, marker = tmp_path / "ws", tmp_path / "MARKER"
    ws.mkdir()
    (ws / "a.txt").write_text("needle\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.txt").write_text("b\n")
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n")
    sh(ws, "git init -q && git add -A && git commit -qm init")
    run = f"touch {marker}; cat"
    (ws / "extra.cfg").write_text(f'[core]\n\tfsmonitor = "touch {marker}; echo"\n')
    hooks = ws / ".git" / "evil-hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    with (ws / ".git" / "config").open("a") as f:
        f.write(f'[filter "evil"]\n\tclean = "{run}"\n\tsmudge = "{run}"\n'
                f'\tprocess = "touch {marker}; false"\n\trequired = true\n'
                f'[diff "evil"]\n\ttextconv = "{run}"\n\tcommand = "touch {marker}"\n'
                f'[diff]\n\texternal = "touch {marker}"\n'
                f'[core]\n\tpager = "touch {marker}; cat"\n\thooksPath = {hooks}\n'
                f'\tfsmonitor = "touch {marker}; echo"\n'
                f'[include]\n\tpath = {ws / "extra.cfg"}\n')
    later = time.time() + 5  # a stat change with the same bytes: status must look inside
    os.utime(ws / "a.txt", (later, later))
    return ws, marker


def test_the_trap_works_for_a_plain_git_status(tmp_path: Path) -> None:
    ws, marker = planted(tmp_path)
    subprocess.run(["git", "status", "--porcelain"], cwd=ws, env=CLEAN_ENV,
                   capture_output=True)
    assert marker.exists(), "the planted repository must run its programs for plain git"


def test_no_reader_of_the_engine_runs_a_planted_program(tmp_path: Path) -> None:
    ws, marker = planted(tmp_path)
    state = git.status(ws)
    assert "a.txt" not in state.dirty, "same bytes, new time: clean, found without a filter"
    assert "a.txt" not in git.worktree(ws).dirty, "the ls-files listing compares it too"
    assert listing.summary(ws).shown == ["a.txt", "sub/b.txt"], "tracked files, none hidden"
    assert sorted(n for n, _ in listing.files(ws, ws)) == [
        ".gitattributes", "a.txt", "extra.cfg", "sub/b.txt"]
    assert git.index_blobs(ws, ["a.txt"]) == {"a.txt": b"needle\n"}
    for events in (True, False):
        watcher = WorkspaceWatcher(events=events)
        before = watcher.snapshot(ws)
        (ws / "sub" / "b.txt").write_text(f"b {events}\n")
        found = watcher.changes(ws, before).files
        assert [c["path"] for c in found] == ["sub/b.txt"]
    ctx = ToolContext(workspace=ws)
    hits = anyio.run(search_text, SearchTextArgs(pattern="needle"), ctx)
    assert "a.txt:1:needle" in hits.content
    listed = anyio.run(list_files, ListFilesArgs(), ctx)
    assert "sub/b.txt" in listed.content
    assert not marker.exists(), "a planted program ran"


def test_the_engines_own_git_variables_do_not_leak_into_its_calls(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mine.txt").write_text("1\n")
    sh(ws, "git init -q && git add -A && git commit -qm init")
    other = tmp_path / "other"
    other.mkdir()
    (other / "theirs.txt").write_text("2\n")
    sh(other, "git init -q && git add -A && git commit -qm init")
    env = {**CLEAN_ENV, "GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other),
           "GIT_INDEX_FILE": str(other / ".git" / "index"), "PYTHONPATH": str(ROOT)}
    code = ("import json, sys; from pathlib import Path; from engine.workspace import listing;"
            "print(json.dumps(listing.summary(Path(sys.argv[1])).shown))")
    out = subprocess.run([sys.executable, "-c", code, str(ws)], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == ["mine.txt"]


def test_a_folder_inside_a_repository_is_not_that_repository(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    (outer / "inner" / "f.txt").write_text("x\n")
    (outer / ".gitignore").write_text("inner/\n")
    sh(outer, "git init -q && git add .gitignore && git commit -qm init")
    inner = outer / "inner"
    assert not git.repository(inner)
    with pytest.raises(git.GitUnavailable):
        git.status(inner)
    assert listing.summary(inner).shown == ["f.txt"], "walked, though the outer repo ignores it"
