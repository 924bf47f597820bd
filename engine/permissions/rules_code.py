"""Rules for programs that take code in an option: editors, debuggers, build tools, ``script``.

Each entry names the option that carries code and how to find the shell commands in it (an Ex
``:!cmd``, an Emacs ``(shell-command "cmd")``, a make recipe). Shell commands found are judged
like ``bash -c``; code that is not a plain literal stays ``ask`` (the programs are ``exec``).
"""

from __future__ import annotations

import re

from engine.permissions.effect import Effect, Rule, parse_opts, prog
from engine.permissions.inline import inline_code
from engine.permissions.words import Word

_F = frozenset

# ---------------------------------------------------------------- vi family

_EX_SHELL = re.compile(r"^[\s:]*(?:[.,$%'\w+-]*\s*)?(?:r(?:ead)?\s*|w(?:rite)?\s*|"
                       r"(?:silent!?\s*))?!(.*)$", re.S)
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
        m = _EX_SHELL.match(part) or _EX_TERMINAL.match(part)
        if m:
            e.scripts.append((how, Word.of(m.group(1))))
            continue
        for call in _EX_CALLS.finditer(part):
            e.scripts.append((how, Word.of(call.group(2))))
        if _EX_CODE.match(part) and not _EX_CALLS.search(part):
            e.at_least("ask", f"{how} runs editor or interpreter code")


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


def _ed(e: Effect, args: list[Word]) -> None:
    """``ed``/``red`` run the commands they read; ``!cmd`` (also ``r !cmd``, ``w !cmd``,
    ``e !cmd``) is a shell command."""
    e.add("exec", f"{prog(e)} can write files and run commands")
    e.reads.extend(parse_opts(args, "p", frozenset({"--prompt"})).positionals)
    e.stdin_reader = lambda eff, text: _editor_input(eff, f"{prog(eff)} <<", text)


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


def _vim(e: Effect, args: list[Word]) -> None:
    e.add("exec", f"{prog(e)} can write files and run commands")
    e.stdin_reader = lambda eff, text: _editor_input(eff, f"{prog(eff)} <<", text)
    o = parse_opts(args, "cSTuUiwWrtqoOp", frozenset({"--cmd"}))
    for name, value in o.items:
        if name in ("-c", "--cmd") and value is not None:
            ex_commands(e, f"{prog(e)} {name}", value)
        elif name in ("-S", "-s", "-u") and value is not None:
            e.reads.append(value)
    for w in o.positionals:
        if w.value is not None and w.value.startswith("+") and len(w.value) > 1:
            ex_commands(e, f"{prog(e)} +cmd", Word.of(w.value[1:]))


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
        m = re.match(r"\s*(?:shell|!|pipe\s+[^|]*\|)\s*(.*)", code.value or "", re.S)
        if code.value is None:
            e.at_least("ask", "gdb command only known at run time")
        elif m:
            e.scripts.append(("gdb -ex", Word.of(m.group(1))))
        elif re.match(r"\s*(?:python|py|pi|guile|source|call|print|p)\b", code.value):
            e.at_least("ask", "gdb -ex runs code in the debugger")
            inline_code(e, "gdb -ex", "c", code)  # call system("cmd"), python os.system()


def _script(e: Effect, args: list[Word]) -> None:
    """``script -c CMD`` runs CMD in a shell and records it to a file."""
    o = parse_opts(args, "cEIOBTm", frozenset({"--command", "--log-in", "--log-out",
                                               "--log-io", "--log-timing", "--echo"}))
    e.add("exec", "script runs a shell")
    for code in o.all("-c", "--command"):
        e.scripts.append(("script -c", code))
    e.writes.extend(o.positionals[:1] or [Word.of("typescript")])


# ---------------------------------------------------------------- make

_MAKE_SHELL = re.compile(r"\$[({]shell\s+([^)}]*)[)}]")


def makefile_code(e: Effect, how: str, text: Word) -> None:
    """Recipes and ``$(shell ...)`` in makefile text (``make --eval``, a here-doc)."""
    if text.value is None:
        e.at_least("ask", f"{how} makefile text only known at run time")
        return
    body = text.value.replace("\\\n", " ")
    recipes = [m.group(1) for m in _MAKE_SHELL.finditer(body)]
    for line in body.splitlines():
        if line.startswith("\t"):
            recipes.append(line[1:].lstrip("@+-"))
        elif ";" in line and ":" in line.split(";", 1)[0] and not line.startswith("#") \
                and "=" not in line.split(":", 1)[0]:
            recipes.append(line.split(";", 1)[1].lstrip("@+-"))
    for code in recipes:
        code = re.sub(r"\$\(([A-Za-z_@<^*?][A-Za-z0-9_]*)\)|\$([@<^*?])", "x", code)
        e.scripts.append((how, Word.of(code.replace("$$", "$"))))


_MAKE_PRINTS = frozenset({"-p", "--print-data-base", "-r", "--no-builtin-rules", "-R",
                          "--no-builtin-variables", "-s", "--silent", "-q", "--question"})


def _make(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "CfjEIlWo", frozenset({"--directory", "--file", "--jobs",
                                                "--makefile", "--eval", "--include-dir",
                                                "--what-if", "--old-file"}))
    makefiles = o.all("-f", "--file", "--makefile")
    if makefiles and all(w.value == "/dev/null" for w in makefiles) and not o.positionals \
            and set(o.flags) <= _MAKE_PRINTS | {"-f", "--file", "--makefile"}:
        return  # make -p -f /dev/null: the built-in rules, printed; nothing to build
    e.chdir.extend(o.all("-C", "--directory"))
    e.add("exec", "make runs the commands of a Makefile")
    for code in o.all("--eval", "-E"):
        makefile_code(e, "make --eval", code)
    if any(w.value in ("-", "/dev/stdin") for w in o.all("-f", "--file", "--makefile")):
        e.stdin_reader = lambda eff, text: makefile_code(eff, "make -f -", text)


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
        elif sub in ("env", "time", "chdir"):
            inner = rest[1:] if sub == "chdir" else [w for w in rest
                                                     if "=" not in (w.value or "")]
            e.nested.append((f"cmake -E {sub}", inner))
        else:
            e.add("write", f"cmake -E {sub} changes files")
        return
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


_CMAKE_HELP_NAMED = frozenset({"--help-command", "--help-module", "--help-policy",
                               "--help-property", "--help-variable", "--help-manual"})


def _cmake_help(e: Effect, args: list[Word]) -> None:
    """``cmake --help-module NAME [FILE]``, ``cmake --help-commands [FILE]``: the
    documentation, printed, or written to FILE when one is given."""
    kept = 2 if args[0].value in _CMAKE_HELP_NAMED else 1
    if len(args) > kept:
        e.writes.extend(args[kept:])
        e.add("write", f"cmake {args[0].shown} writes its output file")


RULES: dict[str, Rule] = {
    **dict.fromkeys(("vi", "vim", "nvim", "view", "vimdiff", "gvim", "ex", "rvim"), _vim),
    "ed": _ed, "red": _ed, "dc": _dc, "m4": _m4,
    "emacs": _emacs, "emacsclient": _emacs, "gdb": _gdb, "script": _script,
    "make": _make, "gmake": _make, "cmake": _cmake,
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


def _socat(e: Effect, args: list[Word]) -> None:
    """``socat ADDR ADDR``: ``EXEC:cmd`` and ``SYSTEM:cmd`` addresses run commands."""
    e.add("network", "socat connects streams, often over the network")
    for w in args:
        v = w.value
        if v is None:
            e.at_least("ask", "socat address only known at run time")
            continue
        kind, _, rest = v.partition(":")
        if kind.lower() in ("exec", "system") and rest:
            code = rest.split(",", 1)[0] if kind.lower() == "exec" else rest.rsplit(",", 1)[0]
            e.scripts.append((f"socat {kind.upper()}:", Word.of(code)))


# ---------------------------------------------------------------- pagers and viewers


def _pager(e: Effect, args: list[Word]) -> None:
    """``less FILE`` reads FILE (with no terminal it only prints); ``+!cmd`` runs cmd,
    ``-o FILE`` writes a log, ``--pager``/``LESSOPEN`` are judged elsewhere."""
    bat = prog(e) in ("bat", "batcat")  # bat -p is --plain; -l LANG, -H N, -r RANGE, -m MAP
    o = parse_opts(args, "lHrm" if bat else "ohjxyzbPpTtk", frozenset({
        "--log-file", "--LOG-FILE", "--tag", "--pattern", "--prompt", "--lesskey-file",
        "--tag-file", "--pager", "--paging", "--style", "--theme", "--language",
        "--line-range", "--map-syntax"}))
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


# ---------------------------------------------------------------- linters that load no code

_RUFF_SHOWS = frozenset({"rule", "config", "linter", "version", "help", "--version", "-V"})
_RUFF_CHANGES = frozenset({"--fix", "--unsafe-fixes", "--add-noqa", "--watch", "-w", "--fix-only"})


def _ruff(e: Effect, args: list[Word]) -> None:
    """``ruff check`` and ``ruff format --check``/``--diff`` only report (ruff loads no
    plugins; its cache is its own): reads. A fix, a format, ``--output-file`` write."""
    words = [w.value or "" for w in args]
    verb = next((w for w in words if not w.startswith("-")), "check")
    flags = {w.partition("=")[0] for w in words if w.startswith("-")}
    o = parse_opts(args, "o", frozenset({"--output-file", "--config", "--select", "--ignore",
                                         "--extend-select", "--target-version",
                                         "--line-length", "--output-format", "--exclude",
                                         "--cache-dir", "--stdin-filename", "--extend",
                                         "--per-file-ignores", "--fixable", "--unfixable"}))
    files = [w for w in o.positionals if w.value != verb]
    if verb in _RUFF_SHOWS:
        return
    e.reads.extend(files or [Word.of(".")])
    for w in o.all("-o", "--output-file"):
        e.writes.append(w)
        e.replaces.append(w)
        e.add("write", "ruff --output-file writes a file")
    if flags & _RUFF_CHANGES or (verb == "format" and not flags & {"--check", "--diff"}) or (
            verb not in ("check", "format")):
        e.writes.extend(files or [Word.of(".")])
        e.add("write", f"ruff {verb} changes files")


RULES["ruff"] = _ruff


# ---------------------------------------------------------------- formatters that load no code


def _formatter(checks: frozenset[str], writes: frozenset[str], values: str = "",
               long_values: frozenset[str] = frozenset(), *, rewrites: bool = True) -> Rule:
    """A formatter that loads no plugins: with a ``checks`` option (or, for those that only
    print unless told, without a ``writes`` one) it reads the files it is given and prints;
    otherwise it rewrites them."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, values, long_values)
        flags = {name.split("=")[0] for name in o.flags}
        files = o.positionals or [Word.of(".")]
        if flags & writes or (rewrites and not flags & checks):
            e.writes.extend(files)
            e.add("write", f"{prog(e)} rewrites the files it formats")
        else:
            e.reads.extend(files)
        e.reads.extend(o.all("--config", "--settings-path", "--settings-file", "--sp",
                             "--config-path", "--style-file"))

    return rule


RULES.update({
    "black": _formatter(_F({"--check", "--diff", "-c", "--code"}), _F(), "ltcW", _F({
        "--line-length", "--target-version", "--include", "--exclude", "--extend-exclude",
        "--force-exclude", "--config", "--stdin-filename", "--required-version", "--workers",
        "--python-cell-magics"})),
    "isort": _formatter(_F({"--check-only", "--check", "-c", "--diff", "--show-files",
                            "--show-config"}), _F(), "lpm", _F({
                                "--line-length", "--profile", "--settings-path", "--sp",
                                "--settings-file", "--skip", "--skip-glob", "--filter-files",
                                "--multi-line", "--src", "--known-local-folder"})),
    "rustfmt": _formatter(_F({"--check"}), _F(), "", _F({"--edition", "--config-path",
                                                        "--config", "--emit", "--color"})),
    "gofmt": _formatter(_F(), _F({"-w"}), "r", rewrites=False),
    "shfmt": _formatter(_F(), _F({"-w", "--write"}), "i", _F({"--indent", "--language-dialect",
                                                               "--filename"}), rewrites=False),
    "clang-format": _formatter(_F(), _F({"-i"}), "", _F({"--style", "--assume-filename",
                                                         "--lines", "--offset", "--length",
                                                         "--fallback-style"}), rewrites=False),
})


_TSC_WRITES = frozenset({"--build", "-b", "--init", "--generateTrace", "--generateCpuProfile",
                         "--tsBuildInfoFile", "--incremental", "-i", "--composite"})


def _tsc(e: Effect, args: list[Word]) -> None:
    """``tsc --noEmit`` type-checks and prints (the compiler loads no plugins); otherwise it
    writes its output files."""
    o = parse_opts(args, "p", frozenset({"--project", "--target", "--module", "--lib",
                                         "--jsx", "--moduleResolution"}))
    flags = {name.split("=")[0] for name in o.flags}
    e.reads.extend([*o.all("-p", "--project"), *o.positionals])
    if not flags & {"--noEmit", "--version", "-v", "--help", "-h", "--showConfig",
                    "--listFilesOnly"} or flags & _TSC_WRITES:
        e.add("write", "tsc writes its output files")


RULES["tsc"] = _tsc


_RUSTC_ASKS = frozenset({"--version", "-V", "-vV", "--print", "--explain", "--help", "-h"})


def _rustc(e: Effect, args: list[Word]) -> None:
    """``rustc --print sysroot``, ``--explain E0308``, ``-vV`` print; compiling runs the
    crate's procedural macros and writes its outputs."""
    o = parse_opts(args, "", frozenset({"--print", "--explain"}))
    if not o.flags or set(o.flags) - _RUSTC_ASKS or o.positionals:
        e.add("exec", "rustc compiles (procedural macros run) and writes its outputs")


RULES["rustc"] = _rustc


# ---------------------------------------------------------------- JVM and C toolchains' queries


def _jvm_reader(writes: frozenset[str] = frozenset()) -> Rule:
    """``javap -c -p Foo.class``, ``jdeps --summary app.jar``: they read class files and
    archives; ``-J`` passes options to their own JVM (``-J-javaagent:x.jar`` loads code) and
    ``writes`` name output directories."""

    def rule(e: Effect, args: list[Word]) -> None:
        values = [w.value or "" for w in args]
        if any(v.startswith("-J") for v in values):
            e.add("exec", f"{prog(e)} -J gives its JVM options (an agent runs code)")
        for i, v in enumerate(values):
            if v.split("=")[0] in writes:
                e.add("write", f"{prog(e)} {v.split('=')[0]} writes files")
            elif v in ("-cp", "-classpath", "--class-path", "--module-path") and \
                    i + 1 < len(args):
                e.reads.extend(Word.of(part) for part in values[i + 1].split(":") if part)
            elif not v.startswith("-") and ("/" in v or v.endswith((".class", ".jar"))):
                e.reads.append(args[i])

    return rule


def _jar(e: Effect, args: list[Word]) -> None:
    """``jar tf app.jar`` lists; ``x`` extracts, ``c``/``u`` create or update an archive."""
    mode = (args[0].value or "").lstrip("-") if args else ""
    files = [w for w in args[1:] if not (w.value or "-").startswith("-")]
    if mode.startswith("t") or (args and args[0].value in ("--list", "-t")):
        e.reads.extend(files)
    elif mode[:1] in ("x", "c", "u") or args[0].value in ("--extract", "--create", "--update"):
        e.writes.extend(files)
        e.add("write", "jar extracts, creates or updates files")
    else:
        e.add("exec", f"jar {mode or 'without a mode'} is not modelled")


_CC_QUERIES = frozenset({"-###", "-dumpversion", "-dumpfullversion", "-dumpmachine",
                         "--version", "-v", "--help", "-print-search-dirs",
                         "-print-libgcc-file-name", "-print-multiarch",
                         "-print-sysroot", "-print-targets", "-dM", "-E", "-M", "-MM", "-P",
                         "-std", "-march", "-O0", "-O1", "-O2", "-O3", "-Os", "-c", "-w",
                         "-Wall", "-Wextra", "-m64", "-m32", "-g", "-I", "-D"})
"""Driver options that, on their own, make the compiler print and write nothing: ``-###``
shows the commands it would run; ``-M``/``-MM`` print dependencies (names only); ``-dM -E``
of no source (``- < /dev/null``) prints the predefined macros."""


def _compiler(e: Effect, args: list[Word]) -> None:
    """A C compiler driver asked about itself or its dependencies prints; compiling writes,
    and ``-E``/``-fsyntax-only`` of a source read every file it includes (which the command
    line does not show), so they ask like a build."""
    values = [w.value for w in args]
    sources = [v for v in values if v is None or not v.startswith("-")]
    flags = {_cc_flag(v) for v in values if v is not None and v.startswith("-") and v != "-"}
    if flags <= _CC_QUERIES and not any(v is None or v.startswith("@") for v in sources) and (
            "-###" in flags  # the commands it would run, shown
            or flags & {"-M", "-MM"}  # the headers' names
            or ("-E" in flags and not sources)  # -dM -E - < /dev/null: predefined macros
            or not ({"-E", "-c"} & flags or sources)):  # --version, -print-sysroot
        e.reads.extend(Word.of(v) for v in sources if v)
        return
    e.add("exec", f"{prog(e)} compiles (or reads whatever the sources include)")


def _cc_flag(value: str) -> str:
    """``-Inative/include`` and ``-DX=1`` as ``-I`` and ``-D``; ``-std=c11`` as ``-std``."""
    return value[:2] if value.startswith(("-I", "-D")) else value.split("=")[0]


_GDB_SHOWS = re.compile(r"\s*(?:info|i|disassemble|disas|list|l|ptype|whatis|show|"
                        r"maint\s+info)\b[^;|`$]*$")


def _gdb_or_query(e: Effect, args: list[Word]) -> None:
    """``gdb -nx -batch -ex 'info functions x' prog`` loads the program without running it
    and prints; anything else is ``_gdb``."""
    values = [w.value or "" for w in args]
    commands = [values[i + 1] for i, v in enumerate(values[:-1]) if v in ("-ex", "--ex",
                                                                          "-eval-command")]
    rest = [v for i, v in enumerate(values) if v not in ("-ex", "--ex", "-eval-command") and
            not (i and values[i - 1] in ("-ex", "--ex", "-eval-command"))]
    files = [v for v in rest if not v.startswith("-")]
    if {"-batch", "--batch"} & set(rest) and {"-nx", "-n", "--nx"} & set(rest) and commands \
            and all(_GDB_SHOWS.match(c) for c in commands) and len(files) == 1 and \
            set(v for v in rest if v.startswith("-")) <= {"-batch", "--batch", "-nx", "-n",
                                                          "--nx", "-q", "--quiet"}:
        e.reads.append(Word.of(files[0]))
        return
    _gdb(e, args)


RULES.update({"javap": _jvm_reader(), "jar": _jar,
              "jdeps": _jvm_reader(_F({"-dotoutput", "--dot-output", "--generate-module-info",
                                       "--generate-open-module"})),
              "gdb": _gdb_or_query,
              **dict.fromkeys(("gcc", "cc", "clang", "g++", "c++", "clang++", "cpp"),
                              _compiler)})


# ---------------------------------------------------------------- notebooks


def _jupyter(e: Effect, args: list[Word]) -> None:
    """``jupyter nbconvert --to script --stdout NB`` prints a notebook converted; without
    ``--stdout`` it writes a file, ``--inplace`` rewrites the notebook and ``--execute`` runs
    its cells. Other jupyter commands start servers or kernels."""
    words = [w.value or "" for w in args]
    if words[:1] != ["nbconvert"]:
        e.add("exec", f"jupyter {words[0] if words else ''} runs kernels or servers".strip())
        return
    notebooks = [w for w in args[1:] if (w.value or "").endswith(".ipynb")]
    flags = {w.split("=")[0] for w in words[1:] if w.startswith("-")}
    if "--execute" in flags:
        e.add("exec", "jupyter nbconvert --execute runs the notebook's cells")
    e.loads_here = ("jupyter_nbconvert_config.py", "jupyter_config.py")
    if "--stdout" in flags and "--inplace" not in flags:
        e.reads.extend(notebooks)
    else:
        e.writes.extend(notebooks)
        e.add("write", "jupyter nbconvert writes the converted notebook")


def _nbstripout(e: Effect, args: list[Word]) -> None:
    """``nbstripout -t NB`` (``--textconv``) and ``--dry-run`` print; ``--install`` makes
    git run nbstripout as a filter; otherwise it strips the notebooks in place."""
    o = parse_opts(args, "")
    if o.has("--install", "--uninstall"):
        e.add("write", "nbstripout --install sets a filter git runs")
    elif o.has("-t", "--textconv", "--dry-run", "--verify"):
        e.reads.extend(o.positionals)
    else:
        e.writes.extend(o.positionals)
        e.add("write", "nbstripout strips the notebooks in place")


RULES.update({"jupyter": _jupyter, "nbstripout": _nbstripout})
