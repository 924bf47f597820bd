"""Files this process holds locks on (its open SQLite databases): nothing else in the process
may close a descriptor of one.

A POSIX record lock belongs to a process and a file, not to a descriptor: closing *any*
descriptor of a database file (or of its ``-shm``) drops every lock SQLite holds on it. Another
process's connection then believes it is alone, checkpoints and deletes the write-ahead log
this process still appends to, and every later commit is lost without an error. A database
inside a workspace is an ordinary file to what reads workspace files (the change tracker's
baseline, ``read_file``, ``search_text``, a fork's copy), so those readers ask here first
(``held``, ``held_path``) and hand a descriptor they opened anyway to ``keep`` instead of
closing it; kept descriptors are closed once the last store on that database has closed.
"""

from __future__ import annotations

import contextlib
import os
import threading

SUFFIXES = ("", "-wal", "-shm", "-journal")
"""A database's files: SQLite locks the database and the ``-shm`` index; all four are its."""

_lock = threading.Lock()
_stores: dict[str, int] = {}
"""Open stores by database path, resolved: one database opened through a link and through its
own name is one entry, so its kept descriptors stay open until the last of its stores closes."""
_kept: dict[str, list[int]] = {}
"""Descriptors handed to ``keep``, by the database path they belong to."""
_ids: dict[tuple[int, int], str] = {}
"""(device, inode) of every held file -> its database path. Replaced, never mutated: readers
on other threads read it without the lock."""


def hold(path: str | os.PathLike[str]) -> None:
    """A store has opened the database at ``path`` (call once its files exist)."""
    global _ids
    key = os.path.realpath(path)
    with _lock:
        _stores[key] = _stores.get(key, 0) + 1
        _ids = _identities()


def release(path: str | os.PathLike[str]) -> None:
    """A store on ``path`` has closed its connection: when it was the last, the descriptors
    kept for that database are closed (no lock of this process is left to lose)."""
    global _ids
    key = os.path.realpath(path)
    with _lock:
        left = _stores.get(key, 0) - 1
        if left > 0:
            _stores[key] = left
            return
        _stores.pop(key, None)
        for fd in _kept.pop(key, ()):
            with contextlib.suppress(OSError):
                os.close(fd)
        _ids = _identities()


def held(st: os.stat_result) -> bool:
    """Whether the file ``st`` describes is one of this process's open databases' files."""
    owner = _ids.get((st.st_dev, st.st_ino)) if _ids else None
    return owner is not None and _names(owner, st)


def _names(path: str, st: os.stat_result) -> bool:
    """Whether one of ``path``'s files is still the file ``st`` describes: SQLite deletes a
    journal or write-ahead log it had when the store opened, and the system gives its inode to
    the next new file (a workspace file would pass for the database)."""
    for suffix in SUFFIXES:
        try:
            now = os.stat(path + suffix)
        except OSError:
            continue
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def held_path(path: str | os.PathLike[str]) -> bool:
    """``held`` for a path (followed if a link); False when it cannot be statted."""
    if not _ids:
        return False
    try:
        return held(os.stat(path))
    except OSError:
        return False


def keep(fd: int, st: os.stat_result) -> None:
    """Take ``fd``, open on the held file ``st``, instead of closing it (closing it would drop
    the store's locks)."""
    with _lock:
        owner = _ids.get((st.st_dev, st.st_ino))
        if owner is None:  # its store closed meanwhile: nothing left to lose
            os.close(fd)
            return
        _kept.setdefault(owner, []).append(fd)


def close(fd: int, st: os.stat_result | None = None) -> None:
    """Close ``fd`` unless it is open on a held file (then ``keep`` it)."""
    if _ids:
        if st is None:
            try:
                st = os.fstat(fd)
            except OSError:
                st = None
        if st is not None and held(st):
            keep(fd, st)
            return
    os.close(fd)


def _identities() -> dict[tuple[int, int], str]:
    out: dict[tuple[int, int], str] = {}
    for path in _stores:
        for suffix in SUFFIXES:
            try:
                st = os.stat(path + suffix)
            except OSError:
                continue
            out[(st.st_dev, st.st_ino)] = path
    return out
