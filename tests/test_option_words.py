"""A word only known at run time may be an option: git's log family writes a file for one.

``git log "$(cat f)"`` with f holding ``--output=src/app.py`` replaces src/app.py with the
log, and a tag or a commit subject can carry the same word into a loop that only reads
(a cloned repository's tag ``--output=x`` reaches ``git describe``). The control runs show
git doing it. What prints hex object ids (``git rev-list``, ``git merge-base``, ``git log
--format=%H``, the first field of ``git log --oneline``) never starts with ``-``, so loops
over those still read.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import decisions, git

GIT = shutil.which("git")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """A repository with work in src/app.py and two commits, the last one's subject an
    option."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("work\n")
    (ws / "f.txt").write_text("--output=src/app.py\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "first")
    git(ws, "commit", "-q", "--allow-empty", "-m", "--output=src/app.py")
    return ws


def _control(ws: Path, command: str) -> bool:
    """Whether bash running ``command`` in a copy replaces the copy's src/app.py."""
    copy = ws.parent / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ws, copy)
    subprocess.run(["bash", "-c", command], cwd=copy, capture_output=True, check=False)
    return (copy / "src" / "app.py").read_text() != "work\n"


@pytest.mark.parametrize("command", [
    'git log "$(cat f.txt)"', 'x=$(head -1 f.txt); git show --stat "$x"',
    'git log -1 --format=%s | while read -r s; do git log -1 "$s"; done',
    'git log --oneline -1 | while read -r c rest; do git show "$rest"; done',
    'git blame "$(cat f.txt)" -- src/app.py', 'git rev-list "$(cat f.txt)" HEAD',
    "cat f.txt | xargs git log", "git log -1 --format=%s | xargs git log -1",
])
def test_a_run_time_word_that_is_an_option_writes_a_file(ws: Path, command: str) -> None:
    assert _control(ws, command), command  # git wrote its output over src/app.py
    assert decisions(ws, command) == ("ask", "deny"), command


def test_a_cloned_tag_reaches_git_describe(tmp_path: Path, ws: Path) -> None:
    git(ws, "update-ref", "refs/tags/--output=src/app.py", "HEAD~1")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    command = "git log --oneline $(git describe --tags --abbrev=0)"
    assert _control(clone, command)
    assert decisions(clone, command) == ("ask", "deny")


@pytest.mark.parametrize("command", [
    'for c in $(git rev-list -n 2 HEAD); do git show -s --format="%h %s" "$c"; done',
    'git log --format=%H -n 2 | while read -r c; do git show --stat "$c"; done',
    'git log --follow --format=%h -- a.txt | while read -r c; do git show --stat "$c"; done',
    'git log --oneline -2 | while read -r c rest; do git show --stat "$c"; done',
    'git rev-list HEAD | head -1 | while read -r c; do git log -1 "$c"; done',
    'b=$(git merge-base HEAD HEAD~1); git log --oneline "$b"..HEAD',
    'b=$(git merge-base HEAD HEAD~1); git diff --stat "$b"..HEAD',  # a range, not a path
    'mapfile -t c < <(git rev-list -n 2 HEAD); for x in "${c[@]}"; do git show -s "$x"; done',
    'c=( $(git rev-list -n 2 HEAD) ); for x in "${c[@]}"; do git show -s "$x"; done',
    'git show "$(git rev-parse HEAD~1)":src/app.py', 'git log origin/"$(cat f.txt)"..HEAD',
    'git log -n "$(wc -l < f.txt)" --oneline', 'git grep -n -e "$(cat f.txt)"',
    'git log --oneline -- "$(cat f.txt)"',
    "git log --format=%H -2 | xargs -n1 git show --stat", "git rev-list HEAD | xargs git show -s",
])
def test_object_ids_and_words_after_text_still_read(ws: Path, command: str) -> None:
    assert not _control(ws, command), command
    assert decisions(ws, command) == ("allow", "allow"), command


@pytest.mark.parametrize("command", [
    'latest=$(git describe --tags --abbrev=0 --match "v*"); git rev-list --count "$latest"..HEAD',
    'p=$(git tag -l "v*" --sort=-v:refname | sed -n 2p); c=$(git tag --list "v*" | head -1)'
    '; git log --oneline "$p..$c"',
    'for t in $(git tag -l "v*" --sort=v:refname); do git show -s "$t"; done',
])
def test_tags_a_pattern_names_never_start_with_a_dash(tmp_path: Path, ws: Path,
                                                      command: str) -> None:
    """``git describe --match 'v*'`` and ``git tag -l 'v*'`` print names the pattern
    matches, even in a clone that carries a tag ``--output=src/app.py`` (kept out); a line
    ``head``/``sed -n 2p`` picks is one of them."""
    git(ws, "tag", "v1", "HEAD~1")
    git(ws, "tag", "v2")
    git(ws, "update-ref", "refs/tags/--output=src/app.py", "HEAD~1")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    assert not _control(clone, command), command
    assert decisions(clone, command) == ("allow", "allow"), command
    unmatched = command.replace(' --match "v*"', "").replace('"v*"', '"*"')
    assert decisions(clone, unmatched)[1] == "deny", unmatched  # any tag: maybe an option
    if "for t" in command:
        assert _control(clone, unmatched)  # git show --output=src/app.py


def test_rev_parse_prints_what_it_does_not_know(ws: Path) -> None:
    """``git rev-parse "$x"`` echoes an option it does not know, so its output is not an
    object id when a word of it is only known at run time."""
    assert GIT is not None
    out = subprocess.run([GIT, "rev-parse", "--output=src/app.py"], cwd=ws,
                         capture_output=True, text=True).stdout
    assert out.strip() == "--output=src/app.py"
    command = 'git log $(git rev-parse "$(cat f.txt)")'
    assert _control(ws, command)
    assert decisions(ws, command)[1] == "deny"
