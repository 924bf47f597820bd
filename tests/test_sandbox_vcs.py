"""``sandbox: {vcs: write}`` and the git folders a command may create: submodules' under
``.git/modules/`` and linked worktrees' under ``.git/worktrees/``. They work from a confined
command; what git on the host would later run from them (a key of their configuration that
names a program, a ``commondir`` leading elsewhere, new hooks) does not survive the command.
Every case is a real run under ``--approval auto``; the controls run with the sandbox off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.sandbox import gitconfig, gitlinks, wall
from tests.test_sandbox_wall import OFF, _py, _repo, _results, _run

ADD = "git -c protocol.file.allow=always submodule add -q ../other sub && echo added"
WRITE = "sandbox: {vcs: write}\n"


def _write(tmp: Path) -> str:
    """``vcs: write``, and the repository beside the workspace readable (the private ``/tmp``
    would hide it)."""
    return f"sandbox: {{vcs: write, readable: [{json.dumps(str(tmp / 'other'))}]}}\n"


def _git(*args: str | Path) -> str:
    return subprocess.run(["git", *map(str, args)], capture_output=True, text=True,
                          check=True).stdout


def _changed(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {json.loads(r[0])["path"] for r in conn.execute(
            "SELECT payload FROM events WHERE kind = 'file_changed'")}


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its content's hash."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _setup(tmp: Path) -> Path:
    _repo(tmp / "other")
    return _repo(tmp / "ws")


def test_submodule_add_works_under_vcs_write(tmp_path: Path) -> None:
    ws = _setup(tmp_path)
    db = tmp_path / "e.db"
    proc = _run(tmp_path, ws, [ADD], policy=_write(tmp_path), db=db)
    (result,) = _results(db)
    assert "added" in result["content"] and not result["is_error"], result["content"]
    assert "[sandbox]" not in proc.stdout, proc.stdout  # git wrote .git/config's copy
    assert "removed" not in result["content"]  # git's template hooks/ and info/, quietly
    status = _git("-C", ws, "submodule", "status")
    assert status.startswith(" ") and status.split()[1] == "sub", status  # initialized
    assert _git("-C", ws, "status", "--porcelain").split("\n")[:2] == ["A  .gitmodules",
                                                                        "A  sub"]
    assert _git("-C", ws / "sub", "log", "--format=%s").split() == ["first"]
    assert not (ws / ".git" / "modules" / "sub" / "hooks").exists()
    changed = _changed(db)
    assert {".git/config", ".git/modules/sub/HEAD", ".git/modules/sub/config"} <= changed
    assert not [p for p in changed if "/objects/" in p], changed
    # a second command sees the submodule as its own
    db2 = tmp_path / "e2.db"
    _run(tmp_path, ws, ["git submodule status && git -C sub status --short && echo fine"],
         policy=_write(tmp_path), db=db2)
    assert "fine" in _results(db2)[0]["content"]


def test_without_the_opt_in_nothing_under_git_changes(tmp_path: Path) -> None:
    ws = _setup(tmp_path)
    before = _tree(ws / ".git")
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [ADD, "git worktree add -q inside && echo made"],
         policy=_write(tmp_path).replace("write", "read"), db=db)
    added, made = _results(db)
    assert "added" not in added["content"] and "made" not in made["content"]
    assert "sandbox: {vcs: write}" in added["content"], added["content"]
    assert _tree(ws / ".git") == before


def _plant(marker: Path) -> str:
    """Set ``core.fsmonitor`` in the submodule's git folder (as git would run it)."""
    return _py("open('.git/modules/sub/config', 'a').write(\n"
               f"    '[core]\\n\\tfsmonitor = touch {marker}; false\\n')\n"
               "print('planted')\n")


@pytest.mark.parametrize("commands", ["one", "two"])
def test_a_planted_fsmonitor_in_a_submodule_never_runs_on_the_host(
        tmp_path: Path, commands: str) -> None:
    """In the command that adds the submodule (its new configuration is removed), or in a
    later one (it writes a private copy of the configuration, which is not applied)."""
    ws = _setup(tmp_path)
    marker = tmp_path / "fsmonitor-ran"
    db = tmp_path / "e.db"
    steps = [f"{ADD} && {_plant(marker)}"] if commands == "one" else [ADD, _plant(marker)]
    _run(tmp_path, ws, steps, policy=_write(tmp_path), db=db)
    last = _results(db)[-1]["content"]
    assert "planted" in last and ".git/modules/sub/config" in last, last
    subprocess.run(["git", "-C", str(ws / "sub"), "status"], capture_output=True)
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True)
    assert not marker.exists()
    config = ws / ".git" / "modules" / "sub" / "config"
    if commands == "two":
        assert "(left .git/modules/sub/config unchanged" in last, last
        assert "\tfsmonitor = " not in config.read_text()
        assert _git("-C", ws, "submodule", "status").startswith(" ")
    else:
        assert "(removed" in last and not config.exists(), last


def test_a_planted_fsmonitor_control_without_the_sandbox(tmp_path: Path) -> None:
    ws = _setup(tmp_path)
    marker = tmp_path / "fsmonitor-ran"
    _run(tmp_path, ws, [ADD, _plant(marker)], policy=OFF)
    subprocess.run(["git", "-C", str(ws / "sub"), "status"], capture_output=True)
    assert marker.exists()


def test_worktree_add_inside_the_workspace_works(tmp_path: Path) -> None:
    ws = _setup(tmp_path)
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["git worktree add -q inside && echo made"], policy=WRITE, db=db)
    (result,) = _results(db)
    assert "made" in result["content"] and "removed" not in result["content"], result
    assert (ws / ".git" / "worktrees" / "inside" / "commondir").read_text().strip() == "../.."
    listed = _git("-C", ws, "worktree", "list", "--porcelain")
    assert f"worktree {os.path.realpath(ws / 'inside')}" in listed, listed
    assert _git("-C", ws / "inside", "log", "--format=%s").split() == ["first"]
    assert ".git/worktrees/inside/HEAD" in _changed(db)


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A folder outside ``/tmp`` (which the sandbox replaces with a private one)."""
    folder = Path(tempfile.mkdtemp(prefix="turnstile-vcs-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("where", ["host", "tmp"])
def test_worktree_add_beside_the_workspace_says_why_it_fails(
        tmp_path: Path, host_dir: Path, where: str) -> None:
    """Beside a workspace on the host the checkout is read-only; beside one under ``/tmp`` it
    lands in the private ``/tmp`` and is gone after the command: its git folder is removed."""
    parent = host_dir if where == "host" else tmp_path
    ws = _repo(parent / "ws")
    db = tmp_path / "e.db"
    # through python: the classifier refuses the plain command (a write outside); the wall
    # is what must stop it when the preview cannot show it
    add = ("python3 -c \"import subprocess, sys; sys.exit(subprocess.run(['git', 'worktree', "
           "'add', '-q', sys.argv[1]]).returncode)\" ../beside && echo made")
    _run(tmp_path, ws, [add], policy=WRITE, db=db)
    (result,) = _results(db)
    assert not (parent / "beside").exists()
    if where == "host":
        assert "made" not in result["content"]
        assert "`git worktree add` would make beside the workspace" in result["content"]
    else:
        assert "(removed .git/worktrees/beside: the worktree's checkout is not on the host" \
            in result["content"], result["content"]
    assert not (ws / ".git" / "worktrees" / "beside").exists()
    assert _git("-C", ws, "worktree", "list").count("\n") == 1


@pytest.mark.parametrize("entry", ["commondir", "hooks", "config.worktree"])
def test_a_worktree_may_not_lead_git_elsewhere(tmp_path: Path, entry: str) -> None:
    """A worktree's ``commondir`` naming another common folder (whose configuration sets
    ``core.fsmonitor``), a new ``hooks/``, a ``config.worktree`` with a program in it."""
    ws = _setup(tmp_path)
    marker = tmp_path / "ran"
    wt = ".git/worktrees/inside"
    payload = {
        "commondir": "import shutil\n"
                     "shutil.copytree('.git', 'evil')\n"
                     "open('evil/config', 'a').write(\n"
                     f"    '[core]\\n\\tfsmonitor = touch {marker}\\n')\n"
                     f"open('{wt}/commondir', 'w').write('../../../evil\\n')\n",
        "hooks": "import os\n"
                 f"os.makedirs('{wt}/hooks')\n"
                 f"open('{wt}/hooks/post-checkout', 'w').write('#!/bin/sh\\ntouch {marker}\\n')\n"
                 f"os.chmod('{wt}/hooks/post-checkout', 0o755)\n",
        "config.worktree": "import subprocess\n"
                           "subprocess.run(['git', 'config', 'extensions.worktreeConfig', "
                           "'true'], check=False)\n"
                           f"open('{wt}/config.worktree', 'w').write("
                           f"'[core]\\n\\tfsmonitor = touch {marker}\\n')\n",
    }[entry]
    db = tmp_path / "e.db"
    _run(tmp_path, ws, ["git worktree add -q inside", _py(payload)], policy=WRITE, db=db)
    result = _results(db)[-1]
    if entry == "commondir":  # changed: as git wrote it
        assert f"(restored {wt}/{entry}" in result["content"], result["content"]
        assert (ws / wt / entry).read_text().strip() == "../.."
    else:  # new: removed
        assert f"(removed {wt}/{entry}" in result["content"], result["content"]
        assert not (ws / wt / entry).exists()
    for args in (["status"], ["checkout", "-q", "-b", "other"]):
        subprocess.run(["git", "-C", str(ws / "inside"), *args], capture_output=True)
    assert not marker.exists()


def test_the_sweep_costs_little_in_a_repository_without_modules(tmp_path: Path) -> None:
    """Not a timing assertion: the work is counted. Without ``modules/`` or ``worktrees/``
    the snapshot lists the top level only, and reads no file."""
    ws = _repo(tmp_path / "ws")
    gitdir = str(ws / ".git")
    snap = wall.git_snapshot([gitdir], str(ws))
    assert snap.nested == {} and snap.checked == {}
    swept = wall.sweep_git(snap)
    assert swept.removed == swept.restored == [] and swept.refused == {}


# ---------------------------------------------------------------- the configuration check

CLONED = (b'[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n'
          b'\tlogallrefupdates = true\n\tworktree = ../../../sub\n[remote "origin"]\n'
          b'\turl = /srv/other\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
          b'[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n')


def _refused(after: bytes, before: bytes | None = None, where: str = "/w/.git/modules/sub"
             ) -> str | None:
    return gitconfig.refused(before, after, where, "/w")


def test_what_git_clone_writes_is_kept() -> None:
    assert _refused(CLONED) is None
    assert _refused(CLONED + b'[submodule "x y"]\n\turl = "git@host:a/b.git" ; c\n'
                    b'\tactive = true\n') is None


@pytest.mark.parametrize("text", [
    "[core]\n\tfsmonitor = touch x\n", "[core]\n\thooksPath = /tmp/h\n",
    "[core]\n\tsshCommand = sh -c x\n", '[filter "lfs"]\n\tclean = x\n',
    '[diff "x"]\n\ttextconv = x\n', "[include]\n\tpath = ../evil\n",
    '[includeIf "gitdir:/"]\n\tpath = ../evil\n', "[alias]\n\tst = !x\n",
    '[submodule "s"]\n\tupdate = !x\n', '[remote "o"]\n\turl = ext::sh -c x\n',
    '[remote "o"]\n\turl = evil::x\n', '[remote "o"]\n\tuploadpack = x\n',
    "[core]\n\tworktree = ../../../../../elsewhere\n", "[core]\n\tbare = $(x)\n",
    "[core]\n\teditor = x\n", "[extensions]\n\tobjectformat = sha256\n",
])
def test_a_key_that_names_a_program_is_refused(text: str) -> None:
    assert _refused(CLONED + text.encode()) is not None


@pytest.mark.parametrize("text", [
    "[core]\n\tbare = false \\\n\tfsmonitor = x\n",  # a continuation line
    "[core.x]\n\tbare = true\n", "[core] fsmonitor = x\n", "\ufeff[core]\n\tbare = true\n",
    "[core]\r\n\tbare = true\r\n", '[core]\n\tbare = "true\n', "bare = true\n",
    "[core]\n\tbare = tr\\ue\n",
])
def test_what_the_parser_does_not_understand_is_refused(text: str) -> None:
    assert _refused(text.encode()).startswith("not understood")  # type: ignore[union-attr]


def test_only_what_changed_is_judged() -> None:
    own = CLONED + b"[core]\n\tfsmonitor = mine\n"  # the user's own, there before
    assert _refused(own + b'[branch "x"]\n\tremote = origin\n', own) is None
    assert _refused(own.replace(b"mine", b"theirs"), own) == "sets core.fsmonitor"


def test_values_are_read_as_git_reads_them() -> None:
    assert gitconfig.parse('[Remote "O"]\n  URL = " a b " # c\n\tx\n') == [
        ("remote.O.url", " a b "), ("remote.O.x", None)]


# ---------------------------------------------------------------- the sweep, step by step


def _swept(ws: Path, change: Callable[[Path], None]) -> wall.Swept:
    """``change`` the git folder between the snapshot and the sweep, as a command would."""
    gitdir = str(ws / ".git")
    before = wall.git_snapshot([gitdir], str(ws))
    change(ws / ".git")
    return wall.sweep_git(before)


def test_links_and_strays_under_modules_are_removed(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    elsewhere = tmp_path / "evil"
    elsewhere.mkdir()

    def change(git: Path) -> None:
        (git / "modules" / "a").mkdir(parents=True)
        (git / "modules" / "a" / "b").symlink_to(elsewhere)  # a name with a slash, linked
        (git / "worktrees").symlink_to(elsewhere)

    swept = _swept(ws, change)
    assert sorted(swept.removed) == [str(ws / ".git" / "modules" / "a" / "b"),
                                     str(ws / ".git" / "worktrees")]
    assert elsewhere.exists() and not (ws / ".git" / "worktrees").exists()


def test_a_nested_submodule_is_checked_too(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")

    def change(git: Path) -> None:
        nested = git / "modules" / "a" / "modules" / "b"
        for folder in (git / "modules" / "a", nested):
            (folder / "hooks").mkdir(parents=True)
            (folder / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
            (folder / "HEAD").write_text("ref: refs/heads/main\n")
            (folder / "config").write_bytes(CLONED)
        (nested / "config").write_bytes(CLONED + b"[core]\n\tfsmonitor = x\n")
        (nested / "hooks" / "post-checkout").write_text("#!/bin/sh\n")

    swept = _swept(ws, change)
    a = ws / ".git" / "modules" / "a"
    assert swept.template == [str(a / "hooks")]  # only what git's template holds
    assert set(swept.removed) == {str(a / "modules" / "b" / "hooks"),
                                  str(a / "modules" / "b" / "config")}
    assert not (a / "hooks").exists()
    assert (a / "config").read_bytes() == CLONED  # core.worktree ../../../sub is inside


def test_every_submodule_folder_is_checked_however_many_there_are(tmp_path: Path) -> None:
    """No count of folders hides one: 1,500 clean submodule folders, and a submodule nested
    in one of them that sets ``core.fsmonitor`` (the look once stopped after 1,000 folders,
    before the nested ones)."""
    ws = _repo(tmp_path / "ws")
    evil = ws / ".git" / "modules" / "m0000" / "modules" / "evil"

    def change(git: Path) -> None:
        for folder in [git / "modules" / f"m{i:04d}" for i in range(1500)] + [evil]:
            folder.mkdir(parents=True)
            (folder / "HEAD").write_text("ref: refs/heads/main\n")
            (folder / "config").write_bytes(CLONED)
        (evil / "config").write_bytes(CLONED + b"[core]\n\tfsmonitor = x\n")

    swept = _swept(ws, change)
    assert swept.removed == [str(evil / "config")]
    assert not (evil / "config").exists()


def test_a_configuration_too_large_to_read_whole_is_refused(tmp_path: Path) -> None:
    """A key past what is read would otherwise go unseen."""
    ws = _repo(tmp_path / "ws")
    padding = b"# padding\n" * (wall.MAX_CHECKED // 10 + 1)

    def change(git: Path) -> None:
        module = git / "modules" / "sub"
        module.mkdir(parents=True)
        (module / "HEAD").write_text("ref: refs/heads/main\n")
        (module / "config").write_bytes(CLONED + padding + b"[core]\n\tfsmonitor = x\n")

    swept = _swept(ws, change)
    assert swept.removed == [str(ws / ".git" / "modules" / "sub" / "config")]


# ---------------------------------------------------------------- submodule checkouts


@pytest.mark.parametrize("version", ["2", "3", "4", "sha256"])
def test_gitlinks_are_read_from_every_index_version(tmp_path: Path, version: str) -> None:
    if version == "sha256":
        ws = tmp_path / "ws"
        _git("init", "-q", "--object-format=sha256", ws)
        _git("-C", ws, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q",
             "--allow-empty", "-m", "first")
        version = "2"
    else:
        ws = _repo(tmp_path / "ws")
    head = _git("-C", ws, "rev-parse", "HEAD").strip()
    names = ["a/deep/" + "long-name-" * 20 + "x", "lib/sub", "lib/sub2", "z"]
    for name in names:
        if name.startswith("lib/"):
            _git("-C", ws, "update-index", "--add", "--cacheinfo", f"160000,{head},{name}")
        else:
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_text("x\n")
            _git("-C", ws, "add", *(["-N"] if version == "3" else []), name)  # -N: extended
    _git("-C", ws, "update-index", "--index-version", version)
    assert (ws / ".git" / "index").read_bytes()[4:8] == int(version).to_bytes(4, "big")
    assert gitlinks.gitlinks(str(ws / ".git" / "index"), str(ws / ".git" / "config")) == (
        "lib/sub", "lib/sub2")


def _evil_repo(folder: str, marker: Path) -> str:
    """Python that makes ``folder/.git`` (relative) a repository whose configuration runs
    ``marker``; an existing ``.git`` file is moved aside."""
    return ("import os, subprocess\n"
            f"if os.path.isfile('{folder}/.git'): os.rename('{folder}/.git', 'moved-aside')\n"
            f"subprocess.run(['git', 'init', '-q', '{folder}'], check=True)\n"
            f"open('{folder}/.git/config', 'a').write(\n"
            f"    '[core]\\n\\tfsmonitor = touch {marker}; false\\n')\n")


@pytest.mark.parametrize("policy", ["read", "write", "off"])
def test_a_submodule_checkout_cannot_hold_the_commands_git_folder(
        tmp_path: Path, policy: str) -> None:
    """An existing submodule's ``.git`` file replaced by a repository of the command's making:
    ``git status`` in the superproject on the host would enter it."""
    ws = _setup(tmp_path)
    _git("-C", ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../other",
         "sub")
    _git("-C", ws, "commit", "-qm", "sub")
    marker = tmp_path / "ran"
    db = tmp_path / "e.db"
    sandbox = OFF if policy == "off" else f"sandbox: {{vcs: {policy}}}\n"
    _run(tmp_path, ws, [_py(_evil_repo("sub", marker) + "print('made')\n")],
         policy=sandbox, db=db)
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True)
    assert marker.exists() is (policy == "off")
    if policy != "off":
        assert "made" not in _results(db)[0]["content"]
        assert (ws / "sub" / ".git").is_file()


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_new_gitlink_to_the_commands_repository_is_not_entered(
        tmp_path: Path, sandboxed: bool) -> None:
    ws = _setup(tmp_path)
    marker = tmp_path / "ran"
    db = tmp_path / "e.db"
    make = _py(_evil_repo("evil", marker)
               + "subprocess.run(['git', '-C', 'evil', '-c', 'user.name=T', '-c',\n"
               "                'user.email=t@example.com', 'commit', '-q', '--allow-empty',\n"
               "                '-m', 'e'], check=True)\n")
    stage = "git update-index --add --cacheinfo 160000,$(git -C evil rev-parse HEAD),evil"
    _run(tmp_path, ws, [f"{make} && {stage} && echo staged"],
         policy=WRITE if sandboxed else OFF, db=db)
    content = _results(db)[0]["content"]
    assert "staged" in content, content
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True)
    assert marker.exists() is not sandboxed
    if sandboxed:
        assert "(moved aside (to NAME.refused) evil/.git:" in content, content
        assert (ws / "evil" / ".git.refused" / "config").exists()
