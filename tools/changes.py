"""Files a shell command changed, found by comparing workspace snapshots taken around it.

A shell command does not say what it wrote, so the workspace is looked at before and after: the
size and modification time of every file git would see (``tools.gitignore.walk``; never
``.git`` nor the engine's own ``.engine`` folder), which is cheap, then a hash of only the
files whose size or time moved. The content of small text files is kept from before the call,
so a change to one of them gets its base hash and a unified diff; larger or binary files get
hashes only. A workspace too large to walk quickly is left out rather than half reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnstile_tools.gitignore import walk
from turnstile_tools.patch import make_patch
from turnstile_tools.workspace import is_binary, sha256

MAX_FILES = 20_000
"""Files walked per snapshot; above this the workspace is not tracked (``complete`` False)."""
MAX_TEXT_BYTES = 64_000
"""Files up to this size are kept from before the call, so their change gets a patch."""
MAX_KEPT_BYTES = 8_000_000
"""Content kept per snapshot in all; beyond it a change gets hashes but no base or patch."""
SKIPPED_DIRS = frozenset({".engine"})
"""The engine's database, traces and workspaces when a run works in the current directory."""
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Folders of derived files a tool writes as a side effect (bytecode, test and lint caches),
at any depth: they are nobody's change to the workspace."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The workspace's files at one moment: size and mtime, and the bytes of small ones."""

    stats: dict[str, tuple[int, int]]
    kept: dict[str, bytes]
    complete: bool


def snapshot(root: Path, *, keep: bool = True) -> Snapshot:
    """Size and mtime of every file under ``root`` git would see, and (``keep``) the bytes
    of small ones. Symbolic links are not followed nor reported."""
    root = root.resolve()
    stats: dict[str, tuple[int, int]] = {}
    kept: dict[str, bytes] = {}
    budget = MAX_KEPT_BYTES
    for entry in walk(root, root):
        if entry.is_dir or entry.is_symlink or _skipped(entry.rel):
            continue
        if len(stats) >= MAX_FILES:
            return Snapshot({}, {}, complete=False)
        stat = _stat(entry.path)
        if stat is None:
            continue
        stats[entry.rel] = stat
        if keep and stat[0] <= min(MAX_TEXT_BYTES, budget):
            data = _read(entry.path)
            if data is not None:
                kept[entry.rel] = data
                budget -= len(data)
    return Snapshot(stats, kept, complete=True)


def changes(root: Path, before: Snapshot) -> list[dict[str, Any]]:
    """Every file created, modified or deleted since ``before``, in path order.

    Each is ``{path, base_hash, result_hash, created, deleted}`` plus ``patch`` for a small
    text file; ``base_hash`` is None for a created file and for a modified one too large to
    have been kept.
    """
    if not before.complete:
        return []
    after = snapshot(root, keep=False)
    if not after.complete:
        return []
    moved = {p for p in before.stats.keys() | after.stats.keys()
             if before.stats.get(p) != after.stats.get(p)}
    out = []
    for rel in sorted(moved):
        change = _change(root.resolve(), rel, before, after)
        if change is not None:
            out.append(change)
    return out


def _change(root: Path, rel: str, before: Snapshot, after: Snapshot) -> dict[str, Any] | None:
    old = before.kept.get(rel)
    new = _read(str(root / rel)) if rel in after.stats else None
    if old is not None and new is not None and old == new:
        return None  # touched, not changed
    created, deleted = rel not in before.stats, rel not in after.stats
    change: dict[str, Any] = {
        "path": rel, "base_hash": sha256(old) if old is not None else None,
        "result_hash": sha256(new) if new is not None else None,
        "created": created, "deleted": deleted}
    known = (created or old is not None) and (deleted or new is not None)
    patch = _patch(rel, old, new) if known else None
    if patch is not None:
        change["patch"] = patch
    return change


def _patch(rel: str, old: bytes | None, new: bytes | None) -> str | None:
    """A unified diff when both sides are known small text (a side may be absent)."""
    sides = [b for b in (old, new) if b is not None]
    if not sides or any(len(b) > MAX_TEXT_BYTES or is_binary(b) for b in sides):
        return None
    try:
        old_text = None if old is None else old.decode("utf-8")
        new_text = "" if new is None else new.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if new is None:  # deleted: the diff to an empty file, named as git names a deletion
        return make_patch(rel, old_text, "").replace(f"+++ b/{rel}", "+++ /dev/null", 1)
    return make_patch(rel, old_text, new_text)


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] in SKIPPED_DIRS or any(part in CACHE_DIRS for part in parts[:-1])


class WorkspaceWatcher:
    """``ToolSpec.watcher`` of tools whose results cannot name the files they change."""

    def snapshot(self, workspace: Path) -> Snapshot:
        return snapshot(workspace)

    def changes(self, workspace: Path, before: Any) -> list[dict[str, Any]]:
        return changes(workspace, before)


WATCHER = WorkspaceWatcher()
