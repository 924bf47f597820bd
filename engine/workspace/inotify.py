"""Linux inotify, through ctypes: the kernel tells which names in a watched folder changed.

One ``Inotify`` is one kernel instance (one descriptor, non-blocking); each watched folder is
one watch (``/proc/sys/fs/inotify/max_user_watches`` bounds them per user). Events queue in
the kernel until read (``max_queued_events``; past it one ``IN_Q_OVERFLOW`` says events were
lost) and identical consecutive events are merged. Files are watched through their folder:
``IN_CLOSE_WRITE`` once a file opened for writing is closed (however it was written),
creations, deletions and both halves of a rename, paired by ``cookie``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
FOLDER_MASK = (IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
               | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
               | IN_EXCL_UNLINK)
"""What a watched folder reports: written files, changed modes, names appearing and going,
and itself going."""
NAMES_MASK = (IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR | IN_DONT_FOLLOW
              | IN_EXCL_UNLINK)
"""Only names appearing in a watched folder (and leaving by a rename): no event per written
file, so a command that writes much does not fill the queue."""
_HEADER = struct.Struct("iIII")
_READ_BYTES = 1 << 20
MAX_WATCHES_FILE = "/proc/sys/fs/inotify/max_user_watches"


@dataclass(frozen=True, slots=True)
class Event:
    """One event: the watch it came from, what happened, the rename pair id, the name."""

    wd: int
    mask: int
    cookie: int
    name: str


@lru_cache(maxsize=1)
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    return lib if hasattr(lib, "inotify_init1") else None


def available() -> bool:
    """Whether this system has inotify (Linux)."""
    return _libc() is not None


def max_watches() -> int | None:
    """The per-user watch limit, when the system says."""
    try:
        with open(MAX_WATCHES_FILE) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


class Inotify:
    """One inotify instance; ``OSError`` from the kernel is raised as it comes."""

    def __init__(self) -> None:
        lib = _libc()
        if lib is None:
            raise OSError(errno.ENOSYS, "inotify is not available on this system")
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd: int = fd
        self._lib = lib
        # dropped without close() (a cached run evicted), the kernel still frees its watches
        self._closer = weakref.finalize(self, os.close, fd)

    def add(self, path: str, mask: int = FOLDER_MASK) -> int:
        """Watch the folder ``path`` (never following a link) for ``mask``; its watch
        descriptor (the same one again for a folder watched already)."""
        wd = self._lib.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return int(wd)

    def remove(self, wd: int) -> None:
        """Stop a watch (it may be gone already: the kernel drops the watch of a deleted
        folder itself)."""
        self._lib.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[Event]:
        """Every event queued so far, oldest first; never blocks."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                return events
            events.extend(_decode(data))

    def close(self) -> None:
        self._closer()
        self.fd = -1


def _decode(data: bytes) -> list[Event]:
    out = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        wd, mask, cookie, size = _HEADER.unpack_from(data, pos)
        pos += _HEADER.size
        name = data[pos:pos + size].split(b"\0", 1)[0]
        pos += size
        out.append(Event(wd, mask, cookie, os.fsdecode(name)))
    return out
