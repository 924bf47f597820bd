"""Listing and searching a workspace as git sees it: an ignored tree is never named nor read
unless the call names it, a tracked file in an ignored folder is, and the plan's summary lists
tracked files first with a count of the rest; the same in a folder that is no repository.

Real repositories in tmp_path, the real tools through their handlers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from engine.tooling import ToolContext
from engine.workspace import listing
from engine.workspace.index import first_entries
from turnstile_tools.files import ListFilesArgs, list_files
from turnstile_tools.search import SearchTextArgs, search_text

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
FILES = {"src/app.py": "needle = 1\n", "src/util.py": "x = 2\n",
         "node_modules/lib/index.js": "needle()\n", "node_modules/lib/deep/more.js": "needle\n",
         "vendor/kept.js": "needle kept\n", "vendor/loose.js": "needle loose\n",
         "build.log": "needle in a log\n", "notes.txt": "needle untracked\n",
         ".gitignore": "node_modules/\nvendor/\n*.log\n"}


def workspace(tmp_path: Path, repo: bool) -> Path:
    ws = tmp_path / "ws"
    for name, text in FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    if repo:
        subprocess.run(["bash", "-c", "git init -q && git add src .gitignore && "
                        "git add -f vendor/kept.js && git commit -qm init"], cwd=ws,
                       env=GIT_ENV, check=True, capture_output=True)
    return ws


def listed(ws: Path, **args: object) -> str:
    return anyio.run(list_files, ListFilesArgs.model_validate(args), ToolContext(workspace=ws)
                     ).content


def searched(ws: Path, **args: object) -> str:
    return anyio.run(search_text, SearchTextArgs.model_validate({"pattern": "needle", **args}),
                     ToolContext(workspace=ws)).content


@pytest.mark.parametrize("repo", [True, False], ids=["git", "folder"])
def test_ignored_trees_are_neither_named_nor_read_unless_the_call_names_them(
        tmp_path: Path, repo: bool) -> None:
    ws = workspace(tmp_path, repo)
    everything = listed(ws, depth=10)
    assert "node_modules" not in everything and "build.log" not in everything
    assert "src/app.py" in everything and "notes.txt" in everything
    hits = searched(ws)
    assert "node_modules" not in hits and "build.log" not in hits and "loose" not in hits
    assert "src/app.py:1:needle = 1" in hits and "notes.txt:1:needle untracked" in hits
    if repo:  # git tracks it, so it counts, though its folder is ignored
        assert "vendor/kept.js" in everything and "vendor/kept.js:1:needle kept" in hits
    asked = listed(ws, path="node_modules", depth=10)
    assert "node_modules/lib/deep/more.js" in asked
    assert "node_modules/lib/index.js:1:needle()" in searched(ws, path="node_modules")


def test_a_capped_result_says_truncated(tmp_path: Path) -> None:
    ws = workspace(tmp_path, repo=True)
    assert "(truncated: showing 2 of" in listed(ws, depth=10, limit=2)
    assert "(truncated: " in searched(ws, max_results=1)


def test_the_plan_summary_lists_tracked_files_and_counts_the_rest(tmp_path: Path) -> None:
    ws = workspace(tmp_path, repo=True)
    found = listing.summary(ws, limit=1)
    assert found.shown == ["src/app.py"] and found.tracked == 4
    assert found.more == 3 and found.exact
    plain = listing.summary(workspace(tmp_path / "plain", repo=False), limit=10)
    assert plain.tracked is None and "node_modules/lib/index.js" not in plain.shown
    assert plain.shown == ["notes.txt", "src/app.py", "src/util.py"]


def test_plain_text_is_looked_for_by_git_first_with_the_same_answer(tmp_path: Path) -> None:
    ws = workspace(tmp_path, repo=True)
    (ws / "src" / "loud.py").write_text("NEEDLE = 3\n")
    ctx = ToolContext(workspace=ws)
    for sensitive in (True, False):
        literal = anyio.run(search_text, SearchTextArgs(pattern="needle",
                                                        case_sensitive=sensitive), ctx)
        regex = anyio.run(search_text, SearchTextArgs(pattern="need[l]e",
                                                      case_sensitive=sensitive), ctx)
        assert literal.data is not None and regex.data is not None
        assert literal.data["prefilter"] == "git grep" and "prefilter" not in regex.data
        assert literal.content == regex.content
        assert ("src/loud.py:1:NEEDLE = 3" in literal.content) is not sensitive


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_head_reader_agrees_with_git(tmp_path: Path, version: int) -> None:
    ws = tmp_path / "ws"
    names = [f"pkg/mod{i:02}/{'x' * (i * 3)}file{i}.py" for i in range(60)] + [".hidden/a.py"]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("1\n")
    (ws / "later.py").write_text("2\n")
    subprocess.run(["bash", "-c", "git init -q && git add pkg .hidden && git add -N later.py && "
                    f"git update-index --index-version {version}"], cwd=ws, env=GIT_ENV,
                   check=True, capture_output=True)
    git_names = subprocess.run(["git", "ls-files", "-z"], cwd=ws, env=GIT_ENV, check=True,
                               capture_output=True, text=True).stdout.split("\0")[:-1]
    visible = [n for n in git_names if not n.startswith(".")]
    found = first_entries(ws, 50, lambda n: not n.startswith("."))
    assert found == (visible[:50], len(git_names))
    assert listing.summary(ws, limit=3).more == len(git_names) - 3
