"""Which leading fields of a command's output lines are numbers, for ``read`` to split.

Bash's arithmetic reads a word as a variable and runs a subscript in it, so a value read
from data (``a[$(cmd)]`` in a CSV) and then counted runs code. A field the producing
command always prints as a number cannot: ``uniq -c`` starts each line with a count,
``git diff --numstat`` with two counts (``-`` for a binary file), ``git log
--format='%ct %s'`` with a time. ``sort | uniq -c | sort -rn | while read -r n w; do (( t +=
n ))`` then counts numbers only. Filters that print some of their input lines unchanged
(``sort``, ``head``, ``grep -v``) keep the columns (``listings.keeps_lines``); ``awk '{print
$1}'`` and ``cut -f1`` keep a numeric column; ``tr -dc 0-9`` prints digits whatever it reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.permissions.constructs import ids_printed, numbers_printed
from engine.permissions.listings import keeps_lines
from engine.permissions.words import Word

EVERY = -1
"""Every field of every line is a number (``wc -l < f``, ``date +%s``)."""


@dataclass(frozen=True, slots=True)
class Columns:
    """The first ``count`` fields of each line are numbers, ended by ``separator``; with
    ``ids``, each line starts with a hex object id (``git log --format='%H %s'``)."""

    count: int = 0
    separator: str = " "
    ids: bool = False
    whole: bool = False
    """With ``ids``: each line is that one word, no blank in it (``git rev-list``)."""

    def id_first(self, at: int) -> bool:
        """Whether the ``at``-th variable ``read`` assigns starts with an object id, never
        with ``-``: the first takes a prefix of the line, whatever IFS splits at."""
        return self.ids and at == 0

    def numeric(self, at: int, names: int, ifs: str | None) -> bool:
        """Whether the ``at``-th of ``names`` variables ``read`` assigns holds a number
        when it splits at ``ifs`` (the last takes the rest of the line)."""
        if self.count == EVERY:
            return True  # any part of a line of numbers is digits and separators
        if ifs is None or not ifs or self.separator not in ifs or \
                any(c.isdigit() for c in ifs):
            return False  # IFS=, keeps "3 foo" whole; IFS=: splits "3:foo" after the 3
        return at < self.count and at < names - 1


NONE = Columns()


def columns_after(program: str, words: Sequence[Word], before: Columns) -> Columns:
    """The numeric columns ``program WORDS`` prints, reading lines with ``before``'s."""
    made = columns_printed(program, words)
    if made.count or made.ids:
        return made
    values = [w.value for w in words]
    if None in values:
        return NONE
    known = [v for v in values if v is not None]
    if keeps_lines([Word.of(program), *words]):
        return before
    if program == "tr":
        return _translated(known, before)
    if program == "awk" and len(known) == 1 and (m := _AWK_FIELD.fullmatch(known[0])):
        return _field(int(m.group(1)), " \t", before)
    if program == "cut":
        return _cut(known, before)
    if program == "xargs" and known in ([], ["echo"]):
        return before if before.count == EVERY else NONE  # the lines joined by blanks
    return NONE


_AWK_FIELD = re.compile(r"\{\s*print\s*\(?\s*\$(\d+)\s*\)?\s*;?\s*\}")
_NUMERIC_CHARS = re.compile(r"(?:0-9|\[:digit:\]|\[:space:\]|\[:blank:\]|\\n|\\t|[0-9 ,.:\n\t])+")


def _field(at: int, separators: str, before: Columns) -> Columns:
    """Field ``at`` (from 1) of each line, split at ``separators``."""
    if before.count == EVERY or (0 < at <= before.count and before.separator in separators):
        return Columns(EVERY)
    return Columns(ids=True) if at == 1 and before.ids else NONE


def _translated(known: list[str], before: Columns) -> Columns:
    """``tr -dc 0-9`` keeps digits only; ``tr -d ' '`` and ``tr '\\n' ' '`` keep a line of
    numbers one (characters taken out, or changed into characters of numbers)."""
    flags = "".join(v[1:] for v in known if v.startswith("-") and not v.startswith("--"))
    sets = [v for v in known if not v.startswith("-")]
    if not set(flags) <= set("dcCs") or len(sets) not in (1, 2):
        return NONE
    if "d" in flags and set("cC") & set(flags) and len(sets) == 1:
        return Columns(EVERY) if _NUMERIC_CHARS.fullmatch(sets[0]) else NONE
    if set("cC") & set(flags) or before.count != EVERY:
        return NONE
    return before if len(sets) == 1 or _NUMERIC_CHARS.fullmatch(sets[1]) else NONE


def _cut(known: list[str], before: Columns) -> Columns:
    """``cut -f1,2`` (at tabs, or ``-d' '``) of numeric columns."""
    fields = next((v[2:] or (known[i + 1] if i + 1 < len(known) else "")
                   for i, v in enumerate(known) if v.startswith("-f")), None)
    delimiter = next((v[2:] or (known[i + 1] if i + 1 < len(known) else "")
                      for i, v in enumerate(known) if v.startswith("-d")), "\t")
    rest = [v for i, v in enumerate(known) if not v.startswith("-") and not (
        i > 0 and known[i - 1] in ("-f", "-d"))]
    if fields is None or rest or not re.fullmatch(r"\d+(?:,\d+)*", fields) or \
            len(delimiter) != 1:
        return NONE
    found = [_field(int(f), delimiter, before) for f in fields.split(",")]
    if fields.split(",")[0] == "1" and before.ids:
        return Columns(ids=True)  # cut -d' ' -f1,3: the line still starts with the id
    return Columns(EVERY) if all(c.count == EVERY for c in found) else NONE


def columns_printed(program: str, words: Sequence[Word]) -> Columns:
    """The numeric columns ``program WORDS`` prints, whatever it reads."""
    if numbers_printed(program, words):
        return Columns(EVERY)
    values = [w.value for w in words]
    if None in values:
        return NONE
    known = [v for v in values if v is not None]
    if program == "uniq" and ("-c" in known or "--count" in known or any(
            re.fullmatch(r"-[diuc]*c[diuc]*", v) for v in known)) and _plain_uniq(known):
        return Columns(1)
    if program == "git":
        return _git_columns(known)
    if program in ("grep", "egrep", "fgrep") and _numbered_lines(known):
        return Columns(1, ":")
    return NONE


_GREP_FLAGS = set("nivwxEFGPsqaoIbyU")
"""grep's flags that leave each line ``N:text`` once ``-n`` asks for line numbers (no
file names, counts, context lines ``N-text`` or NUL ends)."""


def _numbered_lines(known: list[str]) -> bool:
    """``grep -n PAT FILE``: each line starts with its number and ``:``; with several
    files (unless ``-h``) each starts with the file's name instead."""
    flags = ""
    positionals: list[str] = []
    patterns = 0
    i = 0
    while i < len(known):
        v = known[i]
        if v in ("-e", "-f", "-m"):
            patterns += v != "-m"
            i += 2
            continue
        if re.fullmatch(r"-m\d+|--max-count=\d+|--line-number|--ignore-case", v):
            flags += "n" if v == "--line-number" else ""
        elif v.startswith("-") and len(v) > 1 and not v.startswith("--"):
            flags += v[1:]
        elif v.startswith("-") and v != "--":
            return False
        elif v != "--":
            positionals.append(v)
        i += 1
    files = positionals[0 if patterns else 1:]
    return "n" in flags and set(flags) <= _GREP_FLAGS | {"h"} and (
        len(files) <= 1 or "h" in flags)


_ID_FORMAT = re.compile(r"--(?:format|pretty)=(?:t?format:)?%[hH](?:[ \t].*)?")
"""A log format whose lines start with the commit's id (``%H``, ``%h %s``)."""


def _git_ids(verb: str, rest: list[str]) -> Columns:
    """``git rev-list HEAD``, ``git log --format=%H``, ``git log --oneline``: each line
    starts with a commit id (one line per commit: no graph, patch or stat); ``git tag -l
    'rc-*'``: each line is a name that starts as the pattern does, never with ``-``."""
    if verb == "rev-list":
        return Columns(ids=True, whole=True) if ids_printed("git", [verb, *rest]) else NONE
    if verb in ("tag", "branch"):
        listed = [w for w in rest if not w.startswith("-")]
        return Columns(ids=True, whole=True) if set(rest) - set(listed) <= {
            "-l", "--list"} and listed and all(re.match(r"[\w.]", w) for w in listed) else NONE
    options = [f"{w}={rest[i + 1]}" if w in ("--format", "--pretty") and i + 1 < len(rest)
               else w for i, w in enumerate(rest) if w.startswith("-")]
    shapes = [w for w in options if _ID_FORMAT.fullmatch(w) or w in (
        "--oneline", "--no-decorate", "--abbrev-commit", "--pretty=oneline")]
    if verb != "log" or not shapes or not all(
            _log_option(w) for w in options if w not in shapes) or (
            "--oneline" in options and any(w.startswith(("--format", "--pretty=f",
                                                          "--pretty=t")) for w in options)):
        return NONE
    return Columns(ids=True, whole=all(re.fullmatch(r"--(?:format|pretty)=(?:t?format:)?%[hH]",
                                                    w) for w in shapes))


def _plain_uniq(known: list[str]) -> bool:
    """``uniq -c`` reading its input (no file, no ``-z``: lines end at a newline)."""
    return all(re.fullmatch(r"-[diuc]+|--count|--repeated|--unique", v) for v in known)


_DIFF_KEEPS = re.compile(
    r"--numstat|--cached|--staged|-[MCwbRa]|--find-renames(=\S*)?|--find-copies(=\S*)?|"
    r"--no-renames|--ignore-\S+|--diff-filter=\S+|--relative(=\S*)?|--merge-base|"
    r"--no-color|--color=never|--text|--minimal|--patience|--histogram|"
    r"--diff-algorithm=\S+|--no-ext-diff|--no-textconv|--|-U\d*|--unified=\d+")
_TIMES = re.compile(r"--(?:format|pretty)=(?:t?format:)?((?:%[ac]t)(?:([ \t])%[ac]t)*)([ \t])?"
                    r"(.*)")
_PLAIN_PLACEHOLDERS = re.compile(
    r"(?:[^%]|%(?:[hHtTpPdDsfS%]|[ac][nNeElLdDrtiIs]|x09|x20))*")
"""What may follow the times in one line: placeholders that print no newline."""


def _git_columns(words: list[str]) -> Columns:
    while words and words[0].startswith("-"):  # git -C dir diff
        words = words[2:] if words[0] in ("-C", "-c") else words[1:]
    verb, rest = (words[0], words[1:]) if words else ("", [])
    options = [w for w in rest if w.startswith("-")]
    if verb == "diff" and "--numstat" in options and all(_DIFF_KEEPS.fullmatch(w)
                                                         for w in options):
        return Columns(2, "\t")  # "10\t2\tpath", "-\t-\tbinary": paths quoted, one line
    found = _git_ids(verb, rest)
    if found.ids:
        return found
    if verb != "log":
        return NONE
    options = [f"{w}={rest[i + 1]}" if w in ("--format", "--pretty") and i + 1 < len(rest)
               else w for i, w in enumerate(rest) if w.startswith("-")]
    formats = [m for w in options if (m := _TIMES.fullmatch(w))]
    others = [w for w in options if not _TIMES.fullmatch(w)]
    if len(formats) != 1 or not all(_log_option(w) for w in others):
        return NONE
    times, first, after, tail = formats[0].groups()
    if tail and not (after and _PLAIN_PLACEHOLDERS.fullmatch(tail)):
        return NONE
    separator = first or after or " "
    if after and after != separator:
        return NONE
    return Columns(times.count("%"), separator)


_LOG_OPTIONS = re.compile(
    r"-\d+|-n\d*|--max-count=\d+|--skip=\d+|--since=\S+|--after=\S+|--until=\S+|"
    r"--before=\S+|--author=\S+|--committer=\S+|--all|--branches|--tags|--remotes|"
    r"--no-merges|--merges|--first-parent|--reverse|--date-order|--topo-order|"
    r"--author-date-order|--date=\S+|--no-color|--color=never|--|--no-walk|--ancestry-path|"
    r"--follow|--full-history|--simplify-merges|--simplify-by-decoration|--grep=\S+|-i|"
    r"--all-match|--invert-grep|--regexp-ignore-case|-[EF]|-[SG]\S+|--diff-filter=\S+|"
    r"--no-renames|--max-parents=\d+|--min-parents=\d+")


def _log_option(word: str) -> bool:
    """A ``git log`` option that keeps one line per commit (no patch, no stat, no graph)."""
    return _LOG_OPTIONS.fullmatch(word) is not None
