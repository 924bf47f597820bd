"""Other runs' stores in the folder of the one a run uses: a sandboxed command must see none.

A store holds every run's history and, per run, the policy a ``resume`` loads again: a
command that could rewrite one could turn the sandbox off for the run resumed from it. A
folder given to ``--db`` may hold several (``data/old.db`` beside ``data/new.db``); each is
found by what it is, a SQLite file with the engine's tables, not by its name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from engine.vocabulary import held_files

HEADER = b"SQLite format 3\x00"
MAX_ENTRIES = 4096
"""Entries of the folder looked at; beyond them, the rest are not (said by the caller)."""
_ENGINE_TABLES = ("runs", "events")
_SIDE_FILES = ("-wal", "-shm", "-journal")


def stores_beside(db: Path) -> list[Path]:
    """The SQLite files in ``db``'s folder (``db`` itself included) that hold the engine's
    tables, or that cannot be read to tell (a store being written, a damaged one)."""
    found: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(db.parent) as entries:
        for n, entry in enumerate(entries):
            if n >= MAX_ENTRIES:
                break
            if entry.name.endswith(_SIDE_FILES) or not entry.is_file(follow_symlinks=False):
                continue
            if held_files.held_path(Path(entry.path)):
                found.append(Path(entry.path))  # a store this process has open: never opened
                # again here, as closing a second descriptor drops the first one's locks
            elif _is_sqlite(entry.path) and _holds_runs(entry.path):
                found.append(Path(entry.path))
    return found


def side_files(db: Path) -> list[str]:
    """``db`` and the files SQLite keeps beside it while it is written."""
    return [str(db), *(f"{db}{suffix}" for suffix in _SIDE_FILES)]


def _is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HEADER)) == HEADER
    except OSError:
        return False


def _holds_runs(path: str) -> bool:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                                timeout=1)) as conn:
            names = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return True  # cannot tell: masked
    return all(t in names for t in _ENGINE_TABLES)
