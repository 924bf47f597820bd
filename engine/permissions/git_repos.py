"""The repository git finds from a folder, and whether its configuration is a working file.

Git's discovery walks up from the folder it runs in: the first folder holding a ``.git`` entry
(a folder, or a file naming one), or that itself looks like a bare repository (``HEAD``,
``objects/``, ``refs/``), is the repository, and its ``config`` names programs git runs
(``core.fsmonitor``, a diff driver's ``textconv``). The workspace's own repository is out of
reach of commands (the sandbox keeps it read-only). A repository found inside the workspace
below it is not: a bare clone committed as ``sub/``, or a ``sub/.git`` a command made, is
files any command or clone can write, so git run there (``git -C sub status``, ``cd sub &&
git log -p``, ``--git-dir=sub``) may run what they name. A submodule's git folder lies in the
workspace repository's own (``.git/modules/NAME``) and is kept with it.
"""

from __future__ import annotations

import os

_GITFILE_LIMIT = 4096


def discovered(start: str) -> str | None:
    """The git folder git finds from ``start`` (absolute, resolved), walking up; None when
    there is none up to the root."""
    folder = start
    while True:
        found = repository_at(folder)
        if found is not None:
            return found
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def repository_at(folder: str) -> str | None:
    """The git folder of ``folder`` itself: its ``.git`` folder, the folder a ``.git`` file
    names, or ``folder`` when it looks like a bare repository."""
    dot = os.path.join(folder, ".git")
    if os.path.isdir(dot):
        return dot
    if os.path.isfile(dot):
        return _gitfile_target(dot) or dot
    if os.path.isfile(os.path.join(folder, "HEAD")) and all(
            os.path.isdir(os.path.join(folder, d)) for d in ("objects", "refs")):
        return folder
    return None


def _gitfile_target(path: str) -> str | None:
    """The folder a ``.git`` file names (``gitdir: ../.git/modules/sub``), resolved."""
    try:
        with open(path, "rb") as f:
            text = f.read(_GITFILE_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = first.removeprefix("gitdir:").strip()
    return os.path.realpath(os.path.join(os.path.dirname(path), target))


def working_repository(path: str, top: str, named: bool = False) -> str:
    """Why git run from ``path`` (or with ``path`` as its git folder, ``named``) reads a
    configuration the workspace's files hold ("" when its repository is the workspace's own,
    a submodule's inside it, or outside the workspace ``top``)."""
    real = os.path.realpath(path)
    gitdir = real if named else discovered(real)
    if gitdir is None or not _inside(gitdir, top):
        return ""
    own = discovered(top)
    if own is not None and (gitdir == own or _inside(gitdir, own)):
        return ""  # the workspace's repository (or a submodule's, kept in its .git/modules)
    shown = os.path.relpath(gitdir, top)
    return (f"git finds the repository {shown}, files inside the workspace: its config can "
            "name programs git runs (core.fsmonitor, a diff driver's textconv)")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
