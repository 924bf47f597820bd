"""Which store a command uses, from one URL: a path or ``sqlite:///PATH`` for SQLite,
``postgresql://...`` for PostgreSQL.

First match wins: ``--store``, ``--db``, ``ENGINE_STORE_URL``, ``ENGINE_DB``,
``.engine/engine.db`` in the current directory. The Postgres store (and ``psycopg``) is
imported only when its URL is opened. Files that live beside the data (workspaces of golden
tasks, trace files) go beside a SQLite file, and under ``.engine/`` in the current directory
for a server.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.store.base import Durability, Store, display_url
from engine.vocabulary.errors import UsageError

DEFAULT_DB = Path(".engine") / "engine.db"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class StoreTarget:
    """A store to open: its kind, the SQLite file or the server URL, and where files go."""

    kind: Literal["sqlite", "postgres"]
    url: str
    """As given for Postgres (it may hold a password: show ``display`` instead)."""
    path: Path | None = None
    """The SQLite file."""

    @property
    def display(self) -> str:
        """The store as messages name it (a Postgres URL without its password)."""
        if self.path is not None:
            return str(self.path)
        return display_url(self.url)

    @property
    def data_dir(self) -> Path:
        """Where workspaces of golden tasks and trace files go."""
        return self.path.parent if self.path is not None else Path(".engine")

    def exists(self) -> bool:
        """False only for a SQLite file not created yet (a server's database always is)."""
        return self.path is None or self.path.exists()

    def open(self, *, durability: Durability | None = None, reading: bool = False) -> Store:
        """The store; ``reading``: also where it cannot be written (read-only file, standby)."""
        kw: dict[str, Any] = {} if reading else {"durability": durability or "normal"}
        if self.path is not None:
            from engine.store.sqlite import SqliteStore

            return (SqliteStore.for_reading(self.path) if reading
                    else SqliteStore(self.path, **kw))
        try:
            from engine.store.postgres import PostgresStore
        except ImportError as exc:  # psycopg is an optional extra
            raise UsageError(
                f"{self.display}: a PostgreSQL store needs psycopg: pip install "
                "'turnstile-fsm[postgres]'") from exc
        return PostgresStore.for_reading(self.url) if reading else PostgresStore(self.url, **kw)


def parse_store_url(value: str | os.PathLike[str]) -> StoreTarget:
    """``postgresql://`` (or ``postgres://``) URLs, ``sqlite:///relative/path``,
    ``sqlite:////absolute/path``, or a plain path; any other scheme is refused."""
    text = os.fspath(value)
    if text.startswith(POSTGRES_SCHEMES):
        return StoreTarget("postgres", text)
    if text.startswith("sqlite://"):
        rest = text[len("sqlite://"):]
        if not rest.startswith("/") or rest == "/":
            raise UsageError(f"store URL {text!r}: expected sqlite:///PATH (three slashes, "
                             "four for an absolute path)")
        return StoreTarget("sqlite", text, Path(rest[1:]))
    if _SCHEME.match(text):
        raise UsageError(f"store URL {text.split('://')[0]}://...: unknown kind of store "
                         "(use a path, sqlite:///PATH or postgresql://...)")
    if not text:
        raise UsageError("empty store URL: give a path, sqlite:///PATH or postgresql://...")
    return StoreTarget("sqlite", text, Path(text))


def store_target(store: str | None = None, db: str | None = None) -> StoreTarget:
    """``store`` (``--store``), else ``db`` (``--db``), else ``ENGINE_STORE_URL``, else
    ``ENGINE_DB``, else ``.engine/engine.db``."""
    for value in (store, db, os.environ.get("ENGINE_STORE_URL"), os.environ.get("ENGINE_DB")):
        if value:
            return parse_store_url(value)
    if DEFAULT_DB.parent.is_symlink():  # planted by a command run here: the history would
        raise UsageError(  # go, and be read from, wherever it points
            f"{DEFAULT_DB.parent} is a symbolic link (to {os.readlink(DEFAULT_DB.parent)}), "
            "not the engine's folder: a command run here may have made it; remove it or "
            "pass --db")
    return StoreTarget("sqlite", str(DEFAULT_DB), DEFAULT_DB)


def as_target(value: str | os.PathLike[str] | StoreTarget) -> StoreTarget:
    """``value`` (a URL, a path or a target) as a target."""
    return value if isinstance(value, StoreTarget) else parse_store_url(value)


def open_store(value: str | os.PathLike[str] | StoreTarget, *,
               durability: Durability | None = None, reading: bool = False) -> Store:
    """The store at ``value`` (a URL, a path or a target)."""
    return as_target(value).open(durability=durability, reading=reading)
