"""Unified diffs: making one between two texts, and applying one strictly.

The applier is deliberately strict about content (every context and removed line of a hunk must
match the file exactly, ignoring only ``\\r`` line endings) and lenient about positions and
counts (models often get line numbers wrong): a hunk that does not match at its stated line is
accepted where it matches exactly once at or after the previous hunk. Anything else is a
``ValueError`` whose message says which hunk, which line, and what differs.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_EOL = "\\ No newline at end of file"
_HEADERS = ("--- ", "+++ ", "diff ", "index ", "new file mode", "deleted file mode")


def make_patch(path: str, old: str | None, new: str) -> str:
    """The unified diff from ``old`` (None: the file did not exist) to ``new``."""
    old_lines = _keepends(old or "")
    new_lines = _keepends(new)
    out = []
    for line in difflib.unified_diff(
        old_lines, new_lines, "/dev/null" if old is None else f"a/{path}", f"b/{path}"
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append(f"\n{NO_EOL}\n")
    return "".join(out)


def _keepends(text: str) -> list[str]:
    """Lines split on ``\n`` only (``str.splitlines`` also splits on form feeds and others)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _lines(text: str) -> list[str]:
    """Lines without their ``\n`` (a ``\r`` stays), no empty last item for a final newline."""
    parts = text.split("\n")
    return parts[:-1] if parts[-1] == "" else parts


@dataclass
class Hunk:
    """One ``@@`` section of a diff."""

    header: str
    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    new_no_eol: bool = False
    """The new side's last line has no final newline."""
    old_no_eol: bool = False
    remaining: int = 0
    """Lines the header's counts still expect (0 once the body is complete)."""


def diff_target(diff: str) -> str | None:
    """The file a diff's ``+++`` header names (``a/``/``b/`` stripped), if it names one."""
    targets = set()
    for line in _lines(diff):
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                targets.add(name[2:] if name.startswith(("a/", "b/")) else name)
    if len(targets) > 1:
        raise ValueError(f"the diff changes {len(targets)} files ({', '.join(sorted(targets))});"
                         " edit one file per call")
    return targets.pop() if targets else None


def parse_hunks(diff: str) -> list[Hunk]:
    """The hunks of a single-file unified diff, in order."""
    hunks: list[Hunk] = []
    current: Hunk | None = None
    last_sign = ""
    for n, raw in enumerate(_lines(diff), 1):
        line = raw.rstrip("\r")
        in_body = current is not None and current.remaining > 0
        m = _HUNK.match(line)
        if m:
            old_n, new_n = (int(g) if g is not None else 1 for g in (m.group(2), m.group(4)))
            current = Hunk(line, int(m.group(1)), remaining=old_n + new_n)
            hunks.append(current)
        elif not in_body and line.startswith(_HEADERS):
            current = None
        elif not in_body and not line:
            continue  # blank lines after a complete hunk
        elif current is not None:
            last_sign = _add_body_line(current, line, n, last_sign)
    if not hunks:
        raise ValueError("the diff has no hunks (expected lines starting with '@@ -N,M +N,M @@')")
    return hunks


def _add_body_line(hunk: Hunk, line: str, n: int, last_sign: str) -> str:
    sign, text = (line[:1], line[1:]) if line else (" ", "")
    if sign == " ":
        hunk.old.append(text)
        hunk.new.append(text)
        hunk.remaining = max(0, hunk.remaining - 2)
    elif sign == "-":
        hunk.old.append(text)
        hunk.remaining = max(0, hunk.remaining - 1)
    elif sign == "+":
        hunk.new.append(text)
        hunk.remaining = max(0, hunk.remaining - 1)
    elif sign == "\\":
        hunk.new_no_eol = hunk.new_no_eol or last_sign in ("+", " ")
        hunk.old_no_eol = hunk.old_no_eol or last_sign in ("-", " ")
        return last_sign
    else:
        raise ValueError(f"line {n} of the diff is not part of a hunk (each hunk line starts "
                         f"with ' ', '-' or '+'): {line[:80]!r}")
    return sign


def apply_diff(text: str, diff: str) -> str:
    """``text`` with every hunk of ``diff`` applied; ``ValueError`` when a hunk does not match."""
    cr = "\r" if "\r\n" in text else ""
    lines = _lines(text)
    final_eol = text.endswith("\n") or not text
    out: list[str] = []
    cursor = 0
    for i, hunk in enumerate(parse_hunks(diff), 1):
        at = _locate(lines, hunk, cursor, i)
        out.extend(lines[cursor:at])
        out.extend(line if line.endswith("\r") else line + cr for line in hunk.new)
        cursor = at + len(hunk.old)
        if cursor == len(lines) and (hunk.new_no_eol or hunk.old_no_eol):
            final_eol = not hunk.new_no_eol
    out.extend(lines[cursor:])
    if out and not final_eol and cr:
        out[-1] = out[-1].removesuffix("\r")
    result = "\n".join(out)
    return result + "\n" if out and final_eol else result


def _locate(lines: list[str], hunk: Hunk, cursor: int, number: int) -> int:
    """Where ``hunk`` applies: its stated line if it matches there, else its unique match."""
    size = len(hunk.old)
    stated = hunk.old_start if size == 0 else hunk.old_start - 1
    if stated >= cursor and _matches(lines, hunk.old, stated):
        return stated
    found = [p for p in range(cursor, len(lines) - size + 1) if _matches(lines, hunk.old, p)]
    if len(found) == 1:
        return found[0]
    where = f"hunk {number} ({hunk.header})"
    if len(found) > 1:
        at = ", ".join(str(p + 1) for p in found[:5])
        raise ValueError(f"{where} matches at lines {at} and not at its stated line; "
                         "add context lines to make it unique")
    raise ValueError(f"{where} does not apply: {_first_difference(lines, hunk.old, stated)}; "
                     "read the file again and regenerate the diff")


def _matches(lines: list[str], old: list[str], at: int) -> bool:
    if at < 0 or at + len(old) > len(lines):
        return False
    return all(lines[at + k].rstrip("\r") == o.rstrip("\r") for k, o in enumerate(old))


def _first_difference(lines: list[str], old: list[str], at: int) -> str:
    for k, expected in enumerate(old):
        if at + k >= len(lines):
            return f"the file ends at line {len(lines)} but the hunk expects {expected!r}"
        if lines[at + k].rstrip("\r") != expected.rstrip("\r"):
            return (f"line {at + k + 1} is {lines[at + k][:120]!r} in the file but "
                    f"{expected[:120]!r} in the hunk")
    return f"its stated position (line {at + 1}) precedes an earlier hunk"
