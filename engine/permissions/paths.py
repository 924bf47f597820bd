"""Path confinement: judging a path the way a tool or a shell could end up using it.

A path is expanded like a shell would (``~``, ``$VAR``, ``${VAR}``; an unset variable fails
closed), never executed (``$(...)`` and backticks stay literal), resolved (``..``, every existing
symlink, the parent of a not-yet-existing tail) and compared with the workspace and the extra
roots by path components, never by string prefix. Control characters are refused.

Decisions: inside the workspace (or a writable root) reads and writes are ``allow``, except
writes to sensitive files (``.git/``, ``.env*``, keys) which are ``ask``; inside a read-only
root writes are ``deny``; outside, reads are ``ask`` and writes ``deny``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

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
        expanded = expand_path(path, os.environ if env is None else env)
    except _Unexpandable as exc:
        return _refused(f"path {path!r} cannot be expanded safely: {exc}")
    return judge_literal(expanded, workspace, roots=roots, for_write=for_write)


def expand_path(path: str, env: Mapping[str, str]) -> str:
    """``~`` and ``$VAR``/``${VAR}`` expanded from ``env``; ``$(...)`` and backticks literal."""
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
    base = ws if cwd is None else _resolved_dir(str(cwd))
    try:
        resolved = resolve(os.path.join(base, path))
    except OSError as exc:
        return _refused(f"path {path!r} cannot be resolved: {exc.strerror or exc}")
    target = Path(resolved)
    if target.is_relative_to(ws):
        return _inside(path, resolved, target.relative_to(ws), True, for_write, "the workspace")
    for root in roots:
        root_dir = Path(_resolved_dir(str(ws / root.path)))
        if target.is_relative_to(root_dir):
            where = f"root {root.path}"
            return _inside(path, resolved, target.relative_to(root_dir), root.writable,
                           for_write, where)
    if for_write:
        return PathVerdict(False, resolved, "deny",
                           f"write to {resolved} outside the workspace")
    return PathVerdict(False, resolved, "ask", f"read of {resolved} outside the workspace")


def resolve(path: str) -> str:
    """Absolute path with ``..`` and every existing symlink resolved; loops raise ``OSError``."""
    try:
        return os.path.realpath(path, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.realpath(path)


@lru_cache(maxsize=64)
def _resolved_dir(path: str) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: str, resolved: str, rel: Path, writable: bool, for_write: bool,
            where: str) -> PathVerdict:
    sensitive = is_sensitive(rel)
    if for_write and not writable:
        return PathVerdict(True, resolved, "deny", f"{where} is read-only: {resolved}", sensitive)
    if for_write and sensitive:
        return PathVerdict(True, resolved, "ask", f"write to sensitive file {rel.as_posix()}",
                           sensitive)
    verb = "write" if for_write else "read"
    return PathVerdict(True, resolved, "allow", f"{verb} inside {where}", sensitive)


def is_sensitive(rel: Path) -> bool:
    """Whether a path relative to a root is a secret or configuration that tools execute."""
    parts = rel.parts
    if any(part in SENSITIVE_DIRS for part in parts):
        return True
    name = parts[-1] if parts else ""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_NAMES)


def _refused(reason: str) -> PathVerdict:
    return PathVerdict(False, "", "deny", reason)


def check_path_json(path: str, workspace: Path, *, roots: Sequence[Root] = (),
                    for_write: bool = False, env: Mapping[str, str] | None = None
                    ) -> dict[str, Any]:
    """The JSON object printed by ``engine policy check-path``."""
    v = judge_path(path, workspace, roots=roots, env=env, for_write=for_write)
    return {"inside": v.inside, "resolved": v.resolved, "decision": v.decision,
            "reason": v.reason}
