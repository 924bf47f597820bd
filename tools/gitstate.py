"""What a command changed under ``.git/``: the files that say what the repository is.

The workspace tracker never looks inside ``.git`` (git's own churn is not the user's work), but
a command that commits, moves a branch or stages files changes the repository, and the run
reports it like any other change. A listing of the repository's top-level files and of
``refs/``, ``logs/``, ``modules/`` and ``worktrees/`` (sizes and times; small files hashed) is
taken before a command and compared after it. Objects are content-addressed and reached only
through refs, so they are not listed: a commit shows as its ref, its log and the index.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

LISTED_DIRS = ("refs", "logs", "modules", "worktrees")
"""Walked below the top level: under ``modules/`` (submodules' git folders) and ``worktrees/``
each nested git folder's ``objects/`` is skipped."""
MAX_FILES = 5_000
"""Files of ``refs/`` and ``logs/`` looked at; beyond them a change is not reported."""
HASHED_BYTES = 4_096
"""Files up to this size are hashed before the command (their ``base_hash``)."""


@dataclass(frozen=True, slots=True)
class Entry:
    stat: tuple[int, int, int]
    digest: str | None


def git_folder(workspace: str) -> str | None:
    """The workspace's git folder: ``.git``, or the target of a ``.git`` file."""
    dot = os.path.join(workspace, ".git")
    if os.path.isdir(dot):
        return dot
    try:
        with open(dot) as f:
            line = f.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = os.path.join(workspace, line.removeprefix("gitdir:").strip())
    return target if os.path.isdir(target) else None


def listing(workspace: str) -> dict[str, Entry]:
    """The repository's listed files now, by path relative to the workspace (``.git/HEAD``);
    empty outside a repository."""
    folder = git_folder(workspace)
    if folder is None:
        return {}
    out: dict[str, Entry] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        _add(out, folder, name)
    for sub in LISTED_DIRS:
        for root, dirs, files in os.walk(os.path.join(folder, sub)):
            if "HEAD" in files:  # a nested git folder: its objects are not listed
                dirs[:] = [d for d in dirs if d != "objects"]
            for name in files:
                if len(out) >= MAX_FILES:
                    return out
                _add(out, folder, os.path.relpath(os.path.join(root, name), folder))
    return out


def _add(out: dict[str, Entry], folder: str, rel: str) -> None:
    path = os.path.join(folder, rel)
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not os.path.isfile(path) or os.path.islink(path) or rel.endswith(".lock"):
        return
    out[f".git/{rel}"] = Entry((st.st_size, st.st_mtime_ns, st.st_ino),
                               _digest(path) if st.st_size <= HASHED_BYTES else None)


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def changes(before: dict[str, Entry], workspace: str) -> list[dict[str, Any]]:
    """Each listed file created, deleted or changed since ``before``, as the tracker reports
    workspace files (``path``, ``base_hash``, ``result_hash``, ``created``, ``deleted``)."""
    after = listing(workspace)
    folder = git_folder(workspace) or ""
    out = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel), after.get(rel)
        if old is not None and new is not None and old.stat == new.stat:
            continue
        result = _digest(os.path.join(folder, rel.removeprefix(".git/"))) if new else None
        if old is not None and new is not None and old.digest is not None \
                and old.digest == result:
            continue
        out.append({"path": rel, "base_hash": old.digest if old else None,
                    "result_hash": result, "created": old is None, "deleted": new is None})
    return out
