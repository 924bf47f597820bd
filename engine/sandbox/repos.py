"""Repositories inside the workspace besides its own, which git on the host would enter.

git run in a folder uses the nearest git folder at or above it: a ``.git`` (a folder, a file
naming one, a link) or a folder shaped like one (``HEAD``, ``objects/``, ``refs/``: a bare
repository, not even bare with ``core.worktree``). It reads that folder's configuration and
hooks, which may name any program (``core.fsmonitor`` runs at every ``git status``), and
editors look for such folders in the workspace's subfolders and beside each file they open.
A command may write anywhere in the workspace, ignored folders included, so (``survey`` finds
them, ``Confinement`` acts):

- the git folders there before a command are bound read-only for it, like the workspace's own
  (``wall.git_read_only``);
- a git folder a command made is kept only when nothing in it makes git run a program or read
  another folder (``refusal``), else it is moved aside to ``NAME.refused`` (moved, not
  removed: it may hold work). What git's own commands make passes: ``git init``, a clone.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable

from engine.sandbox import gitconfig, wall

logger = logging.getLogger(__name__)

SHAPE = ("HEAD", "objects", "refs")
"""The entries that make git take a folder for a git folder."""
TEMPLATE_FOLDERS = frozenset({"hooks", "info"})


def is_git_folder(path: str) -> bool:
    """Whether git would take ``path`` for a git folder (its ``HEAD`` judged present, not
    read: taking too many folders for git folders only checks more)."""
    return (os.path.lexists(os.path.join(path, "HEAD"))
            and os.path.isdir(os.path.join(path, "objects"))
            and os.path.isdir(os.path.join(path, "refs")))


def refusal(path: str, workspace: str, known: Callable[[str], bool]) -> str | None:
    """Why the git folder, or the ``.git`` file or link, ``path`` a command made may not stay
    (None: it may). A file or link must lead to a folder that is no git folder, or to one
    ``known`` (there before, or the workspace's own), or to one that may stay itself, in the
    workspace; a folder may hold only what git's commands write there."""
    if os.path.islink(path) or not os.path.isdir(path):
        led = target(path)
        if led is None:
            return "a .git that is neither a folder nor a `gitdir: PATH` file"
        if not (led + "/").startswith(workspace.rstrip("/") + "/"):
            return f"leads outside the workspace ({led})"
        if known(led) or not is_git_folder(led):
            return None
        path = led
    return _folder_refusal(path, workspace)


def target(dot_git: str) -> str | None:
    """Where a ``.git`` link or file leads (resolved), or None when git would not follow it."""
    if os.path.islink(dot_git):
        return os.path.realpath(dot_git)
    try:
        if not stat.S_ISREG(os.lstat(dot_git).st_mode):
            return None  # a FIFO would block the read; git reads only a file
        with open(dot_git, "rb") as f:
            line = f.read(4097).decode().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:") or "\n" in line:
        return None
    return os.path.realpath(os.path.join(os.path.dirname(dot_git),
                                         line.removeprefix("gitdir:").strip()))


def _folder_refusal(gitdir: str, workspace: str, nested: bool = False) -> str | None:
    """Why the git folder ``gitdir`` may not stay: an entry git's commands do not write there,
    a configuration key outside ``gitconfig.ALLOWED``, hooks beyond git's samples; the same in
    its submodules' git folders (``modules/``)."""
    try:
        entries = list(os.scandir(gitdir))
    except OSError as exc:
        return f"not readable ({exc.strerror})"
    for entry in entries:
        name = entry.name.removesuffix(".lock")
        if name in wall.GIT_ALLOWED:
            continue
        if name in TEMPLATE_FOLDERS:
            if wall.is_template(entry.path):
                continue
            return f"{name}/ holds more than git's template puts there"
        if name == "config":
            why = _config_refusal(entry.path, gitdir, workspace)
        elif name == "modules" and not nested:
            why = _modules_refusal(gitdir, workspace)
        elif name == "modules":
            continue  # listed whole by the outermost folder's nested_gitdirs
        else:
            why = f"{entry.name} is not what git's commands write in a git folder"
        if why:
            return why
    return None


def _config_refusal(path: str, gitdir: str, workspace: str) -> str | None:
    if os.path.islink(path) or not os.path.isfile(path):
        return "config is not a plain file"
    try:
        with open(path, "rb") as f:
            data = f.read(wall.MAX_CHECKED + 1)
    except OSError as exc:
        return f"config not readable ({exc.strerror})"
    if len(data) > wall.MAX_CHECKED:
        return f"config larger than {wall.MAX_CHECKED} bytes"
    why = gitconfig.refused(None, data, gitdir, workspace)
    return f"config {why}" if why else None


def _modules_refusal(gitdir: str, workspace: str) -> str | None:
    try:
        found, stray = wall.nested_gitdirs(gitdir)
    except OSError as exc:
        return f"modules/ not readable ({exc.strerror})"
    if stray:
        return f"{os.path.relpath(stray[0], gitdir)} is not a folder"
    for path, kind, _parent in found:
        why = (_folder_refusal(path, workspace, nested=True) if kind == "modules"
               else "worktrees/ names checkouts elsewhere")
        if why:
            return f"{os.path.relpath(path, gitdir)}: {why}"
    return None


def move_aside(path: str) -> str | None:
    """Rename ``path`` to ``path.refused`` (numbered when taken); the new path, or None when
    it could not be moved (said in the log)."""
    aside = f"{path}.refused"
    for n in range(2, 100):
        if not os.path.lexists(aside):
            break
        aside = f"{path}.refused-{n}"
    try:
        os.rename(path, aside)
    except OSError as exc:
        logger.error("%s could not be moved aside (%s): git on the host may enter it", path,
                     exc)
        return None
    return aside
