"""The command's private copy of a git folder's configuration, and what of it reaches the host.

Under ``sandbox: {vcs: write}`` the host's ``.git/config`` (and each existing submodule's
``.git/modules/NAME/config``, ``config_dirs``) is never written by a command: it gets a copy in
a private folder outside the workspace (``prepare``), shown in the file's place as a symlink to
the copy (``mountlink``), so ``git config``, ``git submodule add`` / ``init`` / ``update``,
``git remote add`` and ``git branch --set-upstream-to`` work. After the command (``settle``)
the copy is read by ``gitconfig``'s strict parser: when every key it gained, changed or removed
is one ``gitconfig.ALLOWED`` accepts (with its value), it replaces the host's file, written as
git writes it (``config.lock``, then renamed over it; its mode kept); otherwise nothing is
applied and the refused keys are reported.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.sandbox import gitconfig, wall
from engine.sandbox.cgroups import process_alive

logger = logging.getLogger(__name__)

BASES: tuple[str, ...] = ("/dev/shm",)
"""Memory file systems tried first for the private folders (see ``private_base``)."""
PREFIX = "turnstile-gitconfig-"
"""Private folders are named ``PREFIX<pid>-<random>``: the pid of the engine that made one,
so a later engine can tell a folder left by a killed one (``sweep``)."""
MAX_SIZE = 1 << 20
"""Bytes of a configuration copied or read back; a larger one is left read-only / refused."""


@dataclass(frozen=True, slots=True)
class Copy:
    """One configuration file and its private copy for one command."""

    real: str
    """The host's file (``.git/config``), resolved."""
    copy: str
    """The command's copy, in the private folder."""
    link: str
    """A symlink to ``copy``, mounted over ``real`` inside the sandbox."""
    before: bytes
    """``real``'s content when the copy was made."""


@dataclass(frozen=True, slots=True)
class Copies:
    """The private folder of one command and the copies in it."""

    folder: str = ""
    files: tuple[Copy, ...] = ()


@dataclass(frozen=True, slots=True)
class Settled:
    """What ``settle`` did with the copies."""

    applied: list[str] = field(default_factory=list)
    """Host files replaced by the command's copy."""
    refused: dict[str, list[str]] = field(default_factory=dict)
    """Host files left as they were, with why: the keys refused, or what was not understood."""


def config_dirs(gitdirs: Iterable[str]) -> list[str]:
    """The git folders whose ``config`` a command writes through a copy: the workspace's, and
    its submodules' under ``modules/`` (``git submodule update`` sets their
    ``core.worktree``)."""
    out: list[str] = []
    for gitdir in gitdirs:
        out.append(gitdir)
        if os.path.isdir(os.path.join(gitdir, "modules")):
            with contextlib.suppress(OSError):
                found, _others = wall.nested_gitdirs(gitdir)
                out += [path for path, kind, _parent in found if kind == "modules"]
    return out


def prepare(gitdirs: Iterable[str], workspace: str) -> Copies:
    """Copies of the ``config`` of each git folder that has one (a plain file), in a fresh
    private folder (mode 0700) outside the workspace; no folder when there is none."""
    found: list[tuple[str, bytes, int]] = []
    for gitdir in gitdirs:
        real = os.path.join(gitdir, "config")
        try:
            mode = os.lstat(real).st_mode
            if not stat.S_ISREG(mode):
                continue
            with open(real, "rb") as f:
                data = f.read(MAX_SIZE + 1)
        except OSError:
            continue
        if len(data) <= MAX_SIZE:
            found.append((real, data, mode))
    if not found:
        return Copies()
    folder = ""
    try:
        base = private_base(workspace)
        sweep(base)
        folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base)
        files = []
        for number, (real, data, mode) in enumerate(found):
            copy = os.path.join(folder, f"config-{number}")
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(mode))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            link = os.path.join(folder, f"link-{number}")
            os.symlink(copy, link)
            files.append(Copy(real, copy, link, data))
    except OSError as exc:  # no copy: the file stays read-only to the command
        logger.warning("no private copy of %s: %s", found[0][0], exc)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        return Copies()
    return Copies(folder, tuple(files))


@functools.lru_cache(maxsize=8)
def private_base(workspace: str) -> str:
    """Where private folders are made: a memory file system when there is one (a folder,
    two files and a symlink per command cost a fifth there of what they cost on disk), never
    inside the workspace."""
    for base in (*BASES, tempfile.gettempdir()):
        real = os.path.realpath(base)
        if os.path.isdir(real) and os.access(real, os.W_OK | os.X_OK) \
                and real != workspace and not real.startswith(workspace.rstrip("/") + "/"):
            return real
    return "/tmp"


@functools.lru_cache(maxsize=8)
def sweep(base: str) -> list[str]:
    """Remove (once per process and base) the private folders an engine that is gone left
    behind, killed between ``prepare`` and ``settle``: each holds a copy of a git
    configuration. A folder whose engine still runs, or that another user owns, stays."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        pid = entry.name[len(PREFIX):].split("-", 1)[0]
        if not entry.name.startswith(PREFIX) or not pid.isdigit() or process_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False) and \
                    entry.stat(follow_symlinks=False).st_uid == os.getuid():
                shutil.rmtree(entry.path)
                removed.append(entry.path)
    if removed:
        logger.info("removed %d private git folder(s) left by engines that stopped",
                    len(removed))
    return removed


def settle(copies: Copies, workspace: str) -> Settled:
    """Apply each copy the command changed to its host file when every change is allowed;
    then remove the private folder."""
    out = Settled()
    try:
        for one in copies.files:
            why = _judge(one, workspace)
            if why is None:
                continue
            if why:
                logger.warning("git configuration %s not changed: %s", one.real, "; ".join(why))
                out.refused[one.real] = why
            else:
                out.applied.append(one.real)
    finally:
        _remove(copies)
    return out


def _remove(copies: Copies) -> None:
    """The private folder: what ``prepare`` put there, then the folder; whatever else the
    command left in it, with the rest."""
    for one in copies.files:
        for path in (one.copy, one.link):
            with contextlib.suppress(OSError):
                os.unlink(path)
    try:
        os.rmdir(copies.folder)
    except OSError:
        shutil.rmtree(copies.folder, ignore_errors=True)


def _judge(one: Copy, workspace: str) -> list[str] | None:
    """None: the copy is unchanged; [] once applied; else why it is not."""
    try:
        fd = os.open(one.copy, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ["the copy was removed or replaced by a link"]
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ["the copy is no longer a plain file"]
        after = f.read(MAX_SIZE + 1)
    if after == one.before:
        return None
    if len(after) > MAX_SIZE:
        return [f"larger than {MAX_SIZE} bytes"]
    try:
        refused = gitconfig.refused_keys(one.before, after, os.path.dirname(one.real),
                                         workspace)
    except (UnicodeDecodeError, gitconfig.ConfigSyntax) as exc:
        return [f"not understood ({exc})"]
    if refused:
        return refused
    return _apply(one, after)


def _apply(one: Copy, after: bytes) -> list[str]:
    """Replace the host's file as git does: ``FILE.lock`` created exclusively (a git on the
    host writing meanwhile holds it), the file's mode given to it, renamed over ``FILE`` when
    the file is still what the copy was made from."""
    lock = one.real + ".lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return ["locked by another git on the host (config.lock)"]
    why: list[str] = []
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(after)
        shutil.copymode(one.real, lock)
        with open(one.real, "rb") as f:
            if f.read(MAX_SIZE + 1) != one.before:
                why = ["changed on the host during the command"]
        if not why:
            os.replace(lock, one.real)
            return why
    except OSError as exc:
        why = [f"not written ({exc.strerror})"]
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lock)
    return why
