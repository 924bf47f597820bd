"""Git's global configuration inside the sandbox: a filtered copy, not the user's files.

``~/.gitconfig`` holds the identity a commit needs and, often, tokens: a
``url."https://x-token:SECRET@host/".insteadOf``, an ``http.extraHeader``, an alias that
calls an API, settings in a file it includes. Each test reads them from a real run (``python3
-c`` payloads run under ``--approval auto``) and, as control, with the sandbox off.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.sandbox import confinement, usergit
from tests.conftest import ROOT, engine_env
from tests.test_sandbox_home import OWNER, _needs_bwrap, _outputs, _run

SECRET = "ghp_" + uuid.uuid4().hex
HEADER = "bearer-" + uuid.uuid4().hex
INCLUDED = "included-" + uuid.uuid4().hex
__all__ = ["_needs_bwrap"]  # its check (bubblewrap works) runs before each test here too


@pytest.fixture
def home() -> Iterator[Path]:
    """A home outside ``/tmp`` whose git configuration holds an identity, an LFS filter, a
    global ignore file, and tokens in four places (one in an included file)."""
    path = Path(tempfile.mkdtemp(prefix="turnstile-home-", dir="/var/tmp"))
    (path / ".gitconfig").write_text(
        f"[user]\n\tname = {OWNER}\n\temail = pat@example.com\n"
        f'[url "https://x-token:{SECRET}@github.com/"]\n\tinsteadOf = https://github.com/\n'
        f"[http]\n\textraHeader = Authorization: {HEADER}\n"
        f"[alias]\n\tdeploy = !curl -H 'token: {SECRET}' https://ci.example.com\n"
        '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n'
        "[core]\n\texcludesFile = ~/.gitignore_global\n"
        "[include]\n\tpath = .gitconfig.local\n")
    (path / ".gitconfig.local").write_text(
        f"[user]\n\temail = pat@work.example\n[credential]\n\thelper = store {INCLUDED}\n")
    (path / ".gitignore_global").write_text("*.log\n")
    (path / "proj").mkdir()
    subprocess.run(["git", "init", "-q", str(path / "proj")], check=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _file(*parts: str, out: str) -> str:
    """A payload printing a file below ``$HOME`` (its name built at run time)."""
    names = ", ".join(repr(p) for p in parts)
    code = (f"import os; p = os.path.join(os.environ['HOME'], {names})\n"
            "try:\n    print(open(p).read())\nexcept OSError:\n    print('HIDDEN')")
    return f"python3 -c {shlex.quote(code)} > {out}"


PAYLOADS = [
    _file(".gitconfig", out="config.txt"),
    _file(".gitconfig.local", out="local.txt"),
    "git config --global --list > listed.txt",
    "git config user.name > name.txt; git config user.email > email.txt",
    "git config filter.lfs.clean > lfs.txt",
    "touch junk.log kept.txt; git status --porcelain > status.txt",
]


def test_tokens_in_git_configuration_are_left_out_and_the_identity_kept(
        tmp_path: Path, home: Path) -> None:
    proc, _ = _run(tmp_path, home, PAYLOADS)
    assert "sandboxed" in proc.stdout
    seen = _outputs(home / "proj")
    everything = "\n".join(seen.values())
    for secret in (SECRET, HEADER, INCLUDED):
        assert secret not in everything
    assert "insteadof" not in seen["listed"].lower() and "extraheader" not in seen["listed"]
    assert seen["local"] == "HIDDEN"  # the included file: followed, not shown
    assert seen["name"] == OWNER
    assert seen["email"] == "pat@work.example"  # the include still decides, as outside
    assert seen["lfs"] == "git-lfs clean -- %f"
    assert "?? kept.txt" in seen["status"].splitlines()
    assert "junk.log" not in seen["status"]  # the global ignore file is read
    for out in (home / "proj").glob("*.txt"):
        out.unlink()
    _run(tmp_path, home, PAYLOADS, policy="sandbox: {mode: off}\n")  # the control
    seen = _outputs(home / "proj")
    assert SECRET in seen["config"] and HEADER in seen["listed"] and INCLUDED in seen["local"]


def test_a_global_fsmonitor_does_not_run_inside(tmp_path: Path, home: Path) -> None:
    """``core.fsmonitor`` runs a program on every ``git status``: left out of the copy. The
    program lies where commands can see and run it, so only the copy stops it."""
    hook = Path(tempfile.mkdtemp(prefix="turnstile-hook-", dir="/var/tmp")) / "monitor.sh"
    try:
        hook.write_text("#!/bin/sh\necho ran >> \"$PWD/monitor-ran.txt\"\n")
        hook.chmod(0o755)
        with (home / ".gitconfig").open("a") as f:
            f.write(f"[core]\n\tfsmonitor = {hook}\n")
        commands = ["git status --porcelain > /dev/null; echo done > status.txt"]
        _run(tmp_path, home, commands)
        assert _outputs(home / "proj")["status"] == "done"
        assert not (home / "proj" / "monitor-ran.txt").exists()
        _run(tmp_path, home, commands, policy="sandbox: {mode: off}\n")
        assert (home / "proj" / "monitor-ran.txt").exists()  # the control: git ran it
    finally:
        shutil.rmtree(hook.parent, ignore_errors=True)


def test_an_xdg_configuration_is_flattened_into_the_copy_and_masked(
        tmp_path: Path, home: Path) -> None:
    xdg = home / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text(f"[user]\n\tname = Xdg Person\n[http]\n\t"
                                        f"extraHeader = {HEADER}\n")
    (home / ".gitconfig").unlink()
    (home / ".gitconfig.local").unlink()
    commands = [_file("xdg", "git", "config", out="xdg.txt"),
                "git config user.name > name.txt"]
    _run(tmp_path, home, commands, more_env={"XDG_CONFIG_HOME": str(xdg)})
    seen = _outputs(home / "proj")
    assert HEADER not in seen["xdg"] and seen["name"] == "Xdg Person"


def test_without_git_to_make_the_copy_the_originals_are_masked(home: Path) -> None:
    """No copy can be made (git is not on PATH): nothing unfiltered is shown either."""
    empty = home / "bin"
    empty.mkdir()
    (empty / "cat").symlink_to(shutil.which("cat") or "/bin/cat")
    env = {"HOME": str(home), "PATH": str(empty)}
    jail = confinement(None, home / "proj", env=env)
    assert str(home / ".gitconfig") in jail.hidden and not jail.files
    out = subprocess.run(jail.command(["cat", str(home / ".gitconfig")], home / "proj", False),
                         env=env, capture_output=True, text=True, timeout=60)
    assert SECRET not in out.stdout and OWNER not in out.stdout


def test_sandbox_check_names_the_settings_left_out_not_their_values(home: Path) -> None:
    env = engine_env({"HOME": str(home)})
    text = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60).stdout
    assert "without: url.*.insteadof, http.extraheader, alias.deploy" in text, text
    out = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60).stdout
    assert "credential.helper" in json.loads(out)["home"]["git_settings_left_out"]
    assert SECRET not in text + out and INCLUDED not in text + out


def test_the_copy_keeps_listed_sections_only() -> None:
    items = [("user.name", "A"), ("url.https://t@h/.insteadof", "x"), ("core.fsmonitor", "m"),
             ("core.autocrlf", "input"), ("newtool.token", "s"), ("lfs.url", "https://t@h"),
             ("commit.gpgsign", None), ('diff.py.textconv', 'cat "$1"'),
             (f"lfs.https://{SECRET}@git.example.com/.access", "basic"),
             ("core.editor", f"vim -c 'let t=\"{SECRET}\"'")]
    copy = usergit.render(items)
    assert [k for k, _ in copy.items] == ["user.name", "core.autocrlf", "commit.gpgsign",
                                          "diff.py.textconv"]
    assert copy.dropped == ("url.*.insteadof", "core.fsmonitor", "newtool.token", "lfs.url",
                            "lfs.*.access", "core.editor")
    assert SECRET not in copy.text + "".join(copy.dropped)
    file = Path(usergit.written(copy))
    listed = subprocess.run(["git", "config", "--file", str(file), "--list"],
                            capture_output=True, text=True, check=True).stdout
    assert listed.splitlines() == ["user.name=A", "core.autocrlf=input", "commit.gpgsign",
                                   'diff.py.textconv=cat "$1"']
    assert os.stat(file).st_mode & 0o222 == 0


def test_the_file_git_config_global_names_is_replaced_by_the_copy(tmp_path: Path,
                                                                  home: Path) -> None:
    """``GIT_CONFIG_GLOBAL`` makes git read another file instead: the copy is bound there,
    outside any home too."""
    folder = Path(tempfile.mkdtemp(prefix="turnstile-cfg-", dir="/var/tmp"))
    try:
        (folder / "gitconfig").write_text(
            f"[user]\n\tname = Elsewhere\n[http]\n\textraHeader = {HEADER}\n")
        commands = [_file(str(folder / "gitconfig"), out="global.txt"),
                    "git config --global user.name > name.txt"]
        more = {"GIT_CONFIG_GLOBAL": str(folder / "gitconfig")}
        _run(tmp_path, home, commands, more_env=more)
        seen = _outputs(home / "proj")
        assert HEADER not in seen["global"] and seen["name"] == "Elsewhere"
        _run(tmp_path, home, commands, policy="sandbox: {mode: off}\n", more_env=more)
        assert HEADER in _outputs(home / "proj")["global"]  # the control
    finally:
        shutil.rmtree(folder, ignore_errors=True)
