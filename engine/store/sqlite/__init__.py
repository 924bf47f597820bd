"""The SQLite store (``SqliteStore``): one file holds every run. ``store`` is the store,
``schema`` its tables and migrations, ``errors`` the translation of ``sqlite3``'s errors."""

from engine.store.sqlite.schema import MIGRATIONS, RUN_SPAN, SCHEMA_VERSION, row_key
from engine.store.sqlite.store import (
    EFFECT_ROW,
    EVENT_ROW,
    FOLDS,
    RUN_ROW,
    SQL,
    STEP_BEGIN,
    STEP_END,
    STEP_WHOLE,
    SqliteStore,
)

__all__ = [
    "EFFECT_ROW",
    "EVENT_ROW",
    "FOLDS",
    "MIGRATIONS",
    "RUN_ROW",
    "RUN_SPAN",
    "SCHEMA_VERSION",
    "SQL",
    "STEP_BEGIN",
    "STEP_END",
    "STEP_WHOLE",
    "SqliteStore",
    "row_key",
]
