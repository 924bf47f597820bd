"""Counts in arithmetic, and variables set to the value they hold.

Bash's arithmetic reads a word beside a number as a variable and runs a subscript in it, so
a count printed next to a file name is code when that name comes from data: a control run
shows ``n=$(wc -l *); (( n > 0 ))`` running a command named by a file in the folder. Counts
with no name beside them (``wc -l < f``, ``grep -hc``) stay numbers
(``engine/permissions/constructs.numbers_printed``).

``env -i HOME="$HOME" git ..`` hands on the value HOME had: nothing about what git reads
changes, so it is judged like ``git ..``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import decisions

PLANTED = "a[$(touch PWNED)]"


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


@pytest.mark.parametrize("command", [
    "n=$(wc -l *); (( n > 0 ))",
    "n=$(grep -c a *); (( n > 0 ))",
    "n=$(du *); (( n > 0 ))",
    "n=$(stat -c '%n %s' *); (( n > 0 ))",
])
def test_a_name_beside_a_count_runs_in_arithmetic(tmp_path: Path, command: str) -> None:
    """Control: the file name the count is printed with is evaluated, its subscript runs."""
    (tmp_path / PLANTED).write_text("")
    (tmp_path / "b").write_text("a\n")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=False)
    assert (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("command", [
    "n=$(wc -l src/*); (( n > 0 )) && echo some",
    "n=$(grep -c x src/*); echo $(( n + 1 ))",
    "n=$(grep -rc x src); (( n ))",
    "n=$(grep -Hc x src/app.py); (( n ))",
    "n=$(grep -ec src/app.py a.txt); (( n ))",  # -e takes c: the pattern, no count
    "n=$(rg -c x); (( n ))",
    "n=$(du src); (( n > 1 ))",
    "n=$(stat src/*); (( n ))",
    "n=$(expr \"$x\"); (( n ))",
    "n=$(git -c a=b log --format=%s); (( n ))",
    "n=$(git grep -c x); (( n ))",
    "n=0; while read -r x; do n=$x; done < a.txt; echo $(( n + 1 ))",
    "declare -i t; t=$(cat a.txt)",
])
def test_counts_printed_with_names_from_data_are_not_numbers(workspace: Path,
                                                             command: str) -> None:
    assert decisions(workspace, command) == ("ask", "deny")


@pytest.mark.parametrize("command", [
    "n=$(wc -l < src/app.py); (( n > 0 )) && echo some",
    "n=$(wc -l src/app.py); (( n > 0 ))",
    "n=$(git ls-files | wc -l); echo $(( n + 1 ))",
    "uses=$(grep -rwn x src | grep -vc 'def x'); (( uses == 0 )) && echo unused",
    "n=$(grep -hc x src/*); (( n ))",
    "n=$(grep -c x src/app.py); (( n ))",
    "n=$(rg --no-filename -c x src); (( n ))",
    "n=$(du -s src); (( n > 1 ))",
    "n=$(du -sk src a.txt | sort -n | tail -n 1); echo ok",
    "n=$(stat -c %s src/*); (( n > 0 ))",
    "n=$(expr \"$RANDOM\" + 1); (( n ))",
    "n=$(git rev-list --count HEAD); (( n > 2 ))",
    "t=$(git log -1 --format=%ct); echo $(( $(date +%s) - t ))",
    "declare -i total; total+=$(wc -l < a.txt); total+=$(wc -l < src/app.py); echo $total",
    "exec {fd}< <(git ls-files); mapfile -t -u \"$fd\" files; echo \"${#files[@]}\"",
    # a number counted up in a loop that may not run is still a number after it
    "paid=0 open=0\nwhile IFS=, read -r _ status; do\n  case $status in\n    paid) ((paid++)) ;;"
    "\n    *) ((open++)) ;;\n  esac\ndone < a.txt\necho $(( paid * 100 / (paid + open) ))",
])
def test_counts_alone_are_numbers(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "ps -o pid,cmd -u \"$(id -u)\"", "n=$(date -u +%Y%m%d); echo $(( n + 1 ))",
    "n=$(getconf _NPROCESSORS_ONLN); echo \"$n\"", "ps -p $(pgrep -d, -x bash) -o pid=",
])
def test_ids_dates_and_counts_are_numbers_inline_too(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    # grep -c of one quoted file prints its count alone, whatever the file is called
    'for f in src/*.py; do n=$(grep -c x "$f"); (( n > 0 )) && echo "$f"; done',
    'for f in src/app.py a.txt; do n=$(grep -c x "$f" || true); (( n )); done',
    'n=$(grep -c x src/app.py || echo 0); echo $(( n + 1 ))',
])
def test_a_count_of_one_named_file_is_a_number(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    'for f in *.py; do n=$(grep -c x "$f"); (( n )); done',  # -r.py matches *.py
    'for f in a.txt -r; do n=$(grep -c x "$f"); (( n )); done',
    'read -r f; n=$(grep -c x -- "$f"); (( n ))',
    'n=$(grep -c x a.txt || cat b.txt); (( n ))',
])
def test_a_count_beside_a_name_from_data_is_not(workspace: Path, command: str) -> None:
    assert decisions(workspace, command)[0] != "allow", command


def test_a_file_named_like_an_option_is_one(workspace: Path) -> None:
    """The control: a file named ``-r`` turns ``grep -c x "$f"`` (``f`` from ``*``) into a
    recursive search, whose lines carry names beside counts: not a number."""
    (workspace / "-r").write_text("x\n")
    command = 'for f in *; do grep -c x "$f"; done'
    shown = subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True,
                           text=True, check=False)
    assert any(":" in line for line in shown.stdout.splitlines())
    counted = 'for f in *; do n=$(grep -c x "$f"); (( n )); done'
    assert decisions(workspace, counted)[0] != "allow"


@pytest.mark.parametrize("template", [
    'n=$(date +{path}); cat "$n"', 'cat "$(date +{path})"', 'p=$(getconf PATH); ls $p',
])
def test_a_date_format_prints_a_path_not_a_number(workspace: Path, tmp_path: Path,
                                                   template: str) -> None:
    """``date +/x/y`` prints ``/x/y`` as it is (the control reads a file outside with it):
    only a format of numbers (``+%s``, ``+%Y-%m-%d``) makes a number."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret\n")
    command = template.format(path=outside)
    if "{path}" in template:
        shown = subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True,
                               text=True, check=False).stdout
        assert shown == "secret\n"
    assert decisions(workspace, command)[0] != "allow", command


@pytest.mark.parametrize("command", [
    "env -i PATH=/usr/bin:/bin HOME=\"$HOME\" git log -1",
    "env HOME=\"$HOME\" ls src",
    "HOME=$HOME git status --short",
    "env -i PATH=/usr/bin:/bin HOME=\"${HOME}\" bash --noprofile --norc -c 'git log -1'",
])
def test_a_variable_set_to_what_it_holds_changes_nothing(workspace: Path,
                                                         command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "HOME=/tmp/x; env HOME=\"$HOME\" git log -1",
    "export HOME=/tmp/x; HOME=$HOME git status",
    "env HOME=\"$HOME/other\" git log -1",
    "X=$HOME/other; env HOME=\"$X\" git log -1",
])
def test_a_variable_set_to_another_value_still_asks(workspace: Path, command: str) -> None:
    assert decisions(workspace, command)[0] == "ask"


@pytest.mark.parametrize(("command", "decision"), [
    ("pid=$(pgrep -n -f 'src/app.py'); [ -n \"$pid\" ] && lsof -p \"$pid\" | head", "allow"),
    ("n=$(wc -l < a.txt); cat \"$n\" 2>/dev/null", "allow"),
    ("pid=$(pgrep -l x); lsof \"$pid\"", "ask"),  # -l: names beside the ids, a path
    ("pid=$(pgrep -l x); lsof -p \"$pid\"", "allow"),  # -p's value is a process, any text
    ("pid=$(pgrep -f x); kill \"$pid\"", "ask"),  # a number, but which process: asked
    ("n=$(wc -l < a.txt); rm -f \"$n\"", "deny"),  # a write: still a path not shown
])
def test_a_variable_holding_a_number_reads_a_name_in_the_folder(workspace: Path, command: str,
                                                                decision: str) -> None:
    assert decisions(workspace, command)[0] == decision


DATA = "a[$(>PWNED)]"
"""A subscript with no blank, so ``read`` keeps it one field."""

COLUMN_LOOPS = [
    "sort logs | uniq -c | sort -rn | head -5 | while read -r n w; do t=$(( t + n )); done",
    "while read -r n w; do (( t += n )); done < <(uniq -c < logs | sort -n)",
    "git diff --numstat | while IFS=$'\\t' read -r a d p; do echo $(( a - d )); done",
    "read -r a d _ < <(git diff --numstat -- logs); echo $(( ${a:-0} + ${d:-0} ))",
    "git log --format='%ct %h %s' -n 5 | while read -r ts h s; do echo $(( ts / 86400 )); "
    "done",
]
"""Loops that count the fields a command always prints as numbers."""


def _committed_data(tmp_path: Path) -> None:
    """A repository whose file ``logs``, a file named by the subscript, and a commit's
    subject and body hold it, changed since: data in every column the loops do not count."""
    logs = tmp_path / "logs"
    logs.write_text(f"{DATA} x\n{DATA} x\nok\n")
    (tmp_path / DATA).write_text("a\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", f"{DATA} x\n\nbody\n{DATA} y"], check=True)
    logs.write_text(f"{DATA} x\nok\nmore\n")
    (tmp_path / DATA).write_text("b\n")


def _bash(tmp_path: Path, command: str) -> tuple[bool, subprocess.CompletedProcess[str]]:
    """Run ``command`` with bash over the data; whether the subscript ran (it is undone)."""
    _committed_data(tmp_path)
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    ran = (tmp_path / "PWNED").exists()
    (tmp_path / "PWNED").unlink(missing_ok=True)
    return ran, done


@pytest.mark.parametrize("command", COLUMN_LOOPS)
def test_numbers_a_command_prints_in_its_columns_are_counted(tmp_path: Path,
                                                             command: str) -> None:
    """Control: bash runs each loop over a file, a file name and a commit message holding
    a subscript, which is never evaluated; the decision is allow."""
    ran, done = _bash(tmp_path, command)
    assert done.returncode == 0 and not ran, done.stderr
    assert decisions(tmp_path, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "sort logs | uniq -c | while read -r n; do t=$(( t + n )); done",  # n: the whole line
    "sort logs | while read -r n w; do t=$(( t + n )); done",
    "git diff --numstat | while read -r a d p; do echo $(( p )); done",
    "git log --format='%ct %b' | while read -r ts b; do echo $(( ts )); done",
    "git log --format='%s %ct' | while read -r s ts; do echo $(( s )); done",
    "git log --stat --format='%ct %h' | while read -r ts s; do echo $(( ts )); done",
    "uniq -c logs | cut -c9- | while read -r n w; do t=$(( t + n )); done",
])
def test_a_field_that_may_be_data_is_not_counted(tmp_path: Path, command: str) -> None:
    """Control: the field each loop counts holds the subscript, which bash runs."""
    ran, _ = _bash(tmp_path, command)
    assert ran, command
    assert decisions(tmp_path, command) == ("ask", "deny")


@pytest.mark.parametrize("command", [
    "git diff --numstat | while IFS=, read -r a d p; do echo $(( a )); done",
    "git log --format='%ct %s' | while IFS=$'\\t' read -r ts s; do echo $(( ts )); done",
])
def test_fields_split_elsewhere_than_printed_are_not_counted(tmp_path: Path,
                                                             command: str) -> None:
    """Split at a separator the command does not print, a field is a whole line: judged
    as data (bash fails on the number before it, but the rule does not rely on that)."""
    _committed_data(tmp_path)
    assert decisions(tmp_path, command) == ("ask", "deny")


@pytest.mark.parametrize("command", [
    "n=$(wc -l < logs | tr -d ' '); (( n > 0 ))",
    "n=$(git log -1 --format=%s | tr -dc '0-9'); echo $(( n + 1 ))",
    "n=$(git log --format='%ct %s' | awk '{print $1}' | head -1); echo $(( n + 1 ))",
    "n=$(git diff --numstat | cut -f1 | head -1); echo $(( n + 1 ))",
    "n=$(sort logs | uniq -c | sort -rn | awk '{ print $1 }' | head -n 1); (( n > 1 ))",
    "n=$(seq -s, 1 3 | xargs); echo $(( n ))",
    "for i in $(seq -w 1 3); do (( i > 2 )) && echo $i; done",
])
def test_numbers_kept_through_filters_are_counted(tmp_path: Path, command: str) -> None:
    """Control: the subscript in the file, a file name and the commit message never runs;
    the decision is allow."""
    ran, done = _bash(tmp_path, command)
    assert not ran, done.stderr
    assert decisions(tmp_path, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "n=$(cut -d' ' -f1 logs | tr -d ' ' | head -1); (( n ))",
    "n=$(git diff --numstat | cut -f3 | head -1); (( n ))",
    "n=$(sort logs | uniq -c | grep -F x | awk '{ print $2 }' | head -n 1); (( n ))",
    "n=$(git log --format='%s %ct' | awk '{print $1}'); (( n ))",
    "n=$(head -1 logs | tr ' ' '\\n' | head -1); (( n ))",
])
def test_data_kept_through_filters_is_not_counted(tmp_path: Path, command: str) -> None:
    """Control: the column kept holds the subscript, which bash runs."""
    ran, _ = _bash(tmp_path, command)
    assert ran, command
    assert decisions(tmp_path, command) == ("ask", "deny")


@pytest.mark.parametrize("command", ["n=$(seq -f 'x%g' 3); echo $(( n ))",
                                     "n=$(seq -s x 1 3); echo $(( n ))"])
def test_seq_with_words_in_its_format_prints_text(tmp_path: Path, command: str) -> None:
    assert decisions(tmp_path, command) == ("ask", "deny")


@pytest.mark.parametrize(("command", "decision"), [
    ("n=$(wc -l < a.txt); sed -n \"${n}p\" a.txt", "allow"),
    ("first=$(grep -n -m1 a a.txt | cut -d: -f1); sed -n \"$((first-1)),$((first+1))p\" "
     "a.txt", "allow"),
    ("grep -n a a.txt | while IFS=: read -r n rest; do (( n > 3 )) && echo \"$n\"; done",
     "allow"),
    ("sed -n \"$1p\" a.txt", "ask"),  # a positional: any text
    ("n=$(wc -l < a.txt); sed -n \"${n}e\" a.txt", "ask"),  # e runs the line as a command
    ("n=$(wc -l < a.txt); sed -i \"${n}d\" a.txt", "ask"),
    ("first=$(grep -n a a.txt src/app.py | cut -d: -f1); (( first > 1 ))", "ask"),  # names
    ("first=$(grep -n -A1 a a.txt | cut -d: -f1); (( first > 1 ))", "ask"),  # 2-context
    ("grep -n a a.txt | while IFS=, read -r n rest; do (( n > 3 )); done", "ask"),
])
def test_numbers_in_a_sed_script_or_read_from_grep_n(workspace: Path, command: str,
                                                      decision: str) -> None:
    """A sed script whose only run-time parts are numbers is read with each as ``1``: its
    commands are the letters around them. ``grep -n`` of one file starts each line with a
    number and ``:``; a second file's name or a context line (``N-text``) does not."""
    assert decisions(workspace, command)[0] == decision, command


def test_a_context_line_of_grep_n_is_not_a_number(workspace: Path) -> None:
    """Control: ``grep -n -A1`` prints ``N-text`` for the line after a match, and cut's
    first ``:`` field of it carries the text."""
    (workspace / "b.txt").write_text("a\nx: y\n")
    out = subprocess.run(["bash", "-c", "grep -n -A1 a b.txt | cut -d: -f1"], cwd=workspace,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "2-x"]
