"""Questions about the machine and about build outputs that change nothing:
``hostnamectl``-style settings, archive listings, toolchains' versions, an in-memory SQLite
database. Each has a twin one step away that writes or reaches out, and keeps its answer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("machine") / "ws"
    (root / "build").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "orders.csv").write_text("id,status,amount\n1,paid,3\n2,open,4\n")
    (root / "a.txt").write_text("work\n")
    member = root / "build" / "x.o"
    member.write_text("object\n")
    subprocess.run(["ar", "rc", "lib.a", "x.o"], cwd=root / "build", check=True)
    member.unlink()
    return root


def decision(ws: Path, command: str) -> str:
    return str(check_shell_json(command, ws, ENV)["decision"])


@pytest.mark.parametrize(("command", "expected"), [
    ("hostnamectl", "allow"), ("hostnamectl status --static", "allow"),
    ("timedatectl show -p Timezone", "allow"), ("localectl list-locales", "allow"),
    ("timedatectl set-timezone UTC", "ask"), ("hostnamectl set-hostname box", "ask"),
    ("hostnamectl -H root@203.0.113.7", "ask"),
])
def test_the_machine_s_settings_are_read_until_a_verb_sets_them(
        ws: Path, command: str, expected: str) -> None:
    assert decision(ws, command) == expected, command


@pytest.mark.parametrize(("command", "expected"), [
    ("ar t build/lib.a", "allow"), ("ar tv build/lib.a", "allow"),
    ("ar p build/lib.a x.o | head -1", "allow"), ("ar x build/lib.a", "ask"),
    ("ar rcs build/lib.a a.txt", "ask"), ("ar t /usr/lib/libfoo.a", "ask"),
])
def test_ar_lists_and_prints_an_archive_and_changes_it_with_any_other_operation(
        ws: Path, command: str, expected: str) -> None:
    assert decision(ws, command) == expected, command
    if expected == "allow":  # the control: bash leaves the folder as it was
        before = sorted(p.name for p in (ws / "build").iterdir())
        subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False)
        assert sorted(p.name for p in (ws / "build").iterdir()) == before


@pytest.mark.parametrize(("command", "expected"), [
    ("rustc -vV", "allow"), ("rustc --print sysroot", "allow"), ("rustc -v main.rs", "ask"),
    ("datamash -t, --header-in count 1 sum 3 < data/orders.csv", "allow"),
    ("datamash -t, sum 3 < data/orders.csv > a.txt", "deny"),
])
def test_toolchain_versions_and_summaries_print(ws: Path, command: str, expected: str) -> None:
    assert decision(ws, command) == expected, command


@pytest.mark.parametrize(("command", "expected"), [
    ("sqlite3 :memory: <<'SQL'\n.mode csv\n.import data/orders.csv orders\n"
     "SELECT status, COUNT(*) FROM orders GROUP BY status;\nSQL", "allow"),
    ("sqlite3 <<'SQL'\nCREATE TABLE t(x); INSERT INTO t VALUES (1); SELECT * FROM t;\nSQL",
     "allow"),
    ("sqlite3 :memory: <<'SQL'\n.output a.txt\nSELECT 1;\nSQL", "deny"),
    ("sqlite3 :memory: <<'SQL'\nSELECT writefile('a.txt', 'x');\nSQL", "deny"),
    ("sqlite3 :memory: <<'SQL'\nATTACH 'x.db' AS x; DROP TABLE x.users;\nSQL", "deny"),
    ("sqlite3 :memory: <<'SQL'\n.shell rm -rf data\nSQL", "deny"),
    ("sqlite3 build/app.db <<'SQL'\nCREATE TABLE t(x);\nSQL", "ask"),
])
def test_an_in_memory_database_changed_from_input_changes_nothing_that_lasts(
        ws: Path, command: str, expected: str) -> None:
    """Tables made and filled in ``:memory:`` (or with no database named) vanish with the
    process; what reaches a file (``.output``, ``writefile``, ``ATTACH``) is judged as ever."""
    assert decision(ws, command) == expected, command
