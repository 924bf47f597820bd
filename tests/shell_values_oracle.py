"""The value oracle: what the classifier believes a shell variable holds, against what bash
makes of it.

The classifier follows values (``a=rm; b=src; $a -rf $b``) to name the program and the paths a
command uses; a value it computes wrongly is a program or a path it judges in place of the one
bash runs. Labels cannot catch that and effects only catch it when a payload happens to sit
behind it, so this compares the values themselves.

A case is a seeded random chain of value operations (assignments, ``+=``, parameter
operators, case attributes, ``printf -v``, ``read``, ``mapfile``, arrays, positional words,
``IFS``, arithmetic, command substitutions of printers and filters, loops and branches) ending
in a probe that prints a value word by word: ``printf '<%s>\\n' $x`` (or ``"$x"``,
``"${a[@]}"``, ``"$@"``...). The classifier's view is the argument vector it reports for that
``printf`` (``check_shell_json``, what ``engine policy check-shell`` prints); bash's is what the
probe prints when the chain runs in a throwaway copy of the corpus workspace, in bubblewrap
with nothing writable. The operations only compute; the sandbox makes sure of it.

A **mismatch** is a case where the classifier claims to know every word (it refuses the
chain neither by default nor under ``--approval auto``, and none of the words still holds ``$``
or a backquote) and bash printed other words. Values holding glob characters are
left out (the classifier keeps a pattern as a pattern, bash expands it against the files), and
no printed word equals one empty word (``printf`` prints its format once when given none).
A value the classifier does not claim to know is fine: it is judged as unknown.

Cases are split by a hash of their text like the corpus (``corpus_scoring.part_of``): 70%
tuning, 30% held back. ``tests/test_shell_values_oracle.py`` runs a seeded sample of the tuning
part; ``bench/shell_values.py`` reports both parts and prints only the tuning part's mismatches.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace, part_of

VALUES = ("rm", "cat", "'r m'", "'a b c'", "src/app.py", "'x,y,z'", "''", "AbC", "012", "7",
          "'-rf'", "'a:b'", "$'t\\tq'", "'${HOME}'", "'~/x'", "'  lead'", "'tail  '", "RM",
          "'a\"b'", "\"it's\"", "'-n'", "'-e'", "'%s'", "'\\\\x41'", "' '", "','")
"""Values the operations are given: words, blanks, separators, options, escapes, quotes."""

OPERATIONS = (
    "x={v}", "x+={v}", "y=$x", "x=$y", "x=\"$x $y\"", "x=\"$x$x\"", "x=$x$x", "x=\"$x\"' '$y",
    "x=${{x^^}}", "x=${{x,,}}", "x=${{x^}}", "x=${{x,}}", "x=${{x@U}}", "x=${{x@L}}",
    "x=${{x@u}}", "x=${{x:1}}", "x=${{x:1:2}}", "x=${{x: -2}}", "x=${{x:0:1}}", "x=${{x#?}}",
    "x=${{x%?}}", "x=${{x##*/}}", "x=${{x%%/*}}", "x=${{x#*,}}", "x=${{x%%,*}}", "x=${{x/a/Q}}",
    "x=${{x//a/Q}}", "x=${{x/#r/c}}", "x=${{x/%m/t}}", "x=${{x// /_}}", "x=${{#x}}",
    "x=${{x:-{v}}}", "x=${{x:+{v}}}", "x=${{z:-{v}}}", "x=${{x-{v}}}", "x=${{z+{v}}}",
    ": ${{x:={v}}}", ": ${{z:={v}}}; x=$z", "unset x", "unset y", "n=x; x=${{!n}}",
    "declare -l x", "declare -u x", "declare -i x", "declare +l x", "declare -c x",
    "printf -v x '%s' {v}", "printf -v x '%s-%s' {v} {v}", "printf -v x '%.2s' {v}",
    "printf -v x '%5s' {v}", "printf -v x '%-4s|' {v}", "printf -v x '%x' 255",
    "printf -v x '%03d' 7", "printf -v x '%c' {v}", "printf -v x '%s' {v} {v}",
    "read -r x <<< {v}", "read x <<< {v}", "IFS=: read -r x y <<< {v}",
    "IFS=, read -r x y <<< {v}", "read -r x y <<< {v}", "read -ra a <<< {v}; x=${{a[1]}}",
    "mapfile -t a <<< {v}; x=${{a[0]}}", "x=$(echo {v})", "x=$(printf %s {v})", "x=`echo {v}`",
    "x=$(echo -n {v})", "x=$(printf '%s\\n' {v} {v})", "x=$((1+2))", "x=$((${{#x}}*2))",
    "a=({v} {v}); x=${{a[*]}}", "a=({v}); x=\"${{a[@]}}\"", "a=({v} {v}); x=${{#a[@]}}",
    "a=({v} {v}); x=${{a[1]}}", "a=({v} {v}); x=${{a[-1]}}", "a+=({v}); x=\"${{a[*]}}\"",
    "set -- {v} {v}; x=$2", "set -- {v}; x=$#", "set -- {v} {v}; x=\"$*\"", "set -- {v} {v}",
    "shift", "set -- $x", "IFS=,", "IFS=' '", "IFS=:", "IFS=", "unset IFS",
    "x=$(basename {v})", "x=$(dirname {v})", "x=$(tr a-z A-Z <<< {v})", "x=$(rev <<< {v})",
    "x=$(echo {v} | cut -d, -f2)", "x=$(echo {v} | sed s/a/b/)", "x=$(cat <<< {v})",
    "x=$(echo $x | tr -d ' ')", "x=$'\\x72m'", "x=~", "x=~/y", "x={{r,c}}at",
    "x=$(echo {{r,}}m)", "let x=3", "((x=4))", "((x++))", "x=$(seq 3 | tail -1)",
    "x=$(wc -c <<< {v})", "if [ -n \"$x\" ]; then x={v}; fi", "[ -z \"$x\" ] && x={v}",
    "case $x in r*) x={v};; *) x=cat;; esac", "for w in {v} {v}; do x=$w; done",
    "for w in {v}; do x+=$w; done", "while false; do x={v}; done", "(x={v})",
    "f() {{ x={v}; }}; f", "f() {{ local x={v}; }}; f", "g() {{ echo {v}; }}; x=$(g)",
    "declare -A m=([k]={v}); x=${{m[k]}}", "x=\"${{x}}\"", "x=${{x@Q}}", "x=$'a\\tb'",
    "x=$(printf %q {v})", "x=\"$(echo {v})\"", "x=$(echo \"$x\")", "x=${{x:-}}",
    "readonly y={v}", "export x", "local x 2>/dev/null",
    "[ -n \"$y\" ] && z={v}; x=${{z/#/p}}", "[ -n \"$y\" ] && z={v}; x=${{#z}}",
    "[ -n \"$y\" ] && z={v}; x=${{z@Q}}", "[ -n \"$y\" ] && z={v}; x=${{z^^}}w",
    "set -- {v} {v} {v}; shift 2; x=$1", "set -- {v} {v} {v}; shift $(( $# - 1 )); x=$1",
    "set -- {v} {v}; x=\"${{@:2}}\"", "x=${{#@}}",
    "a=({v} {v}); x=\"${{!a[@]}}\"", "a=({v} {v} {v}); x=\"${{a[@]:1:1}}\"",
    "eval x={v}", "x=$(< a.txt)", "IFS=$'\\n'", "IFS=$' \\t'", "read -r -d '' x <<< {v}",
    "printf -v 'a[1]' %s {v}; x=${{a[1]}}", "a[1]+={v}; x=${{a[1]}}", "unset 'a[0]'",
    "declare -n r=x; r={v}", "declare -n r=y; x=$r", "local -i x 2>/dev/null",
    "x=${{x:-$y}}", "x=${{y:+$x}}", "x=\"${{x//\\//_}}\"", "x=${{x/%?/}}",
    "getopts ab: x -b {v} 2>/dev/null", "x=$OPTARG", "x=$(( ${{#y}} + 1 ))",
    "x=\"$(printf '%s,' {v} {v})\"", "x=${{x%,}}", "set -- $x; x=$#",
    "x=$(IFS=,; echo \"$*\")", "y=${{x:-$(echo {v})}}",
    "x=${{x:(-3)}}", "x=${{x:1:-1}}", "x=${{x/*/Z}}", "x=${{x//?/.}}", "x=${{x#*[ab]}}",
    "x=$(echo -e {v})", "x=$(echo -n {v}; echo -n {v})", "printf -v x '%b' {v}",
    "x=$'\\x72\\x6d'", "x=$'\\u0072m'", "x=$'r\\0m'", "for w in $y; do x=$w; done",
    "while read -r w; do x=$w; done <<< {v}", "f() {{ local y={v}; x=$y; }}; f",
    "f() {{ x={v}; return 1; }}; f || :", "declare -x x={v}", "export -n x", "x=${{x,,[AR]}}",
    "[[ {v} =~ (r)(m) ]] && x=${{BASH_REMATCH[0]}}", "x=$(printf '%s' \"$x\" | rev)",
    "x=$(cut -c1-2 <<< {v})", "x=$(head -c 2 <<< {v})", "x=$(tr -d r <<< {v})",
    "x=$(sed 's/^/r/' <<< {v})", "x=$(awk '{{print $1}}' <<< {v})", "x=${{x:-$x}}$y",
    "IFS=, read -ra a <<< {v}; x=${{a[0]}}", "x=\"${{a[*]}}\"", "x=${{a[@]: -1}}",
    "case {v} in *m) x=rm;; *) x=ls;; esac", "x=$( (echo {v}) )", "x=$({{ echo {v}; }})",
    "f() {{ x=$1; }}; f {v}", "f() {{ x=\"$*\"; }}; f {v} {v}", "f() {{ x=$#; }}; f {v}",
    "f() {{ local x=$1; y=$x; }}; f {v}", "printf -v x '%q' {v}", "printf -v x '%*s' 4 {v}",
    "printf -v x '%-5.2s|' {v}", "x=$(cut -d: -f1 <<< {v})", "x=$(awk -F, '{{print $2}}' <<< {v})",
    "x=$(sed -n 1p <<< {v})", "x=$(tail -c 3 <<< {v})", "x=$(tr -s ' ' <<< {v})",
    "x=$(printf '%s\\n' {v} {v} | sort | head -1)", "x=$(echo {v} {v} | xargs echo)",
    "x=$(printf '%s\\n' {v} {v} | paste -sd,)", "x=${{x:-${{y}}}}", "x=${{x/$y/Z}}",
    "x=${{x:+\"$y\"}}", "a=({v} {v}); x=${{a[@]^^}}", "a=({v} {v}); x=\"${{a[*]/a/Q}}\"",
    "x=${{y:-$x}}", "x=${{#y}}${{#x}}", "read -r -a a <<< {v}; x=${{#a[@]}}",
    "IFS=: read -r -a a <<< {v}; x=${{a[-1]}}", "x=\"${{x#\"$y\"}}\"", "x=$(echo \"$x\" \"$y\")",
    "x_b={v}; x_a=y; set -- ${{!x_@}}", "x_2={v}; x_1=x; set -- \"${{!x_@}}\"; x=${{!2}}",
    "x=${{!y@}}", "x=\"${{!x*}}\"", "set -- y x; x=${{!1}}", "set -- x; y=${{#1}}",
    "x_q={v}; for n in ${{!x_*}}; do x=${{!n}}; done",
)
"""Operations on ``x``, ``y``, ``a``, ``m``, ``$1``...: ``{v}`` takes one of ``VALUES``."""

PROBES = ("printf '<%s>\\n' \"$x\"", "printf '<%s>\\n' $x", "printf '<%s>\\n' ${x}",
          "printf '<%s>\\n' \"$x\" \"$y\"", "printf '<%s>\\n' \"${a[@]}\"",
          "printf '<%s>\\n' ${a[*]}", "printf '<%s>\\n' \"$@\"", "printf '<%s>\\n' $*",
          "printf '<%s>\\n' \"${x}${y}\"", "printf '<%s>\\n' x$x",
          "printf '<%s>\\n' k=\"$x\"", "printf '<%s>\\n' \"$x\"$y", "printf '<%s>\\n' $x\"$y\"z",
          "printf '<%s>\\n' ''$x")
"""The last command: prints each word of a value between ``<`` and ``>``."""

GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Case:
    """One chain and what each side makes of it."""

    command: str
    part: str
    bash: list[str] | None
    """The words the probe printed; None when bash failed before printing."""
    claimed: list[str] | None
    """The words the classifier reports for the probe; None when it claims none."""

    @property
    def mismatch(self) -> bool:
        if self.bash is None or self.claimed is None:
            return False
        if any(GLOB_CHARS & set(w) for w in [*self.bash, *self.claimed]):
            return False
        return (self.claimed or [""]) != (self.bash or [""])


def generate(count: int, seed: int) -> Iterator[str]:
    """``count`` distinct chains (the same seed gives the same ones)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    while len(seen) < count:
        ops = [rng.choice(OPERATIONS).format(v=rng.choice(VALUES))
               for _ in range(rng.randint(1, 5))]
        command = "; ".join([f"x={rng.choice(VALUES)}", f"y={rng.choice(VALUES)}", *ops,
                             rng.choice(PROBES)])
        if command not in seen:
            seen.add(command)
            yield command


def claimed_words(command: str, workspace: Path) -> list[str] | None:
    """The words the classifier reports for the final ``printf`` of ``command``."""
    result = check_shell_json(command, workspace, ENV)
    if result["decision"] == "deny" or check_shell_json(
            command, workspace, ENV, approval="auto")["decision"] == "deny":
        return None  # refused (a construct not followed, or a destroying command): no claim
    probes = [c["argv"] for c in result.get("commands", [])
              if c.get("argv", [""])[:2] == ["printf", "<%s>\\n"]]
    if not probes:
        return None
    words = [str(w) for w in probes[-1][2:]]
    return None if any("$" in w or "`" in w for w in words) else words


def bash_words(command: str, workspace: Path) -> list[str] | None:
    """What the probe prints when bash runs ``command`` in ``workspace``, in bubblewrap with
    nothing writable but an empty ``/tmp``: a value that becomes a command (``eval x=a b``
    runs ``b``) changes nothing."""
    ws = str(workspace)
    try:
        done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp",
                               "--ro-bind", ws, ws, "--dev", "/dev", "--proc", "/proc",
                               "--unshare-all", "--die-with-parent", "--chdir", ws, "--",
                               "bash", "-c", command], env=dict(ENV), capture_output=True,
                              text=True, timeout=10, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    lines = done.stdout.split("\n")[:-1]
    if not lines or not all(ln.startswith("<") and ln.endswith(">") for ln in lines):
        return None  # failed, or a value with a newline: not compared
    return [ln[1:-1] for ln in lines]


def judge(commands: list[str]) -> list[Case]:
    """Each command's case, bash run in a throwaway copy of the corpus workspace."""
    with tempfile.TemporaryDirectory() as tmp:
        workspace = make_workspace(Path(tmp))
        return [Case(c, part_of(c), bash_words(c, workspace), claimed_words(c, workspace))
                for c in commands]
