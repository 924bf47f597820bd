"""The independent shell corpus, dev part only: the hard safety properties hold on it.

Nothing labelled ``ask`` or ``deny`` is answered ``allow`` (no destructive command and nothing
that needs a prompt runs unasked), except items marked ``known_gap`` when the corpus was
labelled; a known gap that the classifier has since closed fails here until its mark is
removed, so the list only shrinks. Pass rates and the held-back part are measured by
``bench/permissions.py``, not asserted here (tests/corpus/README.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.spec.documents import load_yaml
from tests.corpus_scoring import (
    CATEGORIES,
    ENV,
    PARTS,
    Item,
    close_gaps,
    decide,
    load,
    make_workspace,
    part_of,
    unsafe,
)

ROOT = Path(__file__).resolve().parent.parent
DEV = load("dev")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def decisions(ws: Path) -> dict[str, str]:
    return {it.id: decide(it.command, ws) for it in DEV}


def test_the_dev_part_is_large_labelled_and_split_by_hash() -> None:
    assert len(DEV) >= 200
    assert all(part_of(it.command) == "dev" for it in DEV)
    assert len({it.id for it in DEV}) == len(DEV)
    assert {it.expect for it in DEV} == {"allow", "ask", "deny"}
    assert {it.category for it in DEV} <= set(CATEGORIES)
    assert sum(it.source.startswith("GTFOBins: ") for it in DEV) >= 100
    assert all(it.gap for it in DEV if it.known_gap)


def test_nothing_that_needs_a_prompt_is_allowed(decisions: dict[str, str]) -> None:
    leaks = [_show(it, decisions) for it in DEV if not it.known_gap
             and unsafe(it, decisions[it.id])]
    assert not leaks, "answered allow:\n" + "\n".join(leaks)


def test_no_destructive_item_is_allowed(decisions: dict[str, str]) -> None:
    leaks = [_show(it, decisions) for it in DEV
             if it.expect == "deny" and decisions[it.id] == "allow"]
    assert not leaks, "destructive and answered allow:\n" + "\n".join(leaks)


def test_known_gaps_are_still_gaps(decisions: dict[str, str]) -> None:
    closed = [it.id for it in DEV if it.known_gap and not unsafe(it, decisions[it.id])]
    assert not closed, ("closed since labelling; run `python -m tests.corpus_scoring` to drop "
                        f"their known_gap marks from tests/corpus/shell_dev.yaml: {closed}")


def test_close_gaps_removes_only_the_marks_of_closed_gaps(ws: Path, tmp_path: Path) -> None:
    copy = tmp_path / "dev.yaml"
    text = PARTS["dev"].read_text()
    safe = next(it for it in DEV if it.expect == "ask" and not it.known_gap)
    marked = text.replace(f"- id: {safe.id}\n", f"- id: {safe.id}\n  known_gap: true\n"
                          "  gap: marked by the test\n")
    copy.write_text(marked)
    assert close_gaps(ws, copy) == [safe.id]
    assert copy.read_text().startswith("#")
    after = load_yaml(copy)
    assert [r["id"] for r in after if r.get("known_gap")] == [
        it.id for it in DEV if it.known_gap]
    assert close_gaps(ws, copy) == []


def test_the_cli_gives_the_decisions_scored_in_process(ws: Path,
                                                       decisions: dict[str, str]) -> None:
    sample = [next(it for it in DEV if it.expect == e and not it.known_gap)
              for e in ("allow", "ask", "deny")]
    env = {**os.environ, **ENV, "PATH": os.environ.get("PATH", ENV["PATH"])}
    for it in sample:
        proc = subprocess.run([sys.executable, "-m", "engine", "policy", "check-shell",
                               it.command, "--workspace", str(ws), "--json"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["decision"] == decisions[it.id], it.command


def _show(it: Item, decisions: dict[str, str]) -> str:
    return f"  {it.id} [{it.category}, expect {it.expect}] {it.command!r} ({it.source})"
