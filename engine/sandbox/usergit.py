"""The user's git configuration as sandboxed commands see it: a copy holding only what local
work needs.

``~/.gitconfig`` is where people keep their identity, and also their tokens: a
``url."https://x-token:SECRET@host/".insteadOf``, an ``http.extraHeader`` with a bearer
token, a credential helper's settings, an alias that calls an API. Showing the file whole
would show those to every command. So the configuration git reads globally (``~/.gitconfig``
and ``$XDG_CONFIG_HOME/git/config``, their includes followed as git follows them in this
workspace) is flattened and filtered through an allow-list of sections (``SECTIONS``):
what nobody listed is left out, so a key nobody thought of stays hidden. Inside those
sections, ``DROPPED`` removes the keys that reach the network or run a program on every
command (``core.fsmonitor``). The copy is bound read-only at ``~/.gitconfig``; the originals
are not shown.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from engine.vocabulary.secrets import holds_credential

logger = logging.getLogger(__name__)

SECTIONS = frozenset({
    "user", "author", "committer", "core", "init", "color", "column", "diff", "difftool",
    "merge", "mergetool", "pull", "rebase", "rerere", "status", "log", "branch", "commit",
    "tag", "gpg", "advice", "filter", "safe", "gc", "pack", "index", "feature", "submodule",
    "interactive", "help", "i18n", "grep", "blame", "apply", "am", "clean", "format",
    "pretty", "worktree", "checkout", "stash", "notes", "sequence", "trailer", "versionsort",
    "transfer", "fetch", "push", "lfs", "maintenance", "add", "mailmap", "ui",
})
"""The sections a copy keeps: identity, signing, formatting, diff and merge behaviour, the
clean/smudge filters (``git lfs`` adds an object as a pointer only through its filter)."""
DROPPED = frozenset({
    "core.fsmonitor", "core.sshcommand", "core.askpass", "core.gitproxy", "core.proxy",
    "lfs.url", "lfs.pushurl", "lfs.accesstoken", "push.pushoption",
})
"""Keys left out of kept sections: a program git runs on every status (``core.fsmonitor``),
and what reaches or authenticates to a server (``lfs.url`` may hold a token). So is any key
whose name or value holds a URL's user or password or a token (``lfs.https://TOKEN@host/
.access``): ``_carries_credential``."""
_URL_USER = re.compile(r"://[^/@\s]+@")
MAX_BYTES = 1 << 20
"""A global configuration larger than this is not copied (none is shown)."""


@dataclass(frozen=True, slots=True)
class Copy:
    """The filtered configuration: its text, the keys and values kept, and the keys (names
    only) left out."""

    text: str
    items: tuple[tuple[str, str | None], ...]
    dropped: tuple[str, ...]

    def value(self, key: str) -> str | None:
        """The last value the copy keeps for ``key`` (``section.name``, any case)."""
        found = [v for k, v in self.items if k.lower() == key.lower()]
        return found[-1] if found else None


def entries(workspace: str, env: Mapping[str, str]) -> list[tuple[str, str | None]] | None:
    """The global configuration git reads in ``workspace`` (includes followed), as
    ``(key, value)`` in git's order (value None: a bare boolean key); None when git is
    missing or fails, an empty list when there is none."""
    keep = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "PATH")
    child = {k: env[k] for k in keep if k in env}
    try:
        done = subprocess.run(["git", "config", "--global", "--includes", "--list", "-z"],
                              cwd=workspace, env=child, capture_output=True, timeout=20,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.info("git's global configuration could not be read: %s", exc)
        return None
    if done.returncode not in (0, 1) or len(done.stdout) > MAX_BYTES:
        return None  # 1: no global configuration file
    out: list[tuple[str, str | None]] = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            key, sep, value = item.partition("\n")
            out.append((key, value if sep else None))
    return out


def kept(key: str, value: str | None = None) -> bool:
    """Whether the copy keeps ``key`` (``section[.subsection].name``, as git lists it) with
    ``value``."""
    section = key.split(".", 1)[0].lower()
    name = key.rsplit(".", 1)[-1].lower()
    return section in SECTIONS and key.lower() not in DROPPED and \
        f"{section}.{name}" not in DROPPED and not _carries_credential(key) and \
        not _carries_credential(value or "")


def _carries_credential(text: str) -> bool:
    return bool(_URL_USER.search(text)) or holds_credential(text)


def render(items: list[tuple[str, str | None]]) -> Copy:
    """The copy's text (one section header per key, in git's order, so a later value still
    wins) and the names of the keys left out (values never named)."""
    lines: list[str] = []
    dropped: list[str] = []
    keep: list[tuple[str, str | None]] = []
    for key, value in items:
        if not kept(key, value):
            dropped.append(_shown_name(key))
            continue
        keep.append((key, value))
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        header = f'[{section} "{_escaped(sub)}"]' if sub else f"[{section}]"
        lines.append(header)
        lines.append(f"\t{name}" if value is None else f'\t{name} = "{_escaped(value)}"')
    return Copy("\n".join(lines) + ("\n" if lines else ""), tuple(keep),
                tuple(dict.fromkeys(dropped)))


def _shown_name(key: str) -> str:
    """A dropped key's name without its subsection, which may hold a secret
    (``url.https://TOKEN@host/.insteadof`` is shown as ``url.*.insteadof``)."""
    section, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    return f"{section}.*.{name}" if sub else key


def _escaped(value: str) -> str:
    return (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t"))


def written(copy: Copy) -> str:
    """A read-only file holding ``copy``'s text, named by its content in a folder only this
    user can enter (so runs with the same configuration share one file, and none is left
    per run)."""
    folder = os.path.join(tempfile.gettempdir(), f"turnstile-gitconfig-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode) or \
            stat.S_IMODE(info.st_mode) != 0o700:
        folder = tempfile.mkdtemp(prefix="turnstile-gitconfig-")  # someone else's: a new one
    data = copy.text.encode("utf-8", "surrogateescape")
    path = os.path.join(folder, hashlib.sha256(data).hexdigest()[:32])
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return path
    except OSError:
        pass
    fd, part = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(part, 0o444)
    os.replace(part, path)
    return path


NAMED_FILES = ("core.excludesfile", "core.attributesfile", "core.hookspath")
"""Kept keys whose value is a file or folder git reads: shown, so that a file a user ignores
everywhere stays ignored inside."""


@dataclass(frozen=True, slots=True)
class StandIn:
    """The copy standing in for the user's global git configuration in the sandbox."""

    source: str
    """The copy's file on this machine ("" when none could be made)."""
    target: str
    """Where it is bound read-only (``~/.gitconfig``; "" when nowhere)."""
    masked: tuple[str, ...]
    """The original files git would read besides the target, masked."""
    named: tuple[str, ...]
    """The files the kept keys name (``NAMED_FILES``), resolved, existing."""
    dropped: tuple[str, ...]


def stand_in(workspace: str, env: Mapping[str, str], homes: tuple[str, ...]
             ) -> StandIn | None:
    """The copy of the global configuration git reads here, and where it goes: over
    ``~/.gitconfig`` (or the file ``GIT_CONFIG_GLOBAL`` names) where that exists or lies in
    a hidden home (the empty folder gives it a place). None when there is no global
    configuration. When no copy can be made (git missing), the originals are masked:
    nothing unfiltered is shown."""
    home = env.get("HOME", "")
    if not os.path.isabs(home):
        return None
    real_home = os.path.realpath(home)
    usual = os.path.join(real_home, ".gitconfig")
    config_home = env.get("XDG_CONFIG_HOME", "")
    xdg = os.path.join(config_home if os.path.isabs(config_home)
                       else os.path.join(home, ".config"), "git", "config")
    chosen = env.get("GIT_CONFIG_GLOBAL", "")
    target = os.path.realpath(chosen) if os.path.isabs(chosen) else usual  # read instead
    originals = [os.path.realpath(p) for p in (usual, xdg, chosen)
                 if p and os.path.isabs(p) and os.path.isfile(p)]
    if not originals:
        return None
    found = entries(workspace, env)
    folder = os.path.dirname(target)
    placeable = os.path.isfile(target) or any(
        folder == h or folder.startswith(h + "/") for h in homes)
    if found is None or not placeable:
        return StandIn("", "", tuple(dict.fromkeys(originals)), (), ())
    copy = render(found)
    named = [os.path.realpath(_expanded(v, real_home)) for key in NAMED_FILES
             if (v := copy.value(key))]
    return StandIn(written(copy), target, tuple(p for p in dict.fromkeys(originals)
                                                if p != target),
                   tuple(p for p in dict.fromkeys(named) if os.path.exists(p)), copy.dropped)


def _expanded(value: str, home: str) -> str:
    """A path value as git reads it: ``~/`` is the home; a relative one is taken from the
    home, where the global configuration lies."""
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    return value if os.path.isabs(value) else os.path.join(home, value)
