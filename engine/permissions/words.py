"""Shell words: one argument as the shell would pass it, or a marker that it is known only later.

The parser adapter (``shell.py``) turns syntax into ``Word`` values; the per-program rules
(``rules.py``) read them without knowing anything about the parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Dynamic = Literal["", "var", "subst", "other", "input"]

_BRACE = re.compile(r"\{([^{}]*)\}")
_SEQ = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?\Z")
MAX_EXPANSIONS = 64
INPUT_VAR = "__INPUT__"
"""The variable a replace string (``xargs -I{}``, ``find -exec {}``) becomes in shell code: a
word only known at run time, never an empty string that would make ``sh -c '{}'`` parse as
nothing."""
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


def values(words: list[Word]) -> list[str | None]:
    return [w.value for w in words]


def expand_braces(text: str) -> list[str]:
    """Bash brace expansion of ``text`` (``a{b,c}`` and ``{1..3}``), capped in size."""
    out: list[str] = []
    todo = [text]
    while todo:
        item = todo.pop()
        expanded = _expand_one(item)
        if expanded is None:
            out.append(item)
        else:
            todo.extend(reversed(expanded))
        if len(out) + len(todo) > MAX_EXPANSIONS:
            return [*out, *todo]
    return out


def _expand_one(text: str) -> list[str] | None:
    for m in _BRACE.finditer(text):
        inner = m.group(1)
        head, tail = text[: m.start()], text[m.end():]
        if "," in inner:
            return [head + part + tail for part in inner.split(",")]
        seq = _SEQ.match(inner)
        if seq:
            return [head + part + tail for part in _sequence(*seq.groups())]
    return None


def _sequence(start: str, end: str, step: str | None) -> list[str]:
    """``{1..9}``, ``{a..e..2}``: one more than ``MAX_EXPANSIONS`` items at most (enough for
    ``expand_braces`` to know it overflowed, never a silent cut)."""
    inc = abs(int(step)) if step and int(step) else 1
    if start.lstrip("-").isdigit() and end.lstrip("-").isdigit():
        a, b = int(start), int(end)
        rng = range(a, b + 1, inc) if a <= b else range(a, b - 1, -inc)
        return [str(n) for n in rng[:MAX_EXPANSIONS + 1]]
    if len(start) == 1 and len(end) == 1 and not start.isdigit() and not end.isdigit():
        a, b = ord(start), ord(end)
        rng = range(a, b + 1, inc) if a <= b else range(a, b - 1, -inc)
        return [chr(n) for n in rng[:MAX_EXPANSIONS + 1]]
    return [f"{start}..{end}"]


def braces_overflow(text: str) -> bool:
    """Whether ``text`` expands to more words than ``expand_braces`` gives back."""
    words = expand_braces(text)
    return len(words) > MAX_EXPANSIONS or any(_expand_one(w) is not None for w in words)
