"""What a confined command may change, by construction rather than by a list of names.

The workspace's working files are writable; everything that makes a program run later is not:

- ``.git/`` (and a ``.git`` file's target, its common folder, submodules' git folders) is bound
  read-only, unless ``sandbox: {vcs: write}``: then the folder stays writable (git writes
  ``*.lock`` files beside what it changes) but its sensitive entries that exist (``config*``,
  ``hooks/``, ``info/``, ``commondir``, also in ``modules/`` and ``worktrees/``) are bound
  read-only, and after each command (``sweep_git``) any new top-level entry outside
  ``GIT_ALLOWED`` (``commondir``, ``config.worktree``) is removed. A command may create
  submodules' git folders (``modules/NAME``, nested ones too) and linked worktrees'
  (``worktrees/NAME``); in them a new entry outside ``NESTED_ALLOWED`` (``hooks/``, ``info/``)
  is removed, a configuration that gained a key naming a program (``gitconfig``) is restored
  or removed, and a ``commondir`` must lead back to the same common folder. ``.git/config``
  itself a git command that may write configuration writes through a private copy, applied
  after the command when allowed (``gitcopy``).
  A gitlink's ``.git`` in the workspace, which git on the host enters, is read-only; a new one
  must lead into ``modules/``, or it is moved aside (``gitlinks``). So is any other
  repository's git folder in the workspace; a new one must hold only what git's commands
  write, or it is moved aside (``repos``, found by ``survey``).
- the engine's own installation (``sys.prefix``, every folder on ``sys.path``, its source, its
  console script) and interpreter start-up files on that path, wherever they lie;
- files with a hard link outside the workspace (writing one would change the outside file),
  found by ``survey``. A command cannot make a new one: ``link()`` across a bind mount fails
  with EXDEV.

The engine's folder ``.engine/`` is masked (an empty read-only folder), not only read-only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.sandbox import gitconfig
from engine.sandbox.protected import remove

logger = logging.getLogger(__name__)

GIT_ALLOWED: frozenset[str] = frozenset({
    "objects", "refs", "logs", "packed-refs", "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD",
    "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "REBASE_HEAD", "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES",
    "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "AUTO_MERGE", "SQUASH_MSG", "COMMIT_EDITMSG",
    "TAG_EDITMSG", "description", "branches", "rebase-merge", "rebase-apply", "sequencer",
    "shallow", "lost-found", "gc.pid", "gc.log", "rr-cache",
})
"""Top-level entries of ``.git/`` a command may create under ``vcs: write`` (and their
``*.lock`` files): history, refs, the index and the files git leaves between commands. None of
them makes git run a program."""
GIT_SENSITIVE: tuple[str, ...] = ("config", "config.worktree", "hooks", "info", "commondir")
"""Entries of a git folder bound read-only even under ``vcs: write``."""
STARTUP_FILES: tuple[str, ...] = ("sitecustomize.py", "usercustomize.py", "sitecustomize",
                                  "usercustomize")
"""Imported by every interpreter start when found on ``sys.path``."""


def git_dirs(workspace: str) -> list[str]:
    """The workspace's git folders: ``.git`` (or a ``.git`` file's target and its common
    folder), resolved."""
    dot = os.path.join(workspace, ".git")
    if os.path.isdir(dot) and not os.path.islink(dot):
        return [os.path.realpath(dot)]
    if not os.path.isfile(dot):
        return []
    try:
        with open(dot) as f:
            line = f.read(4096).strip()
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    target = os.path.realpath(os.path.join(workspace, line.removeprefix("gitdir:").strip()))
    out = [target]
    with contextlib.suppress(OSError), open(os.path.join(target, "commondir")) as f:
        out.append(os.path.realpath(os.path.join(target, f.read().strip())))
    return out


def git_read_only(gitdir: str, vcs_write: bool) -> list[str]:
    """What to bind read-only in one git folder: all of it, or its sensitive entries (also in
    ``modules/``, submodules' git folders, and ``worktrees/``)."""
    if not vcs_write:
        return [gitdir]
    out = [os.path.join(gitdir, name) for name in GIT_SENSITIVE]
    for nested in ("modules", "worktrees"):
        for root, dirs, _files in os.walk(os.path.join(gitdir, nested)):
            for name in GIT_SENSITIVE:
                if os.path.lexists(os.path.join(root, name)):
                    out.append(os.path.join(root, name))
            dirs[:] = [d for d in dirs if d not in ("objects", "refs", "logs", *GIT_SENSITIVE)]
    return [p for p in out if os.path.lexists(p)]


NESTED_ALLOWED: Mapping[str, frozenset[str]] = {
    "modules": GIT_ALLOWED | {"config", "config.worktree", "modules"},
    "worktrees": GIT_ALLOWED | {"config.worktree", "commondir", "gitdir", "locked"},
}
"""Entries a command may create in a submodule's git folder (``modules/NAME``, a whole
repository, nested submodules in its own ``modules/``) and in a linked worktree's
(``worktrees/NAME``); ``CHECKED`` files among them are kept only after a look."""
CHECKED: frozenset[str] = frozenset({"config", "config.worktree", "commondir"})
MAX_CHECKED = 1 << 20
"""Bytes of a ``CHECKED`` file read; a larger one is refused."""


RUNS_LATER: tuple[str, ...] = ("rebase-merge/git-rebase-todo", "sequencer/todo")
"""Files under ``GIT_ALLOWED`` entries that list commands git runs later: an ``exec`` line
of a rebase's to-do list runs at the host's ``git rebase --continue``."""
STRATEGIES: tuple[str, ...] = ("rebase-merge/strategy", "sequencer/opts")
"""Files naming the merge strategy a stopped rebase or cherry-pick goes on with: git runs
``git-merge-NAME`` for a name it does not know, found on PATH."""
BUILTIN_STRATEGIES = frozenset({"ort", "recursive", "resolve", "octopus", "ours", "subtree"})
_STRATEGY = re.compile(rb"^\s*strategy\s*=\s*(\S+)", re.MULTILINE)
REPLACE_REFS = "refs/replace"
"""Replacement refs make git on the host show another object in a commit's place (a diff
that hides what the commit holds)."""
_EXEC_LINE = re.compile(rb"^[ \t]*(?:x|exec)(?:[ \t]|$)", re.MULTILINE)
NO_LATER_READS: tuple[str, ...] = ("objects/info/alternates", "objects/info/http-alternates")
"""Files under ``objects/`` that make git on the host read objects from other folders."""


@dataclass(frozen=True, slots=True)
class GitSnapshot:
    """The git folders' state a command is compared with afterwards (see ``sweep_git``)."""

    workspace: str = ""
    top: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per git folder: its top-level entries."""
    nested: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per git folder under ``modules/`` or ``worktrees/``: its entries."""
    checked: Mapping[str, bytes] = field(default_factory=dict)
    """``CHECKED`` files in those folders: their content."""
    others: frozenset[str] = frozenset()
    """What is not a folder between them (see ``nested_gitdirs``)."""
    later: Mapping[str, bytes | None] = field(default_factory=dict)
    """``RUNS_LATER`` and ``NO_LATER_READS`` files: their content (None: absent)."""


@dataclass(frozen=True, slots=True)
class Swept:
    """What ``sweep_git`` undid (absolute paths), and the configuration changes refused."""

    removed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)
    """``.git/config`` files the command's copy of was not applied to, with why (the keys
    refused): see ``gitcopy``."""
    template: list[str] = field(default_factory=list)
    """New submodules' and worktrees' ``hooks/`` and ``info/`` as git copies them into every
    new repository (only ``*.sample`` hooks, only ``info/exclude``): removed, not reported."""
    moved: list[str] = field(default_factory=list)
    """Gitlinks' ``.git`` moved aside (see ``gitlinks.sweep_checkouts``)."""
    unmade: list[str] = field(default_factory=list)
    """New linked worktrees' git folders, removed: their checkout is missing on the host (it
    was made in the private ``/tmp``, which ends with the command)."""


def nested_gitdirs(gitdir: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The git folders under ``gitdir``'s ``modules/`` (submodules, names with ``/`` and
    nested submodules included) and ``worktrees/``, as ``(path, kind, parent git folder)``;
    and what lies between them that is not a folder (a link there would lead git elsewhere)."""
    out: list[tuple[str, str, str]] = []
    others: list[str] = []
    todo = [(os.path.join(gitdir, kind), kind, gitdir) for kind in ("modules", "worktrees")]
    while todo:  # every one: a folder left unlooked at would be left unswept
        folder, kind, parent = todo.pop()
        if not _is_dir(folder):
            if os.path.lexists(folder):
                others.append(folder)
            continue
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                others.append(entry.path)
            elif kind == "worktrees" or os.path.isfile(os.path.join(entry.path, "HEAD")):
                out.append((entry.path, kind, parent))
                if kind == "modules":
                    todo.append((os.path.join(entry.path, "modules"), kind, entry.path))
            else:  # a submodule name with a slash: ``modules/a/b``
                todo.append((entry.path, kind, parent))
    return out, others


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def git_snapshot(gitdirs: Iterable[str], workspace: str = "") -> GitSnapshot:
    """The git folders now (before a command): top-level entries, and under ``modules/`` and
    ``worktrees/`` each git folder's entries and its ``CHECKED`` files' content."""
    top: dict[str, frozenset[str]] = {}
    nested: dict[str, frozenset[str]] = {}
    checked: dict[str, bytes] = {}
    others: set[str] = set()
    later: dict[str, bytes | None] = {}
    for gitdir in gitdirs:
        with contextlib.suppress(OSError):
            top[gitdir] = frozenset(os.listdir(gitdir))
        for name in (*RUNS_LATER, *NO_LATER_READS, *STRATEGIES):
            path = os.path.join(gitdir, name)
            later[path] = _content(path)
        later[os.path.join(gitdir, REPLACE_REFS)] = _replace_refs(gitdir)
        if "modules" not in top.get(gitdir, ()) and "worktrees" not in top.get(gitdir, ()):
            continue
        found, stray = nested_gitdirs(gitdir)
        others.update(stray)
        for path, _kind, _parent in found:
            with contextlib.suppress(OSError):
                names = frozenset(os.listdir(path))
                nested[path] = names
                for name in CHECKED & names:
                    checked[os.path.join(path, name)] = _read(os.path.join(path, name))
    return GitSnapshot(workspace, top, nested, checked, frozenset(others), later)


def sweep_git(before: GitSnapshot) -> Swept:
    """Undo what a command did to the git folders that could make git on the host run a
    program, before git there reads it: a new top-level entry outside ``GIT_ALLOWED`` (a
    ``commondir`` pointing git at another configuration) is removed; under ``modules/`` and
    ``worktrees/`` a new entry outside ``NESTED_ALLOWED`` (``hooks/``, ``info/``) is removed,
    and a configuration that gained a key outside ``gitconfig.ALLOWED`` or a worktree's
    ``commondir`` naming another common folder is restored (removed when it is new)."""
    swept = Swept()
    for gitdir, had in before.top.items():
        try:
            now = os.listdir(gitdir)
        except OSError:
            continue
        for name in now:
            if name not in had and name.removesuffix(".lock") not in GIT_ALLOWED \
                    and name not in NESTED_ALLOWED:
                swept.removed.append(remove(os.path.join(gitdir, name)))
        if "modules" in now or "worktrees" in now:
            _sweep_nested(gitdir, before, swept)
    _sweep_later(before, swept)
    return swept


def _sweep_later(before: GitSnapshot, swept: Swept) -> None:
    """A to-do list that gained ``exec`` lines loses them (the rest of the rebase stays);
    a new or changed ``alternates`` file is removed (restored when it was there)."""
    for path, old in before.later.items():
        if path.endswith(REPLACE_REFS):
            _sweep_replacements(path, old, swept)
            continue
        if not os.path.lexists(path):
            continue
        new = _content(path)
        if path.endswith(STRATEGIES) and new not in (None, _NOT_PLAIN) and _builtin(new):
            continue  # git rebase -s ort: a strategy git runs itself
        if new == old:
            continue
        if path.endswith(RUNS_LATER) and new not in (None, _NOT_PLAIN):
            had = {line.rstrip(b"\r\n") for line in (old or b"").splitlines()
                   if _EXEC_LINE.match(line)}
            kept = b"".join(line for line in new.splitlines(keepends=True)
                            if not _EXEC_LINE.match(line) or line.rstrip(b"\r\n") in had)
            if kept == new:
                continue
            with open(path, "wb") as f:
                f.write(kept)
            logger.warning("%s: exec lines a command added were removed", path)
            swept.restored.append(path)
            continue
        remove(path)
        if old in (None, _NOT_PLAIN):
            swept.removed.append(path)
        else:
            with open(path, "wb") as f:
                f.write(old)
            swept.restored.append(path)


def _builtin(content: bytes) -> bool:
    """A strategy file (one name, or ``strategy = NAME`` lines) naming built-in ones only."""
    names = _STRATEGY.findall(content) or content.split()
    return all(n.decode(errors="replace") in BUILTIN_STRATEGIES for n in names)


def _replace_refs(gitdir: str) -> bytes:
    """The loose replacement refs, one name a line (what ``_sweep_replacements`` compares)."""
    found = []
    for root, _dirs, files in os.walk(os.path.join(gitdir, REPLACE_REFS)):
        found += [os.path.join(root, f) for f in files]
    return "\n".join(sorted(found)).encode("utf-8", "surrogateescape")


def _sweep_replacements(path: str, old: bytes | None, swept: Swept) -> None:
    """Remove the replacement refs a command added (those there before stay)."""
    had = set((old or b"").decode("utf-8", "surrogateescape").split("\n"))
    now = _replace_refs(os.path.dirname(os.path.dirname(path)))
    for ref in now.decode("utf-8", "surrogateescape").split("\n"):
        if ref and ref not in had:
            swept.removed.append(remove(ref))


def _sweep_nested(gitdir: str, before: GitSnapshot, swept: Swept) -> None:
    try:
        found, stray = nested_gitdirs(gitdir)
    except OSError:
        return
    swept.removed.extend(remove(p) for p in stray if p not in before.others)
    for path, kind, _parent in found:
        had = before.nested.get(path)
        if had is None and kind == "worktrees" and not _checkout_exists(path):
            swept.unmade.append(remove(path))
            continue
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            full = os.path.join(path, name)
            if (had is None or name not in had) \
                    and name.removesuffix(".lock") not in NESTED_ALLOWED[kind]:
                (swept.template if is_template(full) else swept.removed).append(remove(full))
                continue
            if name in CHECKED:
                _check(full, kind, gitdir, before, swept)


def _check(path: str, kind: str, common: str, before: GitSnapshot, swept: Swept) -> None:
    """Keep ``path`` (a ``CHECKED`` file) only when its change is allowed."""
    old = before.checked.get(path)
    new = _read(path) if os.path.isfile(path) and not os.path.islink(path) else None
    if new is not None and new == old:
        return
    where = os.path.dirname(path)
    if new is None:
        why: str | None = "not a plain file"
    elif len(new) > MAX_CHECKED:
        why = f"larger than {MAX_CHECKED} bytes"
    elif path.endswith("commondir"):
        target = os.path.realpath(os.path.join(where, new.decode(errors="replace").strip()))
        why = None if target == os.path.realpath(common) else "names another common folder"
    else:
        why = gitconfig.refused(old, new, where, before.workspace)
    if why is None:
        return
    logger.warning("git file %s refused: %s", path, why)
    remove(path)
    if old is None:
        swept.removed.append(path)
        return
    with open(path, "wb") as f:
        f.write(old)
    swept.restored.append(path)


TEMPLATE: Mapping[str, Callable[[str], bool]] = {
    "hooks": lambda name: name.endswith(".sample"), "info": lambda name: name == "exclude",
}
"""What git's default template puts in a new repository's ``hooks/`` and ``info/``."""


def is_template(path: str) -> bool:
    """Whether ``path`` (a new ``hooks/`` or ``info/``) holds only what git's template puts
    there: plain files, none of which runs or is read as a rule beyond ignoring."""
    kept = TEMPLATE.get(os.path.basename(path))
    if kept is None or not _is_dir(path):
        return False
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    return all(e.is_file(follow_symlinks=False) and kept(e.name) for e in entries)


def _checkout_exists(worktree: str) -> bool:
    """Whether the checkout a worktree's ``gitdir`` file names (its ``.git`` file) exists."""
    try:
        target = _read(os.path.join(worktree, "gitdir")).decode().strip()
    except (OSError, UnicodeDecodeError):
        return True  # not this check's to judge: its other entries are checked
    return os.path.exists(os.path.join(worktree, target))


_NOT_PLAIN = b"\0not a plain file"


def _content(path: str) -> bytes | None:
    """A plain file's first bytes (``_read``); None when absent, ``_NOT_PLAIN`` for anything
    else there (a folder, a link, a file that cannot be read)."""
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path):
        return _NOT_PLAIN
    try:
        return _read(path)
    except OSError:
        return _NOT_PLAIN


def _read(path: str) -> bytes:
    """The file's first ``MAX_CHECKED + 1`` bytes (one more tells a file that is too large)."""
    with open(path, "rb") as f:
        return f.read(MAX_CHECKED + 1)


def installation() -> list[str]:
    """The engine's installation, resolved: the interpreter's prefixes, every folder on
    ``sys.path``, the folder holding ``engine/`` and the console script."""
    source = Path(__file__).resolve().parents[2]
    paths = [sys.prefix, sys.base_prefix, str(source), *[p for p in sys.path if p]]
    script = shutil.which("turnstile")
    if script:
        paths.append(script)
    return list(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))


def installation_read_only(paths: Iterable[str], workspace: str,
                           writable: Iterable[str]) -> tuple[list[str], list[str]]:
    """What of the installation to bind read-only inside writable folders, and the start-up
    files absent there (to remove after a command that creates them). A folder that holds
    the workspace itself (the engine started from its workspace) is not bound whole: its
    start-up files and the engine's packages are."""
    roots = [r for r in (workspace, *writable) if r]
    bind: list[str] = []
    absent: list[str] = []
    for path in paths:
        if not any(_under(path, r) for r in roots):
            continue
        if workspace and _under(workspace, path):
            bind += [p for p in startup_files(path) if os.path.lexists(p)]
            bind += [os.path.join(path, pkg) for pkg in ("engine", "tools", "turnstile_tools")
                     if os.path.isfile(os.path.join(path, pkg, "__init__.py"))]
            absent += [os.path.join(path, n) for n in STARTUP_FILES[:2]
                       if not os.path.lexists(os.path.join(path, n))]
        else:
            bind.append(path)
    return list(dict.fromkeys(bind)), absent


def startup_files(folder: str) -> list[str]:
    """What python runs at start from ``folder`` when it is a site folder: its ``*.pth``
    (their import lines) and ``sitecustomize``/``usercustomize``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n.endswith(".pth") or n in STARTUP_FILES]


def environment_startup_files(site: str, workspace: str) -> list[str]:
    """What python runs at every start of the environment whose ``site-packages`` is
    ``site``: its ``startup_files``, and the ``sitecustomize``/``usercustomize`` in each
    workspace folder a ``.pth`` line puts on ``sys.path`` (an editable install's ``src/``),
    imported from there when the interpreter has none of its own."""
    found = startup_files(site)
    for pth in [p for p in found if p.endswith(".pth")]:
        for folder in _pth_folders(pth, site):
            if _under(folder, workspace):
                found += [os.path.join(folder, n) for n in STARTUP_FILES
                          if os.path.lexists(os.path.join(folder, n))]
    return list(dict.fromkeys(found))


def _pth_folders(pth: str, site: str) -> list[str]:
    """The folders a ``.pth`` file's path lines add to ``sys.path`` (as ``site`` reads it)."""
    lines = _pth_lines(pth)
    return [os.path.realpath(os.path.join(site, line)) for line in lines or ()
            if not line.startswith(_PTH_CODE)]


def only_workspace_paths(pth: str, site: str, workspace: str) -> bool:
    """Whether the ``.pth`` file ``pth`` only puts workspace folders on ``sys.path`` (no line
    python runs): what ``uv`` and hatchling write for an editable install, kept after any
    command (a ``sitecustomize`` in those folders is itself a start-up file)."""
    lines = _pth_lines(pth)
    return lines is not None and all(
        not line.startswith(_PTH_CODE)
        and _under(os.path.realpath(os.path.join(site, line)), workspace) for line in lines)


_PTH_CODE = ("import ", "import\t")
"""A ``.pth`` line python runs (``site.addpackage``); any other line names a folder."""


def _pth_lines(pth: str) -> list[str] | None:
    """The lines of a ``.pth`` file that ``site`` acts on; None when it cannot be read."""
    if os.path.islink(pth) or not os.path.isfile(pth):
        return None
    try:
        with open(pth, "rb") as f:
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        return None
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


def _under(path: str, folder: str) -> bool:
    return Path(path).is_relative_to(folder)
