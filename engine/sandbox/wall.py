"""What a confined command may change, by construction rather than by a list of names.

The workspace's working files are writable; everything that makes a program run later is not:

- ``.git/`` (and a ``.git`` file's target, its common folder, submodules' git folders) is bound
  read-only, unless ``sandbox: {vcs: write}``: then the folder stays writable (git writes
  ``*.lock`` files beside what it changes) but its sensitive entries (``config*``, ``hooks/``,
  ``info/``, ``modules/*/{config,hooks,info}``) are bound read-only, and after each command any
  new top-level entry outside ``GIT_ALLOWED`` (``commondir``, ``config.worktree``) is removed.
- the engine's own installation (``sys.prefix``, every folder on ``sys.path``, its source, its
  console script) and interpreter start-up files on that path, wherever they lie;
- files with a hard link outside the workspace (writing one would change the outside file).
  A command cannot make a new one: ``link()`` across a bind mount fails with EXDEV.

The engine's folder ``.engine/`` is masked (an empty read-only folder), not only read-only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

GIT_ALLOWED: frozenset[str] = frozenset({
    "objects", "refs", "logs", "packed-refs", "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD",
    "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "REBASE_HEAD", "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES",
    "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "AUTO_MERGE", "SQUASH_MSG", "COMMIT_EDITMSG",
    "TAG_EDITMSG", "description", "branches", "rebase-merge", "rebase-apply", "sequencer",
    "shallow", "lost-found", "gc.pid", "gc.log", "rr-cache",
})
"""Top-level entries of ``.git/`` a command may create under ``vcs: write`` (and their
``*.lock`` files): history, refs, the index and the files git leaves between commands. None of
them makes git run a program."""
GIT_SENSITIVE: tuple[str, ...] = ("config", "config.worktree", "hooks", "info", "commondir")
"""Entries of a git folder bound read-only even under ``vcs: write``."""
STARTUP_FILES: tuple[str, ...] = ("sitecustomize.py", "usercustomize.py", "sitecustomize",
                                  "usercustomize")
"""Imported by every interpreter start when found on ``sys.path``."""
MAX_SCAN = 200_000
"""Entries the run-start search for hard links looks at before it stops (and says so)."""
MAX_LINK_BINDS = 256
"""Beyond this many hard-linked files, their folders are bound read-only instead."""
SKIP_DIRS = frozenset({".git", ".engine"})


def git_dirs(workspace: str) -> list[str]:
    """The workspace's git folders: ``.git`` (or a ``.git`` file's target and its common
    folder), resolved."""
    dot = os.path.join(workspace, ".git")
    if os.path.isdir(dot) and not os.path.islink(dot):
        return [os.path.realpath(dot)]
    if not os.path.isfile(dot):
        return []
    try:
        with open(dot) as f:
            line = f.read(4096).strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    target = os.path.realpath(os.path.join(workspace, line.removeprefix("gitdir:").strip()))
    out = [target]
    with contextlib.suppress(OSError), open(os.path.join(target, "commondir")) as f:
        out.append(os.path.realpath(os.path.join(target, f.read().strip())))
    return out


def git_read_only(gitdir: str, vcs_write: bool) -> list[str]:
    """What to bind read-only in one git folder: all of it, or its sensitive entries (also in
    ``modules/``, submodules' git folders, and ``worktrees/``)."""
    if not vcs_write:
        return [gitdir]
    out = [os.path.join(gitdir, name) for name in GIT_SENSITIVE]
    for nested in ("modules", "worktrees"):
        for root, dirs, _files in os.walk(os.path.join(gitdir, nested)):
            for name in GIT_SENSITIVE:
                if os.path.lexists(os.path.join(root, name)):
                    out.append(os.path.join(root, name))
            dirs[:] = [d for d in dirs if d not in ("objects", "refs", "logs", *GIT_SENSITIVE)]
    return [p for p in out if os.path.lexists(p)]


def git_entries(gitdirs: Iterable[str]) -> dict[str, frozenset[str]]:
    """The top-level entries of each git folder now (before a command)."""
    out = {}
    for gitdir in gitdirs:
        with contextlib.suppress(OSError):
            out[gitdir] = frozenset(os.listdir(gitdir))
    return out


def sweep_git(before: dict[str, frozenset[str]]) -> list[str]:
    """Remove what a command added at the top of a git folder outside ``GIT_ALLOWED`` (a
    ``commondir`` pointing git at another configuration): before git on the host reads it."""
    removed = []
    for gitdir, had in before.items():
        try:
            now = os.listdir(gitdir)
        except OSError:
            continue
        for name in now:
            if name in had or name.removesuffix(".lock") in GIT_ALLOWED:
                continue
            path = os.path.join(gitdir, name)
            removed.append(path)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    return removed


def installation() -> list[str]:
    """The engine's installation, resolved: the interpreter's prefixes, every folder on
    ``sys.path``, the folder holding ``engine/`` and the console script."""
    source = Path(__file__).resolve().parents[2]
    paths = [sys.prefix, sys.base_prefix, str(source), *[p for p in sys.path if p]]
    script = shutil.which("turnstile")
    if script:
        paths.append(script)
    return list(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))


def installation_read_only(paths: Iterable[str], workspace: str,
                           writable: Iterable[str]) -> tuple[list[str], list[str]]:
    """What of the installation to bind read-only inside writable folders, and the start-up
    files absent there (to remove after a command that creates them). A folder that holds
    the workspace itself (the engine started from its workspace) is not bound whole: its
    start-up files and the engine's packages are."""
    roots = [r for r in (workspace, *writable) if r]
    bind: list[str] = []
    absent: list[str] = []
    for path in paths:
        if not any(_under(path, r) for r in roots):
            continue
        if workspace and _under(workspace, path):
            bind += [p for p in _startup_files(path) if os.path.lexists(p)]
            bind += [os.path.join(path, pkg) for pkg in ("engine", "tools", "turnstile_tools")
                     if os.path.isfile(os.path.join(path, pkg, "__init__.py"))]
            absent += [os.path.join(path, n) for n in STARTUP_FILES[:2]
                       if not os.path.lexists(os.path.join(path, n))]
        else:
            bind.append(path)
    return list(dict.fromkeys(bind)), absent


def _startup_files(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n.endswith(".pth") or n in STARTUP_FILES]


def hard_linked(workspace: str) -> list[str]:
    """Workspace files with a hard link outside it (more links than the workspace holds),
    found by one bounded walk; their folders instead beyond ``MAX_LINK_BINDS`` files."""
    by_inode: dict[tuple[int, int], list[str]] = {}
    links: dict[tuple[int, int], int] = {}
    folders, seen = [workspace], 0
    while folders and seen < MAX_SCAN:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        seen += len(entries)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not (folder == workspace and entry.name in SKIP_DIRS):
                    folders.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_nlink > 1:
                        key = (st.st_dev, st.st_ino)
                        by_inode.setdefault(key, []).append(entry.path)
                        links[key] = st.st_nlink
    if folders:
        logger.warning("hard-link search in %s stopped after %d entries", workspace, seen)
    found = sorted(p for key, paths in by_inode.items() if links[key] > len(paths)
                   for p in paths)
    if len(found) > MAX_LINK_BINDS:
        return sorted({os.path.dirname(p) for p in found})
    return found


class LinkSearch:
    """``hard_linked(workspace)`` on a thread from run start (hidden behind the first model
    turn); the first command waits for its answer."""

    def __init__(self, workspace: str) -> None:
        self._found: list[str] = []
        self._done = threading.Event()
        threading.Thread(target=self._search, args=(workspace,), daemon=True,
                         name="hard-link search").start()

    def _search(self, workspace: str) -> None:
        try:
            self._found = hard_linked(workspace)
        except Exception:  # a search that failed protects nothing more, said once
            logger.exception("hard-link search in %s failed", workspace)
        finally:
            self._done.set()

    def result(self) -> list[str]:
        self._done.wait()
        return self._found


def _under(path: str, folder: str) -> bool:
    return Path(path).is_relative_to(folder)
