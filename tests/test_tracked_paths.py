"""The index's paths as the change tracker keeps them: folders to watch, and lookups that read
only the run of the listing they ask about.

Listings come from real repositories (``git ls-files -z``), so the order is git's own: names
that sort around ``/`` (``a-b``, ``a.b``, ``a0``) sit on both sides of a folder's run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from engine.workspace import git
from turnstile_tools.tracked import TrackedPaths

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
PATHS = ["a-b/x", "a.b", "a/b/c/deep.txt", "a/b/c2", "a/f", "a/z", "a0/y", "top", "z/.keep",
         "sp ace/é.txt"]


def tracked(tmp_path: Path, paths: list[str]) -> TrackedPaths:
    ws = tmp_path / "ws"
    for rel in paths:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(rel)
    subprocess.run(["bash", "-c", "git init -q && git add -A && git commit -qm init"], cwd=ws,
                   env=GIT_ENV, check=True, capture_output=True)
    return TrackedPaths.parse(git.index_paths(ws))


def test_the_folders_are_every_folder_above_a_tracked_path(tmp_path: Path) -> None:
    paths = tracked(tmp_path, PATHS)
    assert sorted(paths.folders) == ["", "a", "a-b", "a/b", "a/b/c", "a0", "sp ace", "z"]


def test_a_lookup_names_tracked_files_only(tmp_path: Path) -> None:
    paths = tracked(tmp_path, PATHS)
    for rel in PATHS:
        assert paths.holds(rel), rel
    for rel in ("a", "a/b", "a/b/c", "a/b/c/deep", "a/x", "b", "a-b/y", "top/x", "z/keep",
                "sp ace/e.txt", "nowhere/top"):
        assert not paths.holds(rel), rel


def test_the_paths_under_a_folder_are_its_run_of_the_listing(tmp_path: Path) -> None:
    paths = tracked(tmp_path, PATHS)
    assert paths.under("a") == ["a/b/c/deep.txt", "a/b/c2", "a/f", "a/z"]
    assert paths.under("a/b") == ["a/b/c/deep.txt", "a/b/c2"]
    assert paths.under("a-b") == ["a-b/x"]
    assert paths.under("sp ace") == ["sp ace/é.txt"]
    assert paths.under("a/b/c2") == [] and paths.under("none") == []


def test_an_empty_index_has_the_root_alone(tmp_path: Path) -> None:
    empty = TrackedPaths.parse(b"")
    assert empty.folders == {""} and not empty.holds("x") and empty.under("") == []
    assert TrackedPaths().folders == {""}


def test_the_worktree_listing_tags_dirty_untracked_and_whole_folders() -> None:
    out = (b"? new.txt\0? drafts/\0C c.txt\0C c.txt\0R gone.txt\0C gone.txt\0"
           b"? sub/empty/\0C d.txt\0")
    state = git.parse_worktree(out)
    assert state.dirty == ["c.txt", "gone.txt", "d.txt"]
    assert state.untracked == ["new.txt"]
    assert state.untracked_dirs == ["drafts", "sub/empty"]
