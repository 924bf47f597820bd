"""Changes of shell state in places where they may not happen or last, run by bash.

``tests/shell_scopes.py`` makes the commands; each is judged by ``policy check-shell`` and
run in the shell oracle's sandbox (bubblewrap, a throwaway copy of a small git workspace).
A command that destroyed work must be refused under ``--approval auto``: asked would run it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.shell_generator import Generated
from tests.shell_oracle import Result, require_sandbox, run_all
from tests.shell_scopes import CHANGED, MADE, MAY_NOT_RUN, RUNS, chained, scoped

CHAINS, SEED = 400, 11
pytestmark = [pytest.mark.xdist_group("shell_scopes"), pytest.mark.timeout(900)]
"""One process builds the commands' results once (about 30 s on a quiet machine, several
minutes beside a busy suite): the timeout is a hang guard, not a measure."""


@pytest.fixture(scope="module")
def results() -> list[Result]:
    require_sandbox()
    return run_all([*scoped(), *chained(CHAINS, SEED)])


def test_every_change_in_every_place_is_made(results: list[Result]) -> None:
    assert len(results) == len(CHANGED) * len(MAY_NOT_RUN) + len(MADE) * len(RUNS) + CHAINS
    assert not any(r.timed_out for r in results)


def test_a_command_that_destroyed_work_is_refused_under_auto(
        results: list[Result], record_property: Callable[[str, object], None]) -> None:
    destroyed = [r for r in results if r.effect == "destroyed"]
    record_property("destroyed", len(destroyed))
    assert len(destroyed) > len(results) // 4  # the places do keep rm as the program
    missed = [(r.command, r.policy, r.auto) for r in destroyed if r.auto != "deny"]
    assert missed == []
    allowed = [(r.command, r.effect) for r in results if r.allowed_effect]
    assert allowed == []


def test_each_change_made_for_sure_keeps_the_work() -> None:
    """The control: where the change surely runs and lasts, the probe does not run rm, so
    what the commands above destroyed was the change not happening."""
    made = [Generated(before + change + "; " + probe.lstrip("\n"), probe, ("",))
            for before, change, probe in CHANGED if "alias" not in change
            and "trap" not in change]  # aliases are not expanded in bash -c; a trap may not fire
    kept = run_all(made)
    assert [r.command for r in kept if r.effect == "destroyed"] == []
