"""``.gitignore`` rules matched in Python, and a walk of the workspace that never enters ``.git``.

Used where git cannot answer (a workspace that is not a repository) and for paths git has not
seen yet (a file a command just created). Implements the documented gitignore syntax:
comments, ``!`` negation, trailing ``/`` for directories only, a ``/`` at the start or in the
middle anchors a pattern to its file's directory, ``*``, ``?``, ``[...]`` and ``**``. Every
``.gitignore`` from the workspace root down applies to its own subtree (deeper files win), plus
``.git/info/exclude`` and git's default global ignore file (``$XDG_CONFIG_HOME/git/ignore``,
else ``~/.config/git/ignore``); the last matching rule decides. Like git, an ignored directory
is not entered, so its files cannot be re-included. Symlinks are reported but never followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from engine.vocabulary.globs import translate

ALWAYS_SKIPPED = frozenset({".git"})


@dataclass(frozen=True, slots=True)
class Rule:
    """One gitignore line, compiled."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool
    """Matched against the path relative to the rule's directory, else against the name."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One walked file or directory."""

    rel: str
    """Relative to the workspace root, POSIX form."""
    path: str
    is_dir: bool
    is_symlink: bool
    depth: int
    """1 for entries directly inside the walk's start."""


def glob_regex(pattern: str) -> str:
    """A gitignore pattern as a regex over ``/``-separated paths (for ``fullmatch``), through
    the project's one glob matcher (``engine.vocabulary.globs``). Git's own rules on top: a ``**``
    that
    is not a whole component is a plain ``*``; braces stay literal (``translate`` does not
    expand them, and git has none)."""
    parts = [p if p == "**" else re.sub(r"\*{2,}", "*", p) for p in pattern.split("/")]
    return translate("/".join(parts))


def parse_rules(text: str) -> list[Rule]:
    """The rules of one ``.gitignore`` file, in file order."""
    rules = []
    for line in text.splitlines():
        rule = _parse_line(line)
        if rule is not None:
            rules.append(rule)
    return rules


def _parse_line(line: str) -> Rule | None:
    line = line.rstrip() + " " if line.endswith("\\ ") else line.rstrip()
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    return Rule(re.compile(glob_regex(line)), negated, dir_only, anchored)


@dataclass(frozen=True, slots=True)
class IgnoreStack:
    """The rule files in force for one directory, outermost first."""

    layers: tuple[tuple[str, tuple[Rule, ...]], ...] = ()
    """(directory relative to the root with a trailing ``/`` or ``""``, rules)."""

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool:
        if name in ALWAYS_SKIPPED:
            return True
        for base, rules in reversed(self.layers):
            if not rel.startswith(base):
                continue
            local = rel[len(base):]
            for rule in reversed(rules):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.fullmatch(local if rule.anchored else name):
                    return not rule.negated
        return False

    def enter(self, root: Path, rel_dir: str) -> IgnoreStack:
        """The stack for directory ``rel_dir`` (adds its ``.gitignore`` if it has one)."""
        rules = _read_rules(os.path.join(root, rel_dir, ".gitignore"))
        if not rules:
            return self
        base = f"{rel_dir}/" if rel_dir else ""
        return IgnoreStack((*self.layers, (base, tuple(rules))))


def _read_rules(path: str | Path) -> list[Rule]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_rules(f.read())
    except OSError:
        return []


def global_ignore_file() -> Path | None:
    """git's default ``core.excludesFile`` (the engine's own git calls read no global config,
    so this default is the one they apply too)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    home = os.environ.get("HOME")
    base = Path(xdg) if xdg else Path(home) / ".config" if home else None
    return base / "git" / "ignore" if base is not None else None


def root_stack(root: Path) -> IgnoreStack:
    """The stack at the workspace root: the global ignore file, ``.git/info/exclude``, then
    the root ``.gitignore`` (later layers win)."""
    found = global_ignore_file()
    outer = (_read_rules(found) if found is not None else []) + _read_rules(
        root / ".git" / "info" / "exclude")
    stack = IgnoreStack((("", tuple(outer)),) if outer else ())
    return stack.enter(root, "")


def stack_for(root: Path, rel_dir: str) -> IgnoreStack:
    """The stack in force inside ``rel_dir`` (every ``.gitignore`` from the root down)."""
    stack = root_stack(root)
    if rel_dir in ("", "."):
        return stack
    parts = rel_dir.split("/")
    for i in range(1, len(parts) + 1):
        stack = stack.enter(root, "/".join(parts[:i]))
    return stack


class Judge(Protocol):
    """What a walk asks of each entry: ignored or not, and the judge of a folder it enters."""

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool: ...

    def enter(self, root: Path, rel_dir: str) -> Judge: ...


@dataclass(frozen=True, slots=True)
class NothingIgnored:
    """The judge of a walk that asked for ignored files too: only ``.git`` stays out."""

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool:
        return name in ALWAYS_SKIPPED

    def enter(self, root: Path, rel_dir: str) -> NothingIgnored:
        return self


def walk(root: Path, start: Path, max_depth: int | None = None,
         judge: Judge | None = None) -> Iterator[Entry]:
    """Depth-first, name-sorted entries under ``start`` that ``judge`` keeps (default: what
    git would not ignore, by the ``.gitignore`` files from ``root`` down)."""
    rel_start = start.relative_to(root).as_posix()
    rel_start = "" if rel_start == "." else rel_start
    rules: Judge = judge if judge is not None else stack_for(root, rel_start)
    open_dirs = [(iter(_scan(str(start), rel_start, rules, 1)), rules)]
    while open_dirs:
        entries, rules = open_dirs[-1]
        entry = next(entries, None)
        if entry is None:
            open_dirs.pop()
            continue
        yield entry
        if entry.is_dir and (max_depth is None or entry.depth < max_depth):
            inner = rules.enter(root, entry.rel)
            open_dirs.append((iter(_scan(entry.path, entry.rel, inner, entry.depth + 1)), inner))


def _scan(directory: str, rel_dir: str, stack: Judge, depth: int) -> list[Entry]:
    """The directory's entries that are not ignored, sorted by name."""
    try:
        with os.scandir(directory) as it:
            found = sorted(it, key=_name)
    except OSError:
        return []
    entries = []
    prefix = f"{rel_dir}/" if rel_dir else ""
    for e in found:
        rel = prefix + e.name
        link = e.is_symlink()
        is_dir = not link and e.is_dir(follow_symlinks=False)
        if not stack.ignored(rel, e.name, is_dir):
            entries.append(Entry(rel, e.path, is_dir, link, depth))
    return entries


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name
