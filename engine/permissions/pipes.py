"""Pairs of pipeline stages whose effect neither stage shows alone.

``git diff | git apply -R`` reverses every uncommitted change, as ``git checkout -- .``
does; ``diff old.py new.py | patch old.py`` makes old.py a copy of new.py, as ``cp`` does.
Each stage alone is a read or an ordinary edit; together they discard work.
"""

from __future__ import annotations

from engine.permissions.effect import program_name
from engine.permissions.words import Word

_NOT_APPLIED = frozenset({"--check", "--stat", "--numstat", "--summary", "--dry-run"})
"""Options under which ``git apply`` or ``patch`` changes no file."""


def pipe_discards(before: list[Word], after: list[Word]) -> str | None:
    """Why ``before | after`` discards work, or None."""
    if not before or not after or any(w.value is None for w in [*before, *after]):
        return None
    first, then = program_name(before[0]), program_name(after[0])
    words = [w.value or "" for w in after[1:]]
    applies = not _NOT_APPLIED & {v.split("=", 1)[0] for v in words} or "--apply" in words
    if first == "git" and _worktree_diff(before) and applies and (
            (then == "git" and words[:1] == ["apply"]) or then == "patch") and _reverse(words):
        return (f"{' '.join(w.value or '' for w in after)} reverses what git diff prints: "
                "uncommitted changes are lost, as with git checkout -- .")
    if first == "diff" and then == "patch" and applies and not _elsewhere(words):
        return ("patch makes the file diff compared a copy of the other one: it replaces an "
                "existing file with content the command line does not show")
    return None


def _worktree_diff(argv: list[Word]) -> bool:
    """``git diff`` against the working tree (not ``--cached``: the staged copy remains)."""
    words = [w.value or "" for w in argv[1:]]
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return words[at:at + 1] == ["diff"] and not {"--cached", "--staged"} & set(words)


def _reverse(words: list[str]) -> bool:
    return "--reverse" in words or any(
        v.startswith("-") and not v.startswith("--") and "R" in v[1:] for v in words)


def _elsewhere(words: list[str]) -> bool:
    """``patch -o OUT``: the result goes to another file."""
    return any(v in ("-o", "--output") or v.startswith(("--output=", "-o")) for v in words)
