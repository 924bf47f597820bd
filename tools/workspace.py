"""The workspace as the file tools see it: confined paths, content hashes and atomic writes.

The permission layer judges paths fully (``~``, variables, symlinks, whitelists) before a call
runs; this module is the tools' own last line: a path that resolves outside the workspace is
refused with an error result, whatever the policy said. ``open_in`` opens a file for reading
without following any link from the workspace down, so what a tool reads is the file it
checked, even if a link is swapped in after the check.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from pathlib import Path

from engine.tooling.spec import ToolResult
from engine.vocabulary import held_files

BINARY_SNIFF_BYTES = 8192


@functools.lru_cache(maxsize=64)
def _root(workspace: Path) -> Path:
    """The workspace's own resolved path, once per run (as the policy's ``judge_literal`` does):
    every target below is still resolved afresh, so a symlink in it is always followed now."""
    return workspace.resolve()


def resolve_in(workspace: Path, path: str) -> Path | ToolResult:
    """The resolved absolute path of ``path`` (relative to the workspace), or an error result."""
    root = _root(workspace)
    if "\x00" in path:
        return ToolResult.error(f"invalid path {path!r}: contains a NUL byte")
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        return ToolResult.error(
            f"path {path!r} resolves to {target}, outside the workspace {root}; "
            "use a path inside the workspace"
        )
    return target


_DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_NOT_PLAIN = frozenset({"", ".", ".."})


def open_in(workspace: Path, path: str) -> tuple[int, str, os.stat_result] | None:
    """A descriptor open for reading on the regular file ``path`` names in the workspace, its
    workspace-relative name and its status; None when that cannot be shown (then
    ``resolve_in`` judges and explains).

    ``path`` must be relative (or absolute under the resolved workspace) with plain components
    only (no empty, ``.`` or ``..``). The file is reached from the workspace directory one
    component at a time, each opened relative to the one before without following a symbolic
    link: a link anywhere below the workspace, or swapped in at any moment before the open,
    makes it fail instead of leading elsewhere. The workspace directory is opened by its
    resolved name and must be the directory first resolved (same device and inode); when it is
    not, the walk starts at ``/`` through the resolved name's components, again following no
    link, so the answer is never wider than ``realpath``'s.
    """
    try:
        anchor = _anchor(workspace)
    except OSError:
        return None
    root = anchor[0].rstrip("/")
    if path.startswith("/"):
        if not path.startswith(root + "/"):
            return None
        path = path[len(root) + 1:]
    parts = path.split("/")
    if not _NOT_PLAIN.isdisjoint(parts) or "\x00" in path:
        return None
    try:
        fd, st = _open_file(_open_dirs(_open_root(*anchor), parts[:-1]), parts[-1])
    except OSError:
        return None
    return fd, path, st


@functools.lru_cache(maxsize=64)
def _anchor(workspace: Path) -> tuple[str, int, int]:
    """The resolved workspace and its device and inode, fixed at first use like ``_root``."""
    root = str(_root(workspace))
    st = os.stat(root)  # an error is not cached: the next call tries again
    return root, st.st_dev, st.st_ino


def _open_root(root: str, dev: int, ino: int) -> int:
    fd = os.open(root, _DIR_FLAGS)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if (st.st_dev, st.st_ino) == (dev, ino):
        return fd
    os.close(fd)
    return _open_dirs(os.open("/", _DIR_FLAGS), [n for n in root.split("/") if n])


def _open_dirs(dirfd: int, names: list[str]) -> int:
    """The directory ``names`` lead to from ``dirfd`` (which is closed), following no link."""
    try:
        for name in names:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
            os.close(dirfd)
            dirfd = nxt
    except OSError:
        os.close(dirfd)
        raise
    return dirfd


def _open_file(dirfd: int, name: str) -> tuple[int, os.stat_result]:
    """The regular file ``name`` in ``dirfd`` (which is closed), opened for reading.

    It is looked at before it is opened, so a device or a pipe is never opened (opening may
    block or act), and the descriptor is then checked to be that same file."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{name} is not a regular file")
        if held_files.held(st):  # closing a descriptor of it would drop the store's locks
            raise OSError(f"{name} is the engine's open database")
        fd = os.open(name, _FILE_FLAGS, dir_fd=dirfd)
    finally:
        os.close(dirfd)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(
            opened.st_mode):
        held_files.close(fd, opened)
        raise OSError(f"{name} changed while it was being opened")
    return fd, opened


def rel(workspace: Path, target: Path) -> str:
    """``target`` relative to the workspace, in POSIX form (``.`` for the root itself)."""
    return target.relative_to(_root(workspace)).as_posix() or "."


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte in the first 8 KB."""
    return data.find(b"\x00", 0, BINARY_SNIFF_BYTES) >= 0


def atomic_write(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` in one rename, keeping an existing file's mode."""
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_umask() -> int:
    """The process umask (read once at import: ``os.umask`` is not thread-safe)."""
    current = os.umask(0)
    os.umask(current)
    return current


_UMASK = _read_umask()
