"""The workspace as the file tools see it: confined paths, content hashes and atomic writes.

The permission layer judges paths fully (``~``, variables, symlinks, whitelists) before a call
runs; this module is the tools' own last line: a path that resolves outside the workspace is
refused with an error result, whatever the policy said.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from pathlib import Path

from engine.tooling.spec import ToolResult

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


def open_in(workspace: Path, path: str) -> tuple[int, str] | None:
    """A descriptor open for reading on the regular file ``path`` names in the workspace, and
    its workspace-relative name; None when that cannot be shown (then ``resolve_in`` judges).

    ``path`` must be relative (or absolute under the resolved workspace) with plain components
    only (no empty, ``.`` or ``..``). The file is reached from ``/`` one directory at a time,
    each opened relative to the one before without following a symbolic link, through the
    resolved workspace's components and then the path's: what is opened is what
    ``realpath`` would name inside the workspace, and a link swapped in anywhere on the way,
    at any moment before the open, makes it fail instead of leading elsewhere.
    """
    root = str(_root(workspace))
    if path.startswith("/"):
        if not path.startswith(root.rstrip("/") + "/"):
            return None
        path = path[len(root.rstrip("/")) + 1:]
    parts = path.split("/")
    if not _NOT_PLAIN.isdisjoint(parts):
        return None
    try:
        return _open_below((*_names(root), *parts)), path
    except OSError:
        return None


@functools.lru_cache(maxsize=64)
def _names(root: str) -> tuple[str, ...]:
    return tuple(n for n in root.split("/") if n)


def _open_below(names: tuple[str, ...]) -> int:
    """Open ``/names[0]/.../names[-1]``, a regular file, with no symbolic link on the way."""
    dirfd = os.open("/", _DIR_FLAGS)
    try:
        for name in names[:-1]:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
            os.close(dirfd)
            dirfd = nxt
        # Looked at before it is opened: a device or a pipe is never opened (opening may
        # block or act); the descriptor is then checked to be that same file.
        st = os.stat(names[-1], dir_fd=dirfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{names[-1]} is not a regular file")
        fd = os.open(names[-1], _FILE_FLAGS, dir_fd=dirfd)
    finally:
        os.close(dirfd)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(
            opened.st_mode):
        os.close(fd)
        raise OSError(f"{names[-1]} changed while it was being opened")
    return fd


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
