"""Inside the sandbox, before the command: files shown as symlinks to the command's private copies.

Bubblewrap runs this file as a confined command's first program (``python -I -S mountlink.py
LINK OVER [LINK OVER ...] -- ARGV``) with ``CAP_SYS_ADMIN`` and ``CAP_SETPCAP`` in the
sandbox's own namespaces (``-I``: no ``PYTHON*`` variable, no folder of the workspace on its
path). In a mount namespace of its own (``own_mounts``) it mounts each symlink ``LINK`` over
the file ``OVER`` (``open_tree`` + ``move_mount``, which can mount a symlink itself): git
writes a configuration as ``FILE.lock`` renamed over ``FILE``, following ``FILE`` when it is a
symlink, so it writes the copy the symlink names, never the host's file (a rename over a
bind-mounted copy fails with EBUSY). Then it drops every capability (bounding set, ambient,
permitted), checks in ``/proc/self/status`` that none is left, and executes ``ARGV``.

A mount that fails (a kernel before 5.2) leaves ``OVER`` as it was, read-only, and says so in
one line on stderr. The engine never imports this module; it uses the standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys

OPEN_TREE_CLONE = 1
AT_SYMLINK_NOFOLLOW = 0x100
AT_FDCWD = -100
MOVE_MOUNT_F_EMPTY_PATH = 0x4
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429
"""The same numbers on every architecture Linux added them to at once (5.2)."""
CLONE_NEWNS = 0x00020000
MS_REC, MS_SLAVE = 0x4000, 0x80000
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAP_VERSION_3 = 0x20080522
CAPS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def own_mounts(libc: ctypes.CDLL) -> str | None:
    """A mount namespace of this process's own: where bubblewrap runs the command in a user
    namespace nested in the one owning the sandbox's mounts (as for a user other than root),
    mounting needs one. Its mounts stay slaves: nothing mounted here reaches another."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"unshare: {os.strerror(ctypes.get_errno())}"
    if libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None) != 0:
        return f"mount --make-rslave /: {os.strerror(ctypes.get_errno())}"
    return None


def mount_link(libc: ctypes.CDLL, link: str, over: str) -> str | None:
    """Mount the symlink ``link`` over ``over``; why not, or None."""
    fd = libc.syscall(SYS_OPEN_TREE, AT_FDCWD, os.fsencode(link),
                      OPEN_TREE_CLONE | AT_SYMLINK_NOFOLLOW)
    if fd < 0:
        return f"open_tree: {os.strerror(ctypes.get_errno())}"
    try:
        if libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, os.fsencode(over),
                        MOVE_MOUNT_F_EMPTY_PATH) < 0:
            return f"move_mount: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return None


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability left, nor one to regain: bounding set, ambient, then the rest."""
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _Header(CAP_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def left_over() -> list[str]:
    """The capability sets in ``/proc/self/status`` that are not empty."""
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return [name for name in CAPS if int(fields.get(name, "1").strip(), 16) != 0]


def main(argv: list[str]) -> int:
    split = argv.index("--")
    pairs, command = argv[:split], argv[split + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    ready = own_mounts(libc) if pairs else None
    for link, over in zip(pairs[::2], pairs[1::2], strict=True):
        why = ready or mount_link(libc, link, over)
        if why is not None:
            print(f"[sandbox] {over} stays read-only: {why}", file=sys.stderr)
    try:
        drop_capabilities(libc)
    except OSError as exc:
        print(f"[sandbox] could not drop capabilities: {exc}", file=sys.stderr)
        return 126
    left = left_over()
    if left:
        print(f"[sandbox] capabilities left ({', '.join(left)}): not running the command",
              file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"[sandbox] {command[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
