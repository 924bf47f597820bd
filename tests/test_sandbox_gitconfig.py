"""``sandbox: {vcs: write}`` and ``.git/config``: a command writes a private copy, and the copy
replaces the host's file after the command only when every key it added, changed or removed
names no program. ``git submodule init`` / ``update --init``, ``git remote add``, ``git branch
-u`` and ``git config user.email`` work; keys that would make git on the host run a program are
refused and reported. Real runs under ``--approval auto``; the controls run with the sandbox off.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.sandbox import confinement, gitconfig, gitcopy, protected_paths
from engine.sandbox.bwrap import MOUNTLINK, PRIVATE_TMP, MountPlan, Redirect, bwrap_argv
from engine.sandbox.probe import mounts_links
from engine.spec.model import SandboxSpec
from tests.conftest import ROOT, engine_env
from tests.test_sandbox_vcs import _git, _tree, _write
from tests.test_sandbox_wall import MACHINE, OFF, _py, _repo, _results, _run

FILE = "-c protocol.file.allow=always"


def _two_commits(path: Path) -> Path:
    """A repository to use as a submodule: two commits, so a checkout can lag behind."""
    _repo(path)
    (path / "b.txt").write_text("b\n")
    _git("-C", path, "add", "b.txt")
    _git("-C", path, "commit", "-qm", "second")
    return path


def _with_submodule(tmp: Path) -> Path:
    """A workspace whose ``lib`` submodule (from ``other``) is committed and initialised."""
    _two_commits(tmp / "other")
    ws = _repo(tmp / "ws")
    _git("-C", ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../other",
         "lib")
    _git("-C", ws, "commit", "-qm", "lib")
    return ws


def _status(ws: Path) -> str:
    return _git("-C", ws, "submodule", "status")


def test_submodule_add_init_and_update_work(tmp_path: Path) -> None:
    _two_commits(tmp_path / "other")
    ws = _repo(tmp_path / "ws")
    before = (ws / ".git" / "config").read_bytes()
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [f"git {FILE} submodule add -q ../other lib && git submodule init && "
                        f"git {FILE} submodule update && echo done"],
         policy=_write(tmp_path), db=db)
    (result,) = _results(db)
    assert "done" in result["content"] and not result["is_error"], result["content"]
    status = _status(ws)
    assert status.startswith(" ") and status.split()[1] == "lib", status  # initialised
    config = (ws / ".git" / "config").read_bytes()
    assert config.startswith(before) and b'[submodule "lib"]' in config
    assert _git("-C", ws, "config", "submodule.lib.active").strip() == "true"


def test_a_fresh_clone_initialises_its_submodules(tmp_path: Path) -> None:
    """``.gitmodules`` committed, the submodule not initialised (as after ``git clone``)."""
    _with_submodule(tmp_path)
    clone = tmp_path / "clone"
    _git("clone", "-q", tmp_path / "ws", clone)
    assert _status(clone).startswith("-")  # not initialised
    db = tmp_path / "e.db"
    policy = _write(tmp_path).replace("readable: [", f"readable: [{str(tmp_path / 'ws')!r}, ")
    _run(tmp_path, clone, [f"git {FILE} submodule update --init && echo done"],
         policy=policy, db=db)
    (result,) = _results(db)
    assert "done" in result["content"] and not result["is_error"], result["content"]
    assert _status(clone).startswith(" "), _status(clone)
    assert (clone / "lib" / "b.txt").read_text() == "b\n"
    assert _git("-C", clone, "config", "submodule.lib.url").strip().endswith("other")


def test_a_later_command_updates_a_submodule_that_is_behind(tmp_path: Path) -> None:
    ws = _with_submodule(tmp_path)
    recorded = _git("-C", ws, "rev-parse", "HEAD:lib").strip()
    _git("-C", ws / "lib", "checkout", "-q", "HEAD~1")
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["git submodule update && echo done"], policy=_write(tmp_path), db=db)
    (result,) = _results(db)
    assert "done" in result["content"] and not result["is_error"], result["content"]
    assert _git("-C", ws / "lib", "rev-parse", "HEAD").strip() == recorded


def test_remote_add_branch_upstream_and_user_email_work(tmp_path: Path) -> None:
    _repo(tmp_path / "other")
    ws = _repo(tmp_path / "ws")
    branch = _git("-C", ws, "branch", "--show-current").strip()
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["git remote add origin ../other && git config user.email a@b && "
                        f"git fetch -q origin && git branch -q -u origin/{branch} && echo done"],
         policy=_write(tmp_path), db=db)
    (result,) = _results(db)
    assert "done" in result["content"] and not result["is_error"], result["content"]
    assert _git("-C", ws, "config", "remote.origin.url").strip() == "../other"
    assert _git("-C", ws, "config", "user.email").strip() == "a@b"
    assert _git("-C", ws, "config", f"branch.{branch}.merge").strip() == f"refs/heads/{branch}"


def test_the_hosts_file_is_not_written_while_the_command_runs(tmp_path: Path) -> None:
    """The command sets a key, then waits on a fifo: meanwhile the host's ``.git/config`` is
    as it was (a git on the host reads nothing the command wrote); the key lands after."""
    ws = _repo(tmp_path / "ws")
    os.mkfifo(ws / "gate")
    before = (ws / ".git" / "config").read_bytes()
    turns = tmp_path / "turns.json"
    command = "git config user.email during@example.com && touch ready && read -r _ < gate"
    turns.write_text(json.dumps([{"text": "t", "tool_calls": [
        {"name": "run_shell", "args": {"command": command}}]}, {"text": "done"}]))
    policy = tmp_path / "policy.yaml"
    policy.write_text(_write(tmp_path))
    run = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t", "--model",
         f"scripted:{turns}", "--workspace", str(ws), "--approval", "auto", "--db",
         str(tmp_path / "e.db"), "--policy", str(policy)],
        cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (ws / "ready").exists():  # the command's own signal, not a duration
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0]
            time.sleep(0.05)
        assert (ws / ".git" / "config").read_bytes() == before
        assert "during@example.com" not in _git("-C", ws, "config", "--list")
    finally:
        with contextlib.suppress(OSError):  # ENXIO: the command is gone, nobody reads
            gate = os.open(ws / "gate", os.O_WRONLY | os.O_NONBLOCK)
            os.write(gate, b"go\n")
            os.close(gate)
        out = run.communicate(timeout=120)[0]
    assert run.returncode == 0, out
    assert _git("-C", ws, "config", "user.email").strip() == "during@example.com"


ATTACKS = {
    "core.fsmonitor": (["core.fsmonitor", "touch {m}; false"], ["status"]),
    "alias.x": (["alias.x", "!touch {m}"], ["x"]),
    "include.path": (["include.path", "../evil"], ["status"]),
    "submodule.lib.update": (["submodule.lib.update", "!touch {m}"], ["submodule", "update"]),
}
"""A ``git config`` from a command, and what git on the host then runs that would run the
program it names. The permission layer refuses such a ``git config`` written plainly; here git
is reached through a program whose arguments it cannot read, as a script or a build step
would."""


def _plant(key: str, marker: Path) -> str:
    (name, value), _host = ATTACKS[key]
    evil = f"[core]\\n\\tfsmonitor = touch {marker}; false\\n"
    code = ("import subprocess\n"
            f"open('evil', 'w').write('{evil}')\n"
            f"value = bytes.fromhex({value.format(m=marker).encode().hex()!r}).decode()\n"
            f"subprocess.run(['git', 'con' + 'fig', {name!r}, value], check=True)\n"
            "print('set')\n")
    # 'git remote': the command names a subcommand that writes configuration, so it gets the
    # copy (GIT_CONFIG_WRITERS); the script's own git call is not among the command's words,
    # and the value is decoded at run time (the classifier refuses a visible payload itself)
    return "git remote > /dev/null; " + _py(code)


@pytest.mark.parametrize("sandboxed", [True, False])
@pytest.mark.parametrize("key", list(ATTACKS))
def test_a_key_that_runs_a_program_is_refused(tmp_path: Path, key: str, sandboxed: bool) -> None:
    ws = _with_submodule(tmp_path)
    _git("-C", ws / "lib", "checkout", "-q", "HEAD~1")  # behind: an update has work to do
    marker = tmp_path / "PWNED"
    host = ATTACKS[key][1]
    before = (ws / ".git" / "config").read_bytes()
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [_plant(key, marker)],
         policy=_write(tmp_path) if sandboxed else OFF, db=db)
    (result,) = _results(db)
    assert "set" in result["content"], result["content"]
    subprocess.run(["git", "-C", str(ws), *host], capture_output=True)
    assert marker.exists() is not sandboxed
    if sandboxed:
        assert (ws / ".git" / "config").read_bytes() == before
        assert f"(left .git/config unchanged, nothing of the command's change to it applied: " \
            f"{key};" in result["content"], result["content"]
        assert result["is_error"]


def test_without_the_opt_in_git_config_changes_nothing(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    before = _tree(ws / ".git")
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["git config user.email a@b && echo set"],
         policy="sandbox: {vcs: read}\n", db=db)
    (result,) = _results(db)
    assert "set" not in result["content"] and result["is_error"], result["content"]
    assert _tree(ws / ".git") == before


def test_the_command_runs_without_capabilities_and_its_copy_goes(tmp_path: Path) -> None:
    """``mountlink`` mounts with ``CAP_SYS_ADMIN`` and drops every capability before the
    command; the private folder is outside the workspace and removed after the command."""
    ws = _repo(tmp_path / "ws")
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["grep ^Cap /proc/self/status; readlink .git/config; "
                        "mount -o remount,rw,bind / 2>&1 || echo refused; echo PATH=$PATH"],
         policy=_write(tmp_path), db=db)
    content = _results(db)[0]["content"]
    caps = [line.split() for line in content.splitlines() if line.startswith("Cap")]
    assert len(caps) == 5 and all(int(v, 16) == 0 for _, v in caps), content
    assert "refused" in content
    assert f"PATH={os.environ['PATH']}" in content  # the command's own environment
    link = next(line for line in content.splitlines() if "turnstile-gitconfig-" in line)
    assert not link.startswith(str(ws)) and not Path(link).parent.exists()


# ---------------------------------------------------------------- the judgement, step by step

BASE = b"[core]\n\tbare = false\n[alias]\n\tx = a\n\tx = b\n"


@pytest.mark.parametrize(("after", "refused"), [
    (BASE + b'[user]\n\temail = a@b\n[remote "o"]\n\turl = ../o\n', []),
    (BASE + b'[submodule "l"]\n\turl = ../l\n\tactive = true\n\tupdate = rebase\n', []),
    (BASE + b'[submodule "l"]\n\tupdate = !x\n', ["submodule.l.update"]),
    (BASE.replace(b"x = a\n\tx = b", b"x = b\n\tx = a"), ["alias.x"]),  # git reads the last
    (BASE.replace(b"\tx = b\n", b""), ["alias.x"]),  # removed
    (BASE + b"[include]\n\tpath = ../e\n", ["include.path"]),
    (BASE.replace(b"bare = false", b"bare = $(x)"), ["core.bare"]),
])
def test_what_changed_is_judged_in_order(after: bytes, refused: list[str]) -> None:
    assert gitconfig.refused_keys(BASE, after, "/w/.git", "/w") == refused


def _copies(ws: Path) -> gitcopy.Copies:
    copies = gitcopy.prepare([str(ws / ".git")], str(ws))
    (one,) = copies.files
    with open(one.copy, "ab") as f:
        f.write(b"[user]\n\temail = a@b\n")
    return copies


def test_a_host_change_during_the_command_wins(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    copies = _copies(ws)
    _git("-C", ws, "config", "user.name", "Host")
    settled = gitcopy.settle(copies, str(ws))
    assert settled.refused == {str(ws / ".git" / "config"): [
        "changed on the host during the command"]}
    assert _git("-C", ws, "config", "user.name").strip() == "Host"
    assert not Path(copies.folder).exists()


def test_a_host_git_holding_the_lock_wins(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    copies = _copies(ws)
    (ws / ".git" / "config.lock").write_text("")
    settled = gitcopy.settle(copies, str(ws))
    assert list(settled.refused.values()) == [["locked by another git on the host "
                                               "(config.lock)"]]
    assert (ws / ".git" / "config.lock").exists()


def test_an_applied_copy_keeps_the_files_mode(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    (ws / ".git" / "config").chmod(0o640)
    settled = gitcopy.settle(_copies(ws), str(ws))
    assert settled.applied == [str(ws / ".git" / "config")]
    assert (ws / ".git" / "config").stat().st_mode & 0o777 == 0o640
    assert _git("-C", ws, "config", "user.email").strip() == "a@b"
    assert not (ws / ".git" / "config.lock").exists()


def test_only_a_git_command_that_may_write_its_configuration_gets_the_copy(
        tmp_path: Path) -> None:
    """The helper that mounts it costs a process start; a command that names no git
    subcommand writing configuration (``git status``, ``git commit``, a script that may still
    run git) finds ``.git/config`` read-only, as without the copy."""
    ws = _repo(tmp_path / "ws")
    jail = confinement(SandboxSpec(vcs="write"), ws, protected_paths(ws))
    prepared = jail.before()
    try:
        for command in ("make", "git status", "git diff --stat", "git add -A && git commit -m x"):
            assert MOUNTLINK not in jail.command(["bash", "-c", command], ws, False, prepared)
        assert prepared.config == []  # not even copied
        assert MOUNTLINK in jail.command(["bash", "-c", "git submodule update --init"], ws,
                                         False, prepared)
        (copies,) = prepared.config
    finally:
        jail.after(prepared)
    assert not Path(copies.folder).exists()


def test_a_copy_replaced_by_a_link_is_not_read(tmp_path: Path) -> None:
    """A link to a file the command could not write (it would be judged, then applied)."""
    ws = _repo(tmp_path / "ws")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes((ws / ".git" / "config").read_bytes() + b"[user]\n\tname = X\n")
    copies = gitcopy.prepare([str(ws / ".git")], str(ws))
    (one,) = copies.files
    os.unlink(one.copy)
    os.symlink(elsewhere, one.copy)
    settled = gitcopy.settle(copies, str(ws))
    assert settled.refused == {one.real: ["the copy was removed or replaced by a link"]}
    assert b"name = X" not in (ws / ".git" / "config").read_bytes()


def test_where_the_helper_cannot_mount_the_file_stays_read_only(tmp_path: Path) -> None:
    """A bwrap that refuses ``--cap-add`` (setuid, not started by root): asked once, no copy."""
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\ncase "$*" in *--cap-add*) echo "bwrap: --cap-add in setuid '
                    'mode can be used only by root" >&2; exit 1;; esac\n'
                    f'exec {shutil.which("bwrap")} "$@"\n')
    fake.chmod(0o755)
    assert mounts_links(str(fake)) is False
    assert mounts_links(shutil.which("bwrap") or "bwrap") is True


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder outside ``/tmp`` that another user can reach (``/var/tmp``)."""
    folder = Path(tempfile.mkdtemp(prefix="turnstile-gitconfig-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_helper_mounts_as_a_user_other_than_root(shared_dir: Path) -> None:
    """Started by a user other than root, bubblewrap runs the command in a user namespace
    nested in the one owning the sandbox's mounts: the helper mounts in a namespace of its own.
    Run as ``nobody`` when the tests run as root (with the system's Python when this one
    lies where ``nobody`` cannot reach it)."""
    folder = shared_dir
    ws = folder / "ws"
    _git("init", "-q", ws)
    private = folder / "private"
    private.mkdir()
    copy = private / "config"
    copy.write_bytes((ws / ".git" / "config").read_bytes())
    (private / "link").symlink_to(copy)
    config = str(ws / ".git" / "config")
    argv = bwrap_argv(shutil.which("bwrap") or "bwrap",
                      ["sh", "-c", "git config user.email a@b && grep ^CapEff /proc/self/status"],
                      MountPlan(str(ws), readable=(str(folder),), protected=(config,)),
                      str(ws), Redirect(str(private), ((str(private / "link"), config),)))
    if os.geteuid() == 0:
        helper = folder / "mountlink.py"  # this checkout may lie where nobody cannot reach
        shutil.copy(MOUNTLINK, helper)
        for path in (*folder.rglob("*"), folder):
            os.lchown(path, 65534, 65534)
        real = os.path.realpath(sys.executable)  # the sandbox's /tmp is a tmpfs of its own
        python = real if _reachable_by_nobody(real) and not real.startswith(
            f"{PRIVATE_TMP}/") else "/usr/bin/python3"
        swap = {sys.executable: python, MOUNTLINK: str(helper)}
        argv = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                *(swap.get(a, a) for a in argv)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(folder)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["CapEff:", "0000000000000000"]
    assert b"email = a@b" in copy.read_bytes()
    assert b"a@b" not in (ws / ".git" / "config").read_bytes()


def _reachable_by_nobody(path: str) -> bool:
    """Every folder above ``path``, and above the file it links to, lets others through."""
    return all(os.stat(p).st_mode & 0o001
               for p in (*Path(path).absolute().parents, *Path(path).resolve().parents))


_PREPARE = ("import os, sys\n"
            "from engine.sandbox import gitcopy\n"
            "copies = gitcopy.prepare([sys.argv[1]], sys.argv[2])\n"
            "print(copies.folder, flush=True)\n"
            "if sys.argv[3] == 'kill':\n"
            "    os.kill(os.getpid(), 9)\n"
            "sys.stdin.read()\n"
            "gitcopy.settle(copies, sys.argv[2])\n")


def test_a_private_copy_left_by_a_killed_engine_is_removed_by_the_next(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    gitdir, argv = str(ws / ".git"), [sys.executable, "-c", _PREPARE]
    killed = subprocess.run([*argv, gitdir, str(ws), "kill"], cwd=ROOT, env=engine_env(),
                            capture_output=True, text=True)
    left = killed.stdout.strip()
    assert killed.returncode == -9 and os.path.isfile(os.path.join(left, "config-0")), killed
    running = subprocess.Popen([*argv, gitdir, str(ws), "wait"], cwd=ROOT, env=engine_env(),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert running.stdout is not None and running.stdin is not None
    live = running.stdout.readline().strip()
    gitcopy.sweep.cache_clear()
    mine = gitcopy.prepare([gitdir], str(ws))
    try:
        assert not os.path.exists(left)  # its engine is gone: removed
        assert os.path.isdir(live) and os.path.isdir(mine.folder)  # engines still running
    finally:
        gitcopy.settle(mine, str(ws))
        running.communicate("")
    assert running.returncode == 0 and not os.path.exists(live)
