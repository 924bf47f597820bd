"""The engine's one door to the ``git`` program, shut to every program a repository can name.

A workspace's ``.git/config`` (and any file it includes) can name programs that git runs on
its own: ``core.fsmonitor`` on every index read, ``filter.<driver>.clean``/``process`` when a
file's content is compared, hooks, pagers, ``diff.external``, textconv, credential helpers,
``core.sshCommand``. The engine reads repositories it does not trust, so every call made here:

- runs with a fresh environment (``PATH``, ``HOME``, ``LC_ALL=C`` and the variables below
  only: no ``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_CONFIG_PARAMETERS`` or pager from the
  engine's own environment), without the system and global config files, with discovery
  stopped at the workspace (``GIT_CEILING_DIRECTORIES``: a workspace inside another
  repository is not that repository);
- overrides every key that runs a program on the command line (``HARDENING``), which wins over
  any file; filter and diff drivers have free names, so the ones the configuration defines are
  listed first (``git config --get-regexp``, which runs nothing) and each is blanked
  (``driver_overrides``; an empty command is no command to git);
- takes no optional locks (the user's index is never rewritten) and no submodule is entered.

Only ``status`` and ``ls-files --modified`` (for an entry whose time cannot tell) compare file
contents and so could reach a filter; both run with the drivers blanked. Other ``ls-files``
calls, ``cat-file`` and ``config`` never run one. Failures (no git, not a repository, a
repository owned by another user, a timeout) raise ``GitUnavailable``; callers then fall back
to walking.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.vocabulary.errors import TurnstileError

logger = logging.getLogger(__name__)

GIT_TIMEOUT_S = 120.0
HARDENING: tuple[str, ...] = (
    "core.fsmonitor=false", "core.useBuiltinFSMonitor=false", "core.hooksPath=/dev/null",
    "core.pager=cat", "pager.status=false", "core.sshCommand=false", "core.askPass=",
    "core.gitProxy=", "core.editor=false", "credential.helper=", "diff.external=",
    "protocol.allow=never", "gc.auto=0", "maintenance.auto=false", "submodule.recurse=false",
    "status.submoduleSummary=false", "diff.ignoreSubmodules=all", "core.untrackedCache=keep",
    "core.alternateRefsCommand=", "core.quotePath=false", "status.relativePaths=false",
)
"""``-c`` settings of every call: each key that can name a program, set to none."""
_DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command")}


class GitUnavailable(TurnstileError):
    """git cannot answer for this workspace (not installed, not a repository, refused)."""


def repository(root: Path) -> bool:
    """Whether ``root`` is the top of a git working tree (``.git`` is a folder or a link file).

    A folder inside a repository is not one: its files are judged by walking it."""
    return os.path.lexists(os.path.join(root, ".git"))


def git_program() -> str | None:
    return shutil.which("git")


def environment(root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: nothing of the engine's own but PATH and HOME."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
           "GIT_NO_REPLACE_OBJECTS": "1", "GIT_PAGER": "cat", "PAGER": "cat",
           "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.realpath(root))}
    if "HOME" in os.environ:  # only for git's default global ignore file (patterns, no code)
        env["HOME"] = os.environ["HOME"]
    return env | (extra or {})


def command(root: Path, args: Sequence[str], overrides: Iterable[str] = ()) -> list[str]:
    """The argument vector of one hardened call."""
    argv = ["git", "--no-pager", "--no-optional-locks", "--literal-pathspecs",
            "--no-replace-objects", "-C", str(root)]
    for setting in (*HARDENING, *overrides):
        argv += ["-c", setting]
    return [*argv, *args]


def run(root: Path, args: Sequence[str], *, stdin: bytes | None = None,
        overrides: Iterable[str] = (), env: dict[str, str] | None = None,
        pass_fds: Sequence[int] = (), ok_codes: Sequence[int] = (0,),
        want_code: bool = False) -> Any:
    """git's standard output for ``args`` in ``root`` (``want_code``: whether it exited 0);
    ``GitUnavailable`` on any failure, an exit code outside ``ok_codes`` included."""
    if git_program() is None:
        raise GitUnavailable("git is not installed")
    try:
        proc = subprocess.run(command(root, args, overrides), input=stdin,
                              capture_output=True, env=environment(root, env),
                              timeout=GIT_TIMEOUT_S, pass_fds=tuple(pass_fds),
                              stdin=None if stdin is not None else subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git {args[0]}: {exc}") from exc
    if proc.returncode not in ok_codes:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise GitUnavailable(f"git {args[0]} exited {proc.returncode}: {tail[0]}")
    return proc.returncode == 0 if want_code else proc.stdout


def driver_overrides(root: Path) -> list[str]:
    """``-c`` settings blanking every filter and diff driver the configuration defines."""
    try:
        out = run(root, ["config", "-z", "--name-only", "--get-regexp", r"^(filter|diff)\."])
    except GitUnavailable:  # exit 1: no such key, nothing to blank
        return []
    drivers = sorted({d for key in out.decode("utf-8", "surrogateescape").split("\0")
                      if (d := _driver(key)) is not None})
    settings = [f"{kind}.{name}.{key}=" for kind, name in drivers for key in _DRIVER_KEYS[kind]]
    return settings + [f"filter.{name}.required=false" for kind, name in drivers
                       if kind == "filter"]


def _driver(key: str) -> tuple[str, str] | None:
    kind, _, rest = key.partition(".")
    name, _, _ = rest.rpartition(".")
    return (kind, name) if kind in _DRIVER_KEYS and name else None


def split_z(out: bytes) -> list[str]:
    """NUL-separated paths, decoded as the file system names them."""
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def ls_files(root: Path, *options: str, paths: Sequence[str] = (),
             index_fd: int | None = None) -> list[str]:
    """``git ls-files -z OPTIONS -- PATHS``: tracked files by default, in index order (of
    the index file open as ``index_fd`` when given, see ``index_blobs``)."""
    return split_z(run(root, ["ls-files", "-z", *options, "--", *paths], **_index(index_fd)))


def index_paths(root: Path, index_fd: int | None = None) -> bytes:
    """Every path of the index (or of ``index_fd``) as git prints it: each followed by a NUL,
    in index order, undecoded (a caller that needs a few of 100,000 paths decodes those)."""
    return bytes(run(root, ["ls-files", "-z"], **_index(index_fd)))


def staged(root: Path, index_fd: int | None = None,
           paths: Sequence[str] | None = None) -> dict[str, str]:
    """Path -> ``mode oid`` of every stage-0 entry of the index (or of ``index_fd``), or of
    those of ``paths`` (each taken literally: ``--literal-pathspecs``)."""
    named = [] if paths is None else ["--", *paths]
    if paths is not None and not paths:
        return {}
    out = run(root, ["ls-files", "-z", "--stage", *named], **_index(index_fd))
    entries = {}
    for record in out.split(b"\0"):
        head, _, name = record.partition(b"\t")
        fields = head.split(b" ")
        if len(fields) == 3 and fields[2] == b"0":
            entries[os.fsdecode(name)] = (fields[0] + b" " + fields[1]).decode()
    return entries


def _index(index_fd: int | None) -> dict[str, Any]:
    """The keyword arguments of ``run`` that make git read the index file open as
    ``index_fd`` (the descriptor is passed to git under the same number)."""
    if index_fd is None:
        return {}
    return {"env": {"GIT_INDEX_FILE": f"/dev/fd/{index_fd}"}, "pass_fds": (index_fd,)}


@dataclass(frozen=True, slots=True)
class Status:
    """``git status`` of a working tree against its index (not against HEAD)."""

    dirty: list[str] = field(default_factory=list)
    """Tracked files whose content may differ from the index (modified, deleted, unmerged)."""
    untracked: list[str] = field(default_factory=list)
    """Files git does not track and does not ignore, each named (``-uall``); ignored ones are
    not asked for (git then lists none of them, however many an ignored tree holds)."""


def status(root: Path) -> Status:
    """The working tree's state: dirty and untracked paths, filters blanked."""
    out = run(root, ["status", "--porcelain=v2", "-z", "--untracked-files=all",
                     "--ignore-submodules=all", "--no-renames"],
              overrides=driver_overrides(root))
    return parse_status(out)


def parse_status(out: bytes) -> Status:
    """Porcelain v2 with ``-z``: ``1``/``u`` lines carry the worktree state as the second
    letter of ``XY`` (``.``: same as the index)."""
    result = Status()
    for record in out.split(b"\0"):
        if not record:
            continue
        kind = record[:1]
        if kind in (b"1", b"u"):
            fields = record.split(b" ", 10 if kind == b"u" else 8)
            if fields[1][1:2] != b"." or kind == b"u":
                result.dirty.append(os.fsdecode(fields[-1]))
        elif kind == b"?":
            result.untracked.append(os.fsdecode(record[2:]))
    return result


@dataclass(frozen=True, slots=True)
class Worktree:
    """The working tree against its index, from one ``ls-files`` (no comparison with HEAD)."""

    dirty: list[str] = field(default_factory=list)
    """Tracked files whose content may differ from the index: modified (the content compared
    when only a time changed, as ``git status`` does), deleted, unmerged."""
    untracked: list[str] = field(default_factory=list)
    """Files neither tracked nor ignored, in folders that hold tracked files."""
    untracked_dirs: list[str] = field(default_factory=list)
    """Folders holding no tracked file and not ignored, named once without their contents
    (empty ones and ones holding only ignored files too)."""


def worktree(root: Path, index_fd: int | None = None) -> Worktree:
    """Modified, deleted and untracked paths against the index (or ``index_fd``), filters
    blanked: ``ls-files -t --modified --deleted --others --directory --exclude-standard``."""
    out = run(root, ["ls-files", "-z", "-t", "--modified", "--deleted", "--others",
                     "--directory", "--exclude-standard"],
              overrides=driver_overrides(root), **_index(index_fd))
    return parse_worktree(out)


def parse_worktree(out: bytes) -> Worktree:
    """``-t`` tags each record: ``? `` untracked (a folder ends with ``/``), any other tag a
    tracked entry (``C`` changed, ``R`` removed; an unmerged one repeats per stage)."""
    result = Worktree()
    dirty: dict[str, None] = {}
    for record in out.split(b"\0"):
        if len(record) < 3:
            continue
        name = os.fsdecode(record[2:])
        if record[:1] != b"?":
            dirty[name] = None
        elif name.endswith("/"):
            result.untracked_dirs.append(name[:-1])
        else:
            result.untracked.append(name)
    result.dirty.extend(dirty)
    return result


def index_blobs(root: Path, paths: Sequence[str], index_fd: int | None = None
                ) -> dict[str, bytes | None]:
    """The staged content of each path (stage 0) in the index, or in the index file open as
    ``index_fd`` (a copy kept from earlier: git replaces the index by renaming a new file over
    it, so a descriptor keeps the old one readable). None for a path the index does not hold.
    No filter or textconv runs: ``cat-file`` without ``--filters`` gives the stored bytes."""
    asked = [p for p in paths if "\n" not in p]
    if not asked:
        return {}
    lines = "".join(f":0:{p}\n" for p in asked).encode("utf-8", "surrogateescape")
    out = run(root, ["cat-file", "--batch"], stdin=lines, **_index(index_fd))
    return _parse_batch(asked, out)


def _parse_batch(asked: Sequence[str], out: bytes) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    pos = 0
    for path in asked:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) != 3 or header[-1] == b"missing":
            found[path] = None
            continue
        size = int(header[2])
        found[path] = out[pos:pos + size] if header[1] == b"blob" else None
        pos += size + 1
    return found
