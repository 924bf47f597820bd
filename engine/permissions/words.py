"""Shell words: one argument as the shell would pass it, or a marker that it is known only later.

The parser adapter (``shell.py``) turns syntax into ``Word`` values; the per-program rules
(``rules.py``) read them without knowing anything about the parser.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Dynamic = Literal["", "var", "subst", "other", "input"]

_BRACE = re.compile(r"\{([^{}]*)\}")
_SEQ = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?\Z")
MAX_EXPANSIONS = 64
"""Brace words followed where each is judged as a program or a loop value."""
MAX_PATH_WORDS = 20_000
"""Brace words followed in a path argument: each is one path to judge, as a glob's matches are
(20,000 take about half a second); beyond it, a path only known at run time."""
INPUT_VAR = "__INPUT__"
"""The variable a replace string (``xargs -I{}``, ``find -exec {}``) becomes in shell code: a
word only known at run time, never an empty string that would make ``sh -c '{}'`` parse as
nothing."""
STDIN_FILES = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
"""Names a program given a file reads its standard input through: a script file among
them is the here-document or the printer feeding it (``awk -f /dev/stdin <<< CODE``)."""


INPUT_CODE = '"${__INPUT__}"'


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal; ``value`` is None when only the running shell knows."""

    value: str | None
    text: str
    """As written in the command (shown when the value is unknown)."""
    dynamic: Dynamic = ""
    """Why the value is unknown: a variable, a command substitution, something else."""
    unset: bool = False
    """Unknown because a variable is unset: it expands to "" and fails closed."""
    expandable: bool = False
    """Contains unquoted glob or brace characters the shell would expand."""
    made: bool = False
    """A variable holding the path ``mktemp`` made in this command (``t=$(mktemp -d)``):
    new, so nothing of anyone's is there; where it is, only known at run time."""
    dashless: bool = False
    """Only known at run time, but never a word that starts with ``-`` (an option): what
    prints hex object ids gives it (``"$(git merge-base HEAD main)"``, ``"$c"`` of ``for c
    in $(git rev-list -n 5 HEAD)``)."""
    numbers: str | None = None
    """Only known at run time, but each unknown part is a number: the word with each
    written as ``1`` (``"${from},$((n + 20))p"`` is ``1,1p``), for a rule whose reading
    depends on the letters around the numbers, not on them (a sed script)."""

    @property
    def shown(self) -> str:
        return self.value if self.value is not None else self.text

    @classmethod
    def of(cls, value: str) -> Word:
        return cls(value, value)


def with_input(word: Word, marker: str) -> Word:
    """``word`` with the replace string ``marker`` standing for data read at run time.

    The value becomes unknown (a path or program only known then); ``text`` keeps the word as
    shell code with the marker replaced by ``INPUT_CODE``, so ``sh -c 'rm {}'`` is still judged.
    """
    if not marker or word.value is None or marker not in word.value:
        return word
    return Word(None, word.value.replace(marker, INPUT_CODE), "input")


def code_of(word: Word) -> str | None:
    """The shell code a word carries: its value, or its text when it holds a replace string."""
    if word.value is not None:
        return word.value
    return word.text if word.dynamic == "input" else None


def printable(value: Any) -> Any:
    """``value`` with every string made encodable: bytes that are not UTF-8 (kept as lone
    surrogates when read from argv or raw stdin) become ``\\xNN`` escapes."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v) for v in value]
    return value


REASON_WORDS = 24
"""Words of a command a one-line reason shows; the preview shows every word."""


def reason_command(argv: Sequence[str]) -> str:
    """``argv`` quoted for a one-line reason: its first ``REASON_WORDS`` words and how many
    more (``touch f{1..20000}`` made a reason of 120 KB)."""
    if len(argv) <= REASON_WORDS:
        return shlex.join(argv)
    return f"{shlex.join(argv[:REASON_WORDS])} ... ({len(argv) - REASON_WORDS} more words)"


def values(words: list[Word]) -> list[str | None]:
    return [w.value for w in words]


def expand_braces(text: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """Bash brace expansion of ``text`` (``a{b,c}`` and ``{1..3}``): at most ``limit`` words,
    plus what is left unexpanded once that many are made (``brace_words`` tells them apart)."""
    out: list[str] = []
    todo = [text]
    while todo:
        item = todo.pop()
        expanded = _expand_one(item, limit)
        if expanded is None:
            out.append(item)
        else:
            todo.extend(reversed(expanded))
        if len(out) + len(todo) > limit:
            return [*out, *todo]
    return out


def brace_words(text: str, limit: int = MAX_EXPANSIONS) -> list[str] | None:
    """Every word bash makes of ``text``'s braces, or None when there are more than ``limit``
    (the caller then treats the word as known only at run time, never as a shorter list)."""
    words = expand_braces(text, limit)
    if len(words) > limit or any(_expand_one(w, limit) is not None for w in words):
        return None
    return words


def _expand_one(text: str, limit: int) -> list[str] | None:
    for m in _BRACE.finditer(text):
        inner = m.group(1)
        head, tail = text[: m.start()], text[m.end():]
        if "," in inner:
            return [head + part + tail for part in inner.split(",")]
        seq = _SEQ.match(inner)
        if seq:
            start, end, step = seq.groups()
            return [head + part + tail for part in _sequence(start, end, step, limit)]
    return None


def _sequence(start: str, end: str, step: str | None, limit: int) -> list[str]:
    """``{1..9}``, ``{a..e..2}``: one more than ``limit`` items at most (enough for
    ``brace_words`` to know it overflowed, never a silent cut)."""
    inc = abs(int(step)) if step and int(step) else 1
    if start.lstrip("-").isdigit() and end.lstrip("-").isdigit():
        a, b = int(start), int(end)
        rng = range(a, b + 1, inc) if a <= b else range(a, b - 1, -inc)
        return [str(n) for n in rng[:limit + 1]]
    if len(start) == 1 and len(end) == 1 and not start.isdigit() and not end.isdigit():
        a, b = ord(start), ord(end)
        rng = range(a, b + 1, inc) if a <= b else range(a, b - 1, -inc)
        return [chr(n) for n in rng[:limit + 1]]
    return [f"{start}..{end}"]
