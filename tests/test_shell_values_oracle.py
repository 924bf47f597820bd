"""The value oracle on a seeded sample of its tuning part: what the classifier claims a
variable holds is what bash makes of it (``tests/shell_values_oracle.py`` states the rule)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import make_workspace
from tests.shell_values_oracle import Case, bash_words, claimed_words, generate, judge

SEED = 11
SAMPLE = 1500


def test_the_oracle_sees_a_wrong_value_when_there_is_one(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    command = "x=rm; y=src; printf '<%s>\\n' \"$x $y\""
    assert bash_words(command, workspace) == ["rm src"]
    assert claimed_words(command, workspace) == ["rm src"]
    assert Case(command, "dev", ["rm src"], ["rmsrc"]).mismatch  # what a wrong model gives
    assert not Case(command, "dev", ["a.txt", "b.txt"], ["*.txt"]).mismatch  # a glob kept
    assert not Case(command, "dev", [""], []).mismatch  # printf with no word prints once


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_classifier_claims_no_value_bash_does_not_give() -> None:
    """1,500 chains, each run by bash: about 12 s on a quiet machine, several minutes beside
    a busy suite (a clean-clone CI run hit the default 120 s): the timeout is a hang guard."""
    cases = [c for c in judge(list(generate(SAMPLE, SEED))) if c.part == "dev"]
    compared = [c for c in cases if c.bash is not None and c.claimed is not None]
    assert len(compared) > len(cases) // 4  # most chains are followed, not given up on
    wrong = [(c.command, c.bash, c.claimed) for c in compared if c.mismatch]
    assert wrong == []


@pytest.mark.parametrize("command", [
    "x=$(printf 'r\\0m'); printf '<%s>\\n' \"$x\"",  # a substitution drops NUL bytes
    "x=$'r\\0m'; printf '<%s>\\n' \"$x\"",  # $'..' ends at one
    "printf -v x 'r\\0m'; printf '<%s>\\n' \"$x\"",  # printf -v stores a C string
    "printf '<%s>\\n' \"$(printf 'sr\\0c')\" \"$(echo -e 'a\\0.txt')\"",
])
def test_a_nul_byte_is_what_bash_makes_of_it(tmp_path: Path, command: str) -> None:
    """bash keeps no NUL in a word: the classifier's value is bash's, and a path built
    from one is judged (it once ended the judgement with ``embedded null byte``)."""
    workspace = make_workspace(tmp_path)
    assert claimed_words(command, workspace) == bash_words(command, workspace)


@pytest.mark.parametrize("command", [
    "x=abcdef; printf '<%s>\\n' \"${x:2}\" \"${x: -3}\" \"${x:0:2}\" \"${x:1:-1}\" \"${x:9}\"",
    "x=abcdef; printf '<%s>\\n' \"${x: -10}\" \"${x:2:0}\" \"${x:-dflt}\"",
    "c=${HOME:0:0}rm; printf '<%s>\\n' \"$c\"",
])
def test_a_substring_is_what_bash_makes_of_it(tmp_path: Path, command: str) -> None:
    """``${x:1:2}`` and its negative forms, and ``${x:-y}`` beside them (a default value,
    not a substring): ``c=${HOME:0:0}rm; $c -rf src`` names rm."""
    workspace = make_workspace(tmp_path)
    claimed = claimed_words(command, workspace)
    assert claimed is not None and claimed == bash_words(command, workspace)
    assert check_shell_json("c=${HOME:0:0}rm; $c -rf src", workspace, {
        "HOME": "/home/agent", "PATH": "/usr/bin:/bin"})["decision"] == "deny"


def test_a_shell_reading_code_drops_its_nul_bytes(tmp_path: Path) -> None:
    """bash and dash drop NUL bytes from the code they read on stdin: ``echo ok\\0rm -rf
    src`` prints ``okrm -rf src`` and deletes nothing, and ``> a\\0b`` writes ``ab``."""
    workspace = make_workspace(tmp_path)
    (workspace / "src").mkdir(exist_ok=True)
    printed = "printf 'echo ok\\0rm -rf src\\n' | bash"
    written = "printf 'echo hi > a\\0b\\n' | sh"
    for command in (printed, written):
        subprocess.run(["bash", "-c", command], cwd=workspace, check=True,
                       capture_output=True, env={"PATH": "/usr/bin:/bin"})
    assert (workspace / "src").is_dir() and (workspace / "ab").is_file()
    assert check_shell_json(printed, workspace)["decision"] == "allow"
    verdict = check_shell_json(written.replace("a\\0b", "n.t\\0xt"), workspace)
    assert verdict["decision"] == "ask" and "writes n.txt" in str(verdict["reason"])
