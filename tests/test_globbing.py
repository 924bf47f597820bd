"""Globs under the options that widen them, against bash: the same names, option by option."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

from engine.permissions.globbing import GLOB_OPTIONS, glob_matches
from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace

PATTERNS = ("*", "**", "**/*.txt", "src/**", "*/", "**/", "[A-Z]*", ".*", "[!a]*", "?.txt",
            "src/*/*.txt", "src/**/*.TXT", "**/[[:upper:]]*", "S*/**", "src/.*/*",
            "[^a-b]*.txt", "nosuch/**", "*.none", "**/y.txt", "[]a]*", "[a-]*", "*\\*",
            "[[:punct:].]*", "./*", "../*/*.txt")
OPTION_SETS = [frozenset(c) for n in range(len(GLOB_OPTIONS) + 1)
               for c in itertools.combinations(sorted(GLOB_OPTIONS), n)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folders, dot names, mixed case, a link to a folder and one to a file."""
    root = tmp_path_factory.mktemp("globs")
    for rel in ("a.txt", "B.txt", "c.TXT", ".env", "src/app.py", "src/x.txt",
                "src/deep/y.txt", "src/deep/Z.TXT", "src/.hidden/h.txt", ".cfg/k.txt",
                "Src2/w.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    os.symlink("src/deep", root / "linked")
    os.symlink("a.txt", root / "src" / "a-link.txt")
    return root


def bash_matches(root: Path, pattern: str, options: frozenset[str]) -> set[str]:
    """What bash makes of the pattern (nothing when it matches nothing: nullglob)."""
    script = "".join(f"shopt -s {o}; " for o in sorted(options | {"nullglob"}))
    out = subprocess.run(["bash", "--noprofile", "--norc", "-c",
                          f'{script}for f in {pattern}; do printf "%s\\0" "$f"; done'],
                         cwd=root, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                         capture_output=True, timeout=30, check=True)
    return {p for p in out.stdout.decode().split("\0") if p}


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "+".join(sorted(o)) or "none")
def test_matches_are_those_bash_makes(tree: Path, options: frozenset[str]) -> None:
    """Names compared without a final ``/`` (bash writes ``src/**``'s own folder with one,
    ``S*/**``'s without)."""
    differ = {}
    for pattern in PATTERNS:
        ours = {p.rstrip("/") for p in glob_matches(pattern, str(tree), options) or ()}
        theirs = {p.rstrip("/") for p in bash_matches(tree, pattern, options)}
        if ours != theirs:
            differ[pattern] = (sorted(ours - theirs), sorted(theirs - ours))
    assert differ == {}


def test_a_walk_past_the_bound_is_unknown_not_shorter(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.permissions import globbing

    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f.txt").write_text("x")
    assert len(glob_matches("**/*.txt", str(tmp_path), frozenset({"globstar"})) or ()) == 30
    monkeypatch.setattr(globbing, "MAX_GLOB_ENTRIES", 20)
    assert glob_matches("**/*.txt", str(tmp_path), frozenset({"globstar"})) is None


@pytest.mark.parametrize(("command", "expected"), [
    ("cat **/*.txt", "allow"), ("shopt -s globstar; cat **/*.txt", "ask"),
    ("true || shopt -s globstar; cat src/**", "ask"), ("shopt -s $o; cat **/*.txt", "ask"),
    ("shopt -s nocaseglob; /usr/bin/R[M] a.txt", "deny"), ("/usr/bin/R[M] a.txt", "ask"),
    ("shopt -s globstar; wc -l **/*.py", "allow"),
])
def test_a_glob_is_judged_by_what_it_matches_under_the_options_set(
        tmp_path: Path, command: str, expected: str) -> None:
    """A link to a file outside the workspace two folders down: ``**`` reaches it only
    under globstar; ``R[M]`` names rm only under nocaseglob."""
    ws = make_workspace(tmp_path)
    (ws / "src" / "deep").mkdir(parents=True)
    os.symlink("/etc/passwd", ws / "src" / "deep" / "leak.txt")
    assert check_shell_json(command, ws, ENV)["decision"] == expected, command


def test_a_glob_in_a_command_name_runs_its_first_match_with_the_others_as_arguments(
        tmp_path: Path) -> None:
    """``/usr/bin/tr[u]*`` is ``true truncate ..`` in bash's order, ``truncate true ..`` in
    another locale's: each match is judged as the program, the others as its arguments; past
    32 matches the program is only known at run time."""
    ws = make_workspace(tmp_path)
    out = check_shell_json("/usr/bin/tr[u]* a.txt", ws, ENV)
    assert out["decision"] == "deny", out
    assert ["/usr/bin/truncate", "/usr/bin/true", "a.txt"] in [c["argv"] for c in
                                                               out["commands"]]
    assert check_shell_json("/usr/bin/*", ws, ENV, approval="auto")["decision"] == "deny"


def test_options_the_caller_exported_widen_globs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "src" / "deep").mkdir(parents=True)
    os.symlink("/etc/passwd", ws / "src" / "deep" / "leak.txt")
    env = dict(ENV, BASHOPTS="checkwinsize:globstar")
    assert check_shell_json("cat **/*.txt", ws, env)["decision"] == "ask"
