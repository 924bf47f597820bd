"""A stored row the engine cannot decode, on SQLite and PostgreSQL, through the CLI.

One message body of one run is made invalid JSON (the database itself stays sound): ``check``
reads every run back through the engine's decoders, prints the damaged run and exits 2;
``show`` and ``resume`` of that run print one line naming the run and ``check`` and exit 2
(never 1, which means the run failed); the other run is untouched and still shown.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import EngineCLI
from tests.test_park import make_task


def _damage_sqlite(db: Path, run_id: str) -> None:
    with sqlite3.connect(db) as conn:
        changed = conn.execute("UPDATE messages SET body = '{\"role\": broken' WHERE key = ("
                               "SELECT MIN(key) FROM messages WHERE run_id = ?)",
                               (run_id,)).rowcount
    assert changed == 1


def _damage_postgres(url: str, run_id: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        changed = conn.execute("UPDATE messages SET body = '{\"role\": broken' WHERE run_id ="
                               " %s AND seq = 0", (run_id,)).rowcount
    assert changed == 1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_damaged_message_is_found_by_check_and_refused_by_show_and_resume(
        cli: EngineCLI, tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    store: tuple[str, ...] = ()
    if kind == "postgres":
        store = ("--store", request.getfixturevalue("pg_url"))
    sound = cli.json("run", "machines/coding_agent.yaml", *store)
    proc = cli("run", "machines/coding_agent.yaml", "--golden", str(make_task(tmp_path)),
               "--json", *store)
    assert proc.returncode == 5, proc.stderr
    parked = json.loads(proc.stdout)["run_id"]
    if kind == "postgres":
        _damage_postgres(store[1], parked)
    else:
        _damage_sqlite(cli.db, parked)
    flags = store or ("--db", str(cli.db))
    checked = cli("check", *flags)
    assert checked.returncode == 2, checked.stderr
    assert checked.stdout.startswith(f"damaged run {parked}:") and sound["run_id"] not in \
        checked.stdout
    assert checked.stderr.count("\n") == 1 and parked in checked.stderr
    for command in (("show", parked), ("resume", parked)):
        got = cli(*command, *store)
        assert got.returncode == 2, (command, got.stderr)
        assert got.stderr.count("\n") == 1 and "Traceback" not in got.stderr
        assert f"run {parked} has a damaged row" in got.stderr and " check " in got.stderr
    assert cli("show", sound["run_id"], *store).returncode == 0
    assert cli.json("check", *flags)["damaged_runs"] == [parked]
