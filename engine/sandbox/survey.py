"""One walk of the workspace from run start, and watches that keep what it found current.

The walk finds what the sandbox must bind read-only inside the writable workspace that no list
of names could: files with a hard link outside it (writing one would change the outside file),
other repositories' git folders (``repos``) and Python environments (whose start-up files
python runs at every start, an editor's included). It reads every folder, ignored trees included
(a package store's hard links and a dependency's clone sit in ``node_modules``), on a thread
from run start, hidden behind the model's first turn; the first command waits for it. A
command cannot make a new hard link to outside (``link()`` across a bind mount fails), but it
can make a git folder anywhere, so every folder read gets an inotify watch for names only:
after a command, only the names it made are looked at and only the folders it made are walked,
a cost that follows its work. Without inotify, past the watch limit, or when the kernel's
queue overflowed, the whole walk runs again after the command (said once in the log).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import re
import stat
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field

from engine.sandbox import pycache, repos
from engine.workspace import inotify

logger = logging.getLogger(__name__)

MAX_LINK_BINDS = 256
"""Beyond this many hard-linked files, their folders are bound read-only instead."""
ENV_MARKS = frozenset({"pyvenv.cfg", "conda-meta"})
"""What makes a folder a Python environment: ``pyvenv.cfg`` (``venv``, ``virtualenv``,
``uv``), ``conda-meta/`` (conda, mamba, pixi)."""
WATCH_SHARE = 4
"""The survey takes at most this fraction (1/N) of the user's inotify watches: the shell
tool's own watcher and other programs need theirs."""


@dataclass
class Found:
    """What a walk met: files with more than one link, git folders (not entered)."""

    links: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    nlink: dict[tuple[int, int], int] = field(default_factory=dict)
    gits: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)
    """Files met that python may run in place of reviewed code (``stands_in``)."""

    def hard_linked(self) -> list[str]:
        """Files with a link outside what was walked (more links than it holds); their
        folders beyond ``MAX_LINK_BINDS``."""
        found = sorted(p for key, paths in self.links.items() if self.nlink[key] > len(paths)
                       for p in paths)
        if len(found) > MAX_LINK_BINDS:
            return sorted({os.path.dirname(p) for p in found})
        return found


class Survey:
    """The workspace's hard-linked files, other repositories and Python environments, kept
    current after each command (``after``), and the files a command wrote that python may
    run in place of reviewed code (``compiled``)."""

    def __init__(self, workspace: str, own: tuple[str, ...] = ()) -> None:
        self.root = workspace
        self.skipped = {os.path.join(workspace, ".engine"), *own,
                        *([os.path.join(workspace, ".git")] if own else [])}
        """Not walked: the engine's folder and the workspace's own git folders (``wall``)."""
        self._own = own
        self._linked: list[str] = []
        self._known: dict[str, tuple[int, int]] = {}
        self._envs: set[str] = set()
        self._seen: dict[str, tuple[int, list[str]]] = {}
        """Without watches: per folder, its change time when last read and its folders."""
        self._compiled: list[str] = []
        self._since = 0
        """When the command began (ns, change time): a walk takes newer ``stands_in`` files
        for its."""
        self.pycache, lock = pycache.claim()
        """Where commands' python keeps its bytecode (``PYTHONPYCACHEPREFIX``), outside the
        workspace: a ``*.pyc`` a command leaves in the workspace was written on purpose.
        Removed with the survey, or by a later run's sweep when this one is killed."""
        weakref.finalize(self, pycache.release, self.pycache, lock)
        self._by_wd: dict[int, str] = {}
        self._notify: inotify.Inotify | None = None
        self._blind = ""
        self._budget = (inotify.max_watches() or 8192) // WATCH_SHARE
        self._done = threading.Event()
        threading.Thread(target=self._first, daemon=True, name="workspace survey").start()

    def _first(self) -> None:
        try:
            if gone := pycache.sweep():
                logger.info("removed %d bytecode folders of runs that ended", len(gone))
        except OSError as exc:
            logger.warning("the sweep of bytecode folders failed: %s", exc)
        try:
            self._notify = inotify.Inotify()
        except OSError as exc:  # none here, or no instance left (max_user_instances)
            self._go_blind(f"no inotify ({exc.strerror})")
        try:
            found = Found()
            self._walk(self.root, found, links=True)
            self._linked = found.hard_linked()
            for path in found.gits:
                self._remember(path)
        except Exception:  # a survey that failed protects nothing more, said once
            logger.exception("the survey of %s failed", self.root)
        finally:
            self._done.set()

    def linked(self) -> list[str]:
        """Files with a hard link outside the workspace (waits for the first walk)."""
        self._done.wait()
        return self._linked

    def repositories(self) -> list[str]:
        """The other repositories' ``.git`` (folder, file or link) and bare git folders in the
        workspace, as the last command left them (waits for the first walk)."""
        self._done.wait()
        return [p for p in self._known if os.path.lexists(p)]

    def site_folders(self) -> list[str]:
        """The ``site-packages`` folders of the Python environments (``ENV_MARKS``) in the
        workspace, as the last command left them."""
        self._done.wait()
        found = {os.path.realpath(site) for env in self._envs
                 for site in glob.glob(os.path.join(glob.escape(env), "lib*", "python*",
                                                    "site-packages"))}
        return sorted(p for p in found if p.startswith(self.root + "/"))

    def known(self, gitdir: str) -> bool:
        """Whether ``gitdir`` (resolved) is the workspace's own or was there before."""
        return gitdir in self._known or any(
            (gitdir + "/").startswith(own + "/") for own in self._own)

    def before(self) -> list[str]:
        """Before a command: what appeared since the last one, made on the host (a confined
        command's processes end with it), taken as there before; then ``repositories``."""
        self._done.wait()
        for path in self._made():
            self._remember(path)
        self._compiled.clear()
        self._since = time.time_ns() - 1_000_000_000  # file times lag the clock a little
        return self.repositories()

    def compiled(self) -> list[str]:
        """The files the last command wrote that python on the host may run in place of
        reviewed code (``stands_in``; call after ``after``)."""
        written = [p for p in dict.fromkeys(self._compiled) if os.path.isfile(p)]
        self._compiled.clear()
        return written

    def after(self) -> list[str]:
        """After a command: the git folders it made that may not stay (``repos.refusal``),
        moved aside; the paths they had. (One there before cannot be moved by a command: what
        is bound in it makes its folder and theirs a mount point, which cannot be renamed.)"""
        self._done.wait()
        made = self._made()
        moved = []
        for path in dict.fromkeys(made):
            if not os.path.lexists(path):
                continue
            why = repos.refusal(path, self.root, self.known)
            if why is None:
                self._remember(path)
                continue
            logger.warning("%s moved aside: git on the host would enter it (%s)", path, why)
            if repos.move_aside(path) is not None:
                self._known.pop(path, None)
                moved.append(path)
        return moved

    def _made(self) -> list[str]:
        """The git folders (or ``.git``) the command may have made or replaced."""
        if self._notify is None or self._blind:
            return self._rewalk()
        made: list[str] = []
        for ev in self._notify.read():
            if ev.mask & inotify.IN_Q_OVERFLOW:
                logger.warning("the kernel dropped events in %s: it is walked again",
                               self.root)
                return [*made, *self._rewalk()]
            self._event(ev, made)
        return made

    def _rewalk(self) -> list[str]:
        """The whole walk again: the git folders not known as they are, and the files that
        may stand in for reviewed code changed since the command began."""
        found = Found()
        self._walk(self.root, found)
        self._compiled += _changed_since(found.compiled, self._since)
        return [p for p in found.gits if self._known.get(p) != _identity(p)]

    def _event(self, ev: inotify.Event, made: list[str]) -> None:
        folder = self._by_wd.get(ev.wd)
        if folder is None:
            return
        if ev.mask & inotify.IN_IGNORED:
            del self._by_wd[ev.wd]
            return
        path = os.path.join(folder, ev.name)
        if stands_in(ev.name, folder) and not ev.mask & inotify.IN_ISDIR:
            self._compiled.append(path)
        if not ev.mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO) or path in self.skipped:
            return
        if ev.name == ".git":
            made.append(path)
        elif ev.mask & inotify.IN_ISDIR:
            found = Found()
            self._walk(path, found)
            made += found.gits
            self._compiled += found.compiled
        if ev.name in repos.SHAPE and folder != self.root and repos.is_git_folder(folder):
            made.append(folder)
        if ev.name in ENV_MARKS:
            self._envs.add(folder)

    def _walk(self, start: str, found: Found, links: bool = False) -> None:
        """Watch and read ``start`` and every folder below it, git folders excepted: those
        are appended to ``found.gits``; with ``links``, files with several links recorded.
        Without watches, a folder whose change time is what it was when last read gained no
        name since, and is not read again (``__pycache__`` excepted: a file can be written
        there in place)."""
        pending = [start]
        while pending:
            folder = pending.pop()
            try:
                st = os.lstat(folder)
            except OSError:
                continue
            if not links:
                st = _open_to_owner(folder, st)
            self._watch(folder)
            seen = self._seen.get(folder)
            if seen is not None and seen[0] == st.st_ctime_ns \
                    and os.path.basename(folder) != "__pycache__":
                pending += seen[1]
                continue
            inner = self._read(folder, found, links)
            if inner is None:
                continue
            if self._notify is None or self._blind:
                self._seen[folder] = (st.st_ctime_ns, inner)
            pending += inner

    def _read(self, folder: str, found: Found, links: bool) -> list[str] | None:
        """One folder's entries into ``found``; the folders below it to go on with (None: it
        is a git folder, or unreadable)."""
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            return None
        names = {e.name for e in entries}
        if folder != self.root and repos.SHAPE[0] in names and repos.is_git_folder(folder):
            found.gits.append(folder)
            return None
        if names & ENV_MARKS:
            self._envs.add(folder)
        inner = []
        for entry in entries:
            if entry.path in self.skipped:
                continue
            if entry.name == ".git":
                found.gits.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                inner.append(entry.path)
            elif links and entry.is_file(follow_symlinks=False):
                _count_links(entry, found)
            elif stands_in(entry.name, folder):
                found.compiled.append(entry.path)
        return inner

    def _watch(self, folder: str) -> None:
        if self._notify is None or self._blind:
            return
        if len(self._by_wd) >= self._budget:
            self._go_blind(f"more folders than its share of inotify watches ({self._budget})")
            return
        mask = inotify.NAMES_MASK  # and files written in place where bytecode is kept
        if os.path.basename(folder) == "__pycache__":
            mask |= inotify.IN_CLOSE_WRITE
        try:
            wd = self._notify.add(folder, mask)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.ENOMEM, errno.EMFILE):
                self._go_blind(f"no inotify watch left ({exc.strerror})")
            return
        self._by_wd[wd] = folder

    def _go_blind(self, why: str) -> None:
        self._blind = why
        logger.warning("%s: every command in %s is followed by a walk of it", why, self.root)
        if self._notify is not None:
            self._notify.close()
            self._by_wd.clear()

    def _remember(self, path: str) -> None:
        identity = _identity(path)
        if identity is not None:
            self._known[path] = identity


STDLIB = frozenset(sys.stdlib_module_names)
STARTUP_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
_EXTENSION = re.compile(r"([A-Za-z_]\w*)(?:\.[\w-]+)?\.(?:so|pyd)")


def stands_in(name: str, folder: str = "") -> bool:
    """Whether python may run the file ``name`` (in ``folder``) in place of code a person
    reviewed: bytecode (``*.pyc``, run instead of its source when the time and size it records
    match), an extension module named like a standard-library module
    (``json.cpython-311-...so``, or a package's ``json/__init__.abi3.so``, imported instead of
    it from the folder of the script run), or a start-up module (``sitecustomize.py``, run as
    any interpreter starts whose path holds the folder: an editable install's ``.pth`` puts a
    project's ``src/`` there). None shows in a diff as what it does."""
    if name.endswith(".pyc") or name in STARTUP_NAMES:
        return True
    named = _EXTENSION.fullmatch(name)
    if named is not None and named.group(1) == "__init__":
        return os.path.basename(folder) in STDLIB
    return named is not None and named.group(1) in STDLIB


def _changed_since(paths: list[str], since: int) -> list[str]:
    """Those of ``paths`` whose change time is ``since`` or later (a command cannot set a
    file's change time back)."""
    out = []
    for path in paths:
        with contextlib.suppress(OSError):
            if os.lstat(path).st_ctime_ns >= since:
                out.append(path)
    return out


def _open_to_owner(folder: str, st: os.stat_result) -> os.stat_result:
    """Give back its owner's access to a folder a command made closed (``chmod 000``): left
    so, what it holds could not be read here, yet the user may open it later and git enter
    a repository inside. The folder's status after."""
    if st.st_mode & 0o700 == 0o700 or st.st_uid != os.geteuid():
        return st
    try:
        os.chmod(folder, stat.S_IMODE(st.st_mode) | 0o700)
        logger.warning("%s: its owner's access given back, to look inside", folder)
        return os.lstat(folder)
    except OSError:
        return st


def _count_links(entry: os.DirEntry[str], found: Found) -> None:
    with contextlib.suppress(OSError):
        st = entry.stat(follow_symlinks=False)
        if st.st_nlink > 1:
            key = (st.st_dev, st.st_ino)
            found.links.setdefault(key, []).append(entry.path)
            found.nlink[key] = st.st_nlink


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
