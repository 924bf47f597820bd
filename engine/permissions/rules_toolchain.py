"""Rules for compilers, linters and formatters in the modes that only report.

``ruff check``, ``black --check``, ``gofmt -l``, ``tsc --noEmit``, ``rustc --print``,
``javap``, ``gcc -MM``, ``mypy``, ``coverage report`` read the files they are given and print;
the same programs asked to fix, format, emit or compile write. Linters that load the plugins
their config files list (flake8, mypy, pylint, coverage) read when the files found where they
run list none. The JavaScript tools are in ``rules_js``. ``gcc -E`` and ``-fsyntax-only``
read what the sources include, judged by ``c_includes``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from engine.permissions.c_includes import Preprocess
from engine.permissions.effect import Effect, Loads, Rule, parse_opts, prog
from engine.permissions.inline import inline_code
from engine.permissions.words import STDIN_FILES, Word

_F = frozenset
RULES: dict[str, Rule] = {}

RUST_TOOLCHAIN = Loads(("rust-toolchain.toml", "rust-toolchain"), ("path",), upward=True)
"""A toolchain file whose ``path`` names a folder makes rustup's proxies (``cargo``,
``rustc``, ``rustfmt``) run the programs in it: code from wherever it points."""


def rustup_proxy(rule: Rule) -> Rule:
    """``rule``, for a program rustup may stand in front of (``RUST_TOOLCHAIN``)."""

    def proxied(e: Effect, args: list[Word]) -> None:
        rule(e, args)
        e.loads_here.append(RUST_TOOLCHAIN)

    return proxied


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
    if verb in _RUFF_SHOWS or (verb == "analyze" and "graph" in words):
        return  # ruff analyze graph: the import graph, printed from the source text
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


_SELF_QUERIES = frozenset({"--version", "-V", "--help", "-h"})
"""A formatter's options that print its version or usage and end it."""


def _formatter(checks: frozenset[str], writes: frozenset[str], values: str = "",
               long_values: frozenset[str] = frozenset(), *, rewrites: bool = True) -> Rule:
    """A formatter that loads no plugins: with a ``checks`` option (or, for those that only
    print unless told, without a ``writes`` one) it reads the files it is given and prints;
    otherwise it rewrites them."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, values, long_values)
        flags = {name.split("=")[0] for name in o.flags}
        files = [w for w in o.positionals if w.value != "-"]  # -: standard input to output
        if flags & _SELF_QUERIES:
            return  # rustfmt -V, gofmt -h: prints and exits before it formats anything
        if not o.positionals:
            files = [Word.of(".")]
        elif not files:
            return
        if flags & writes or (rewrites and not flags & checks):
            e.writes.extend(files)
            e.add("write", f"{prog(e)} rewrites the files it formats")
        else:
            e.reads.extend(files)
        e.reads.extend(o.all("--config", "--settings-path", "--settings-file", "--sp",
                             "--config-path", "--style-file"))

    return rule


_RUSTFMT = _formatter(_F({"--check"}), _F(), "", _F({
    "--edition", "--config-path", "--config", "--emit", "--color"}))


def _rustfmt(e: Effect, args: list[Word]) -> None:
    """``rustfmt --print-config default|minimal [PATH]`` prints the settings, or writes
    them to PATH; ``current PATH`` prints those that format PATH. Anything else formats."""
    if [w.value for w in args[:1]] == ["--print-config"] and len(args) in (2, 3):
        if args[1].value == "current":
            e.reads.extend(args[2:])
        elif len(args) == 3:
            e.replaces.append(args[2])
            e.writes.append(args[2])
            e.add("write", "rustfmt --print-config writes its settings to a file")
        return
    words = [w.value for w in args]
    emits = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--emit"] + [
        (w or "").partition("=")[2] for w in words if (w or "").startswith("--emit=")]
    if emits and all(v == "stdout" for v in emits):
        e.reads.extend(w for w in args if not (w.value or "-").startswith("-") and
                       w.value not in ("stdout",) and w.value not in ("2015", "2018", "2021",
                                                                       "2024"))
        return  # rustfmt --emit stdout: the formatted source, printed; the file untouched
    _RUSTFMT(e, args)


RULES.update({
    "black": _formatter(_F({"--check", "--diff", "-c", "--code"}), _F(), "ltcW", _F({
        "--line-length", "--target-version", "--include", "--exclude", "--extend-exclude",
        "--force-exclude", "--config", "--stdin-filename", "--required-version", "--workers",
        "--python-cell-magics"})),
    "isort": _formatter(_F({"--check-only", "--check", "-c", "--diff", "--show-files",
                            "--show-config", "--stdout", "-d", "--version-number", "--vn"}),
                        _F(), "lpm", _F({
                                "--line-length", "--profile", "--settings-path", "--sp",
                                "--settings-file", "--skip", "--skip-glob", "--filter-files",
                                "--multi-line", "--src", "--known-local-folder"})),
    "rustfmt": rustup_proxy(_rustfmt),
    "autopep8": _formatter(_F(), _F({"-i", "--in-place"}), "jp", _F({
        "--max-line-length", "--select", "--ignore", "--exclude", "--global-config",
        "--pep8-passes", "--indent-size", "--jobs"}), rewrites=False),
    "yapf": _formatter(_F(), _F({"-i", "--in-place"}), "le", _F({
        "--style", "--lines", "--exclude"}), rewrites=False),
    "gofmt": _formatter(_F(), _F({"-w"}), "r", rewrites=False),
    "goimports": _formatter(_F(), _F({"-w"}), "", _F({"-local"}), rewrites=False),
    "shfmt": _formatter(_F(), _F({"-w", "--write"}), "i", _F({"--indent", "--language-dialect",
                                                               "--filename"}), rewrites=False),
})


def _llvm_options(rule: Rule) -> Rule:
    """LLVM's tools take each option whole, after one dash or two (``-style=file`` is
    ``--style=file``, ``--i`` is ``-i``): never a cluster of letters."""

    def judged(e: Effect, args: list[Word]) -> None:
        rule(e, [replace(w, value="--" + w.value.lstrip("-")) if w.value is not None and
                 w.value.startswith("-") and w.value.strip("-") else w for w in args])

    return judged


RULES["clang-format"] = _llvm_options(_formatter(
    _F({"--dry-run", "--n"}), _F({"--i"}), "", _F({
        "--style", "--assume-filename", "--lines", "--offset", "--length", "--fallback-style",
        "--files"}), rewrites=False))


_TSC_WRITES = frozenset({"--build", "-b", "--init", "--generateTrace", "--generateCpuProfile",
                         "--tsBuildInfoFile", "--incremental", "-i", "--composite"})


def _tsc(e: Effect, args: list[Word]) -> None:
    """``tsc --noEmit`` type-checks and prints (the compiler loads no plugins), ``tsc -b
    --dry`` shows what a build would do; otherwise it writes its output files."""
    o = parse_opts(args, "p", frozenset({"--project", "--target", "--module", "--lib",
                                         "--jsx", "--moduleResolution", "--outFile",
                                         "--outDir", "--rootDir", "--declarationDir"}))
    flags = {name.split("=")[0] for name in o.flags}
    e.reads.extend([*o.all("-p", "--project"), *o.positionals])
    e.writes.extend(o.all("--outFile", "--outDir", "--declarationDir"))
    e.replaces.extend(o.all("--outFile"))  # one file, replaced whole by the compiled code
    dry = flags & {"-b", "--build"} and flags & {"--dry", "-d"} and not flags & {
        "--clean", "--force", "-f"} - {"--dry"}  # tsc -b --dry: what it would build
    if not dry and (not flags & {"--noEmit", "--version", "-v", "--help", "-h",
                                 "--showConfig", "--listFilesOnly"} or flags & _TSC_WRITES):
        e.add("write", "tsc writes its output files")
    elif not flags & {"--version", "-v", "--help", "-h"}:
        e.loads_here.append(_TSC_BUILD_INFO)  # tsc --noEmit still writes its build info


_TSC_BUILD_INFO = Loads(("tsconfig.json",), keys=("tsbuildinfofile", "incremental", "composite"))
"""A ``tsconfig.json`` that makes ``tsc --noEmit`` write a build-info file (``incremental``,
``composite``, a ``tsBuildInfoFile`` naming any path). One set in a config it ``extends`` is
not looked for."""

RULES["tsc"] = _tsc


_RUSTC_ASKS = frozenset({"--version", "-V", "-vV", "-v", "--verbose", "--print", "--explain",
                         "--help", "-h"})


_RUSTC_PARSES = frozenset({"crate-name", "file-names"})
"""``--print`` requests answered from a crate root's attributes alone, before any macro
expands or anything is written."""


_RUSTC_AIMS = frozenset({"--target", "--crate-type", "--edition"})
"""Options that say which target or kind of crate a ``--print`` is about."""


def _rustc(e: Effect, args: list[Word]) -> None:
    """``rustc --print sysroot``, ``--explain E0308``, ``-vV`` print, and ``--print
    crate-name src/lib.rs`` reads the crate root; compiling runs the crate's procedural
    macros and writes its outputs."""
    o = parse_opts(args, "o", frozenset({"--print", "--explain", "--out-dir", *_RUSTC_AIMS}))
    printed = {(w.value or "").split("=")[0] for w in o.all("--print")}
    flags = set(o.flags) - (_RUSTC_AIMS if printed else frozenset())
    parsed = len(o.positionals) == 1 and flags == {"--print"} and printed and \
        printed <= _RUSTC_PARSES
    if parsed:
        e.reads.extend(o.positionals)
    elif not flags or flags - _RUSTC_ASKS or o.positionals:
        e.add("exec", "rustc compiles (procedural macros run) and writes its outputs")
    e.writes.extend(o.all("-o"))
    e.replaces.extend(o.all("-o"))
    for request in o.all("--print"):  # --print cfg=PATH writes what it prints to PATH
        kind, eq, path = (request.value or "=?").partition("=")
        if eq:
            out = Word.of(path) if request.value is not None else request
            e.writes.append(out)
            e.replaces.append(out)
            e.add("write", f"rustc --print {kind}=PATH writes the file")


RULES["rustc"] = rustup_proxy(_rustc)


def _about_itself(e: Effect, args: list[Word]) -> None:
    """A tool rustup stands in front of: ``--version``/``--help`` only ask it about itself
    (the toolchain file still decides which program answers); the rest runs it."""
    if [w.value for w in args] not in (["--version"], ["-V"], ["--help"], ["-h"]):
        e.add("exec", f"{prog(e)} runs the toolchain's program on the project")


RULES.update(dict.fromkeys(("rustdoc", "rust-analyzer", "cargo-fmt", "cargo-clippy",
                            "clippy-driver", "rust-gdb", "rust-gdbgui", "rust-lldb", "rls",
                            "cargo-miri"), rustup_proxy(_about_itself)))


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


_JAVA_ABOUT = frozenset({"-version", "--version", "-fullversion", "--full-version",
                         "--list-modules", "-help", "--help", "-h", "-?", "-X",
                         "--help-extra", "-showversion", "--show-version"})
"""Launcher options that print about the JVM; with no class, jar or source named (and
``-showversion`` then has nothing to run), the launcher exits."""
_JAVA_SETTINGS = re.compile(r"-XX:\+(?:PrintFlagsFinal|PrintFlagsInitial|PrintCommandLineFlags|"
                            r"Unlock(?:Diagnostic|Experimental)VMOptions)|-X[ms][sx]?\d+[kKmMgG]?")
"""JVM options beside them that only change what is printed (flag values) or sizes; not
``-XX:OnError=CMD``, an agent, or a flag that logs to a file."""


def _java(e: Effect, args: list[Word]) -> None:
    """``java -version``, ``--list-modules``, ``-XshowSettings:properties -version``
    print about the JVM; any other word (a class, ``-jar``, a source file, ``@argfile``,
    ``-javaagent``) runs a program."""
    words = [w.value for w in args]
    if words and all(v is not None and (v in _JAVA_ABOUT or v.startswith("-XshowSettings")
                                        or _JAVA_SETTINGS.fullmatch(v)) for v in words) and \
            any(v in _JAVA_ABOUT or (v or "").startswith("-XshowSettings") for v in words):
        return
    e.add("exec", "java runs a program (a class, a jar or a source file)")


def _jps(e: Effect, args: list[Word]) -> None:
    """``jps -l`` lists this machine's JVMs (as ``ps`` does); a host named asks another
    machine's RMI registry."""
    if any(not (w.value or "x").startswith("-") for w in args):
        e.add("network", "jps HOST asks another machine for its JVMs")


def _jcmd(e: Effect, args: list[Word]) -> None:
    """``jcmd`` and ``jcmd -l`` list this machine's JVMs (as ``jps``); ``jcmd PID CMD``
    runs a diagnostic command inside a JVM (heap dumps written, flags changed)."""
    if [w.value for w in args] not in ([], ["-l"], ["-h"], ["--help"]):
        e.add("exec", "jcmd runs a command inside a running JVM")


_XCRUN_PRINTS = frozenset({"--show-sdk-path", "--show-sdk-version", "--show-sdk-build-version",
                           "--show-sdk-platform-path", "--show-sdk-platform-version",
                           "--version", "--help", "-h"})


def _xcrun(e: Effect, args: list[Word]) -> None:
    """``xcrun --show-sdk-path`` and ``--find TOOL`` print where the developer tools are;
    ``xcrun TOOL ..`` runs TOOL (judged as run)."""
    values = [w.value for w in args]
    at = 0
    while at < len(values) and (values[at] or "").startswith("-"):
        if values[at] in ("--sdk", "--toolchain"):
            at += 1
        elif values[at] in ("-f", "--find") or values[at] not in _XCRUN_PRINTS | {
                "-v", "--verbose", "-n", "--no-cache", "-l", "--log"}:
            if values[at] not in ("-f", "--find"):
                e.add("exec", f"xcrun {values[at]} is not modelled")
            return
        at += 1
    if at < len(args):
        e.nested.append(("xcrun", args[at:]))
    elif None in values:
        e.add("exec", "xcrun with arguments only known at run time")


def _jar(e: Effect, args: list[Word]) -> None:
    """``jar tf app.jar`` and ``jar --describe-module --file app.jar`` read; ``x``
    extracts, ``c``/``u`` create or update an archive."""
    mode = (args[0].value or "").lstrip("-") if args else ""
    files = [w for w in args[1:] if not (w.value or "-").startswith("-")]
    described = parse_opts(args[1:], "f", frozenset({"--file"}))
    if [w.value for w in args[:1]] in (["--describe-module"], ["-d"]) and set(
            described.flags) <= {"-f", "--file", "-v", "--verbose"}:
        e.reads.extend([*described.all("-f", "--file"), *described.positionals])
        return
    if mode.startswith("t") or (args and args[0].value in ("--list", "-t")):
        e.reads.extend(files)
    elif mode[:1] in ("x", "c", "u") or (args and args[0].value in ("--extract", "--create",
                                                                     "--update")):
        e.writes.extend(files)
        e.add("write", "jar extracts, creates or updates files")
    else:
        e.add("exec", f"jar {mode or 'without a mode'} is not modelled")


def _ar(e: Effect, args: list[Word]) -> None:
    """``ar t lib.a`` lists an archive's members and ``ar p lib.a x.o`` prints one; any
    other operation (``r``, ``q``, ``d``, ``m``, ``s``, ``x``) changes the archive or
    extracts its members into the working directory."""
    mode = (args[0].value or "") if args else ""
    files = args[1:]
    op = mode.lstrip("-")
    if args and args[0].value is not None and op[:1] in ("t", "p") and set(op[1:]) <= set(
            "vOPT") and all(w.value is not None and not w.value.startswith("-") for w in files):
        e.reads.extend(files)
        return
    e.writes.extend(files[:1])
    e.add("write", f"ar {args[0].shown if args else ''} changes or extracts an archive".replace(
        "  ", " "))


RULES["ar"] = _ar


_CC_QUERIES = frozenset({"-###", "-dumpversion", "-dumpfullversion", "-dumpmachine",
                         "--version", "-v", "--help", "-print-search-dirs",
                         "-print-libgcc-file-name", "-print-multiarch",
                         "-print-sysroot", "-print-targets", "-dM", "-E", "-M", "-MM", "-P",
                         "-std", "-march", "-O0", "-O1", "-O2", "-O3", "-Os", "-c", "-w",
                         "-Wall", "-Wextra", "-m64", "-m32", "-g", "-I", "-D", "-MG", "-Q",
                         "-MT", "-MQ", "-MP", "-print-prog-name", "-print-file-name"})
"""Driver options that, on their own, make the compiler print and write nothing: ``-###``
shows the commands it would run; ``-M``/``-MM`` print dependencies (names only, ``-MG``
keeping missing ones); ``-dM -E`` of no source (``- < /dev/null``) prints the predefined
macros; ``-Q --help=optimizers`` of no source lists passes."""
_CC_TARGET_NAMES = frozenset({"-MT", "-MQ"})
"""Options whose next word names the target of a printed rule (text, not a file)."""
_CC_ABOUT = frozenset({"-###", "-dumpversion", "-dumpfullversion", "-dumpmachine",
                       "--version", "--help", "-print-search-dirs", "-print-libgcc-file-name",
                       "-print-multiarch", "-print-sysroot", "-print-targets",
                       "-print-prog-name", "-print-file-name"})
"""Options with which ``cpp`` given no file prints about itself instead of reading its input."""


def _wrapped(e: Effect, args: list[Word]) -> None:
    """``gcc -wrapper sh,-c,CMD``: the driver runs each of its programs through the
    wrapper (the words are split at commas), judged as the command it is."""
    for i, w in enumerate(args[:-1]):
        if w.value == "-wrapper":
            words = args[i + 1].value
            e.add("exec", f"{prog(e)} -wrapper runs its programs through another")
            if words is None:
                e.at_least("ask", f"{prog(e)} -wrapper only known at run time")
            else:
                e.nested.append((f"{prog(e)} -wrapper", [Word.of(v) for v in words.split(",")]))


def _compiler(e: Effect, args: list[Word]) -> None:
    """A C compiler driver asked about itself or its dependencies prints; compiling writes.
    ``-E``/``-fsyntax-only`` of a source read every file it includes (which the command line
    does not show): with options that read and write nothing else they are reads, the
    includes judged by what the sources say (``c_includes``); otherwise they ask like a
    build."""
    shown = "-###" in (w.value for w in args)  # the commands printed, none run: -o unwritten
    values = [w.value for k, w in enumerate(args)
              if not (k and args[k - 1].value in _CC_TARGET_NAMES)  # -MT build/a.o
              and not (shown and (w.value == "-o" or (k and args[k - 1].value == "-o")))]
    _wrapped(e, args)
    sources = [v for v in values if v is None or not v.startswith("-")]
    flags = {_cc_flag(v) for v in values if v is not None and v.startswith("-") and v != "-"}
    fed = bool(STDIN_FILES.intersection(values)) or (
        prog(e) == "cpp" and not sources and not flags & _CC_ABOUT)
    if flags <= _CC_QUERIES and not any(v is None or v.startswith("@") for v in sources) and (
            "-###" in flags  # the commands it would run, shown
            or flags & {"-M", "-MM"}  # the headers' names
            or ("-E" in flags and not sources)  # -dM -E - < /dev/null: predefined macros
            or not ({"-E", "-c"} & flags or sources)) and (  # --version, -print-sysroot
            "-dM" in flags or not fed):  # cpp < a.c, gcc -E - <<< CODE: a source, below
        e.reads.extend(Word.of(v) for v in sources if v)
        return
    e.reads.extend(Word.of(v) if v is not None else Word(None, "<a source>", "other")
                   for v in sources if v != "-")  # the sources named: read, judged as paths
    job = _preprocessing(prog(e), args)
    if job is None:
        e.add("exec", f"{prog(e)} compiles (or reads whatever the sources include)")
        return
    e.reads.extend((*job.quote_dirs, *job.dirs))
    e.preprocesses.append(job)
    if fed:
        e.stdin_reader = lambda eff, text: _fed_source(eff, job, text)


def _cc_flag(value: str) -> str:
    """``-Inative/include`` and ``-DX=1`` as ``-I`` and ``-D``; ``-std=c11`` as ``-std``."""
    return value[:2] if value.startswith(("-I", "-D")) else value.split("=")[0]


_CC_VALUED = ("-Xclang", "-iquote", "-isystem", "-idirafter", "-I", "-D", "-U", "-x", "-o")
"""Options of ``_preprocessing`` that take a value, attached or as the next word."""
_XCLANG_SHOWS = frozenset({"-ast-dump", "-ast-print", "-ast-list", "-dump-tokens",
                           "-dump-raw-tokens"})
"""What ``-Xclang`` may pass to clang's front end: dumps to the terminal (not ``-load``,
``-plugin``, or any option naming a file)."""
_CC_LANGUAGES = frozenset({"c", "c++", "objective-c", "objective-c++", "c-header",
                           "c++-header", "objective-c-header", "objective-c++-header",
                           "cpp-output", "c++-cpp-output", "objective-c-cpp-output"})
_CC_SUFFIXES = frozenset({"c", "h", "i", "ii", "cc", "cp", "cxx", "cpp", "CPP", "c++", "C",
                          "hh", "hpp", "hxx", "H", "h++", "tcc", "m", "mm", "M", "mi", "mii"})
"""Sources gcc reads as C, C++ or Objective-C (a ``.f90`` runs Fortran's ``include``)."""
_CC_HARMLESS = re.compile(
    r"-(?:E|fsyntax-only|P|C|CC|d[MDNIU]|H|v|w|ansi|pedantic(?:-errors)?|nostdinc(?:\+\+)?"
    r"|undef|trigraphs|traditional-cpp|pthread|m32|m64|m(?:arch|tune)=[\w.-]+|std=[\w+]+"
    r"|O\w*|g(?:gdb|dwarf(?:-\d)?|\d)?|W[\w=+.-]*"  # -Wp, -Wa, -Wl, (a comma) pass options on
    r"|f(?:no-)?(?:PIC|pic|PIE|pie|openmp|common|strict-aliasing|wrapv|trapv|exceptions|rtti"
    r"|signed-char|unsigned-char|short-enums|builtin|asm|gnu89-inline|omit-frame-pointer"
    r"|stack-protector(?:-all|-strong)?|show-column|color-diagnostics|caret-diagnostics"
    r"|directives-only|preprocessed|extended-identifiers|dollars-in-identifiers|permissive)"
    r"|f(?:max-errors|error-limit|message-length|tabstop)=\d+|fvisibility=\w+"
    r"|f(?:no-)?diagnostics-(?![\w=+.-]*(?:file|output))[\w=+.-]+)")
"""Options that change what is printed or checked, never what is read, written or run
(not ``-fplugin``, ``-fdump-*``, ``-save-temps``, ``-MD``, ``-include``, ``-B``, ``-specs``,
``-fdiagnostics-format=json-file``)."""


def _preprocessing(name: str, args: list[Word]) -> Preprocess | None:
    """The include search of a run that only preprocesses (``-E``, ``cpp``), checks syntax
    (``-fsyntax-only``) or compiles to assembly (``-S -o -``) C-family sources, printing to
    the terminal (or ``-o /dev/null``), with options that read, write and run nothing
    else; None otherwise."""
    quote: list[Word] = []
    dirs: list[Word] = []
    sources: list[Word] = []
    mode, language, i = "cpp" if name == "cpp" else "", "", 0
    printed = False
    while i < len(args):
        w, v = args[i], args[i].value
        key = next((k for k in _CC_VALUED if (v or "").startswith(k)), None)
        if v is None or v.startswith("@") or (w.expandable and v.startswith("-")):
            return None  # "$FLAGS", @FILE: any options at all
        if not v.startswith("-") or v == "-":
            if not _c_family(language, v):
                return None
            sources.append(w)
        elif key is not None:
            i += v == key  # -I dir: the next word
            value = Word.of(v[len(key):]) if v != key else args[i] if i < len(args) else None
            if value is None or not _cc_value(key, value):
                return None
            if key == "-x":
                language = value.value or ""
            (quote if key == "-iquote" else dirs if key[:2] in ("-I", "-i") else []
             ).append(value)
        elif _CC_HARMLESS.fullmatch(v) or v == "-S":
            mode = mode or {"-E": f"{name} -E", "-fsyntax-only": f"{name} -fsyntax-only",
                            "-S": f"{name} -S"}.get(v, "")
            printed = printed or v == "-S"
        else:
            return None
        i += 1
    shown = any((args[j].value or "").startswith("-o") for j in range(len(args)))
    if not mode or (name == "cpp" and len(sources) > 1) or (printed and not shown):
        return None  # cpp IN OUT writes OUT; -S writes x.s unless -o - prints it
    return Preprocess(mode, tuple(w for w in sources if w.value not in STDIN_FILES),
                      tuple(quote), tuple(dirs))


def _c_family(language: str, source: str) -> bool:
    """Whether gcc reads ``source`` as C, C++ or Objective-C: by ``-x``, else by its suffix
    (``-`` with ``-E``). Not a device or a process's file (``/dev/fd/3``), but its input."""
    if source.startswith(("/dev/", "/proc/")) and source not in (*STDIN_FILES, "/dev/null"):
        return False
    if language not in ("", "none"):
        return language in _CC_LANGUAGES
    return source == "-" or source.rpartition(".")[2] in _CC_SUFFIXES


def _cc_value(key: str, w: Word) -> bool:
    """Whether the value of ``key`` reads and writes nothing the rule does not judge: a
    folder to look in (not ``=dir``, under the sysroot), the terminal or ``/dev/null``."""
    v = w.value
    if v is None or w.expandable:
        return False
    if key == "-o":
        return v in ("-", "/dev/null")
    if key == "-Xclang":
        return v in _XCLANG_SHOWS
    if key.startswith(("-I", "-i")):
        return bool(v) and not v.startswith(("=", "$SYSROOT", "-"))
    return key != "-x" or v in _CC_LANGUAGES or v == "none"


def _fed_source(e: Effect, job: Preprocess, text: Word) -> None:
    """The source a preprocessor reads on its input: a here-document's text is judged like
    a file's (``"name"`` looked for in the working directory); ``/dev/null`` holds none;
    any other file or text is not shown."""
    if text.value is not None:
        e.preprocesses.append(replace(job, sources=(), stdin=text.value))
    elif text.text != "/dev/null":
        e.at_least("ask", f"{job.how} reads a source on its input that the command line does "
                          f"not show ({text.text}): what it includes is not judged")


RULES.update({"jcmd": _jcmd, "xcrun": _xcrun})
RULES.update({"javap": _jvm_reader(), "jar": _jar, "java": _java, "jps": _jps,
              "jdeps": _jvm_reader(_F({"-dotoutput", "--dot-output", "--generate-module-info",
                                       "--generate-open-module"})),
              **dict.fromkeys(("gcc", "cc", "clang", "g++", "c++", "clang++", "cpp"),
                              _compiler)})


# ---------------------------------------------------------------- static analysers

def _analyser(output_options: frozenset[str] = frozenset(),
              writes: frozenset[str] = frozenset(), runs: frozenset[str] = frozenset(), *,
              caches: frozenset[str] = frozenset(), config: Loads | None = None,
              config_options: frozenset[str] = frozenset()) -> Rule:
    """A static analyser: it reads what it is given and prints, running none of it (vulture,
    radon, bandit, pyright, hadolint, pipdeptree; flake8, mypy, pylint with no plugins).
    ``output_options`` name a file it writes, ``writes`` options make it write, ``runs``
    options load or run code, ``caches`` name the folder of its own cache. With ``config``,
    the config files found where it runs (and those ``config_options`` name) load the plugins
    they list: one that lists any makes it run that code."""

    def rule(e: Effect, args: list[Word]) -> None:
        targets: list[Word] = []
        named: list[Word] = []
        for key, value in _option_values(args):
            if key in output_options and value is not None:
                targets.append(value)
                e.add("write", f"{prog(e)} {key} writes a file")
            elif key in caches and value is not None:
                e.writes.append(value)  # its own cache, judged by where it is
            elif key in config_options and value is not None:
                named.append(value)
            elif key in writes:
                e.add("write", f"{prog(e)} {key} writes files")
            elif key in runs:
                e.add("exec", f"{prog(e)} {key} loads or runs code")
        e.writes.extend(targets)
        e.replaces.extend(targets)
        e.reads.extend(w for w in args if not (w.value or "-").startswith("-") and not any(
            w is t for t in (*targets, *named)))
        if config is not None:
            _configured(e, config, named)

    return rule


def _option_values(args: list[Word]) -> list[tuple[str, Word | None]]:
    """Each option with the value written after ``=`` or, failing that, the next word."""
    found: list[tuple[str, Word | None]] = []
    for i, w in enumerate(args):
        key, eq, value = (w.value or "").partition("=")
        if key.startswith("-"):
            found.append((key, Word.of(value) if eq else (
                args[i + 1] if i + 1 < len(args) else None)))
    return found


def _configured(e: Effect, config: Loads, named: list[Word]) -> None:
    """Config files where it runs and those its options name: read, and searched for the
    settings that load plugins; one named only at run time may list any."""
    e.reads.extend(named)
    known = tuple(w.value for w in named if w.value is not None)
    if len(known) < len(named):
        e.add("exec", f"{prog(e)} reads a config file only known at run time: it may list "
                      "plugins")
    e.loads_here.append(Loads((*config.names, *known), config.keys, config.upward))


_MYPY_REPORTS = frozenset(f"--{kind}-report" for kind in (
    "any-exprs", "cobertura-xml", "html", "linecount", "linecoverage", "lineprecision", "txt",
    "xml", "xslt-html", "xslt-txt"))
_PYLINT_CONFIG = Loads(("pylintrc", ".pylintrc", "pylintrc.toml", ".pylintrc.toml",
                        "pyproject.toml", "setup.cfg", "tox.ini"),
                       ("load-plugins", "load_plugins", "init-hook", "init_hook", "extension-pkg",
                        "extension_pkg", "unsafe-load-any-extension"), upward=True)
_PYLINT_LOADS = frozenset({"--load-plugins", "--extension-pkg-allow-list",
                           "--extension-pkg-whitelist", "--unsafe-load-any-extension"})
_pylint_options = _analyser(frozenset({"--output"}), runs=_PYLINT_LOADS, config=_PYLINT_CONFIG,
                            config_options=frozenset({"--rcfile"}))


def _pylint(e: Effect, args: list[Word]) -> None:
    """pylint infers without importing, except the plugins, C extensions and ``init-hook``
    its options or config files name; ``--init-hook`` is Python, judged like ``python -c``.
    (Its statistics go to its own cache in the home folder.)"""
    _pylint_options(e, args)
    for key, value in _option_values(args):
        if key == "--init-hook" and value is not None:
            inline_code(e, "pylint --init-hook", "python", value)


RULES.update({
    "flake8": _analyser(frozenset({"--output-file"}), config=Loads(
        ("setup.cfg", "tox.ini", ".flake8"), ("local-plugins", "local_plugins")),
        config_options=frozenset({"--config", "--append-config"})),
    "mypy": _analyser(frozenset({"--junit-xml"}), _MYPY_REPORTS,
                      frozenset({"--python-executable", "--install-types"}),
                      caches=frozenset({"--cache-dir"}), config=Loads(
                          ("mypy.ini", ".mypy.ini", "pyproject.toml", "setup.cfg"),
                          ("plugins", "python_executable"), upward=True),
                      config_options=frozenset({"--config-file"})),
    "pylint": _pylint,
})


# ---------------------------------------------------------------- tox

_TOX_PLUGINS = (Loads(("toxfile.py",)), Loads(("tox.ini",), ("requires",)))
"""tox 4 imports a project's ``toxfile.py`` as a plugin on every run, ``--version``
included, and provisions (installs, then runs) the plugins ``[tox] requires`` names."""
_TOX_LISTS = frozenset({"list", "l", "-l", "--listenvs", "-a", "--listenvs-all", "config",
                        "c", "--showconfig", "--version", "--help", "-h"})


def _tox(e: Effect, args: list[Word]) -> None:
    """``tox list`` and ``tox config`` read tox.ini (and load its plugins); any other use
    builds environments and runs the project's commands."""
    e.loads_here.extend(_TOX_PLUGINS)
    words = [w.value for w in args]
    if not (words and words[0] in _TOX_LISTS and None not in words):
        e.add("exec", "tox builds its environments and runs the project's commands")


RULES["tox"] = _tox


# ---------------------------------------------------------------- coverage

_COVERAGE_FILES = {"json": "coverage.json", "xml": "coverage.xml", "lcov": "coverage.lcov"}
_COVERAGE_CONFIG = Loads((".coveragerc", "setup.cfg", "tox.ini", "pyproject.toml"),
                         ("plugins",))


def _coverage(e: Effect, args: list[Word]) -> None:
    """``coverage report``/``debug`` print; ``json``, ``xml``, ``lcov`` write their report
    (``-o -``: the output), ``html`` and ``annotate`` a folder of them; ``run`` runs a
    program; ``erase``/``combine`` change the data. Each loads the plugins its config lists."""
    words = [w.value or "" for w in args]
    verb = words[0] if words else ""
    opts = dict(_option_values(args[1:]))
    _configured(e, _COVERAGE_CONFIG, [w for k, w in opts.items() if k == "--rcfile" and w])
    e.reads.extend(w for k, w in opts.items() if k == "--data-file" and w)
    if verb in _COVERAGE_FILES:
        out = opts.get("-o") or Word.of(_COVERAGE_FILES[verb])
        if out.value != "-":
            e.writes.append(out)
            e.replaces.append(out)
            e.add("write", f"coverage {verb} writes its report")
    elif verb in ("html", "annotate"):
        e.writes.append(opts.get("-d") or opts.get("--directory") or Word.of("htmlcov"))
        e.add("write", f"coverage {verb} writes report files")
    elif verb not in ("report", "debug", "help", "--version", "--help", "-h"):
        e.add("exec", f"coverage {verb or 'with no command'} runs a program or changes data")


RULES["coverage"] = _coverage


_ACTIONLINT_VALUES = frozenset({"-format", "-ignore", "-config-file", "-stdin-filename",
                                "-shellcheck", "-pyflakes"})


def _actionlint(e: Effect, args: list[Word]) -> None:
    """``actionlint`` checks the workflow files (``.github/workflows`` when none is named) and
    prints; it runs ``shellcheck`` and ``pyflakes`` over their scripts, which only read.
    ``-shellcheck=CMD``/``-pyflakes=CMD`` name other programs to run (empty turns the check
    off); ``-init-config`` writes ``.github/actionlint.yaml``."""
    i = 0
    while i < len(args):
        v = args[i].value
        key, eq, given = (v or "").partition("=")
        value = Word(given, args[i].text) if eq else args[i + 1] if i + 1 < len(args) else None
        i += 1 if eq or key not in _ACTIONLINT_VALUES else 2
        if v is None or (key.startswith("-") and key not in _ACTIONLINT_VALUES | {
                "-color", "-no-color", "-oneline", "-verbose", "-debug", "-version", "-h"}):
            if key == "-init-config":
                e.writes.append(Word.of(".github/actionlint.yaml"))
                e.add("write", "actionlint -init-config writes its configuration")
            else:
                e.add("exec", f"actionlint {args[i - 1].shown} is not modelled")
        elif key in ("-shellcheck", "-pyflakes") and value is not None and \
                value.value not in ("", key[1:]):
            e.add("exec", f"actionlint {key} names a program to run")
        elif key == "-config-file" and value is not None:
            e.reads.append(value)
        elif not key.startswith("-"):
            e.reads.append(args[i - 1])
    if not any(not (w.value or "-").startswith("-") for w in args):
        e.reads.append(Word.of(".github/workflows"))


RULES["actionlint"] = _actionlint
RULES.update({
    "checkmake": _analyser(),
    "vulture": _analyser(frozenset({"--make-whitelist-file"})),
    "radon": _analyser(frozenset({"-O", "--output-file"})),
    "bandit": _analyser(frozenset({"-o", "--output"})),
    "pyright": _analyser(frozenset(), frozenset({"--writebaseline", "--createstub"})),
    "hadolint": _analyser(),
    "pipdeptree": _analyser(runs=frozenset({"--python"})),
})
