"""Changes of shell state crossed with the places that decide whether they happen or last.

Each command sets up a value (``x=rm``, ``set -- rm``, a map, a name reference, a folder),
changes it in some place (a branch that is not taken, a loop that does not run, what
follows ``&&``, a subshell, a pipeline's stage, a function and its locals, a read-only
variable), and then runs a probe that reads the value (``$x a.txt``). Whether a.txt is lost
depends on whether bash made the change and kept it, so ``tests/test_shell_scopes.py`` runs
each in bash (the shell oracle's sandbox) and compares what was destroyed with the decision.
The states and places are the constructs themselves, not commands seen anywhere. Besides the
full cross (``scoped``), ``chained`` strings 1-4 random steps, each in a random place, before
a random probe: the interactions no table lists.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from tests.shell_generator import Generated

CHANGED = (  # (what holds the value first, the change, the probe)
    ("", 'rm() { cat "$@"; }', "rm a.txt"),
    ("", "hash -p /usr/bin/cat rm", "rm a.txt"),
    ("shopt -s expand_aliases\n", "alias rm=cat", "\nrm a.txt"),
    ("x=rm; ", "x=cat", "$x a.txt"),
    ("set -- rm; ", "set -- cat", '"$@" a.txt'),
    ("a=(rm); ", "a=(cat)", '"${a[@]}" a.txt'),
    ("declare -A m=([k]=rm); ", "m[k]=cat", "${m[k]} a.txt"),
    ("x=rm; y=cat; declare -n r=x; ", "declare -n r=y", "$r a.txt"),
    ("", "cd src", "mv b.txt a.txt"),
    ("", "pushd src >/dev/null", "mv b.txt a.txt"),
    ("x='rm a.txt'; ", "IFS=,", "$x"),
    ("", "PATH=/nonexistent", "rm a.txt"),
    ("", "set -f", "rm a.*"),
    ("f() { rm a.txt; }; ", "f() { cat a.txt; }", "f"),
    ("x=rm; ", "x=cat", 'eval "$x a.txt"'),
    ("x=rm; ", "read -r x <<< cat", "$x a.txt"),
    ("x=rm; ", "printf -v x cat", "$x a.txt"),
    ("x=rm; ", "x+=dir", "$x a.txt"),
    ("unset x; ", "x=cat", "${x:-rm} a.txt"),
    ("unset x; ", "x=cat", "${x-rm} a.txt"),
    ("unset x; ", ": ${x:=cat}", ": ${x:=rm}; $x a.txt"),
    ("set -- rm cat; ", "shift", '"$1" a.txt'),
    ("x=rm; ", "export x=cat", "$x a.txt"),
    ("x=rm; ", "declare x=cat", "$x a.txt"),
    ("x=rm; ", "mapfile -t x <<< cat", "$x a.txt"),
    ("x=rm; ", "x=$(echo cat)", "$x a.txt"),
    ("x=rm; ", "for x in cat; do :; done", "$x a.txt"),
    ("x=rm; ", "select x in cat; do break; done <<< 1", "$x a.txt"),
    ("x=rm; ", "unset x", "${x:-cat} a.txt"),
    ("x=rm; ", "getopts c x -c", "$x a.txt"),
    ("", "shopt -s expand_aliases; alias rm=cat", "\nrm a.txt"),
    ("x=rm; ", "trap 'x=cat' RETURN", "$x a.txt"),
    ("x=rm; ", "trap 'x=cat' USR1", "$x a.txt"),
    ("", "x=echo", "$x rm a.txt"),
    ("unset x; ", "read -r x <<< echo", "$x rm a.txt"),
    ("", "printf -v x echo", "$x rm a.txt"),
    ("", "for x in echo; do :; done", "$x rm a.txt"),
    ("", "a=(echo)", "${a[@]} rm a.txt"),
    ("", "declare -A m=([k]=echo)", "${m[k]} rm a.txt"),
    ("", "x=foo", "${x/#/echo } rm a.txt"),
)
"""A value that runs ``rm`` unless the change happened (and lasted): an unset name's word
is no word at all, and the next one is the program."""

MAY_NOT_RUN = (
    "false && {c}; ", "true || {c}; ", "if false; then {c}; fi; ",
    "if true; then :; else {c}; fi; ", "while false; do {c}; done; ",
    "until true; do {c}; done; ", "for i in; do {c}; done; ", "case x in y) {c};; esac; ",
    "({c}); ", ": $({c}); ", "{c} | cat; ", "cat /dev/null | {c}; ", "{c} & wait; ",
    "g() {{ {c}; }}; ", "[ -e nosuch ] && {c}; ", "x2=$({c}; echo y); ", ": <({c}); ",
    "(( 0 )) && {c}; ", "[[ -n '' ]] && {c}; ", "{{ false && {c}; }}; ",
    "if false; then :; elif false; then {c}; fi; ", "coproc {{ {c}; }}; ",
    "g() {{ {c}; }}; false && g; ", "for i in 1; do break; {c}; done; ",
    "false && for i in 1; do {c}; done; ",
    "if true; then {c} & else {c} & fi; wait; ", "case x in *) ({c});; esac; ",
    "if false; then {c}; else ({c}); fi; ", "case x in *) {c} | cat;; esac; ",
    "for i in 1; do [ -e nosuch ] || continue; {c}; done; ",
    "g() {{ [ -e nosuch ] || return; {c}; }}; g; ",
)
"""Places where the change does not happen, or does not outlive its subshell (in every
branch of an if/else or a case with *), too)."""

MADE = (  # (the value first, a change that makes it run rm, the probe)
    ('rm() { cat "$@"; }; ', "unset -f rm", "rm a.txt"),
    ("x=cat; ", "x=r; x+=m", "$x a.txt"),
    ("a=(cat); ", "a+=(x); a[0]=rm", "${a[0]} a.txt"),
    ("set -- cat; ", "set -- rm", '"$1" a.txt'),
    ("", "cd src", "rm ../a.txt"),
    ("x=cat; ", "declare -n x2=x; x2=rm", "$x a.txt"),
    ("x=cat; ", "printf -v x rm", "$x a.txt"),
    ("", "hash -p /bin/rm cat", "cat a.txt"),
    ("x=cat; ", "eval x=rm", "$x a.txt"),
    ("x=cat; ", "source /dev/stdin <<< x=rm", "$x a.txt"),
    ("unset x; ", ": ${x:=rm}", "${x:-cat} a.txt"),
    ("set -- cat rm; ", "shift", '"$1" a.txt'),
    ("x=cat; ", "x=${x/cat/rm}", "$x a.txt"),
    ("x=rm; readonly x; ", "printf -v x cat", "$x a.txt"),
    ("x=rm; declare -r x; ", "read -r x <<< cat", "$x a.txt"),
    ("x=rm; readonly x; ", "mapfile x <<< cat", "$x a.txt"),
    ("x=rm; ", "x=cat", "$x a.txt"),
    ("a=(rm); ", "a[0]=cat", "${a[0]} a.txt"),
    ("x=cat; ", "x=rm export x", "$x a.txt"),
    ("x=cat; ", "x=rm readonly x", "$x a.txt"),
    ("x=cat; ", "x=rm declare -x x", "$x a.txt"),
    ("x=cat; ", "trap 'x=rm' DEBUG", ": ; $x a.txt"),
    ("x=echo; ", "unset x", "$x rm a.txt"),
    ("x=echo; ", "unset x; x=$x", "${x:+cat} rm a.txt"),
)
"""Changes that make the probe run ``rm`` where they run, or a read-only value that stays."""

RUNS = (
    "g() {{ local x; {c}; }}; g; ", "g() {{ declare x a; {c}; }}; g; ", "{c}; ",
    "true && {c}; ", "if true; then {c}; fi; ", "g() {{ {c}; }}; g; ",
    "for i in 1; do {c}; done; ", "{{ {c}; }}; ", "case x in x) {c};; esac; ",
    "while true; do {c}; break; done; ", "[ -f a.txt ] && {c}; ", "false || {c}; ",
)
"""Places where the change runs (a function's locals end with its call)."""


def scoped() -> Iterator[Generated]:
    """Every change in every place, deterministic and in order."""
    for table, places in ((CHANGED, MAY_NOT_RUN), (MADE, RUNS)):
        for (before, change, probe), place in itertools.product(table, places):
            body = place.replace("{c}", change).replace("{{", "{").replace("}}", "}")
            yield Generated(before + body + probe, probe.strip(), (place, change))


VALUES = ("rm", "cat", "wc", "rmdir", "head")
STEPS = (
    "x={v}", "x+={s}", "read -r x <<< {v}", "printf -v x {v}", "mapfile -t x <<< {v}",
    "declare x={v}", "local x={v}", "export x={v}", "for x in {v}; do :; done",
    "set -- {v}", "shift", "set -- {v} {w}", "a=({v})", "a[0]={v}", "a+=({v})",
    "m[k]={v}", "unset x", "unset 'a[0]'", "readonly x", "declare -n r=x", "r={v}",
    "hash -p /usr/bin/{v} y", "y() {{ {v} \"$@\"; }}", "unset -f y", "IFS=,", "IFS=' '",
    "cd src", "cd ..", "x=${{x/r/c}}", "x=$(echo {v})", "eval x={v}", "x=${{x:-{v}}}",
    ": ${{x:={v}}}", "unset x; x={v}", "x=", ": ${{x={v}}}", "x=${{x-{v}}}", "x=${{x+{v}}}",
    "[[ -v x ]] && x={v}", "set --", "unset a", "a=()", "declare -A m=([k]={v})", "x=$1",
    "x=${{1-{v}}}", "f() {{ local x={v}; y() {{ {v} \"$@\"; }}; }}", "f", "cd -",
    "cd src || cd ..", "pushd src >/dev/null", "popd >/dev/null", "popd -n >/dev/null",
    "dirs -c", "cd nosuch 2>/dev/null", "cd ~-",
)
"""Steps of a chain: each sets, appends, removes or re-targets something a probe reads."""
WHERE = ("{c}", "false && {c}", "true && {c}", "if false; then {c}; fi",
         "if true; then {c}; fi", "({c})", "{c} | cat", "for i in 1; do {c}; done",
         "for i in; do {c}; done", "g() {{ {c}; }}; g", "g() {{ local x; {c}; }}; g",
         "case a in a) {c};; esac", "while false; do {c}; done", "[ -f a.txt ] && {c}",
         "[ -f nosuch ] || {c}", "{{ {c}; }}", ": $({c})", "g() {{ {c}; }}")
PROBES = ("${x-rm} a.txt", "${x:-rm} a.txt", "${x+rm} a.txt", "${1-rm} a.txt",
          "${a[0]-rm} a.txt", "${m[k]-rm} a.txt", "[[ -v x ]] || rm a.txt", "$x a.txt",
          '"$1" a.txt', "${a[0]} a.txt", '"${a[@]}" a.txt', "${m[k]} a.txt", "$r a.txt",
          "y a.txt", "command y a.txt", "$x ../a.txt", "mv ../b.txt ../a.txt",
          "mv b.txt a.txt", 'eval "$x a.txt"')


def chained(count: int, seed: int) -> Iterator[Generated]:
    """``count`` chains of 1-4 steps, each in a random place, then a probe (seeded)."""
    rng = random.Random(seed)
    for _ in range(count):
        parts = ["declare -A m=([k]=cat)"]
        for _ in range(rng.randint(1, 4)):
            step = rng.choice(STEPS).format(v=rng.choice(VALUES), w=rng.choice(VALUES),
                                            s=rng.choice(("m", "dir", "")))
            parts.append(rng.choice(WHERE).format(c=step))
        probe = rng.choice(PROBES)
        yield Generated("; ".join(parts) + "; " + probe, probe, tuple(parts[1:]))
