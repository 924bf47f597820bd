"""Path globs: the one matcher behind policy rules (``path``, ``tool``), ``.gitignore`` files,
``search_text``'s ``glob`` and the project server's globs.

Over ``/``-separated paths:

- ``*`` and ``?`` match within one path component (never a ``/``);
- ``**`` crosses components; ``**/`` may also match nothing (``**/*.py`` matches ``a.py``);
- ``[abc]``, ``[a-z]``, ``[!abc]`` / ``[^abc]`` match one character of a component; a ``[``
  without its ``]`` is literal;
- ``{a,b}`` is either alternative, groups nest (``*.{md,txt}``, ``{src,lib}/**``); a ``{``
  without a ``,`` is literal;
- ``\\x`` is a literal ``x``.

A pattern matches a whole path (not a prefix). Git's own rule that a ``**`` inside a component
is a plain ``*`` is applied by the ``.gitignore`` reader before it calls this module.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_ALTERNATIVES = 256
"""Brace expansion beyond this many patterns is refused (``{a,b}{c,d}...`` grows fast)."""

_BRACES = re.compile(r"(?<!\\)\{([^{}]*)\}")


class GlobError(ValueError):
    """A pattern that cannot be used (callers turn it into their own error, with the file)."""


def expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` -> ``['*.ts', '*.tsx']``: every alternative, innermost groups first,
    duplicates dropped, order kept."""
    out: list[str] = []
    todo = [pattern]
    while todo:
        item = todo.pop(0)
        group = next((m for m in _BRACES.finditer(item) if "," in m.group(1)), None)
        if group is None:
            if item not in out:
                out.append(item)
        else:
            head, tail = item[:group.start()], item[group.end():]
            todo.extend(head + alt + tail for alt in _split(group.group(1)))
        if len(out) + len(todo) > MAX_ALTERNATIVES:
            raise GlobError(f"glob {pattern!r} expands to more than {MAX_ALTERNATIVES} patterns")
    return out


def _split(body: str) -> list[str]:
    """The alternatives of one brace group (a ``\\,`` stays inside its alternative)."""
    return [part.replace("\\,", ",") for part in re.split(r"(?<!\\),", body)]


def translate(pattern: str) -> str:
    """The regex (for ``fullmatch``) of one brace-free pattern."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            piece, i = _one(pattern, i)
            out.append(piece)
    return "".join(out)


def _one(pattern: str, i: int) -> tuple[str, int]:
    """The regex of the single token at ``i`` and the index after it."""
    c = pattern[i]
    if c == "*":
        return "[^/]*", i + 1
    if c == "?":
        return "[^/]", i + 1
    if c == "\\" and i + 1 < len(pattern):
        return re.escape(pattern[i + 1]), i + 2
    if c == "[":
        end = _class_end(pattern, i)
        if end > 0:
            return _class(pattern[i + 1:end]), end + 1
    return re.escape(c), i + 1


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    return pattern.find("]", i)


def _class(body: str) -> str:
    """A character class that never matches ``/`` (a glob class stays in one component)."""
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("[", "\\[")
    if body.startswith("]"):
        body = "\\]" + body[1:]
    return f"[^/{body}]" if negated else f"(?!/)[{body}]"


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """One compiled regex for ``pattern`` with its braces expanded; ``GlobError`` if unusable."""
    parts = [translate(p) for p in expand_braces(pattern)]
    regex = parts[0] if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts)
    try:
        return re.compile(f"(?:{regex})\\Z", re.DOTALL)
    except re.error as exc:  # e.g. a reversed range such as [z-a]
        raise GlobError(f"glob {pattern!r}: {exc}") from exc


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (``/``-separated) matches ``pattern`` as a whole."""
    return compile_glob(pattern).match(path) is not None
