"""git's index file, read directly: the first tracked paths and how many there are (for a
prompt's summary), or every entry's mode and path (``entries``: the sandbox's gitlinks).

The index (``.git/index``, format "DIRC" versions 2 to 4) lists every tracked path in sorted
order after a 12-byte header that holds the entry count. A prompt's summary needs the first
few paths and the count: reading them here costs the same in a 10-file and a 300,000-file
repository, and runs no program (``git ls-files`` loads the whole index first). Anything this
reader does not know (a split index, SHA-256 object names, an index elsewhere than
``.git/index``) makes it decline, and the caller asks git.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

_ENTRY = 62
"""Bytes before an entry's path with 20-byte object names (SHA-1): stat data, mode, oid,
flags."""
_EXTENDED = 0x4000
_CHUNK = 1 << 16
_SHA256 = re.compile(rb"objectformat\s*=\s*sha256", re.IGNORECASE)


def first_entries(root: Path, limit: int, wanted: Callable[[str], bool]
                  ) -> tuple[list[str], int] | None:
    """Up to ``limit`` stage-0 paths ``wanted`` keeps, in index order, and the entry count;
    None when this reader declines."""
    gitdir = root / ".git"
    if not gitdir.is_dir() or any(gitdir.glob("sharedindex.*")) or _sha256(gitdir):
        return None
    try:
        with open(gitdir / "index", "rb") as f:
            return _read(f, limit, wanted)
    except FileNotFoundError:
        return [], 0  # a new repository: nothing tracked yet
    except (OSError, ValueError, IndexError):
        return None


_tracked: dict[str, tuple[tuple[int, int, int, int], frozenset[bytes]]] = {}


def tracked(root: Path, rel: str) -> bool | None:
    """Whether ``rel`` (relative to ``root``, ``/``-separated) is a path in the git index of
    the repository at ``root``; None when there is none here or this reader declines. The
    paths are read once per change of the index (its inode, size and times)."""
    paths = _index_paths(root)
    return paths if paths is None or isinstance(paths, bool) else os.fsencode(rel) in paths


def tracked_under(root: Path, rel: str) -> bool | None:
    """Whether the index of the repository at ``root`` holds a path inside the folder
    ``rel`` (``"."``: any path); None as for ``tracked``."""
    paths = _index_paths(root)
    if paths is None or isinstance(paths, bool):
        return paths
    prefix = b"" if rel in (".", "") else os.fsencode(rel.rstrip("/") + "/")
    return any(p.startswith(prefix) for p in paths)


def tracked_paths_under(root: Path, rel: str) -> list[str] | None:
    """Every path of the index inside the folder ``rel`` (``"."``: all), or None as for
    ``tracked``."""
    paths = _index_paths(root)
    if paths is None or isinstance(paths, bool):
        return None if paths is None else []
    prefix = b"" if rel in (".", "") else os.fsencode(rel.rstrip("/") + "/")
    return [os.fsdecode(p) for p in paths if p.startswith(prefix)]


def _index_paths(root: Path) -> frozenset[bytes] | bool | None:
    """The index's paths; False for a repository without an index, None to decline."""
    gitdir = root / ".git"
    index = gitdir / "index"
    try:
        st = os.stat(index)
    except FileNotFoundError:
        return False if gitdir.is_dir() else None
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    cached = _tracked.get(str(index))
    if cached is None or cached[0] != key:
        if any(gitdir.glob("sharedindex.*")):
            return None
        try:
            paths = frozenset(p for _mode, p in entries(index.read_bytes(),
                                                        32 if _sha256(gitdir) else 20))
        except (OSError, ValueError, IndexError):
            return None
        cached = _tracked[str(index)] = (key, paths)
    return cached[1]


def _sha256(gitdir: Path) -> bool:
    try:
        return _SHA256.search((gitdir / "config").read_bytes()) is not None
    except OSError:
        return False


def _read(f: BinaryIO, limit: int, wanted: Callable[[str], bool]
          ) -> tuple[list[str], int] | None:
    read = f.read
    data = read(_CHUNK)
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    names: list[str] = []
    pos, previous, seen = 12, b"", 0
    while seen < count and len(names) < limit:
        while len(data) - pos < _ENTRY + 4096:  # room for one entry with a long path
            more = read(_CHUNK)
            if not more:
                break
            data = data[pos:] + more
            pos = 0
        name, pos = entry(data, pos, version, previous)
        previous, seen = name, seen + 1
        text = os.fsdecode(name)
        if (not names or names[-1] != text) and wanted(text) and not text.endswith("/"):
            names.append(text)
    return names, count


def entries(data: bytes, hash_len: int = 20) -> Iterator[tuple[int, bytes]]:
    """Each entry's mode and path, in index order, from a whole index file's bytes (versions
    2 to 4; ``hash_len`` 32 for SHA-256 object names). ValueError when it is no index."""
    if data[:4] != b"DIRC" or len(data) < 12:
        raise ValueError("not a git index")
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    pos, previous = 12, b""
    for _ in range(count):
        mode = int.from_bytes(data[pos + 24:pos + 28], "big")
        previous, pos = entry(data, pos, version, previous, hash_len)
        yield mode, previous


def entry(data: bytes, pos: int, version: int, previous: bytes,
          hash_len: int = 20) -> tuple[bytes, int]:
    """One entry's path and where the next entry starts (see gitformat-index(5))."""
    head = _ENTRY - 20 + hash_len
    flags = int.from_bytes(data[pos + head - 2:pos + head], "big")
    start = pos + head + (2 if version >= 3 and flags & _EXTENDED else 0)
    if version == 4:
        strip, start = _varint(data, start)
        if strip > len(previous):
            raise ValueError("bad path compression")
        end = data.index(b"\0", start)
        return previous[:len(previous) - strip] + data[start:end], end + 1
    end = data.index(b"\0", start)
    return data[start:end], pos + ((end - pos + 8) & ~7)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset encoding (varint.c): each continuation adds one before shifting."""
    byte = data[pos]
    value = byte & 0x7F
    pos += 1
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos
