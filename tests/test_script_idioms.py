"""Idioms of script authors, judged as bash runs them: a function never called, ``return
$n``, names ``grep -l`` passes on, and the shell's own ways to print its variables.

Each label that depends on bash is checked by running the command in a copy first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin",
       "GITHUB_TOKEN": "ghp_" + "a1B2" * 9, "AWS_SECRET_ACCESS_KEY": "wJalr" * 8}


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                   cwd=ws, check=True, capture_output=True)


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "app").write_text("binary\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import os\n")
    (tmp_path / "README.md").write_text("# app\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def _bash(ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          env={**ENV, "HOME": str(ws)})


def _verdict(ws: Path, command: str) -> tuple[str, str]:
    out = check_shell_json(command, ws, ENV)
    return str(out["decision"]), str(out["reason"])


def test_a_function_nothing_calls_is_judged_all_the_same(workspace: Path) -> None:
    """bash runs nothing here (the control); the body is judged anyway, as if called: a
    call the walk does not see would run it. A redefined function's first body likewise
    (here a write, asked)."""
    command = "clean() { rm -rf build; }\ndeclare -f clean\ntype -t clean"
    assert _bash(workspace, command).returncode == 0
    assert (workspace / "build" / "app").exists()
    assert _verdict(workspace, command)[0] == "deny"
    redefined = "log() { echo x >> README.md; }\nlog() { echo \"$*\" >&2; }\nlog checking"
    assert _verdict(workspace, redefined)[0] == "ask"


@pytest.mark.parametrize("command", [
    "f() { rm -rf build; }; \"$x\"",  # a name only known at run time may be f
    "f() { rm -rf build; }; source ./README.md",  # so may code not shown
    "f() { rm -rf build; }; trap f EXIT",
    "f() { rm -rf build; }; declare -fx f; bash -c g",  # a child bash has it
    "f() { rm -rf build; }; g=f; $g",
])
def test_a_function_something_may_call_is_judged(workspace: Path, command: str) -> None:
    assert _verdict(workspace, command)[0] == "deny"


def test_declare_f_prints_and_declare_fx_exports(workspace: Path) -> None:
    """The control: a child bash runs a function ``declare -fx`` exported, and does not
    have one ``declare -f`` only printed."""
    exported = _bash(workspace, "f() { echo ran; }; declare -fx f; bash -c f")
    printed = _bash(workspace, "f() { echo ran; }; declare -f f >/dev/null; bash -c f")
    assert exported.stdout == "ran\n" and printed.returncode == 127


def test_return_takes_a_number_never_evaluated(workspace: Path) -> None:
    """``return $n`` with n holding ``a[$(cmd)]`` fails; nothing runs (control run)."""
    ran = _bash(workspace, "f() { x='a[$(touch pwned)]'; return $x; }; f")
    assert ran.returncode != 0 and not (workspace / "pwned").exists()
    command = ("need() { local f missing=0; for f in \"$@\"; do [[ -e $f ]] || "
               "missing=$((missing + 1)); done; return $missing; }; need README.md LICENSE "
               "&& echo ok || echo \"$? missing\"")
    assert _bash(workspace, command).stdout == "1 missing\n"
    assert _verdict(workspace, command)[0] == "allow"


def test_names_grep_l_passes_on_stay_a_listing(workspace: Path) -> None:
    command = "git ls-files -z '*.py' | xargs -0 grep -l '^import os' | xargs -r wc -l"
    ran = _bash(workspace, command)
    assert "src/app.py" in ran.stdout
    assert _verdict(workspace, command) == ("allow", "reads only inside the workspace")
    assert _verdict(workspace, "cat list | xargs grep -l x | xargs cat")[0] == "ask"


def test_names_with_a_blank_are_cut_by_the_last_consumer(workspace: Path) -> None:
    """``x /etc/passwd``: whole through ``xargs -0``, then cut by the plain ``xargs``
    after ``grep -l``; bash reads the host's file, and the command is asked."""
    (workspace / "x " / "etc").mkdir(parents=True)
    (workspace / "x " / "etc" / "passwd").write_text("root:here\n")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "trap")
    command = "git ls-files -z | xargs -0 grep -l root | xargs cat"
    host = Path("/etc/passwd").read_text().splitlines()[0]
    assert host in _bash(workspace, command).stdout
    assert _verdict(workspace, command)[0] == "ask"


@pytest.mark.parametrize("command", [
    "for v in AWS_SECRET_ACCESS_KEY GITHUB_TOKEN; do printf '%s=%s\\n' \"$v\" "
    "\"${!v:-<unset>}\"; done",
    "v=GITHUB_TOKEN; echo \"${!v#ghp_}\"",
    "declare -p GITHUB_TOKEN", "export -p", "declare", "typeset -p", "set | grep TOKEN",
    "readonly",
])
def test_the_shells_ways_to_print_its_variables_read_credentials(workspace: Path,
                                                                 command: str) -> None:
    ran = _bash(workspace, command)
    assert "a1B2a1B2" in ran.stdout or "wJalr" in ran.stdout or command == "readonly"
    decision, reason = _verdict(workspace, command)
    assert decision == "ask" and ("credentials" in reason or "secret" in reason), reason
    assert check_shell_json(command, workspace, ENV, approval="auto")["decision"] in (
        "ask", "deny")


@pytest.mark.parametrize("command", [
    "declare -f", "declare -F", "declare -n", "declare -p HOME", "export X=1",
    "set -e; echo hi",
    "declare -x | wc -l", "for v in HOME PATH; do echo \"${!v}\"; done",
    "echo \"${!GITHUB*}\"",  # the names only
])
def test_printing_no_secret_value_stays_allowed(workspace: Path, command: str) -> None:
    assert _verdict(workspace, command)[0] == "allow"


@pytest.mark.parametrize(("command", "decision"), [
    ("zip -qr - src | wc -c", "allow"),  # the archive is printed
    ("gzip < README.md | wc -c", "allow"),  # a filter from input to output
    ("zip -qr out.zip src", "ask"), ("gzip README.md", "ask"),  # the controls' writers
    ("zip -m - README.md | wc -c", "deny"),  # -m still deletes what it archived
    ("ssh -F /dev/null -G -o ProxyCommand='nc %h %p' bastion | grep -i proxy", "allow"),
    ("ssh -G bastion", "ask"),  # prints the user's own ~/.ssh/config
    ("coproc UP { tr a-z A-Z; }; echo hi >&\"${UP[1]}\"; exec {UP[1]}>&-; "
     "read -r l <&\"${UP[0]}\"; echo \"$l\"", "allow"),
])
def test_modes_that_print_instead_of_writing(workspace: Path, command: str,
                                             decision: str) -> None:
    """Control: the folder is as it was after each command judged a read."""
    before = sorted(p.name for p in workspace.rglob("*") if ".git" not in p.parts)
    if decision == "allow" and not command.startswith("ssh"):
        assert _bash(workspace, command).returncode == 0
        assert sorted(p.name for p in workspace.rglob("*") if ".git" not in p.parts) == before
    assert _verdict(workspace, command)[0] == decision


@pytest.mark.parametrize(("command", "deletes"), [
    ("dry_run=1\nfor f in build/*; do\n  if (( dry_run )); then echo \"would delete $f\"; "
     "else rm -f -- \"$f\"; fi\ndone", False),
    ("dry_run=0\nfor f in build/*; do\n  if (( dry_run )); then echo \"would delete $f\"; "
     "else rm -f -- \"$f\"; fi\ndone", True),
    ("mode=check; if [ \"$mode\" = check ]; then ls build; else rm -rf build; fi", False),
    ("mode=fix; if [[ $mode != check ]]; then rm -rf build; fi", True),
    ("DRY=true; if $DRY; then echo rm -rf build; else rm -rf build; fi", False),
    ("x=; if [ -n \"$x\" ]; then rm -rf build; fi", False),
    ("x=; if [ -n $x ]; then rm -rf build; fi", True),  # [ -n ] is true
    ("d=1; f() { if (( d )); then echo keep; else rm -rf build; fi; }; d=0; f", True),
    ("d=1; for i in 1 2; do if (( d )); then echo keep; else rm -rf build; fi; d=0; done",
     True),
    ("d=08; if (( d )); then echo keep; else rm -rf build; fi", True),  # 08: no octal
    ("d=1; sh -c 'if (( 1 )); then echo keep; else rm -rf build; fi'", True),  # dash: ((
])
def test_a_branch_known_values_rule_out_is_not_judged(workspace: Path, command: str,
                                                      deletes: bool) -> None:
    """The control: bash deletes build/app exactly when the other branch runs; the
    classifier refuses exactly those."""
    _bash(workspace, command)
    assert (not (workspace / "build" / "app").exists()) == deletes
    assert _verdict(workspace, command)[0] == ("deny" if deletes else "allow")


def test_the_repository_top_is_the_workspace_where_git_says_so(workspace: Path,
                                                               tmp_path: Path) -> None:
    """``cd "$(git rev-parse --show-toplevel)"`` goes where git says (the control); a
    workspace below a repository's top is left for a folder outside it (asked)."""
    command = "cd \"$(git rev-parse --show-toplevel)\" && ls src"
    top = _bash(workspace / "src", "git rev-parse --show-toplevel").stdout.strip()
    assert top == str(workspace)
    assert _verdict(workspace, command) == ("allow", "reads only inside the workspace")
    assert _verdict(workspace, "ROOT=$(git rev-parse --show-toplevel)\ncd \"$ROOT\"\n"
                               "git ls-files | wc -l")[0] == "allow"
    inner = workspace / "src"
    assert _verdict(inner, command)[0] == "ask"  # the top, outside this workspace
    s = "s=$SECONDS; git log --oneline -1; echo \"$((SECONDS - s))s\""  # a copied number
    assert _verdict(workspace, s)[0] == "allow"


@pytest.mark.parametrize("command", [
    "for f in src/*.py; do mv \"$f.new\" \"$f\"; done",  # each match replaced
    "mv README.md src/a*.py",  # the glob names the tracked file it replaces
])
def test_a_file_a_glob_names_is_judged_as_the_files_it_matches(workspace: Path,
                                                                command: str) -> None:
    """The control: bash matches the glob now and replaces the tracked file."""
    (workspace / "src" / "app.py.new").write_text("new\n")
    _bash(workspace, command)
    assert (workspace / "src" / "app.py").read_text() != "import os\n"
    (workspace / "src" / "app.py").write_text("import os\n")
    (workspace / "src" / "app.py.new").unlink(missing_ok=True)
    assert _verdict(workspace, command)[0] == "deny"


@pytest.mark.parametrize(("command", "deletes"), [
    ("target=\"\"\n[ -n \"$target\" ] && rm -rf -- \"$target\"\necho \"target: $target\"",
     False),
    ("target=build; [ -n \"$target\" ] && rm -rf -- \"$target\"", True),
    ("dry=1; [ \"$dry\" = 1 ] || rm -rf build", False),
    ("dry=0; [ \"$dry\" = 1 ] || rm -rf build", True),
    ("n=0; (( n )) && rm -rf build; echo done", False),
    ("n=0; (( n )) && rm -rf build || rm -rf build", True),
    ("DRY=false; $DRY || rm -rf build", True),
    ("DRY=true; $DRY || rm -rf build", False),
    ("DRY=true; $DRY && echo would || rm -rf build", False),  # judged: echo may fail
    ("x=; sh -c '[ -n \"$1\" ] && rm -rf build' _ \"$x\"", False),
])
def test_a_list_known_values_decide_is_judged_as_bash_runs_it(workspace: Path, command: str,
                                                              deletes: bool) -> None:
    """``a && b`` / ``a || b`` whose condition is decided here: the control shows whether
    bash reaches rm; the classifier refuses those that do (and the echo case, where a
    closed output would make echo fail and rm run)."""
    _bash(workspace, command)
    assert (not (workspace / "build" / "app").exists()) == deletes
    judged = "deny" if deletes or "echo would" in command or "sh -c" in command else "allow"
    assert _verdict(workspace, command)[0] == judged


@pytest.mark.parametrize(("command", "decision"), [
    ("OUT_DIR=${OUT_DIR:-build}\nfind \"$OUT_DIR\" -type f\ndu -sh \"$OUT_DIR\"", "allow"),
    ("OUT_DIR=${OUT_DIR:-build}; rm -rf \"$OUT_DIR\"", "deny"),
    ("LOG=\"${LOG-README.md}\"; tail -n 5 -- \"$LOG\"", "allow"),
    ("rc=${NO_SUCH_DIR_HERE:-$HOME}/.bashrc; echo 'alias ls=true' >> \"$rc\"", "deny"),
    ("d=$(dirname src/app.py); pushd \"$d\" > /dev/null; wc -l -- *.py; popd > /dev/null",
     "allow"),
    ("for f in src/app.py README.md; do ( cd \"$(dirname \"$f\")\" && wc -c -- "
     "\"$(basename \"$f\")\" ); done", "allow"),
    ("rm -rf \"$(dirname src/app.py)\"", "deny"),
    ("rsync --list-only -r ./ | head", "allow"), ("rsync -r build", "allow"),
    ("rsync -r build out", "ask"),
])
def test_defaults_and_path_parts_are_known_values(workspace: Path, command: str,
                                                  decision: str) -> None:
    assert _verdict(workspace, command)[0] == decision
