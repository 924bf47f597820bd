"""Paths a command makes on its way, run by bash: its later words are judged through them.

``tests/shell_made.py`` makes ``kk`` a link to or a copy of ``rm``, ``/bin``, the folder
beside the workspace or ``secret.txt`` there, in many ways, then reaches it by name, glob,
folder change, PATH or another program; and it writes code that deletes ``src`` into a
Makefile, a module, an awk, sed, cmake, perl or python script, then runs the program that
runs that file; and it names files like the options of the program a glob is then given to
(``touch -- -oa.txt; sort [-b]*``). Each command is judged by ``policy check-shell`` and
run in the shell oracle's sandbox. One that destroyed work must be refused under ``--approval
auto``; one that printed ``secret.txt`` must have that read seen (a reason names the folder
outside the workspace), not only the ``ln`` before it asked about.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.permissions.made_files import MadeFiles
from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace
from tests.shell_made import (
    NAMERS,
    OPTION_NAMES,
    PLANTED_RUNS,
    PLANTERS,
    PLANTS,
    TARGETS,
    made,
    optioned,
    planted,
)
from tests.shell_oracle import Result, require_sandbox, run_all

pytestmark = [pytest.mark.xdist_group("shell_made"), pytest.mark.timeout(900)]
"""About 20 s on a quiet machine, minutes beside a busy suite: a hang guard, not a measure."""


@pytest.fixture(scope="module")
def results() -> list[Result]:
    require_sandbox()
    return run_all([*made(), *planted(), *optioned()])


def test_every_maker_of_every_target_is_run(results: list[Result]) -> None:
    assert len(results) == sum(len(makers) * len(uses) for _, makers, uses in TARGETS) + \
        len(PLANTS) * len(PLANTERS) * len(PLANTED_RUNS) + len(OPTION_NAMES) * len(NAMERS)
    assert not any(r.timed_out for r in results)


def test_what_a_made_path_destroyed_is_refused_under_auto(
        results: list[Result], record_property: Callable[[str, object], None]) -> None:
    destroyed = [r for r in results if r.effect == "destroyed"]
    record_property("destroyed", len(destroyed))
    assert len(destroyed) > len(results) // 2  # the makers do make kk lead to rm
    plants = [r for r in destroyed if r.transforms[0] in {p[0] for p in PLANTS}]
    assert len(plants) > len(PLANTS) * len(PLANTERS) * len(PLANTED_RUNS) // 2  # they run
    options = [r for r in destroyed if r.transforms[0] in {n for n, _ in OPTION_NAMES}]
    assert len(options) > len(OPTION_NAMES) * len(NAMERS) // 2  # the names are options
    assert [(r.command, r.policy, r.auto) for r in destroyed if r.auto != "deny"] == []
    assert [(r.command, r.effect) for r in results if r.allowed_effect] == []


def test_a_read_through_a_made_path_is_seen(
        results: list[Result], record_property: Callable[[str, object], None]) -> None:
    read = [r for r in results if r.read_secret]
    record_property("read_secret", len(read))
    assert len(read) > 300  # the makers do make kk lead beside the workspace
    assert [r.command for r in read if not r.secret_judged] == []


@pytest.mark.parametrize(("command", "policy", "auto"), [
    ("sort *", "ask", "deny"), ("wc -l *.txt", "ask", "deny"),
    ("tar -cf /dev/null *", "ask", "deny"), ("sort -- *", "allow", "allow"),
    ("sort ./*", "allow", "allow"), ("ls src/*", "allow", "allow"),
    ("ls | xargs sort", "ask", "deny"), ("sort $(ls)", "ask", "deny"),
    ("ls | head -n 5 | xargs sort", "ask", "deny"), ("sort $(ls | grep -v x)", "ask", "deny"),
    ("find . -type f | xargs sort", "allow", "allow"),
])
def test_a_file_named_like_an_option_is_not_a_path(tmp_path: Path, command: str, policy: str,
                                                   auto: str) -> None:
    """A repository can hold a file named ``--output=a.txt``: ``sort *`` and ``ls | xargs
    sort`` give it to sort as an option (it overwrites a.txt), so neither the glob nor the
    listing is judged as paths alone (``find`` prints ``./--output=..``: a path)."""
    ws = make_workspace(tmp_path)
    (ws / "--output=a.txt.txt").write_text("planted\n")
    assert check_shell_json(command, ws, ENV)["decision"] == policy
    assert check_shell_json(command, ws, ENV, approval="auto")["decision"] == auto


def _made_in(cwd: str, *steps: tuple[str, list[str | None]]) -> MadeFiles:
    out = MadeFiles()
    for name, args in steps:
        out.record(name, args, cwd)
    return out


@pytest.mark.parametrize(("steps", "path", "expected"), [
    ([("ln", ["-s", "/etc", "kk"])], "/w/kk/shadow", "/etc/shadow"),
    ([("ln", ["-s", "/etc/ssl", "kk"])], "/w/kk/../shadow", "/etc/shadow"),
    ([("ln", ["-s", "..", "kk"])], "/w/kk/secret", "/secret"),
    ([("ln", ["-s", "/bin/rm"])], "/w/rm", "/bin/rm"),
    ([("ln", ["-st", "d", "/etc"])], "/w/d/etc/passwd", "/etc/passwd"),
    ([("ln", ["--symbolic", "--target-directory=d", "/etc"])], "/w/d/etc", "/etc"),
    ([("ln", ["-s", "/etc", "d/"])], "/w/d/etc", "/etc"),
    ([("ln", ["-sT", "/etc", "d/"])], "/w/d", "/etc"),
    ([("ln", ["-s", "../x", "d/l"]), ("mv", ["d/l", "l"])], "/w/l", "/x"),
    ([("ln", ["-s", "x", "d/l"])], "/w/d/l", "/w/d/x"),
    ([("ln", ["-sr", "x", "d/l"])], "/w/d/l", "/w/x"),
    ([("ln", ["-sr", "x", "d/l"]), ("mv", ["d/l", "l"])], "/w/l", "/x"),
    ([("ln", ["-s", "/etc", "a"]), ("ln", ["-s", "a", "b"])], "/w/b/hosts", "/etc/hosts"),
    ([("ln", ["-s", "/etc", "a"]), ("cp", ["-P", "a", "b"])], "/w/b/hosts", "/etc/hosts"),
    ([("ln", ["-s", "/etc", "a"]), ("cp", ["a", "b"])], "/w/b/hosts", "/w/b/hosts"),
    ([("ln", ["-s", None, "kk"])], "/w/kk", "/w/kk"),
    ([("install", ["-m", "755", "/bin/rm", "kk"])], "/w/kk", "/w/kk"),
])
def test_links_are_followed_as_the_kernel_reads_them(
        steps: list[tuple[str, list[str | None]]], path: str, expected: str) -> None:
    """Reads and writes go through links (not copies), a component at a time: ``..`` after
    a link leaves its target; a relative link is read from the folder it lies in, after a
    move too; a word only known at run time makes nothing known."""
    assert _made_in("/w", *steps).resolve(path) == expected


def test_a_loop_of_links_ends() -> None:
    made_files = _made_in("/w", ("ln", ["-s", "b", "a"]), ("ln", ["-s", "a", "b"]))
    assert made_files.resolve("/w/a/x") in ("/w/a/x", "/w/b/x")


@pytest.mark.parametrize(("steps", "path", "expected"), [
    ([("cp", ["/bin/rm", "kk"])], "/w/kk", "/bin/rm"),
    ([("install", ["-m", "755", "/bin/rm", "kk"])], "/w/kk", "/bin/rm"),
    ([("install", ["-m755", "-o", "root", "/bin/rm", "d/"])], "/w/d/rm", "/bin/rm"),
    ([("cp", ["/bin/rm", "t"]), ("mv", ["t", "kk"])], "/w/kk", "/bin/rm"),
    ([("cp", ["-t", "d", "/bin/rm", "/bin/ls"])], "/w/d/ls", "/bin/ls"),
])
def test_a_copy_runs_the_program_it_copies(
        steps: list[tuple[str, list[str | None]]], path: str, expected: str) -> None:
    assert _made_in("/w", *steps).resolve(path, copies=True) == expected
