"""C preprocessing: the files a compiler reads because its sources' directives name them.

``gcc -E a.c`` prints ``a.c`` with every file it includes, and ``gcc -fsyntax-only`` quotes
their lines in its diagnostics: a source holding ``#include "/home/agent/.ssh/id_rsa"`` prints
a key the command line never names. ``directives`` reads the directives that name files out
of a source's text, erring towards seeing more than the compiler does (a directive may start
a line or follow its first ``*/``; lines are read with and without their continuations
joined, with and without trigraphs; what ``#if`` leaves out is read too). ``IncludeWalk``
follows them from the sources through the folders the run searches, as gcc does, and says
why one may not be read unasked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from engine.permissions.small_files import small_file
from engine.permissions.words import Word

MAX_FILES = 2_000
"""Sources and headers one run may come to before what they include is not judged."""
MAX_BYTES = 8 << 20
"""Bytes of them read before what they include is not judged."""
SETTINGS = frozenset({"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH",
                      "OBJCPLUS_INCLUDE_PATH", "DEPENDENCIES_OUTPUT", "SUNPRO_DEPENDENCIES",
                      "GCC_EXEC_PREFIX", "COMPILER_PATH", "GCC_COMPARE_DEBUG"})
"""Variables that give gcc include folders, dependency files to write or programs to run
(clang's ``CCC_*``, ``CC_PRINT_*``, ``CC_LOG_*`` too): set, the search is not the one shown."""


def hidden_setting(name: str) -> bool:
    """Whether the variable ``name`` changes what a C compiler reads or writes (``SETTINGS``)."""
    return name in SETTINGS or name.startswith(("CCC_", "CC_PRINT", "CC_LOG"))


@dataclass(frozen=True, slots=True)
class Preprocess:
    """A compiler run that only preprocesses or checks syntax: besides its sources it reads
    what they include, looked for in these folders."""

    how: str
    """The program and its mode, for reasons (``gcc -E``, ``cpp``)."""
    sources: tuple[Word, ...]
    quote_dirs: tuple[Word, ...] = ()
    """``-iquote`` folders: looked in for ``"name"`` after the including file's own."""
    dirs: tuple[Word, ...] = ()
    """``-I``, ``-isystem``, ``-idirafter`` folders: looked in for ``"name"`` and ``<name>``."""
    stdin: str | None = None
    """Source text given on standard input (a here-document): its ``"name"`` is looked for
    in the working directory first."""


class Directive(NamedTuple):
    """A directive that names a file."""

    kind: str
    """``include`` (read as C), ``embed`` (read as bytes), ``has`` (only looked for), or
    ``hidden``: the file is named some other way (a macro, a pragma)."""
    name: str
    """The name between the quotes or angle brackets; for ``hidden``, the directive."""
    quoted: bool = False


_GAP = r"(?:[ \t\f\v\r]|/\*(?:[^*]|\*+[^*/])*\*+/)*"
"""Blanks and comments on one line (unambiguous, so matching stays linear)."""
_DIRECTIVE = re.compile(rf"{_GAP}(?:#|%:|\?\?=){_GAP}([A-Za-z_]\w*)(.*)")
_HEADER_UNIT = re.compile(rf"{_GAP}(?:export\b{_GAP})?import{_GAP}([\"<].*)")
"""C++20 ``import "x.h";``: a header unit, read like an include."""
_MAY_DIRECT = re.compile(r"#|%:|\?\?=|import")
"""What every line holding a directive or a header unit has (most lines have none)."""
_OPERAND = re.compile(rf'{_GAP}(?:"([^"\n]*)"|<([^>\n]*)>)')
_CONTINUED = re.compile(r"\\[ \t\f\v]*(?:\r\n|\r|\n)")
_HAS = re.compile(rf"\b__has_(?:include_next|include|embed)\b{_GAP}\(")
_PRAGMA_OPERATOR = re.compile(rf'\b(?:_Pragma|__pragma)\b(?:{_GAP}\({_GAP}(?:L|u8|u|U)?'
                              rf'"((?:\\.|[^"\\\n])*)"{_GAP}\))?')
"""``_Pragma("...")``: its string is judged like a ``#pragma``; any other operand (``#x``
in a macro) is only known when the macro expands."""
_NAMES_FILE = re.compile(r"\b(?:dependency|include\w*|embed\w*|import|module\w*|"
                         r"pch_preprocess|load|plugin|__debug)\b", re.I)
"""Pragmas that name or load a file (``GCC dependency``, ``GCC pch_preprocess``,
``include_alias``, ``clang module import``)."""
_READS = {"include": "include", "include_next": "include", "import": "include",
          "__include_macros": "include", "embed": "embed"}
_TRIGRAPHS = dict(zip("=/'()!<>-", "#\\^[]|{}~", strict=True))


def directives(text: str) -> set[Directive]:
    """The directives of a source's ``text`` that name files, as any reading of it may find
    them (``#include``, ``#include_next``, ``#import``, ``#embed``, ``__has_include``, a
    C++ header unit, a pragma that names a file, an operand a macro makes)."""
    found: set[Directive] = set()
    readings = [text.removeprefix("\ufeff")]
    if "??" in text:  # -std=c11 reads trigraphs, -std=gnu11 does not
        readings.append(re.sub(r"\?\?([=/'()!<>-])", lambda m: _TRIGRAPHS[m.group(1)],
                               readings[0]))
    for reading in readings:
        joined = _CONTINUED.sub("", reading)
        for line in (*reading.splitlines(), *joined.splitlines()):
            if _MAY_DIRECT.search(line):
                found.update(_line_directives(line))
        found.update(_operators(joined))
    return found


def _line_directives(line: str) -> list[Directive]:
    """The directive a line holds, where it may start: at the line's start, or after its
    first ``*/`` (a comment from the lines before ends there)."""
    out: list[Directive] = []
    end = line.find("*/")
    for start in (0, end + 2) if end >= 0 else (0,):
        m = _DIRECTIVE.match(line, start)
        if m is not None:
            keyword, rest = m.groups()
            if keyword in _READS:
                out.append(_named(_READS[keyword], f"#{keyword}", rest))
            elif keyword == "pragma" and _NAMES_FILE.search(rest):
                out.append(Directive("hidden", f"#pragma{rest}".strip()))
        unit = _HEADER_UNIT.match(line, start)
        if unit is not None:
            out.append(_named("include", "import", unit.group(1)))
    return out


def _named(kind: str, keyword: str, rest: str) -> Directive:
    """``"name"`` or ``<name>`` at the start of ``rest``; anything else is hidden."""
    m = _OPERAND.match(rest)
    if m is None:
        return Directive("hidden", f"{keyword}{rest}".strip())
    quoted = m.group(1) is not None
    return Directive(kind, m.group(1) if quoted else m.group(2), quoted)


def _operators(text: str) -> list[Directive]:
    """``__has_include("x")``, ``__has_embed``, and ``_Pragma("GCC dependency ...")``, which
    may stand anywhere in a line."""
    out = [_named("has", "__has_include", text[m.end():m.end() + 4096])
           for m in _HAS.finditer(text)]
    for m in _PRAGMA_OPERATOR.finditer(text):
        if m.group(1) is None or _NAMES_FILE.search(m.group(1)):
            end = text.find("\n", m.start())
            out.append(Directive("hidden", text[m.start():end if end >= 0 else None].strip()))
    return out


class _File(NamedTuple):
    path: str
    """As the compiler opens it: quoted names are looked for in its folder."""
    origin: str
    """The source on the command line it is included from."""
    text: str | None = None
    via: str = ""
    """How it is shown when it is not that source: ``, through inc/a.h``."""


@dataclass
class IncludeWalk:
    """One run's include search from one working directory, file by file: each file a name
    reaches is judged (``judge``: why reading it needs a person, or "") and read in turn; a
    path this command wrote before (``wrote``) is not what the disk holds now."""

    base: str
    quote_dirs: list[str]
    dirs: list[str]
    wrote: Callable[[str], bool]
    judge: Callable[[str], str]
    files: int = 0
    size: int = 0
    seen: set[tuple[str, str]] = field(default_factory=set)
    reached: set[tuple[str, str]] = field(default_factory=set)
    written: bool = False
    """The reason is a file this command wrote before the run reads it."""
    made_any: bool = True
    """Whether this command writes or makes anything before the run (else ``wrote`` is
    never asked: following each name's links costs a look at every folder on its way)."""

    def run(self, sources: list[str], stdin: str | None = None) -> str:
        """Why the run reads something unasked, or "": ``sources`` by absolute path,
        ``stdin`` a source's text."""
        todo = [_File(path, self._shown(path)) for path in sources]
        if stdin is not None:
            todo.append(_File(os.path.join(self.base, "-"), "the source on its input", stdin))
        for f in todo:
            if self.wrote(f.path):
                self.written = True
                return f"{f.origin}: this command wrote it first, so what it includes is " \
                       "not shown"
            why = self.judge(f.path) if f.text is None else ""
            if why:  # judged as a path; never opened here (a link to /proc/self/fd/3 would
                return f"what {f.origin} includes is not judged"  # be the classifier's own)
        while todo:
            f = todo.pop()
            key = (os.path.realpath(f.path), os.path.dirname(f.path))
            if key in self.seen:
                continue
            self.seen.add(key)
            if f.text is None and not f.via and not os.path.lexists(f.path):
                continue  # a source that is not there: the compiler stops, having read nothing
            text = f.text if f.text is not None else self._read(f.path)
            if text is None:
                return self._unread(f)
            for d in sorted(directives(text)):
                why = self._resolve(d, f, todo)
                if why:
                    return why
        return ""

    def _read(self, path: str) -> str | None:
        """The text of a small regular file; None for anything else or past the bounds."""
        self.files += 1
        data = small_file(path, MAX_BYTES - self.size) if self.files <= MAX_FILES else None
        if data is None:
            return None
        self.size += len(data)
        if b"\0" in data:  # gcc skips NULs: a name may hide in them
            return None
        return data.decode("utf-8", "surrogateescape")

    def _unread(self, f: _File) -> str:
        if self.files > MAX_FILES or self.size > MAX_BYTES:
            return f"{f.origin} includes more than {MAX_FILES} files or {MAX_BYTES >> 20} " \
                   "MB: what they include is not judged"
        return f"{self._shown(f.path)} cannot be read as a small text file now, so what it " \
               "includes is not judged"

    def _resolve(self, d: Directive, f: _File, todo: list[_File]) -> str:
        """Why the file ``d`` names in ``f`` may not be read unasked, or ""; a file of the
        workspace it reaches is queued to be read in turn (every one along the search: which
        comes first, and ``#include_next``, do not matter then)."""
        via = f.via
        if d.kind == "hidden":
            return f"{f.origin}{via}: {d.name[:80]} names a file only known when it runs"
        folders = [os.path.dirname(f.path), *self.quote_dirs, *self.dirs] if d.quoted \
            else self.dirs
        if ".." in d.name.split("/") and not os.path.isabs(d.name) and d.kind != "has":
            return self._climbing(d, f, folders, todo)
        if not d.name or os.path.isabs(d.name):
            if os.path.exists(d.name):
                self.judge(d.name)  # credentials or someone's file: noted as read
            return f"{f.origin} includes {d.name}{via} (a path the command line does not show)"
        for folder in folders if d.kind != "has" else ():
            path = os.path.join(folder, d.name)
            if self.made_any and any(self.wrote(p) for p in (path, os.path.realpath(path),
                                                              path + ".gch")):
                self.written = True
                return f"{f.origin} includes {self._shown(path)}{via}, which this command " \
                       "wrote first: what it holds is not shown"
            if d.kind == "include" and os.path.lexists(path + ".gch"):  # looked for first
                return f"{f.origin} may load {self._shown(path)}.gch{via}, a precompiled " \
                       "header whose content is not judged"
            if not os.path.exists(path) or os.path.isdir(path):
                continue  # not here: gcc looks on (at last in the system's own folders)
            why = self._reached(path, d, f, todo)
            if why:
                return why
        return ""

    def _climbing(self, d: Directive, f: _File, folders: list[str], todo: list[_File]) -> str:
        """``#include "../include/x.h"``: the first folder of the search where the name is
        found decides, judged as a path (inside the workspace: read in turn). Found in none,
        the compiler climbs out of the system's folders, where ``..`` may reach any file."""
        for folder in folders:
            path = os.path.join(folder, d.name)
            if self.wrote(path):
                self.written = True
                return f"{f.origin} includes {self._shown(path)}{f.via}, which this command " \
                       "wrote first: what it holds is not shown"
            if os.path.lexists(path + ".gch"):
                return f"{f.origin} may load {self._shown(path)}.gch{f.via}, a precompiled " \
                       "header whose content is not judged"
            if os.path.isfile(path):
                return self._reached(path, d, f, todo)
        return f"{f.origin} includes {d.name}{f.via}, found in no folder of the workspace: " \
               "from the system's folders it may reach any file"

    def _reached(self, path: str, d: Directive, f: _File, todo: list[_File]) -> str:
        """Why the file ``path`` that ``d`` reaches may not be read unasked, or ""; judged
        once, and queued once to be read in turn when it is included (a header many files
        include is looked at once)."""
        if (path, d.kind) in self.reached:
            return ""
        self.reached.add((path, d.kind))
        why = self.judge(path)
        if why:
            return f"{f.origin} includes {self._shown(path)}{f.via} ({why})"
        if d.kind == "include":
            todo.append(_File(path, f.origin, via=f", through {self._shown(path)}"))
        return ""

    def _shown(self, path: str) -> str:
        inside = path.startswith(self.base.rstrip("/") + "/")
        return os.path.relpath(path, self.base) if inside else path
