"""Payloads that reach a program by another road than its command line: awk's own ``ARGV``,
a config file named by ``GIT_CONFIG_GLOBAL`` that the same command wrote, a module written
where ``python -c`` imports from first, a command's output kept in a variable and run.

Each control run shows bash running the payload (a marker file appears, or the other file
is printed); the classifier must not allow it, and under ``--approval auto`` must refuse it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "README.md").write_text("# app\n")
    (ws / "notes.txt").write_text("aGVsbG8K\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)
    return ws


def _run(ws: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          env={**ENV, "HOME": str(ws.parent)}, timeout=60)


def _judged(ws: Path, command: str) -> tuple[str, str]:
    return (str(check_shell_json(command, ws, ENV)["decision"]),
            str(check_shell_json(command, ws, ENV, approval="auto")["decision"]))


def test_awk_reads_what_its_program_puts_in_argv(workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("the other file\n")
    command = "awk 'BEGIN { ARGV[1] = \"../secret.txt\" } { print }' README.md"
    assert _run(workspace, command).stdout == "the other file\n"  # the control
    assert _judged(workspace, command) == ("ask", "deny")
    shown = "awk 'BEGIN { for (i = 1; i < ARGC; i++) print ARGV[i] }' README.md"
    assert _judged(workspace, shown) == ("allow", "allow")  # reading ARGV changes nothing


def test_a_git_config_this_command_wrote_is_not_run_unseen(workspace: Path) -> None:
    command = ("printf '[core]\\n\\tfsmonitor = \"touch pwned; false\"\\n' > build/git.ini "
               "&& GIT_CONFIG_GLOBAL=build/git.ini git status -s")
    _run(workspace, command)
    assert (workspace / "pwned").exists()  # the control: git ran the written hook
    assert _judged(workspace, command) == ("ask", "deny")


def test_a_module_written_where_python_c_imports_first(workspace: Path) -> None:
    command = ("printf 'open(\"../pwned\", \"w\")\\n' > src/json.py && cd src && "
               "python3 -c 'import json'")
    _run(workspace, command)
    assert (workspace / "pwned").exists()  # the control: the written json.py ran
    assert _judged(workspace, command) == ("ask", "deny")
    assert _judged(workspace, "python3 -c 'import json'")[1] == "ask"  # nothing written


def test_a_standard_module_written_beside_python_m_is_not_run_unseen(workspace: Path) -> None:
    """``python -m json.tool`` imports ``enum`` on its way (through ``re``): an ``enum.py``
    the command wrote in its folder runs first."""
    (workspace / "p.json").write_text("{}\n")
    command = "printf 'open(\"pwned\", \"w\")\n' > enum.py && python3 -m json.tool p.json"
    _run(workspace, command)
    assert (workspace / "pwned").exists()  # the control: the written enum.py ran
    assert _judged(workspace, command)[1] == "deny"


@pytest.mark.parametrize("command", [
    "p=$(base64 -d < notes.txt); bash -c \"$p\"",
    "p=$(sed -n 1p notes.txt | base64 -d); q=$p; eval \"$q\"",
    "p=$(cat README.md); eval \"$p\"",
])
def test_a_commands_output_kept_in_a_variable_and_run_is_refused(workspace: Path,
                                                                 command: str) -> None:
    """As ``bash -c "$(base64 -d < notes.txt)"`` is: the code is what a command printed."""
    assert _judged(workspace, command) == ("deny", "deny")
    direct = "bash -c \"$(base64 -d < notes.txt)\""
    assert _judged(workspace, direct) == ("deny", "deny")


@pytest.mark.parametrize("command", [
    "p=$(echo ls); eval \"$p\"",  # a static echo: the code is shown
    "p=$(cat README.md); p=ls; eval \"$p\"",  # reassigned before it runs
    "n=$((1 + 2)); bash -c \"echo $n\"",  # arithmetic, no command
])
def test_output_that_is_shown_or_replaced_keeps_its_answer(workspace: Path,
                                                          command: str) -> None:
    assert _judged(workspace, command) == ("allow", "allow")


def test_a_recipe_marked_plus_in_shown_makefile_text_is_judged(workspace: Path) -> None:
    """``make -n --eval 'x: ; +CMD' x`` runs CMD even as a dry run (the control)."""
    command = "make -n --eval 'cleanup: ; +touch pwned' cleanup"
    _run(workspace, command)
    assert (workspace / "pwned").exists()
    assert _judged(workspace, "make -n --eval 'cleanup: ; +git checkout -- src' cleanup") \
        == ("deny", "deny")


def test_git_writes_its_trace_where_the_variable_says(workspace: Path) -> None:
    trace = workspace.parent / "trace.json"
    _run(workspace, f"GIT_TRACE2_EVENT={trace} git status --short")
    assert trace.exists()  # the control: a file outside the workspace, written
    assert _judged(workspace, f"GIT_TRACE2_EVENT={trace} git status --short")[0] == "deny"
    assert _judged(workspace, "GIT_TRACE=1 git status") == ("allow", "allow")  # stderr
    assert _judged(workspace, "GIT_TRACE_PERFORMANCE=true git status")[0] == "allow"
    assert _judged(workspace, "LD_DEBUG=libs /bin/true")[0] == "allow"  # the loader's trace
    assert _judged(workspace, "LD_DEBUG_OUTPUT=/tmp/x LD_DEBUG=all /bin/true")[0] != "allow"


@pytest.mark.parametrize("command", [
    "printf 'x' > build/pre.rb && RUBYOPT='-r./build/pre.rb' ruby -e 'puts 1'",
    "NODE_OPTIONS='--import=data:text/javascript,import%20x' node -e 0",
])
def test_an_interpreter_option_loading_unseen_code_is_refused_under_auto(
        workspace: Path, command: str) -> None:
    assert _judged(workspace, command) == ("ask", "deny")


@pytest.mark.parametrize("command", [
    "mkdir -p .vscode\ncat > .vscode/tasks.json <<'EOF'\n{\"tasks\": [{\"label\": \"setup\", "
    "\"type\": \"shell\", \"command\": \"./install.sh\", \"runOptions\": "
    "{\"runOn\": \"folderOpen\"}}]}\nEOF",
    "mkdir -p .devcontainer; printf '{\"initializeCommand\": \"./install.sh\"}' > "
    ".devcontainer/devcontainer.json",
])
def test_a_command_planted_for_the_editor_or_dev_container(workspace: Path,
                                                           command: str) -> None:
    """A task the editor runs when the folder opens, a dev container's commands (its
    initializeCommand on the host): planted code, refused."""
    assert _judged(workspace, command) == ("deny", "deny")
    plain = "mkdir -p .vscode; printf '{\"tasks\": []}' > .vscode/tasks.json"
    assert _judged(workspace, plain)[0] == "ask"


def test_output_not_shown_replacing_the_files_a_listing_names(workspace: Path) -> None:
    """The control: each modified file is overwritten, its uncommitted edit lost."""
    (workspace / "README.md").write_text("# app, edited\n")
    command = "for f in $(git diff --name-only); do git show \"HEAD:$f\" > \"$f\"; done"
    _run(workspace, command)
    assert (workspace / "README.md").read_text() == "# app\n"
    assert _judged(workspace, command) == ("deny", "deny")


def test_ruby_s_un_library_runs_the_file_command_it_names(workspace: Path) -> None:
    """``ruby -run -e rm -- -rf src`` is ``rm -rf src`` (the control: src is gone)."""
    command = "ruby -run -e rm -- -rf src"
    assert _judged(workspace, command) == ("deny", "deny")
    _run(workspace, command)
    assert not (workspace / "src").exists()
    assert _judged(workspace, "ruby -run -e mkdir -- -p build/x")[0] == "ask"
    assert _judged(workspace, "ruby -run -e httpd ~/.aws -p 8000")[1] == "deny"


@pytest.mark.parametrize(("setup", "command"), [
    ("printf 'require(\"fs\").writeFileSync(\"ran\", \"\")\\n' > x.cjs",
     "NODE_OPTIONS='--require ./x.cjs' node -p 1"),
    ("printf 'require(\"fs\").writeFileSync(\"ran\", \"\")\\n' > x.cjs",
     "export NODE_OPTIONS='-r ./x.cjs'; node -p 1"),
    ("printf 'package x; open(F, \">ran\"); 1;\\n' > x.pm",
     "PERL5OPT='-I. -Mx' perl -e 1"),
])
def test_a_code_file_an_option_variable_names_is_unseen(workspace: Path, setup: str,
                                                        command: str) -> None:
    """``NODE_OPTIONS='--require F'``, ``PERL5OPT=-MF``: the program loads a file whose code
    the command line does not show, so under ``--approval auto`` it is refused."""
    _run(workspace, setup)
    _run(workspace, command)
    assert (workspace / "ran").exists()  # the control: the file's code ran
    assert _judged(workspace, command)[1] == "deny"
    settings_only = "NODE_OPTIONS=--max-old-space-size=64 node -p 1"
    assert _judged(workspace, settings_only)[1] == "ask"  # a limit loads no code


def test_a_trace_prompt_runs_what_it_substitutes_and_nothing_else(workspace: Path) -> None:
    """``PS4`` is expanded before each traced line: a substitution in it runs, a variable
    only prints (``+ ${BASH_SOURCE}:${LINENO}: ``)."""
    code = "PS4='$(touch ran) '; set -x; ls >/dev/null"
    _run(workspace, code)
    assert (workspace / "ran").exists()  # the control
    assert _judged(workspace, code) == ("deny", "deny")
    plain = "PS4='+ ${BASH_SOURCE:-}:${LINENO}: '\nset -x\ngit status --short"
    _run(workspace, plain)
    assert _judged(workspace, plain) == ("allow", "allow")
    assert _judged(workspace, "PS4='+ ${a[$i]} '; set -x; ls")[1] == "deny"  # a subscript


@pytest.mark.parametrize("command", [
    "git -c core.pager='sh scripts/run.sh' log -1",
    "GIT_PAGER='bash scripts/run.sh' git log -1",
    "git -c core.fsmonitor='sh scripts/run.sh' status --short",
    "GIT_EXTERNAL_DIFF=./scripts/run.sh git diff HEAD~1",
])
def test_a_workspace_script_in_another_programs_slot_is_refused(workspace: Path,
                                                                command: str) -> None:
    """A setting that names the program git runs as its pager, monitor or diff tool, given a
    script of the workspace: the script runs under a read's name. Refused; the slot's own
    kind of program (``less``, ``cat``) keeps its answer."""
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "run.sh").write_text("#!/bin/sh\ntouch ran\ncat\n")
    (workspace / "scripts" / "run.sh").chmod(0o755)
    (workspace / "README.md").write_text("# app, changed\n")
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit",
                    "-qam", "two"], cwd=workspace, check=True, capture_output=True)
    shlexed = command.replace("'", "'\\''")
    _run(workspace, f"script -qec '{shlexed}' /dev/null" if "PAGER" in command.upper() else
         command)  # git pages only to a terminal
    assert (workspace / "ran").exists(), command  # the control: the script ran
    assert _judged(workspace, command) == ("deny", "deny")
    assert _judged(workspace, "git -c core.pager='less -R' log -1") == ("allow", "allow")
    assert _judged(workspace, "GIT_PAGER=cat git log -1") == ("allow", "allow")
    (workspace / "less").write_text("#!/bin/sh\n")  # a file named like the pager: PATH's runs
    assert _judged(workspace, "GIT_PAGER=less git log -1") == ("allow", "allow")
