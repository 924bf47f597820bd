"""A workspace as it was when a step began: the run's folder now, with every change the
ledger recorded from that step on undone, newest first (``patches.undo``).

What the run changed is known from its ``file_changed`` events (the edit tools' and the shell
watcher's, each with hashes and a diff); a call whose changes were not all seen (the watcher
said so, or its outcome is unknown) makes the steps before it inexact. The folder is copied
without the engine's own ``.engine`` folder; the files the run changed are then written as
they were. A file that cannot be rebuilt keeps its latest content and is named.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.forks.patches import NotUndone, undo
from engine.store.base import EffectRecord, Event, Store
from engine.vocabulary import held_files
from engine.vocabulary.events import EventKind

ENGINE_DIR = ".engine"
"""Not copied: the database and other runs' workspaces live there when a run works in the
folder it was started from."""


@dataclass(frozen=True, slots=True)
class NotRebuilt:
    """A path whose content at the step cannot be rebuilt, and why."""

    path: str
    reason: str
    step: int
    """The latest step whose change cannot be undone: every step up to it is inexact."""

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "step": self.step}


@dataclass(frozen=True, slots=True)
class History:
    """What a run changed in its workspace, read once: each step's changes, and the paths
    that block an exact rebuild of the steps up to some step."""

    root: Path
    changes: tuple[Event, ...]
    blocked: tuple[NotRebuilt, ...] = ()
    contents: Mapping[int, Mapping[str, bytes | None]] = field(default_factory=dict)
    """For each step with changes: each path's content before that step's first change."""

    def not_rebuilt(self, step: int) -> list[NotRebuilt]:
        """The paths a fork at ``step`` cannot rebuild (none: the workspace is exact)."""
        return [b for b in self.blocked if b.step >= step]

    def files_at(self, step: int) -> dict[str, bytes | None]:
        """The content of every path changed at or after ``step``, as it was when ``step``
        began, where it can be rebuilt (None: the file did not exist)."""
        out: dict[str, bytes | None] = {}
        for at in sorted(self.contents, reverse=True):
            if at < step:
                break
            out.update(self.contents[at])
        blocked = {b.path for b in self.not_rebuilt(step)}
        return {p: c for p, c in out.items() if p not in blocked}


def read_history(store: Store, run_id: str, root: Path) -> History:
    """Undo the run's recorded changes, newest first, from the folder's current content."""
    events = store.events(run_id, (EventKind.FILE_CHANGED,))
    blocked: dict[str, NotRebuilt] = {}
    current: dict[str, bytes | None] = {}
    contents: dict[int, dict[str, bytes | None]] = {}
    for e in reversed(events):
        path = str(e.payload.get("path") or "")
        if path in blocked:
            continue
        target = _inside(root, path)
        try:
            if target is None:
                raise NotUndone("it is outside the workspace")
            if e.payload.get("kind"):  # a link, a pipe: no content to undo
                raise NotUndone(f"a {e.payload['kind']} was made or removed there")
            after = current[path] if path in current else _read(target)
            current[path] = undo(after, e.payload)
        except NotUndone as exc:
            blocked[path] = NotRebuilt(path, str(exc), e.step)
            continue
        contents.setdefault(e.step, {})[path] = current[path]
    unseen = [NotRebuilt(f"(call {r.call_id}, {r.tool})", reason, r.step)
              for r, reason in _unseen(store.effects(run_id))]
    return History(root, tuple(events), (*blocked.values(), *unseen), contents)


def _unseen(effects: Iterable[EffectRecord]) -> Iterable[tuple[EffectRecord, str]]:
    """Calls whose changes to the workspace are not all known."""
    for r in effects:
        data = (r.result or {}).get("data") or {}
        if isinstance(data, Mapping) and data.get("changes_not_covered"):
            yield r, f"not every change was seen: {data['changes_not_covered']}"
        elif r.side_effects and r.status in ("started", "unknown"):
            yield r, f"its outcome is {r.status}: what it changed is not known"


def _inside(root: Path, path: str) -> Path | None:
    target = (root / path) if not os.path.isabs(path) else Path(path)
    try:
        target.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    return target


def _read(path: Path) -> bytes | None:
    """A regular file's bytes; None where nothing is; anything else (a pipe, which would
    never answer, a link, a folder) cannot be rebuilt."""
    if held_files.held_path(path):
        return None
    try:
        mode = path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(mode):
        raise NotUndone("it is not a regular file now")
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW |
                                                            os.O_NONBLOCK)) as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise NotUndone(f"it cannot be read: {exc.strerror}") from exc


def build(source: Path, dest: Path, files: Mapping[str, bytes | None]) -> None:
    """Copy ``source`` to the new folder ``dest`` (links kept as links), then write
    ``files`` as they were (None: removed)."""
    shutil.copytree(source, dest, symlinks=True,
                    ignore=lambda folder, names: _ignored(source, folder, names))
    for rel, content in files.items():
        target = dest / rel
        if content is None:
            if target.is_file() or target.is_symlink():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(content)


def _ignored(source: Path, folder: str, names: Sequence[str]) -> list[str]:
    """``.engine`` at the top, and the files of a database this process has open (copying one
    would close a descriptor of it: ``engine.vocabulary.held_files``)."""
    out = [ENGINE_DIR] if Path(folder) == source and ENGINE_DIR in names else []
    return out + [n for n in names if held_files.held_path(os.path.join(folder, n))]
