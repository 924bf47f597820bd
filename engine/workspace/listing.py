"""The files of a workspace as git sees them: tracked first, ignored trees never entered.

In a repository (``git.repository``) git answers: ``ls-files`` lists tracked and untracked
files in C, and the folders git ignores (``--others --ignored --directory``: each ignored
folder once) prune a walk without a pattern matched per entry. Elsewhere, or when git cannot
answer, the ``.gitignore`` rules are matched in Python (``ignore``). Either way an ignored
folder is never entered unless the caller asks for ignored files, and ``.git`` never is.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.workspace import git
from engine.workspace.ignore import ALWAYS_SKIPPED, Judge, NothingIgnored, stack_for, walk
from engine.workspace.index import first_entries


@dataclass(frozen=True, slots=True)
class GitIgnored:
    """A walk's judge from git's own answer: the ignored folders and files it named."""

    dirs: frozenset[str]
    files: frozenset[str]

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool:
        return name in ALWAYS_SKIPPED or rel in (self.dirs if is_dir else self.files)

    def enter(self, root: Path, rel_dir: str) -> GitIgnored:
        return self


def named_ignored(root: Path, rel_start: str) -> bool:
    """Whether ``rel_start`` is itself ignored or lies in an ignored folder: a caller that
    names such a folder asks for its files (as ``rg`` searches a path it is given)."""
    if not rel_start:
        return False
    if git.repository(root):
        try:
            return bool(git.run(root, ["check-ignore", "--no-index", "-q", "--", rel_start],
                                ok_codes=(0, 1), want_code=True))
        except git.GitUnavailable:
            pass
    parts = rel_start.split("/")
    stack = stack_for(root, "")
    for i, name in enumerate(parts):
        here = "/".join(parts[:i + 1])
        if stack.ignored(here, name, (root / here).is_dir()):
            return True
        stack = stack.enter(root, here)
    return False


def judge(root: Path, rel_start: str, include_ignored: bool = False) -> Judge:
    """What a walk of ``rel_start`` (``""``: the root) keeps out: nothing but ``.git`` when
    ignored files are asked for, or when ``rel_start`` is itself ignored."""
    if include_ignored or named_ignored(root, rel_start):
        return NothingIgnored()
    if git.repository(root):
        try:
            named = git.ls_files(root, "--others", "--ignored", "--exclude-standard",
                                 "--directory", paths=[rel_start or "."])
        except git.GitUnavailable:
            pass
        else:
            return GitIgnored(frozenset(n.rstrip("/") for n in named if n.endswith("/")),
                              frozenset(n for n in named if not n.endswith("/")))
    return stack_for(root, rel_start)


def files(root: Path, start: Path, include_ignored: bool = False) -> Iterator[tuple[str, str]]:
    """(path relative to ``root``, absolute path) of every file under ``start`` a search
    should read: tracked and untracked, not ignored (all but ``.git`` with
    ``include_ignored`` or when ``start`` is itself ignored). Tracked files deleted from the
    working tree are named too (opening them fails)."""
    rel_start = start.relative_to(root).as_posix()
    rel_start = "" if rel_start == "." else rel_start
    include_ignored = include_ignored or named_ignored(root, rel_start)
    if not include_ignored and git.repository(root):
        try:
            names = git.ls_files(root, "--cached", "--others", "--exclude-standard",
                                 "--deduplicate", paths=[rel_start or "."])
        except git.GitUnavailable:
            pass
        else:
            base = str(root)  # ls-files names untracked files first: sorted, as a walk gives
            yield from ((name, f"{base}/{name}") for name in sorted(names))
            return
    for entry in walk(root, start, judge=judge(root, rel_start, include_ignored)):
        if not entry.is_dir and not entry.is_symlink:
            yield entry.rel, entry.path


def files_containing(root: Path, start: Path, literal: str, ignore_case: bool
                     ) -> list[str] | None:
    """The files ``files`` would name under ``start`` that contain ``literal`` (bytes, or
    ASCII letters in any case), found by ``git grep -F -l`` in C; None where git cannot answer
    (not a repository, ``start`` ignored): then every file must be read."""
    rel_start = start.relative_to(root).as_posix()
    rel_start = "" if rel_start == "." else rel_start
    if not git.repository(root) or named_ignored(root, rel_start):
        return None
    args = ["grep", "-l", "-z", "-F", "-I", "--untracked", "--no-textconv",
            "--no-recurse-submodules", *(["-i"] if ignore_case else []), "-e", literal,
            "--", rel_start or "."]
    try:
        out = git.run(root, args, ok_codes=(0, 1), overrides=["grep.fallbackToNoIndex=false"])
        # --untracked skips ignored folders whole, tracked files in them too: those are read
        hidden = git.ls_files(root, "--cached", "--ignored", "--exclude-standard",
                              paths=[rel_start or "."])
    except git.GitUnavailable:
        return None
    return sorted({*git.split_z(out), *hidden})  # in the order of files()


@dataclass(frozen=True, slots=True)
class Summary:
    """The first files of a workspace and how many more there are."""

    shown: list[str]
    more: int
    """Files beyond ``shown``, hidden ones included (a lower bound when ``exact`` is
    False)."""
    exact: bool
    tracked: int | None = None
    """Files git tracks (None outside a repository)."""


SUMMARY_WALK_CAP = 5000
"""Files a summary outside a repository looks at; beyond them it says "at least"."""


def summary(root: Path, limit: int = 40) -> Summary:
    """Up to ``limit`` files for a prompt, hidden paths (a component starting with ``.``) and
    ``__pycache__`` left out. In a repository: tracked files only, in index order, from one
    ``ls-files`` (reading the index, never the tree); the count beyond them counts NUL bytes.
    Untracked files are left out there: finding them means reading every folder."""
    if git.repository(root):
        try:
            return _git_summary(root, limit)
        except git.GitUnavailable:
            pass
    return _walked_summary(root, limit)


def _visible(name: str) -> bool:
    return not name.startswith(".") and "/." not in name and "__pycache__" not in name.split("/")


def _git_summary(root: Path, limit: int) -> Summary:
    """The first tracked files and their count from the head of the index file itself
    (``index.first_entries``: no program runs, and neither cost grows with the repository);
    from ``git ls-files`` where that reader declines (a split or SHA-256 index, a worktree's
    index elsewhere)."""
    found = first_entries(root, limit, _visible)
    if found is not None:
        names, total = found
        return Summary(names, max(0, total - len(names)), exact=True, tracked=total)
    tracked = git.run(root, ["ls-files", "-z"])
    shown = [n for n in itertools.islice((n for n in _names(tracked) if _visible(n)), limit)]
    total = tracked.count(b"\0")
    return Summary(shown, max(0, total - len(shown)), exact=True, tracked=total)


def _names(out: bytes) -> Iterator[str]:
    """The NUL-terminated names of ``out``, one at a time (a summary reads only the first)."""
    pos = 0
    while (end := out.find(b"\0", pos)) >= 0:
        yield os.fsdecode(out[pos:end])
        pos = end + 1


def _walked_summary(root: Path, limit: int) -> Summary:
    names: list[str] = []
    complete = True
    for entry in walk(root, root):
        if entry.is_dir or not _visible(entry.rel):
            continue
        if len(names) >= SUMMARY_WALK_CAP:
            complete = False
            break
        names.append(entry.rel)
    names.sort()
    return Summary(names[:limit], max(0, len(names) - limit), exact=complete)
