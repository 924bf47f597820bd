"""The workspace as the file tools see it: confined paths, content hashes and atomic writes.

The permission layer judges paths fully (``~``, variables, symlinks, whitelists) before a call
runs; this module is the tools' own last line: a path that resolves outside the workspace is
refused with an error result, whatever the policy said.
"""

from __future__ import annotations

import functools
import hashlib
import os
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
