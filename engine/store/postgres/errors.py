"""Translation of ``psycopg`` errors into the engine's ``StoreError`` tree, in one place.

A PostgreSQL fault carries a SQLSTATE (its class, the first two characters, says what kind of
fault); a connection that never opened carries only libpq's message. Each becomes one
``StoreError`` subclass whose message names the server (never the password), the fault and
what to do, so the CLI prints one line.
"""

from __future__ import annotations

import psycopg

from engine.vocabulary.errors import (
    StoreAuthError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreReadOnlyError,
    StoreTooBusyError,
    StoreUnreachableError,
)
from engine.vocabulary.hints import command

READ_ONLY = {"25006"}  # read_only_sql_transaction (a standby, or default_transaction_read_only)
NO_PRIVILEGE = {"42501"}
FULL = {"53100", "53200"}  # disk_full, out_of_memory
LOCKED = {"55P03", "40P01", "57014"}  # lock_not_available, deadlock, canceled (lock_timeout)
CORRUPT = {"XX001", "XX002"}  # data_corrupted, index_corrupted
AUTH = {"28000", "28P01"}
TOO_MANY = {"53300"}  # too_many_connections
TOO_MANY_WORDS = ("too many clients", "too many connections", "connection slots are reserved")
NO_DATABASE = {"3D000"}
AUTH_WORDS = ("password authentication failed", "no pg_hba.conf entry", "role \"",
              "authentication failed", "no password supplied")


def _detail(exc: psycopg.Error) -> str:
    """The first line of the server's (or libpq's) message."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].strip()


def translate(exc: psycopg.Error, where: str, *, lock_timeout_s: float) -> StoreError:
    """The ``StoreError`` for ``exc`` met on the database ``where`` (a URL without password)."""
    state = getattr(exc, "sqlstate", None) or ""
    detail = _detail(exc)
    lowered = str(exc).lower()
    if state in TOO_MANY or any(w in lowered for w in TOO_MANY_WORDS):
        return StoreTooBusyError(
            f"{where}: the server has no connection left ({detail}); wait for other clients "
            "to finish, or raise the server's max_connections")
    if state in AUTH or (not state and any(w in lowered for w in AUTH_WORDS)):
        return StoreAuthError(
            f"{where}: the server refused the login ({detail}); check the user and password "
            "in the store URL (or PGPASSWORD / ~/.pgpass) and the server's pg_hba.conf")
    if state in NO_DATABASE or (not state and "does not exist" in lowered
                                and "database" in lowered):
        return StoreError(f"{where}: no such database ({detail}); create it first (createdb)")
    if state in READ_ONLY:
        return StoreReadOnlyError(
            f"{where}: the database is read-only ({detail}); run and resume need a writable "
            "primary (runs, show, trace and audit still work)")
    if state in NO_PRIVILEGE:
        return StoreReadOnlyError(
            f"{where}: the role may not write here ({detail}); run and resume need INSERT and "
            "UPDATE on the Turnstile tables (runs, show, trace and audit still work)")
    if state in FULL:
        return StoreFullError(
            f"{where}: the database server is out of space ({detail}); free space on its "
            "file system and try again")
    if state in LOCKED:
        return StoreLockedError(
            f"{where}: another session held a lock this store needs for more than "
            f"{lock_timeout_s:g} s; try again when it is done (ENGINE_BUSY_TIMEOUT sets the wait)")
    if state in CORRUPT:
        return StoreCorruptError(
            f"{where}: the server reports damaged data ({detail}); a full check: "
            f"{command('check', store=where)}")
    if isinstance(exc, psycopg.OperationalError) and (not state or state.startswith(("08",
                                                                                     "57P"))):
        return StoreUnreachableError(
            f"{where}: cannot reach the database server ({detail}); check that it is running "
            "and that the host and port in the store URL are right")
    return StoreError(f"{where}: the database server reported an error ({detail})")
