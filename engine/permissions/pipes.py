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
    reversed_diff = worktree_diff(before)
    if reversed_diff is not None and not patch_files(after):
        return reverts(after, reversed_diff)
    if first == "diff" and then == "patch" and applies and not _elsewhere(words):
        return ("patch makes the file diff compared a copy of the other one: it replaces an "
                "existing file with content the command line does not show")
    return None


def worktree_diff(argv: list[Word]) -> bool | None:
    """For ``git diff`` against the working tree: whether it is reversed (``-R``); None for
    any other command (``--cached``: the staged copy remains)."""
    if not argv or program_name(argv[0]) != "git" or not _worktree_diff(argv):
        return None
    return _reverse([w.value or "" for w in argv[1:]])


def patch_files(argv: list[Word]) -> list[Word]:
    """The patch files ``git apply`` or ``patch`` reads instead of its input (``git apply
    P``, ``patch -i P``, ``patch FILE P``)."""
    name = program_name(argv[0]) if argv else ""
    rest = argv[1:]
    if name == "git":
        rest = rest[_git_globals([w.value or "" for w in rest]):]
        return [w for w in rest[1:] if w.value is None or not w.value.startswith("-")] if [
            w.value for w in rest[:1]] == ["apply"] else []
    if name != "patch":
        return []
    found, positional, i = [], [], 0
    while i < len(rest):
        v = rest[i].value or ""
        if v in ("-i", "--input") and i + 1 < len(rest):
            found.append(rest[i + 1])
            i += 2
            continue
        if v.startswith("--input="):
            found.append(Word.of(v.split("=", 1)[1]))
        elif v.startswith("-i") and len(v) > 2:
            found.append(Word.of(v[2:]))
        elif v in _PATCH_VALUES:
            i += 1
        elif not v.startswith("-"):
            positional.append(rest[i])
        i += 1
    return found or positional[1:2]


def reverts(argv: list[Word], reversed_diff: bool) -> str | None:
    """Why applying the working tree's own diff (reversed or not, as ``reversed_diff``) with
    ``argv`` discards the uncommitted changes, or None (not applied, or applied as made)."""
    name = program_name(argv[0]) if argv else ""
    words = [w.value or "" for w in argv[1:]]
    if name == "git":
        words = words[_git_globals(words):]  # git -C . apply -R
    applies = not _NOT_APPLIED & {v.split("=", 1)[0] for v in words} or "--apply" in words
    if not applies or not ((name == "git" and words[:1] == ["apply"]) or name == "patch"):
        return None
    if _reverse(words) == reversed_diff:
        return None  # git diff | git apply: the changes are already there
    return (f"{'git apply' if name == 'git' else 'patch'} undoes what git diff prints: "
            "uncommitted changes are lost, as with git checkout -- .")


_PATCH_VALUES = frozenset({"-p", "-d", "-D", "-o", "-r", "-B", "-V", "-z", "-F", "-Y", "-g",
                           "--directory", "--output", "--reject-file", "--prefix", "--suffix",
                           "--basename-prefix", "--fuzz", "--ifdef", "--version-control",
                           "--get", "--quoting-style", "--reject-format"})
"""``patch`` options whose value is the next word."""


def _worktree_diff(argv: list[Word]) -> bool:
    """``git diff`` against the working tree (not ``--cached``: the staged copy remains)."""
    words = [w.value or "" for w in argv[1:]]
    at = _git_globals(words)
    return words[at:at + 1] == ["diff"] and not {"--cached", "--staged"} & set(words)


def _git_globals(words: list[str]) -> int:
    """How many of git's words are its own options, before the subcommand."""
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return at


def _reverse(words: list[str]) -> bool:
    return "--reverse" in words or any(
        v.startswith("-") and not v.startswith("--") and "R" in v[1:] for v in words)


def _elsewhere(words: list[str]) -> bool:
    """``patch -o OUT``: the result goes to another file."""
    return any(v in ("-o", "--output") or v.startswith(("--output=", "-o")) for v in words)
