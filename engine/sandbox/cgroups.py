"""A cgroup per confined command: the only bound on processes that holds for root.

The kernel exempts the global root user from ``RLIMIT_NPROC`` (whatever uid it has inside a user
namespace), so processes are counted by a ``pids`` cgroup, memory (``/tmp``'s pages included)
by a ``memory`` one. Where cgroup v2 offers a controller below this process's own cgroup it is
used, else the v1 hierarchy of that controller. The command joins its groups before bubblewrap
starts (``join_script``), so nothing it forks escapes them; ``Group.remove`` kills what is left
and removes them when it ends, which gives the memory back.

Joining costs a command little only when it moves itself as one thread: a write to a group's
``cgroup.procs`` (any pid, ``0`` included) write-locks every thread group of the system, which
waits for an RCU grace period (8-15 ms measured per command on a cgroup v1 host); writing ``0``
to a v1 group's ``tasks`` moves just the writer without that lock (0.3 ms). The joining process
is a single-threaded shell, so moving its one thread moves the whole process, and everything it
starts afterwards is born inside. cgroup v2 moves only whole processes (outside threaded
subtrees): there the shell writes ``0`` to ``cgroup.procs``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from functools import lru_cache

logger = logging.getLogger(__name__)

CONTROLLERS = ("pids", "memory")
_V2_FILES = {"pids": "pids.max", "memory": "memory.max"}
_V1_FILES = {"pids": "pids.max", "memory": "memory.limit_in_bytes"}
_COUNTER = itertools.count()
PREFIX = "turnstile-"
"""A group's name: this prefix, the creating engine's pid, a counter."""
ORPHAN_AGE_S = 60.0
"""An empty group this old whose engine is gone is a leftover (its engine was killed before
it could remove it): a command joins its group within moments of its creation."""
_swept: set[str] = set()
"""Parents this process has swept of leftovers (once each)."""
REMOVE_WITHIN_S = 0.5
"""How long ``Group.remove`` keeps retrying while the last processes are being reaped."""
RETRY_PAUSES_S = (0.0005, 0.001, 0.002, 0.005, 0.01)
"""Pauses between tries, then the last one repeated: a group is usually empty within a
millisecond of the command's end (bubblewrap's init finishing its exit), so the first pauses
are short."""


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where new groups for one controller go: a folder below this process's own cgroup."""

    controller: str
    parent: str
    v2: bool

    @property
    def limit_file(self) -> str:
        return (_V2_FILES if self.v2 else _V1_FILES)[self.controller]

    @property
    def join_file(self) -> str:
        """What a process writes ``0`` to in one of these groups to move itself in (see the
        module's docstring)."""
        return "cgroup.procs" if self.v2 else "tasks"


@dataclass(frozen=True, slots=True)
class Group:
    """One command's cgroups (one folder per hierarchy; v2 holds both controllers in one)."""

    folders: tuple[str, ...]
    join_files: tuple[str, ...] = ()
    """Per folder, the file the command's first process writes ``0`` to (see
    ``Hierarchy.join_file``)."""

    def remove(self) -> None:
        """Kill whatever is still in the groups, then remove them (retried while the last
        processes are being reaped)."""
        for folder in self.folders:
            if not _remove(folder):
                logger.warning("cgroup %s could not be removed", folder)


def _remove(folder: str) -> bool:
    """Kill the group's members and remove it, retrying until ``REMOVE_WITHIN_S``."""
    deadline = time.monotonic() + REMOVE_WITHIN_S
    pauses = itertools.chain(RETRY_PAUSES_S, itertools.repeat(RETRY_PAUSES_S[-1]))
    while True:
        _kill_members(folder)
        try:
            os.rmdir(folder)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(next(pauses))


def create(limits: dict[str, int]) -> Group | None:
    """A fresh group per controller in ``limits`` (``{"pids": 1024, "memory": bytes}``) that
    can be created here; None when none can."""
    name = f"{PREFIX}{os.getpid()}-{next(_COUNTER)}"
    folders: dict[str, str] = {}
    joins: dict[str, str] = {}
    for controller, value in limits.items():
        where = hierarchy(controller)
        if where is None:
            continue
        if where.parent not in _swept:
            _swept.add(where.parent)
            sweep_orphans(where.parent)
        folder = os.path.join(where.parent, name)
        try:
            if folder not in folders.values():
                os.mkdir(folder)
            with open(os.path.join(folder, where.limit_file), "w") as f:
                f.write(str(value))
            if controller == "memory":
                _no_swap_beyond(folder, where.v2, value)
        except OSError as exc:
            logger.warning("cannot limit %s in %s: %s", controller, folder, exc)
            continue
        folders[controller] = folder
        joins.setdefault(folder, os.path.join(folder, where.join_file))
    return Group(tuple(joins), tuple(joins.values())) if folders else None


def sweep_orphans(parent: str, min_age_s: float = ORPHAN_AGE_S) -> list[str]:
    """Remove the groups under ``parent`` left by engines that were killed (SIGKILL leaves no
    time to remove them): only empty ones, whose engine's pid is gone, older than
    ``min_age_s`` (so never a group another engine, perhaps in another pid namespace, has just
    made for a command about to join it). Returns the folders removed."""
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        pid = _owner(name)
        if pid is None or process_alive(pid):
            continue
        folder = os.path.join(parent, name)
        try:
            if now - os.stat(folder).st_mtime < min_age_s or _members(folder):
                continue
            os.rmdir(folder)
        except OSError:
            continue
        removed.append(folder)
    if removed:
        logger.info("removed %d cgroup(s) left by killed engines under %s", len(removed), parent)
    return removed


def _owner(name: str) -> int | None:
    """The pid in a group name ``turnstile-PID-N``; None for any other name."""
    if not name.startswith(PREFIX):
        return None
    pid, _, counter = name[len(PREFIX):].partition("-")
    return int(pid) if pid.isdigit() and counter.isdigit() else None


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True


def _members(folder: str) -> list[int]:
    try:
        with open(os.path.join(folder, "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _no_swap_beyond(folder: str, v2: bool, value: int) -> None:
    """Memory plus swap bounded too, where the kernel accounts swap: a command over its
    limit is stopped rather than swapped out."""
    name, limit = ("memory.swap.max", "0") if v2 else ("memory.memsw.limit_in_bytes",
                                                        str(value))
    with contextlib.suppress(OSError), open(os.path.join(folder, name), "w") as f:
        f.write(limit)


def enforceable() -> dict[str, bool]:
    """Which of ``CONTROLLERS`` a group can be created for here (tried, then removed)."""
    out = {}
    for controller in CONTROLLERS:
        group = create({controller: 1 << 30 if controller == "memory" else 4096})
        out[controller] = group is not None
        if group is not None:
            group.remove()
    return out


@lru_cache(maxsize=4)
def hierarchy(controller: str) -> Hierarchy | None:
    """Where this process may create groups for ``controller``: v2 first, then v1."""
    own = _own_cgroups()
    mounts = _mounts()
    v2_root = mounts.get("cgroup2")
    if v2_root is not None and "" in own:
        mine = os.path.join(v2_root, own[""].lstrip("/"))
        if _v2_offers(mine, controller, may_enable=True):
            return Hierarchy(controller, mine, True)
        # A cgroup holding processes cannot enable controllers for children (a v2 rule):
        # beside this process's own group, under its parent, where they are on.
        above = os.path.dirname(mine.rstrip("/"))
        if above.startswith(v2_root) and above != mine and _v2_offers(above, controller):
            return Hierarchy(controller, above, True)
    v1_root = mounts.get(controller)
    if v1_root is not None and controller in own:
        parent = os.path.join(v1_root, own[controller].lstrip("/"))
        if os.access(parent, os.W_OK):
            return Hierarchy(controller, parent, False)
    return None


def _v2_offers(parent: str, controller: str, may_enable: bool = False) -> bool:
    """The controller is on in ``parent``'s children (``cgroup.subtree_control``), or
    (``may_enable``) can be switched on there (it cannot while ``parent`` holds processes,
    unless it is the root)."""
    try:
        with open(os.path.join(parent, "cgroup.subtree_control")) as f:
            if controller in f.read().split():
                return os.access(parent, os.W_OK)
        if not may_enable:
            return False
        with open(os.path.join(parent, "cgroup.controllers")) as f:
            if controller not in f.read().split():
                return False
        with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
            f.write(f"+{controller}")
        return True
    except OSError:
        return False


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per v1 controller, and under ``""`` its v2 cgroup."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        _id, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            out[name] = path
    return out


def _mounts() -> dict[str, str]:
    """Mount points: ``cgroup2`` for the unified hierarchy, else the v1 controller's name."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            out.setdefault("cgroup2", fields[4])
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in CONTROLLERS:
                    out.setdefault(option, fields[4])
    return out


def _kill_members(folder: str) -> None:
    for pid in _members(folder):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def join_script(join_files: tuple[str, ...], cpu_s: int, file_size: int) -> list[str]:
    """The argument vector in front of ``bwrap``: a POSIX ``sh`` (the cheapest shell to
    start) that moves itself into the command's cgroups (``0`` to each of ``join_files``: the
    writer itself), sets the per-process limits (``ulimit -f`` counts 512-byte blocks in
    POSIX) and then becomes the rest of the vector."""
    script = ('for f; do [ "$f" = -- ] && break; echo 0 2>/dev/null > "$f" || '
              '{ echo "sandbox: cannot join the cgroup $f" >&2; exit 125; }; shift; done; '
              f'shift; ulimit -t {cpu_s} && ulimit -f {max(1, file_size // 512)} || exit 125; '
              'exec "$@"')
    return ["/bin/sh", "-c", script, "turnstile-limits", *join_files, "--"]
