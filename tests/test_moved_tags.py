"""``git tag -f NAME`` over a tag that exists moves it, and tags keep no reflog: where it
pointed is lost, as with ``git tag -d`` (refused). A new name is only created (asked)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository with tag v1 on its first commit and a second commit after it."""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    (tmp_path / "a.txt").write_text("two\n")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    return tmp_path, first


def test_a_moved_tag_leaves_no_record_of_where_it_was(tmp_path: Path) -> None:
    """Control: after ``git tag -f v1``, nothing in the repository's logs names the commit
    v1 pointed at."""
    ws, first = _repo(tmp_path)
    subprocess.run(["git", "-C", str(ws), "tag", "-f", "v1", "HEAD"], check=True,
                   capture_output=True)
    assert subprocess.run(["git", "-C", str(ws), "rev-parse", "v1"], capture_output=True,
                          text=True, check=True).stdout.strip() != first
    assert subprocess.run(["git", "-C", str(ws), "reflog", "exists", "refs/tags/v1"],
                          check=False).returncode != 0


@pytest.mark.parametrize("command", ["git tag -f v1 HEAD", "git tag -f -a v1 -m again",
                                     "git tag -fam again v1", "git tag --force v1"])
def test_moving_a_tag_that_exists_is_refused(tmp_path: Path, command: str) -> None:
    ws, _ = _repo(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] == "deny"


@pytest.mark.parametrize("command", ["git tag -f v2", "git tag -a -m 'after v1' v2",
                                     "git tag -l v1"])
def test_a_new_tag_or_a_listing_is_not_a_move(tmp_path: Path, command: str) -> None:
    ws, _ = _repo(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] != "deny"


@pytest.mark.parametrize("command", ["git tag --no-contains HEAD v1", "git tag --merged HEAD 'v*'",
                                     "git branch --no-merged HEAD 'feat*'",
                                     "git branch --points-at HEAD 'ma*'"])
def test_a_filter_makes_a_name_a_pattern_listed(tmp_path: Path, command: str) -> None:
    """Control: with ``--contains``-like filters git lists the names matching the word and
    creates nothing; the decision is allow."""
    ws, _ = _repo(tmp_path)
    refs = subprocess.run(["git", "-C", str(ws), "for-each-ref"], capture_output=True,
                          text=True, check=True).stdout
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=True)
    assert subprocess.run(["git", "-C", str(ws), "for-each-ref"], capture_output=True,
                          text=True, check=True).stdout == refs
    assert check_shell_json(command, ws, ENV)["decision"] == "allow"
