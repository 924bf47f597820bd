"""The SQLite store (``SqliteStore``): one file holds every run. ``store`` is the store,
``schema`` its tables and migrations, ``errors`` the translation of ``sqlite3``'s errors."""

from engine.store.sql.rows import WORKERS_PREFIX, busy_timeout, lease_alive, shown_running
from engine.store.sqlite.schema import MIGRATIONS, NEW_DATABASE, RUN_SPAN, SCHEMA_VERSION, row_key
from engine.store.sqlite.store import (
    AUDIT_ROW,
    CHECKPOINT_ROW,
    EFFECT_ROW,
    EVENT_ROW,
    FOLDS,
    MESSAGE_ROW,
    RUN_ROW,
    SQL,
    STEP_BEGIN,
    STEP_END,
    STEP_WHOLE,
    SqliteStore,
    connect,
    connect_readonly,
    file_identity,
)

__all__ = [
    "AUDIT_ROW",
    "CHECKPOINT_ROW",
    "EFFECT_ROW",
    "EVENT_ROW",
    "FOLDS",
    "MESSAGE_ROW",
    "MIGRATIONS",
    "NEW_DATABASE",
    "RUN_ROW",
    "RUN_SPAN",
    "SCHEMA_VERSION",
    "SQL",
    "STEP_BEGIN",
    "STEP_END",
    "STEP_WHOLE",
    "WORKERS_PREFIX",
    "SqliteStore",
    "busy_timeout",
    "connect",
    "connect_readonly",
    "file_identity",
    "lease_alive",
    "row_key",
    "shown_running",
]
