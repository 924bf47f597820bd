"""Reading a file the classifier judges by what it holds (a makefile, a config file naming
plugins, a C header): only a small regular file, opened so that a fifo never blocks the
judgement. Anything else is None, and its caller treats it as code it cannot see."""

from __future__ import annotations

import os
import stat


def small_file(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path`` when it holds at most ``limit`` of them;
    None for a file past the bound, a fifo, a device, a dangling link or a missing file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a fifo: no wait
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None  # grown since the fstat: past the bound
