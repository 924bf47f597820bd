"""Files a shell command changed, found from what changed rather than by walking the workspace.

A command does not say what it wrote. ``WATCHER`` (the ``run_shell`` tool's
``ToolSpec.watcher``) keeps one ``Tracker`` per workspace in the engine's process and works in
one of two ways:

- **events** (Linux): at a workspace's first command every folder git would see gets an
  inotify watch (``watched``): ignored trees such as ``node_modules`` get none. In a
  repository the folders come from the index (``tracked``) and from git's list of untracked
  ones, so only wholly untracked folders are walked. After that a command's step reads the
  kernel's queue, so its cost follows the files the command touched, not the files there
  are.
- **scan**, when events cannot be had (no inotify, no watch left under
  ``max_user_watches``, events lost in an overflow, a tracker closed under a running command):
  in a git repository ``git status`` before and after the command, which reports every change
  to a tracked file at git's speed; elsewhere a walk of at most ``MAX_FILES`` files, whose
  report says what it did not cover.

What a file held before the command (for ``base_hash`` and the patch) is never read by walking:
in a repository a tracked file unchanged since the baseline is read from the index as it was
then (a descriptor held on that index file: git replaces the index by renaming, so the old one
stays readable); the baseline reads only dirty and untracked files, up to a budget; every file
changed later is kept as it was last seen. Outside a repository the baseline reads small files
up to the same budget. Ignored files are not reported; tracked ones always are.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.tooling.spec import WatchReport
from engine.vocabulary import held_files
from engine.workspace import git, inotify
from engine.workspace.ignore import IgnoreStack, stack_for
from turnstile_tools import gitstate
from turnstile_tools.patch import make_patch
from turnstile_tools.tracked import TrackedPaths
from turnstile_tools.watched import WatchedTree, WatchLimit, skip_folder, skipped, walk_files
from turnstile_tools.workspace import is_binary

logger = logging.getLogger(__name__)

MAX_FILES = 20_000
"""Files a walk outside a repository records; beyond them changes are said not covered."""
MAX_TEXT_BYTES = 64_000
"""Files up to this size are kept as last seen, so their next change gets a patch."""
MAX_KEPT_BYTES = 8_000_000
"""Content kept per workspace in all; beyond it a change gets hashes but no patch."""
MAX_WORKSPACES = 4
"""Trackers kept per process (each holds an inotify instance; the least recently used goes)."""
WATCH_SHARE = 0.5
"""At most this share of the user's inotify watch limit is taken by one workspace."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A file as last seen: absent, or present with its size and time, and its bytes or hash
    when they were read; what it is (a file, a link, a pipe...) and whether it may run."""

    exists: bool
    stat: tuple[int, int, int] | None = None
    """Size, change time (ns) and execute bits: a file whose three are the same is unchanged."""
    data: bytes | None = None
    digest: str | None = None
    kind: str | None = None
    """``file``, ``link`` (``digest`` hashes its target), ``fifo``, ``socket``, ``device``;
    None where it is not known (an index blob holds no kind of its own)."""
    executable: bool | None = None


ABSENT = Seen(False)
UNKNOWN = Seen(True)
"""Present, content unknown (over the budget, or beyond the walk)."""
_SPECIAL = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "device",
            stat.S_IFBLK: "device"}



def look(root: str, rel: str, keep: bool = True) -> Seen:
    """The file now: a regular file's size, time, hash and (small, ``keep``) bytes and its
    executable bit; a link's target (hashed, never followed); a pipe, socket or device as
    such; a folder or nothing is absent."""
    path = os.path.join(root, rel)
    try:
        lst = os.lstat(path)
    except OSError:
        return ABSENT
    if stat.S_ISLNK(lst.st_mode):
        return _link(path, lst)
    if stat.S_IFMT(lst.st_mode) in _SPECIAL:
        return Seen(True, (0, lst.st_mtime_ns, lst.st_mode & 0o111),
                    kind=_SPECIAL[stat.S_IFMT(lst.st_mode)])
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ABSENT
    st: os.stat_result | None = None
    try:
        st = os.fstat(fd)
        if not _regular(st.st_mode) or held_files.held(st):  # the engine's own database
            return ABSENT
        digest = hashlib.sha256()
        kept = bytearray()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            if keep and len(kept) <= MAX_TEXT_BYTES:
                kept += chunk
    except OSError:
        return ABSENT
    finally:
        held_files.close(fd, st)  # never the store's descriptor: that would drop its locks
    data = bytes(kept) if keep and len(kept) <= MAX_TEXT_BYTES else None
    return Seen(True, (st.st_size, st.st_mtime_ns, st.st_mode & 0o111), data,
                digest.hexdigest(), "file", bool(st.st_mode & 0o100))


def _link(path: str, lst: os.stat_result) -> Seen:
    try:
        target = os.readlink(os.fsencode(path))
    except OSError:
        return ABSENT
    return Seen(True, (lst.st_size, lst.st_mtime_ns, 0), None,
                hashlib.sha256(target).hexdigest(), "link")


def _regular(mode: int) -> bool:
    return mode & 0o170000 == 0o100000


def stat_of(root: str, rel: str) -> tuple[int, int, int] | None:
    """Size and time of a file, a link or a pipe (what ``look`` reports); None else."""
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_size if _regular(st.st_mode) or stat.S_ISLNK(st.st_mode) else 0,
            st.st_mtime_ns, st.st_mode & 0o111)


@dataclass
class Mark:
    """The workspace just before a command: what each file held, as far as it is known."""

    tracker: Tracker
    seq: int
    seen: dict[str, Seen]
    index_fd: int | None
    complete: bool
    """Every file that existed is in ``seen`` or (a repository) in the index."""
    scanned: bool = False
    """Taken by a scan: the report lists the workspace again instead of reading events."""
    by_git: bool = False
    """A scan's report asks ``git status`` (else it walks)."""
    git: dict[str, gitstate.Entry] = field(default_factory=dict)
    """The repository's own files (``gitstate``), which the tracker does not watch."""


@dataclass
class Tracker:
    """One workspace's baseline and, in events mode, its watches."""

    root: str
    repo: bool
    tree: WatchedTree | None = None
    seen: dict[str, Seen] = field(default_factory=dict)
    index_fd: int | None = None
    complete: bool = True
    tracked: TrackedPaths = field(default_factory=TrackedPaths)
    """The held index's paths (a repository): its folders are watched, and a tracked file is
    never ignored."""
    touched: dict[str, int] = field(default_factory=dict)
    """Each path events named, with the drain that last named it."""
    seq: int = 0
    kept_bytes: int = 0
    broken: bool = False
    max_files: int = MAX_FILES
    lock: threading.Lock = field(default_factory=threading.Lock)
    _judges: dict[str, IgnoreStack] = field(default_factory=dict)
    _ignored_dirs: dict[str, bool] = field(default_factory=dict)

    # -- the baseline ---------------------------------------------------------------------

    @classmethod
    def start(cls, root: Path, events: bool = True, max_files: int = MAX_FILES) -> Tracker:
        """A tracker for ``root``: events mode when asked and inotify has room, else scan
        mode."""
        tracker = cls(str(root), git.repository(root), max_files=max_files)
        if events and inotify.available():
            try:
                tracker._watch()
                return tracker
            except (OSError, git.GitUnavailable) as exc:
                logger.info("changes in %s found by scanning: %s", root, exc)
                tracker.close()
                tracker = cls(str(root), git.repository(root), max_files=max_files)
        tracker.broken = True  # scan mode: every mark is a fresh baseline
        return tracker

    def _watch(self) -> None:
        notify = inotify.Inotify()
        self.tree = WatchedTree(self.root, notify, self.ignored, self._files_under)
        if self.repo:
            self._watch_repository()
        else:
            found: list[str] = []
            self.tree.watch("", found)
            self._walked_baseline(found)
        _check_watches(len(self.tree.by_wd))

    def _watch_repository(self) -> None:
        """Watches and baseline from the index, without walking what git already knows: the
        folders of tracked files are watched first (so a change from here on is an event), then
        one ``ls-files`` names the dirty and untracked paths, and only wholly untracked
        folders are walked. Ignored trees are never opened."""
        assert self.tree is not None
        root = Path(self.root)
        index_fd = self.index_fd_now()
        try:
            self.tracked = TrackedPaths.parse(git.index_paths(root, index_fd))
            folders = [f for f in self.tracked.folders if not skipped(f"{f}/x")]
            _check_watches(len(folders))
            self.tree.watch_folders(folders)
            state = git.worktree(root, index_fd)
        except (OSError, git.GitUnavailable):
            if index_fd is not None:
                os.close(index_fd)
            raise
        self._close_index()
        self.index_fd = index_fd
        found: list[str] = []
        for rel in state.untracked_dirs:
            path = os.path.join(self.root, rel)
            if not skipped(f"{rel}/x") and not skip_folder(rel, rel.rpartition("/")[2],
                                                           self.ignored, path):
                self.tree.watch(rel, found)
        self.seen, self.kept_bytes, self.complete = {}, 0, True
        for rel in (*state.dirty, *state.untracked, *found):
            if not skipped(rel):
                self._record(rel, self._baseline_look(rel))

    def index_fd_now(self) -> int | None:
        """A descriptor on the index file as it is now (None: a new repository has none)."""
        path = os.path.join(self.root, ".git", "index")
        if not os.path.isdir(os.path.join(self.root, ".git")):
            path = os.path.join(self.root, git.run(
                Path(self.root), ["rev-parse", "--git-path", "index"]).decode().strip())
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise git.GitUnavailable(f"no index to read: {exc}") from exc

    def _walked_baseline(self, files: list[str]) -> None:
        self.seen, self.kept_bytes = {}, 0
        self.complete = len(files) <= self.max_files
        for rel in files[:self.max_files]:
            self._record(rel, self._baseline_look(rel))

    def _baseline_look(self, rel: str) -> Seen:
        """Small files read within the budget; the rest only stat'ed."""
        st = stat_of(self.root, rel)
        if st is None:
            return ABSENT
        if st[0] <= min(MAX_TEXT_BYTES, MAX_KEPT_BYTES - self.kept_bytes):
            return look(self.root, rel)
        return Seen(True, st)

    def _record(self, rel: str, seen: Seen) -> None:
        old = self.seen.get(rel)
        self.kept_bytes -= len(old.data) if old is not None and old.data is not None else 0
        if seen.data is not None and self.kept_bytes + len(seen.data) > MAX_KEPT_BYTES:
            seen = Seen(seen.exists, seen.stat, None, seen.digest)
        self.kept_bytes += len(seen.data) if seen.data is not None else 0
        self.seen[rel] = seen

    # -- ignore rules for paths git has not seen ------------------------------------------

    def judge(self, rel_dir: str) -> IgnoreStack:
        """The rules in force inside ``rel_dir`` (cached; dropped when a ``.gitignore``
        changes)."""
        if self.tree is not None and self.tree.rules_changed:
            self._judges.clear()
            self._ignored_dirs.clear()
            self.tree.rules_changed = False
        found = self._judges.get(rel_dir)
        if found is None:
            parent = rel_dir.rpartition("/")[0]
            found = (stack_for(Path(self.root), "") if not rel_dir
                     else self.judge(parent).enter(Path(self.root), rel_dir))
            self._judges[rel_dir] = found
        return found

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """As git decides: a path under an ignored folder is ignored, a tracked file never is
        (nor a folder holding one)."""
        if is_dir:
            return rel not in self.tracked.folders and self._rules_ignore_dir(rel)
        parent, _, name = rel.rpartition("/")
        if not (self._rules_ignore_dir(parent) or self.judge(parent).ignored(rel, name, False)):
            return False
        return not self.tracked.holds(rel)

    def _rules_ignore_dir(self, rel_dir: str) -> bool:
        if not rel_dir:
            return False
        found = self._ignored_dirs.get(rel_dir)
        if found is None:
            parent, _, name = rel_dir.rpartition("/")
            found = self._rules_ignore_dir(parent) or self.judge(parent).ignored(
                rel_dir, name, True)
            self._ignored_dirs[rel_dir] = found
        return found

    def _files_under(self, rel: str) -> Iterable[str]:
        prefix = f"{rel}/"
        found = [p for p, s in self.seen.items() if s.exists and p.startswith(prefix)]
        return found + self.tracked.under(rel)  # the held index's paths, listed at set-up

    # -- marks and reports ----------------------------------------------------------------

    def mark(self) -> Mark:
        with self.lock:
            if self.broken:
                return self._scan_mark()
            self._drain()
            if self.broken:
                return self._scan_mark()
            fd = os.dup(self.index_fd) if self.index_fd is not None else None
            return Mark(self, self.seq, dict(self.seen), fd, self.complete, by_git=self.repo)

    def _scan_mark(self) -> Mark:
        """A baseline of its own (scan mode): git status, or a bounded walk."""
        root = Path(self.root)
        if self.repo:
            try:
                fd = self.index_fd_now()
                state = git.status(root)
            except git.GitUnavailable:
                return self._walk_mark()
            seen = {rel: self._baseline_look(rel) for rel in (*state.dirty, *state.untracked)
                    if not skipped(rel)}
            return Mark(self, self.seq, seen, fd, True, scanned=True, by_git=True)
        return self._walk_mark()

    def _walk_mark(self) -> Mark:
        files = walk_files(self.root, self.ignored, self.max_files + 1)
        tracker = Tracker(self.root, False, max_files=self.max_files)
        tracker._walked_baseline(files)
        return Mark(self, self.seq, tracker.seen, None, tracker.complete, scanned=True)

    def _drain(self) -> set[str]:
        """Read the kernel's queue; record what changed since the last drain."""
        assert self.tree is not None
        try:
            touched = self.tree.drain()
        except WatchLimit:
            self.broken = True
            return set()
        if self.tree.overflowed or self.tree.root_gone:
            self.broken = True
            return set()
        self.seq += 1
        for rel in touched:
            self.touched[rel] = self.seq
            self._record(rel, look(self.root, rel))
        return touched

    def report(self, mark: Mark) -> WatchReport:
        """What changed since ``mark`` (its index descriptor is closed here)."""
        try:
            with self.lock:
                if mark.scanned or self.broken:
                    return self._scan_report(mark)
                self._drain()
                if self.broken:
                    return self._scan_report(mark)
                paths = [rel for rel, at in self.touched.items() if at > mark.seq]
                files = self._compare(mark, paths, after=self.seen)
                notes = [*([] if mark.complete else [self._partial()]), *self._unwatched()]
                return WatchReport(files, "; ".join(notes) or None)
        finally:
            if mark.index_fd is not None:
                os.close(mark.index_fd)
                mark.index_fd = None

    def _scan_report(self, mark: Mark) -> WatchReport:
        """Changes since ``mark`` by listing the workspace again (git status, or a walk)."""
        root = Path(self.root)
        note = None
        if mark.by_git:
            try:
                state = git.status(root)
                now = [*state.dirty, *state.untracked]
            except git.GitUnavailable as exc:
                now, note = [], f"changed files were not looked for: {exc}"
        else:
            found = walk_files(self.root, self.ignored, self.max_files + 1)
            now = found[:self.max_files]
            if len(found) > self.max_files or not mark.complete:
                note = (f"the workspace has more than {self.max_files:,} files and is not a "
                        f"git repository: only {self.max_files:,} were compared, and changes "
                        "to others are not reported")
        restaged = self._restaged(mark)
        paths = sorted({*now, *mark.seen, *restaged} - {p for p in now if skipped(p)})
        after = {rel: look(self.root, rel) for rel in paths
                 if mark.seen.get(rel, UNKNOWN).stat != stat_of(self.root, rel)
                 or rel not in mark.seen or rel in restaged}
        return WatchReport(self._compare(mark, list(after), after=after), note)

    def _restaged(self, mark: Mark) -> set[str]:
        """Paths whose index entry differs from the mark's (a checkout or reset by the
        command leaves them clean against the new index: status alone would miss them)."""
        if mark.index_fd is None:
            return set()
        try:
            now_fd = self.index_fd_now()
        except git.GitUnavailable:
            return set()
        try:
            if now_fd is None:
                return set()
            a, b = os.fstat(mark.index_fd), os.fstat(now_fd)
            if (a.st_ino, a.st_mtime_ns, a.st_size) == (b.st_ino, b.st_mtime_ns, b.st_size):
                return set()
            old = git.staged(Path(self.root), mark.index_fd)
            new = git.staged(Path(self.root), now_fd)
        except git.GitUnavailable:
            return set()
        finally:
            if now_fd is not None:
                os.close(now_fd)
        return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}

    def _compare(self, mark: Mark, paths: list[str], after: dict[str, Seen]
                 ) -> list[dict[str, Any]]:
        """A change for each path whose content differs between the mark and now."""
        from_index = [p for p in paths if p not in mark.seen]
        blobs = self._index_blobs(mark, from_index)
        out = []
        for rel in sorted(paths):
            pre = mark.seen.get(rel)
            if pre is None:
                pre = blobs.get(rel, ABSENT if mark.complete else UNKNOWN)
            post = after.get(rel) or look(self.root, rel)
            change = describe(rel, pre, post)
            if change is not None:
                out.append(change)
        return out

    def _index_blobs(self, mark: Mark, paths: list[str]) -> dict[str, Seen]:
        if mark.index_fd is None or not paths:
            return {}
        try:
            found = git.index_blobs(Path(self.root), paths, mark.index_fd)
        except git.GitUnavailable:
            return {p: UNKNOWN for p in paths}
        try:
            modes = git.staged(Path(self.root), mark.index_fd, paths)
        except git.GitUnavailable:
            modes = {}
        return {p: Seen(True, None, data if len(data) <= MAX_TEXT_BYTES else None,
                        hashlib.sha256(data).hexdigest(), *_index_kind(modes.get(p)))
                for p, data in found.items() if data is not None}

    def _unwatched(self) -> list[str]:
        """A note on folders no watch could be put on since the last report (then cleared)."""
        if self.tree is None or not self.tree.unwatched:
            return []
        first, more = self.tree.unwatched[0], len(self.tree.unwatched) - 1
        self.tree.unwatched.clear()
        return [f"changes under {first[:120]}{'...' if len(first) > 120 else ''}"
                f"{f' and {more} more folders' if more else ''} were not seen (a path longer "
                "than the system allows, or a folder closed to the engine)"]

    def _partial(self) -> str:
        return (f"the workspace is not a git repository and has more than "
                f"{self.max_files:,} files: files beyond them had no recorded earlier content, "
                "so a change to one is reported without its base")

    def close(self) -> None:
        """Stop watching; a mark taken before still gets its report (by scanning)."""
        with self.lock:
            self.broken = True
            if self.tree is not None:
                self.tree.notify.close()
                self.tree = None
            self._close_index()

    def _close_index(self) -> None:
        if self.index_fd is not None:
            os.close(self.index_fd)
            self.index_fd = None


def _index_kind(entry: str | None) -> tuple[str | None, bool | None]:
    """What an index entry's mode (``100755 oid``) says: a link or a file, and whether it
    runs; (None, None) when unknown."""
    mode = (entry or "").partition(" ")[0]
    if mode == "120000":
        return "link", None
    if mode in ("100644", "100755"):
        return "file", mode == "100755"
    return None, None


def _check_watches(count: int) -> None:
    """``WatchLimit`` when ``count`` watches would take over ``WATCH_SHARE`` of the user's."""
    limit = inotify.max_watches()
    if limit is not None and count > limit * WATCH_SHARE:
        raise WatchLimit(errno.ENOSPC, f"{count} folders: over {WATCH_SHARE:.0%} of "
                         f"max_user_watches ({limit})")


def describe(rel: str, pre: Seen, post: Seen) -> dict[str, Any] | None:
    """The change from ``pre`` to ``post``, or None when it is the same: the same content
    (or the same link target), the same kind and the same executable bit."""
    if not pre.exists and not post.exists:
        return None
    kind = _differs(pre.kind, post.kind)
    mode = _differs(pre.executable, post.executable)
    if pre.exists and post.exists and not kind and not mode:
        if pre.stat is not None and pre.stat == post.stat:
            return None
        if pre.digest is not None and pre.digest == post.digest:
            return None  # touched, not changed
        if post.kind in ("fifo", "socket", "device"):
            return None  # still the same kind of thing: no content of its own
    created, deleted = not pre.exists, not post.exists
    change: dict[str, Any] = {"path": rel, "base_hash": pre.digest if pre.exists else None,
                              "result_hash": post.digest if post.exists else None,
                              "created": created, "deleted": deleted}
    shown = post.kind if post.exists else pre.kind
    if shown not in (None, "file"):
        change["kind"] = shown  # a link (its target's hash), a pipe, a socket, a device
    if mode:
        change["executable"] = bool(post.executable)
    plain = shown in (None, "file")
    known = plain and (created or pre.data is not None) and (deleted or post.data is not None)
    patch = _patch(rel, pre.data if pre.exists else None, post.data) if known else None
    if patch:  # a mode change alone has none
        change["patch"] = patch
    return change


def _differs(before: object, after: object) -> bool:
    """Both known and not the same."""
    return before is not None and after is not None and before != after


def _patch(rel: str, old: bytes | None, new: bytes | None) -> str | None:
    """A unified diff when both sides are known small text (a side may be absent)."""
    sides = [b for b in (old, new) if b is not None]
    if not sides or any(len(b) > MAX_TEXT_BYTES or is_binary(b) for b in sides):
        return None
    try:
        old_text = None if old is None else old.decode("utf-8")
        new_text = "" if new is None else new.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if new is None:  # deleted: the diff to an empty file, named as git names a deletion
        return make_patch(rel, old_text, "").replace(f"+++ b/{rel}", "+++ /dev/null", 1)
    return make_patch(rel, old_text, new_text)


class WorkspaceWatcher:
    """``ToolSpec.watcher`` of tools whose results cannot name the files they change.

    ``events=False`` always scans (what a system without inotify gets); ``max_files`` bounds
    a walk outside a repository."""

    def __init__(self, events: bool = True, max_files: int = MAX_FILES) -> None:
        self._trackers: OrderedDict[str, Tracker] = OrderedDict()
        self._starting: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self.events = events
        self.max_files = max_files

    def snapshot(self, workspace: Path) -> Mark:
        mark = self.tracker(workspace).mark()
        mark.git = gitstate.listing(mark.tracker.root)
        return mark

    def prepare(self, workspace: Path) -> None:
        """Start the workspace's tracker on a daemon thread (watches and baseline: seconds in a
        repository of 100,000 files), so the run's first command finds it ready; a snapshot
        asked for meanwhile waits for this start instead of doing the work twice."""
        if not os.path.isdir(workspace) or self.preparing(workspace):
            return  # (a step-driven run, as on Temporal, starts a drive per step)
        threading.Thread(target=self._prepare, args=(workspace,), daemon=True,
                         name="workspace-tracker").start()

    def preparing(self, workspace: Path) -> bool:
        """Whether the workspace's tracker is started or being started."""
        key = os.path.realpath(workspace)
        with self._lock:
            return key in self._trackers or key in self._starting

    def _prepare(self, workspace: Path) -> None:
        try:
            self.tracker(workspace)
        except Exception:  # the first snapshot starts it again and raises where it is seen
            logger.debug("preparing the tracker of %s failed", workspace, exc_info=True)

    def changes(self, workspace: Path, before: Mark) -> WatchReport:
        report = before.tracker.report(before)
        repository = gitstate.changes(before.git, before.tracker.root) if before.git else []
        if not repository:
            return report
        return WatchReport([*report.files, *repository], report.not_covered)

    def tracker(self, workspace: Path) -> Tracker:
        """The workspace's tracker, started on first use; a broken one is started again.
        Starting runs outside the registry's lock (it may take a while in a large
        workspace), so other workspaces' steps do not wait for it."""
        key = os.path.realpath(workspace)
        while True:
            with self._lock:
                found = self._trackers.get(key)
                if found is not None and not (found.broken and found.tree is not None):
                    self._trackers.move_to_end(key)
                    return found
                starting = self._starting.get(key)
                if starting is None:
                    self._starting[key] = threading.Event()
                    stale = self._trackers.pop(key, None)
                    break
            starting.wait()  # another thread is starting this workspace's tracker: use it
        try:
            if stale is not None:
                stale.close()
            kept = self._keep(key, Tracker.start(Path(key), self.events, self.max_files))
        finally:
            with self._lock:
                self._starting.pop(key).set()
        return kept

    def _keep(self, key: str, fresh: Tracker) -> Tracker:
        """Register a started tracker (one start per workspace at a time: ``_starting``),
        evicting the least recently used beyond the cap."""
        evicted = []
        with self._lock:
            self._trackers[key] = fresh
            while len(self._trackers) > MAX_WORKSPACES:
                evicted.append(self._trackers.popitem(last=False)[1])
        for tracker in evicted:
            tracker.close()
        return fresh


WATCHER = WorkspaceWatcher()
