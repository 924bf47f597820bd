"""Words the classifier once misread: a ``|`` inside an awk regex, a quoted option value, a
length in arithmetic, an option's value taken for a file, a JSON query's environment.

Where bash or the program can show what a word is, it does, as the control.
"""

from __future__ import annotations

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


@pytest.mark.parametrize(("command", "expected"), [
    # the value is one word whatever it holds: still that option
    ('for f in src/*.py; do b=$(basename "$f"); grep -rqF "$b" --exclude="$b" src; done',
     "allow"),
    ('read -r x; grep --file="$x" a.txt', "ask"),  # a file of patterns only known then
    ('read -r x; sort "--output=$x" a.txt', "ask"),
])
def test_a_quoted_option_value_stays_the_option_s(tmp_path: Path, command: str,
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
