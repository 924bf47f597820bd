"""Rules for file tools that can write or run: sed, awk, sort, tar, dd, rm, chmod, ..."""

from __future__ import annotations

import os
import re
from itertools import pairwise

from engine.permissions import programs as p
from engine.permissions.effect import (
    Effect,
    Opts,
    Rule,
    parse_opts,
    plain,
    prog,
    reader,
    writer,
)
from engine.permissions.inline import RUNTIME_WORD
from engine.permissions.shell_paths import NULL_DEVICES, no_file, stream_descriptor
from engine.permissions.words import STDIN_FILES, Word
from engine.sandbox.env import is_secret_name

# ---------------------------------------------------------------- sed and awk


def _sed(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "efl", frozenset({"--expression", "--file", "--line-length"}))
    scripts = o.all("-e", "--expression")
    files = o.positionals
    script_files = o.all("-f", "--file")
    if any(w.value in STDIN_FILES for w in script_files):  # sed -f /dev/stdin <<< SCRIPT
        e.stdin_reader = _sed_script
    if any(w.value not in STDIN_FILES for w in script_files):
        e.add("exec", "sed runs a script from a file")
        e.reads.extend(w for w in script_files if w.value not in STDIN_FILES)
    elif not scripts and files and not script_files:
        scripts, files = files[:1], files[1:]
    in_place = o.has("-i", "-I", "--in-place") or any(
        (n.startswith("-i") or n.startswith("--in-place")) for n in o.flags)
    (e.writes if in_place else e.reads).extend(files)
    if in_place:
        e.add("write", "sed -i edits files in place")
        if any(w.value is not None and _DELETE_ALL.match(w.value) for w in scripts):
            e.add("destructive", "sed -i deletes every line of the files")
        elif _truncates([w.value for w in scripts], o.has("-n", "--quiet", "--silent") or any(
                n.startswith("-") and not n.startswith("--") and "n" in n for n in o.flags)):
            e.add("destructive", "sed -i leaves each file a few of its lines, or every line "
                                 "one constant text, whatever it held")
    sandbox = o.has("--sandbox")  # e, r and w are refused before anything runs
    for script in scripts:
        _sed_script(e, script, sandbox)


def _sed_script(e: Effect, script: Word, sandbox: bool = False) -> None:
    if script.value is None and script.numbers is not None:  # sed -n "${a},${b}p"
        script = Word.of(script.numbers)
    if script.value is None:
        e.add("exec", "sed script only known at run time")
        e.at_least("ask", "")
        return
    scan = SedScan(script.value)
    if not scan.run():
        e.add("exec", "sed script not understood")
        e.at_least("ask", "")
    if sandbox and (scan.writes or scan.reads or scan.executes or scan.runs_input):
        return  # sed --sandbox rejects the script: nothing is read, written or run
    for w in scan.writes:  # opened (emptied) when sed starts
        e.writes.append(Word.of(w))
        e.replaces.append(Word.of(w))
        if not no_file(w):
            e.add("write", "sed w writes a file")
    e.reads.extend(Word.of(r) for r in scan.reads)
    if scan.executes:
        e.add("exec", "sed e runs a command")
    if scan.runs_input:
        e.unseen = "sed e runs lines of its input as shell commands"
    for code in scan.commands:
        e.scripts.append(("sed e", Word.of(code)))


_WHOLE_LINE = frozenset({".*", "^.*", ".*$", "^.*$", "^\\(.*\\)$"})
"""Patterns that match the whole line: ``s/.*/CMD/e`` runs CMD itself."""


class SedScan:
    """Finds the sed commands that write files (``w``, ``s///w``) or run commands (``e``)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.writes: list[str] = []
        self.reads: list[str] = []
        self.executes = False
        self.commands: list[str] = []
        """Commands given to ``e`` (an ``e`` without one runs the pattern space), and the
        replacement of ``s///e`` when it holds no part of the line."""
        self.replacement = ""
        self.pattern = ""
        self.runs_input = False
        """``e`` runs (part of) a line of the input: a command the command line cannot show."""

    def run(self) -> bool:
        s = self.s
        while self.i < len(s):
            if s[self.i] in " \t\n;":
                self.i += 1
                continue
            if not self._address():
                return False
            if self.i >= len(s):
                return False
            if not self._command(s[self.i]):
                return False
        return True

    def _address(self) -> bool:
        for part in range(2):
            if not self._one_address():
                return False
            self._skip(" \t")
            if part == 0 and self.i < len(self.s) and self.s[self.i] == ",":
                self.i += 1
                self._skip(" \t")
                if self.i < len(self.s) and self.s[self.i] in "+~":
                    self.i += 1
            else:
                break
        self._skip(" \t!")
        return True

    def _one_address(self) -> bool:
        s = self.s
        if self.i < len(s) and s[self.i] == "/":
            return self._delimited("/", 1) and self._flags("IM")
        if self.i + 1 < len(s) and s[self.i] == "\\":
            delim = s[self.i + 1]
            self.i += 1
            return self._delimited(delim, 1) and self._flags("IM")
        self._skip("0123456789$~")
        return True

    def _command(self, c: str) -> bool:
        self.i += 1
        if c in "{}=dDgGhHlnNpPqQxzFL":
            self._skip("0123456789")
            return True
        if c == "#":
            self._rest_of_line()
            return True
        if c in "sy":
            if self.i >= len(self.s):
                return False
            delim = self.s[self.i]
            start = self.i
            if not self._delimited(delim, 2):
                return False
            parts = re.split(r"(?<!\\)" + re.escape(delim), self.s[start + 1:self.i])
            self.replacement = parts[1] if len(parts) > 1 else ""
            self.pattern = parts[0]
            return c == "y" or self._s_flags()
        if c in "aic":
            self._text_argument()
            return True
        if c in "rRwWe":
            arg = self._rest_of_line().strip()
            if c in "rR":
                self.reads.append(arg)
            elif c in "wW":
                self.writes.append(arg)
            else:
                self.executes = True
                if arg:
                    self.commands.append(arg)
                else:
                    self.runs_input = True
            return True
        if c in ":btTv":  # GNU sed ends a label (and v's version) at a blank or ';':
            self._skip(" \t")  # what follows on the line is the next command (:a w f)
            while self.i < len(self.s) and self.s[self.i] not in "; \t\n":
                self.i += 1
            return True
        return False

    def _s_flags(self) -> bool:
        while self.i < len(self.s) and self.s[self.i] in "gpiImMe0123456789w":
            c = self.s[self.i]
            self.i += 1
            if c == "e":  # the line, after the substitution, runs as a command
                self.executes = True
                if self.pattern in _WHOLE_LINE and not re.search(r"&|\\\d", self.replacement):
                    self.commands.append(self.replacement)  # s/.*/date/e: exactly that
                else:
                    self._runs_line()
            if c == "w":
                self.writes.append(self._rest_of_line().strip())
                return True
        return True

    def _runs_line(self) -> None:
        """``s/^/rm -f /e``: a line of the input runs, after the replacement's words when the
        pattern holds the line's start (judged with the rest of the line unknown)."""
        self.runs_input = True
        prefix = re.split(r"&|\\\d", self.replacement)[0]
        if prefix.strip() and (self.pattern.startswith("^") or self.pattern in _WHOLE_LINE):
            self.commands.append(f'{prefix} "$(cat)"')  # the rest: only known at run time

    def _flags(self, chars: str) -> bool:
        self._skip(chars)
        return True

    def _delimited(self, delim: str, count: int) -> bool:
        """Skip ``count`` parts each ended by ``delim`` (``s/a/b/`` has two after the first)."""
        self.i += 1
        s = self.s
        for _ in range(count):
            while self.i < len(s) and s[self.i] != delim:
                self.i += 2 if s[self.i] == "\\" else 1
            if self.i >= len(s):
                return False
            self.i += 1
        return True

    def _text_argument(self) -> None:
        s = self.s
        while self.i < len(s) and s[self.i] != "\n":
            self.i += 2 if s[self.i] == "\\" else 1

    def _rest_of_line(self) -> str:
        start = self.i
        while self.i < len(self.s) and self.s[self.i] != "\n":
            self.i += 1
        return self.s[start:self.i]

    def _skip(self, chars: str) -> None:
        while self.i < len(self.s) and self.s[self.i] in chars:
            self.i += 1


_DELETE_ALL = re.compile(r"^\s*(?:1\s*,\s*\$\s*)?d\s*;?\s*$")
_TRUNCATING = re.compile(
    r"^\s*(?:\d+\s*,\s*\$\s*d|(?:\$|\d+)\s*!\s*d|(?:\d+|/(?:[^/\\]|\\.)*/)?\s*[qQ]\s*\d*"
    r"|/(?:\^|\$|\^?\.\*\$?)/\s*d"
    r"|s(.)\^?\.\*\$?\1(?:(?!\1)[^&\\])*\1g?)\s*$")
"""One sed command after which a file keeps a bounded number of lines whatever its length
(``5,$d``, ``$!d``, ``3!d``, ``q``, ``10q``, ``/re/Q``, ``/^/d``: a regex every line
matches), or every line one constant text
(``s/.*//``, ``s/.*/x/``: no ``&`` or back-reference keeps anything);
``$q`` and ``$d`` are not among them."""
_BOUNDED_PRINT = re.compile(r"^\s*\d+\s*(?:,\s*\d+\s*)?p\s*$")


def _truncates(scripts: list[str | None], quiet: bool) -> bool:
    """Whether sed's script, run in place, leaves each file a few lines of what it held:
    a command of ``_TRUNCATING``, or under ``-n`` no ``p`` at all or only numbered ones."""
    if any(s is None for s in scripts):
        return False
    commands = [c for s in scripts for c in re.split(r"[;\n]", s or "") if c.strip()]
    if any(_TRUNCATING.match(c) for c in commands):
        return True
    return quiet and (not any("p" in c for c in commands)
                      or all(_BOUNDED_PRINT.match(c) for c in commands))
_AWK_EXEC = re.compile(r"\bsystem\s*\(|(?<!\|)\|(?!\|)|\|&|@load|\bextension\s*\(")
_AWK_PRINT = re.compile(r"\bprintf?\b")
_AWK_GETLINE = re.compile(r"\bgetline\b")
_AWK_GETLINE_FROM = re.compile(r'\bgetline\b[^<"]*<\s*"((?:[^"\\]|\\.)*)"\s*\)?\s*(?:[<>=!].*)?$')
"""``getline [VAR] < "FILE"`` with FILE written as a string."""
_AWK_PRINT_TO = re.compile(
    r'\bprintf?\b[^>"]*(?:"(?:[^"\\]|\\.)*"[^>"]*)*(>>?)\s*"((?:[^"\\]|\\.)*)"\s*$')
"""``print ... > "FILE"`` (or ``>>``) with FILE written as a string."""


def _redirects(statement: str) -> bool:
    """A ``>`` after ``print`` outside parentheses and brackets: its output goes to a file
    (``print (NF > 1 ? $1 : $2)`` and ``print a[x > 1]`` compare)."""
    m = _AWK_PRINT.search(statement)
    depth = 0
    for ch in statement[m.end():] if m else "":
        depth += (ch in "([") - (ch in ")]")
        if ch == ">" and depth <= 0:
            return True
    return False


def _after(statement: str, word: re.Pattern[str], char: str) -> bool:
    """``char`` appears after the first ``word`` in the statement (linear time)."""
    m = word.search(statement)
    return m is not None and char in statement[m.end():]


_AWK_REPORTS = re.compile(r"-([opd])(.*)|--(pretty-print|profile|dump-variables)(?:=(.*))?")
"""gawk's ``-o[FILE]``, ``-p[FILE]``, ``-d[FILE]`` and their long forms write the program
pretty-printed, a profile or the variables to FILE (awkprof.out or awkvars.out when none)."""


_AWK_VALUES = frozenset({"-f", "-v", "-F", "-i", "-E", "-l", "-W", "--file", "--assign",
                         "--field-separator", "--include", "--load", "--exec", "--source"})


def _awk_reports(e: Effect, args: list[Word]) -> list[Word]:
    """``args`` without the options (before the program) that write a report file, which
    are judged here."""
    rest: list[Word] = []
    value_next = False
    for i, w in enumerate(args):
        v = w.value or ""
        m = None if value_next else _AWK_REPORTS.fullmatch(v)
        if m is not None:
            target = m.group(2) or m.group(4)
            kind = m.group(1) or m.group(3)
            e.writes.append(Word.of(target or ("awkvars.out" if kind[0] == "d" else
                                               "awkprof.out")))
            e.replaces.extend([Word.of(target)] if target else [])
            e.add("write", f"awk {w.shown} writes a report file")
            continue
        rest.append(w)
        if not value_next and (v == "--" or not v.startswith("-")):
            return rest + list(args[i + 1:])  # the program (or --): the options end
        value_next = not value_next and v in _AWK_VALUES
    return rest


def _awk(e: Effect, args: list[Word]) -> None:
    args = _mawk_exec(_awk_reports(e, args))
    o = parse_opts(args, "fvFiElW", frozenset({"--file", "--assign", "--field-separator",
                                              "--include", "--load", "--exec", "--source"}))
    files = o.positionals
    sources = o.all("-f", "--file", "-E", "--exec")
    if any(w.value in STDIN_FILES for w in sources):  # awk -f /dev/stdin <<< PROGRAM
        e.stdin_reader = _awk_program
    from_files = [w for w in sources if w.value not in STDIN_FILES]
    if from_files or o.has("-i", "--include", "-l", "--load"):
        if [w.value for w in o.all("-i", "--include")] == ["inplace"] and len(o.items) == 1:
            e.add("write", "awk -i inplace edits files")
        else:
            e.add("exec", "awk runs a program from a file or an extension")
            e.reads.extend(from_files)
    programs = o.all("--source")
    if not o.has("-f", "--file", "-E", "--exec", "--source") and files:
        programs, files = files[:1], files[1:]
    for prog_word in programs:
        _awk_program(e, prog_word)
    files = [w for w in files if not re.match(r"[A-Za-z_]\w*=", w.value or "")]
    if any(w.value == "inplace" for w in o.all("-i", "--include")):
        e.writes.extend(files)
    else:
        e.reads.extend(files)


_AWK_STRING = r'"((?:\\.|[^"\\])*)"'
_AWK_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"')
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(\s*(?:" + _AWK_STRING + r"\s*\)|([^()]{0,200})\))")
_AWK_PIPE_TO = re.compile(r"(?<!\|)\|(?!\|)&?\s*(?:" + _AWK_STRING + r")?([^;}\n|]*)")
_AWK_PIPE_FROM = re.compile(_AWK_STRING + r"\s*\|&?\s*getline")
_AWK_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*" + _AWK_STRING + r"\s*(?=[;}\n])")
_AWK_SYSTEM_CALL = re.compile(r"\bsystem\s*\(")
_AWK_INTO_GETLINE = re.compile(r"(?<!\|)\|&?\s*getline\b")
_AWK_LOADS = re.compile(r"@load|\bextension\s*\(")
_AWK_INDIRECT = re.compile(r"@\s*[A-Za-z_]\w*\s*\(|@include\b")
_AWK_INTO_INPUT = re.compile(r"\bprintf?\b[^;{}\n|]*?>\s*\(?\s*FILENAME\s*\)?\s*(?:[;}\n]|$)")
"""``print > FILENAME``: awk opens (empties) the file it is reading."""
_AWK_ARGV_SET = re.compile(r"\bARG[VC]\b[^;{}\n=]*?(?:[-+*/%^]?(?<![!<>=])=(?!=)|\+\+|--)"
                           r"|(?:\+\+|--)\s*ARG[VC]\b"
                           r"|\b(?:split|sub|gsub|delete|getline)\b[^;{}\n]*\bARG[VC]\b")
"""A program that changes ``ARGV`` or ``ARGC`` (``BEGIN { ARGV[1] = "/etc/shadow" }``):
awk then reads the files it put there, not those the command line names."""
_AWK_PRINTED = re.compile(r"\bprintf?\b\s*\(?\s*" + _AWK_STRING + r"\s*\)?\s*\|(?!\|)")
_CODE_READERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "python", "python3",
                           "perl", "ruby", "node", "php", "lua", "busybox"})


def _awk_commands(e: Effect, text: str) -> None:
    """``system("cmd")``, ``print | "cmd"``, ``"cmd" | getline``: the commands awk runs."""
    literals = {m.group(1): m.group(2) for m in _AWK_ASSIGN.finditer(text)}
    for m in _AWK_SYSTEM.finditer(text):
        var = (m.group(2) or "").strip()
        if m.group(1) is not None:
            _awk_runs(e, "awk system()", _awk_unescape(m.group(1)))
        elif var in literals:
            _awk_runs(e, "awk system()", _awk_unescape(literals[var]))
        else:
            e.at_least("ask", "awk system() runs a command built at run time")
            built = _awk_built(var, literals, _awk_assigned(text))
            if built is not None:  # system("rm -f " $1): rm with a word known at run time
                e.scripts.append(("awk system()", Word.of(built)))
    if len(_AWK_SYSTEM_CALL.findall(text)) > len(_AWK_SYSTEM.findall(text)):
        e.at_least("ask", "awk system() runs a command the preview cannot read")
    for m in _AWK_PIPE_FROM.finditer(text):
        _awk_runs(e, "awk getline", _awk_unescape(m.group(1)))
    if len(_AWK_INTO_GETLINE.findall(text)) > len(_AWK_PIPE_FROM.findall(text)):
        e.at_least("ask", "awk reads the output of a command built at run time")
    for m in _AWK_PIPE_TO.finditer(text):
        expr = (m.group(2) or "").strip()
        if m.group(1) is None and "getline" in expr:
            continue
        if m.group(1) is not None and not expr:
            target: str | None = _awk_unescape(m.group(1))
        else:  # print | cmd, cmd = "rm -f " $1; print | "s" "h": built from pieces
            e.at_least("ask", "awk pipes to a command built at run time")
            target = _awk_built(f'"{m.group(1)}" {expr}' if m.group(1) is not None else expr,
                                literals, _awk_assigned(text))
        reader = _code_reader(target or "")
        if reader:
            printed = _AWK_PRINTED.search(text)
            if printed is None:
                e.add("exec", "")
                e.at_least("deny", f"awk pipes data into {reader}, which runs it as code")
            else:
                e.scripts.append((f"awk | {reader}", Word.of(_awk_unescape(printed.group(1)))))
        elif target is not None:
            e.scripts.append(("awk | command", Word.of(target)))


_AWK_WRAPPERS = frozenset({"exec", "command", "builtin", "env", "nohup", "nice", "stdbuf",
                           "setsid", "time"})


def _code_reader(command: str) -> str:
    """The shell or interpreter a command line is, reading its code from its input (``sh``,
    ``exec sh``, ``bash -s``), else ""."""
    words = command.split()
    while words and (words[0] in _AWK_WRAPPERS or re.fullmatch(r"\w+=\S*", words[0])):
        words.pop(0)
    first = words[0].rsplit("/", 1)[-1] if words else ""
    if first in _CODE_READERS and all(w.startswith("-") and not re.fullmatch(
            r"-\w*[ceEmr]\w*", w) for w in words[1:]):
        return first
    return ""


def _awk_runs(e: Effect, how: str, command: str) -> None:
    """A command ``system()`` or ``getline`` runs: judged as run; a shell or interpreter
    alone reads awk's own input as its code, which the command line does not show."""
    reader = _code_reader(command)
    if reader:
        e.add("exec", "")
        e.at_least("deny", f"{how} runs {reader}, which reads awk's input as code")
    e.scripts.append((how, Word.of(command)))


_AWK_TOKEN = re.compile(_AWK_STRING + r"|([A-Za-z_]\w*)|(\$\w+|\S)")


_AWK_ASSIGN_EXPR = re.compile(r"\b([A-Za-z_]\w*)\s*=(?!=)\s*([^;}\n]{1,200})")


def _awk_assigned(text: str) -> dict[str, str]:
    """``cmd = "rm -f " $1``: the expression each variable is last given in the program."""
    return {m.group(1): m.group(2) for m in _AWK_ASSIGN_EXPR.finditer(text)}


def _awk_built(expr: str, literals: dict[str, str], assigned: dict[str, str] | None = None,
               depth: int = 0) -> str | None:
    """A command awk concatenates from literals and run-time values (``"rm -f " $1``): the
    literals as written, a variable by what it was given, each other value one word only known
    at run time (``system($1)`` runs a program only known at run time); None for an empty
    call."""
    out: list[str] = []
    for m in _AWK_TOKEN.finditer(expr):
        text, name = m.group(1), m.group(2)
        if text is not None or name in literals:
            out.append(_awk_unescape(text if text is not None else literals[name or ""]))
            continue
        inner = (assigned or {}).get(name or "")
        built = _awk_built(inner, literals, assigned, depth + 1) if inner and depth < 4 else None
        if built is not None and built != RUNTIME_WORD:
            out.append(built)
        elif not out or out[-1] != RUNTIME_WORD:
            out.append(RUNTIME_WORD)
    return "".join(out) or None


def _mawk_exec(args: list[Word]) -> list[Word]:
    """mawk's ``-W exec FILE`` (``-We FILE``, ``-W e FILE``, ``-Wexec=FILE``) reads the
    program from FILE, as ``-f`` does: written as ``-f FILE``."""
    out: list[Word] = []
    i = 0
    while i < len(args):
        v = args[i].value or ""
        option = v[2:] if v.startswith("-W") and len(v) > 2 else (
            args[i + 1].value or "" if v == "-W" and i + 1 < len(args) else None)
        step = 2 if v == "-W" else 1
        name, eq, attached = (option or "").partition("=")
        if option is not None and name and "exec".startswith(name):
            given = Word.of(attached) if eq else args[i + step] if i + step < len(args) \
                else Word.of("")
            out += [Word.of("-f"), given]
            i += step + (0 if eq else 1)
            continue
        out.append(args[i])
        i += 1
    return out


def _awk_unescape(text: str) -> str:
    """An awk string literal's text: ``\\162`` is octal (``r``), ``\\n``, ``\\t`` and the
    rest as awk reads them (``\\x72`` too, in gawk and mawk)."""
    return re.sub(r"\\([0-7]{1,3}|x[0-9A-Fa-f]{1,2}|.)", _awk_escape, text, flags=re.S)


def _awk_escape(m: re.Match[str]) -> str:
    found = m.group(1)
    if found[0] in "01234567":
        return chr(int(found, 8) & 0xFF)
    if found[0] == "x" and len(found) > 1:
        return chr(int(found[1:], 16))
    return {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v"}.get(found, found)


_AWK_ENVIRON = re.compile(r'\bENVIRON\s*\[\s*(?:"([^"\\]*)"\s*\])?|\bin\s+ENVIRON\b')
"""``ENVIRON["NAME"]`` (group 1), or ENVIRON by anything else (``ENVIRON[k]``, ``ENVIRON["A"
"B"]``, ``for (k in ENVIRON)``)."""


def _awk_environment(e: Effect, text: str) -> None:
    """``ENVIRON["GITHUB_TOKEN"]`` reads a secret of the host (asked, as ``$GITHUB_TOKEN``
    is); ``ENVIRON[k]`` or ``for (k in ENVIRON)`` may print any of them, as ``env`` does."""
    for m in _AWK_ENVIRON.finditer(text):
        if m.group(1) is None:
            e.secret = "awk prints the environment (every variable, or one its data names)"
        elif is_secret_name(m.group(1)):
            e.at_least("ask", f"awk reads the secret environment variable {m.group(1)}")


_AWK_REGEX_AFTER = frozenset("(,{};!~&|?:=\n")
"""The characters after which awk reads ``/`` as the start of a regex literal, not a
division (``$1 ~ /a|b/``, ``/x/ {..}``, ``(/re/)``)."""


def _awk_masked(text: str) -> str:
    """The program with each regex literal's text blanked (``/(if|elif)/`` holds no pipe),
    strings and comments kept. A ``/`` after an operand divides; a regex that does not end on
    its line is kept as written (what it holds is then searched like code)."""
    out: list[str] = []
    i, last = 0, "\n"
    while i < len(text):
        ch = text[i]
        if ch == '"':  # a string, kept whole
            end = i + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i, last = end + 1, '"'
            continue
        if ch == "/" and last in _AWK_REGEX_AFTER:
            end = i + 1
            while end < len(text) and text[end] not in "/\n":
                end += 2 if text[end] == "\\" else 1
            if end < len(text) and text[end] == "/":
                out.append("/" + " " * (end - i - 1) + "/")
                i, last = end + 1, "/"
                continue
        out.append(ch)
        if not ch.isspace() or ch == "\n":
            last = ch
        i += 1
    return "".join(out)


def _awk_program(e: Effect, program: Word) -> None:
    if program.value is None:
        e.add("exec", "awk program only known at run time")
        e.at_least("ask", "")
        return
    text = _awk_masked(program.value)
    if _AWK_EXEC.search(text):  # the commands are judged; what cannot be shown asks
        _awk_commands(e, text)
    if _AWK_LOADS.search(text):
        e.add("exec", "awk program loads an extension")
    if _AWK_INDIRECT.search(text):  # gawk @f(x) with f="system": the call is not shown
        e.add("exec", "awk calls a function named by a variable (gawk's @f(), or @include "
                      "of another file's code)")
        e.unseen = e.unseen or "the function an awk program calls through a variable"
    _awk_environment(e, text)
    statements = re.split(r"[;{}\n]", text)
    targets = [_AWK_PRINT_TO.search(s) for s in statements
               if _redirects(_AWK_STRINGS.sub('""', s))]  # "a => b": text
    if not all(t and no_file(_awk_unescape(t.group(2))) for t in targets):
        e.add("write", "awk program writes to a file")  # to a file, or one named by data
    for t in targets:
        if t:  # print > "f" empties f when awk first opens it; >> appends
            e.writes.append(Word.of(_awk_unescape(t.group(2))))
            if t.group(1) == ">":
                e.replaces.append(e.writes[-1])
        else:  # print > $1: a file only known at run time
            e.writes.append(Word(None, "<a file the awk program names>", "other"))
    if _AWK_ARGV_SET.search(text):
        e.reads.append(Word(None, "<a file the awk program puts in ARGV>", "other"))
    if _AWK_INTO_INPUT.search(text):
        e.add("destructive", "awk print > FILENAME empties the file it is reading (past "
                             "the first block read, its lines are lost)")
    for s in statements:  # getline < "FILE": FILE is read, judged as a path (one only
        if _after(s, _AWK_GETLINE, "<"):  # known at run time is asked)
            found = _AWK_GETLINE_FROM.search(s)
            e.reads.append(Word.of(_awk_unescape(found.group(1))) if found else
                           Word(None, "<a file the awk program names>", "other"))


# ---------------------------------------------------------------- readers that can write or run


COMPRESSORS = frozenset({"gzip", "zstd", "xz", "bzip2", "lz4", "pigz", "lzip", "lzop",
                         "pbzip2", "pixz", "brotli", "lzma", "plzip", "pzstd"})
"""Compression filters a program may be told to pipe through (``tar -I zstd``, ``sort
--compress-program=gzip``): each reads its input and writes its output."""


def _fed_data(e: Effect, how: str, program: Word) -> None:
    """A filter program fed the command's data (sort's temporary files, tar's archive or
    members): a shell or interpreter given no code of its own runs that data as code."""
    words = (program.value or "").split()
    name = words[0].rsplit("/", 1)[-1] if words else ""
    runner = name in p.SHELLS | p.INTERPRETERS or re.fullmatch(r"python[\d.]*", name)
    if runner and not {"-c", "-e"} & set(words[1:]):
        e.at_least("deny", f"{how} {program.shown} runs the data it is fed as code")


def _sort(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "ktoTS", frozenset({
        "--key", "--field-separator", "--output", "--temporary-directory", "--buffer-size",
        "--files0-from", "--random-source", "--compress-program", "--parallel",
        "--batch-size"}))
    e.reads.extend(o.positionals)
    e.reads.extend(o.all("--files0-from", "--random-source"))
    e.reads_first = True  # sort -o f f: documented as safe
    for w in o.all("-o", "--output"):
        e.writes.append(w)
        e.replaces.append(w)
        if not no_file(w.value):
            e.add("write", "sort -o writes a file")
    for program in o.all("--compress-program"):  # run as PROG and PROG -d, found on PATH
        if program.value not in COMPRESSORS:
            e.add("exec", "sort --compress-program runs a program")
        _fed_data(e, "sort --compress-program", program)
        e.nested.append(("sort --compress-program", [program]))


def _uniq(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars"}))
    # --group and --all-repeated take a value only as --group=METHOD: the next word is a file
    e.reads.extend(o.positionals[:1])
    if len(o.positionals) > 1:  # replaced whole with what it does not show
        e.writes.append(o.positionals[1])
        e.replaces.append(o.positionals[1])
        e.add("write", "uniq writes its second file")


def _dos2unix(e: Effect, args: list[Word]) -> None:
    """Converts files in place; ``-n IN OUT`` (new-file mode, pairs) replaces each OUT."""
    o = parse_opts(args, "cf")
    e.add("write", f"{prog(e)} writes files")
    if not o.has("-n", "--newfile"):
        e.writes.extend(o.positionals)
        return
    for i, w in enumerate(o.positionals):
        (e.reads if i % 2 == 0 else e.writes).append(w)
        if i % 2:
            e.replaces.append(w)


_patch_files = writer("pidoFrBVYz", ("--input", "--directory", "--output"), verb="patches")


def _patch(e: Effect, args: list[Word]) -> None:
    """``patch FILE PATCH`` edits FILE; ``-o OUT`` writes the patched text over OUT;
    ``--dry-run`` only says whether it would apply."""
    out = parse_opts(args, "pidoFrBVYz", frozenset({"--input", "--directory", "--output"})
                     ).all("-o", "--output")
    if any(w.value == "--dry-run" for w in args):
        o = parse_opts(args, "pidoFrBVYz", frozenset({"--input", "--directory", "--output"}))
        e.reads.extend([*o.positionals, *o.all("-i", "--input", "-d", "--directory")])
    else:
        _patch_files(e, args)
        e.writes.extend(parse_opts(args, "pidoFrBVYz", frozenset({
            "--input", "--directory", "--output"})).all("-d", "--directory"))  # files in it
    e.writes.extend(out)  # --dry-run -o OUT still writes OUT
    e.replaces.extend(w for w in out if w.value != "-")


def _xxd(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "cglosn")
    e.reads.extend(o.positionals[:1])
    if len(o.positionals) > 1:
        e.writes.append(o.positionals[1])
        if not o.has("-r", "-revert"):  # -r patches the file in place, not truncating it
            e.replaces.append(o.positionals[1])
        e.add("write", "xxd writes its second file")


def _grep(e: Effect, args: list[Word]) -> None:
    reader("efmABCdD", ("--regexp", "--file", "--max-count", "--after-context",
                        "--before-context", "--context", "--include", "--exclude",
                        "--exclude-dir", "--exclude-from", "--label", "--devices",
                        "--directories", "--binary-files", "--group-separator"),
           skip_first=1, pattern_opts=("-e", "--regexp", "-f", "--file"),
           read_opts=("-f", "--file", "--exclude-from"))(e, args)


_RG_VALUES = ("--regexp", "--file", "--glob", "--iglob", "--type", "--type-not",
              "--max-count", "--after-context", "--before-context", "--context", "--threads",
              "--max-columns", "--encoding", "--replace", "--pre", "--pre-glob", "--type-add",
              "--type-clear", "--sort", "--sortr", "--max-depth", "--max-filesize",
              "--ignore-file", "--path-separator", "--colors", "--color", "--context-separator",
              "--field-match-separator", "--field-context-separator", "--engine",
              "--dfa-size-limit", "--regex-size-limit", "--hostname-bin", "--hyperlink-format",
              "--sort-files", "--generate", "--max-columns-preview")


def _rg(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "efgtTmABCjMEr", frozenset(_RG_VALUES))
    if o.has("--pre"):
        e.add("exec", "rg --pre runs a program on every file")
        for prog_word in o.all("--pre"):  # PROG FILE for each file searched
            e.nested.append(("rg --pre", [prog_word, Word(None, "<each file searched>",
                                                          "other")]))
    if o.has("--hostname-bin"):
        e.add("exec", "rg --hostname-bin runs a program")
    skip = 0 if o.has("-e", "--regexp", "-f", "--file", "--files", "--type-list") else 1
    e.reads.extend(o.positionals[skip:])
    e.reads.extend(o.all("-f", "--file", "--ignore-file"))


_mktemp_writes = writer("p", ("--tmpdir", "--suffix"))


def _mktemp(e: Effect, args: list[Word]) -> None:
    """``mktemp -u``/``--dry-run`` prints an unused name and creates nothing; otherwise
    it makes the file or folder its template names."""
    values = [w.value for w in args]
    if "--dry-run" in values or any(v and re.fullmatch(r"-[dqt]*u[dqt]*", v) for v in values):
        return
    _mktemp_writes(e, args)


_JQ_MODULES = re.compile(r"\b(?:import|include)\s*\"")
"""A jq program that loads a module (jq code, or JSON data as ``$name``) by its search path:
``~/.jq`` and the folders ``-L`` or the directive's ``{search: ..}`` names."""
_JQ_SEARCH = re.compile(r"\bsearch\s*:\s*\"([^\"]*)\"")


def _jq(e: Effect, args: list[Word]) -> None:
    words, i = [], 0
    while i < len(args):
        v = args[i].value
        if v in ("--arg", "--argjson"):
            i += 3
            continue
        if v in ("--slurpfile", "--rawfile"):
            if i + 2 < len(args):
                e.reads.append(args[i + 2])
            i += 3
            continue
        if v in ("--args", "--jsonargs"):
            break
        words.append(args[i])
        i += 1
    o = parse_opts(words, "fL", frozenset({"--from-file", "--indent", "--tab",
                                           "--library-path"}))
    e.reads.extend(o.all("-f", "--from-file"))
    e.reads.extend(o.all("-L", "--library-path"))  # the modules import/include read there
    skip = 0 if o.has("-f", "--from-file") else 1
    e.reads.extend(o.positionals[skip:])
    program = o.positionals[0].value if o.positionals and skip != 0 else None
    if program is not None and _JQ_MODULES.search(program):
        e.reads.extend(Word.of(m.group(1)) for m in _JQ_SEARCH.finditer(program))
        e.reads.append(Word.of("~/.jq"))  # jq's own search path: outside the workspace


_YQ_FLAGS = frozenset({"-t", "--toml-output", "-x", "--xml-output", "-y", "-Y",
                       "--yaml-output", "--yaml-roundtrip", "--indentless-lists",
                       "--indentless", "--explicit-start", "--explicit-end", "--xml-dtd"})
_YQ_VALUES = frozenset({"--xml-root", "--xml-item-depth", "--xml-force-list", "-w", "--width"})


def _jq_wrapper(e: Effect, args: list[Word]) -> None:
    """``tomlq`` and ``xq`` (python-yq): jq over TOML or XML, with jq's own words besides
    the wrapper's output options; ``-i``/``--in-place`` rewrites the files it reads."""
    words: list[Word] = []
    skip = False
    for w in args:
        v = w.value or ""
        if skip or v in _YQ_FLAGS:
            skip = False
            continue
        skip = v in _YQ_VALUES
        if not skip and not v.startswith(tuple(f"{x}=" for x in _YQ_VALUES if x[1] == "-")):
            words.append(w)
    in_place = any(v == "--in-place" or (v[:1] == "-" and v[1:2] != "-" and "i" in v)
                   for v in (w.value or "" for w in args))
    _jq(e, [w for w in words if w.value not in ("-i", "--in-place")])
    if in_place:
        e.writes.extend(e.reads)
        e.add("write", f"{prog(e)} -i edits files in place")


_NAMED_OUTPUT = frozenset({"zstd", "unzstd", "zstdcat", "brotli"})
"""Compressors whose ``-o FILE`` names the output; it wins over ``-c`` (``zstd -c -o a.txt``
writes a.txt)."""


def _compressor(e: Effect, args: list[Word]) -> None:
    """``gzip FILE`` replaces FILE with FILE.gz; ``-c``, a listing or a test print, and
    with no file (or ``-``) it is a filter from its input to its output; ``zstd -o FILE``
    writes FILE whatever else is given, and ``--rm`` then deletes the inputs."""
    name = prog(e)
    named = name in _NAMED_OUTPUT
    o = parse_opts(args, "So" if named else "S",
                   frozenset({"--suffix", "--output"} if named else {"--suffix"}))
    given = o.all("-o", "--output") if named else []
    outputs = [w for w in given if w.value != "-" and not no_file(w.value)]
    if outputs:
        e.reads.extend(o.positionals)
        e.writes.extend(outputs)
        e.replaces.extend(outputs)
        e.add("write", f"{name} -o writes its output file")
        if o.has("--rm"):
            e.writes.extend(o.positionals)
            e.replaces.extend(o.positionals)  # gone: as a file replaced with nothing shown
        return
    if name == "zstdcat" or given or o.has("-c", "--stdout", "--to-stdout", "-l", "--list",
                                           "-t", "--test") or all(w.value == "-"
                                                                  for w in o.positionals):
        e.reads.extend(o.positionals)
        return
    e.writes.extend(o.positionals)
    e.add("write", f"{name} replaces files")


def _base64(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "w", frozenset({"--wrap"}))
    e.reads.extend(o.positionals)


_XMLLINT_FILES = ("--dtdvalid", "--schema", "--relaxng", "--schematron")
_XMLLINT_VALUES = frozenset({"--output", "--xpath", "--path", "--encode", "--maxmem",
                             "--pattern", "--dtdvalidfpi", *_XMLLINT_FILES})


_XMLLINT_LOADS = ("--valid", "--postvalid", "--loaddtd", "--dtdattr", "--noent", "--xinclude",
                  "--dtdvalid", "--catalogs")
"""Options that make xmllint load what a document names (a DTD, an entity, an included
file): a URL it fetches unless ``--nonet``, a file anywhere, whose content ``--noent`` may
print."""


def _xmllint(e: Effect, args: list[Word]) -> None:
    """``xmllint`` reads its files and prints; ``--output FILE`` writes one; loading what a
    document names (``_XMLLINT_LOADS``) reaches past the files the command shows."""
    o = parse_opts(args, "o", _XMLLINT_VALUES)
    e.reads.extend([*o.positionals, *o.all(*_XMLLINT_FILES)])
    loads = [k for k in _XMLLINT_LOADS if o.has(k)]
    if loads and not o.has("--nonet"):
        e.add("network", f"xmllint {loads[0]} fetches the DTDs and entities a document names")
    elif loads:
        e.at_least("ask", f"xmllint {loads[0]} reads the files a document names (outside "
                          "the workspace too)")
    for w in o.all("-o", "--output"):
        e.writes.append(w)
        e.replaces.append(w)
        e.add("write", "xmllint --output writes a file")


def output_option(short_values: str, option: str, long_option: str,
                  reads_first: bool = False) -> Rule:
    """A reader whose ``-o FILE`` writes (``tree -o``, ``iconv -o``, ``shuf -o``), after
    reading all its input when ``reads_first`` (``shuf``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, short_values, frozenset({long_option}))
        e.reads_first = reads_first
        e.reads.extend(o.positionals)
        for w in o.all(option, long_option):
            e.writes.append(w)
            e.replaces.append(w)
            e.add("write", f"{prog(e)} {option} writes a file")

    return rule


def _diffstat(e: Effect, args: list[Word]) -> None:
    """``diffstat fix.patch`` reads; ``-o FILE`` writes its output, ``-e FILE`` its errors."""
    o = parse_opts(args, "DeopSwN")
    e.reads.extend(o.positionals)
    for w in o.all("-o", "-e"):
        e.writes.append(w)
        e.replaces.append(w)
        e.add("write", "diffstat -o/-e writes a file")


def _gitleaks(e: Effect, args: list[Word]) -> None:
    """``gitleaks detect --source . --no-git``, ``gitleaks git``/``dir``: a scan that reads
    a tree (and its history) and prints; ``-r``/``--report-path`` writes the report."""
    o = parse_opts(args, "sfcr", frozenset({"--source", "--report-path", "--config",
                                            "--baseline-path", "--report-format",
                                            "--log-opts", "--gitleaks-ignore-path"}))
    e.reads.extend([*o.all("-s", "--source", "-c", "--config", "--baseline-path"),
                    *o.positionals[1:]])
    for w in o.all("-r", "--report-path"):
        e.writes.append(w)
        e.add("write", "gitleaks --report-path writes a report")


def _detect_secrets(e: Effect, args: list[Word]) -> None:
    """``detect-secrets scan PATHS`` prints what it finds; ``--update``, ``audit`` and
    ``--baseline`` runs write the baseline file."""
    o = parse_opts(args, "", frozenset({"--update", "--baseline", "--exclude-files",
                                        "--exclude-lines", "-c", "--cores"}))
    verb = o.positionals[0].value if o.positionals else None
    e.reads.extend(o.positionals[1:])
    if any((w.value or "").startswith(("--custom-plugins", "--baseline")) for w in args):
        e.add("exec", "detect-secrets loads the plugins a baseline or option names (code)")
    if verb != "scan" or o.has("--update"):
        e.writes.extend(o.all("--update", "--baseline"))
        e.add("write", f"detect-secrets {verb or ''} writes a baseline".replace("  ", " "))


def _trufflehog(e: Effect, args: list[Word]) -> None:
    """``trufflehog filesystem DIR`` and ``git file://.`` with ``--no-verification
    --no-update`` scan here; otherwise found secrets are tried against their services and
    the tool may update itself (network)."""
    words = [w.value or "" for w in args]
    local = "--no-verification" in words and "--no-update" in words
    target = next((w for w in words[1:] if not w.startswith("-")), "")
    if not local or words[:1] not in (["filesystem"], ["git"]) or (
            words[:1] == ["git"] and not target.startswith("file://")):
        e.add("network", "trufflehog verifies secrets with their services or updates itself")
    e.reads.extend(Word.of(w.removeprefix("file://")) for w in words[1:]
                   if w and not w.startswith("-"))


def _tee(e: Effect, args: list[Word]) -> None:
    """``tee FILE..`` writes each FILE; ``/dev/null`` and ``>(..)`` (a pipe into a command the
    walker judges) are no files."""
    o = parse_opts(args, "")  # --output-error[=MODE]: a value only after "="
    streams = [w for w in o.positionals if stream_descriptor(w.value) is not None]
    files = [w for w in o.positionals if w.value not in NULL_DEVICES and w not in streams and
             not (w.value is None and w.dynamic == "subst" and w.text.startswith(">("))]
    e.writes.extend(files)
    e.writes.extend(streams)  # what their descriptors hold: judged at the end
    if files:
        e.add("write", "tee writes files")
    if files and not o.has("-a", "--append"):
        e.stdin_reader = _tee_input
        e.stdin_data = True
        e.replaces.extend(files)  # with what it reads: unless the command shows it


def _tee_input(e: Effect, text: Word) -> None:
    """``tee FILE < /dev/null``: an empty input empties each FILE (a truncation); a
    here-doc or a static echo shows what the files will hold, not what they held."""
    if text.value == "" or (text.value is None and text.dynamic == "other"
                            and text.text in _EMPTY_INPUTS):
        e.add("destructive", "tee with an empty input empties its files")
    elif text.value is not None:
        e.shows_output = True


_EMPTY_INPUTS = frozenset({"/dev/null", "/dev/zero"})
"""Inputs that give tee nothing to write (``/dev/zero`` writes zeros without end)."""


# ---------------------------------------------------------------- archives, disks, removal

_TAR_VALUES = "fCbTXgIFLNVKH"
_TAR_LONG = frozenset({"--file", "--directory", "--to-command", "--use-compress-program",
                       "--files-from", "--exclude-from", "--info-script", "--new-volume-script",
                       "--checkpoint-action", "--transform", "--exclude", "--rsh-command",
                       "--rmt-command", "--format", "--owner", "--group", "--mode", "--xform",
                       "--blocking-factor", "--record-size", "--newer", "--after-date",
                       "--label", "--volno-file", "--index-file"})


def _tar(e: Effect, args: list[Word]) -> None:
    args = _tar_old_style(args)
    o = parse_opts(args, _TAR_VALUES, _TAR_LONG)
    runs = ("--to-command", "-I", "--use-compress-program", "--info-script", "-F",
            "--new-volume-script", "--rsh-command", "--rmt-command")
    shown = all(w.value is not None for w in o.all("--to-command"))  # judged as shell code
    compressors = o.all("-I", "--use-compress-program")
    plain = all(re.fullmatch(rf"(?:{'|'.join(COMPRESSORS)})(?: -[\w=]+)*", w.value or "")
                for w in compressors)  # -I 'zstd -T0': a compressor, judged as a command
    if o.has(*runs[3:]) or (compressors and not plain) or (
            o.has("--to-command") and not shown) or any(
            "exec" in (w.value or "") for w in o.all("--checkpoint-action")):
        e.add("exec", "tar option runs a program")
    for name in runs:
        for code in o.all(name):
            e.scripts.append((f"tar {name}", code))
            if name in ("-I", "--use-compress-program", "--to-command"):
                _fed_data(e, f"tar {name}", code)
    for action in o.all("--checkpoint-action"):
        if action.value is None:
            e.at_least("ask", "tar --checkpoint-action only known at run time")
        elif action.value.startswith("exec="):
            e.scripts.append(("tar --checkpoint-action=exec", Word.of(action.value[5:])))
    for index in o.all("--index-file"):  # the verbose listing, written whole
        e.writes.append(index)
        e.replaces.append(index)
        e.add("write", "tar --index-file writes the listing to a file")
    for snapshot in [*o.all("-g", "--volno-file"), *_listed_incremental(args)]:  # whole
        e.writes.append(snapshot)
        e.replaces.append(snapshot)
        e.add("write", "tar writes its snapshot (or volume number) file")
    archive = o.get("-f", "--file")
    if archive is not None and ":" in (archive.value or "") and not o.has("--force-local"):
        e.add("network", "tar archive on a remote host")
    _tar_files(e, o, archive)
    if o.has("--remove-files"):  # as rm does: the archive may be a stream, or dropped
        e.add("destructive", "tar --remove-files deletes the files it archives (no undo)")


def _listed_incremental(args: list[Word]) -> list[Word]:
    """``--listed-incremental FILE`` or ``=FILE`` (not a known value option: ``--list``
    would read as its abbreviation)."""
    out = [Word.of((w.value or "").partition("=")[2]) for w in args
           if (w.value or "").startswith("--listed-incremental=")]
    return out + [w for before, w in pairwise(args)
                  if before.value == "--listed-incremental"]


def _tar_files(e: Effect, o: Opts, archive: Word | None) -> None:
    """The archive and files tar reads or writes, by mode."""
    creating = o.has("-c", "--create", "-r", "--append", "-u", "--update", "-A",
                     "--catenate", "--concatenate", "--delete")
    if o.has("-c", "--create") and archive is not None and (archive.value == "-" or
                                                            no_file(archive.value)):
        e.reads.extend(_from_folder(o))  # tar -czf - src: the archive, printed (or dropped)
        if stream_descriptor(archive.value) is not None:
            e.writes.append(archive)  # -f /dev/fd/3: what 3 holds, judged at the end
        return
    if creating:
        e.add("write", "tar writes an archive")
        if archive is not None:
            e.writes.append(archive)
            if o.has("-c", "--create"):  # a new archive in its place
                e.replaces.append(archive)
        e.reads.extend(_from_folder(o))
        return
    if o.has("-x", "--extract", "--get") and not o.has("-O", "--to-stdout", "--to-command"):
        e.add("write", "tar extracts files")  # -O prints the members, --to-command pipes
        # each to its command: no file written
        e.writes.append(o.get("-C", "--directory") or Word.of("."))
        if not o.has("-k", "--keep-old-files", "--skip-old-files", "--keep-newer-files",
                     "--to-command"):
            e.unseen = ("tar -x writes over any file of a name the archive holds, which the "
                        "command line does not show (-k or --skip-old-files keeps them)")
    if archive is not None:
        e.reads.append(archive)


def _from_folder(o: Opts) -> list[Word]:
    """The files tar archives, as paths: ``-C DIR`` makes each relative one DIR's (with
    several ``-C``, or DIR only known at run time, where they are is too)."""
    listed = [Word(None, f"<the files {w.text} lists>", "other")
              for w in o.all("-T", "--files-from")]  # which they are: only known at run time
    folders = o.all("-C", "--directory")
    if not folders:
        return [*o.positionals, *listed]
    if len(folders) > 1 or folders[0].value is None:
        return listed + [Word(None, f"{w.text} (in a folder tar -C names)", "other")
                         for w in o.positionals]
    base = folders[0].value
    return listed + [w if w.value is not None and w.value.startswith("/") else
            Word(None, w.text, "other") if w.value is None else
            Word(os.path.join(base, w.value), w.text, "", False, w.expandable)
            for w in o.positionals]


def _tar_old_style(args: list[Word]) -> list[Word]:
    """``tar xzf a.tgz`` as ``tar -x -z -f a.tgz``."""
    if not args or args[0].value is None or args[0].value.startswith("-"):
        return args
    letters = args[0].value
    out: list[Word] = []
    rest = list(args[1:])
    for c in letters:
        out.append(Word.of("-" + c))
        if c in _TAR_VALUES and rest:
            out.append(rest.pop(0))
    return out + rest


def _dd(e: Effect, args: list[Word]) -> None:
    for a in args:
        v = a.value or ""
        if v.startswith("if="):
            e.reads.append(Word.of(v[3:]))
        elif v.startswith("of="):
            e.writes.append(Word.of(v[3:]))
            if not no_file(v[3:]):
                e.add("destructive", "dd of= writes raw data")
        elif a.value is None:
            e.at_least("ask", "dd operand only known at run time")


def _rm(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args)
    if o.positionals and all(w.made for w in o.positionals):
        e.add("write", f"{prog(e)} removes what mktemp made in this command")
        return  # new: nothing of anyone's is there (where it is, only known at run time)
    e.writes.extend(o.positionals)
    if o.has("-r", "-R", "--recursive", "--no-preserve-root"):
        e.add("destructive", "rm -r deletes directory trees")
    elif o.positionals:
        e.add("destructive", f"{prog(e)} deletes files (no undo)")
    else:
        e.add("write", "rm without operands")
    if any(w.value is None for w in o.positionals):
        e.at_least("ask", "rm of a path only known at run time")


_SYSTEM_TOP = re.compile(r"^(/|~|/(etc|usr|bin|sbin|lib|lib64|var|home|root|boot|opt|srv|dev|"
                         r"proc|sys)/?|\$HOME/?|\.\.(/\.\.)*/?)$")


def _chmod(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "", frozenset({"--reference"}))
    targets = o.positionals if o.has("--reference") else o.positionals[1:]
    e.writes.extend(targets)
    e.add("write", f"{prog(e)} changes permissions or owners")
    if o.has("-R", "--recursive") and any(_SYSTEM_TOP.match(w.text) for w in targets):
        e.add("destructive", f"{prog(e)} -R on a system directory")
    if o.has("-R", "--recursive"):
        e.trees.extend(targets)
        e.add("destructive", f"{prog(e)} -R changes the permissions or owners of whole trees "
                             "(no undo: the old ones are not kept)")
    mode = o.positionals[0].value if o.positionals and not o.has("--reference") else None
    if prog(e) == "chmod" and mode is not None and _sets_id_bit(mode):
        e.add("destructive", f"chmod {mode} sets the setuid or setgid bit (a program that "
                             "runs with its owner's rights)")
    if prog(e) == "chmod" and o.has("-R", "--recursive") and mode is not None \
            and _locks_owner_out(mode):
        e.add("destructive", f"chmod -R {mode} takes the owner's read access from a tree")


def _sets_id_bit(mode: str) -> bool:
    """``u+s``, ``g=s``, ``4755``, ``2755``: the setuid or setgid bit is set."""
    if re.fullmatch(r"[0-7]{4}", mode):
        return int(mode[0]) & 6 != 0
    return any(re.fullmatch(r"[ugoa]*[+=][rwxXt]*s[rwxXst]*", clause)
               for clause in mode.split(","))


def _setfacl(e: Effect, args: list[Word]) -> None:
    """``setfacl -m u:x:rwx FILE`` changes who may read or run FILE; ``-R`` whole trees."""
    o = parse_opts(args, "mMxX", frozenset({"--modify", "--modify-file", "--remove",
                                            "--remove-file", "--set", "--set-file"}))
    e.writes.extend(o.positionals)
    e.add("write", "setfacl changes permissions")
    if o.has("-R", "--recursive"):
        e.trees.extend(o.positionals)
        e.add("destructive", "setfacl -R changes the permissions of whole trees")


def _locks_owner_out(mode: str) -> bool:
    """``000``, ``a-rwx``, ``u=x``: a mode that leaves the owner unable to read."""
    if re.fullmatch(r"[0-7]{1,4}", mode):
        return int(mode[-3] if len(mode) >= 3 else "0") < 4
    for clause in mode.split(","):
        m = re.fullmatch(r"([ugoa]*)([-=+])([rwxXst]*)", clause)
        if m is None:
            continue
        who, op, perms = m.groups()
        owner = who == "" or "u" in who or "a" in who
        if owner and ((op == "-" and "r" in perms) or (op == "=" and "r" not in perms)):
            return True
    return False


def _copy(e: Effect, args: list[Word]) -> None:
    writer("tSmogb", ("--target-directory", "--suffix", "--mode", "--owner", "--group",
                      "--backup"), last_only=prog(e) != "mv")(e, args)
    if prog(e) == "mv":
        e.add("write", "mv moves files")
    flags = [w.value or "" for w in args if (w.value or "").startswith("-")]
    if e.writes and ((prog(e) in ("cp", "mv") and not _kept(flags)) or (
            prog(e) == "ln" and _forced(flags)) or (
            prog(e) == "install" and not _backup(flags)
            and not {"-d", "--directory"} & set(flags))):  # install always replaces
        e.replaces.append(e.writes[-1])  # the one target (-t: a directory)
    symbolic = "--symbolic" in flags or any(
        not f.startswith("--") and "s" in f[1:] for f in flags)
    hard = (prog(e) == "ln" and not symbolic) or (prog(e) == "cp" and bool(
        {"-l", "--link"} & set(flags)))
    if hard:  # a write through the new name is a write to the source
        e.writes.extend(w for w in e.reads if w not in e.writes)
    if prog(e) in ("cp", "install") and any(w.value in _SOURCES for w in e.reads):
        e.add("destructive", f"{prog(e)} from a device replaces the target file's content")
    if prog(e) == "ln" and any(w.value in NULL_DEVICES for w in e.reads) and (
            {"-f", "--force"} & set(flags) or any(
                not f.startswith("--") and "f" in f[1:] for f in flags)):
        e.add("destructive", "ln -f to a device replaces the target file by a link to it")
    if prog(e) == "mv" and any(w.value in _SINKS for w in e.writes):
        e.add("destructive", "mv onto a device discards the files moved")


def _forced(flags: list[str]) -> bool:
    """``-f``, ``--force``, ``--remove-destination``: replace the target without a question,
    and without ``-b``/``--backup`` keeping the old one."""
    short = "".join(f[1:] for f in flags if not f.startswith("--"))
    return not _backup(flags) and ("f" in short or bool(
        {"--force", "--remove-destination"} & set(flags)))


def _kept(flags: list[str]) -> bool:
    """``-b``, ``-n``, ``-i`` (and their long forms): the old target is kept or asked about;
    without them cp and mv replace an existing target as ``-f`` does."""
    short = "".join(f[1:] for f in flags if not f.startswith("--"))
    return _backup(flags) or bool(set(short) & set("ni")) or bool(
        {"--no-clobber", "--interactive", "--update=none"} & set(flags))


def _backup(flags: list[str]) -> bool:
    """``-b``, ``--backup[=CONTROL]``: the old target is kept (not with CONTROL none/off)."""
    return any("b" in f[1:] for f in flags if not f.startswith("--")) or any(
        f.startswith("--backup") and f not in ("--backup=none", "--backup=off")
        for f in flags)


_SINKS = frozenset({"/dev/null", "/dev/zero", "/dev/full"})
_SOURCES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})
"""Devices whose content, copied over a file, is a loss of that file (empty, zeros or
noise without end)."""
_ZERO = re.compile(r"^[<]?0+(?:[KMGTPEZY]i?B?|[kKMGTPEZY]B)?$")


def _truncate(e: Effect, args: list[Word]) -> None:
    writer("sr", ("--size", "--reference"))(e, args)
    o = parse_opts(args, "sr", frozenset({"--size", "--reference"}))
    size = o.get("-s", "--size")
    if size is not None and (size.value is None or _ZERO.match(size.value)
                             or size.value.startswith(("-", "/"))):
        e.add("destructive", "truncate empties or shrinks files")
    elif o.has("-r", "--reference"):  # a smaller (or empty: /dev/null) file shrinks them
        e.add("destructive", "truncate to the size of another file empties or shrinks files")


def _split(e: Effect, args: list[Word]) -> None:
    """``split --filter=CMD`` pipes each piece into CMD, run by ``$SHELL -c`` as ``CMD <
    piece`` (the pieces are the input's lines), and writes no file itself; ``-n K/N``,
    ``-n l/K/N`` and ``-n r/K/N`` print the Kth piece. Otherwise it writes the pieces."""
    o = parse_opts(args, "lbCnadt", frozenset({
        "--lines", "--bytes", "--line-bytes", "--number", "--suffix-length",
        "--additional-suffix", "--filter", "--separator"}))
    source = o.positionals[0] if o.positionals else Word.of("-")
    e.reads.extend(o.positionals[:1])  # the input, copied into the pieces
    filters = o.all("--filter")
    if not filters and not any(re.fullmatch(r"(?:[lr]/)?\d+/\d+", w.value or "")
                               for w in o.all("-n", "--number")):
        writer("lbCnad", ("--lines", "--bytes", "--line-bytes", "--number",
                          "--suffix-length", "--additional-suffix", "--filter",
                          "--separator"), skip_first=1)(e, args)
    for code in filters:
        if code.value is None or source.value is None:
            e.add("exec", "split --filter runs a shell command only known at run time")
            e.scripts.append(("split --filter", code))
        else:  # FILE names the piece (PREFIX then a suffix): xaa by default
            prefix = o.positionals[1].value if len(o.positionals) > 1 else "x"
            piece = _shell_quoted(f"{'x' if prefix is None else prefix}aa")
            body = f"{{ {code.value}\n}}"
            fed = f"cat | {body}" if source.value == "-" else \
                f"{body} < {_shell_quoted(source.value)}"  # split's input: data
            e.scripts.append(("split --filter", Word.of(f"FILE={piece}; {fed}")))


def _shell_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _fallocate(e: Effect, args: list[Word]) -> None:
    """``fallocate -p``/``-c``/``-z`` (punch, collapse, zero a range) destroy the data in the
    range; allocating (``-l``) or digging holes of zeros (``-d``) keeps it."""
    writer("olx", ("--offset", "--length", "--posix"))(e, args)
    o = parse_opts(args, "olx", frozenset({"--offset", "--length"}))
    if o.has("-p", "--punch-hole", "-c", "--collapse-range", "-z", "--zero-range"):
        e.add("destructive", "fallocate -p/-c/-z discards the data in a range of the file")


def _zip(e: Effect, args: list[Word]) -> None:
    """``zip -TT CMD`` / ``--unzip-command CMD`` runs CMD to test the archive; ``-sf``
    (``--show-files``) lists the files it would take and writes nothing, and so does an
    archive named ``-`` (printed)."""
    archive = parse_opts(args, "xibnt").positionals[:1]
    if any(w.value in ("-sf", "--show-files") for w in args):
        e.reads.extend(w for w in args if not (w.value or "").startswith("-"))
    elif [w.value for w in archive] == ["-"]:  # zip -r - docs: the archive is printed
        e.reads.extend(w for w in args if not (w.value or "-").startswith("-"))
        if any(_zip_moves(w.value) for w in args):
            e.add("destructive", "zip -m deletes the files it archives (no undo)")
    else:
        writer("xi")(e, args)
        if any(_zip_moves(w.value) for w in args):
            e.add("destructive", "zip -m deletes the files it archives (no undo)")
    for log in parse_opts(args, "", frozenset({"--logfile-path", "-lf"})).all(
            "--logfile-path", "-lf"):
        e.writes.append(log)
        e.replaces.append(log)
        e.add("write", "zip --logfile-path writes its log to a file")
    for i, a in enumerate(args):
        v = a.value or ""
        if v in ("-TT", "--unzip-command") and i + 1 < len(args):
            e.add("exec", "zip -TT runs a command")
            e.scripts.append((f"zip {v}", args[i + 1]))
        elif v.startswith(("--unzip-command=", "-TT=")):
            e.add("exec", "zip -TT runs a command")
            e.scripts.append(("zip -TT", Word.of(v.split("=", 1)[1])))




def _zip_moves(option: str | None) -> bool:
    """``-m``, ``--move``, or ``m`` among combined short options (``-qm``, ``-rm``)."""
    if option is None or not option.startswith("-") or option == "-":
        return False
    if option.startswith("--"):
        return option == "--move"
    return "m" in option[1:] and not option.startswith(("-TT", "-tt"))


def _unzip(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "dxP")
    e.reads.extend(o.positionals[:1])
    if o.has("-l", "-t", "-v", "-Z", "-p", "-c"):
        return
    e.writes.append(o.get("-d") or Word.of("."))
    e.add("write", "unzip extracts files")
    if o.has("-o") and not o.has("-n"):
        e.unseen = ("unzip -o writes over any file of a name the archive holds, which the "
                    "command line does not show (-n keeps them)")


_EXIF_SETS = re.compile(r"-(?:[\w:-]+[+<-]?=.*|all=|overwrite_original\w*|tagsfromfile|"
                        r"geotag.*|restore_original|delete_original!?|w!?|W!?|o|out|csv=.*|"
                        r"j=.*|json=.*|@)", re.I)
"""exiftool options that write: a tag assignment (``-Comment=x``, ``-all=``), copying tags,
an output file or folder (``-o``, ``-w``), importing (``-csv=``, ``-j=``), the backups
(``-overwrite_original``, ``-delete_original`` deletes them), and ``-@ FILE``, whose
arguments are not shown."""


def _exiftool(e: Effect, args: list[Word]) -> None:
    """exiftool prints metadata; any option that sets tags or names an output writes."""
    files = [w for w in args if not (w.value or "-").startswith("-")]
    sets = [w for w in args if w.value is None or _EXIF_SETS.fullmatch(w.value)]
    if sets:
        e.writes.extend(files)
        e.add("destructive" if any((w.value or "").lower().startswith("-delete_original")
                                   for w in sets) else "write",
              f"exiftool {sets[0].shown} writes files")
    else:
        e.reads.extend(files)


def _pdftotext(e: Effect, args: list[Word]) -> None:
    """``pdftotext IN [OUT]`` writes OUT, else IN with ``.txt`` for ``.pdf``: replaced whole
    (``-`` is the output)."""
    o = parse_opts(args, "flrWHxyo", frozenset({"-opw", "-upw", "-enc", "-eol"}))
    if not o.positionals:
        return
    source = o.positionals[0]
    e.reads.append(source)
    out = o.positionals[1] if len(o.positionals) > 1 else Word.of(
        re.sub(r"(\.pdf)?$", ".txt", source.value or "", count=1, flags=re.I)) \
        if source.value is not None else None
    if out is None or out.value != "-":
        target = out if out is not None else Word(None, source.text, "other")
        e.writes.append(target)
        e.replaces.append(target)
        e.add("write", "pdftotext writes the text to a file")


def _diff_runner(e: Effect, args: list[Word]) -> None:
    """``diff3``/``sdiff`` compare the files they are given; ``--diff-program=PROG`` runs
    PROG to do it, and sdiff's ``-o FILE`` writes the merge over FILE."""
    o = parse_opts(args, "LoWwI", frozenset({"--label", "--output", "--diff-program",
                                             "--width", "--ignore-matching-lines"}))
    e.reads.extend(o.positionals)
    for program in o.all("--diff-program"):
        e.add("exec", f"{prog(e)} --diff-program runs a program")
        e.nested.append((f"{prog(e)} --diff-program", [program, *o.positionals]))  # given the files
    if prog(e) == "sdiff":
        out = o.all("-o", "--output")
        e.writes.extend(out)
        e.replaces.extend(out)
        if out:
            e.add("write", "sdiff -o writes the merged file")


def _counter(writes: frozenset[str], runs: frozenset[str] = frozenset(),
             edits: frozenset[str] = frozenset()) -> Rule:
    """Line counters and spelling checkers (``cloc``, ``tokei``, ``scc``, ``codespell``):
    they read the paths they are given and load no code; a report option writes its file,
    cloc's ``--extract-with`` runs a command, ``codespell -w`` edits the files it reads."""

    def rule(e: Effect, args: list[Word]) -> None:
        edited = False
        for i, w in enumerate(args):
            key, eq, value = (w.value or "").partition("=")
            given = Word.of(value) if eq else args[i + 1] if i + 1 < len(args) else None
            if w.value is None:
                e.reads.append(w)  # a path (or an option) only known at run time
            elif key in writes and given is not None:
                e.writes.append(given)
                e.replaces.append(given)
                e.add("write", f"{prog(e)} {key} writes a report file")
            elif key in runs and given is not None:
                e.add("exec", f"{prog(e)} {key} runs a command")
                e.scripts.append((f"{prog(e)} {key}", given))
            elif key in edits or (key.startswith("-") and not key.startswith("--") and
                                  any(f"-{c}" in edits for c in key[1:])):
                edited = True
            elif not key.startswith("-") and not (i and (args[i - 1].value or "") in
                                                  writes | runs):
                e.reads.append(w)
        if edited:
            e.writes.extend(e.reads)
            e.add("write", f"{prog(e)} corrects the files it reads")

    return rule


RULES: dict[str, Rule] = {
    "cloc": _counter(frozenset({"--report-file", "--out", "--sql", "--ignored", "--counted",
                                "--categorized", "--write-lang-def",
                                "--write-lang-def-incl-dup"}), frozenset({"--extract-with"})),
    "tokei": _counter(frozenset()), "scc": _counter(frozenset({"-o", "--output"})),
    "codespell": _counter(frozenset(), edits=frozenset({"-w", "--write-changes", "-i",
                                                        "--interactive"})),
    "exiftool": _exiftool, "pdftotext": _pdftotext, "diff3": _diff_runner,
    "sdiff": _diff_runner,
    "grep": _grep, "egrep": _grep, "fgrep": _grep, "rgrep": _grep, "zgrep": _grep,
    **dict.fromkeys(("zegrep", "zfgrep", "xzgrep", "xzegrep", "xzfgrep", "bzgrep", "bzegrep",
                     "bzfgrep", "lzgrep", "lzegrep", "lzfgrep", "zstdgrep"), _grep),
    "gitleaks": _gitleaks, "detect-secrets": _detect_secrets, "trufflehog": _trufflehog,
    "diffstat": _diffstat, "grepdiff": reader("ixpIf", skip_first=1, pattern_opts=("-f",),
                                              read_opts=("-f",)),
    "rg": _rg, "ag": reader("ABCGgm", skip_first=1), "ack": reader("ABCgm", skip_first=1),
    "jq": _jq, "gojq": _jq, "jaq": _jq, "tomlq": _jq_wrapper, "xq": _jq_wrapper,
    "xmllint": _xmllint,
    "tree": output_option("LPIo", "-o", "--output"),
    "iconv": output_option("fto", "-o", "--output"),
    "shuf": output_option("nioe", "-o", "--output", reads_first=True),
"sort": _sort, "uniq": _uniq, "xxd": _xxd,
    "base64": _base64, "tee": _tee,
    "sed": _sed, "gsed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "tar": _tar, "gtar": _tar, "dd": _dd, "rm": _rm, "chmod": _chmod, "chown": _chmod,
    "setfacl": _setfacl,
    "chgrp": _chmod, "cp": _copy, "mv": _copy, "ln": _copy, "install": _copy,
    **dict.fromkeys(("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd",
                     "zstdcat", "lz4", "brotli"), _compressor),
    "touch": writer("rtd", ("--reference", "--date")), "mkdir": writer("m", ("--mode",)),
    "rmdir": writer(verb="removes"), "truncate": _truncate,
    "shred": plain("destructive", "shred destroys file contents"),
    "patch": _patch,
    "unzip": _unzip, "zip": _zip, "split": _split, "fallocate": _fallocate,
    "csplit": writer("fbn"), "sponge": writer(), "dos2unix": _dos2unix, "unix2dos": _dos2unix,
    "mktemp": _mktemp, "mkfifo": writer("m"),
    "mknod": writer("m"), "link": writer(verb="links; a write through the link changes"),
    "unlink": _rm,
}
