"""Words the classifier once misread: a ``|`` inside an awk regex, a quoted option value, a
length in arithmetic, an option's value taken for a file, a JSON query's environment.

Where bash or the program can show what a word is, it does, as the control.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace


def _decision(ws: Path, command: str, approval: str = "policy") -> str:
    return str(check_shell_json(command, ws, ENV, approval=approval)["decision"])


def _bash(ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)


@pytest.mark.parametrize(("command", "printed"), [
    ("awk '/(if|elif)/{c++} END{print c+0}' src/app.py", "2"),
    ("awk '/^def /{n=$2} /^ +(if|for)[ (:]/{c[n]++} END{for (k in c) print c[k]}' src/app.py",
     "1"),
    ("awk '$1 ~ /a|b/ {c++} END{print c+0}' src/app.py", "2"),
])
def test_a_bar_inside_an_awk_regex_is_no_pipe(tmp_path: Path, command: str,
                                              printed: str) -> None:
    ws = make_workspace(tmp_path)
    (ws / "src/app.py").write_text("def f(x):\n    if x:\n        pass\n    elif y:\n"
                                   "        pass\n")
    assert _bash(ws, command).stdout.strip() == printed  # the control: a count, no command
    assert _decision(ws, command) == "allow", command


@pytest.mark.parametrize(("command", "expected"), [
    ("awk '$1 ~ /a|b/ { print | \"sh\" }' a.txt", "deny"),  # the pipe after it is one
    ("awk '{ x = $1 / 2 | \"sh\" }' a.txt", "deny"),  # a division, not a regex
    ("awk '/[/]|date/' a.txt", "ask"),  # a / in brackets: read as the regex's end, and
])                                       # what follows is searched like code
def test_what_follows_an_awk_regex_is_still_searched(tmp_path: Path, command: str,
                                                     expected: str) -> None:
    assert _decision(make_workspace(tmp_path), command) == expected, command


def test_a_greater_than_inside_an_awk_string_is_text(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (ws / "data").mkdir(exist_ok=True)
    (ws / "data/users.csv").write_text("id,name,email\n1,ann,a@x\n")
    command = "awk -F, 'NR>1 {printf \"%s => \\\"%s\\\"\\n\", $1, $3}' data/users.csv"
    before = sorted(p.name for p in ws.rglob("*"))
    assert _bash(ws, command).stdout == '1 => "a@x"\n'  # the control: printed, no file
    assert sorted(p.name for p in ws.rglob("*")) == before
    assert _decision(ws, command) == "allow", command
    for writes in ("awk '{printf \"a \\\"b\\\" \" > \"out.txt\"}' a.txt",
                   "awk '{print \"x=>y\" > $2}' a.txt"):
        assert _decision(ws, writes) == "ask", writes


@pytest.mark.parametrize(("command", "expected"), [
    # the value is one word whatever it holds: still that option
    ('for f in src/*.py; do b=$(basename "$f"); grep -rqF "$b" --exclude="$b" src; done',
     "allow"),
    ('read -r x; grep --file="$x" a.txt', "ask"),  # a file of patterns only known then
    ('read -r x; sort "--output=$x" a.txt', "ask"),
    # a short option with its value in the same quoted word: -f"$c" is -f, not a file
    ('for ((c=1; c<=3; c++)); do cut -d, -f"$c" data.csv | sort -u | wc -l; done', "allow"),
    ('read -r n; head -n"$n" a.txt', "allow"),
    ('read -r x; grep -f"$x" a.txt', "ask"),  # patterns from a file only known then
    ('read -r x; jq -f"$x" package.json', "ask"),  # a program from a file (was a filter)
    ('read -r d < a.txt; mv -t"$d" b.txt', "ask"),
])
def test_a_quoted_option_value_stays_the_option_s(tmp_path: Path, command: str,
                                                  expected: str) -> None:
    assert _decision(make_workspace(tmp_path), command) == expected, command


@pytest.mark.parametrize(("command", "expected"), [
    # an element picked by a counting index: any of the elements, or none
    ('a=(README.md a.txt); for ((i = 0; i < ${#a[@]}; i++)); do wc -l "${a[i]}"; done',
     "allow"),
    ('a=(README.md ~/.ssh/id_rsa); for ((i = 0; i < 2; i++)); do cat "${a[i]}"; done', "ask"),
    ('a=(README.md src); (( i = 1 )); rm -rf "${a[i]}"', "deny"),
    ('a=(README.md src); n=$(wc -l < a.txt); rm -rf "${a[n]}/"', "deny"),  # none: "/"
])
def test_an_element_a_counter_picks_is_each_element(tmp_path: Path, command: str,
                                                    expected: str) -> None:
    assert _decision(make_workspace(tmp_path), command) == expected, command


def test_a_length_in_arithmetic_is_digits(tmp_path: Path) -> None:
    """``${#x}`` is x's length: a subscript x holds is never evaluated (the control)."""
    ws = make_workspace(tmp_path)
    command = "read -r x < a.txt; echo $(( ${#x} + 1 ))"
    (ws / "a.txt").write_text("a[$(touch ran)]\n")
    assert _bash(ws, command).stdout.strip() == "16"
    assert not (ws / "ran").exists()
    assert _decision(ws, command) == "allow"
    assert _decision(ws, "read -r x < a.txt; echo $(( x + 1 ))") == "ask"
    stored = "read -r x < a.txt; l=${#x}; (( l > 3 )) && echo long"  # a length, stored
    assert _bash(ws, stored).stdout.strip() == "long" and not (ws / "ran").exists()
    assert _decision(ws, stored) == "allow"


@pytest.mark.parametrize(("command", "expected"), [
    ("python3 -m json.tool --indent 1 package.json", "allow"),  # 1 is the indent
    ("python3 -m json.tool package.json b.txt", "ask"),  # OUTFILE written
    ("rustfmt --print-config default", "allow"),  # printed
    ("rustfmt --print-config current src/app.py", "allow"),
    ("rustfmt --print-config default a.txt", "deny"),  # replaces a.txt
    ("tomlq -r '.project.name' pyproject.toml", "allow"), ("xq . a.txt", "allow"),
    ("tomlq -i '.a = 1' pyproject.toml", "ask"), ("tomlq -ri '.a = 1' a.txt", "ask"),
])
def test_an_option_s_value_is_no_file(tmp_path: Path, command: str, expected: str) -> None:
    assert _decision(make_workspace(tmp_path), command) == expected, command


@pytest.mark.parametrize(("command", "expected"), [
    ("jq -n env", "ask"), ("jq -n '$ENV'", "ask"), ("jq -n '$ENV.GITHUB_TOKEN'", "ask"),
    ("yq '.a = env(API_KEY)' a.txt", "ask"), ("yq 'envsubst' a.txt", "ask"),
    ("jq -n '$ENV.HOME'", "allow"), ("jq -n env.PATH", "allow"),  # as printenv NAME
    ("jq .env package.json", "allow"), ("jq '{env: 1}' package.json", "allow"),
    ("jq --arg env dev '. + {env: $env}' package.json", "allow"),  # $env: the --arg
    ("jq --arg x env -n env", "ask"), ("jq --arg env dev -n '$ENV'", "ask"),
    ("jq -n 'env | keys'", "allow"), ("jq -n '$ENV | keys[]'", "allow"),  # names only
])
def test_a_json_query_that_prints_the_environment_prints_credentials(
        tmp_path: Path, command: str, expected: str) -> None:
    ws = make_workspace(tmp_path)
    if command == "jq -n '$ENV'":  # the control: jq prints a variable nobody named
        shown = subprocess.run(["jq", "-n", "$ENV"], capture_output=True, text=True,
                               timeout=60, env={"PATH": "/usr/bin:/bin", "K": "ghp_x"},
                               check=False)
        assert "ghp_x" in shown.stdout
    assert _decision(ws, command) == expected, command
    if expected == "ask":
        assert _decision(ws, command, "auto") == "deny", command


def test_an_unquoted_value_nobody_sees_may_become_options_and_paths(tmp_path: Path) -> None:
    """``grep $x f``: bash splits x's value into words, here an option and a folder
    outside the workspace, which grep then reads (the control)."""
    ws = make_workspace(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("key=hunter2\n")
    (ws / "a.txt").write_text(f"-r key {outside}\n")
    command = "x=$(cat a.txt); grep $x b.txt"
    assert "hunter2" in _bash(ws, command).stdout
    assert _decision(ws, command) == "ask"
    assert _decision(ws, command, "auto") == "deny"
    assert _decision(ws, 'x=$(cat a.txt); grep "$x" b.txt') == "allow"  # one word


@pytest.mark.parametrize("command", [
    "for w in $(cat a.txt); do grep -c $w b.txt; done",  # split and matched already
    "n=$(wc -l < a.txt); head -n $n b.txt",  # a count
    "i=0; until (( i >= 3 )); do git log -1 --skip=$i --format=%s; ((i++)); done",
    "git log -1 --skip=$(( 1 + 1 )) --format=%s",
    "git log --oneline $(git merge-base HEAD HEAD)..HEAD",  # object names
    "git grep -n x $(git rev-list -n 2 HEAD) -- src/",
    "read -r x < a.txt; echo $x",  # words only printed
])
def test_values_that_stay_one_word_or_are_only_printed(tmp_path: Path, command: str) -> None:
    ws = make_workspace(tmp_path)
    _repository(ws)
    assert _decision(ws, command) == "allow", command


@pytest.mark.parametrize("command", [
    "for w in \"$(cat a.txt)\"; do grep -c $w b.txt; done",  # one value, split later
    "for w in $(cat a.txt); do IFS=,; grep -c $w b.txt; done",  # split again at commas
    "read -r w < a.txt; (for w in x; do :; done); grep $w b.txt",  # the loop's w is gone
    "git show $(git rev-parse --show-toplevel)",  # a path, which may hold blanks
    "git diff $(git rev-list --boundary HEAD)",  # -HASH: boundary commits, as options
])
def test_values_that_may_still_split(tmp_path: Path, command: str) -> None:
    assert _decision(make_workspace(tmp_path), command, "auto") == "deny", command


def _repository(ws: Path) -> None:
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=a", "-c", "user.email=a@b",
                                                  "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, timeout=60)


def test_a_difftool_command_is_handed_the_working_tree_s_file(tmp_path: Path) -> None:
    """``git difftool -x 'rm -f'`` runs ``rm -f LOCAL REMOTE``: REMOTE is the changed file
    itself (the control deletes it)."""
    ws = make_workspace(tmp_path)
    _repository(ws)
    (ws / "src/app.py").write_text("changed\n")
    command = "git difftool -y -x 'rm -f'"
    assert _decision(ws, command) == "deny"
    _bash(ws, command)
    assert not (ws / "src/app.py").exists()


@pytest.mark.parametrize("command", [
    'export "GIT_PAGER=rm -f a.txt; cat"; git -p log -1',
    'v=git_pager; export "${v^^}=rm -f a.txt; cat"; git -p log -1',  # the name computed
    'declare -x "GIT_PAGER=rm -f a.txt; cat"; git -p log -1',
])
def test_a_setting_given_as_one_word_is_the_assignment(tmp_path: Path, command: str) -> None:
    """``export "NAME=value"`` sets and exports NAME as ``export NAME=value`` does: git's
    pager then runs the value (the control deletes a.txt)."""
    ws = make_workspace(tmp_path)
    _repository(ws)
    assert _decision(ws, command) == "deny", command
    subprocess.run(["script", "-qec", command, "/dev/null"], cwd=ws, capture_output=True,
                   timeout=60, stdin=subprocess.DEVNULL, check=False,  # a terminal: a pager
                   env={**os.environ, "SHELL": "/bin/bash"})  # script runs $SHELL -c
    assert not (ws / "a.txt").exists()


@pytest.mark.parametrize(("script", "expected"), [
    ("/^/d", "deny"), ("/.*/d", "deny"), ("/^.*$/d", "deny"),  # every line matches
    ("/^$/d", "ask"), ("/foo/d", "ask"),  # some lines
])
def test_deleting_every_line_a_regex_matches(tmp_path: Path, script: str,
                                             expected: str) -> None:
    ws = make_workspace(tmp_path)
    (ws / "README.md").write_text("one\n\ntwo\n")
    command = f"sed -i '{script}' README.md"
    assert _decision(ws, command) == expected, command
    _bash(ws, command)
    assert ((ws / "README.md").read_text() == "") == (expected == "deny")


@pytest.mark.parametrize(("setting", "expected"), [
    ("false", "allow"), ("off", "allow"), ("0", "allow"),  # the hook turned off
    ("true", "ask"),  # git's own daemon, started in the background
    ("'touch ran; false'", "ask"),  # a command line git runs
])
def test_fsmonitor_turned_off_runs_nothing(tmp_path: Path, setting: str,
                                           expected: str) -> None:
    ws = make_workspace(tmp_path)
    _repository(ws)
    command = f"git -c core.fsmonitor={setting} status --short"
    assert _decision(ws, command) == expected, command
    _bash(ws, command)
    assert (ws / "ran").exists() == (setting == "'touch ran; false'")  # the control


def test_the_names_cut_from_env_can_still_hold_a_secret(tmp_path: Path) -> None:
    """``env | cut -d= -f1`` looks like names only, but a value over several lines (a key
    in a variable) prints its lines whole: the control shows the secret's line, so it stays
    a read of credentials."""
    secret = "-----BEGIN KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA\n-----END KEY-----"
    shown = subprocess.run(["bash", "-c", "env | cut -d= -f1"], capture_output=True,
                           text=True, check=True, env={"DEPLOY_KEY": secret}).stdout
    assert "c2VjcmV0LWtleS1tYXRlcmlhbA" in shown
    ws = make_workspace(tmp_path)
    assert _decision(ws, "env | cut -d= -f1 | sort") == "ask"
    assert _decision(ws, "env | cut -d= -f1 | sort", "auto") == "deny"
