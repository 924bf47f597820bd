"""The runtime's own files and files that make later commands run code: never writable by a tool.

Inside the sandbox they are bound read-only over the writable workspace; for the write tools the
policy turns a write to them into ``deny``. The list is by resolved absolute path, so a symlink
in the workspace that points at one of them is judged by its target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

WORKSPACE_PROTECTED: tuple[str, ...] = (
    ".engine", ".git/hooks", ".git/config", ".git/info/attributes", ".envrc", ".env.local",
    ".vscode/tasks.json", ".vscode/settings.json", ".vscode/launch.json", ".idea/workspace.xml",
    ".devcontainer", ".pre-commit-config.yaml", ".turnstile",
)
"""Relative to the workspace: the engine's folder, git hooks and config (``core.hooksPath``,
``core.fsmonitor`` run code), direnv, editor task and launch files, dev containers, pre-commit."""


def protected_paths(workspace: Path,
                    run_files: Iterable[Path | str | None] = ()) -> tuple[str, ...]:
    """Resolved absolute paths no tool may write: ``WORKSPACE_PROTECTED`` under the workspace
    plus the run's own files (database, traces, machine, policy, MCP config). A run file that
contains the workspace (``.engine/workspaces`` of a golden run) is left out: everything beside
the workspace is outside it, so read-only in the sandbox and ``deny`` for the write tools."""
    ws = Path(os.path.realpath(workspace))
    out = [str(ws / rel) for rel in WORKSPACE_PROTECTED]
    if (ws / ".git").is_file():  # a worktree's pointer to its git folder (and so its hooks)
        out.append(str(ws / ".git"))
    for item in run_files:
        if not item:
            continue
        path = os.path.realpath(item)
        if not ws.is_relative_to(path):  # the folder holding this run's workspace stays usable
            out.append(path)
    return tuple(dict.fromkeys(out))


def is_protected(resolved: str, protected: Iterable[str]) -> bool:
    """Whether the resolved path ``resolved`` is one of ``protected`` or lies under one."""
    target = Path(resolved)
    return any(target == Path(p) or target.is_relative_to(p) for p in protected)


def absent(workspace: str) -> tuple[str, ...]:
    """The workspace's protected paths that do not exist yet: a read-only bind needs something
    to cover, so a command could create them; ``sweep`` removes them afterwards. Paths under
    a ``.git`` that does not exist either are left out: a repository the command creates
    (``git init``) is its own. ``.engine`` is left out: another run may create its database
    there at any moment, and it must never be deleted."""
    if not workspace:
        return ()
    no_git = not os.path.lexists(os.path.join(workspace, ".git"))
    out = []
    for rel in WORKSPACE_PROTECTED:
        if rel == ".engine" or (no_git and rel.startswith(".git/")):
            continue
        path = os.path.join(workspace, rel)
        if not os.path.lexists(path):
            out.append(path)
    return tuple(out)


def sweep(was_absent: Iterable[str]) -> list[str]:
    """Remove what a command created at a protected path that did not exist before it ran
    (a new ``.envrc``, ``.vscode/tasks.json``, ``.git/hooks/``); returns what was removed."""
    removed = []
    for path in was_absent:
        if not os.path.lexists(path):
            continue
        removed.append(remove(path))
    return removed


def remove(path: str) -> str:
    """Remove ``path`` (a folder with what it holds, not followed through a link), as far as
    it goes; returns it."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return path
