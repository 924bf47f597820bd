"""Which files in a store's folder a sandboxed command must not see: every SQLite file that
holds the engine's tables (another run's store beside this one), or cannot be read to tell;
not a project's own database, nor any other file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.store.sqlite import SqliteStore
from engine.store.sqlite.beside import HEADER, stores_beside


def test_engine_stores_beside_are_found_by_what_they_are(tmp_path: Path) -> None:
    for name in ("runs.db", "history.sqlite"):
        SqliteStore(tmp_path / name).close()
    with sqlite3.connect(tmp_path / "app.db") as conn:  # the project's own database
        conn.execute("CREATE TABLE users (id INTEGER)")
    (tmp_path / "broken.db").write_bytes(HEADER + b"\0" * 100)  # cannot be read: masked
    (tmp_path / "notes.txt").write_text("text\n")
    found = sorted(p.name for p in stores_beside(tmp_path / "runs.db"))
    assert found == ["broken.db", "history.sqlite", "runs.db"]


def test_the_store_names_its_private_files(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "old.db").close()
    store = SqliteStore(tmp_path / "new.db")
    try:
        files = store.private_files()
    finally:
        store.close()
    assert {Path(f).name for f in files} >= {"new.db", "new.db-wal", "old.db", "old.db-wal",
                                             "old.db-journal"}
