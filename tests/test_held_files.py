"""A run's database inside its workspace: what reads workspace files in the engine's process
never closes a descriptor of it (POSIX locks are per process: that would drop SQLite's, and
another process closing its connection would then delete the log the run still writes)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from engine.store.base import StepBegin
from engine.store.sqlite import SqliteStore
from engine.tooling.spec import ToolContext, ToolResult
from engine.vocabulary import held_files
from engine.vocabulary.state import RunInfo, RunState
from tests.conftest import ROOT, engine_env
from turnstile_tools import changes, search
from turnstile_tools.files import ReadFileArgs, read_file

OTHER = """
import sys
from engine.store.sqlite import SqliteStore
s = SqliteStore(sys.argv[1])
print(len(s.list_runs()), flush=True)
sys.stdin.readline()
s.close()
print("closed", flush=True)
"""
"""Another process's connection: open, then closed when told (it may believe it is the last)."""

COUNT = """
import sys
from engine.store.sqlite import SqliteStore
s = SqliteStore(sys.argv[1])
print(len(s.events(sys.argv[2], ["note"])))
s.close()
"""


def _store(ws: Path) -> SqliteStore:
    store = SqliteStore(ws / "engine.db")
    info = RunInfo("r1", "m", "m.yaml", "hash", "running", "a", str(ws), 1.0, 1.0, 0, 0, 0,
                   0.0, {})
    store.create_run(info, RunState("r1", "m", "a", 0, (), {}), StepBegin(0, "a", "act", 1.0))
    store.append_event("r1", 0, "note", {"n": 0}, 1.0)
    store.flush()
    return store


def _look(ws: Path) -> list[object]:
    return [changes.look(str(ws), n) for n in ("engine.db", "engine.db-shm", "engine.db-wal")]


def _read_tool(ws: Path) -> list[object]:
    ctx = ToolContext(workspace=ws)
    return [anyio.run(read_file, ReadFileArgs(path=n), ctx) for n in ("engine.db", "engine.db-shm")]


def _search(ws: Path) -> list[object]:
    return [search._read(str(ws / n)) for n in ("engine.db", "engine.db-shm", "engine.db-wal")]


READERS: dict[str, Callable[[Path], list[object]]] = {
    "change tracker": _look, "read_file": _read_tool, "search_text": _search}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    left = [p for p in held_files._ids.values() if Path(p).is_relative_to(tmp_path)]
    assert not left, "a closed store left its files held"


@pytest.mark.parametrize("reader", sorted(READERS))
def test_reading_the_workspace_keeps_the_runs_commits(ws: Path, reader: str) -> None:
    store = _store(ws)
    try:
        _read_then_commit(ws, store, reader)
    finally:
        store.close()


def _read_then_commit(ws: Path, store: SqliteStore, reader: str) -> None:
    other = subprocess.Popen([sys.executable, "-c", OTHER, str(ws / "engine.db")], cwd=ROOT,
                             env=engine_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert other.stdout is not None and other.stdin is not None
        assert other.stdout.readline().strip() == "1"  # its connection is open
        READERS[reader](ws)
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "closed"
    finally:
        other.kill()
        other.wait()
    for n in range(1, 4):  # commits after the other connection closed
        store.append_event("r1", 0, "note", {"n": n}, 1.0)
        store.flush()
    seen = subprocess.run([sys.executable, "-c", COUNT, str(ws / "engine.db"), "r1"], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "4", "commits of the run were lost"


def test_the_readers_pass_over_the_database(ws: Path) -> None:
    """The change tracker sees no database file, search finds nothing in it, read_file says
    why it does not read it."""
    store = _store(ws)
    try:
        assert _look(ws) == [changes.ABSENT] * 3
        assert _search(ws) == [b""] * 3
        for result in _read_tool(ws):
            assert isinstance(result, ToolResult) and result.is_error
            assert "open run database" in result.content, result.content
    finally:
        store.close()
    assert _look(ws)[0] != changes.ABSENT  # a closed store's file is an ordinary file again


def test_descriptors_kept_are_closed_with_the_last_store(ws: Path) -> None:
    """Two stores on one database, one opened through a link: a kept descriptor stays open
    until the last of them closes, whichever order they close in."""
    (ws / "link.db").symlink_to(ws / "engine.db")
    for order in ("link first", "name first"):
        stores = [_store(ws), SqliteStore(ws / "link.db")]
        if order == "link first":
            stores.reverse()
        fd = os.open(ws / "engine.db", os.O_RDONLY)
        held_files.close(fd)  # kept, not closed
        stores[0].close()
        os.fstat(fd)  # the other store still holds the database
        stores[1].close()
        with pytest.raises(OSError):
            os.fstat(fd)
        assert not held_files.held_path(ws / "engine.db")
        for name in ("engine.db", "engine.db-wal", "engine.db-shm"):
            (ws / name).unlink(missing_ok=True)


def test_a_file_that_took_over_a_held_files_inode_is_not_held(tmp_path: Path) -> None:
    """The journal a database had when its store opened is deleted by SQLite, and its inode
    goes to the next new file: that file is not the database's (here the journal is renamed,
    which keeps the inode deterministically)."""
    db = tmp_path / "engine.db"
    sqlite3.connect(db).close()
    journal = tmp_path / "engine.db-journal"
    journal.write_bytes(b"")
    held_files.hold(db)
    try:
        assert held_files.held_path(journal)
        other = tmp_path / "a.txt"
        journal.rename(other)
        assert not held_files.held_path(other)
        assert held_files.held_path(db)
    finally:
        held_files.release(db)
