"""A script file that is the command's own input: ``awk -f /dev/stdin <<< PROGRAM``.

Programs that take their script from a file (``awk -f``, ``sed -f``, ``sqlite3 -init``,
``make -f``, ``psql -f``, mysql's ``source``, ``gdb -x``, ``emacs --script``, ``tmux
source-file``; gdb without ``-batch`` reads commands anyway) read the here-string or
here-document feeding them when that file is ``/dev/stdin``, ``/dev/fd/0``,
``/proc/self/fd/0`` or ``-``: the script is on the command line and is judged as shown.
Each destructive case also runs for real with bash on a throwaway workspace, to show it
destroys what the decision says.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import decisions


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "a.txt").write_text("a b\n")
    return tmp_path


@pytest.mark.parametrize("command", [
    "awk -f /dev/stdin a.txt <<< 'BEGIN { system(\"rm -rf src\") }'",
    "sed -f /dev/stdin a.txt <<< '1e rm -rf src'",
    "sqlite3 -init /dev/stdin app.db 'select 1' <<< '.shell rm -rf src'",
    "make -f /proc/self/fd/0 <<< $'all:\\n\\trm -rf src'",
    "awk -f /dev/fd/0 a.txt <<'E'\nBEGIN { system(\"rm -rf src\") }\nE",
])
def test_a_destroying_script_on_the_input_is_refused(workspace: Path, command: str) -> None:
    program = command.split()[0]
    if shutil.which(program) is None:
        pytest.fail(f"{program} is not installed: the control run needs it")
    decided = decisions(workspace, command, {})
    subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, timeout=60)
    assert not (workspace / "src").exists(), command  # the control: it did destroy src
    assert decided == ("deny", "deny"), command


@pytest.mark.parametrize(("command", "expected"), [
    ("awk -f /dev/stdin a.txt <<< '{ print $1 }'", ("allow", "allow")),
    ("sed -f /dev/stdin a.txt <<< 's/a/b/'", ("allow", "allow")),
    ("psql -f /dev/fd/0 <<< '\\! rm -rf src'", ("deny", "deny")),
    ("mysql -e 'source /dev/stdin' <<< 'system rm -rf src'", ("deny", "deny")),
    ("gdb -batch -x /dev/stdin <<< 'shell rm -rf src'", ("deny", "deny")),
    ("gdb <<< 'shell rm -rf src'", ("deny", "deny")), ("gdb <<< 'bt'", ("ask", "ask")),
    ("emacs --batch --script /dev/stdin <<< '(shell-command \"rm -rf src\")'",
     ("deny", "deny")),
    ("tmux source-file /dev/stdin <<< 'run-shell \"rm -rf src\"'", ("deny", "deny")),
    ("tmux source-file /dev/stdin <<< 'set -g mouse on'", ("ask", "ask")),
    ("awk -f prog.awk a.txt", ("ask", "ask")),  # a file not shown: project code, asked
    ("sed -f edit.sed a.txt", ("ask", "ask")),
])
def test_scripts_on_the_input_are_judged_as_shown(workspace: Path, command: str,
                                                 expected: tuple[str, str]) -> None:
    assert decisions(workspace, command, {}) == expected, command


@pytest.mark.parametrize(("script", "expected"), [
    ("SELECT count(*) FROM sqlite_master;\n", "allow"),  # a query: read
    ("DROP TABLE users;\n", "deny"),
    (".shell rm -rf src\n", "deny"),
])
def test_a_workspace_file_on_the_input_is_judged_by_what_it_holds(
        workspace: Path, script: str, expected: str) -> None:
    """``sqlite3 app.db < q.sql``: the file is in the workspace, so what it holds is shown
    to the classifier (as a makefile is); a destroying one is refused, and bash shows the
    control."""
    (workspace / "q.sql").write_text(script)
    command = "sqlite3 app.db < q.sql"
    assert decisions(workspace, command, {}) == (expected, expected)
    if expected == "deny" and ".shell" in script and shutil.which("sqlite3"):
        subprocess.run(["bash", "-c", command], cwd=workspace, check=False)
        assert not (workspace / "src").exists()


@pytest.mark.parametrize("command", [
    "sqlite3 app.db < /tmp/elsewhere.sql",  # outside: not read for the preview
    "sqlite3 app.db < missing.sql",
    "printf 'DROP TABLE users;' > new.sql; sqlite3 app.db < new.sql",  # written just before
    "sqlite3 app.db < \"$F\"",
])
def test_a_file_on_the_input_not_shown_is_never_run_unasked(workspace: Path,
                                                            command: str) -> None:
    asked, auto = decisions(workspace, command, {})
    assert asked in ("ask", "deny") and auto == "deny", command


@pytest.mark.parametrize(("script", "expected"), [
    ("export APP_ENV=dev\nPORT=8080\n", "allow"),  # settings only
    ("rm -rf src\n", "deny"),
    ("cat ~/.ssh/id_rsa\n", "ask"),
])
def test_a_sourced_workspace_file_is_judged_by_what_it_holds(
        workspace: Path, script: str, expected: str) -> None:
    """``. ./env.sh`` runs the file's text in this shell, as ``eval`` of it would: judged
    by what it holds now. A name without ``/`` is looked for on PATH first (not followed),
    and a file this command wrote first is not shown. The control runs each with bash."""
    (workspace / "env.sh").write_text(script)
    done = subprocess.run(["bash", "-c", ". ./env.sh; echo \"$PORT\""], cwd=workspace,
                          capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(workspace / "home")})
    assert (workspace / "src").exists() == (expected != "deny")
    assert done.stdout.strip() == ("8080" if expected == "allow" else "")
    (workspace / "src").mkdir(exist_ok=True)
    assert decisions(workspace, ". ./env.sh; echo \"$PORT\"", {})[0] == expected
    assert decisions(workspace, "source env.sh", {})[0] == "ask"  # found on PATH first
    assert decisions(workspace, "echo ls >> env.sh; . ./env.sh", {})[0] != "allow"
