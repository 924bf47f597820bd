"""The bubblewrap command line for one confined command, built from a plan of mounts.

Order matters (later mounts cover earlier ones): the host read-only, fresh ``/dev`` and
``/proc``, a private ``/tmp``, readable folders that ``/tmp`` would hide (a ``$HOME`` under
``/tmp``), writable folders, the workspace, then the masks over secret folders and the
read-only binds over protected files inside anything writable. Nothing here runs a process.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HOME_SECRETS: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".docker", ".kube", ".config/gh", ".config/gcloud",
    ".azure", ".git-credentials", ".npmrc", ".pypirc", ".config/hub", ".password-store",
    ".local/share/keyrings",
)
"""Under ``$HOME``: masked (an empty folder, or an empty file) inside the sandbox."""
HOST_SOCKETS: tuple[str, ...] = (
    "/run/user", "/var/run/docker.sock", "/run/docker.sock", "/run/containerd", "/run/podman",
    "/run/dbus",
)
"""Unix sockets a read-only bind does not stop (connect needs no write access): the container
daemons, the session bus and the per-user agents (ssh-agent, gpg-agent) are masked."""
PRIVATE_TMP = "/tmp"
BASE_FLAGS: tuple[str, ...] = (
    "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
    "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
    "--die-with-parent", "--new-session", "--cap-drop", "ALL",
)
"""Every confined command: read-only host, own ``/dev``, ``/proc`` and pid namespace, no
capabilities (as root bwrap keeps them all otherwise: ``mount -o remount,rw /`` would work),
killed with the engine, detached from the terminal (no TIOCSTI). The private ``/tmp`` follows
them (``--size`` before ``--tmpfs`` bounds it where this bwrap supports it)."""


@dataclass(frozen=True, slots=True)
class MountPlan:
    """What one confined command may see and change, as resolved absolute paths."""

    workspace: str
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    network: bool = False
    tmp_size: int | None = None
    """Bytes the private ``/tmp`` may hold; None: as much as the tmpfs default allows."""


def bwrap_argv(bwrap: str, command: Sequence[str], plan: MountPlan, cwd: str) -> list[str]:
    """``bwrap ... -- command`` confining ``command`` to ``plan``, starting in ``cwd``."""
    argv = [bwrap, *BASE_FLAGS]
    if plan.tmp_size is not None:
        argv += ["--size", str(plan.tmp_size)]
    argv += ["--tmpfs", PRIVATE_TMP]
    if not plan.network:
        argv.append("--unshare-net")
    for path in plan.readable:
        if _under(path, PRIVATE_TMP) and os.path.exists(path):
            argv += ["--ro-bind", path, path]
    rw = [p for p in (*plan.writable, plan.workspace) if os.path.isdir(p)]
    for path in rw:
        argv += ["--bind", path, path]
    for path in plan.hidden:
        argv += _mask(path)
    guarded = [p for p in plan.protected
               if os.path.lexists(p) and any(_under(p, w) for w in (*rw, PRIVATE_TMP))]
    for folder in _pinned(guarded, rw):
        argv += ["--bind", folder, folder]
    for path in guarded:
        argv += ["--ro-bind", path, path]
    argv += ["--chdir", cwd, "--", *command]
    return argv


def _pinned(guarded: Sequence[str], rw: Sequence[str]) -> list[str]:
    """Folders between a writable root and a protected path (``.git`` for ``.git/hooks``):
    bound onto themselves, they become mount points, which cannot be renamed or removed, so a
    command cannot move ``.git`` aside and put a fresh ``.git/hooks`` in its place."""
    out: list[str] = []
    for path in guarded:
        root = max((w for w in rw if _under(path, w)), key=len, default=None)
        if root is None:
            continue
        folder = Path(path).parent
        while folder != Path(root) and folder.is_relative_to(root):
            if folder.is_dir() and not folder.is_symlink() and str(folder) not in out:
                out.append(str(folder))
            folder = folder.parent
    return sorted(out, key=len)


def _mask(path: str) -> list[str]:
    """An empty read-only folder over a folder, ``/dev/null`` over anything else."""
    if os.path.isdir(path) and not os.path.islink(path):
        return ["--tmpfs", path, "--remount-ro", path]
    if os.path.lexists(path):
        return ["--ro-bind", "/dev/null", path]
    return []


def _under(path: str, folder: str) -> bool:
    return Path(path).is_relative_to(folder)


def home_secrets(home: str | None, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Resolved paths to mask: ``HOME_SECRETS`` under ``home``, ``HOST_SOCKETS``, and ``extra``
    (``~`` expanded against ``home``)."""
    out: list[str] = []
    if home:
        out += [os.path.realpath(os.path.join(home, rel)) for rel in HOME_SECRETS]
    out += list(HOST_SOCKETS)
    for item in extra:
        if home and (item == "~" or item.startswith("~/")):
            item = home + item[1:]
        out.append(os.path.realpath(item))
    return tuple(dict.fromkeys(out))
