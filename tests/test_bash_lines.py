"""Lines bash runs are judged, and text it does not run is not (``bash_lines``).

Each command hides ``touch RAN`` behind a here-document delimiter quoted in part, a body
line ending in a backslash, a comment ending in one, or a continuation in quotes. bash runs
it in a scratch folder: where the file appears, the classifier must not allow the command
(``touch`` writes); where it does not, the text was a body or a comment and the command
reads (allow). The rule is checked against bash for every form, not only those listed.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from engine.permissions.bash_lines import bash_lines
from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}
PAYLOAD = "touch RAN"
DELIMITERS = ["EOF", "'EOF'", '"EOF"', "\\EOF", "E'O'F", 'E"O"F', "EO\\F", "'E'OF", '""EOF',
              "E''OF"]


def _heredocs() -> list[str]:
    """A here-document whose body, as bash reads it, may or may not hold the payload."""
    out = []
    for delim, dash in itertools.product(DELIMITERS, ("", "-")):
        tab = "\t" if dash else ""
        out += [
            f"cat <<{dash}{delim}\nEOF\n{PAYLOAD}\n{delim}",  # ends at EOF: payload runs
            f"cat <<{dash}{delim}\nx\\\nEOF\n{PAYLOAD}\nEOF",  # x\ joins EOF when unquoted
            f"cat <<{dash}{delim}\n{tab}{PAYLOAD}\n{tab}EOF\necho done",
        ]
    return out


COMMENTS = [
    f"ls # \\\n{PAYLOAD}", f"ls; # \\\n{PAYLOAD}", f"# \\\n{PAYLOAD}",
    f"echo a#b \\\n{PAYLOAD}", f"echo 'a \\\n{PAYLOAD}'", f'echo "a \\\n{PAYLOAD}"',
    f"echo $'a \\\n{PAYLOAD}'", f"echo a \\\n; {PAYLOAD}", f"x=$(echo a # \\\n{PAYLOAD}\n)",
    f"echo ${{#HOME}} # \\\n{PAYLOAD}", f"echo $(( 1 << 2 )) # \\\n{PAYLOAD}",
    f"cat <<< x # \\\n{PAYLOAD}", f"read -r a <<< \"$HOME\"; echo # \\\n{PAYLOAD}",
]


def _ran(tmp_path: Path, command: str) -> bool:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    (folder / "RAN").unlink(missing_ok=True)
    subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, check=False)
    return (folder / "RAN").exists()


@pytest.mark.parametrize("command", _heredocs() + COMMENTS)
def test_what_bash_runs_is_judged_and_only_that(tmp_path: Path, command: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ran = _ran(tmp_path, command)
    decision = check_shell_json(command, ws, ENV)["decision"]
    assert (decision != "allow") == ran, (command, decision, ran)


def test_the_forms_cover_both_outcomes(tmp_path: Path) -> None:
    """The control: among the forms, bash runs the payload in some and not in others."""
    outcomes = {_ran(tmp_path, c) for c in [*_heredocs(), *COMMENTS][:40]}
    assert outcomes == {True, False}


@pytest.mark.parametrize(("text", "read"), [
    ("a \\\nb", "a b"), ("'a \\\nb'", "'a \\\nb'"), ("# a \\\nb", "# a \\\nb"),
    ("cat <<E'O'F\nx\nEOF", "cat <<'EOF'\nx\nEOF"), ("cat <<'E\nx", None), ("'a \\\nb", None),
    ("cat <<< 'x'\nls", "cat <<< 'x'\nls"),
])
def test_the_text_as_bash_reads_it(text: str, read: str | None) -> None:
    assert bash_lines(text) == read
