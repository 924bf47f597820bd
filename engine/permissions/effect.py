"""Effects: what one simple command does (risk, paths read and written, code it runs).

Also the option parser and the rule builders (``reader``, ``writer``, ``plain``) that the
per-program rules in ``rules.py`` are made of.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.permissions import programs
from engine.permissions.c_includes import Preprocess
from engine.permissions.words import Word
from engine.tooling.spec import Risk, max_risk

Floor = str  # "" | "ask" | "deny"
_ORDER = {"": 0, "allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True, slots=True)
class Loads:
    """Start-up files of a program, looked for where it runs: what they hold runs with it."""

    names: tuple[str, ...]
    """File names in the working directory, or paths the command line gave."""
    keys: tuple[str, ...] = ()
    """Settings that name code to load (a config file's ``plugins``): a file found runs code
    only when it mentions one (any case). Without keys the file is code."""
    upward: bool = False
    """Also looked for in each parent folder up to the workspace's top (mypy, pylint)."""
    runs: Callable[[str], str] | None = None
    """Judges a file found (its path): why it makes the program run code, "" when it does
    not (a makefile read by ``make -n``). Takes the place of ``keys``."""
    missing: str = ""
    """Why it matters when none of ``names`` is there now: the file the program reads is
    only known when it runs (``cmake -B b && make -C b -n``: cmake writes it unseen)."""
    missing_if: tuple[str, ...] = ()
    """``missing`` matters only where one of these is there (``Cargo.lock`` is written only
    for a ``Cargo.toml``); without them, always (a makefile missing now may be written
    unseen first: ``cmake -B b && make -C b -n``)."""
    runs_in: Callable[[str, str], str] | None = None
    """Like ``runs``, given the workspace's top folder too (``git -C sub``: is the repository
    git finds there the workspace's own)."""


@dataclass(slots=True)
class Effect:
    """What one simple command does, as far as its arguments tell."""

    argv: list[Word]
    """The effective command after unwrapping wrappers."""
    risk: Risk = "read"
    reasons: list[str] = field(default_factory=list)
    reads: list[Word] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)
    chdir: list[Word] = field(default_factory=list)
    """Directories the shell changes into (``cd``), judged as reads."""
    creates: list[tuple[str, Word]] = field(default_factory=list)
    """Files it opens, making each one that is missing (``flock FILE``), with the program
    that does: a read where the file is there, a write where it is not."""
    starts_in: list[Word] = field(default_factory=list)
    """Folders a wrapper starts the command in (``env -C src python3 -m x``), in order:
    where the program finds the files it loads from its working folder."""
    nested: list[tuple[str, list[Word]]] = field(default_factory=list)
    """Commands this one runs: (how, argv)."""
    nested_under: list[tuple[str, list[Word], Word]] = field(default_factory=list)
    """Commands this one runs in each folder under a start (``find -execdir``): (how, argv,
    start)."""
    scripts: list[tuple[str, Word]] = field(default_factory=list)
    """Shell code this one runs: (how, code)."""
    code_args: list[Word] | None = None
    """The words after ``bash -c CODE``: ``$0``, ``$1``... of that code."""
    inline: list[Word] = field(default_factory=list)
    """An interpreter's inline code (``perl -e CODE``): another language, judged by
    ``inline_code``, never searched as a command line."""
    unseen: str = ""
    """What it changes that the command line cannot show and nobody is asked to review
    (``terraform apply -auto-approve``): ``deny`` under ``--approval auto``."""
    sends: bool = False
    """It sends files, its input or text only known at run time to another machine (an
    upload, ``curl -d @f``): what the command read may leave with it."""
    secret: str = ""
    """What credentials it prints from outside the workspace (``gh auth token``, ``env``):
    only a person may allow that."""
    hunts: str = ""
    """What search for credentials it makes (``grep -rn password``): what it finds among the
    files the command may read anyway, so it matters only when something sends it away."""
    loads_here: list[Loads] = field(default_factory=list)
    """Files in the working directory that hold or name code the program loads when it
    starts (``jupyter_nbconvert_config.py``, a ``setup.cfg`` naming pylint plugins; a
    toolchain file rustup follows, whatever the rule of the program behind it adds)."""
    imports_here: str = ""
    """Python with ``-m MODULE`` (its name): the working directory comes first on its import
    path, so a file there named like MODULE or a standard module runs instead of it."""
    replaces: list[Word] = field(default_factory=list)
    """Files it replaces whole with output the command line does not show (``-o FILE``,
    ``find -fprint FILE``, ``mv -f SRC FILE``): an existing file is destroyed (unless it
    ``reads_first``), which a shell ``>`` with shown content is not."""
    fetched: list[str] = field(default_factory=list)
    """Names of files it copies in from elsewhere (``scp host:/x/app.py src/``, ``docker cp
    web:/a.py src/``): a folder it replaces gets a file of each name."""
    reads_first: bool = False
    """It reads all its input before it opens what it ``replaces`` (``sort -o f f``,
    ``shuf -o f f``): a file it also reads is rewritten from itself, not lost. Any other
    program opens its output first (``openssl enc -in f -out f`` empties f)."""
    floor: Floor = ""
    """The least strict decision allowed whatever the risk (obfuscation, unknown values)."""
    stdin_code: str = ""
    """``shell`` or ``interpreter`` when it runs its standard input as code."""
    wrappers: list[str] = field(default_factory=list)
    trees: list[Word] = field(default_factory=list)
    """Targets of a recursive permission or owner change (destructive over the workspace)."""
    defines: list[tuple[str, Word]] = field(default_factory=list)
    """Aliases it defines for later lines: (name, code)."""
    stdin_reader: Callable[[Effect, Word], None] | None = None
    """Judges a here-doc or here-string it reads as commands (SQL, a makefile, ed)."""
    stdin_data: bool = False
    """What it reads is data it stores, not commands it acts on (``tee FILE``): piped in
    unseen, the files it replaces are judged as replaced; nothing runs."""
    shows_output: bool = False
    """What replaces the files in ``replaces`` is shown on the command line (``echo x |
    tee f``): what they held is lost all the same."""
    preprocesses: list[Preprocess] = field(default_factory=list)
    """C preprocessing it does (``gcc -E``, ``-fsyntax-only``): the files its sources include
    are read though the command line does not name them, judged by what the sources say."""

    def add(self, risk: Risk, reason: str) -> None:
        self.risk = max_risk(self.risk, risk)
        if reason and reason not in self.reasons:
            self.reasons.append(reason)

    def at_least(self, floor: Floor, reason: str) -> None:
        if _ORDER[floor] > _ORDER[self.floor]:
            self.floor = floor
        if reason and reason not in self.reasons:
            self.reasons.append(reason)


Rule = Callable[[Effect, list[Word]], None]


# ---------------------------------------------------------------- option parsing


@dataclass(slots=True)
class Opts:
    """Options and positionals of one argument vector."""

    flags: dict[str, Word | None]
    """The last value of each option (None for a flag)."""
    positionals: list[Word]
    items: list[tuple[str, Word | None]]
    """Every option in order, repeated ones included."""

    def has(self, *names: str) -> bool:
        return any(n in self.flags for n in names) or any(
            abbreviates(k, n) for k in self.flags for n in names)

    def get(self, *names: str) -> Word | None:
        for n in names:
            if n in self.flags:
                return self.flags[n]
            found = [w for k, w in self.items if abbreviates(k, n)]
            if found:
                return found[-1]
        return None

    def all(self, *names: str) -> list[Word]:
        """Every value given to any of ``names`` (``-e a -e b``)."""
        return [w for n, w in self.items if w is not None and (
            n in names or any(abbreviates(n, full) for full in names))]


def abbreviates(given: str, full: str) -> bool:
    """``--o`` for ``--output``, ``--in`` for ``--in-place``: GNU getopt_long, git's and
    argp's parsers take any unambiguous start of a long option as that option (an
    ambiguous one is an error, so nothing runs)."""
    return len(given) >= 3 and given.startswith("--") and full.startswith(given) and \
        given != full


_QUOTED_OPTION = re.compile(r'"(--[A-Za-z][\w-]*)=[^"]*"|(--[A-Za-z][\w-]*)="[^"]*"')
"""A long option whose value is expanded inside double quotes: one word whatever the
value holds, so still that option (``--exclude="$b"``, ``"--file=$f"``)."""
_QUOTED_SHORT = re.compile(r'-([A-Za-z])"[^"]*"|"-([A-Za-z])[^"]*"')
"""A short option given its value in the same word, expanded inside double quotes
(``-f"$c"``, ``"-d$sep"``): that option, when it takes a value."""


def parse_opts(args: list[Word], short_values: str = "", long_values: frozenset[str] = frozenset(),
               *, stop_at_positional: bool = False) -> Opts:
    """GNU-style options: ``-abc``, ``-ofile``, ``-o file``, ``--long=v``, ``--long v``, ``--``."""
    items: list[tuple[str, Word | None]] = []
    pos: list[Word] = []
    i, n, ended = 0, len(args), False
    while i < n:
        a = args[i]
        v = a.value
        quoted = None if ended or v is not None else _QUOTED_OPTION.fullmatch(a.text)
        short = None if ended or v is not None else _QUOTED_SHORT.fullmatch(a.text)
        if quoted:  # --exclude="$b": the option, its value only known at run time
            items.append((quoted.group(1) or quoted.group(2), Word(None, a.text, a.dynamic)))
        elif short and (short.group(1) or short.group(2)) in short_values:
            rest = a.text[2:] if short.group(1) else '"' + a.text[3:]  # -t"$d", "-t$d": "$d"
            items.append(("-" + (short.group(1) or short.group(2)),
                          Word(None, rest, a.dynamic, a.unset)))
        elif ended or v is None or v == "-" or not v.startswith("-"):
            pos.append(a)
            ended = ended or stop_at_positional
        elif v == "--":
            ended = True
        elif v.startswith("--"):
            name, eq, val = v.partition("=")
            if eq:
                items.append((name, Word.of(val)))
            elif name in long_values and i + 1 < n:
                i += 1
                items.append((name, args[i]))
            elif any(abbreviates(name, f) for f in long_values) and i + 1 < n:
                items.append((name, args[i + 1]))  # --o FILE: --output's value, unless
                # --o is an option of its own (parallel's --tag): the word is read as both
            else:
                items.append((name, None))
        else:
            i = _short_cluster(v, args, i, short_values, items)
        i += 1
    return Opts(dict(items), pos, items)


def _short_cluster(v: str, args: list[Word], i: int, short_values: str,
                   items: list[tuple[str, Word | None]]) -> int:
    for j in range(1, len(v)):
        c = v[j]
        if c in short_values:
            rest = v[j + 1:]
            if rest:
                items.append(("-" + c, Word.of(rest)))
            elif i + 1 < len(args):
                i += 1
                items.append(("-" + c, args[i]))
            else:
                items.append(("-" + c, None))
            return i
        items.append(("-" + c, None))
    return i


# ---------------------------------------------------------------- rule builders


def prog(e: Effect) -> str:
    """The effective program: its rule name (``/usr/bin/cp`` is ``cp``), else the word as
    written."""
    return (program_name(e.argv[0]) or e.argv[0].shown) if e.argv else ""


def reader(short_values: str = "", long_values: tuple[str, ...] = (), *,
           skip_first: int = 0, pattern_opts: tuple[str, ...] = (),
           read_opts: tuple[str, ...] = ()) -> Rule:
    """A program that only reads the files named by its positionals (after ``skip_first``)."""
    longs = frozenset(long_values)

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, short_values, longs)
        skip = 0 if pattern_opts and o.has(*pattern_opts) else skip_first
        e.reads.extend(o.positionals[skip:])
        e.reads.extend(Word.of(w.value[1:]) for w in o.positionals[skip:]
                       if w.value and w.value.startswith("@") and len(w.value) > 1)
        for name in read_opts:
            w = o.get(name)
            if w is not None:
                e.reads.append(w)
        _long_paths(e, o)

    return rule


def _long_paths(e: Effect, o: Opts) -> None:
    """``--opt=/some/path`` values of readers are judged as reads too."""
    for name, w in o.flags.items():
        if name.startswith("--") and w is not None and w.value and (
                "/" in w.value or w.value.startswith("~")):
            e.reads.append(w)


def path_args(risk: Risk = "read", reason: str = "",
              not_files: frozenset[str] = frozenset()) -> Rule:
    """A program whose options may name files to read (``neofetch --ascii FILE``): every
    argument that looks like a path (has a ``/`` or starts with ``~``) is judged as a read,
    but the value of an option in ``not_files`` (``ps -p "$pid"``: a process id, one word
    whatever it holds)."""

    def rule(e: Effect, args: list[Word]) -> None:
        e.add(risk, reason)
        for i, w in enumerate(args):
            v = w.value
            if i and args[i - 1].value in not_files:
                continue
            if v is None or "/" in v.partition("=")[2] or (not v.startswith("-") and (
                    "/" in v or v.startswith("~"))):
                e.reads.append(Word.of(v.partition("=")[2]) if v and v.startswith("-")
                               else w)

    return rule


def plain(risk: Risk = "read", reason: str = "") -> Rule:
    """A program whose arguments are not paths (``echo``, ``date``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        e.add(risk, reason)

    return rule


def writer(short_values: str = "", long_values: tuple[str, ...] = (), *, skip_first: int = 0,
           last_only: bool = False, verb: str = "writes") -> Rule:
    """A program that writes the files named by its positionals."""
    longs = frozenset(long_values)

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, short_values, longs)
        targets = o.positionals[skip_first:]
        if last_only and targets:
            e.reads.extend(targets[:-1])
            targets = targets[-1:]
        t = o.get("-t", "--target-directory")
        if t is not None:
            e.reads.extend(targets)
            targets = [t]
        e.writes.extend(targets)
        e.add("write", f"{prog(e)} {verb} files")

    return rule


_VERSIONED = re.compile(r"^(python|pypy|pip|perl|ruby|node|php|lua|pydoc|idle)[0-9.]*$")
SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin",
                         "/usr/local/sbin"})


def program_name(word: Word) -> str:
    """The rule name of a command word: basename for system paths, without version suffixes."""
    v = word.value
    if v is None:
        return ""
    if "/" in v:
        if v.startswith("/"):  # /usr/bin/../bin/rm, //bin/rm, ~/../../bin/rm: the same file
            v = "/" + posixpath.normpath(v).lstrip("/")
        head, _, tail = v.rpartition("/")
        if _project_bin(head) and tail in programs.PROJECT_BIN_TOOLS:
            return tail  # node_modules/.bin/tsc: the project's own install of a tool
        if head not in SYSTEM_DIRS:
            return v  # a program by path: unknown unless it is a system program
        v = tail
    m = _VERSIONED.match(v)
    v = m.group(1) if m else v
    cross = _CROSS_TOOL.fullmatch(v)
    return v if not cross else "c++filt" if cross.group(1) == "cxxfilt" else cross.group(1)


_CROSS_TOOL = re.compile(
    r"(?:(?:arm|armv\w+|aarch64|x86_64|i[3-6]86|riscv(?:32|64)|mips\w*|powerpc\w*|ppc\w*|avr"
    r"|xtensa|s390x|sparc\w*|m68k|loongarch64|arc|or1k|msp430)(?:-[a-z0-9_]+){1,3}|llvm)-"
    r"(objdump|nm|readelf|size|strings|addr2line|c\+\+filt|cxxfilt|objcopy|strip|ar|ranlib"
    r"|gcc|g\+\+|cpp|ld|as|gdb)")
"""A cross toolchain's tools are the GNU tools for another target (``arm-none-eabi-size``,
``aarch64-linux-gnu-objdump``) or LLVM's (``llvm-nm``): judged by the same rules. The target
is a known architecture, so a program merely named ``x-y-nm`` is not taken for nm."""


def _project_bin(folder: str) -> bool:
    """``node_modules/.bin``, ``./node_modules/.bin``, ``web/node_modules/.bin``: the
    folder of a package's programs below the working directory (not above it, not absolute:
    what lies outside the workspace is nobody's install)."""
    parts = folder.split("/")
    return parts[-2:] == ["node_modules", ".bin"] and ".." not in parts and \
        not folder.startswith("/")


def is_dangerous_variable(name: str) -> bool:
    """Environment variables that make harmless programs run other code or read other config."""
    return (name in programs.DANGEROUS_VARS or name.startswith(programs.DANGEROUS_VAR_PREFIXES)
            or "PAGER" in name or "EDITOR" in name)


def run_with_arguments(name: str, code: Word) -> Word:
    """The command line a program runs for the variable or git setting ``name``: ``code``
    followed by the arguments the program adds (``ARGUMENT_COMMAND_VARS``), which only the
    running program knows (``"$@"`` of a shell given none)."""
    if code.value is None or not (name in programs.ARGUMENT_COMMAND_VARS or
                                  name.endswith("EDITOR") or name.endswith(".editor") or
                                  programs.COMMAND_VAR_PATTERN.fullmatch(name)):
        return code
    return Word(f'{code.value} "$@"', code.text)


def command_variable(name: str) -> bool:
    """Variables whose value programs run as a command (``GIT_SSH_COMMAND``, ``PAGER``, any
    ``*_PAGER`` or ``*_EDITOR``): the value is judged as shell code."""
    return name in programs.COMMAND_VARS or name.endswith(programs.COMMAND_VAR_SUFFIXES) or \
        programs.COMMAND_VAR_PATTERN.fullmatch(name) is not None


_GO_FLAG_KEPT = re.compile(r"-mod=(?:readonly|vendor)|-trimpath|-buildvcs=(?:true|false|auto)|"
                           r"-modcacherw|-v|-count=\d+|-race|-tags=[\w,.]*|-p=\d+")
"""``GOFLAGS`` flags that neither run another program nor let go rewrite go.mod."""
_NO_HOME = frozenset({"/dev/null", "/nonexistent"})
"""Homes that hold no configuration and that no command can create (the system's own
"no home" values); any other folder may hold a planted ``.gitconfig``."""


_PROMPTS = frozenset({"PS0", "PS1", "PS2", "PS4"})
_PROMPT_CODE = ("$(", "`", "[", "@P", "${!", "\\")
"""What in a prompt string could run a command as bash expands it (a substitution, a
subscript evaluated as arithmetic, a prompt expansion of another value, an escape)."""


def harmless_setting(name: str, values: list[str] | None, inherited: str | None = None) -> bool:
    """A setting whose effect is judged elsewhere or is nil, given its possible values (None:
    only known at run time): the value the variable ``inherited`` (``env -i HOME="$HOME"``);
    a pager or editor variable (``PAGER``, ``GIT_EDITOR``...) names a command line that is
    judged as a command the program runs; ``PATH`` set to system folders only
    (``/usr/bin:/bin``) makes no program of the workspace run."""
    if values is None:
        return False
    if inherited is not None and values and all(v == inherited for v in values):
        return True
    if command_variable(name) and name not in programs.COMMAND_TEMPLATE_VARS:
        return True
    if name in ("BASH_ENV", "ENV"):  # BASH_ENV=/dev/null: a shell starts with no file run
        return bool(values) and all(v in ("", "/dev/null") for v in values)
    if name in _PROMPTS:  # PS4='+ ${BASH_SOURCE}:${LINENO}: ': expanded, nothing run
        return bool(values) and not any(c in v for v in values for c in _PROMPT_CODE)
    if name in ("HOME", "XDG_CONFIG_HOME"):  # HOME=/nonexistent: no configuration to load
        return bool(values) and all(v in _NO_HOME for v in values)
    if name == "GOFLAGS":  # -mod=readonly: go may change no go.mod; no -toolexec, no -exec
        return bool(values) and all(all(_GO_FLAG_KEPT.fullmatch(f) for f in v.split())
                                    for v in values)
    if name == "GOTOOLCHAIN":  # local: the go installed here, nothing downloaded
        return bool(values) and all(v == "local" for v in values)
    if name == "LD_DEBUG":  # the loader's trace, to standard error (LD_DEBUG_OUTPUT: a file)
        return True
    if name.startswith("GIT_TRACE"):  # 1, 2, true: to standard error (a path: a file)
        return bool(values) and all(v.lower() in ("", "0", "1", "2", "true", "false")
                                    for v in values)
    return name == "PATH" and bool(values) and all(
        v and all(d.rstrip("/") in SYSTEM_DIRS for d in v.split(":")) for v in values)


TEARDOWN_VERBS = frozenset({"rm", "rb", "delete", "del", "destroy", "drop", "purge", "remove",
                            "flush", "wipe", "unpublish", "erase", "terminate", "nuke",
                            "truncate", "implode", "yank", "kill"})
"""Subcommands that tear down what they name (``gh repo delete``, ``rclone purge``,
``etcdctl del``, ``manage.py flush``, ``rails db:drop``)."""
_TEARDOWN_PREFIXES = ("delete-", "terminate-", "remove-", "deregister-", "purge-", "drop-",
                      "destroy-")
_TEARDOWN_FLAGS = frozenset({"--delete", "--destroy", "--drop", "--purge", "--wipe",
                             "--overwrite"})
_RESET_OF = frozenset({"db", "database", "migrate", "migration", "migrations", "schema",
                       "ecto"})
_AFTER = {"fresh": "migrate", "refresh": "migrate", "all": "stop", "load": "schema"}
"""Verbs that tear down after this word: ``artisan migrate:fresh`` (and ``refresh``) drops
every table, ``supervisorctl stop all`` stops every program, ``rails db:schema:load``
recreates the tables empty."""
_DOTTED = re.compile(r"([a-z]+)\.([a-z_]+)")
"""``mix ecto.reset``: a task's words joined by a dot (not a file name: see ``_EXTENSIONS``)."""
_EXTENSIONS = frozenset({"rb", "rm", "py", "js", "ts", "sh", "sql", "json", "yml", "yaml",
                         "txt", "md", "csv", "toml", "ini", "cfg", "conf", "xml", "lock", "log",
                         "gz", "zip", "tar", "db", "env", "exs", "ex"})


def teardown_verb(args: list[Word], positionals: int = 4) -> str | None:
    """The verb among the first ``positionals`` words (``db:drop`` split at ``:``) or the
    option that makes a command line tear something down, for programs whose own rule does not
    say (an unknown program, a cloud or hosting CLI, a project script's task)."""
    words: list[str] = []
    for w in args:
        v = (w.value or "").lower()
        if v.split("=")[0] in _TEARDOWN_FLAGS:
            return v.split("=")[0]
        if v and not v.startswith("-") and len(words) < positionals:
            dotted = _DOTTED.fullmatch(v)
            words.extend(dotted.groups() if dotted and dotted.group(2) not in _EXTENSIONS
                         else v.split(":"))
    for before, verb in zip(["", *words], words, strict=False):
        if verb in TEARDOWN_VERBS or verb.startswith(_TEARDOWN_PREFIXES):
            return verb
        if verb == "reset" and before in _RESET_OF:
            return f"{before} reset"
        if _AFTER.get(verb) == before or (verb == "0" and before == "update" and
                                          "database" in words):  # ef database update 0
            return f"{before} {verb}"
        if verb == "base" and before == "downgrade":  # alembic downgrade base: every table
            return "downgrade base"  # the migrations made is dropped
        if verb == "zero" and "migrate" in words[:words.index(verb)]:  # manage.py migrate
            return "migrate zero"  # APP zero: every migration of APP undone, its tables too
    return None

