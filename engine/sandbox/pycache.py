"""The folder where commands' python keeps its bytecode, and the sweep of those left behind.

Each run's sandbox points ``PYTHONPYCACHEPREFIX`` at a folder of its own outside the
workspace (``Survey.pycache``), removed when the run ends. A run that is killed cannot remove
it, so each folder has a lock file beside it, held for the run's life: a later run that can
take the lock knows its owner is gone (the kernel drops a dead process's locks, whatever
its pid namespace) and removes both. The cost follows the work: one listing of the temporary
folder per run, on the survey's thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import tempfile

PREFIX = "turnstile-pycache-"
LOCK = ".lock"


def claim() -> tuple[str, int]:
    """A new bytecode folder and the descriptor holding its lock (the lock file first, so
    a sweep never finds the folder without it)."""
    fd, lock = tempfile.mkstemp(prefix=PREFIX, suffix=LOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        folder = lock.removesuffix(LOCK)
        os.mkdir(folder, 0o700)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise
    return folder, fd


def release(folder: str, fd: int) -> None:
    """Remove a folder ``claim`` made, then its lock file, and let the lock go."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.unlink(folder + LOCK)
    with contextlib.suppress(OSError):
        os.close(fd)


def sweep(parent: str | None = None) -> list[str]:
    """Remove the bytecode folders in ``parent`` (the temporary folder) whose run is gone:
    their lock can be taken. Returns the folders removed."""
    removed: list[str] = []
    base = parent or tempfile.gettempdir()
    for lock in glob.glob(os.path.join(glob.escape(base), PREFIX + "*" + LOCK)):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its run is alive
            os.close(fd)
            continue
        folder = lock.removesuffix(LOCK)
        release(folder, fd)
        removed.append(folder)
    return removed
