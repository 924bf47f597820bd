"""The workspace's folders under inotify watches, and the file paths their events name.

Every folder git would see gets one watch: never ``.git``, the engine's ``.engine``, cache
folders (``__pycache__``, ...), a nested repository, or a folder the ``Judge`` ignores (an
ignored tree such as ``node_modules`` costs nothing, however large). In a repository the caller
names the folders git already knows (``watch_folders``) and only the rest are read here.
``drain`` reads what the kernel queued and returns the paths of files that may have changed
since the last drain; it keeps the tree current as it goes: a new folder is watched and
scanned (its files were written before the watch existed), a folder moved or deleted loses
its watches and names the files that were in it (``files_under``, from the caller's record of
what existed).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from engine.workspace.inotify import (
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    Inotify,
)

SKIPPED_AT_ROOT = frozenset({".engine"})
"""The engine's database, traces and workspaces when a run works in the current directory."""
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"})
"""Folders never watched at any depth: derived files a tool writes as a side effect (bytecode,
test and lint caches), nobody's change to the workspace; and git's own folder."""


class WatchLimit(OSError):
    """The kernel refused another watch (``max_user_watches``) or another instance."""


def skipped(rel: str) -> bool:
    """Whether a path lies where nothing is ever reported (see ``CACHE_DIRS``)."""
    parts = rel.split("/")
    return parts[0] in SKIPPED_AT_ROOT or any(p in CACHE_DIRS for p in parts[:-1])


@dataclass
class WatchedTree:
    """The watched folders of one workspace, by watch descriptor and by relative path."""

    root: str
    notify: Inotify
    ignored: Callable[[str, bool], bool]
    """Whether a path (a folder when the flag is set) is left out: ignored and not tracked."""
    files_under: Callable[[str], Iterable[str]]
    by_wd: dict[int, str] = field(default_factory=dict)
    by_rel: dict[str, int] = field(default_factory=dict)
    overflowed: bool = False
    """The kernel dropped events: what changed since the last drain is not known."""
    root_gone: bool = False
    rules_changed: bool = False
    """A ``.gitignore`` changed: the caller's cached judges are stale."""
    unwatched: list[str] = field(default_factory=list)
    """Folders that could not be watched (a path longer than the system allows, a folder
    closed to the engine): changes in them are not seen, and reports say so."""

    @property
    def root_path(self) -> Path:
        return Path(self.root)

    def watch(self, rel: str, collect: list[str] | None = None) -> None:
        """Watch folder ``rel`` and every folder below it that is not ignored; with
        ``collect``, append the files found (each folder is watched before it is read, so a
        file created meanwhile is either read or reported by an event)."""
        pending = [rel]
        while pending:
            here = pending.pop()
            if self._add(here):
                pending += read_folder(self.root_path, here, self.ignored, collect)

    def watch_folders(self, folders: Iterable[str]) -> None:
        """Watch each of ``folders`` without reading it (a caller that knows the folders
        already: in a repository, the index's)."""
        for rel in folders:
            self._add(rel)

    def _add(self, here: str) -> bool:
        """One watch on folder ``here``; False when it is gone or not a folder any more."""
        try:
            wd = self.notify.add(os.path.join(self.root, here) if here else self.root)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.ENOMEM, errno.EMFILE):
                raise WatchLimit(exc.errno, f"no inotify watch left for {here or '.'}") \
                    from exc
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                self.unwatched.append(here)  # deeper than PATH_MAX, closed to us: unseen
            return False
        self.by_wd[wd] = here
        self.by_rel[here] = wd
        return True

    def forget(self, rel: str, stop: bool) -> None:
        """Drop the watches of ``rel`` and below (``stop``: tell the kernel too; a deleted
        folder's watch is gone already)."""
        prefix = f"{rel}/"
        for here in [r for r in self.by_rel if r == rel or r.startswith(prefix)]:
            wd = self.by_rel.pop(here)
            self.by_wd.pop(wd, None)
            if stop:
                self.notify.remove(wd)

    def drain(self) -> set[str]:
        """Files that may have changed since the last drain (relative paths, not ignored)."""
        touched: set[str] = set()
        arrived: list[str] = []
        left: list[str] = []
        for ev in self.notify.read():
            if ev.mask & IN_Q_OVERFLOW:
                self.overflowed = True
                continue
            here = self.by_wd.get(ev.wd)
            if here is None:
                continue
            if ev.mask & IN_IGNORED:
                self.by_wd.pop(ev.wd, None)
                if self.by_rel.get(here) == ev.wd:
                    self.by_rel.pop(here)
                continue
            if ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                self.root_gone = self.root_gone or here == ""
                continue
            rel = f"{here}/{ev.name}" if here else ev.name
            if ev.mask & IN_ISDIR:
                if ev.mask & (IN_MOVED_FROM | IN_DELETE):
                    left.append(rel)
                if ev.mask & (IN_CREATE | IN_MOVED_TO):
                    arrived.append(rel)
            elif not skipped(rel):
                touched.add(rel)
                self.rules_changed = self.rules_changed or ev.name == ".gitignore"
        self._moved(left, arrived, touched)
        return self._kept(touched)

    def _moved(self, left: list[str], arrived: list[str], touched: set[str]) -> None:
        for rel in left:  # its files are gone from here (a rename names them again below)
            if not skipped(rel + "/x"):
                touched.update(self.files_under(rel))
            self.forget(rel, stop=True)
        for rel in arrived:
            if skipped(rel + "/x") or rel in self.by_rel:
                continue
            name = rel.rpartition("/")[2]
            path = os.path.join(self.root, rel)
            if skip_folder(rel, name, self.ignored, path) or not os.path.isdir(path):
                continue
            found: list[str] = []
            self.watch(rel, found)
            touched.update(found)

    def _kept(self, touched: set[str]) -> set[str]:
        """``touched`` without files the ignore rules drop (tracked ones stay)."""
        return {rel for rel in touched if not self.ignored(rel, False)}


def read_folder(root: Path, here: str, ignored: Callable[[str, bool], bool],
                collect: list[str] | None) -> list[str]:
    """The folders inside ``here`` to go on with; with ``collect``, the files kept appended
    to it (links are never files here)."""
    prefix = f"{here}/" if here else ""
    inner: list[str] = []
    try:
        it = os.scandir(os.path.join(root, here))
    except OSError:
        return inner
    with it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                rel = prefix + e.name
                if not skip_folder(rel, e.name, ignored, e.path):
                    inner.append(rel)
            elif collect is not None and not e.is_symlink():
                rel = prefix + e.name
                if not ignored(rel, False):
                    collect.append(rel)
    return inner


def skip_folder(rel: str, name: str, ignored: Callable[[str, bool], bool], path: str) -> bool:
    """Folders never watched nor walked: caches, ``.git``, the engine's own, ignored ones,
    nested repositories."""
    if name in CACHE_DIRS or (name in SKIPPED_AT_ROOT and "/" not in rel):
        return True
    if ignored(rel, True):
        return True
    return os.path.lexists(os.path.join(path, ".git"))


def walk_files(root: str, ignored: Callable[[str, bool], bool], cap: int) -> list[str]:
    """Up to ``cap`` files a scan compares, found as the watches would be placed."""
    base = Path(root)
    found: list[str] = []
    pending = [""]
    while pending and len(found) < cap:
        pending += read_folder(base, pending.pop(), ignored, found)
    return found[:cap]
