"""What a glob matches now, under the shell options that widen it.

``shopt -s nocaseglob`` matches without regard to case, ``dotglob`` lets ``*`` match names
that start with a dot, ``globstar`` lets ``**`` match any depth of folders. Python's ``glob``
knows none of the first and follows links for the last, so a pattern under any of them is
matched here by walking the folders, as bash 5 does: a folder reached through a link is
listed but not descended into by ``**``. Where the command may set an option (in a branch,
or by a word only known at run time), matches are taken under it: a superset of those
without. The walk is bounded (``MAX_GLOB_ENTRIES``); past the bound the matches are only
known at run time (None), never a shorter list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from engine.permissions.made_files import MadeFiles

GLOB = re.compile(r"(?<!\\)[*?\[]")
"""A word holds a pattern character (not escaped)."""
GLOB_OPTIONS = frozenset({"nocaseglob", "dotglob", "globstar"})
"""The ``shopt`` options that make a pattern match more names."""
MAX_GLOB_ENTRIES = 200_000
"""Folder entries one pattern's walk looks at before its matches count as unknown."""


class _TooMany(Exception):
    """The walk looked at more than ``MAX_GLOB_ENTRIES`` entries."""


MISREAD_NAME = re.compile(r"[$`;|&<>'\"\\{\n]|\s[-~]")
"""A character of a file name that makes it something else once bash pastes it into code or
splits it unquoted: a ``$(..)``, a ``;``, a quote, a blank before ``-`` (an option) or ``~``.
(A name that starts with ``-`` is judged where a program reads its words.)"""

def glob_matches(pattern: str, root: str | None, options: frozenset[str] = frozenset(),
                 made: MadeFiles | None = None) -> list[str] | None:
    """Matches of ``pattern`` now, relative to ``root`` unless absolute (none when the
    pattern cannot name a file), in the folders as ``made`` leaves them when given (what
    the command made before the word: its links are gone into); None when a walk under
    ``options`` is too large to follow."""
    if "\x00" in pattern:
        return []
    try:
        return sorted(set(_walk(pattern, root or os.getcwd(), options, made or MadeFiles())))
    except _TooMany:
        return None


def _walk(pattern: str, root: str, options: frozenset[str], made: MadeFiles
          ) -> Iterator[str]:
    absolute = pattern.startswith("/")
    parts = [p for p in pattern.split("/") if p]
    dirs_only = pattern.endswith("/")  # folders only, each written with its "/"
    budget = [MAX_GLOB_ENTRIES]
    prefixes = ["/" if absolute else ""]
    for i, part in enumerate(parts):
        final = i == len(parts) - 1
        found: list[str] = []
        for prefix in prefixes:
            found.extend(_step(prefix, part, root, options, final, dirs_only, budget, made))
        prefixes = found
    yield from (p for p in prefixes if p)  # "**" of no folder at the top: nothing


def _step(prefix: str, part: str, root: str, options: frozenset[str], final: bool,
          dirs_only: bool, budget: list[int], made: MadeFiles) -> list[str]:
    """The paths one component makes after ``prefix``: folders end with ``/`` unless the
    component is the last of a pattern not ending in ``/`` (then files too)."""
    last = final and not dirs_only
    where = os.path.join(root, prefix) if prefix else root
    if not GLOB.search(part):
        path = os.path.join(where, part)
        if _exists(path, made) and (last or _is_dir(path, made)):
            return [prefix + part + ("" if last else "/")]
        return []
    if part == "**" and "globstar" in options:  # last, it also matches its folder itself
        return [prefix + p for p in _below(where, "", options, last, final, budget, made)] + (
            [prefix] if last and prefix else [])
    regex = _component_regex(part, "nocaseglob" in options)
    hidden = part.startswith(".") or "dotglob" in options
    out = []
    for name, is_dir in _entries(where, budget, made):
        if name.startswith(".") and not hidden:
            continue
        if regex.fullmatch(name) and (last or is_dir):
            out.append(prefix + name + ("" if last else "/"))
    return out


def _below(where: str, rel: str, options: frozenset[str], last: bool, final: bool,
           budget: list[int], made: MadeFiles) -> Iterator[str]:
    """``**``: zero or more folders (ending ``/``) under ``where``, or, last, every name
    under it. A link to a folder is never gone into; it is one of the folders only for a
    final ``**/`` (bash lists it there, but ``**/x`` does not look in it)."""
    if not last:
        yield rel
    for name, is_dir in _entries(os.path.join(where, rel) if rel else where, budget, made):
        if name.startswith(".") and "dotglob" not in options:
            continue
        path = rel + name
        full = os.path.normpath(os.path.join(where, path))
        link = is_dir and (os.path.islink(full) or full in made.links)
        if last:
            yield path
        elif link and final:
            yield path + "/"
        if is_dir and not link:
            yield from _below(where, path + "/", options, last, final, budget, made)


def _exists(path: str, made: MadeFiles) -> bool:
    return made.exists(os.path.abspath(path)) if made else os.path.lexists(path)


def _is_dir(path: str, made: MadeFiles) -> bool:
    return made.is_dir(os.path.abspath(path)) if made else os.path.isdir(path)


def _entries(folder: str, budget: list[int], made: MadeFiles) -> Iterator[tuple[str, bool]]:
    """A folder's names, each with whether it is a folder; with ``made``, the folder a link
    the command made leads to, and the names the command made in it."""
    if made:
        folder = os.path.abspath(folder)
        yield from made.entries(folder)
        folder = made.resolve(folder, copies=True)
    try:
        with os.scandir(folder) as it:
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    raise _TooMany
                try:
                    yield entry.name, entry.is_dir()
                except OSError:
                    yield entry.name, False
    except OSError:  # gone, not a folder, not readable, or a /proc entry that refuses
        return


def _component_regex(part: str, nocase: bool) -> re.Pattern[str]:
    """One component's pattern as a regular expression: ``*``, ``?``, ``[..]`` (``[^..]`` and
    ``[!..]`` negate, ``[:alpha:]`` and the other classes of the C locale), ``\\x``."""
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "\\" and i + 1 < len(part):
            i += 1
            out.append(_literal(part[i], nocase))
        elif ch == "[" and (found := _bracket(part, i, nocase)) is not None:
            regex, i = found
            out.append(regex)
            continue
        else:
            out.append(_literal(ch, nocase))
        i += 1
    return re.compile("".join(out), re.S)


def _literal(ch: str, nocase: bool) -> str:
    """One character; under nocaseglob a letter in either case (a class is not widened)."""
    if nocase and ch.lower() != ch.upper():
        return f"[{re.escape(ch.lower())}{re.escape(ch.upper())}]"
    return re.escape(ch)


def _bracket(part: str, start: int, nocase: bool) -> tuple[str, int] | None:
    """The bracket expression at ``start`` as a regular expression class, and where it ends;
    None when it does not close (then ``[`` is itself)."""
    i = start + 1
    negate = i < len(part) and part[i] in "!^"
    i += negate
    items: list[str] = []
    first = True
    while i < len(part):
        ch = part[i]
        if ch == "]" and not first:
            body = "".join(items)
            return (f"[^{body}]" if negate else f"[{body}]") if body else "(?!)", i + 1
        m = _CLASS_NAME.match(part, i)
        if m is not None:
            items.append(_CLASSES.get(m.group(1), ""))
            i = m.end()
        elif ch == "\\" and i + 1 < len(part):
            items.append(re.escape(part[i + 1]))
            i += 2
        elif i + 2 < len(part) and part[i + 1] == "-" and part[i + 2] != "]":
            lo, hi = part[i], part[i + 2]
            items.append(_range(lo, hi, nocase))
            i += 3
        else:
            items.append(re.escape(ch) + (re.escape(ch.swapcase()) if nocase else ""))
            i += 1
        first = False
    return None


def _range(lo: str, hi: str, nocase: bool) -> str:
    """``a-f`` in a bracket (nothing when reversed); under nocaseglob its letters in the
    other case too."""
    if lo > hi:
        return ""
    out = f"{re.escape(lo)}-{re.escape(hi)}"
    if nocase and lo.isalpha() and hi.isalpha() and lo.isupper() == hi.isupper():
        out += f"{re.escape(lo.swapcase())}-{re.escape(hi.swapcase())}"
    return out


_CLASS_NAME = re.compile(r"\[:(\w+):\]")
_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f",
            "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "word": "\\w",
            "cntrl": "\\x00-\\x1f\\x7f", "graph": "!-~", "print": " -~"}
"""Character classes as bash knows them in the C locale."""
