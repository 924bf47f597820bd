"""Path confinement: judging a path the way a tool or a shell could end up using it.

A path is expanded like a shell would (``~``, ``$VAR``, ``${VAR}``; an unset variable fails
closed), never executed (``$(...)`` and backticks stay literal), resolved (``..``, every existing
symlink, the parent of a not-yet-existing tail) and compared with the workspace and the extra
roots by path components, never by string prefix. Control characters are refused.

Decisions: inside the workspace (or a writable root) reads and writes are ``allow``, except
writes to sensitive files (``.git/``, ``.env*``, keys) which are ``ask``; inside a read-only
root writes are ``deny``; outside, reads are ``ask`` and writes ``deny``.

Refused whatever the whitelist says: per-process aliases (``/proc/*/root``, ``/proc/*/cwd``,
``/proc/*/fd/*``, ``/dev/fd/*``) met anywhere on the way, since they resolve differently in the
process that later opens them; writes to shell startup files (a line there runs in every later
shell); writes to a file with hard links outside the workspace (or links that cannot be
counted). ``~+`` is the working directory and ``~-`` the previous one.

The common case costs one ``stat`` of the workspace and one ``lstat`` per component below it,
and no ``readlink``: a path with plain components that ``components_below`` proves to resolve
to itself inside the workspace (the workspace still the directory found with no link above it,
no link below, nothing missing, no alias) gets the verdict full resolution would give;
anything else goes through full resolution.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from engine.permissions.words import printable
from engine.sandbox.home import HOME_FOLDERS

PathDecision = Literal["allow", "ask", "deny"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_VAR = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|([0-9@*#?$!-]))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

SENSITIVE_DIRS = frozenset({".git", ".ssh", ".gnupg", ".aws", ".kube", ".docker"})
"""Directories whose contents are credentials or code that tools run (git hooks, config)."""
SENSITIVE_NAMES = (
    ".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".netrc", ".npmrc", ".pypirc", "*.p12", "*.pfx", ".git-credentials",
)
"""File-name globs of secrets; writing them is always asked."""
STARTUP_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
    ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login",
    ".logout", ".inputrc", ".envrc", "config.fish", "bash.bashrc", "zshrc", "zshenv", "profile",
    "environment", ".pam_environment", ".xprofile", ".xinitrc", ".xsession", ".bash_aliases",
    ".bash_functions", ".zsh_aliases", ".aliases",
})
"""Files a shell (or login) reads and runs at start: a line written there fires later (git
hooks, ``~/.ssh/rc`` and fish's function directories are judged the same way)."""
_STARTUP_WHY = "a startup file (a shell's, python's) or a hook runs later"
PYTHON_STARTUP = frozenset({"sitecustomize.py", "usercustomize.py"})
"""Modules python imports at start when they are on its path (with ``*.pth`` files)."""
_STARTUP_SYSTEM = re.compile(r"^/etc/(?:profile\.d/|bash_completion\.d/|zsh/|fish/)")
_ALIAS = re.compile(r"^/(?:proc/(?:self|thread-self|\d+)(?:/task/\d+)?/(?:root|cwd|fd|"
                    r"map_files|exe)|dev/fd)(?:/|$)")
_FD_TABLE = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/(?:fd|map_files)$")
"""A process's table of open files, listed: names, not a path through one of them."""
_SENSITIVE_NAME = re.compile("|".join(fnmatch.translate(p) for p in SENSITIVE_NAMES))
"""``SENSITIVE_NAMES`` as one pattern: ``fnmatchcase`` of any of them, compiled once."""
MAX_LINK_SCAN = 20_000
"""Directory entries visited to count a file's hard links inside the workspace."""


@dataclass(frozen=True, slots=True)
class Root:
    """An extra directory the agent may use besides the workspace."""

    path: Path
    """Relative paths are taken from the workspace."""
    writable: bool = False


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """How a path would be used and what the permission layer says about it."""

    inside: bool
    """Inside the workspace or one of the extra roots, after expansion and resolution."""
    resolved: str
    """The absolute resolved path ("" when the path could not be expanded)."""
    decision: PathDecision
    reason: str
    sensitive: bool = False
    """Inside the whitelist and a secret or tool configuration (``.git/``, ``.env``, keys)."""


class _Unexpandable(Exception):
    """The path cannot be expanded safely (unset variable, ``~user``, complex ``${...}``)."""


def judge_path(path: str, workspace: Path, *, roots: Sequence[Root] = (),
               env: Mapping[str, str] | None = None, for_write: bool = False) -> PathVerdict:
    """Expand ``path`` as a shell would, resolve it, and judge it against the whitelist."""
    if _CONTROL.search(path):
        return _refused(f"path {path!r} contains a control character")
    try:
        expanded = expand_path(path, os.environ if env is None else env, str(workspace))
    except _Unexpandable as exc:
        return _refused(f"path {path!r} cannot be expanded safely: {exc}")
    return judge_literal(expanded, workspace, roots=roots, for_write=for_write)


def expand_path(path: str, env: Mapping[str, str], cwd: str | None = None) -> str:
    """``~``, ``~+``, ``~-`` and ``$VAR``/``${VAR}`` expanded from ``env``; ``$(...)`` and
    backticks stay literal. ``~+`` is ``cwd`` (the workspace for a tool), ``~-`` needs
    ``OLDPWD``."""
    if path[:2] in ("~+", "~-") and (len(path) == 2 or path[2] == "/"):
        base = cwd if path[1] == "+" else env.get("OLDPWD")
        if not base:
            raise _Unexpandable(f"{path[:2]} has no known value here")
        return base + path[2:]
    if path == "~" or path.startswith("~/"):
        home = env.get("HOME")
        if not home:
            raise _Unexpandable("HOME is not set")
        path = home + path[1:]
    elif path.startswith("~"):
        raise _Unexpandable("~user paths are not expanded")
    return _VAR.sub(lambda m: _var_value(m, env), path)


def _var_value(m: re.Match[str], env: Mapping[str, str]) -> str:
    braced, plain, special = m.group(1), m.group(2), m.group(3)
    if special is not None:
        raise _Unexpandable(f"${special} has no value outside a running shell")
    name = plain if plain is not None else braced
    if braced is not None and not _NAME.match(braced):
        raise _Unexpandable(f"${{{braced}}} is not a plain variable")
    value = env.get(name or "")
    if value is None:
        raise _Unexpandable(f"${name} is not set")
    if _CONTROL.search(value):
        raise _Unexpandable(f"${name} contains a control character")
    return value


def judge_literal(path: str, workspace: Path, *, roots: Sequence[Root] = (),
                  for_write: bool = False, cwd: Path | None = None) -> PathVerdict:
    """Judge an already-expanded path (relative paths are taken from ``cwd`` or the workspace)."""
    if _CONTROL.search(path):
        return _refused(f"path {path!r} contains a control character")
    ws = _resolved_dir(str(workspace))
    if cwd is None:
        below = components_below(path, workspace)
        if below is not None:
            return _judge_below(path, ws, below, for_write)
    base = ws if cwd is None else _resolved_dir(str(cwd))
    joined = os.path.join(base, path)
    alias = process_alias(joined)
    if alias:
        return _refused(f"path {path!r} goes through {alias}, which names a different file "
                        "in each process")
    try:
        resolved = resolve(joined)
    except OSError as exc:
        return _refused(f"path {path!r} cannot be resolved: {exc.strerror or exc}")
    target = Path(resolved)
    if for_write and is_startup_file(resolved):
        return PathVerdict(target.is_relative_to(ws), resolved, "deny",
                           f"write to {resolved}: {_STARTUP_WHY}")
    if for_write:
        links = _outside_links(resolved, ws)
        if links:
            return PathVerdict(False, resolved, "deny", f"write to {resolved}: {links}")
    if target.is_relative_to(ws):
        return _inside(path, resolved, target.relative_to(ws).parts, True, for_write,
                       "the workspace")
    for root in roots:
        root_dir = Path(_resolved_dir(str(ws / root.path)))
        if target.is_relative_to(root_dir):
            where = f"root {root.path}"
            return _inside(path, resolved, target.relative_to(root_dir).parts, root.writable,
                           for_write, where)
    if for_write:
        return PathVerdict(False, resolved, "deny",
                           f"write to {resolved} outside the workspace")
    return PathVerdict(False, resolved, "ask", f"read of {resolved} outside the workspace")


def _judge_below(path: str, ws: Path, parts: tuple[str, ...], for_write: bool) -> PathVerdict:
    """``judge_literal`` for a path ``components_below`` proved to resolve to itself inside
    the workspace: the same checks in the same order, minus the resolution."""
    resolved = "/".join((str(ws).rstrip("/"), *parts))
    if for_write and is_startup_file(resolved):
        return PathVerdict(True, resolved, "deny",
                           f"write to {resolved}: {_STARTUP_WHY}")
    if for_write:
        links = _outside_links(resolved, ws)
        if links:
            return PathVerdict(False, resolved, "deny", f"write to {resolved}: {links}")
    return _inside(path, resolved, parts, True, for_write, "the workspace")


def components_below(path: str, workspace: Path) -> tuple[str, ...] | None:
    """The components of ``path`` below the resolved workspace when ``path`` provably resolves
    to itself there, else None (then ``resolve`` decides, the slow way).

    Proof, as ``os.path.realpath`` would walk it: ``path`` is relative (or absolute under the
    resolved workspace) with plain components only (no empty, ``.`` or ``..``), no prefix of
    it is a per-process alias, the workspace's name still leads to the directory it named when
    no component from ``/`` down was a link (``_root_unchanged``), and every component below
    it exists and is not a symbolic link right now (one ``lstat`` each, the calls ``realpath``
    makes). Anything else (a link anywhere, a missing tail, an error) is left to the full
    resolution, whose answer then stands.
    """
    root = str(_resolved_dir(str(workspace)))
    if root == "/":
        return None
    if path.startswith("/"):
        if not path.startswith(root + "/"):
            return None
        path = path[len(root) + 1:]
    parts = tuple(path.split("/"))
    if not _NOT_PLAIN.isdisjoint(parts) or _ALIAS.match(f"{root}/{path}"):
        return None
    try:
        if not _root_unchanged(root):
            return None
        cur = root
        for part in parts:
            cur = f"{cur}/{part}"
            if stat.S_ISLNK(os.lstat(cur).st_mode):
                return None
    except (OSError, ValueError):
        return None
    return parts


_NOT_PLAIN = frozenset({"", ".", ".."})

_PROVEN_ROOTS: dict[str, tuple[int, int]] = {}
"""Resolved workspaces -> the device and inode of the directory each named when every component
of its name, from ``/`` down, was last found not to be a link."""
MAX_PROVEN_ROOTS = 4096
"""A long-lived server forgets them all past this many (each is then proven again)."""


def _root_unchanged(root: str) -> bool:
    """Whether the resolved directory name ``root`` still leads to the directory it named when
    no component of it was a link. One ``stat``, which follows links, answers when it reaches
    that same directory (a link swapped in above it leads elsewhere, and a name that reaches the
    same directory is as good as the one resolved); otherwise every component is looked at with
    ``lstat``, the calls ``realpath`` makes, and the directory is remembered if none is a link.
    Raises ``OSError`` when a component is missing."""
    st = os.stat(root)
    if _PROVEN_ROOTS.get(root) == (st.st_dev, st.st_ino):
        return True
    for prefix in _prefixes(root):
        st = os.lstat(prefix)
        if stat.S_ISLNK(st.st_mode):
            return False
    if len(_PROVEN_ROOTS) >= MAX_PROVEN_ROOTS:
        _PROVEN_ROOTS.clear()
    _PROVEN_ROOTS[root] = (st.st_dev, st.st_ino)  # the root's own, taken with no link followed
    return True


@lru_cache(maxsize=64)
def _prefixes(root: str) -> tuple[str, ...]:
    """``/a``, ``/a/b``, ``/a/b/c`` for ``/a/b/c``: the names ``realpath`` checks on its way."""
    names = root.strip("/").split("/")
    return tuple("/" + "/".join(names[:i]) for i in range(1, len(names) + 1))


def process_alias(path: str) -> str:
    """The ``/proc/PID/{root,cwd,fd}`` or ``/dev/fd`` alias met while resolving ``path``
    (lexically or through a symbolic link), or "" when there is none."""
    todo = [p for p in path.split("/") if p]
    cur = "/"
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == ".":
            continue
        if part == "..":
            cur = os.path.dirname(cur) or "/"
            continue
        nxt = os.path.join(cur, part)
        m = _ALIAS.match(nxt)
        if m and (todo or not _FD_TABLE.match(nxt)):  # ls /proc/PID/fd: the table itself
            return m.group(0).rstrip("/")
        try:
            target = os.readlink(nxt)
        except OSError:
            cur = nxt
            continue
        hops += 1
        if hops > 40:
            return ""
        todo = [p for p in target.split("/") if p] + todo
        cur = "/" if target.startswith("/") else cur
    return ""


def is_startup_file(resolved: str) -> bool:
    """A file a shell runs at start (``~/.bashrc``, ``/etc/profile.d/*``, ``.envrc``)."""
    name = os.path.basename(resolved)
    if _STARTUP_SYSTEM.match(resolved):
        return True
    if name in ("profile", "environment", "zshrc", "zshenv", "bash.bashrc"):
        return resolved.startswith("/etc/")
    if name == "config.fish" or "/fish/functions/" in resolved or "/fish/conf.d/" in resolved:
        return "/fish/" in resolved
    if name == "rc" and resolved.endswith("/.ssh/rc"):
        return True
    if "/.git/hooks/" in resolved and not name.endswith(".sample"):
        return True
    if name.endswith(".pth") or name in PYTHON_STARTUP:
        return True  # python runs a .pth's import lines, and these modules, at every start
    return name in STARTUP_FILES


def _outside_links(resolved: str, ws: Path) -> str:
    """Why a write through a hard-linked file may change a file outside (or "" when not)."""
    try:
        st = os.stat(resolved)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1:
        return ""
    inside = _links_inside(ws, st.st_dev, st.st_ino, st.st_nlink)
    if inside is None:
        return f"it has {st.st_nlink} hard links that could not all be found"
    if inside < st.st_nlink:
        return f"{st.st_nlink - inside} of its {st.st_nlink} hard links are outside the workspace"
    return ""


def _links_inside(ws: Path, dev: int, ino: int, nlink: int) -> int | None:
    """How many names of inode (dev, ino) the workspace holds; None when too big to count
    (at most ``MAX_LINK_SCAN`` entries, so a large workspace costs a bounded walk and the
    write is asked about). ``.git`` is not entered: git's objects are often hard links of
    each other and would use up the budget; a link found only there counts as outside,
    which fails closed."""
    found = seen = 0
    for root, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            seen += 1
            if seen > MAX_LINK_SCAN:
                return None
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if st.st_ino == ino and st.st_dev == dev:
                found += 1
                if found >= nlink:
                    return found
        seen += len(dirs)
    return found


def resolve(path: str) -> str:
    """Absolute path with ``..`` and every existing symlink resolved; loops raise ``OSError``."""
    try:
        return os.path.realpath(path, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.realpath(path)


@lru_cache(maxsize=64)
def _resolved_dir(path: str) -> Path:
    return Path(os.path.realpath(path))


def resolved_workspace(workspace: Path) -> Path:
    """The workspace as ``judge_literal`` sees it (resolved once, memoised): rules match paths
    relative to this same root."""
    return _resolved_dir(str(workspace))


def _inside(path: str, resolved: str, parts: tuple[str, ...], writable: bool, for_write: bool,
            where: str) -> PathVerdict:
    sensitive = _sensitive_parts(parts)
    if for_write and not writable:
        return PathVerdict(True, resolved, "deny", f"{where} is read-only: {resolved}", sensitive)
    if for_write and sensitive:
        return PathVerdict(True, resolved, "ask",
                           f"write to sensitive file {'/'.join(parts) or '.'}",
                           sensitive)
    verb = "write" if for_write else "read"
    return PathVerdict(True, resolved, "allow", f"{verb} inside {where}", sensitive)


CREDENTIAL_STORES = re.compile(
    r"/\.config/(?:gh|hub|gcloud|op|rclone|doctl|git/credentials)(?:/|$)|/\.azure(?:/|$)"
    r"|/\.vault-token$|/\.terraform\.d/credentials|/\.cargo/credentials|/\.gem/credentials"
    r"|/\.password-store(?:/|$)|/\.local/share/keyrings(?:/|$)|/\.pgpass$|/\.my\.cnf$"
    r"|/\.boto$|/\.s3cfg$|/\.dockercfg$|^/etc/(?:shadow|gshadow)$|/\.kube/config$"
    r"|/\.m2/settings(?:-security)?\.xml$|/\.gradle/gradle\.properties$"
    r"|/\.(?:bash|zsh|sh|python|psql|mysql|sqlite|node_repl|rediscli|irb|pry)_?history$"
    r"|/\.histfile$|/\.local/share/fish/fish_history$|^/proc/[^/]+/(?:task/\d+/)?environ$")
"""Where tools keep logins and tokens, besides ``SENSITIVE_DIRS`` and ``SENSITIVE_NAMES`` (a
shell's or client's history holds the tokens typed on command lines; a process's
``environ`` holds its environment's)."""


def holds_credentials(path: str) -> bool:
    """Whether an absolute path is a credential or a folder of them (``~/.ssh``,
    ``~/.config/gh/hosts.yml``, ``~/.aws/credentials``, a ``*.pem``)."""
    return is_sensitive(Path(path)) or CREDENTIAL_STORES.search(path) is not None


def is_private(path: str, home: str | None) -> bool:
    """Whether a resolved path outside the workspace is someone's rather than the system's:
    below a home folder (``$HOME``, ``/root``, ``/home/*``), or kept from other users by its
    own mode or a folder's on the way (``/etc/shadow``, ``/proc/self/environ``, a ``0700``
    folder). Holds for files nobody listed: a token in ``~/.config/some-app`` included.
    Only a person or a policy rule may allow reading one (``deny`` under ``--approval
    auto``)."""
    if not os.path.isabs(path):
        return True  # fail closed: judged paths are resolved
    homes = [h for h in (*HOME_FOLDERS, home or "") if h and os.path.isabs(h)
             and os.path.normpath(h) != "/"]
    for h in homes:
        h = os.path.normpath(h)
        if (path == h and h not in HOME_FOLDERS[1:]) or path.startswith(h + "/"):
            return True
    return _kept_from_others(path)


def _kept_from_others(path: str) -> bool:
    """The file (or folder) lacks read permission for others, or a folder above it lacks
    search permission; a path that does not exist is judged by what exists of it. Never
    cached: a mode may change between two commands."""
    probe = path
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
    try:
        st = os.stat(probe)
    except OSError:
        return True
    if not st.st_mode & stat.S_IROTH:
        return True
    parent = os.path.dirname(probe)
    while parent != probe:
        try:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return True
        except OSError:
            return True
        probe, parent = parent, os.path.dirname(parent)
    return False


def is_sensitive(rel: Path) -> bool:
    """Whether a path relative to a root is a secret or configuration that tools execute."""
    return _sensitive_parts(rel.parts)


def _sensitive_parts(parts: tuple[str, ...]) -> bool:
    if not SENSITIVE_DIRS.isdisjoint(parts):
        return True
    return _SENSITIVE_NAME.match(parts[-1] if parts else "") is not None


def _refused(reason: str) -> PathVerdict:
    return PathVerdict(False, "", "deny", reason)


def check_path_json(path: str, workspace: Path, *, roots: Sequence[Root] = (),
                    for_write: bool = False, env: Mapping[str, str] | None = None
                    ) -> dict[str, Any]:
    """The JSON object printed by ``engine policy check-path``."""
    v = judge_path(path, workspace, roots=roots, env=env, for_write=for_write)
    out: dict[str, Any] = printable({"inside": v.inside, "resolved": v.resolved,
                                     "decision": v.decision, "reason": v.reason})
    return out
