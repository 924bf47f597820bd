"""Repositories a confined command makes anywhere in the workspace (``engine.sandbox.repos``,
found by ``engine.sandbox.survey``): git on the host would enter them and run what their
configuration or hooks name. Each attack runs for real under bubblewrap, then ``git`` runs on
the host where a user or an editor would; its control runs the same commands unconfined and
shows the payload does run."""

from __future__ import annotations

import errno
import gc
import os
import re
import subprocess
from pathlib import Path

import pytest

from engine.sandbox import Swept, confinement, repos, survey
from engine.spec.model import SandboxSpec
from tests.test_sandbox_wall import _py, _repo, _results, _run

QUEUED = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
"""Events the kernel queues for one inotify instance before it drops them."""
SETS = "git -C {repo} config core.fsmonitor 'touch {marker}; false'"
ATTACKS = {
    # name: (commands, the folder where git runs on the host, the host's git command)
    "subfolder": (["git init -q sub", SETS.format(repo="sub", marker="{m}")], "sub", "status"),
    "ignored folder": (["git init -q node_modules/pkg",
                        SETS.format(repo="node_modules/pkg", marker="{m}")],
                       "node_modules/pkg", "status"),
    "deep new folders": (["mkdir -p a/b/c", "git init -q a/b/c",
                          SETS.format(repo="a/b/c", marker="{m}")], "a/b/c", "status"),
    "bare folder given a work tree": (
        ["git init -q --bare cache", "git -C cache config core.bare false",
         "git -C cache config core.worktree ..", SETS.format(repo="cache", marker="{m}")],
        "cache", "status"),
    ".git file naming a hidden folder": (
        ["mkdir s", "git init -q --bare s/.hid", "git -C s/.hid config core.bare false",
         SETS.format(repo="s/.hid", marker="{m}"), "echo 'gitdir: .hid' > s/.git"],
        "s", "status"),
    "hook": (["git init -q sub", "printf '#!/bin/sh\\ntouch {m}\\n' > sub/.git/hooks/pre-commit",
              "chmod +x sub/.git/hooks/pre-commit"], "sub",
             "-c user.name=T -c user.email=t@example.com commit -q --allow-empty -m x"),
    "past the survey's share of watches": (
        ["git init -q sub", SETS.format(repo="sub", marker="{m}")], "sub", "status"),
    "past the survey's share of watches, the folder's time set back": (
        ["touch -r lib /tmp/lib-times", "git init -q lib/sub",
         SETS.format(repo="lib/sub", marker="{m}"), "touch -m -r /tmp/lib-times lib"],
        "lib/sub", "status"),
    "with no inotify instance left": (
        ["git init -q sub", SETS.format(repo="sub", marker="{m}")], "sub", "status"),
    "in a folder then closed (chmod 000)": (
        ["mkdir -p shut/sub", "git init -q shut/sub", SETS.format(repo="shut/sub", marker="{m}"),
         "chmod 000 shut"], "shut/sub", "status"),
    "after the kernel's queue overflowed": (
        [f"mkdir d{{{{1..{QUEUED + 1000}}}}}", "git init -q sub",
         SETS.format(repo="sub", marker="{m}")], "sub", "status"),
}


def _workspace(tmp: Path) -> Path:
    ws = _repo(tmp / "ws")
    (ws / ".gitignore").write_text("node_modules/\n")
    (ws / "lib").mkdir()
    return ws


def _confined(ws: Path, commands: list[str], vcs: str = "read") -> list[Swept]:
    """Each command run as the shell tool runs it: ``before``, bwrap, ``after``."""
    jail = confinement(SandboxSpec(vcs=vcs), ws)  # type: ignore[arg-type]
    assert jail.active, jail.reason
    swept = []
    for command in commands:
        prepared = jail.before()
        subprocess.run(jail.command(["bash", "-c", command], ws, False, prepared), cwd=ws,
                       env=jail.env(os.environ), capture_output=True, check=False, timeout=120)
        swept.append(jail.after(prepared))
    return swept


def _host_git(ws: Path, folder: str, command: str) -> None:
    subprocess.run(["git", *command.split()], cwd=ws / folder, capture_output=True,
                   check=False, timeout=60)


@pytest.mark.parametrize("vcs", ["read", "write"])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_repository_a_command_makes_is_not_entered_by_git_on_the_host(
        tmp_path: Path, name: str, vcs: str, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    commands, folder, host = ATTACKS[name]
    marker = tmp_path / "ran"
    ws = _workspace(tmp_path)
    if "share" in name:
        monkeypatch.setattr(survey, "WATCH_SHARE", 10**9)  # a budget of no watch at all
    if "instance" in name:  # the kernel's answer past max_user_instances (128 by default)
        def refused() -> None:
            raise OSError(errno.EMFILE, "Too many open files")
        monkeypatch.setattr(survey.inotify, "Inotify", refused)
    swept = _confined(ws, [" && ".join(c.format(m=marker) for c in commands)], vcs)
    moved = [p for s in swept for p in s.moved]
    assert moved and all(".git" in p or p.endswith(("/cache", "/.hid")) for p in moved), moved
    if "chmod" in name:  # given back to its owner, who may open it and enter the repository
        assert (ws / "shut").stat().st_mode & 0o700 == 0o700
    if (ws / folder).is_dir():
        _host_git(ws, folder, host)
    assert not marker.exists(), name
    assert any(p.name.endswith(".refused") for p in ws.rglob("*.refused")), name
    assert ("the kernel dropped events" in caplog.text) is ("overflowed" in name)
    assert ("followed by a walk of it" in caplog.text) is ("share" in name
                                                           or "instance" in name)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_control_the_same_commands_unconfined_do_run_the_payload(tmp_path: Path,
                                                                 name: str) -> None:
    commands, folder, host = ATTACKS[name]
    marker = tmp_path / "ran"
    ws = _workspace(tmp_path)
    subprocess.run(["bash", "-c", " && ".join(c.format(m=marker) for c in commands)], cwd=ws,
                   capture_output=True, check=True, timeout=120)
    _host_git(ws, folder, host)
    assert marker.exists(), name


def test_a_run_reports_the_repository_it_moved_aside(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    marker = tmp_path / "ran"
    db = tmp_path / "e.db"
    make = _py("import subprocess\n"
               "subprocess.run(['git', 'init', '-q', 'lib'], check=True)\n"
               f"open('lib/.git/config', 'a').write('[core]\\n\\tfsmonitor = touch {marker}\\n')\n"
               "print('made')\n")
    _run(tmp_path, ws, [make], db=db)
    content = _results(db)[0]["content"]
    assert "made" in content and "(moved aside (to NAME.refused) lib/.git:" in content, content
    _host_git(ws, "lib", "status")
    assert not marker.exists() and (ws / "lib" / ".git.refused" / "config").exists()


# -- what git's own commands make stays -------------------------------------------------


@pytest.mark.parametrize("vcs", ["read", "write"])
def test_git_init_and_clone_in_the_workspace_are_kept(tmp_path: Path, vcs: str) -> None:
    ws = _workspace(tmp_path)
    ident = "-c user.name=T -c user.email=t@example.com"
    swept = _confined(ws, [f"git init -q one && git -C one {ident} commit -q --allow-empty -m x"
                           " && git clone -q one two && mkdir -p deps && git init -q --bare "
                           "deps/mirror.git"], vcs)
    assert [p for s in swept for p in s.moved] == []
    for repo in ("one/.git", "two/.git", "deps/mirror.git/HEAD"):
        assert (ws / repo).exists(), repo
    assert subprocess.run(["git", "-C", str(ws / "two"), "log", "--oneline"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("vcs", ["read", "write"])
def test_a_repository_there_before_the_run_cannot_be_given_a_program(
        tmp_path: Path, vcs: str) -> None:
    """A dependency cloned into an ignored folder before the run: its configuration and hooks
    are read-only to commands, as the workspace's own are."""
    ws = _workspace(tmp_path)
    (ws / "node_modules").mkdir()
    lib = _repo(ws / "node_modules" / "lib")
    config = (lib / ".git" / "config").read_bytes()
    marker = tmp_path / "ran"
    _confined(ws, [SETS.format(repo="node_modules/lib", marker=marker),
                   f"printf '#!/bin/sh\\ntouch {marker}\\n' > node_modules/lib/.git/hooks/"
                   "pre-commit; chmod +x node_modules/lib/.git/hooks/pre-commit"], vcs)
    assert (lib / ".git" / "config").read_bytes() == config
    _host_git(ws, "node_modules/lib", "-c user.name=T -c user.email=t@example.com commit -q "
              "--allow-empty -m x")
    assert not marker.exists()


def test_a_copy_of_a_repository_is_judged_as_new(tmp_path: Path) -> None:
    """A repository there before cannot be moved (what is bound in it is a mount point); a
    copy is a new repository: kept when git's commands could have made it."""
    ws = _workspace(tmp_path)
    _repo(ws / "vendor")
    _repo(ws / "tool")
    config = ws / "tool" / ".git" / "config"
    config.write_text(config.read_text() + "[core]\n\tpager = less -R\n")
    swept = _confined(ws, ["mv vendor vendored; cp -a vendor vendor2 && cp -a tool tool2"])
    assert (ws / "vendor" / ".git" / "config").exists() and not (ws / "vendored").exists()
    assert (ws / "vendor2" / ".git" / "config").exists()
    assert swept[0].moved == [str(ws / "tool2" / ".git")]


# -- the rule, on folders -----------------------------------------------------------------


def _git_folder(tmp: Path, *config: str) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp / "g")], check=True)
    for line in config:
        key, value = line.split("=", 1)
        subprocess.run(["git", "-C", str(tmp / "g"), "config", key, value], check=True)
    return tmp / "g"


@pytest.mark.parametrize(("config", "extra", "refused"), [
    ((), None, None),
    (("remote.origin.url=https://example.com/x.git",), None, None),
    (("core.fsmonitor=true",), None, "config sets core.fsmonitor"),
    (("alias.st=!sh",), None, "config sets alias.st"),
    (("core.hooksPath=/tmp",), None, "config sets core.hookspath"),
    ((), "hooks/post-checkout", "hooks/ holds more than git's template puts there"),
    ((), "commondir", "commondir is not what git's commands write in a git folder"),
])
def test_what_a_new_git_folder_may_hold(tmp_path: Path, config: tuple[str, ...],
                                        extra: str | None, refused: str | None) -> None:
    gitdir = _git_folder(tmp_path, *config)
    if extra:
        (gitdir / extra).parent.mkdir(parents=True, exist_ok=True)
        (gitdir / extra).write_text("[core]\n\tfsmonitor = x\n")
    why = repos.refusal(str(gitdir), str(tmp_path), lambda _p: False)
    assert why == refused


def test_a_submodule_folder_is_judged_like_its_repository(tmp_path: Path) -> None:
    gitdir = _git_folder(tmp_path)
    sub = _git_folder(tmp_path / "m")
    (gitdir / "modules").mkdir()
    sub.rename(gitdir / "modules" / "lib")
    assert repos.refusal(str(gitdir), str(tmp_path), lambda _p: False) is None
    subprocess.run(["git", "-C", str(gitdir / "modules" / "lib"), "config", "core.pager",
                    "sh"], check=True)
    assert repos.refusal(str(gitdir), str(tmp_path), lambda _p: False) == \
        "modules/lib: config sets core.pager"


def test_a_dot_git_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    swept = _confined(ws, ["mkdir sub && mkfifo sub/.git"])
    assert swept[0].moved == [str(ws / "sub" / ".git")]


def test_a_dot_git_leading_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {_git_folder(tmp_path)}\n")
    assert repos.refusal(str(ws / ".git"), str(ws), lambda _p: False).startswith(
        "leads outside the workspace")
    (ws / ".git").unlink()
    (ws / ".git").symlink_to("/etc")
    assert repos.refusal(str(ws / ".git"), str(ws), lambda _p: False).startswith(
        "leads outside the workspace")


def test_a_survey_dropped_frees_its_inotify_descriptor(tmp_path: Path) -> None:
    """A long-lived process (a worker, the console) prepares many runs: each survey's watches
    end with it."""
    ws = _workspace(tmp_path)
    (ws / "sub").mkdir()

    first = survey.Survey(str(ws), (str(ws / ".git"),))
    first.repositories()
    assert first._notify is not None
    fd = first._notify.fd
    watching = _watches(fd)
    assert str(os.stat(ws / "sub").st_ino) in {ino for _wd, ino in watching}
    del first
    gc.collect()
    assert _watches(fd) != watching  # closed (its number may be another's by now)


def _watches(fd: int) -> set[tuple[str, str]]:
    """An inotify descriptor's watches as the kernel lists them: (wd, inode) in hex/decimal."""
    try:
        info = Path(f"/proc/self/fdinfo/{fd}").read_text()
    except FileNotFoundError:
        return set()
    found = re.findall(r"inotify wd:(\w+) ino:(\w+)", info)
    return {(wd, str(int(ino, 16))) for wd, ino in found}


def test_without_inotify_hard_linked_files_stay_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No inotify instance left (or none on this system): the survey still walks, so a file
    hard-linked to one outside the workspace stays read-only."""
    def refused() -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(survey.inotify, "Inotify", refused)
    ws = _workspace(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("kept\n")
    os.link(outside, ws / "linked.txt")
    _confined(ws, ["echo changed > linked.txt"])
    assert outside.read_text() == "kept\n"
