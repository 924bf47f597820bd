"""What an ``ed`` script shown on the command line does to the file ed edits.

``printf '1p\\nq\\n' | ed -s f`` only prints; ``printf ',d\\nw\\n' | ed -s f`` empties f. The
script is read line by line as ed reads it: an address, then one command letter; text after
``a``, ``i`` or ``c`` runs to a line holding ``.``. Commands outside the small set read here
(``g``, ``v``, ``u``, ``f NAME``, anything unknown) make the script not understood, so its
judge asks; ``!cmd`` and ``r``/``w``/``e`` with ``!`` hand a shell command to the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ADDRESS = re.compile(r"(?:[0-9.$,;+\-\s]|'[a-z]|/(?:[^/\\]|\\.)*/|\?(?:[^?\\]|\\.)*\?)*")
_PRINTS = frozenset("pnl=qQhHPk")
"""Commands that print, move, mark or quit: the file is not changed by them."""
_CHANGES = frozenset("dsjmtaic")
"""Commands that change the buffer (a later ``w`` writes the change to the file)."""
_TEXT = frozenset("aic")
_WHOLE = re.compile(r"(?:,|%|1,\$)\s*")
"""The address of every line (``,d`` deletes them all)."""


@dataclass
class EdScript:
    """The commands of one script, as far as they are understood."""

    understood: bool = True
    changes: bool = False
    """The buffer is changed before a write."""
    empties: bool = False
    """Every line is deleted, then written: the file is emptied."""
    writes: list[str] = field(default_factory=list)
    """Files written (``""``: the file ed edits)."""
    reads: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """Shell commands it runs (``!cmd``, ``r !cmd``, ``w !cmd``, ``e !cmd``)."""


def read_script(text: str) -> EdScript:
    """The script ``text`` as ed runs it."""
    out = EdScript()
    deleted_all = False
    lines = iter(text.splitlines())
    for raw in lines:
        line = raw.strip()
        end = m.end() if (m := _ADDRESS.match(line)) else 0  # the pattern matches ""
        address, rest = line[:end], line[end:]
        if not rest:
            continue  # an address alone prints that line
        letter, arg = rest[0], rest[1:].strip()
        if letter == "!":
            out.commands.append(rest[1:])
        elif letter in "rewWE" and arg.startswith("!"):
            out.commands.append(arg[1:])
        elif letter in _PRINTS and (not arg or (letter == "k" and len(arg) == 1)):
            continue
        elif letter in _CHANGES:
            out.changes = True
            deleted_all = deleted_all or (letter == "d" and _WHOLE.fullmatch(address) is not None)
            if letter in _TEXT:
                deleted_all = False  # the text it adds is what is written
                for inner in lines:  # the text runs to a line holding only "."
                    if inner == ".":
                        break
        elif letter in "wW" and (not arg or (arg[:1] == "q" and not arg[1:].strip())):
            out.writes.append("")
            out.empties = out.empties or deleted_all
            if arg:
                break
        elif letter in "wW":
            out.writes.append(arg)
        elif letter in "re" and arg:
            out.reads.append(arg)
        else:
            out.understood = False
    return out
