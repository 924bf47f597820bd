"""Submodule checkouts git on the host enters: a gitlink's folder and the ``.git`` inside it.

``git status`` in a superproject runs git in every gitlink's folder that holds a ``.git``, and
that git reads the configuration the ``.git`` leads to (``core.fsmonitor`` included). The
folder is a workspace folder, writable to a command; so before a command the ``.git`` of each
gitlink that has one is bound read-only (a ``.git`` folder like the workspace's own git
folder), and after it a new one is kept only when it is a ``.git`` file leading into a git
folder's ``modules/`` (whose entries ``wall.sweep_git`` checks), else moved aside. The
gitlinks are read from the index (``gitlinks``), again only when the index changed.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from engine.sandbox import gitconfig, repos
from engine.workspace.index import entries

logger = logging.getLogger(__name__)

GITLINK_MODE = 0o160000
MAX_INDEX = 256 << 20
"""An index larger than this is not read (its gitlinks are not protected; said once)."""


@dataclass(frozen=True, slots=True)
class _Read:
    key: tuple[int, int, int, int]
    paths: tuple[str, ...]


_cache: dict[str, _Read] = {}


def gitlinks(index: str, config: str = "") -> tuple[str, ...]:
    """The gitlink paths (relative, ``/``-separated) in the index file ``index`` (of a
    repository whose configuration is ``config``: it names the hash, SHA-1 unless it says
    ``extensions.objectFormat = sha256``); () without one or when it cannot be read. Read
    again only when its inode, size, modification or change time differ (a command cannot
    set the change time back)."""
    try:
        st = os.stat(index)
    except OSError:
        return ()
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    cached = _cache.get(index)
    if cached is not None and cached.key == key:
        return cached.paths
    paths: tuple[str, ...] = ()
    if st.st_size > MAX_INDEX:
        logger.warning("index %s is larger than %d bytes: its gitlinks are not protected",
                       index, MAX_INDEX)
    else:
        try:
            with open(index, "rb") as f:
                data = f.read()
            paths = tuple(_parse(data, _hash_len(config)))
        except (OSError, ValueError, IndexError, UnicodeDecodeError) as exc:
            logger.warning("index %s not read (%s): its gitlinks are not protected", index, exc)
    _cache[index] = _Read(key, paths)
    return paths


def _hash_len(config: str) -> int:
    """Bytes of an object name: 32 when ``config`` sets ``extensions.objectFormat = sha256``."""
    try:
        with open(config, "rb") as f:
            entries = gitconfig.parse(f.read(1 << 20).decode())
    except (OSError, UnicodeDecodeError, gitconfig.ConfigSyntax):
        return 20
    formats = [v for k, v in entries if k == "extensions.objectformat"]
    return 32 if formats and (formats[-1] or "").lower() == "sha256" else 20


def _parse(data: bytes, hash_len: int) -> list[str]:
    """Gitlink paths of an index (``engine.workspace.index.entries``)."""
    # the mode of a gitlink, as stored, is bytes 00 00 e0 00: without them there is none
    if data[:4] == b"DIRC" and b"\x00\x00\xe0\x00" not in data:
        return []
    return [path.decode() for mode, path in entries(data, hash_len)
            if mode & 0o170000 == GITLINK_MODE]


def checkout_gits(workspace: str, gitdir: str, common: str | None = None) -> list[str]:
    """The ``.git`` (file or folder) of each gitlink of the workspace's index that has one:
    absolute paths inside the workspace (resolved, as ``gitdir``), not followed through
    links."""
    out: list[str] = []
    links = gitlinks(os.path.join(gitdir, "index"), os.path.join(common or gitdir, "config"))
    if not links:
        return out
    root = workspace.rstrip("/")
    for rel in links:
        path = os.path.normpath(os.path.join(root, rel, ".git"))
        if path.startswith(root + "/") and os.path.lexists(path) \
                and os.path.realpath(os.path.dirname(path)) == os.path.dirname(path):
            out.append(path)
    return out


def warm(workspace: str, gitdir: str, common: str | None = None) -> None:
    """Read the index's gitlinks on a thread now (at run start, beside the model's first
    turn), so the first command finds them cached: ~20 ms at 100,000 tracked files."""
    def read() -> None:
        try:
            checkout_gits(workspace, gitdir, common)
        except Exception:  # the first command reads them again and meets the fault there
            logger.debug("reading the gitlinks of %s failed", gitdir, exc_info=True)

    threading.Thread(target=read, daemon=True, name="gitlinks").start()


def sweep_checkouts(workspace: str, gitdirs: list[str], had: frozenset[str]) -> list[str]:
    """Move aside (to ``.git.refused``, numbered when taken) each gitlink's ``.git`` that was
    not there before the command (``had``) unless it is a ``.git`` file leading into one of
    ``gitdirs``' ``modules/`` (``workspace`` and ``gitdirs`` resolved). Moved, not removed:
    it may be a repository the user cloned before the run that the command staged. Returns
    the paths moved."""
    found = checkout_gits(workspace, gitdirs[0], gitdirs[-1]) if gitdirs else []
    if not found:
        return []
    moved = []
    modules = [os.path.join(g, "modules") + "/" for g in gitdirs]
    for path in found:
        if path in had or _leads_into(path, modules):
            continue
        if repos.move_aside(path) is None:
            continue
        logger.warning("%s moved aside: a gitlink's git folder must lie under .git/modules/",
                       path)
        moved.append(path)
    return moved


def _leads_into(dot_git: str, modules: list[str]) -> bool:
    """Whether ``dot_git`` is a ``.git`` file whose ``gitdir:`` lies under one of
    ``modules``."""
    if os.path.islink(dot_git) or not os.path.isfile(dot_git):
        return False
    target = repos.target(dot_git)
    return target is not None and any(
        (target + "/").startswith(m) and target + "/" != m for m in modules)
