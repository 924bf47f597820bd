"""Options a program takes from its environment, and code hidden in escapes.

``GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=CMD git status`` runs CMD as ``git -c
core.fsmonitor=CMD status`` does; ``PERL5OPT='-Mx;system(..)'`` runs code as ``perl -M``
does; ``TAR_OPTIONS``, ``MAKEFLAGS`` (which make expands: ``$(shell CMD)``) and
``npm_config_script_shell=CMD`` likewise. Each is judged as the options
it becomes (``engine/permissions/env_options.py``). Where the program is installed, the
attack also runs for real with bash on a throwaway git workspace, to show what it destroys.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import decisions


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "Makefile").write_text("all:\n\t@echo built\n")
    subprocess.run(["tar", "-cf", "a.tar", "a.txt"], cwd=tmp_path, check=True)
    git = shutil.which("git")
    assert git is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([git, *args], cwd=tmp_path, check=True)
    return tmp_path


@pytest.mark.parametrize("command", [
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -rf src' "
    "git status",
    "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='rm -rf src'\" git status",
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
    "GIT_CONFIG_VALUE_0='rm -rf src'; git status",
    "PERL5OPT='-Mwarnings;system(\"rm\\x20-rf\\x20src\")' perl -e 1",
    "perl -e 'system(\"rm\\x20-rf\\x20src\")'",
    "python3 -c 'import os; os.system(\"rm\\x20-rf\\x20src\")'",
    "TAR_OPTIONS='--to-command=rm\\ -rf\\ src' tar -xf a.tar",
    "MAKEFLAGS='--eval=$(shell rm -rf src)' make",
])
def test_a_destroying_setting_is_refused(workspace: Path, command: str) -> None:
    decided = decisions(workspace, command, {})
    env = {**os.environ, "SHELL": "/bin/sh"}  # as a login sets it: make's early $(shell) uses it
    subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True, timeout=60,
                   env=env)
    assert not (workspace / "src").exists(), command  # the control: it did destroy src
    assert decided == ("deny", "deny"), command


@pytest.mark.parametrize(("command", "expected"), [
    ("npm_config_script_shell='rm -rf src' npm run build", ("deny", "deny")),
    ("npm run build --script-shell='rm -rf src'", ("deny", "deny")),
    ("LESS='+!rm\\ -rf\\ src' less a.txt", ("deny", "deny")),
    ("LESS=-R less a.txt", ("allow", "allow")), ("TAR_OPTIONS=-v tar -tf a.tar",
                                                  ("allow", "allow")),
    ("MAKEFLAGS=k make", ("ask", "ask")),
    ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=x git log -1",
     ("ask", "ask")),
    ("perl -e \"system('rm\\\\x20-rf\\\\x20src')\"", ("ask", "ask")),  # '..' keeps \\x20
    ("python3 -c 'import os; os.system(r\"rm\\x20-rf\\x20src\")'", ("ask", "ask")),
])
def test_settings_are_judged_as_the_options_they_become(
        workspace: Path, command: str, expected: tuple[str, str]) -> None:
    assert decisions(workspace, command, {}) == expected, command
