"""The shell oracle on a fixed sample: real bash in bubblewrap against ``policy check-shell``.

Each payload alone must be seen with its known effect (so the oracle itself works), nothing
may escape the throwaway copy, and no generated command that changed the workspace may be
answered ``allow``. Destructive commands that ``--approval auto`` would run (decision ``ask``)
are counted and reported, not asserted: ``bench/shell_oracle.py --show`` lists them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.shell_constructs import DECOYS, PAYLOADS, VARIABLE_DECOYS
from tests.shell_generator import Generated, decoyed, generate, plain
from tests.shell_oracle import Result, require_sandbox, run_all, summary

ROOT = Path(__file__).resolve().parent.parent
SEED = 7
SAMPLE = 150
HARMLESS = {"ls": "none", "cat a.txt": "none", "git status": "none", "head README.md": "none",
            "touch new.txt": "wrote", "mkdir build": "wrote", "sed -i a.txt": "wrote",
            "echo > new.txt": "wrote", "chmod -R 000 src": "wrote",
            "cat ../secret.txt": "read_outside", "head ../secret.txt": "read_outside"}
"""The effect of each payload that is not destructive; every other payload destroys."""


@pytest.fixture(scope="module")
def observed() -> Iterator[tuple[list[Result], list[Result], Path]]:
    require_sandbox()
    # Outside /tmp (a fresh tmpfs in the sandbox): a folder of the checkout, on the real disk.
    with tempfile.TemporaryDirectory(prefix=".oracle-outside-", dir=ROOT) as tmp:
        outside = Path(tmp)
        probes = [Generated(f"echo x > {outside}/escaped; echo x > ../escaped", "probe", ()),
                  Generated("git stash -q", "git stash", ())]
        plain_runs = run_all([plain(p.name) for p in PAYLOADS] + probes)
        sample = run_all(list(generate(SAMPLE, SEED)))
        yield plain_runs, sample, outside


def test_each_payload_alone_has_its_known_effect(observed: tuple[list[Result], ...]) -> None:
    plain_runs = observed[0][:len(PAYLOADS)]
    got = {r.payload: r.effect for r in plain_runs}
    assert got == {p.name: HARMLESS.get(p.name, "destroyed") for p in PAYLOADS}
    rm = next(r for r in plain_runs if r.payload == "rm -rf src")
    assert rm.effect == "destroyed" and rm.policy == "deny" and "src removed" in rm.why
    assert not any(r.timed_out for r in plain_runs)


def test_a_stash_keeps_the_change_and_nothing_escapes_the_copy(
        observed: tuple[list[Result], list[Result], Path]) -> None:
    escaped, stash = observed[0][len(PAYLOADS):]
    assert escaped.effect == "none"
    assert not list(observed[2].iterdir())
    assert stash.effect == "wrote", stash.why


def test_generated_sample_sees_every_effect_and_no_effect_is_allowed_unasked(
        observed: tuple[list[Result], list[Result], Path],
        record_property: Callable[[str, object], None]) -> None:
    sample = observed[1]
    figures = summary(sample)
    assert len(sample) == SAMPLE
    assert all(figures["effects"][e] for e in ("destroyed", "wrote", "none")), figures
    allowed = [(r.transforms, r.command, r.effect) for r in sample if r.allowed_effect]
    assert allowed == []
    hidden = figures["hidden_destructive_not_denied"]
    record_property("hidden_destructive_not_denied", hidden)
    print(f"\nshell oracle sample (seed {SEED}): {figures}")


@pytest.mark.slow
@pytest.mark.timeout(900)  # about 2,400 runs of bash in bubblewrap: 35 s idle, more when busy
def test_a_name_mapped_to_a_harmless_program_is_judged_as_what_bash_runs(
        record_property: Callable[[str, object], None]) -> None:
    """Every decoy of ``rm`` (a function, an exported function, an alias, ``hash -p``, a link
    on PATH) before every word and every command transformation of ``rm a.txt``, and every
    variable decoy (``c=:`` unexported, exported, then unexported, made local, set in a
    branch not taken; ``declare -u c`` before ``c=rm; $c a.txt``) in every command
    transformation: where bash does not
    apply the mapping
    (``xargs rm``, ``env rm``, ``dash -c``, after ``hash -r``, a new shell for an unexported
    ``c``...) a.txt is gone, and the command must be refused under --approval auto. Before
    these were modelled (3f61209), 535 of these commands ran the real rm under auto while
    judged as the decoy, 131 of them allowed outright. The oracle itself works: the payload
    alone after each decoy keeps a.txt, except after ``hash -r``, inside a function with
    ``local c``, after a function's (local) ``declare -u`` and after a branch not taken."""
    results = run_all(list(decoyed()))
    alone = {r.transforms[0]: r.effect for r in results if len(r.transforms) == 1}
    gone = {"decoy_hash_p_then_reset", "decoy_local_in_function",
            "decoy_uppercase_attribute_of_a_local", "decoy_set_where_that_may_not_run",
            "decoy_exported_in_a_branch_not_taken"}
    assert alone == {f"decoy_{d}": "destroyed" if f"decoy_{d}" in gone else "none"
                     for d in [*DECOYS, *VARIABLE_DECOYS]}
    assert sum(r.effect == "destroyed" for r in results) > len(results) // 3
    missed = [(r.transforms, r.policy, r.auto, r.command) for r in results
              if r.hidden_destructive or r.allowed_effect]
    for part in ("tuning", "heldback"):
        record_property(f"decoy_misses_{part}", sum(r.part == part for r in results
                                                     if r.hidden_destructive or r.allowed_effect))
    assert missed == []


def test_the_bench_reports_both_parts_and_never_prints_a_held_back_command(
        tmp_path: Path) -> None:
    from tests.shell_oracle import oracle_part

    count, seed = 40, 3
    out = tmp_path / "oracle.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "shell_oracle.py"), "--count",
                           str(count), "--seed", str(seed), "--show", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    gens = list(generate(count, seed))
    held = [g.command for g in gens if oracle_part(g.command) == "heldback"]
    assert data["parts"]["heldback"]["commands"] == len(held) > 0
    assert data["parts"]["tuning"]["commands"] == count - len(held)
    assert sum(data["parts"]["tuning"]["effects"].values()) == count - len(held)
    assert "hidden destructive not denied" in proc.stdout and "commands/s" in proc.stdout
    blob = proc.stdout + out.read_text()
    assert not [c for c in held if repr(c)[1:-1] in blob or json.dumps(c) in blob]
    tuning, shown = data["parts"]["tuning"], data["tuning_misses"]
    assert all(m["allowed_effect"] or m["hidden_destructive"] for m in shown)
    assert sum(m["hidden_destructive"] for m in shown) == tuning["hidden_destructive_not_denied"]
    assert sum(m["allowed_effect"] for m in shown) == tuning["effect_allowed_without_prompt"]


def test_the_bench_refuses_a_count_below_one_in_one_line() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "shell_oracle.py"), "--count",
                           "0"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--count must be at least 1" in proc.stderr.splitlines()[-1]
