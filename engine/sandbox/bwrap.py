"""The bubblewrap command line for one confined command, built from a plan of mounts.

Order matters (later mounts cover earlier ones): the host read-only, fresh ``/dev`` and
``/proc``, a private ``/tmp``, empty folders over the home folders (``home``), readable
folders that those would hide (PATH's folders in ``~/.local/bin``, toolchains, the engine's
installation under ``/tmp``), writable folders, the workspace, then the masks over secret
folders and the read-only binds over protected files inside anything writable; last, the home
folders' empty stand-ins are made read-only. Nothing here runs a process.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.sandbox.home import outermost, under

HOME_SECRETS: tuple[str, ...] = (
    ".ssh", ".aws", ".gnupg", ".netrc", ".docker", ".kube", ".config/gh", ".config/gcloud",
    ".azure", ".git-credentials", ".npmrc", ".pypirc", ".config/hub", ".password-store",
    ".local/share/keyrings", ".config/git/credentials", ".gem/credentials", ".cargo/credentials",
    ".cargo/credentials.toml", ".dotnet/corefx", ".cabal/config",
)
"""Under ``$HOME``: masked (an empty folder, or an empty file) inside the sandbox where
something around them is seen (the home is hidden whole otherwise: ``home``)."""
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


MOUNTLINK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mountlink.py")
REDIRECT_CAPS: tuple[str, ...] = ("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
"""What ``mountlink`` needs to mount the symlinks and then drop every capability, itself
included, before the command starts."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """Files a command writes through private copies (``gitcopy``): ``folder`` is bound
    writable and ``mountlink`` mounts each ``(link, over)`` symlink over its file."""

    folder: str
    links: tuple[tuple[str, str], ...]


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
    homes: tuple[str, ...] = ()
    """Folders replaced by an empty read-only one (people's homes, ``home.hidden_homes``):
    only ``readable``, ``writable`` and the workspace below them are seen."""
    files: tuple[tuple[str, str], ...] = ()
    """Files bound read-only over others, as ``(source, target)`` (a filtered copy of git's
    global configuration at ``~/.gitconfig``), after every other mount but the protected."""


def bwrap_argv(bwrap: str, command: Sequence[str], plan: MountPlan, cwd: str,
               redirect: Redirect | None = None) -> list[str]:
    """``bwrap ... -- command`` confining ``command`` to ``plan``, starting in ``cwd``; with a
    ``redirect``, ``mountlink`` runs first.

    What depends only on the plan's paths (which lies under which, the folders to pin) is
    worked out once per plan (``_layout``); what a command may have changed since the last
    one (which of those paths exist, and as what) is looked at every time."""
    layout = _layout(plan)
    argv = [bwrap, *layout.head]
    homes = [h for h in plan.homes if _is_real_dir(h)]
    for home in homes:
        argv += ["--tmpfs", home]
    for path in layout.shown:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    rw = [p for p in layout.rw if os.path.isdir(p)]
    for path in rw:
        argv += ["--bind", path, path]
    for path in layout.masks:
        argv += _mask(path)
    for source, target in plan.files:
        if os.path.isfile(source):
            argv += ["--ro-bind", source, target]
    open_roots = {*rw, PRIVATE_TMP}
    guarded = [p for p, roots in layout.guarded if not open_roots.isdisjoint(roots)
               and os.path.lexists(p)]
    for folder in _pinned(guarded, layout, frozenset(rw)):
        argv += ["--bind", folder, folder]
    for path in guarded:
        argv += ["--ro-bind", path, path]
    if redirect is not None:
        argv += ["--bind", redirect.folder, redirect.folder, *REDIRECT_CAPS]
        command = [sys.executable, "-I", "-S", MOUNTLINK,
                   *(p for pair in redirect.links for p in pair), "--", *command]
    for home in homes:
        argv += ["--remount-ro", home]
    argv += ["--chdir", cwd, "--", *command]
    return argv


@dataclass(frozen=True, slots=True)
class _Layout:
    """A plan's mounts as far as they follow from its paths alone."""

    head: tuple[str, ...]
    """The flags before the first bind: ``BASE_FLAGS``, the private ``/tmp``, the network."""
    shown: tuple[str, ...]
    """Readable folders the private ``/tmp`` or a hidden home would hide (bound back when
    they exist)."""
    masks: tuple[str, ...]
    """The plan's ``hidden`` paths a command could see: those below a hidden home only where
    something is bound back around them."""
    rw: tuple[str, ...]
    """Writable folders, then the workspace (bound when they are folders)."""
    guarded: tuple[tuple[str, frozenset[str]], ...]
    """Protected paths inside something writable, each with the writable roots it lies in."""
    between: Mapping[tuple[str, str], tuple[str, ...]]
    """Per protected path and writable root it lies in: the folders strictly between them,
    deepest first."""


@lru_cache(maxsize=32)
def _layout(plan: MountPlan) -> _Layout:
    head = [*BASE_FLAGS]
    if plan.tmp_size is not None:
        head += ["--size", str(plan.tmp_size)]
    head += ["--tmpfs", PRIVATE_TMP]
    if not plan.network:
        head.append("--unshare-net")
    rw = (*plan.writable, plan.workspace)
    roots = [r for r in (*rw, PRIVATE_TMP) if r]  # "" (no workspace) is never a folder
    guarded = tuple((p, frozenset(r for r in roots if under(p, r))) for p in plan.protected)
    guarded = tuple((p, inside) for p, inside in guarded if inside)
    between = {(p, r): _folders_between(p, r) for p, inside in guarded for r in inside}
    hiding = (PRIVATE_TMP, *plan.homes)
    shown = tuple(outermost(p for p in plan.readable if any(under(p, h) for h in hiding)))
    seen = (*shown, *(r for r in rw if r))
    masks = tuple(p for p in plan.hidden if not any(under(p, h) for h in plan.homes)
                  or any(under(p, v) for v in seen))
    return _Layout(tuple(head), shown, masks, rw, guarded, between)


def _pinned(guarded: Sequence[str], layout: _Layout, rw: frozenset[str]) -> list[str]:
    """Folders between a writable root and a protected path (``.git`` for ``.git/hooks``):
    bound onto themselves, they become mount points, which cannot be renamed or removed, so a
    command cannot move ``.git`` aside and put a fresh ``.git/hooks`` in its place."""
    out: list[str] = []
    roots = dict(layout.guarded)
    for path in guarded:
        root = max((r for r in roots[path] if r in rw), key=len, default=None)
        if root is None:
            continue
        for folder in layout.between[(path, root)]:
            if folder not in out and _is_real_dir(folder):
                out.append(folder)
    return sorted(out, key=len)


def _folders_between(path: str, root: str) -> tuple[str, ...]:
    """The folders strictly between ``root`` and ``path`` (both resolved), deepest first."""
    out = []
    top = root.rstrip("/") or "/"
    folder = os.path.dirname(path.rstrip("/") or "/")
    while folder != top and under(folder, root):
        out.append(folder)
        folder = os.path.dirname(folder)
    return tuple(out)


def _is_real_dir(path: str) -> bool:
    """A folder, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _mask(path: str) -> list[str]:
    """An empty read-only folder over a folder, ``/dev/null`` over anything else."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return []
    if stat.S_ISDIR(mode):
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", "/dev/null", path]


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
