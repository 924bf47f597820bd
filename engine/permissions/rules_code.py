"""Rules for programs that take code in an option: editors, debuggers, build tools, ``script``.

Each entry names the option that carries code and how to find the shell commands in it (an Ex
``:!cmd``, an Emacs ``(shell-command "cmd")``, a make recipe). Shell commands found are judged
like ``bash -c``; code that is not a plain literal stays ``ask`` (the programs are ``exec``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from functools import partial

from engine.permissions.ed_script import read_script
from engine.permissions.effect import (
    Effect,
    Loads,
    Opts,
    Rule,
    parse_opts,
    prog,
    teardown_verb,
)
from engine.permissions.inline import inline_code
from engine.permissions.makefiles import NAMES as MAKEFILE_NAMES
from engine.permissions.makefiles import remade_from, runs_when_dry, sources
from engine.permissions.words import STDIN_FILES, Word

# ---------------------------------------------------------------- vi family

_EX_SHELL = re.compile(r"^[\s:]*(?:(?:[.,$%;+-]|\d|'.)*\s*)?(?:r(?:ead)?\s*|w(?:rite)?\s+|"
                       r"(?:silent!?\s*))?!(.*)$", re.S)
"""``:!cmd``, ``:%!filter``, ``:r !cmd``, ``:w !cmd`` (a blank before ``!``: ``:w! FILE``
forces a write to FILE)."""
_EX_WRITE_TO = re.compile(r"^[\s:]*(?:(?:[.,$%;+-]|\d|'.)*\s*w(?:rite)?\s+|"
                          r"(?:[.,$%;+-]|\d|'.)+\s*)!(.*)$", re.S)
"""``:w !cmd`` and a filter ``:%!cmd``: the buffer (or the range) is cmd's input."""
_EX_CALLS = re.compile(r"\b(?:system|systemlist|job_start|jobstart|term_start|termopen|"
                       r"os\.execute|io\.popen|os\.system|subprocess\.\w+)\s*\(\s*"
                       r"(?:\[\s*)?(['\"])((?:\\.|(?!\1).)*)\1")
_EX_TERMINAL = re.compile(r"^[\s:]*(?:ter(?:minal)?|terminal!?)\s+(?:\+\+\w+\s+)*(.+)$", re.S)
_EX_CODE = re.compile(r"^[\s:]*(?:py(?:thon)?3?|pyx|lua|perl|ruby|rub|tcl|mz|luado|pydo|"
                      r"py3do|perldo|rubydo|so(?:urce)?|exe(?:cute)?|norm(?:al)?)\b")


def ex_commands(e: Effect, how: str, text: Word) -> None:
    """Judge the shell commands in one Ex command line (``vim -c``, ``vim +cmd``)."""
    if text.value is None:
        e.at_least("ask", f"{how} runs editor commands only known at run time")
        return
    for part in _ex_split(text.value):
        inner = _EX_GLOBAL.fullmatch(part)
        if inner and inner.group(2).strip():  # g/x/!cmd: the command run on each match
            ex_commands(e, how, Word.of(inner.group(2)))
            continue
        piped = _EX_WRITE_TO.match(part)
        if piped:  # :w !cmd: the buffer is cmd's input, which the command line does not show
            e.scripts.append((how, Word.of(f": | {piped.group(1)}")))
            continue
        m = _EX_SHELL.match(part) or _EX_TERMINAL.match(part)
        if m:
            e.scripts.append((how, Word.of(m.group(1))))
            continue
        for call in _EX_CALLS.finditer(part):
            e.scripts.append((how, Word.of(call.group(2))))
        if _EX_CODE.match(part) and not _EX_CALLS.search(part):
            e.at_least("ask", f"{how} runs editor or interpreter code")
        _ex_file(e, part)


_EX_GLOBAL = re.compile(r"\s*(?:g|global|v|vglobal)!?\s*([^\w\s|\"])(?:\\.|(?!\1).)*\1(.*)",
                        re.S)
"""``:g/PATTERN/CMD``: CMD runs on each matching line (the delimiter may be any mark)."""
_EX_FILE = re.compile(r"\s*[\d,.$%'<>+-]*\s*(r|read|e|edit|sp|split|vs|vsplit|new|vnew|tabe|"
                      r"tabedit|so|source|badd|arga|argadd|vie|view|sv|sview|w|write|sav|"
                      r"saveas|wq|x|xit|up|update)(!?)\s+(\S.*?)\s*$")
"""An Ex command that reads or writes the file it names (``r FILE``, ``w! FILE``)."""
_EX_WRITES = frozenset({"w", "write", "sav", "saveas", "wq", "x", "xit", "up", "update"})


def _ex_file(e: Effect, part: str) -> None:
    """The file an Ex command reads or writes, judged as a path (one with ``%``, ``#``, a
    backtick, ``$`` or a leading ``~``, which vim expands, is only known at run time)."""
    m = _EX_FILE.fullmatch(part)
    if m is None or m.group(3).startswith("!"):
        return
    name = m.group(3)
    word = Word(None, name, "other") if re.search(r"[%#`$]", name) or name.startswith(
        "~") else Word.of(name)
    (e.writes if m.group(1) in _EX_WRITES else e.reads).append(word)


def _ex_split(line: str) -> list[str]:
    """Ex commands separated by ``|`` (a ``!`` command takes the rest of the line)."""
    out: list[str] = []
    current = ""
    for piece in line.split("|"):
        current = f"{current}|{piece}" if current else piece
        if "!" in current and _EX_SHELL.match(current):
            continue
        out.append(current)
        current = ""
    if current:
        out.append(current)
    return out


def _editor_input(e: Effect, how: str, text: Word) -> None:
    """Commands an editor reads on its input (``ed FILE <<< '!cmd'``, ``vim -es < script``):
    each line is an Ex/ed command line."""
    if text.value is None:
        e.at_least("ask", f"{how} editor commands only known at run time")
        return
    for line in text.value.splitlines():
        ex_commands(e, how, Word.of(line))


_ED_UNSHOWN = "can write files and run commands"


def _ed(e: Effect, args: list[Word]) -> None:
    """``ed``/``red`` run the commands they read; ``!cmd`` (also ``r !cmd``, ``w !cmd``,
    ``e !cmd``) is a shell command. A script shown on the command line is read
    (``ed_script``): one that only prints reads the file."""
    e.add("exec", f"{prog(e)} {_ED_UNSHOWN}")
    files = parse_opts(args, "p", frozenset({"--prompt"})).positionals
    e.reads.extend(files)
    e.stdin_reader = lambda eff, text: _ed_input(eff, text, files[:1])


def _ed_input(e: Effect, text: Word, edited: list[Word]) -> None:
    """The effect of the ed script ``text`` on the file ``edited`` (none: a new buffer)."""
    script = read_script(text.value) if text.value is not None else None
    if script is None or not script.understood:
        _editor_input(e, f"{prog(e)} <<", text)
        return
    e.risk = "read"  # what the script does, instead of what ed can do
    e.reasons = [r for r in e.reasons if not r.endswith(_ED_UNSHOWN)]
    for code in script.commands:
        e.scripts.append((f"{prog(e)} <<", Word.of(code)))
    e.reads.extend(Word.of(r) for r in script.reads)
    for name in script.writes:
        target = edited if not name else [Word.of(name)]
        e.writes.extend(target)
        if name:
            e.replaces.extend(target)
    if script.empties:
        e.add("destructive", f"{prog(e)} deletes every line, then writes the file")
    elif script.writes:
        e.add("write", f"{prog(e)} {'edits' if script.changes else 'writes'} files")
    if script.commands:
        e.add("exec", f"{prog(e)} ! runs shell commands")


_DC_SHELL = re.compile(r"!(?![<>=])([^\n]*)")
"""dc's ``!`` runs the rest of the line as a shell command (``!<``, ``!>``, ``!=`` compare)."""


def _dc_code(e: Effect, how: str, code: Word) -> None:
    if code.value is None:
        e.at_least("ask", f"{how} code only known at run time")
        return
    for m in _DC_SHELL.finditer(code.value):
        e.scripts.append((how, Word.of(m.group(1))))


def _dc(e: Effect, args: list[Word]) -> None:
    e.add("exec", "dc ! runs shell commands")
    o = parse_opts(args, "ef", frozenset({"--expression", "--file"}))
    for code in o.all("-e", "--expression"):
        _dc_code(e, "dc -e", code)
    e.reads.extend([*o.all("-f", "--file"), *o.positionals])
    e.stdin_reader = lambda eff, text: _dc_code(eff, "dc <<", text)


_M4_SHELL = re.compile(r"\be?syscmd\s*\(")


def _m4_code(e: Effect, how: str, text: Word) -> None:
    """``syscmd(cmd)`` and ``esyscmd(cmd)`` run cmd through the shell."""
    if text.value is None:
        e.at_least("ask", f"{how} macros only known at run time")
        return
    body = text.value
    for m in _M4_SHELL.finditer(body):
        depth, end = 1, m.end()
        while end < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            end += 1
        code = body[m.end():end - 1] if depth == 0 else body[m.end():]
        e.scripts.append((how, Word.of(code.replace("`", "").replace("'", ""))))


def _m4(e: Effect, args: list[Word]) -> None:
    e.add("exec", "m4 runs macros (syscmd and esyscmd run shell commands)")
    o = parse_opts(args, "DUIdloFRt", frozenset({
        "--define", "--undefine", "--include", "--debug", "--debugfile", "--freeze-state",
        "--reload-state", "--trace", "--nesting-limit", "--word-regexp", "--hashsize"}))
    for value in o.all("-D", "--define"):
        _m4_code(e, "m4 -D", value)
    e.reads.extend(o.positionals)
    e.stdin_reader = lambda eff, text: _m4_code(eff, "m4 <<", text)


_EX_EMPTIES = re.compile(r"\s*(?:%|1\s*,\s*\$)\s*d(?:e|el|ele|elet|elete)?!?\s*"
                         r"|\s*g(?:lobal)?\s*/(?:\^|\.\*|\$|)/\s*d(?:elete)?\s*")
"""Ex commands that delete every line of the buffer (``%d``, ``1,$delete``, ``g/^/d``)."""
_EX_SAVES = re.compile(r"\s*(?:w|write|wq|x|xit|exi|exit|up|update)!?\s*")
"""Ex commands that write the buffer back over the file it came from."""


_EX_PRINTS = re.compile(
    r"\s*(?:(?:[\d,.$%]|'.)*\s*(?:p|print|nu|number|#|l|list|=|z)?"
    r"|(?:g|global|v|vglobal)!?\s*/(?:\\.|[^/\\])*/\s*(?:p|print|nu|number|#|l|list)?"
    r"|q|quit|qa|qall|q!|quit!|qa!|qall!|se(?:t)?(?:\s+(?:no)?(?:more|nu|number|list|ic"
    r"|ignorecase))+)\s*")
"""Ex commands that print lines and quit (``g/ERROR/p``, ``%p``, ``q!``): nothing written,
nothing run."""


_VIM_QUIET_FLAGS = re.compile(r"-[eEsnNRXZ]+|-V\d*|--noplugins?|--clean|--not-a-term|--|-")
"""vim options that write nothing and run nothing: Ex and silent mode, no swap file, read-only,
no X, restricted, verbose messages to the terminal (``-V20`` alone: ``-V20FILE`` writes FILE)."""
_VIM_VALUED = frozenset({"-c", "--cmd", "-u", "-U", "-i", "-S"})


def _only_quiet_options(values: list[str]) -> bool:
    """Every option of a vim command line is one that writes nothing: ``-W FILE``/``-w FILE``
    (typed keys), ``-V1FILE``, ``--startuptime FILE``, ``--log FILE`` and ``-i FILE`` (the
    viminfo file) write one, and an option not known here may."""
    k = 0
    while k < len(values):
        v = values[k]
        if v in _VIM_VALUED:
            if v in ("-U", "-i") and values[k + 1:k + 2] != ["NONE"]:
                return False
            k += 2
            continue
        if v.startswith("-") and not _VIM_QUIET_FLAGS.fullmatch(v):
            return False
        k += 1
    return True


def _prints_only(name: str, args: list[Word], lines: list[str | None]) -> bool:
    """``vim -es -c 'g/x/p' -c 'q!' f``: in batch Ex mode no startup file is read (unless
    ``-u`` names one), every command given only prints and every option writes nothing."""
    values = [w.value or "" for w in args]
    if not _only_quiet_options(values):
        return False
    batch = any(re.fullmatch(r"-[eEs]+", v) and "s" in v and (name == "ex" or set(v) & {
        "e", "E"}) for v in values)
    startup = any(v == "-u" and k + 1 < len(values) and values[k + 1] != "NONE"
                  for k, v in enumerate(values)) or "-S" in values
    parts = [part for line in lines for part in _ex_split(line or "")]
    return batch and not startup and None not in lines and bool(parts) and all(
        _EX_PRINTS.fullmatch(part) for part in parts)


def _vim(e: Effect, args: list[Word]) -> None:
    e.stdin_reader = lambda eff, text: _editor_input(eff, f"{prog(eff)} <<", text)
    o = parse_opts(args, "cSTuUiwWrtqoOp", frozenset({"--cmd"}))
    lines: list[str | None] = []
    for name, value in o.items:
        if name in ("-c", "--cmd") and value is not None:
            ex_commands(e, f"{prog(e)} {name}", value)
            lines.append(value.value)
        elif name in ("-S", "-s", "-u") and value is not None:
            e.reads.append(value)
    files = []
    for w in o.positionals:
        if w.value is not None and w.value.startswith("+") and len(w.value) > 1:
            ex_commands(e, f"{prog(e)} +cmd", Word.of(w.value[1:]))
            lines.append(w.value[1:])
        elif w.value != "-":
            e.reads.append(w)  # a file it opens: read, judged as a path
            files.append(w)
    _vim_logs(e, args)
    if not _prints_only(prog(e), args, lines):
        e.add("exec", f"{prog(e)} can write files and run commands")
    if files and _empties_buffer(lines):
        e.writes.extend(files)
        e.add("destructive", f"{prog(e)} deletes every line and writes the file back")


def _vim_logs(e: Effect, args: list[Word]) -> None:
    """The files vim's options write: ``-W F`` replaces F with the typed keys; ``-w F``,
    ``-V1F``, ``--startuptime F`` and ``--log F`` append to F; ``-i F`` is the viminfo file
    (``-w 20`` is a window height)."""
    for k, w in enumerate(args):
        v = w.value or ""
        target = args[k + 1] if k + 1 < len(args) and v in _VIM_LOG_OPTIONS else None
        if target is not None and target.value != "NONE" and not (
                v == "-w" and (target.value or "").isdigit()):
            e.writes.append(target)
            if v == "-W":
                e.replaces.append(target)
        elif m := re.fullmatch(r"-V\d*(.+)|--(?:startuptime|log)=(.+)", v):
            e.writes.append(Word.of(m.group(1) or m.group(2)))


_VIM_LOG_OPTIONS = frozenset({"-W", "-w", "--startuptime", "--log", "-i"})


def _empties_buffer(lines: list[str | None]) -> bool:
    """``-c '%d' -c wq``, ``-c '%d|x'``: every line deleted, then the buffer written back."""
    parts = [part for line in lines if line is not None for part in _ex_split(line)]
    emptied = next((i for i, part in enumerate(parts) if _EX_EMPTIES.fullmatch(part)), None)
    return emptied is not None and any(_EX_SAVES.fullmatch(p) for p in parts[emptied + 1:])


# ---------------------------------------------------------------- emacs

_ELISP_SHELL = re.compile(r"\((?:async-)?shell-command(?:-to-string|-on-region)?\s+"
                          r"\"((?:\\.|[^\"\\])*)\"|\(call-process-shell-command\s+"
                          r"\"((?:\\.|[^\"\\])*)\"")
_ELISP_PROCESS = re.compile(r"\((?:call-process|start-process|process-lines|make-process)\b"
                            r"([^()]*)\)")
_ELISP_DELETE = re.compile(r"\((?:delete-directory|delete-file)\b")
_ELISP_STRING = re.compile(r"\"((?:\\.|[^\"\\])*)\"")


def elisp(e: Effect, how: str, code: Word) -> None:
    """Shell commands and process calls in Emacs Lisp (``emacs --eval``)."""
    if code.value is None:
        e.at_least("ask", f"{how} code only known at run time")
        return
    for m in _ELISP_SHELL.finditer(code.value):
        e.scripts.append((how, Word.of(_unquote(m.group(1) or m.group(2) or ""))))
    for m in _ELISP_PROCESS.finditer(code.value):
        words = [_unquote(s) for s in _ELISP_STRING.findall(m.group(1))]
        if words:
            e.nested.append((how, [Word.of(w) for w in words[1:] or words]))
    if _ELISP_DELETE.search(code.value):
        e.add("destructive", f"{how} deletes files")


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _emacs(e: Effect, args: list[Word]) -> None:
    e.add("exec", f"{prog(e)} can write files and run commands")
    o = parse_opts(args, "lfL", frozenset({"--eval", "-eval", "--execute", "--load",
                                           "--funcall", "-l", "-f", "--directory"}))
    for name, value in o.items:
        if name in ("--eval", "-eval", "--execute") and value is not None:
            elisp(e, f"emacs {name}", value)
    for i, a in enumerate(args[:-1]):
        if a.value in ("-eval", "-execute"):
            elisp(e, f"emacs {a.value}", args[i + 1])
        if a.value in ("--script", "-script", "-l", "--load", "-load") and \
                args[i + 1].value in STDIN_FILES:  # emacs --script /dev/stdin <<< ELISP
            e.stdin_reader = _elisp_input


def _elisp_input(e: Effect, text: Word) -> None:
    elisp(e, "emacs --script (its input)", text)


# ---------------------------------------------------------------- debuggers, script


def _gdb(e: Effect, args: list[Word]) -> None:
    e.add("exec", "gdb runs programs and commands")
    at = next((i for i, a in enumerate(args) if a.value == "--args"), None)
    if at is not None and at + 1 < len(args):  # gdb --args PROG ARGS: `run` runs it
        e.nested.append(("gdb --args", args[at + 1:]))
    o = parse_opts(args, "xp", frozenset({"-ex", "--ex", "-iex", "--eval-command",
                                          "--init-eval-command", "-x", "--command"}))
    codes = [v for n, v in o.items if n in ("-ex", "--ex", "-iex", "--eval-command",
                                            "--init-eval-command") and v is not None]
    for i, a in enumerate(args[:-1]):
        if a.value in ("-ex", "-iex", "-eval-command"):
            codes.append(args[i + 1])
    for code in codes:
        _gdb_command(e, "gdb -ex", code)
    if any(w.value in STDIN_FILES for w in o.all("-x", "--command")) or not o.has(
            "-batch", "--batch"):  # gdb -x /dev/stdin, or gdb <<< CMDS: commands on its input
        e.stdin_reader = _gdb_input


def _gdb_command(e: Effect, how: str, code: Word) -> None:
    """One gdb command: ``shell CMD``, ``!CMD`` and ``pipe .. | CMD`` run shell code;
    ``python``, ``call``, ``print`` run code in the debugger."""
    m = re.match(r"\s*(?:shell|!|pipe\s+[^|]*\|)\s*(.*)", code.value or "", re.S)
    if code.value is None:
        e.at_least("ask", "gdb command only known at run time")
    elif m:
        e.scripts.append((how, Word.of(m.group(1))))
    elif re.match(r"\s*(?:python|py|pi|guile|source|call|print|p)\b", code.value):
        e.at_least("ask", f"{how} runs code in the debugger")
        inline_code(e, how, "c", code)  # call system("cmd"), python os.system()


def _gdb_input(e: Effect, text: Word) -> None:
    """gdb's commands read from its input (or a ``-x`` file that is its input), a line
    each."""
    if text.value is None:
        e.at_least("ask", "gdb reads commands from its input, only known at run time")
        return
    for line in text.value.splitlines():
        if line.strip():
            _gdb_command(e, "gdb <<", Word.of(line))


_GDB_SHOWS = re.compile(r"\s*(?:info|i|disassemble|disas|list|l|ptype|whatis|show|"
                        r"maint\s+info|bt|backtrace|where|frame|f|up|down|"
                        r"thread\s+apply\s+all\s+(?:bt|backtrace))\b[^;|`$]*$")
"""gdb commands that print what the program or a core file holds; a backtrace of a core
runs nothing (there is no process to run code in)."""
_GDB_QUIET = frozenset({"-batch", "--batch", "-nx", "-n", "--nx", "-q", "--quiet", "-nh"})


def _gdb_or_query(e: Effect, args: list[Word]) -> None:
    """``gdb -nx -batch -ex 'info functions x' prog`` and ``gdb -nx -batch -ex bt prog core``
    load the program (and its core) without running it and print; anything else is
    ``_gdb``. A second word of digits is a process to attach to, not a core."""
    values = [w.value or "" for w in args]
    commands = [values[i + 1] for i, v in enumerate(values[:-1]) if v in ("-ex", "--ex",
                                                                          "-eval-command")]
    rest = [v for i, v in enumerate(values) if v not in ("-ex", "--ex", "-eval-command") and
            not (i and values[i - 1] in ("-ex", "--ex", "-eval-command"))]
    files = [v for v in rest if not v.startswith("-")]
    if None not in (w.value for w in args) and {"-batch", "--batch"} & set(rest) and \
            {"-nx", "-n", "--nx"} & set(rest) and commands and \
            all(_GDB_SHOWS.match(c) for c in commands) and len(files) in (1, 2) and \
            not files[-1].isdigit() and set(v for v in rest if v.startswith("-")) <= _GDB_QUIET:
        e.reads.extend(Word.of(f) for f in files)  # -nx: no .gdbinit widens where scripts
        return  # beside the program (app-gdb.py) may auto-load from
    _gdb(e, args)
    if any(v in ("-p", "--pid") or v.startswith("--pid=") for v in values) or any(
            c.split()[:1] == ["attach"] for c in commands):
        e.secret = e.secret or "gdb attached to a running process reads its memory (what " \
                               "it holds: an agent's keys, a shell's tokens)"


def _script(e: Effect, args: list[Word]) -> None:
    """``script -c CMD`` runs CMD in a shell and records it to a file (``typescript``
    unless named), which it empties first unless ``-a``."""
    o = parse_opts(args, "cEIOBTm", frozenset({"--command", "--log-in", "--log-out",
                                               "--log-io", "--log-timing", "--echo"}))
    e.add("exec", "script runs a shell")
    for code in o.all("-c", "--command"):
        e.scripts.append(("script -c", code))
    if not o.has("-c", "--command"):
        e.stdin_code = "shell"  # script -q /dev/null <<< CMD: the shell runs its input
    logs = [*(o.positionals[:1] or [Word.of("typescript")]),
            *o.all("-O", "--log-out", "-B", "--log-io", "-I", "--log-in", "-T",
                   "--log-timing")]
    e.writes.extend(logs)
    if not o.has("-a", "--append"):  # each log starts empty: an existing file is lost
        e.replaces.extend(w for w in logs if w.value not in ("/dev/null", "-"))


# ---------------------------------------------------------------- make

_MAKE_SHELL = re.compile(r"\$[({]shell\s+([^)}]*)[)}]")
_RECIPE_PREFIX = re.compile(r"^[\s@+-]*")
"""What make strips from a recipe line before the shell gets it: blanks and the ``@``
(silent), ``+`` (run under -n) and ``-`` (ignore errors) marks, in any order."""


_PREFIX_SET = re.compile(r"\s*\.RECIPEPREFIX\s*[:!?]*=\s*(\S?)")
"""``.RECIPEPREFIX = >``: the character recipe lines start with from there on (a tab when
empty). Lines starting with a tab are judged as recipes whatever it is."""


def makefile_code(e: Effect, how: str, text: Word) -> None:
    """Recipes and ``$(shell ...)`` in makefile text (``make --eval``, a here-doc)."""
    if text.value is None:
        e.at_least("ask", f"{how} makefile text only known at run time")
        return
    body = text.value.replace("\\\n", " ")
    recipes = [m.group(1) for m in _MAKE_SHELL.finditer(body)]
    prefix = "\t"
    for line in body.splitlines():
        if m := _PREFIX_SET.match(line):  # .RECIPEPREFIX = >: recipes start with > now
            prefix = m.group(1)[:1] or "\t"
        elif line.startswith((prefix, "\t")):
            recipes.append(_RECIPE_PREFIX.sub("", line[1:]))
        elif ";" in line and ":" in line.split(";", 1)[0] and not line.startswith("#") \
                and "=" not in line.split(":", 1)[0]:  # target: ; +cmd (blanks, then @+-)
            recipes.append(_RECIPE_PREFIX.sub("", line.split(";", 1)[1]))
    for code in recipes:
        code = re.sub(r"\$\(([A-Za-z_@<^*?][A-Za-z0-9_]*)\)|\$([@<^*?])", "x", code)
        e.scripts.append((how, Word.of(code.replace("$$", "$"))))


_MAKE_PRINTS = frozenset({"-p", "--print-data-base", "-r", "--no-builtin-rules", "-R",
                          "--no-builtin-variables", "-s", "--silent", "-q", "--question"})


_MAKE_DRY = frozenset({"-n", "--just-print", "--dry-run", "--recon", "-q", "--question"})
"""Options that make make print its recipes, or only answer whether they are needed."""
_MAKE_DRY_ALSO = frozenset({
    "-s", "--silent", "--quiet", "-k", "--keep-going", "-S", "--no-keep-going", "--stop",
    "-i", "--ignore-errors", "-B", "--always-make", "-r", "--no-builtin-rules", "-R",
    "--no-builtin-variables", "-p", "--print-data-base", "-w", "--print-directory",
    "--no-print-directory", "-W", "--what-if", "--new-file", "--assume-new", "-o",
    "--old-file", "--assume-old", "-j", "--jobs", "-l", "--load-average", "-e",
    "--environment-overrides", "-C", "--directory", "-f", "--file", "--makefile", "-d",
    "--debug", "--trace", "-O", "--output-sync", "-L", "--check-symlink-times",
    "--warn-undefined-variables", "-I", "--include-dir"})
"""Options that change nothing a dry run does beyond what it prints (``-t`` touches
files and ``--eval`` adds makefile code: neither is here)."""


def _make(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "CfjEIlWoO", frozenset({"--directory", "--file", "--jobs",
                                                 "--makefile", "--eval", "--include-dir",
                                                 "--what-if", "--old-file"}))
    makefiles = o.all("-f", "--file", "--makefile")
    if makefiles and all(w.value == "/dev/null" for w in makefiles) and not o.positionals \
            and set(o.flags) <= _MAKE_PRINTS | {"-f", "--file", "--makefile"}:
        return  # make -p -f /dev/null: the built-in rules, printed; nothing to build
    e.chdir.extend(o.all("-C", "--directory"))
    if _make_dry(e, o):
        return
    e.add("exec", "make runs the commands of a Makefile")
    for code in o.all("--eval", "-E"):
        makefile_code(e, "make --eval", code)
    if any(w.value in STDIN_FILES for w in o.all("-f", "--file", "--makefile")):
        e.stdin_reader = lambda eff, text: makefile_code(eff, "make -f -", text)


def _make_dry(e: Effect, o: Opts) -> bool:
    """``make -n``/``make -q``: the makefiles are read, and judged for what reading them
    runs (``makefiles.runs_when_dry``); nothing else runs. False when the options or
    words leave more to it (``-t``, ``--eval``, ``X=$(..)``, a makefile on stdin, ``CC=+cmd``:
    a recipe line starting ``$(CC)`` would run)."""
    if not _MAKE_DRY & set(o.flags) or not set(o.flags) <= _MAKE_DRY | _MAKE_DRY_ALSO:
        return False
    folders = o.all("-C", "--directory")
    given = o.all("-f", "--file", "--makefile")
    if any(w.value is None or ("=" in w.value and set("$+\n") & set(w.value))
           for w in o.positionals) or \
            any(w.value is None for w in (*folders, *given)) or \
            any(w.value in STDIN_FILES for w in given):
        return False
    folder = ""
    for w in folders:  # make -C a -C b: a/b
        folder = posixpath.join(folder, w.value or "")
    names = tuple(posixpath.join(folder, w.value or "") for w in given) or tuple(
        posixpath.join(folder, n) for n in MAKEFILE_NAMES)
    e.reads.extend(given)
    assigned = dict(v.partition("=")[::2] for w in o.positionals if "=" in (v := w.value or ""))
    e.loads_here.append(Loads(names, runs=partial(runs_when_dry, command_line=assigned),
                              missing="reads a makefile that is not there now: what it "
                              "holds is only known when it runs"))
    e.loads_here.append(Loads(sources(names), runs=remade_from))
    return True


def _rails(e: Effect, args: list[Word]) -> None:
    """``rails runner CODE`` runs Ruby in the application (judged as inline code: an
    ``update_all`` on a model changes every row); every other task loads the application:
    asked, and a teardown (``db:drop``) refused."""
    e.add("exec", f"{prog(e)} loads the application and runs its code")
    words = [w.value for w in args]
    if words[:1] in (["runner"], ["r"]) and len(args) > 1:
        inline_code(e, f"{prog(e)} runner", "ruby", args[1])
    verb = teardown_verb(args, positionals=2)
    if verb is not None:
        e.add("destructive", f"{prog(e)} {verb} tears the database down")


def _cmake(e: Effect, args: list[Word]) -> None:
    """``cmake -E CMD`` is a portable command line (``rm -r``, ``remove_directory``)."""
    if args and args[0].value == "-E" and len(args) > 1:
        sub = args[1].value or ""
        rest = args[2:]
        if sub in ("rm", "remove", "remove_directory"):
            e.add("destructive", f"cmake -E {sub} deletes files")
            e.writes.extend(w for w in rest if not (w.value or "").startswith("-"))
        elif sub in ("echo", "echo_append", "capabilities", "environment", "compare_files",
                     "sha256sum", "md5sum", "sha1sum", "cat"):
            e.reads.extend(w for w in rest if sub in ("compare_files", "cat") or
                           sub.endswith("sum"))
        elif sub == "tar":  # cmake -E tar tzf a.tgz: tar's own modes and files
            e.nested.append(("cmake -E tar", [Word.of("tar"), *rest]))
        elif sub in ("env", "time", "chdir"):
            inner = rest[1:] if sub == "chdir" else [w for w in rest
                                                     if "=" not in (w.value or "")]
            e.nested.append((f"cmake -E {sub}", inner))
        else:
            e.add("write", f"cmake -E {sub} changes files")
        return
    if [a.value for a in args] in (["--list-presets"], *([f"--list-presets={k}"] for k in (
            "configure", "build", "test", "package", "workflow", "all"))):
        return  # the presets CMakePresets.json declares, listed; nothing configured
    if (args and (args[0].value or "").startswith("--help")) or [a.value for a in args] in (
            ["--version"], ["-version"]):
        _cmake_help(e, args)
        return
    o = parse_opts(args, "PDGSBCUT")
    flags = {w.value for w in args if (w.value or "-").startswith("-")}
    if "-N" in flags and flags <= {"-N", "-L", "-LA", "-LH", "-LAH"}:
        e.reads.extend(o.positionals)  # cmake -LAH -N build: the cache, shown
        return
    e.add("exec", "cmake runs project code")
    e.reads.extend(o.all("-P"))
    if "--install" in flags:  # cmake --install build --prefix /usr/local: written there
        words = [w.value for w in args]
        prefix = next((args[i + 1] for i, v in enumerate(words[:-1]) if v == "--prefix"), None)
        prefix = prefix or next((Word.of(v.split("=", 1)[1]) for v in words
                                 if v is not None and v.startswith("--prefix=")), None)
        e.writes.append(prefix or Word(None, "<the install prefix the cache names>", "other"))


_CMAKE_HELP_NAMED = frozenset({"--help-command", "--help-module", "--help-policy",
                               "--help-property", "--help-variable", "--help-manual"})


def _cmake_help(e: Effect, args: list[Word]) -> None:
    """``cmake --help-module NAME [FILE]``, ``cmake --help-commands [FILE]``: the
    documentation, printed, or written to FILE when one is given."""
    kept = 2 if args[0].value in _CMAKE_HELP_NAMED else 1
    if len(args) > kept:
        e.writes.extend(args[kept:])
        e.add("write", f"cmake {args[0].shown} writes its output file")


_NINJA_PRINTS = frozenset({"commands", "compdb", "deps", "graph", "inputs", "missingdeps",
                           "multi-inputs", "query", "rules", "targets", "urtle", "list",
                           "wincodepage", "compdb-targets"})
"""``ninja -t`` tools that print what the manifest says (tools run before the manifest is
rebuilt, so its generator does not run)."""
_NINJA_DELETES = frozenset({"clean", "cleandead"})


def _ninja(e: Effect, args: list[Word]) -> None:
    """``ninja -n`` acts as if each command succeeded and runs none (not even the generator
    that rebuilds ``build.ninja``; it writes no log); the printing tools read. A build runs
    the manifest's commands; ``-t clean`` deletes outputs; other tools write or run."""
    o = parse_opts(args, "Cfjkldtw")
    e.chdir.extend(o.all("-C"))
    e.reads.extend(o.all("-f"))
    tool = o.get("-t")
    if tool is not None:
        if tool.value in _NINJA_DELETES:  # outputs the build makes again: not work lost
            e.add("write", f"ninja -t {tool.value} deletes the build's outputs")
        elif tool.value not in _NINJA_PRINTS:
            e.add("exec", f"ninja -t {tool.shown} writes the build's logs or runs a program")
    elif not o.has("-n", "--version", "-h", "--help"):
        e.add("exec", "ninja runs the commands of its manifest")


RULES: dict[str, Rule] = {
    **dict.fromkeys(("vi", "vim", "nvim", "view", "vimdiff", "gvim", "ex", "rvim"), _vim),
    "ed": _ed, "red": _ed, "dc": _dc, "m4": _m4,
    "emacs": _emacs, "emacsclient": _emacs, "gdb": _gdb_or_query, "script": _script,
    "make": _make, "gmake": _make, "cmake": _cmake, "ninja": _ninja, "rails": _rails,
}


# ---------------------------------------------------------------- terminal multiplexers, socat

_TMUX_RUNS = frozenset({"new-session", "new", "new-window", "neww", "split-window", "splitw",
                        "respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell",
                        "run", "if-shell", "if", "pipe-pane", "pipep", "display-popup",
                        "popup"})


def _tmux(e: Effect, args: list[Word]) -> None:
    """``tmux new-session -d 'CMD'``, ``tmux run-shell CMD``: the command is shell code."""
    e.add("exec", "tmux runs commands in a terminal")
    o = parse_opts(args, "LSfTc", stop_at_positional=True)
    if not o.positionals:
        return
    sub = o.positionals[0].value or ""
    rest = args[args.index(o.positionals[0]) + 1:]
    if sub in ("source-file", "source") and any(w.value in STDIN_FILES for w in rest):
        e.stdin_reader = _tmux_input  # tmux source-file /dev/stdin <<< COMMANDS
    if sub in ("send-keys", "send"):
        e.at_least("ask", "tmux send-keys types into another shell")
        return
    if sub not in _TMUX_RUNS:
        return
    inner = parse_opts(rest, "ceFnstxylf", stop_at_positional=True)
    if inner.positionals:
        words = inner.positionals
        code = words[0] if len(words) == 1 else Word.of(
            " ".join(w.value or "" for w in words))
        e.scripts.append((f"tmux {sub}", code))


def _tmux_input(e: Effect, text: Word) -> None:
    """tmux commands read from its input, a line each, as if given to ``tmux``."""
    if text.value is None:
        e.at_least("ask", "tmux reads commands from its input, only known at run time")
        return
    for line in text.value.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            e.at_least("ask", "a tmux command on its input is not understood")
            continue
        if words:
            _tmux(e, [Word.of(w) for w in words])


def _screen(e: Effect, args: list[Word]) -> None:
    """``screen -dm CMD ARGS``: after its options, screen runs a command."""
    e.add("exec", "screen runs commands in a terminal")
    i = 0
    while i < len(args):
        v = args[i].value or ""
        if v in ("-S", "-c", "-e", "-h", "-p", "-t", "-T", "-s", "-X", "-Logfile"):
            if v == "-X" and i + 1 < len(args):
                e.at_least("ask", "screen -X sends a command to a session")
            i += 2
            continue
        if v.startswith("-"):
            i += 1
            continue
        break
    if i < len(args):
        e.nested.append(("screen", args[i:]))


_SOCAT_SENDS = frozenset({"tcp", "tcp4", "tcp6", "tcp-connect", "udp", "udp4", "udp6",
                          "udp-sendto", "openssl", "openssl-connect", "ssl", "sctp"})
_LOCAL_HOSTS = frozenset({"localhost", "::1"})


def _socat(e: Effect, args: list[Word]) -> None:
    """``socat ADDR ADDR``: ``EXEC:cmd`` and ``SYSTEM:cmd`` addresses run commands."""
    e.add("network", "socat connects streams, often over the network")
    for w in args:
        v = w.value
        if v is None:
            e.at_least("ask", "socat address only known at run time")
            continue
        kind, _, rest = v.partition(":")
        host = rest.split(",", 1)[0].rpartition(":")[0].strip("[]")
        if kind.lower() in _SOCAT_SENDS and host and host not in _LOCAL_HOSTS and \
                not host.startswith("127."):
            e.unseen = f"socat sends what it reads to {host}"
        if kind.lower() in ("exec", "system") and rest:
            code = rest.split(",", 1)[0] if kind.lower() == "exec" else rest.rsplit(",", 1)[0]
            e.scripts.append((f"socat {kind.upper()}:", Word.of(code)))


# ---------------------------------------------------------------- pagers and viewers


def _pager(e: Effect, args: list[Word]) -> None:
    """``less FILE`` reads FILE (with no terminal it only prints); ``+!cmd`` runs cmd,
    ``-o FILE`` writes a log, ``--pager``/``LESSOPEN`` are judged elsewhere."""
    bat = prog(e) in ("bat", "batcat")  # bat -p is --plain; -l LANG, -H N, -r RANGE, -m MAP
    o = parse_opts(args, "lHrm" if bat else "oOhjxyzbPpTtk", frozenset({
        "--log-file", "--LOG-FILE", "--tag", "--pattern", "--prompt", "--lesskey-file",
        "--tag-file", "--pager", "--paging", "--style", "--theme", "--language",
        "--line-range", "--map-syntax", "--lesskey-src", "--lesskey-content"}))
    if not bat and o.has("-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"):
        e.add("exec", "less -k loads a lesskey file, whose #env section can set LESSOPEN")
        e.unseen = e.unseen or "the commands a lesskey file's LESSOPEN runs"
    for w in o.positionals:
        v = w.value
        if v is not None and v.startswith("+"):
            bang = v.lstrip("+").lstrip(":")
            if bang.startswith(("!", "|")):
                e.add("exec", f"{prog(e)} +! runs a command")
                e.scripts.append((f"{prog(e)} +!", Word.of(bang[1:].lstrip("!"))))
            continue
        e.reads.append(w)
    for w in o.all(*(() if bat else ("-o", "-O")), "--log-file", "--LOG-FILE"):
        e.writes.append(w)
        e.add("write", f"{prog(e)} -o writes a log file")
    e.replaces.extend(o.all(*(() if bat else ("-O",)), "--LOG-FILE"))  # overwritten unasked
    e.reads.extend(o.all(*(() if bat else ("-k", "-T")), "--lesskey-file", "--tag-file"))
    for w in o.all("--pager"):  # bat --pager CMD: a command line, judged as one (-p is --plain)
        e.scripts.append((f"{prog(e)} --pager", w))


def _yq(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "", frozenset({"--arg", "--indent", "--output-format",
                                        "--input-format", "--from-file"}))
    files = o.positionals[1:] if o.positionals and not o.has("--from-file") else o.positionals
    if o.has("-i", "--inplace", "--in-place"):
        e.writes.extend(files)
        e.add("write", "yq -i edits files in place")
    else:
        e.reads.extend(files)
    e.reads.extend(o.all("--from-file"))


RULES.update({"tmux": _tmux, "screen": _screen, "socat": _socat, "yq": _yq,
              **dict.fromkeys(("less", "more", "most", "pg", "zless", "zmore", "bat",
                               "batcat"), _pager)})
