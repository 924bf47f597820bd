"""Translation of ``sqlite3`` errors into the engine's ``StoreError`` tree, in one place.

SQLite reports a fault as a result code; its low byte is the primary code that says what
happened (read-only, busy, full, corrupt, ...). Each becomes one ``StoreError`` subclass whose
message names the database file, the fault and what to do, so the CLI prints one line.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from engine.vocabulary.errors import (
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
)
from engine.vocabulary.hints import command

SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 5, 6, 8
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 11, 13, 14, 26
SQLITE_READONLY_DIRECTORY = SQLITE_READONLY | (6 << 8)
"""The folder cannot be written, so the ``-wal``/``-shm`` files cannot be created."""


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (``None`` for errors raised by Python itself)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_corrupt(exc: sqlite3.Error) -> bool:
    return primary_code(exc) in (SQLITE_CORRUPT, SQLITE_NOTADB)


def needs_immutable(exc: sqlite3.Error) -> bool:
    """True when a read-only open failed only because the folder cannot hold ``-shm``/``-wal``."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code == SQLITE_READONLY_DIRECTORY or primary_code(exc) in (SQLITE_CANTOPEN,
                                                                      SQLITE_READONLY)


def translate(exc: sqlite3.Error, path: Path, *, busy_timeout_s: float) -> StoreError:
    """The ``StoreError`` for ``exc`` met on the database at ``path``."""
    code = primary_code(exc)
    detail = str(exc)
    if code == SQLITE_READONLY:
        return StoreReadOnlyError(
            f"{path}: the database is read-only ({detail}); run and resume need write access "
            "to the file and its folder (runs, show, trace and audit still work)")
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreLockedError(
            f"{path}: another process held the database's write lock for more than "
            f"{busy_timeout_s:g} s; try again when it is done (ENGINE_BUSY_TIMEOUT sets the wait)")
    if code == SQLITE_FULL:
        return StoreFullError(
            f"{path}: disk full ({detail}); free space on its file system and try again")
    if code == SQLITE_NOTADB:
        return StoreCorruptError(f"{path}: not a usable Turnstile database ({detail})")
    if code == SQLITE_CORRUPT:
        return StoreCorruptError(
            f"{path}: the database is corrupted ({detail}); a full check: "
            f"{command('check', store=str(path))}")
    if code == SQLITE_CANTOPEN:
        return StoreError(f"{path}: cannot open the database file ({detail}); check that its "
                          "folder exists and is readable")
    return StoreError(f"{path}: not a usable Turnstile database ({detail})")


def translate_os(exc: OSError, path: Path) -> StoreError:
    """A file-system error met while preparing the database's folder."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        return StoreFullError(f"{path}: disk full ({reason}); free space on its file system "
                              "and try again")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreReadOnlyError(f"{path}: cannot create the database's folder ({reason})")
    return StoreError(f"{path}: cannot use the database's folder ({reason})")
