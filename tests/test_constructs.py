"""The constructs the shell classifier models, and refusing those it does not (issue 31).

The construct part of the corpus (``tests/construct_corpus.py``: every construct crossed with
destructive, read-only and writing programs) holds the hard properties: a hidden destructive
program is ``deny`` (not ``ask``, which ``--approval auto`` runs), nothing that needs a prompt
is allowed, read-only commands are rarely over-blocked. The held-back construct part is only
checked for shape here; ``bench/permissions.py`` scores it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.permissions import constructs, shell
from engine.permissions.constructs import (
    CONSTRUCTS,
    MODELLED_NODES,
    arithmetic_problem,
    opaque_builtin,
)
from engine.permissions.shell import check_shell_json
from tests.conftest import ROOT, engine_env
from tests.construct_corpus import items
from tests.corpus_scoring import ENV, decide, load, make_workspace, passes

ITEMS = items()
STORY = {
    "t1": "declare -n r=p; p=rm; $r -rf t1",
    "t2": "x='a[$(rm -rf t2)]'; (( x ))",
    "t3": "hash -p /bin/rm ls; ls -rf t3",
    "t4": "x='a[$(rm -rf t4)]'; [[ -v $x ]]",
    "t5": "read -r c <<< rm; $c -rf t5",
    "t6": "echo rm | xargs -I{} env {} -rf t6",
    "t7": "shopt -s extglob\n/usr/bin/@(rm) -rf t7",
    "t8": ": ${c:=rm}; $c -rf t8",
    "t9": "mapfile -C 'rm -rf t9' -c 1 m <<< x",
    "t10": "while read -r c; do $c -rf t10; done <<< rm",
    "t11": "compgen -W '$(rm -rf t11)' x",
    "t12": "set -k; bash -c '$c -rf t12' c=rm",
}
"""Commands that deleted their target directory under ``--approval auto`` when answered ask:
a program reached through a nameref, a command substitution inside an arithmetic context, a
program remapped by ``hash -p``; and constructs found since: a subscript evaluated by
``[[ -v ]]``, a program read from a here-string (into a loop too), an ``xargs -I`` input
line, an extended glob, a value assigned by ``${c:=rm}``, a ``mapfile -C`` callback, a
``compgen -W`` word list, ``set -k``."""


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("constructs"))


@pytest.fixture(scope="module")
def decisions(ws: Path) -> dict[str, str]:
    return {it.id: decide(it.command, ws) for it in ITEMS}


def test_the_construct_part_crosses_constructs_with_programs_of_every_kind() -> None:
    assert len(ITEMS) >= 1000
    assert len({it.id for it in ITEMS}) == len(ITEMS)
    assert {it.expect for it in ITEMS} == {"allow", "ask", "deny"}
    assert len({it.source for it in ITEMS}) >= 60


def test_no_hidden_destructive_program_is_answered_ask(decisions: dict[str, str]) -> None:
    asked = [it.command for it in ITEMS if it.expect == "deny" and decisions[it.id] != "deny"]
    assert not asked, "destructive, not denied:\n" + "\n".join(asked)


def test_what_must_be_refused_under_approval_auto_is(ws: Path) -> None:
    must = [it for it in ITEMS if it.expect == "deny" or it.auto == "deny"]
    assert any(it.auto == "deny" and it.expect == "ask" for it in must)
    run = [it.command for it in must if decide(it.command, ws, "auto") != "deny"]
    assert not run, "runs under --approval auto:\n" + "\n".join(run)


def test_nothing_that_needs_a_prompt_is_allowed(decisions: dict[str, str]) -> None:
    leaks = [it.command for it in ITEMS if it.expect != "allow" and decisions[it.id] == "allow"]
    assert not leaks, "allowed:\n" + "\n".join(leaks)


def test_read_only_constructs_are_rarely_over_blocked(decisions: dict[str, str]) -> None:
    read_only = [it for it in ITEMS if it.expect == "allow"]
    blocked = [it.command for it in read_only if decisions[it.id] != "allow"]
    assert len(blocked) <= 0.05 * len(read_only), "\n".join(blocked)
    assert sum(passes(it, decisions[it.id]) for it in ITEMS) >= 0.95 * len(ITEMS)


def test_the_held_back_construct_part_is_hand_written_and_large() -> None:
    held = load("constructs_heldback")
    assert len(held) >= 250
    assert {it.expect for it in held} == {"allow", "ask", "deny"}
    assert sum(it.category == "hidden_program" for it in held) >= 100
    assert not {it.command for it in held} & {it.command for it in ITEMS}


def test_every_node_kind_the_walker_handles_is_declared() -> None:
    assert set(shell._HANDLERS) <= MODELLED_NODES


def test_a_node_kind_outside_the_table_is_denied(ws: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    command = "for (( i=0; i<2; i++ )); do ls; done"
    assert check_shell_json(command, ws, ENV)["decision"] == "allow"
    monkeypatch.setattr(shell, "MODELLED_NODES", MODELLED_NODES - {"c_style_for_statement"})
    out = check_shell_json(command, ws, ENV)
    assert out["decision"] == "deny"
    assert "'c_style_for_statement' is not modelled" in out["reason"]


def test_a_fault_of_the_judge_fails_closed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a handler (here a TypeError raised for every ``for`` loop) never crashes the
    caller nor lets the command through: ask, and deny under ``--approval auto``."""
    def broken(self: object, node: object, ctx: object) -> None:
        raise TypeError("a handler's bug")

    command = "for c in ls; do $c src; done"
    assert check_shell_json(command, ws, ENV)["decision"] == "allow"
    monkeypatch.setitem(shell._HANDLERS, "for_statement", broken)
    assert check_shell_json(command, ws, ENV)["decision"] == "ask"
    assert check_shell_json(command, ws, ENV, approval="auto")["decision"] == "deny"


@pytest.mark.parametrize(("name", "args", "opaque"), [
    ("hash", ["-p", "/bin/rm", "ls"], True), ("hash", ["-r"], False), ("hash", [None], True),
    ("enable", ["-f", "x.so", "ls"], True), ("enable", ["-a"], False),
    ("enable", ["ls"], True), ("enable", ["-n", "echo"], True), ("enable", [None], True),
    ("fc", ["-l"], False), ("fc", ["-s"], True),
    ("declare", ["-n"], True), ("declare", ["-gn"], True), ("declare", ["-a"], False),
    ("complete", ["-C", "cmd", "x"], True), ("bind", ["-x", "k"], True), ("ls", ["-p"], False),
])
def test_opaque_builtins(name: str, args: list[str | None], opaque: bool) -> None:
    assert (opaque_builtin(name, args) is not None) is opaque


def test_arithmetic_follows_variables_to_code_or_run_time_data() -> None:
    values = {"x": ["y + 1"], "y": ["a[$(rm -rf d)]"], "n": ["3"], "r": None}
    found = arithmetic_problem("x * 2", values.get)
    assert found is not None and found[0] == "opaque"
    assert arithmetic_problem("n > 2 && z < 1", lambda v: values.get(v, [])) is None
    found = arithmetic_problem("r", values.get)
    assert found is not None and found[0] == "modelled"
    cycle = {"a": ["b"], "b": ["a + 0x1F"]}
    assert arithmetic_problem("a", lambda v: cycle.get(v, [])) is None
    calls: list[str] = []
    wide = {n: ["+".join("abcdefghijklmnop")] for n in "abcdefghijklmnop"}
    arithmetic_problem("a", lambda v: calls.append(v) or wide.get(v, []))
    assert sorted(calls) == sorted(set(calls))  # each variable followed once


@pytest.mark.parametrize(("command", "decision"), [
    ("c=ls; for i in 1 2; do $c src; c=rm; done", "deny"),
    ('a=(ls); while true; do "${a[@]}"; a=(rm -rf src); done', "deny"),
    ('a=(ls); for i in 1 2; do "${a[@]}"; done', "allow"),
    ("args=(-rf src); rm \"${args[@]}\"", "deny"),
    ("a=(x /etc/passwd); cat \"${a[@]}\"", "ask"),
    ("$SHELL -c 'rm -rf src'", "deny"),
    ("\"$(command -v rm)\" -rf src", "deny"),
    ("c=ls; unset c; $c rm -rf src", "deny"),
    ("c=; $c rm -rf src", "deny"),
    ("a=(ls); unset 'a[0]'; ${a[@]} rm -rf src", "deny"),
    ("bash -c '$0 -rf src' rm", "deny"),
    ("sh -c '$1 -rf src' _ rm", "deny"),
    ("sh -c 'cat \"$1\"' _ a.txt", "allow"),
    ("c=rm bash -c '$c -rf src'", "deny"),
    ("c=rm true; $c -rf src", "ask"),
    ("x='rm -rf src'; eval \"$x\"", "deny"),
    ("x=a.txt; cat \"$x\"", "allow"),
    ("x='a[$(rm -rf src)]'; let x+=1", "deny"),
    ("x=1; let x+=1; echo $x", "allow"),
    ("v=HOME; echo \"${!v}\"", "allow"),
    ("read -r c < a.txt; $c -rf src", "ask"),
    ("read -r c <<< ls; $c src", "allow"),
    ("IFS=, read -r c d <<< 'rm,-rf'; $c $d src", "deny"),
    ("readarray -t m <<< rm; ${m[0]} -rf src", "deny"),
    ("echo ls | xargs -I{} env {} src", "allow"),
    ("shopt -s extglob\nls src/@(app|old).py", "allow"),
    ("shopt -s extglob\n/usr/@(bin|sbin)/rm -rf src", "deny"),
    ("shopt -s extglob\n/usr/@(bin|sbin)/@(a|b|c|d|e)@(f|g|h|rm) -rf src", "ask"),
    ("/usr/local/../bin/rm -rf src", "deny"),
    ("/usr/local/../bin/ls src", "ask"),
    ("/usr/bin/ls src", "allow"),
    ("IFS=_ eval 'c=rm_-rf_src; $c'", "deny"),
    ("set -- x rm; shift; $1 -rf src", "deny"),
    ("c=:; $c > a.txt", "deny"),
    ("x='a[$(rm -rf src)]'; [ -v \"$x\" ]", "deny"),
    ("read -r y <<< 1; x='a[$(rm -rf src)]'; (( y + x ))", "deny"),
    ("{ bash; } <<< 'rm -rf src'", "deny"),
    ("mapfile -t m < a.txt", "allow"),
    ("compgen -W '$(rm -rf src)' x", "deny"),
    ("compgen -W 'a b' a", "allow"),
    ("set -k; bash -c '$c -rf src' c=rm", "deny"),
    ("set -euo pipefail; ls", "allow"),
    ("getopts b: o -b rm; $OPTARG -rf src", "deny"),
    ("echo ${x#$(rm -rf src)}", "deny"),
    ("kill -l", "allow"),
    # more values than are followed: the rest is only known at run time, never dropped
    ("for c in " + "ls " * 64 + "rm; do $c src; done", "deny"),
    ("for c in " + " ".join(f"ls{i}" for i in range(64)) + " rm; do $c src; done", "ask"),
    ("while read -r c; do $c src; done <<E\n" + "ls\n" * 16 + "rm\nE", "deny"),
    ("while read -r c; do $c src; done <<E\n" + "".join(f"l{i}\n" for i in range(16))
     + "rm\nE", "ask"),
    ("printf '" + "".join(f"l{i}\\n" for i in range(64)) + "rm\\n' | xargs -I{} env {} src",
     "ask"),
])
def test_values_are_followed_through_loops_arrays_and_lookups(command: str, decision: str,
                                                              ws: Path) -> None:
    assert check_shell_json(command, ws, ENV)["decision"] == decision


def test_the_readme_lists_the_table() -> None:
    """The README's construct table is the declared one, row for row, in its order."""
    readme = (ROOT / "README.md").read_text()
    rows = [f"| {r.name} | {r.treatment} | {r.how} |" for r in CONSTRUCTS]
    start = readme.index("| construct | treatment | how |")
    table = readme[start:readme.index("\n\n", start)].splitlines()[2:]
    assert table == rows
    assert constructs.__doc__ and "deny" in constructs.__doc__


@pytest.mark.parametrize("target", sorted(STORY))
def test_the_story_commands_are_denied_by_check_shell(target: str, ws: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "policy", "check-shell",
                           STORY[target], "--workspace", str(ws), "--json"],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["decision"] == "deny"


def test_the_story_commands_do_delete_when_bash_runs_them(tmp_path: Path) -> None:
    """The control: each command is a real deletion, not a harmless string."""
    for target, command in STORY.items():
        (tmp_path / target).mkdir()
        (tmp_path / target / "keep.txt").write_text("x\n")
        subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=30)
        assert not (tmp_path / target).exists(), command


def test_under_approval_auto_the_story_commands_never_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    for target in STORY:
        (workspace / target).mkdir(parents=True)
        (workspace / target / "keep.txt").write_text("x\n")
    turns = tmp_path / "turns.yaml"
    turns.write_text("".join(
        f"- tool_calls: [{{name: run_shell, args: {{command: {json.dumps(command)}}}}}]\n"
        for command in STORY.values()) + "- text: done\n")
    db = tmp_path / "e.db"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(ROOT / "machines" / "coding_agent.yaml"),
         "--task", "clean up", "--workspace", str(workspace), "--model", f"scripted:{turns}",
         "--approval", "auto", "--db", str(db)],
        cwd=ROOT, env=engine_env(), capture_output=True, text=True, timeout=180)
    for target in STORY:
        assert (workspace / target / "keep.txt").exists(), (target, proc.stdout, proc.stderr)
    rows = sqlite3.connect(db).execute(
        "SELECT decision FROM audit WHERE tool = 'run_shell'").fetchall()
    assert rows == [("deny",)] * len(STORY), (rows, proc.stdout, proc.stderr)
