"""Reads of someone's own files outside the workspace: only a person may allow them.

A file is someone's when it lies below a home folder (``$HOME``, ``/root``, ``/home/*``) or
its mode (or a folder's on the way) keeps it from other users. That holds for files no list
names (a token in ``~/.config/some-app``), where the list of credential stores alone let
``--approval auto`` print them. Each case also runs for real with bash, to show the command
does print the file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from engine.permissions.approvals import Approver
from engine.permissions.paths import is_private
from engine.permissions.policy import Policy, PolicyContext
from engine.permissions.shell import check_shell_json
from engine.tooling.registry import ToolRegistry
from engine.vocabulary.state import ToolCall
from tests.conftest import ROOT, engine_env
from tests.test_policy import SHELL

TOKEN = "tok-8d1f0c"


@pytest.fixture()
def place(tmp_path: Path) -> dict[str, Path]:
    """A workspace, a home with an app's token in it, and a folder outside both whose key
    file only its owner may read."""
    ws, home, other = tmp_path / "ws", tmp_path / "home", tmp_path / "srv"
    (ws / "src").mkdir(parents=True)
    (home / ".config" / "some-app").mkdir(parents=True)
    (home / ".config" / "some-app" / "token").write_text(TOKEN + "\n")
    (home / "notes.txt").write_text(TOKEN + "\n")
    other.mkdir()
    other.chmod(0o755)
    (other / "key").write_text(TOKEN + "\n")
    (other / "key").chmod(0o600)
    return {"ws": ws, "home": home, "other": other}


def _env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": "/usr/bin:/bin"}


@pytest.mark.parametrize("command", [
    "cat ~/.config/some-app/token", "grep -r tok ~/.config", "cat \"$HOME\"/notes.txt",
    "cd ~ && cat notes.txt", "head -1 ../home/notes.txt", "cat ../srv/key",
    "cat ~/.{config,x}/some-app/token",  # braces first, then each word's tilde
    "cd; cat notes.txt", "cd && cat .config/some-app/token",  # cd alone: home
    "source ~/notes.txt 2>&1",  # what source reads is only known at run time here
    "f=$(cat path.txt); cat \"$f\"",  # a path only known at run time
    "tar -C ~ -cf - notes.txt | tar -xOf -",  # tar -C: the files are the folder's
    "awk 'BEGIN { while ((getline l < (ENVIRON[\"HOME\"] \"/notes.txt\")) > 0) print l }'",
    "perl -ne print ~/notes.txt",  # -n loops over the files named: they are read
    "cpp -P ~/notes.txt",  # a compiler's sources are read
    "tar -cf - -T <(echo ~/notes.txt) | tar -xOf -",  # the names a list gives
    "split -l 1 ~/notes.txt part; cat part*",  # split's input
    "ex -s -c '%p' -c 'q!' ~/notes.txt",  # the file an editor opens
    "vim -es -c 'r ~/notes.txt' -c '%p' -c 'q!' a.txt",  # ..or an Ex command reads
    "env --chdir=\"$HOME\" cat notes.txt", "env --chdir ~ cat notes.txt",  # env -C, long
    "env -C\"$HOME\" cat notes.txt",
])
def test_reading_someones_file_is_for_a_person_only(place: dict[str, Path],
                                                    command: str) -> None:
    ws, env = place["ws"], _env(place["home"])
    (ws / "path.txt").write_text(str(place["home"] / "notes.txt"))
    (ws / "a.txt").write_text("a\n")
    shown = subprocess.run(["bash", "-c", command], cwd=ws, env=env, capture_output=True,
                           text=True, timeout=60).stdout
    assert TOKEN in shown, command  # the control: bash does print it
    asked = check_shell_json(command, ws, env)
    auto = check_shell_json(command, ws, env, approval="auto")
    assert asked["decision"] == "ask", (command, asked)
    assert auto["decision"] == "deny", (command, auto)
    assert "only a person or a policy rule may allow it" in auto["reason"], auto


def test_a_file_a_program_reads_from_the_home_folder_by_itself(place: dict[str, Path]) -> None:
    """``ssh-keygen -F HOST`` reads the account's ``~/.ssh/known_hosts`` though no path is
    written (from the account's home, which a test may not write: no control run here)."""
    ws, env = place["ws"], _env(place["home"])
    assert check_shell_json("ssh-keygen -F example.com", ws, env)["decision"] == "ask"
    got = check_shell_json("ssh-keygen -F example.com", ws, env, approval="auto")
    assert got["decision"] == "deny" and "known_hosts" in got["reason"], got


def test_a_file_everyone_may_read_stays_asked_and_runs_under_auto(
        place: dict[str, Path]) -> None:
    ws, env = place["ws"], _env(place["home"])
    for command in ("cat /etc/passwd", "ls /home", "ls /usr/share"):
        assert check_shell_json(command, ws, env)["decision"] == "ask", command
        assert check_shell_json(command, ws, env, approval="auto")["decision"] == "ask"


def test_what_counts_as_private(place: dict[str, Path]) -> None:
    home = str(place["home"])
    assert is_private(f"{home}/.config/some-app/token", home)
    assert is_private(home, home)  # ls ~: the names of someone's files
    assert is_private("/root/anything", None)
    assert is_private("/home/someone/x", None)
    assert not is_private("/home", None)
    assert is_private(str(place["other"] / "key"), None)  # mode 0600
    assert is_private(str(place["other"] / "key" / "missing"), None)  # what exists of it
    assert not is_private("/etc/passwd", "/")  # HOME=/ does not make everything someone's
    assert not is_private("/etc/passwd", home)


def test_a_mode_is_judged_anew_each_time() -> None:
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))  # not below pytest's 0700 folder
    try:
        folder.chmod(0o755)
        (folder / "key").write_text(TOKEN)
        (folder / "key").chmod(0o600)
        assert is_private(str(folder / "key"), None)
        (folder / "key").chmod(0o644)
        assert not is_private(str(folder / "key"), None)  # never a cached answer
        folder.chmod(0o700)
        assert is_private(str(folder / "key"), None)  # a folder on the way keeps it
    finally:
        shutil.rmtree(folder)


def test_auto_refuses_it_and_a_policy_rule_may_allow_it(place: dict[str, Path]) -> None:
    """--approval auto runs what is asked, and nobody decided this read: refused. A policy
    that allows it (a rule; ``default: allow`` under ``--approval policy``) is someone's
    decision: it runs."""
    ws, env = place["ws"], _env(place["home"])
    calls = [ToolCall("c1", "run_shell", {"command": "cat ~/.config/some-app/token"}),
             ToolCall("c2", "run_shell", {"command": "cat /etc/passwd"})]
    rule = {"rules": [{"decision": "allow", "tool": "run_shell", "command": "cat"}]}
    for mode, data, expected in (("auto", {}, "deny"), ("auto", rule, "allow"),
                                 ("policy", {"default": "allow"}, "allow"),
                                 ("policy", {}, "deny")):
        ctx = PolicyContext(ws, Policy.from_data(data), env)
        got = anyio.run(Approver(mode, ctx).decide_batch, calls, ToolRegistry([SHELL]), set())
        assert got[0].decision == expected, (mode, data, got[0])
        if mode == "auto":  # everyone's file: auto runs it
            assert got[1].decision == "allow", (data, got[1])
        if mode == "auto" and expected == "deny":
            assert "someone's own" in got[0].reason and "some-app/token" in got[0].reason


def test_the_cli_refuses_it_under_auto(place: dict[str, Path]) -> None:
    env = {**engine_env(), "HOME": str(place["home"])}
    out = subprocess.run(
        [sys.executable, "-m", "engine", "policy", "check-shell", "--workspace",
         str(place["ws"]), "--approval", "auto", "--json", "cat ~/notes.txt"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    got = json.loads(out.stdout)
    assert got["decision"] == "deny" and f"{place['home']}/notes.txt" in got["reason"], got
    assert os.path.exists(place["home"] / "notes.txt")
