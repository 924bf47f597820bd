"""What a makefile runs when make only prints its recipes (``make -n``) or only asks whether
they are needed (``make -q``).

Both still read the whole makefile, and reading runs ``$(shell ...)``, ``!=`` assignments
and whatever an ``include``d or ``load``ed file holds. ``-n`` also runs recipe lines marked
``+`` or naming ``$(MAKE)``, and a rule that can remake the makefile itself runs before
anything is printed (``make -f mfile -n foo`` updates mfile). A makefile is a dry run's only
when none of that can happen; what this module does not model (``define``, computed targets,
a recipe line that starts with an expansion) counts as running code.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Mapping

from engine.permissions.small_files import small_file

LIMIT = 1 << 20
"""Bytes of makefile read; a larger one is not judged (it may run code)."""

_RUNS_WHEN_READ = re.compile(r"\$[({]\s*(shell|eval|file|guile|MAKE)\b|\$[({]\s*call\s+"
                             r"(?:shell|eval|file|guile|[^,)}]*\$)")
"""Functions that run a program, read makefile code or write a file as the text is read, a
``$(call)`` of one of them (call invokes a built-in of that name) or of a computed name, and
``$(MAKE)`` (a recipe line naming it runs under ``-n``)."""
_DIRECTIVE = re.compile(r"\s*\.?(?:-?include|sinclude|-?load|define)\b")
"""Lines that read other files as makefile code (or load a plugin), or start a multi-line
value (which may become recipe lines, each with its own ``+``)."""
_SPECIAL = re.compile(r"\.RECIPEPREFIX|MAKEFLAGS|MFLAGS|MAKEFILES|\.SHELLFLAGS|\.MAKE\b|"
                      r"\$[({][^)}]*:(?:sh\b|!)")
"""Settings that change how recipe lines are found or which options make runs with; and
BSD make's ways to run commands (a ``.MAKE`` target runs under ``-n``, ``${X:sh}``)."""
_ASSIGNMENT = re.compile(r"\s*(?:(?:override|export|private|unexport)\s+)*[^\s:#=]+\s*"
                         r"(::?=|:::=|\?=|\+=|!=|=)")
_ASSIGNED = re.compile(r"(?:[^:=#]*:(?!=))?\s*(?:(?:override|export|private)\s+)*"
                       r"([A-Za-z_][\w.-]*)\s*(?:::?=|:::=|\?=|\+=|=)(.*)")
"""An assignment, or a target's own (``t: X = v``): the variable and its value."""
_REFERENCE = re.compile(r"\$\(([A-Za-z_][\w.-]*)\)|\$\{([A-Za-z_][\w.-]*)\}|\$([A-Za-z_])")
_READS_OUTSIDE = re.compile(r"\$[({]\s*(?:wildcard|realpath|abspath)\s+(?:[~/]|\.\.)")
_SUFFIXES = (".out", ".a", ".ln", ".o", ".c", ".cc", ".C", ".cpp", ".p", ".f", ".F", ".m",
             ".r", ".y", ".l", ".ym", ".yl", ".s", ".S", ".mod", ".sym", ".def", ".h",
             ".info", ".dvi", ".tex", ".texinfo", ".texi", ".txinfo", ".w", ".ch", ".web",
             ".sh", ".elc", ".el")
"""GNU make's built-in suffixes: a file ``Makefile.c`` or ``Makefile.sh`` beside the
makefile gives a built-in rule that remakes it."""


NAMES = ("GNUmakefile", "makefile", "Makefile")
"""The makefiles make looks for, in this order."""


def sources(makefiles: tuple[str, ...]) -> tuple[str, ...]:
    """Besides the makefiles, the files one of make's built-in rules would remake a makefile
    from (``Makefile.sh``, ``Makefile,v``, ``RCS/``): make remakes its makefiles, present or
    missing, before it prints anything."""
    out: list[str] = []
    for path in makefiles:
        folder, name = os.path.split(path)
        out += [os.path.join(folder, n) for n in (
            *(name + s for s in _SUFFIXES), name + ",v", "s." + name)]
        out += [os.path.join(folder, n) for n in ("RCS", "SCCS")]
    return tuple(dict.fromkeys(out))


def runs_when_dry(path: str, command_line: Mapping[str, str] | None = None) -> str:
    """Why the makefile at ``path`` may make ``make -n``/``-q`` run or change something as
    it reads it; "" when it only prints. ``command_line``: the variables make's words set
    (``make -n T=Makefile``), which take the place of the makefile's."""
    name = os.path.basename(path)
    text = _read(path)
    if text is None:
        return f"{name} cannot be read as a small file: it may hold code"
    lines = list(_logical_lines(text))
    assigned: dict[str, list[str]] = {k: [v] for k, v in (command_line or {}).items()}
    for _, line in lines:
        found = _ASSIGNED.match(line)
        if found and not line.startswith("\t"):
            assigned.setdefault(found.group(1), []).append(found.group(2))
    for number, line in lines:
        why = _line_runs(line, name, assigned)
        if why:
            return f"{name}, line {number}: {why}"
    return ""


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line with the lines a backslash continues joined to it, and where it starts."""
    start, held = 1, ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.endswith("\\"):
            start, held = (start if held else number), held + line[:-1] + " "
            continue
        yield (start if held else number), held + line
        held = ""


def remade_from(path: str) -> str:
    """Why a file found among ``sources`` runs a recipe before make prints anything."""
    return f"a built-in rule of make may remake a makefile from {os.path.basename(path)}"


def _line_runs(line: str, name: str, assigned: dict[str, list[str]]) -> str:
    """Why one logical line of the makefile runs something under ``make -n``."""
    if line.lstrip().startswith("#"):
        return ""
    found = _RUNS_WHEN_READ.search(line)
    if found:
        return f"{found.group(0).strip()}... runs as the makefile is read"
    special = _SPECIAL.search(line)
    if special:
        return f"{special.group(0)} changes how make runs"
    if _READS_OUTSIDE.search(line):
        return "a file name outside the folder is looked up"
    if line.startswith("\t"):
        return _recipe_runs(line[1:], assigned)
    if _DIRECTIVE.match(line):
        return f"{line.split()[0]} reads or makes more makefile code"
    assignment = _ASSIGNMENT.match(line)
    if assignment:
        return "a != assignment runs a command" if assignment.group(1) == "!=" else ""
    if ":" in line:
        return _rule_runs(line, name, assigned)
    return ""


def _recipe_runs(recipe: str, assigned: dict[str, list[str]]) -> str:
    """A recipe line runs under ``-n`` when marked ``+``, also by the value of a variable it
    starts with (``X := +cmd``, then ``$(X)``)."""
    if _marked(recipe, assigned, 0):
        return "a recipe line marked + runs even when make only prints"
    return ""


def _marked(text: str, assigned: dict[str, list[str]], depth: int) -> bool:
    """Whether ``text`` may start with ``+`` once expanded: a variable it starts with is
    followed through the values the makefile assigns it (one it does not assign is the
    environment's, the command line's or make's own); any other expansion may."""
    body = text.lstrip("@- \t")
    if body.startswith("+"):
        return True
    if not body.startswith("$"):
        return False
    ref = _REFERENCE.match(body)
    if ref is None or depth > 8:
        return True  # $@, $(if ..), $(call ..): not followed here
    name = ref.group(1) or ref.group(2) or ref.group(3)
    return any(_marked(v, assigned, depth + 1) for v in assigned.get(name, []))


def _rule_runs(line: str, name: str, assigned: dict[str, list[str]]) -> str:
    """A rule whose targets may name the makefile remakes it before anything is printed;
    its inline recipe (``t: ; cmd``) is a recipe line."""
    targets, _, rest = line.partition(":")
    prerequisites, semicolon, recipe = rest.partition(";")
    words = _expanded(targets, assigned, 0)
    if words is None:
        return f"the targets {targets.strip()} are only known when make reads them"
    if prerequisites.split() == [name]:
        words = [w for w in words if "%" not in w]  # %: Makefile (Sphinx's): circular for it
    for target in words:
        last = target.rstrip("/").rsplit("/", 1)[-1]
        if last == name or ("%" in last and fnmatch.fnmatchcase(
                name, last.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")
                .replace("%", "*"))):
            return f"the rule for {target} remakes the makefile before anything is printed"
    return _recipe_runs(recipe, assigned) if semicolon else ""


def _expanded(text: str, assigned: dict[str, list[str]], depth: int) -> list[str] | None:
    """The words ``text`` may expand to, each variable it names taking every value the
    makefile or the command line assigns it (one neither assigns holds what the user's
    environment does, else nothing); None for what is not followed (functions, automatic
    variables)."""
    if "$" not in text:
        return text.split()
    ref = re.search(r"\$.", text)
    found = _REFERENCE.match(text, ref.start()) if ref else None
    if found is None or depth > 8:
        return None
    values = assigned.get(found.group(1) or found.group(2) or found.group(3), [""])
    out: list[str] = []
    for value in values:
        words = _expanded(text[:found.start()] + value + text[found.end():], assigned,
                          depth + 1)
        if words is None:
            return None
        out += words
    return out


def _read(path: str) -> str | None:
    """The makefile's text; None for what is not a small regular file."""
    data = small_file(path, LIMIT)
    return None if data is None else data.decode("utf-8", "replace")
