"""Shell command classification: parse with tree-sitter-bash, judge every simple command.

The whole grammar agents emit is walked: pipelines, lists (``;`` ``&&`` ``||`` ``&``, newlines),
subshells, groups, ``$(...)``, backticks, process substitution, redirections, here-docs,
functions, loops. Each simple command is unwrapped and judged by its program's rule
(``rules.analyze``); shell code it runs (``bash -c``, ``eval``, a here-doc fed to a shell) is
parsed and judged the same way. Paths are judged with ``paths.judge_literal``.

Fails closed: a syntax error, a node the walker does not know, a command name only known at run
time, ``$IFS`` or ``$'\\x..'`` tricks are at least ``ask``; piping into a shell is ``deny``.
The compound takes the highest risk and the strictest decision.

This module is the only one that imports ``tree_sitter``.
"""

from __future__ import annotations

import copy
import itertools
import logging
import os
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from engine.permissions.bash_lines import bash_lines
from engine.permissions.columns import EVERY, NONE, Columns, columns_after
from engine.permissions.constructs import (
    ARITHMETIC_TEST_OPS,
    IMPLICIT_FUNCTIONS,
    MODELLED_NODES,
    ids_printed,
    names_printed,
    opaque_builtin,
    shell_code_var,
)
from engine.permissions.effect import (
    SYSTEM_DIRS,
    Effect,
    command_variable,
    harmless_setting,
    is_dangerous_variable,
    program_name,
    run_with_arguments,
)
from engine.permissions.env_options import Environment, options_from_environment, watched
from engine.permissions.expansion import (
    echo_output,
    filter_output,
    glob_match,
    path_part_output,
    printf_output,
    seq_output,
)
from engine.permissions.globbing import GLOB, GLOB_OPTIONS, MISREAD_NAME
from engine.permissions.listings import (
    bare_folders,
    keeps_lines,
    links_listed,
    listed_dirs,
    misread_entry,
    status_listing,
    status_paths,
)
from engine.permissions.made_files import MadeFiles
from engine.permissions.misreads import (
    MAX_REWRITES,
    READ_WRITE_MARK,
    assignments_ended,
    closers_quoted,
    closers_restored,
    dashes_quoted,
    read_write_marked,
    uncovered,
    words_moved,
)
from engine.permissions.paths import SENSITIVE_DIRS, Root
from engine.permissions.pipes import patch_files, pipe_discards, reverts, worktree_diff
from engine.permissions.programs import (
    ENV_KEEPING_OPTIONS,
    INTERPRETERS,
    PROJECT_BIN_TOOLS,
    SHELLS,
    STARTS_WITH_ENV,
    SUBCOMMAND_PROGRAMS,
    WRAPPERS,
    loads_unseen_code,
)
from engine.permissions.rules import (
    ENVIRONMENT_PRINTERS,
    RULES,
    SEARCHERS,
    analyze,
    capability,
    keeps_named_variables,
    prints_none_of_its_input,
    prints_secrets_read,
    prints_variables,
)
from engine.permissions.rules_git import configured_alias
from engine.permissions.rules_shell import (
    inline_input,
    is_input_arguments,
    split_input,
    xargs_prints_names,
    xargs_splits_at_nul,
)
from engine.permissions.shell_paths import (
    NULL_DEVICES,
    SECRETS_FILE,
    STRICTNESS,
    SYSTEM_FACTS,
    DecisionValue,
    PathJudge,
    Pushed,
    stream_descriptor,
    strictest,
    unquoted_text,
)
from engine.permissions.shell_values import (
    ALWAYS_SET,
    DECIMAL,
    LISTED_TEXT,
    MAX_LOOP_WORDS,
    MAX_VALUES,
    ShellValues,
    bounded,
    cased_values,
    made_temp,
)
from engine.permissions.small_files import small_file
from engine.permissions.words import (
    INPUT_CODE,
    MAX_PATH_WORDS,
    Word,
    brace_words,
    code_of,
    expand_braces,
    printable,
    reason_command,
)
from engine.tooling.spec import RISK_ORDER, Risk, max_risk
from engine.workspace.index import tracked_paths_under

logger = logging.getLogger(__name__)

DEFAULT_DECISION: dict[str, DecisionValue] = {
    "read": "allow", "exec": "ask", "write": "ask", "network": "ask", "install": "ask",
    "destructive": "deny",
}
"""What each risk class gets when nothing else is known."""
MAX_DEPTH = 4
"""Nesting of ``bash -c``/``eval`` beyond this is not followed (and not allowed)."""

_LANGUAGE = Language(tree_sitter_bash.language())
_PARSER = Parser(_LANGUAGE)

_BACKQUOTED = re.compile(r"(?<!\\)`((?:[^`\\]|\\.)*)`", re.S)
"""A backquoted command substitution (escapes inside kept for the caller to undo)."""
_LINE_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")
_HASH_LOOKUPS = frozenset({"command", "exec", "time"})
"""Prefixes after which a command name is still looked up by the shell (``hash -p``
applies); ``env NAME``, ``nice NAME`` search PATH."""
_HASH_RESETS = re.compile(
    r"(?<![\w$])(?<!\$\{)PATH\b|\$\{PATH:?="  # PATH set in any way empties the table
    r"|(?<![\w-])hash(?![\w-])(?!\s+-p\s)"  # hash -r, hash -d NAME, hash $x
    r"|hashall|(?<![\w-])set\s+(?:[-+]\w+\s+)*[-+][a-zA-Z]*h"  # set +h: no lookup by it
    r"|(?<![\w-])command\s+(?:-\w+\s+)*-[a-zA-Z]*p")  # command -p: the default PATH
"""What may empty, switch off or bypass the table ``hash -p`` fills (bash: any assignment to
PATH, ``local`` and ``NAME=v cmd`` included; ``hash -r``/``-d``; ``set +h``; ``command -p``).
Matched on the text, so a mention counts too: a mapping is then judged as maybe not held."""
_ONE_BRACE_GROUP = re.compile(r"(?:'')?[\w./+@%=:-]*\{[\w./+@%=:,-]*,[\w./+@%=:,-]*\}[\w./+@%=:-]*")
"""A word with one brace group of plain parts and nothing else bash expands (no quote, no
escape, no glob, no nested brace): its words are the parts, as bash makes them. The ``''``
in front is how a command line that starts with a brace reaches the parser."""
_IFS = re.compile(r"\$\{?IFS\b")
_SAVED_IFS = re.compile(r"(?<![\w$])[A-Za-z_]\w*=(\"?)\$(\{)?IFS(?(2)\})\1(?=[\s;&|)]|$)")
"""``old=$IFS`` (or ``"${IFS}"``): IFS saved whole to be put back, which hides nothing (the
walker follows the value like any other)."""
_FUNCTION = re.compile(r"(?:\bfunction\s+([^\s(){};]+))"
                       r"|(?:(?<![^\s(){};|&])([^\s(){};|&]+)\s*\(\s*\))")
"""A name followed by ``()`` (anchored at a word start: linear time on long words)."""
_ASSIGNED = re.compile(r"(?<![\w$])([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?=")
_SELF_ASSIGNED = re.compile(
    r"(?<![\w$])([A-Za-z_]\w*)=(\"?)\$(?:\{\1(?::?[-=][^${}`\"']*)?\}|\1(?!\w))\2(?=[\s;&|)]|\Z)")
"""``HOME="$HOME"``, ``OUT=${OUT:-dist}``: the value a name already has, or its default
(``env -i HOME="$HOME" git ..``); it changes nothing that is known of it."""
_COMMAND_TABLES = re.compile(r"\bBASH_(?:CMDS|ALIASES)\b")
_EXPANDS_ALIASES = re.compile(r"\bshopt\s+-s\s+(?:\w+\s+)*expand_aliases\b")
_CDABLE_VARS = re.compile(r"\bshopt\b[^;&|\n]*\bcdable_vars\b")
"""``shopt -s cdable_vars``: ``cd NAME`` of a folder that is not there goes to ``$NAME``."""
_QUOTED_TEXT = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_BRACES_OUTSIDE_QUOTES = re.compile(r"(?<![$\\])\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")
"""A brace expansion in a word (``{a,b}``, ``{1..3}``; not ``${x,,}``)."""
_STATE_BUILTIN = re.compile(r"(?:^|[;&|({\n]|\b(?:then|do|else))\s*(?:shopt|set|alias|enable|"
                            r"hash|source|\.|eval|exec)(?=\s|$)")
"""Builtins in command position that change the shell's options, commands or code."""
_OPAQUE_SET = re.compile(r"\b(?:set|shopt)\b[^;&|\n]*[$`]")
"""A ``set`` or ``shopt`` with a word only known at run time: it may set any option."""
MAX_GLOB_ARGV = 256
"""Words a command whose globs bash expands is judged again with (``_glob_argv``)."""
_DECLARATION_FLAGS = {"declare": "aAcfFgiIlnprtux", "typeset": "aAcfFgiIlnprtux",
                      "local": "aAcfFgiIlnprtux", "export": "fnp", "readonly": "aAfp"}
"""The options each declaration builtin takes (bash 5.2); any other makes it fail."""
_SPECIAL_BUILTINS = frozenset({":", ".", "source", "break", "continue", "eval", "exec",
                               "exit", "export", "readonly", "return", "set", "shift",
                               "times", "trap", "unset"})
"""POSIX's special builtins: in POSIX mode an assignment before one stays after it."""
_GLOB_SHOPT = re.compile(r"\bshopt\b([^;&|\n]*)")
"""A ``shopt`` and its words: a glob option it names, or a word only known at run time, may
be set from there on (``globbing.GLOB_OPTIONS``)."""
_EXPORTS_FUNCTIONS = re.compile(r"\b(export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*"
                                r"-\w*f\w*((?:[ \t]+[^\s;&|()<>]+)*)")
"""``export -f NAME``, ``declare -fx NAME``: a child bash runs the function by its name
(``declare -f NAME`` without ``-x`` only prints it)."""
MAX_CALLS = 32
"""Calls of this command's functions judged with their arguments; later ones are not."""
_SAME_SHELL = ("", "eval", "trap", "source", ".")
_SLOT_VARIABLE = re.compile(r"[A-Za-z_]\w*=")


def _slot(how: str) -> bool:
    """Whether ``how`` is a setting that names a program another program runs in its own
    role (``git -c core.pager=``, ``GIT_EXTERNAL_DIFF=``, ``PAGER=``), not a shell."""
    return how.startswith("git -c ") or bool(_SLOT_VARIABLE.fullmatch(how))
_SOURCED_INPUT = ("source <<", ". <<")
"""``source /dev/stdin <<< CODE``: the code runs in this shell, like ``source FILE``."""
"""Where code runs in the shell that defined the functions (not a child shell)."""
_COPROC = re.compile(r"(^|[;&|(){}\n]|\b(?:then|do|else)\b)(\s*)coproc\s+"
                     r"(?:[A-Za-z_]\w*\s+(?=\{\s|\())?")
"""``coproc [NAME] { ..; }``, ``coproc CMD`` in command position: the grammar does not read
the named form."""
_ASSIGNS_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*):?=")
"""``${X:=w}``, ``${X=w}``: an expansion that assigns X."""
_LOOP_VAR = re.compile(r"\b(?:for|select)\s+([A-Za-z_]\w*)")
_UNSET = re.compile(r"\bunset\s+(?:-[fv]\s+)?([A-Za-z_]\w*)")
_READS_INTO = re.compile(r"\b(?:read|mapfile|readarray|getopts)\b([^;&|\n)]*)")
"""``read``/``mapfile`` and the words after them: every name among them may be set."""
_TAINT_ALL = re.compile(r"\bsource\b(?!\s+<\()"
                        r"|(?:^|[;&|\n]|(?<!=)\(|\b(?:then|do|else)\b)\s*\.\s(?!\s*<\()")
"""A sourced file may set any variable; ``source <(CODE)`` taints only where the code is not
shown (``_shown_script``)."""
_ASSIGNMENT_WORD = re.compile(r"([A-Za-z_]\w*)(\[[^\]]*\])?(\+?)=(.*)", re.S)
_DECLARERS = frozenset({"declare", "typeset", "export", "local", "readonly"})
_CONDITIONAL = frozenset({"if_statement", "case_statement", "while_statement",
                          "for_statement", "c_style_for_statement"})
"""Constructs whose commands may not run (a branch, a loop's body)."""
_IN_TURN = re.compile(r"(?<![\w$-])(?:cd|pushd|popd|eval)\b")
"""A loop body whose effect depends on the value as a whole, not as a word: a folder it
changes to, code it builds (``eval "f_$v=$v.txt"``)."""
MAX_FOLDERS_IN_TURN = 16
"""A loop over more values than this is judged once with them all (its folder unknown)."""
_BACKQUOTE_ESCAPE = re.compile(r"`[^`]*\\[\\`$]", re.S)
"""A backquoted command in which bash takes ``\\\\``, ``\\` `` and ``\\$`` as escapes before it runs
(the grammar reads the text as written: ``r\\\\m``, which bash runs as ``rm``)."""
_LOOP_ASSIGNS = re.compile(r"(?<![\w$])[A-Za-z_]\w*(?:\[[^\]]*\])?\s*(?:<<|>>|[-+*/%&|^])?="
                           r"|[A-Za-z_]\w*\s*(?:\+\+|--)|(?:\+\+|--)\s*[A-Za-z_]"
                           r"|\b(?:set|printf|let|declare|typeset|local|export|readonly|hash|"
                           r"alias|IFS)\b")
_PLANTED_KEYS: tuple[tuple[re.Pattern[str], re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|/)package\.json$"), re.compile(
        r"(?:scripts\s*\.\s*|scripts\s*\[\s*[\"']|[\"'])(?:pre|post)?(?:install|prepare|"
        r"publish|publishonly|pack|uninstall|dependencies)[\"']?\s*(?:\]\s*)?[:=]", re.I),
     "a script npm runs on install"),
    (re.compile(r"(?:^|/)\.cargo/config(?:\.toml)?$"), re.compile(
        r"(?:rustc-wrapper|rustc_wrapper|rustc-workspace-wrapper|runner|linker|rustc|rustdoc)"
        r"\s*=|\[alias\]", re.I), "a program cargo runs"),
    (re.compile(r"^(?!.*\.(?:md|markdown|rst|adoc|html?|org)$)(?!.*(?<!CMakeLists)\.txt$).+"),
     re.compile(
        r"(?:curl|wget)\b[^|\n]*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b"),
     "a download piped into a shell, which runs later"),  # any file but a document:
    # a Makefile, a workflow, conftest.py, CMakeLists.txt's execute_process
    (re.compile(r"(?:^|/)platformio\.ini$"), re.compile(r"extra_scripts\s*="),
     "a script PlatformIO runs with every build"),
    (re.compile(r"(?:^|/)\.vscode/tasks\.json$"), re.compile(
        r"[\"']?runOn[\"']?\s*:\s*[\"']folderOpen", re.I),
     "a task the editor runs when the folder is opened"),
    (re.compile(r"(?:^|/)\.?devcontainer(?:/[^/]+)?\.json$|(?:^|/)\.devcontainer/"
                r"(?:[^/]+/)?devcontainer\.json$"), re.compile(
        r"(?:initialize|onCreate|updateContent|postCreate|postStart|postAttach)Command", re.I),
     "a command the dev container runs (initializeCommand on the host)"),
    (re.compile(r"(?:^|/)(?:\.mvn/jvm\.config|gradle\.properties)$"), re.compile(
        r"-javaagent|-agentlib|-agentpath|-XX:On(?:Error|OutOfMemoryError)"),
     "an agent the JVM of every build loads"),
    (re.compile(r"(?:^|/)(?:\.Rprofile|Rprofile\.site|\.iex\.exs|\.luacheckrc|"
                r"\.pythonrc(?:\.py)?)$"), re.compile(
        r"\bsystem2?\s*\(|\bshell\s*\(|os\.execute|io\.popen|System\.cmd|:os\.cmd|"
        r"File\.rm|subprocess|os\.system|Port\.open", re.I),
     "a command run by start-up code (every session in the project runs it)"),
    (re.compile(r"(?:^|/)\.(?:npmrc|yarnrc(?:\.yml)?)$"), re.compile(
        r"(?:script-shell|shell|node-options|init-module|onload-script|yarnPath|git|editor|"
        r"browser)\s*[=:]", re.I), "a program npm or yarn runs"),
)
"""Configuration files that name programs a tool runs later, and the keys that do: a command
that writes the file and names the key in its text plants a command (``jq '.scripts.postinstall
= ..' package.json > t && mv t package.json``)."""
_LOADER_OPTIONS = frozenset({"RUBYOPT", "NODE_OPTIONS", "PERL5OPT", "PYTHONSTARTUP",
                             "PYTHONPATH", "NODE_PATH", "RUBYLIB", "PERL5LIB",
                             "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"})
"""Variables whose value names code an interpreter loads before the program."""
_OUTPUT_SUBST = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\((?!\())")
"""A command substitution (``$(cmd)``, a backquote), not arithmetic (``$((1+2))``)."""
_PRINTF_V = re.compile(r"\bprintf\s+-v\s*['\"]?([A-Za-z_]\w*)")
_UNPARSED_SUBST = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_LINE_COUNT = re.compile(r"(?:-n ?\+?\d+|-\d+|--lines=\+?\d+)?")
"""``head``/``tail`` options that print whole lines of what they read, some of them."""
_LINE_PICK = re.compile(r"-n (?:\d+|\$)(?:,(?:\d+|\$))?p|\d*q")
"""A ``sed`` script that prints some whole lines of what it reads (``-n 2p``, ``1q``)."""
_DUPLICATED = re.compile(r"(\d+)-?")
"""The word of ``>&N``/``<&N`` that copies descriptor N (``N-`` moves it: N is closed)."""
_READ_OPS = frozenset({"<"})
_REDIRECT_OPS = _WRITE_OPS | _READ_OPS | {">&-", "<&", "<&-"}


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    """The judgement of one command string."""

    risk: Risk
    decision: DecisionValue
    reason: str
    commands: list[dict[str, Any]]
    """One entry per simple command (nested ones included): argv, risk, decision, reason,
    capability, floor (the least strict decision any rule may give it), via, wrappers."""
    parsed: bool
    """False when the parser reported an error or the walker met an unknown construct."""
    floor: DecisionValue = "allow"
    """The least strict decision any policy rule may give the whole command."""
    unnamed: bool = False
    """Some program the command runs cannot be named before it runs (``$(cat x) -rf dir``,
    or text the parser cannot read), or a file it writes lies in a folder only known then
    (``cd -; mv b a``): never allowed by a policy, a mode or an "always" answer; ``deny``
    under ``auto``."""
    unnamed_why: str = ""
    """The first reason ``unnamed`` holds (a program, a variable, or files it changes)."""
    secrets: list[str] = field(default_factory=list)
    """Credentials outside the workspace it reads (keys, cloud and registry logins): only a
    person may allow that, like an unnamed program (``deny`` under ``auto``)."""
    private: list[str] = field(default_factory=list)
    """Other files outside the workspace it reads that belong to someone (``is_private``: below
    a home folder, or kept from other users by their mode), and reads of paths only known at
    run time (which may be such a file): a person or a policy rule may allow that, never
    ``--approval auto`` (``unattended``)."""

    @property
    def person_only(self) -> str:
        """Why only a person may allow the command ("" when a policy or mode may)."""
        if self.unnamed:
            why = self.unnamed_why
            if why.startswith(("writes ", "changes ")):
                return "which files it changes is only known at run time"
            if why and not why.startswith("the program "):
                return why  # a file it loads was written by it, a name only known then..
            return "the program cannot be named before it runs"
        if self.secrets:
            return f"it reads credentials: {', '.join(self.secrets[:3])}"
        return ""

    @property
    def unattended(self) -> str:
        """Why ``--approval auto`` may not run it ("" when it may run what is asked)."""
        if self.private:
            return ("it reads files outside the workspace that may be someone's own: "
                    f"{', '.join(self.private[:3])}")
        return ""

    def to_json(self) -> dict[str, Any]:
        """The object printed by ``engine policy check-shell --json``."""
        return {"decision": self.decision, "risk": self.risk, "reason": self.reason,
                "commands": self.commands}


def classify_command(command: str, workspace: Path, env: Mapping[str, str] | None = None, *,
                     roots: Sequence[Root] = ()) -> ShellVerdict:
    """Parse ``command`` and judge every simple command in it (never runs anything)."""
    walker = _Walker(Path(workspace), roots, os.environ if env is None else env)
    try:
        walker.run(command, "", 0)
    except Exception as exc:  # fail closed, never crash: a fault of this judge included
        logger.warning("shell command could not be judged: %r", exc, exc_info=not isinstance(
            exc, (RecursionError, ValueError, OSError)))
        walker.problems.append(f"the command could not be judged ({type(exc).__name__})")
    return walker.verdict()


def check_shell_json(command: str, workspace: Path, env: Mapping[str, str] | None = None,
                     approval: str = "policy", tool: str = "") -> dict[str, Any]:
    """The JSON object printed by ``engine policy check-shell`` (any string, never raises on
    its content: strings are made printable). Under ``approval="auto"`` a command whose
    program cannot be named, or that reads credentials outside the workspace, is ``deny``
    (``ask`` would run it with no one to see it). With ``tool`` (the
    shell tool's name), capabilities are given as the policy grants them: ``<tool>:<scope>``."""
    verdict = classify_command(command, workspace, env)
    out = verdict.to_json()
    if tool:
        for entry in out.get("commands") or ():
            entry["capability"] = f"{tool}:{entry.get('capability', '')}"
    why = verdict.person_only or verdict.unattended
    if approval == "auto" and why and out["decision"] == "ask":
        out["decision"] = "deny"
        who = "a person" if verdict.person_only else "a person or a policy rule"
        out["reason"] = (f"{out['reason']} (only {who} may allow it)" if why in out["reason"]
                         else f"{out['reason']} ({why}: only {who} may allow it)")
    shown: dict[str, Any] = printable(out)
    return shown


MIN_SECRET_CHARS = 4
"""Shorter values of secret variables are left in a verdict's text (``1`` is everywhere)."""
_PROMOTES = frozenset({"export", "readonly", "declare", "typeset", "local"})
"""Builtins after which a variable assigned before them may keep that value
(``x=rm export x``, ``x=rm readonly x``: bash promotes the temporary one)."""
_OPTION_VARIABLES = {"git": (("GIT_DIR", "--git-dir"), ("GIT_WORK_TREE", "--work-tree"))}
"""Variables a program reads as it reads one of its options: judged as that option."""


def _as_options(argv: list[Word], assigned: Sequence[str],
                exported: Mapping[str, list[str] | None]) -> tuple[list[Word], Sequence[str]]:
    """``GIT_DIR=d git status`` as ``git --git-dir=d status``: the option's rule judges the
    value (a folder outside the workspace, or the run-time value, stays asked)."""
    pairs = _OPTION_VARIABLES.get(program_name(argv[0]) if argv else "", ())
    given = [(var, opt, exported.get(var)) for var, opt in pairs if var in assigned]
    options = [Word.of(f"{opt}={values[0]}") for _, opt, values in given
               if values is not None and len(values) == 1]
    if not given or len(options) != len(given):
        return argv, assigned
    judged = {var for var, _, _ in given}
    return [argv[0], *options, *argv[1:]], [v for v in assigned if v not in judged]


class _Values(NamedTuple):
    """The values the walker follows, as they were before commands that may not run."""

    known: dict[str, list[str]]
    unknown: set[str]
    arrays: dict[str, list[list[str]]]
    maps: dict[str, dict[str, str]]
    refs: dict[str, str]
    positional: list[str] | None
    ifs: str | None
    numeric: set[str]
    maybe_unset: set[str]
    loops: dict[str, list[str]]
    blankless: set[str]
    made_temps: set[str]
    dashless_vars: set[str]


@dataclass(frozen=True, slots=True)
class _Ctx:
    src: bytes
    via: str = ""
    depth: int = 0
    piped: bool = False
    """Standard input comes from the previous command of a pipeline."""
    stdin: Word | None = None
    """Standard input is this here-doc or here-string."""
    numbered: Columns = NONE
    """Standard input's lines begin with numbers (``uniq -c | while read -r n w``)."""
    truncate: bool = False
    """The redirections belong to a command that writes nothing: ``>`` empties the file."""
    moves: bool = False
    """The redirected command changes folder (``cd src > a.txt``): bash opens its files where
    the shell was, which the walk may have left; emptying one is judged unseen."""
    read_back: frozenset[str] = frozenset()
    """Files the redirected command reads: ``>`` empties them before it reads them."""
    listed: tuple[str, ...] = ()
    """Standard input is a listing of paths under these directories (``find . | xargs``)."""
    printed: str | None = None
    """What the redirected command prints, when a static echo or printf (None: unknown)."""
    shell: int = 0
    """Which shell runs this code: a function is called in the shell that defined it."""
    child: bool = False
    """A command a program runs (``xargs cd``, ``find -exec``): not the shell's builtin."""
    fetched: bool = False
    """The redirected command uses the network: what it writes was downloaded."""


@dataclass(slots=True)
class _Walker(PathJudge, ShellValues):
    ws: Path
    roots: Sequence[Root]
    env: Mapping[str, str]
    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    floors: list[tuple[DecisionValue, str]] = field(default_factory=list)
    """Decisions the whole command cannot go below, with why (obfuscation)."""
    cwds: list[Path | None] = field(default_factory=list)
    conditional: int = 0
    backgrounded: set[int] = field(default_factory=set)
    """Nodes followed by ``&`` already walked as the subshell they run in."""
    oldpwd: Path | None = None
    """``$OLDPWD`` once a cd of this command set it (before: the caller's, unknown)."""
    pushed: list[Pushed] = field(default_factory=list)
    """The folders ``pushd`` left, for ``popd``."""
    functions: set[str] = field(default_factory=set)
    """Names that look like functions anywhere in the command (defined before or after)."""
    defined: set[str] = field(default_factory=set)
    """Aliases, and functions without a body to judge, defined by the lines walked so far."""
    bodies: dict[str, tuple[Node, _Ctx]] = field(default_factory=dict)
    """Functions defined so far: judged at each call with its arguments, and once more at
    the end (arguments unknown) when a call may be out of sight."""
    redirects: dict[str, list[Node]] = field(default_factory=dict)
    """Redirections written on a function's definition (``f() { ..; } > out``): bash makes
    them each time the function is called."""
    maybe_defined: set[str] = field(default_factory=set)
    """Functions whose definition may not have run (a branch, a loop): a call of one named
    like a program may run that program."""
    definitions: list[tuple[Node, _Ctx]] = field(default_factory=list)
    """Every function body defined, in order (a name defined twice has two)."""
    called: set[int] = field(default_factory=set)
    """Bodies judged at a call (node ids)."""
    calling: list[int] = field(default_factory=list)
    recursing: set[int] = field(default_factory=set)
    """Bodies of functions whose call of themselves is being judged (``_recursion``)."""
    shells: int = 0
    """Shells started so far (each bash -c, script or stdin code is a new one)."""
    shadowed: dict[str, list[str] | None] = field(default_factory=dict)
    """In a function call: each name a ``local`` shadows, and what the global held then."""
    traps: list[tuple[Word, _Ctx, _Values]] = field(default_factory=list)
    """Trap code set so far, with the values when it was set (``_fire_traps``)."""
    exported_functions: set[str] = field(default_factory=set)
    """Functions ``export -f NAME`` or ``declare -fx NAME`` hands to a new bash."""
    functions_reach: bool = True
    """Whether exported functions reach the shell being judged: every shell on the way is
    bash and every program hands the environment on (dash, ``sh`` on Debian, and the shell
    ``make``, ``flock -c`` or ``watch`` start, drop them, and so does ``sudo``)."""
    calls: int = 0
    exports_functions: bool = False
    downloads: set[str] = field(default_factory=set)
    """Substitutions (their text) whose commands fetch from the network."""
    downloaded: set[str] = field(default_factory=set)
    """Variables assigned downloaded text."""
    decoded: set[str] = field(default_factory=set)
    """Substitutions (their text) whose output a decoder made (base64 -d, rev, tr, xxd -r)."""
    decoders: set[str] = field(default_factory=set)
    """Variables assigned decoded text."""
    from_output: set[str] = field(default_factory=set)
    """Variables assigned a command's output only known at run time (``p=$(cat f)``): run
    as shell code, they are judged as ``bash -c "$(cat f)"`` is."""
    decoding: bool = False
    listings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Process substitutions (their text) that list paths: text -> the folders listed."""
    misread: dict[tuple[tuple[str, ...], int, str], tuple[str, str] | None] = field(
        default_factory=dict)
    """Per listed folders and state of what the command made: a name a consumer splits."""
    coprocs: set[str] = field(default_factory=set)
    """Names of coprocesses (their arrays hold two file descriptors)."""
    shown_files: dict[str, str] = field(default_factory=dict)
    """Process substitutions (their text) a static printer fills: text -> what it prints."""
    counts: set[str] = field(default_factory=set)
    """Substitutions (their text) whose output is a number (``$(wc -l < f)``)."""
    names_out: set[str] = field(default_factory=set)
    """Substitutions (their text) whose output is object names: commits, containers
    (``$(git merge-base a b)``, ``$(docker ps -q)``), words with no blank or pattern."""
    fed: dict[str, list[str]] = field(default_factory=dict)
    """Here-strings (their text) that may be any of several known strings: text -> them."""
    contents: dict[str, str] = field(default_factory=dict)
    """Files this command wrote with a static echo or printf: path -> what they hold."""
    authored: set[str] = field(default_factory=set)
    """Files this command wrote with content of its choosing (a static echo, printf or
    here-doc; tee, cp, mv, sed -i), not a program's output caught by ``>``: a program that
    runs code it does not show may run what was written."""
    made: MadeFiles = field(default_factory=MadeFiles)
    """Links, copies, folders and files this command made so far (``made_files``)."""
    globbed: dict[tuple[str, str, frozenset[str], int], list[str] | None] = field(
        default_factory=dict)
    """Matches of each glob from each folder, under the options and what was made then."""
    hashed: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Names ``hash -p`` gave a file in this shell: name -> (the file, whether that surely
    ran); only the shell's own lookups use it (``env NAME`` searches PATH)."""
    exported_vars: set[str] = field(default_factory=set)
    """Variables this shell surely exported (``export c=rm``, ``declare -x c``, not undone by
    ``export -n`` or ``declare +x``, nor done where it may not run): a new shell holds them."""
    env_kept: bool = True
    """Whether the programs between this shell and the code being judged all hand on the
    environment (``WRAPPERS[..].keeps_env``, ``STARTS_WITH_ENV``); ``sudo`` does not."""
    prefixed: frozenset[str] = frozenset()
    """Variables the simple command being judged assigns before its name (``c=rm bash -c``):
    the code it runs holds them, exported."""
    hash_resets: bool = False
    """Whether anything in the command may empty the table ``hash -p`` fills or bypass it
    (``_HASH_RESETS``): then a mapping is never sure to hold."""
    listed_vars: set[str] = field(default_factory=set)
    listed_arrays: set[str] = field(default_factory=set)
    dashless_vars: set[str] = field(default_factory=set)
    """Variables that hold hex object ids a substitution printed (``b=$(git merge-base HEAD
    main)``, ``for c in $(git rev-list -5 HEAD)``): never a word that starts with ``-``."""
    """Arrays ``mapfile``/``read -a`` filled from a listing (``mapfile -t f < <(git
    ls-files)``): each element is a path a listing names, as a loop variable over it is."""
    glob_vars: set[str] = field(default_factory=set)
    """Loop variables over a glob: its names now, not those a file the command writes
    first adds; a condition on them is not decided here."""
    listed_args: frozenset[int] = frozenset()
    """Positional parameters given a path from a listing (``xargs sh -c '..$1' _``)."""
    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    """Associative arrays whose keys and values are all known."""
    refs: dict[str, str] = field(default_factory=dict)
    """Name references (declare -n r=k) set only by r=v: r -> k."""
    other_writes: set[str] = field(default_factory=set)
    """Names set by a read, a loop, printf -v, ${X:=w} or unset somewhere in the command."""
    assignments: Counter[str] = field(default_factory=Counter)
    """How often each name is assigned in the command's text (2 for loops and reads)."""
    sparse: set[str] = field(default_factory=set)
    """Arrays with unset elements before their last (``t[2]=ls``): one element is known,
    the list (``${t[@]}``, ``${!t[@]}``) is not followed, unless ``holes`` names them."""
    holes: dict[str, frozenset[int]] = field(default_factory=dict)
    """The unset elements of a sparse array one compound assignment made
    (``a=([2]=x [0]=y)``: 1): ``${a[@]}`` is its other elements in order."""
    set_words: bool = False
    """A ``set --`` of this command gave ``$1``.. (at the top, where a caller's would be)."""
    args_given: bool = True
    """``$1``.. are known: the words ``bash -c CODE ARG0 ARGS`` or a function call gave, or
    none at the top level (``run_shell`` runs ``bash -c COMMAND``)."""
    last_stage: int = 0
    """Where the entries of the last pipeline stage walked begin."""
    alias_values: dict[str, tuple[str, int, bytes, int]] = field(default_factory=dict)
    """Aliases defined with a shown value: name -> (value, shell, code, line)."""
    expands_aliases: bool = False
    """``shopt -s expand_aliases``: a non-interactive bash expands aliases after it."""
    glob_options: frozenset[str] = frozenset()
    """Glob-widening ``shopt`` options the command may set, or the caller's ``BASHOPTS``."""
    cdable_vars: bool = False
    posix: bool = False
    """The command may turn on POSIX mode (``set -o posix``, ``POSIXLY_CORRECT``, a ``set``
    or ``shopt`` of words only known at run time): then an assignment before a special
    builtin (``c=rm :``) stays after it."""
    nullglob: bool = False
    """``shopt -s nullglob``: a pattern that matches nothing is no word at all."""
    nocasematch: bool = False
    """``shopt -s nocasematch``: case, ``[[ == ]]`` and ``${x/pat}`` match ignoring case
    (not followed: their outcome is only known at run time)."""
    extdebug: bool = False
    """``shopt -s extdebug``: a DEBUG trap that fails skips the command after it."""
    xpg_echo: bool = False
    """``shopt -s xpg_echo`` (or a shopt of words only known at run time): echo reads
    backslash escapes as ``echo -e`` does."""
    names_argv0: bool = False
    """The command names BASH_ARGV0, whose assignment sets ``$0``."""
    names_cdpath: bool = False
    """The command sets CDPATH somewhere (``CDPATH=.. cd up``: ``../up`` first)."""
    row: int = 0
    """The line of the simple command being judged (in the code it is part of)."""
    secrets: list[str] = field(default_factory=list)
    """Credentials the command reads outside the workspace (``~/.ssh/id_ed25519``) or prints
    (``gh auth token``)."""
    private: list[str] = field(default_factory=list)
    """Other files it reads outside the workspace that belong to someone (``is_private``), and
    paths it reads that are only known at run time."""
    hunted: list[str] = field(default_factory=list)
    """Searches for credentials among files the command may read without asking
    (``grep -rn password src``): refused only when something sends them away."""
    secret_files: list[str] = field(default_factory=list)
    """Workspace files of secrets it reads (``.env``, ``*.pem``): refused only when
    something sends data away (``senders``)."""
    senders: list[str] = field(default_factory=list)
    """Its programs that send files, their input or run-time text to another machine."""
    env_secrets: list[str] = field(default_factory=list)
    """Secret-looking environment variables the command expands (``$GITHUB_TOKEN``): the
    host's credentials, which commands do not inherit unless a policy passes them on."""
    printers: set[int] = field(default_factory=set)
    """Entries (their index) of commands that print or search for credentials."""
    texts: list[str] = field(default_factory=list)
    """The command's text and the code nested in it (planted configuration is looked for)."""
    git_aliases: list[str] = field(default_factory=list)
    """``alias.NAME=VALUE`` settings a ``git config`` earlier in the command made."""
    diff_files: dict[str, bool] = field(default_factory=dict)
    """Files this command filled with the working tree's own ``git diff`` (``git diff > p``,
    ``--output=p``), and whether it was reversed: applying one back discards the changes."""
    fork_bombs: set[str] = field(default_factory=set)
    """Functions whose body starts copies of themselves in a pipeline or the background."""
    tainted: set[str] = field(default_factory=set)
    taint_all: bool = False
    loops: dict[str, list[str]] = field(default_factory=dict)
    """Loop variables over a static list (``for f in src/*.py``): the words they take."""
    in_turn: set[str] = field(default_factory=set)
    """Loop variables judged one value at a time: each value is a word bash gave (a glob
    already matched, or a pattern that matched nothing)."""
    known: dict[str, list[str]] = field(default_factory=dict)
    """Values assigned to variables by the lines walked so far, when they decode statically."""
    unknown: set[str] = field(default_factory=set)
    """Variables assigned a value that does not decode statically."""
    unnamed: list[str] = field(default_factory=list)
    """Why some program, or the folder of a file written, cannot be named before the
    command runs."""
    opaque: list[str] = field(default_factory=list)
    """Constructs met that the walker does not model and that can hide which program runs
    (``constructs.py``): the whole command is ``deny``."""
    arrays: dict[str, list[list[str]]] = field(default_factory=dict)
    """Indexed arrays assigned static elements by the lines walked so far: every value each
    has held (a loop may run an assignment again), the last one last."""
    numeric: set[str] = field(default_factory=set)
    """Variables holding a number (``$(( ))``, ``let``, ``$(wc -l < f)``)."""
    made_temps: set[str] = field(default_factory=set)
    """Variables holding the path a ``mktemp`` of this command made (``made_temp``)."""
    removed_temps: set[str] = field(default_factory=set)
    """Those an ``rm`` removes as what mktemp made: here, in a job in the background, or in
    a trap at exit (with the value the variable has then)."""
    fetched: set[str] = field(default_factory=set)
    """Files a command that uses the network wrote (``curl -o f``, ``wget -O- > f``): by
    path, or as written when only known at run time (``_written_as``)."""
    blankless: set[str] = field(default_factory=set)
    """Loop variables over words bash already split and matched (``for w in $(cat f)``):
    each value is one word there, and again where it is used unquoted."""
    integers: set[str] = field(default_factory=set)
    """Variables declared ``-i``: every assignment to them is evaluated as arithmetic."""
    shadow_stack: list[dict[str, list[str] | None]] = field(default_factory=list)
    """The callers' ``shadowed``: what their locals hide (an ``unset`` below shows it again)."""
    call_locals: set[str] = field(default_factory=set)
    """Names the function being called made local (its attributes end with the call)."""
    maybe_integers: set[str] = field(default_factory=set)
    """Those of ``integers`` whose ``-i`` may not be in force (``false && declare -i x``):
    a value given is evaluated, and may also stay the text it was."""
    readonly: set[str] = field(default_factory=set)
    """Variables made read-only: a later change fails, and the value before stays."""
    maybe_unset: set[str] = field(default_factory=set)
    """Variables set only where that may not have run: ``$x`` may be no word at all,
    ``${x-w}`` gives w."""
    leaves: int = 0
    """Commands judged so far that may end a loop or the shell early (``break``,
    ``continue``, ``return``, ``exit``, a program named only at run time): a loop whose
    passes all run (``_loop_runs``) is one in which none was met."""
    ifs: str | None = " \t\n"
    """The field separators unquoted expansions are split at (None: only known at run time)."""
    argv0: str | None = "bash"
    """``$0``: the shell ``run_shell`` starts (None inside nested code or functions)."""
    positional: list[str] | None = field(default_factory=list)
    """``$1``, ``$@``...: empty under ``bash -c``, tracked through ``set --``."""
    written: set[str] = field(default_factory=set)
    """Files the lines walked so far write (redirections, ``tee``, ``cp``...)."""
    facts: list[str] = field(default_factory=list)
    """System facts read (``/etc/os-release``): allowed, and named in the reason."""
    written_unknown: set[str] = field(default_factory=set)
    """Paths only known at run time the lines walked so far write, by their text
    (``> "$tmp"``): ``mv "$tmp" f`` then moves an edit made just before."""
    stream_writes: list[tuple[int, str, bool]] = field(default_factory=list)
    stream_joins: list[set[int]] = field(default_factory=list)
    """Descriptors a write to a stream's name joins (``> /dev/fd/3``: {1, 3}): what 3
    holds is then on 1 too, but 3 is not opened by it."""
    opened: dict[int, Word] = field(default_factory=dict)
    """Descriptors from 3 up opened read-write (``exec 3<>f``): ``>&3`` writes over f."""
    redirected: list[tuple[set[int], Word | None]] = field(default_factory=list)
    """Files redirections put on descriptors (``< f``: {0}, ``&> f``: {1, 2}), and
    descriptors made one (``2>&1``: {1, 2}, no file): a standard stream opened for writing
    stands for the files on its descriptor."""
    cased: dict[str, str] = field(default_factory=dict)
    """Variables declared ``-l`` or ``-u``: their values are stored lower or upper case."""
    runs_args: set[str] = field(default_factory=set)
    """Functions whose body runs ``"$@"`` as a command: a call runs its arguments."""
    assoc: set[str] = field(default_factory=set)
    """Arrays declared ``-A``: their subscripts are strings, not arithmetic."""
    ran: bool = False
    """A command has been walked: ``$_`` is no longer the shell's own path."""

    # ------------------------------------------------------------ entry points

    def _as_read(self, text: str) -> str:
        """The text as bash reads it (``bash_lines``), a coprocess written as the pipe
        stage it is judged like."""
        read = bash_lines(text)
        if read is None:
            self.problems.append("the command has a quote or here-document that does not end")
        text = read if read is not None else _LINE_CONTINUATION.sub(r"\1", text)
        if _COPROC.search(text):  # coproc [NAME] { ..; }, coproc CMD: judged like a stage
            self.coprocs.update(["COPROC", *re.findall(r"coproc\s+([A-Za-z_]\w*)\s+(?=\{|\()",
                                                       text)])
            text = _COPROC.sub(r"\1\2: | ", text)  # fed by this shell, like a pipe
        return text

    def run(self, text: str, via: str, depth: int, args: list[Word] | None = None,
            shell: int | None = None) -> None:
        """Judge ``text``; nested code (``depth``) gets ``args`` as ``$0 $1 ..`` when they
        are known (``bash -c CODE ARG0 ARGS``), else its positional words are unknown.
        ``shell``: the shell it runs in when that is the caller's (eval, source, a trap, a
        substitution), else a new one (its functions are its own)."""
        if depth > MAX_DEPTH:
            self.problems.append(f"shell code nested more than {MAX_DEPTH} levels deep")
            return
        outermost = not self.cwds
        if outermost:
            self.cwds.append(self.ws)
            self.known["_"] = ["bash"]
        text = self._as_read(text)
        self._prescan(text)
        src = text.encode("utf-8", "surrogateescape")
        root = _PARSER.parse(src).root_node
        if root.has_error and (marked := read_write_marked(src, root)) is not None and \
                not (again := _PARSER.parse(marked).root_node).has_error:
            text, src, root = marked.decode("utf-8", "surrogateescape"), marked, again
        if root.has_error and (fixed := _grammar_repaired(text)) is not None:
            text, src, root = fixed
        if root.has_error and self._extglob(text, via, depth, args):
            return
        misread = _body_as_words(root)
        src, root, dropped = _reread(src, root)
        if root.has_error:
            where = f" ({via})" if via else ""
            self.problems.append(f"the command does not parse as shell syntax{where}")
        elif misread:
            self.problems.append("the parser reads a here-document's first line (it starts "
                                 "with a backslash) as words of the command")
        elif _split_word(root):
            self.problems.append("the parser reads one word of the command as two")
        elif dropped:
            self.problems.append("the parser leaves out part of the command")
        outer = (self.argv0, self.positional, self.args_given, self.listed_args)
        shares = shell is not None and not args  # eval 'set -- rm': the caller's words
        if depth and not shares:
            known = [a.value for a in args or ()]
            whole = bool(known) and None not in known
            self.argv0 = known[0] if whole else None
            self.positional = [v or "" for v in known[1:]] if whole else None
            self.args_given = whole
            self.listed_args = _listed_indices((args or [])[1:])
        ctx = _Ctx(src, via, depth, shell=self._new_shell() if shell is None else shell)
        if shell is None and depth:
            self._visit_new_shell(root, ctx)
        else:
            self._visit(root, ctx)
        if not shares:
            self.argv0, self.positional, self.args_given, self.listed_args = outer
        if outermost:
            self._fire_traps(ctx.shell)
            self._uncalled_functions()

    def _trap_set(self, e: Effect, code: Word, ctx: _Ctx) -> None:
        """A trap's code, walked where it is set: it may run from here on (and an EXIT
        trap's again at the end of its shell, ``_fire_traps``). A trap on DEBUG, ERR,
        RETURN, CHLD or a signal runs again and again, between any two commands (a DEBUG
        trap with ``extdebug`` may even skip the next): when its code changes the shell's
        state (a variable, IFS, the folder, an option), what any later command sees is not
        known here."""
        self.traps.append((code, ctx, self._values()))
        before = self._state_now()
        with self._may_not_run():
            self._script("trap", code, ctx, None)
            changed = self._state_now() != before  # before the join with what it was
        words = [w.value for w in e.argv[1:]]
        signals = words[words.index(code.value) + 1:] if code.value in words else [None]
        if all(s is not None and s.upper().removeprefix("SIG") in ("EXIT", "0")
               for s in signals) and signals:
            return
        skips = self.extdebug and any(s is None or s.upper() == "DEBUG" for s in signals)
        if code.value is None or changed or skips or _STATE_BUILTIN.search(code.value):
            self.opaque.append("a trap that runs between commands (DEBUG, ERR, RETURN, a "
                               "signal) changes what the shell holds")

    def _state_now(self) -> tuple[object, ...]:
        """What later commands see of the shell: values (but ``$_``), folders, functions."""
        values = self._values()
        return (values._replace(known={k: v for k, v in values.known.items() if k != "_"},
                                unknown=values.unknown - {"_"}),
                list(self.cwds), set(self.functions), self.ifs)

    def _fire_traps(self, shell: int) -> None:
        """Trap code runs when its signal comes (at exit, on an error, before a command),
        with what variables hold then: judged again at the end of its shell, each value
        set after the trap one it may hold (``c=cat; trap '$c a.txt' EXIT; c=rm`` runs
        ``rm a.txt``)."""
        pending = [t for t in self.traps if t[1].shell == shell]
        self.traps = [t for t in self.traps if t[1].shell != shell]
        for code, ctx, before in pending:
            self._join(before)
            with self._may_not_run():
                self._script("trap", code, ctx, None)

    def _new_shell(self) -> int:
        self.shells += 1
        return self.shells

    def _visit_new_shell(self, root: Node, ctx: _Ctx) -> None:
        """``bash -c 'cd src'``: a shell of its own. It starts with no ``hash -p`` mapping of
        its caller's, bash's own IFS, and only the variables of its environment
        (``_inherited``); its folder moves and its variables are gone after."""
        saved = (list(self.cwds), self.oldpwd, list(self.pushed), self.hashed, self._values(),
                 self.exported_vars, self.functions_reach)
        attributes = (self.cased, self.integers, self.readonly, self.assoc)
        self.hashed, self.cased = {}, {}  # no attribute is inherited: declare -u c
        self.integers, self.readonly, self.assoc = set(), set(), set()
        self.functions_reach = self.functions_reach and self.env_kept and \
            ctx.via.split(" ", 1)[0] == "bash"  # the one shell that imports export -f
        self._inherited()
        self._visit(root, ctx)
        self._fire_traps(ctx.shell)
        (self.cwds, self.oldpwd, self.pushed, self.hashed, before, self.exported_vars,
         self.functions_reach) = saved
        self.cased, self.integers, self.readonly, self.assoc = attributes
        self._restore(before)

    def _inherited(self) -> None:
        """The variables a new shell is sure to hold as the walker knows them, when every
        program on the way hands on the environment (``env_kept``): those exported
        (``exported_vars``), those a prefix assignment hands it (``c=rm bash -c '$c ..'``)
        and those of the base environment this command never sets. Any other is only known
        at run time there: unexported, it is empty (``c=echo; bash -c '$c rm a.txt'`` runs
        rm); ``set -a`` or ``env -u`` decide. Arrays are never exported."""
        names = {*self.known, *self.arrays, *self.maps, *self.refs, *self.loops}
        keep = {n for n in self.known if self.env_kept and n not in self.arrays and (
            n in self.prefixed or n in self.exported_vars or (
                n in self.env and n not in self.tainted))}
        self.exported_vars = set(keep)
        for name in names - keep:
            for held in (self.known, self.arrays, self.maps, self.refs, self.loops):
                held.pop(name, None)
            self.unknown.add(name)
        self.ifs = " \t\n"  # bash sets IFS itself at start, whatever the environment says

    def _restore(self, before: _Values) -> None:
        """The values exactly as ``before``: what a new shell set is gone with it."""
        (self.known, self.unknown, self.arrays, self.maps, self.refs, self.positional,
         self.ifs, self.numeric, self.maybe_unset, self.loops, self.blankless,
         self.made_temps, self.dashless_vars) = before

    def _imported(self, name: str) -> bool:
        """Whether the shell being judged holds the function ``name`` of another shell."""
        return self.functions_reach and bool({name, "*"} & self.exported_functions)

    def _uncalled_functions(self) -> None:
        """Bodies of functions no call was judged for (or that a child bash may run by
        name, or bash itself: ``command_not_found_handle``), judged once with unknown
        arguments: a trap, ``export -f`` or a name built at run time may call them out of
        sight. Judged even where no such caller is seen (``clean() { rm -rf build; };
        declare -f clean`` is refused): a call the walk does not see would run it."""
        named = {body.id: name for name, (body, _) in self.bodies.items()}
        for body, where in list(self.definitions):
            # export -f: a child bash imports it, but runs it only where called by name,
            # which out of sight means under a program's name (a script is asked anyway)
            if body.id not in self.called or named.get(body.id) in IMPLICIT_FUNCTIONS or (
                    self.exports_functions and named.get(body.id, "ls") in RULES):
                self.argv0, self.positional = "bash", None
                with self._may_not_run():
                    self._visit(body, replace(where, piped=False, stdin=None, numbered=NONE))
                    for redirect in self.redirects.get(named.get(body.id, ""), ()):
                        self._visit(redirect, replace(where, piped=False, stdin=None,
                                                      numbered=NONE))

    def _extglob(self, text: str, via: str, depth: int, args: list[Word] | None) -> bool:
        """``shopt -s extglob`` patterns (``/usr/bin/@(rm)``, ``ls !(x).py``), which the
        grammar cannot read: the command is judged once for each way a pattern can match
        (each alternative, or any name for ``!(..)``). False when that does not parse."""
        variants = _extglob_variants(text)
        roots = [(v, _PARSER.parse(v.encode("utf-8", "surrogateescape")).root_node)
                 for v in variants]
        if not variants or any(r.has_error for _, r in roots):
            return False
        outer = (self.argv0, self.positional)
        for variant, root in roots:
            if depth:
                known = [a.value for a in args or ()]
                whole = bool(known) and None not in known
                self.argv0 = known[0] if whole else None
                self.positional = [v or "" for v in known[1:]] if whole else None
            self._visit(root, _Ctx(variant.encode("utf-8", "surrogateescape"), via, depth))
            self.argv0, self.positional = outer
        return True

    def verdict(self) -> ShellVerdict:
        entries = self.entries
        risk: Risk = max_risk(*(e["risk"] for e in entries))
        decision = strictest(*(e["decision"] for e in entries))
        floors = [*self.floors, *(("deny", f"{why} (not modelled: refused)")
                                  for why in self.opaque)]
        floors.extend(self._planted())
        found = [*self.secrets, *self.hunted]
        if found and any(e["risk"] in ("network", "install") for i, e in
                         enumerate(entries) if i not in self.printers):
            floors.append(("deny", f"sends credentials over the network ({found[0]})"))
        if self.secret_files and self.senders:
            floors.append(("deny", "sends secrets over the network (it reads "
                                   f"{self.secret_files[0]} and sends data away)"))
        floors.extend(self._streams_reopened())
        printers = {os.path.basename(entries[i]["argv"][0]) for i in self.printers
                    if i < len(entries) and entries[i]["argv"]}
        if printers & ENVIRONMENT_PRINTERS and printers & SEARCHERS:
            floors.append(("ask", "searches the environment for credentials: a person sees "
                                  "them first"))
        if self.secrets:
            floors.append(("ask", f"it reads credentials: {self.secrets[0]}"))
        floors.extend(("ask", f"it uses the secret environment variable ${name}")
                      for name in dict.fromkeys(self.env_secrets))
        floors.extend(("ask", why) for why in self.unnamed)  # said when nothing else asks
        floor = strictest(*(d for d, _ in floors), "ask" if self.problems else "allow")
        reason = self._reason(decision)
        if self.problems:
            risk = max_risk(risk, "exec")
            if STRICTNESS[decision] < STRICTNESS["ask"]:
                reason = self.problems[0]
            decision = strictest(decision, "ask")
        if STRICTNESS[floor] > STRICTNESS[decision]:
            decision = floor
            reason = next((r for d, r in floors if d == floor), reason)
        reason, entries = self._secrets_unsaid(reason, entries)
        # a command the parser cannot read can hide any program, like a run-time value
        return ShellVerdict(risk, decision, reason, entries, not self.problems, floor,
                            bool(self.unnamed or self.problems),
                            "" if self.problems else next(iter(self.unnamed), ""),
                            list(dict.fromkeys(self.secrets)),
                            list(dict.fromkeys(self.private)))

    def _secrets_unsaid(self, reason: str, entries: list[dict[str, Any]]
                        ) -> tuple[str, list[dict[str, Any]]]:
        """The reason and entries with each secret variable's value (named like a secret or
        holding a credential) written as ``$NAME``: a verdict is shown, logged and may reach
        the model, and the host's credential must not go with it."""
        values = sorted(((v, n) for n in dict.fromkeys(self.env_secrets)
                         if len(v := self.env.get(n) or "") >= MIN_SECRET_CHARS),
                        key=lambda pair: -len(pair[0]))
        if not values:
            return reason, entries

        def hide(item: Any) -> Any:
            if isinstance(item, str):
                for value, name in values:
                    item = item.replace(value, f"${name}")
                return item
            if isinstance(item, list):
                return [hide(i) for i in item]
            if isinstance(item, dict):
                return {k: hide(v) for k, v in item.items()}
            return item
        return hide(reason), [hide(e) for e in entries]

    def _planted(self) -> list[tuple[DecisionValue, str]]:
        """A configuration file written by a command whose text names one of the file's keys
        that run a program."""
        found: list[tuple[DecisionValue, str]] = []
        if not self.written:
            return found
        written: list[str] | None = None  # the folders' files: only for a key in the text
        for path_re, key_re, what in _PLANTED_KEYS:
            if not any(key_re.search(t) for t in self.texts):
                continue
            if written is None:
                written = [*sorted(self.written), *self._files_in_written_folders()]
            hit = next((w for w in written if path_re.search(w)), None)
            if hit is not None:
                found.append(("deny", f"writes {hit} with {what} (a planted command)"))
        return found

    def _files_in_written_folders(self) -> list[str]:
        """The files git tracks in each folder this command wrote "into" (``find . -exec
        sed -i .. {} +`` stands for the files under the start): any of them may be one
        that runs later. Where git cannot tell, up to ``MAX_PLANTED_FILES`` files there."""
        ws = os.path.realpath(self.ws)
        out: list[str] = []
        for w in sorted(self.written):
            for base in self._current():
                path = os.path.realpath(os.path.join(base, w))
                rel = os.path.relpath(path, ws)
                if rel.startswith("..") or not os.path.isdir(path):
                    continue
                found = tracked_paths_under(Path(ws), rel)
                if found is None:  # git cannot tell: the files there now
                    found = _files_under(path, MAX_PLANTED_FILES, ws)
                out.extend(os.path.join(w, os.path.relpath(f, rel)) for f in found)
        return out

    def _reason(self, decision: DecisionValue) -> str:
        if not self.entries:
            return "nothing to run"
        ranked = sorted(self.entries, key=lambda e: (
            -STRICTNESS[e["decision"]], -_RISKS.index(e["risk"])))
        top = ranked[0]
        if decision == "allow" and self.facts:
            return f"reads only inside the workspace and what system this is ({self.facts[0]})"
        if decision == "allow":
            return "reads only inside the workspace"
        return f"{reason_command(top['argv'])}: {top['reason']}"

    def _prescan(self, text: str) -> None:
        """Names assigned anywhere, and functions defined anywhere, in the command."""
        self.texts.append(text)
        self.hash_resets = self.hash_resets or bool(_HASH_RESETS.search(text))
        assigned = _ASSIGNED.findall(_SELF_ASSIGNED.sub("", text))
        self.tainted.update(assigned)
        self.assignments.update(assigned)
        for names in (_LOOP_VAR.findall(text), _PRINTF_V.findall(text),
                      _ASSIGNS_DEFAULT.findall(text), *(re.findall(
                r"[A-Za-z_]\w*", m.group(1)) for m in _READS_INTO.finditer(text))):
            self.assignments.update({n: 2 for n in names})  # set by a loop, read, printf -v
            self.other_writes.update(names)
        self.other_writes.update(_UNSET.findall(text))
        self.tainted.update(_LOOP_VAR.findall(text))
        self.tainted.update(_UNSET.findall(text))
        if re.search(r"\b(?:cd|pushd|popd)\b", text):
            self.tainted.update({"PWD", "OLDPWD"})
        if _TAINT_ALL.search(text):
            self.taint_all = True
        for m in _READS_INTO.finditer(text):
            self.tainted.update({"REPLY", "MAPFILE", "OPTARG", "OPTIND", *re.findall(
                r"(?<![\w$-])[A-Za-z_]\w*", m.group(1))})
        self.tainted.update(_PRINTF_V.findall(text))
        for m in _FUNCTION.finditer(text):
            self.functions.add(m.group(1) or m.group(2))
        for m in _EXPORTS_FUNCTIONS.finditer(text):
            options = text[m.end(1):m.start(2)]
            if m.group(1) != "export" and not re.search(r"-\w*x", options + m.group(2)):
                continue  # declare -f NAME prints the function
            self.exports_functions = True
            names = [n for n in m.group(2).split() if not n.startswith("-")]
            if re.search(r"\s-\w*n", text[m.start():m.start(2)]):
                continue  # export -nf NAME: no longer exported (kept as maybe: judged both)
            if any(not re.fullmatch(r"[^$`\\\"']+", n) for n in names):
                self.exported_functions.add("*")  # export -f "$f": any of them
            self.exported_functions.update(names)
        self.expands_aliases = self.expands_aliases or bool(_EXPANDS_ALIASES.search(text))
        self.cdable_vars = self.cdable_vars or bool(_CDABLE_VARS.search(text))
        self.glob_options |= GLOB_OPTIONS & set(self.env.get("BASHOPTS", "").split(":"))
        for m in _GLOB_SHOPT.finditer(text):
            words = set(re.findall(r"[\w$`]+", m.group(1)))
            opaque = any("$" in w or "`" in w for w in words)
            self.glob_options |= GLOB_OPTIONS if opaque else GLOB_OPTIONS & words
            self.xpg_echo = self.xpg_echo or opaque or "xpg_echo" in words
            self.extdebug = self.extdebug or opaque or "extdebug" in words
            self.nocasematch = self.nocasematch or opaque or "nocasematch" in words
            self.nullglob = self.nullglob or opaque or "nullglob" in words
        self.xpg_echo = self.xpg_echo or "xpg_echo" in self.env.get("BASHOPTS", "")
        self.posix = self.posix or "posix" in text.lower() or "POSIXLY_CORRECT" in self.env \
            or "posix" in self.env.get("SHELLOPTS", "") or bool(_OPAQUE_SET.search(text))
        self.names_cdpath = self.names_cdpath or "CDPATH" in text
        self.names_argv0 = self.names_argv0 or "BASH_ARGV0" in text
        if _IFS.search(_SAVED_IFS.sub("", text)):
            self.floors.append(("ask", "uses $IFS, a way to hide word boundaries"))
        if _COMMAND_TABLES.search(text):
            self.floors.append(("deny", "BASH_CMDS and BASH_ALIASES are the shell's command "
                                        "table and aliases: a member maps a command name to "
                                        "another program"))

    # ------------------------------------------------------------ syntax walk

    def _visit(self, node: Node, ctx: _Ctx) -> None:
        if node.is_missing:
            self.problems.append(f"incomplete command: missing {node.type!r}")
            return
        if not node.is_named:
            return
        t = node.type
        if t != "ERROR" and t not in MODELLED_NODES:
            self.opaque.append(f"shell construct {t!r} is not modelled")
            return
        if t == "command_substitution" and _BACKQUOTE_ESCAPE.match(_text(node, ctx)):
            self.opaque.append("a backquoted command with \\\\, \\` or \\$ in it: bash removes "
                               "one level of backslashes before it runs (`echo r\\\\m` prints rm)")
            return
        if b"&" in ctx.src and node.id not in self.backgrounded and \
                (after := node.next_sibling) is not None and after.type == "&":
            self.backgrounded.add(node.id)  # cmd &: it runs in a subshell of its own
            self._in_subshell(node, ctx, visit=True)
            return
        if t not in _CONDITIONAL:
            self._dispatch(node, ctx)
            return
        leaves, runs = self.leaves, _loop_runs(node, ctx)
        with self._may_not_run(lambda: runs and self.leaves == leaves):
            self._dispatch(node, ctx)  # its commands may not run: a cd in it may not either
        self.maybe_unset -= _set_on_every_path(node, ctx)

    def _dispatch(self, node: Node, ctx: _Ctx) -> None:
        handler = _HANDLERS.get(node.type)
        if handler is not None:
            handler(self, node, ctx)
        else:
            self._generic(node, ctx)

    def _generic(self, node: Node, ctx: _Ctx) -> None:
        t = node.type
        if t == "ERROR":
            self.problems.append("the command does not parse as shell syntax")
            self._unparsed(node, ctx)
        elif t in _LEAF_TEXT and _UNPARSED_SUBST.search(_text(node, ctx)):
            self.problems.append("a command substitution the parser did not recognise")
            for code in _substitutions(_text(node, ctx)):  # bash still runs them
                self.run(code, "$(..)", ctx.depth + 1, shell=ctx.shell)
        failing = t == "declaration_command" and not self.calling and \
            _text(node.children[0], ctx) == "local" and not _in_function(node)
        braced = self._braced_declaration(node, ctx) if t == "declaration_command" else None
        if braced is not None:  # export o={-print,-delete}: o=-print o=-delete
            self.run(braced, "a declaration's braces", ctx.depth + 1, shell=ctx.shell)
            return
        if t == "declaration_command" and not failing:  # local outside a function: an
            self._declaration(node, ctx)  # error, which sets no name and no attribute
        elif t == "expansion":
            self._expansion(node, ctx)
        elif t in ("subscript", "arithmetic_expansion", "test_command"):
            self._arithmetic_node(node, ctx)
        with self._may_not_run() if failing else nullcontext():
            self._children(node, ctx)

    def _braced_declaration(self, node: Node, ctx: _Ctx) -> str | None:
        """``export``/``declare`` take words, which bash brace-expands: ``export
        o={-print,-delete}`` assigns o twice (the last wins) and ``export
        GIT_EXTERNAL_{DIFF,X}=CMD`` sets both names; a name may be quoted or built of known
        values (``_declared_word``). The declaration as bash makes it, else None when it is
        already as written."""
        words: list[str] = []
        end = -1
        for c in node.children:  # the grammar may cut one word in two: GIT_EXTERNAL_ {D,X}=
            text = _text(c, ctx)
            words[-1:] = [words[-1] + text] if words and c.start_byte == end else [
                *words[-1:], text]
            end = c.end_byte
        named = [words[0], *(self._declared_word(w, ctx) for w in words[1:])]
        if not any(_BRACES_OUTSIDE_QUOTES.search(_QUOTED_TEXT.sub("", w)) for w in words[1:]):
            return None if named == words else " ".join(named)
        out: list[str] = []
        for word in named:
            expanded = brace_words(word, MAX_PATH_WORDS) if _BRACES_OUTSIDE_QUOTES.search(
                _QUOTED_TEXT.sub("", word)) else [word]
            if expanded is None:
                return f"{words[0]} $UNKNOWN_WORDS"  # more words than are followed
            out.extend(expanded)
        return " ".join(out)

    def _declared_word(self, word: str, ctx: _Ctx) -> str:
        """``GIT_EXTERNAL_DIF""F=rm``, ``GIT_EXTERNAL_$v=rm`` with v known: the word with
        its name as bash makes it (quotes removed, known values put in), so that the name
        is judged; else the word as written (a name only known at run time is judged as
        such)."""
        at, quote = 0, ""
        while at < len(word) and (quote or word[at] != "="):
            quote = "" if word[at] == quote else word[at] if not quote and word[at] in "\"'" \
                else quote
            at += 1
        name = word[:at]
        if word.startswith("-") or not re.search(r"[\"'$]", name) or quote:
            return word
        src = b"echo " + name.encode("utf-8", "surrogateescape")
        root = _PARSER.parse(src).root_node
        command = root.named_children[0] if root.named_children else None
        args = command.children_by_field_name("argument") if command is not None else []
        values = self._static(args[0], replace(ctx, src=src)) if len(args) == 1 else None
        if values is None or len(values) != 1 or not re.fullmatch(r"[A-Za-z_]\w*", values[0]):
            return word
        return values[0] + word[at:]

    def _unparsed(self, node: Node, ctx: _Ctx) -> None:
        """Judge what the shell would still run from text the parser refused: ``{rm,-rf,x}``
        is brace-expanded into ``rm -rf x`` by bash, but is a syntax error to the grammar."""
        try:
            words = shlex.split(_text(node, ctx), comments=True)
        except ValueError:
            return
        if not words or "{" not in words[0]:
            return
        argv = [Word.of(x) for w in words for x in expand_braces(w) if x]  # "" is dropped
        self._simple(argv, ctx, floor_reasons=["a command the parser cannot read"])

    def _for(self, node: Node, ctx: _Ctx) -> None:
        """``for f in a b src/*.py``: ``$f`` is one of the listed words, each judged."""
        var = node.child_by_field_name("variable")
        values = node.children_by_field_name("value")
        bare = not any(c.type == "in" for c in node.children)  # for c; do: over "$@"
        if var is not None and (values or bare):
            words: list[str] | None = [] if values else (
                None if self.positional is None else list(self.positional))
            listing = self._listed_loop(values, bare, ctx)
            if listing:  # for f in $(git ls-files): each a path, listed
                values, words = [], [listing]
            for v in values:
                found = self._loop_value(v, ctx)
                if found is None or words is None:
                    words = None
                    break
                words.extend(found)
            name = _text(var, ctx)
            self.known.pop(name, None)  # what it held before is gone from the first pass
            self.unknown.discard(name)
            listed = listing is not None or any(self._listed_array(v, ctx) for v in values)
            (self.listed_vars.add if listed else self.listed_vars.discard)(name)
            (self.glob_vars.add if any(GLOB.search(_text(v, ctx)) for v in values)
             else self.glob_vars.discard)(name)
            if name == "IFS":  # for IFS in ,: the loop splits at each value
                self.ifs = "".join(words) if words else None
            if is_dangerous_variable(name):
                self._entry([Word.of(f"for {name} in")], "exec", "ask",
                            [f"setting {name} changes what programs run"], "", ctx)
            words = self._braced_loop_words(words)
            self._loop_shapes(name, values, ctx)
            if words is not None and name in self.cased:  # declare -l c; for c in RM: rm
                words = cased_values(self.cased[name], words)
            if name in self.integers:  # declare -i c; for c in EXPR: each is evaluated
                self._integer_values(name, words)
            if words is None and values and all(self._indices(v, ctx) or (
                    v.type == "command_substitution" and self._numeric_output(v, ctx))
                                                for v in values):
                self.numeric.add(name)  # for i in "${!a[@]}", $(seq -w 9): numbers
            if words is not None and words and all(
                    not any(c in w for c in "{},") for w in words):
                self.loops[name] = words
                one_by_one = self._values_in_turn(words, node, ctx)
                if one_by_one is not None:  # cd "$d": each folder is the next pass's base
                    self.in_turn.add(name)
                    leaves, runs = self.leaves, _loop_runs(node, ctx)
                    for value in one_by_one:  # a break may end the loop before any pass
                        self.loops[name] = [value]
                        with self._may_not_run(lambda: runs and self.leaves == leaves):
                            self._loop_body(node, ctx)
                    self.in_turn.discard(name)
                    self.loops[name] = words
                    return
            elif words:  # a brace or comma: a value in command position only
                self._may_hold(name, words, merge=False)
            else:
                self.unknown.add(name)
        self._loop_body(node, ctx)

    def _listed_loop(self, values: list[Node], bare: bool, ctx: _Ctx) -> str | None:
        """``for f in $(git ls-files '*.py')``: one unquoted substitution of a listing
        (``listings``), whose words are paths under its folders, split at blanks as ``xargs``
        splits them: the placeholder path each pass holds, marked as read from a listing (a
        path, never a program). "" for a loop over positional parameters that are all such
        paths (``xargs sh -c 'for f; do ..; done' _``); None for any other loop."""
        if self._over_listed_args(values, bare, ctx):
            return ""
        if len(values) != 1 or values[0].type != "command_substitution" or self.ifs != " \t\n":
            return None
        inner = [c for c in values[0].named_children if c.type != "comment"]
        dirs = self._listing(inner[0], ctx) if len(inner) == 1 else ()
        return _paths_under(dirs).value if dirs else None

    def _loop_shapes(self, name: str, values: list[Node], ctx: _Ctx) -> None:
        """What is known of each value a loop variable takes: one word (``for w in $(cat
        f)``), an object id (``for c in $(git rev-list -n 5 HEAD)``)."""
        self._not_numeric(name)
        self._blankless_loop(name, values)
        if len(values) == 1 and self._ids_output(values[0], ctx) and self.ifs == " \t\n":
            self.dashless_vars.add(name)
        each = re.fullmatch(r'"\$\{([A-Za-z_]\w*)\[@\]\}"', _text(values[0], ctx)) if \
            len(values) == 1 else None
        if each is not None and self._resolved(each.group(1)) in self.dashless_vars:
            self.dashless_vars.add(name)  # for c in "${commits[@]}" of ids

    def _listed_array(self, value: Node, ctx: _Ctx) -> bool:
        """``for f in "${files[@]}"`` over an array filled from a listing."""
        m = re.fullmatch(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?', _text(value, ctx))
        return m is not None and self._resolved(m.group(1)) in self.listed_arrays

    def _over_listed_args(self, values: list[Node], bare: bool, ctx: _Ctx) -> bool:
        """``for f; do``, ``for f in "$@"``: over the positional parameters, when every
        one of them is a path from a listing."""
        over_args = bare or (len(values) == 1 and _text(values[0], ctx) in ('"$@"', '"${@}"'))
        count = len(self.positional or ())
        return over_args and count > 0 and set(range(1, count + 1)) <= self.listed_args

    def _values_in_turn(self, words: list[str], node: Node, ctx: _Ctx) -> list[str] | None:
        """The values of a loop whose body changes folder (``for d in packages/*/; do (cd
        "$d" && ..)``) or builds code (``eval "f_$v=.."``), globs matched now as bash will
        (sorted; a pattern that matches nothing stays itself), so that each pass is judged
        with its own value, in its own folder. None when the folder is unknown, the command
        changed files before (a match may be new), a value holds a blank or a pattern, or
        there are more than ``MAX_FOLDERS_IN_TURN``."""
        body = node.child_by_field_name("body")
        base = self.cwds[0] if len(self.cwds) == 1 else None
        if body is None or base is None or not _IN_TURN.search(_text(body, ctx)) or \
                any(e["risk"] != "read" for e in self.entries) or self.written or self.made:
            return None
        out: list[str] = []
        for w in words:
            matched = self._glob(w, str(base)) if GLOB.search(w) else []
            if matched is None:
                return None
            found = sorted(matched)
            if any(GLOB.search(m) for m in found):
                return None  # a match that is itself a pattern
            out.extend(found or [w])
        if len(out) > MAX_FOLDERS_IN_TURN or any(c.isspace() for v in out for c in v):
            return None
        return out

    def _braced_loop_words(self, words: list[str] | None) -> list[str] | None:
        """A loop's words as bash gives them: braces expanded first (``for c in {rm,}``);
        None when a glob among them matches a name ``MISREAD_NAME`` marks (``for f in
        {docs,src}/*`` beside ``docs/$(rm a.txt)``)."""
        if words is None:
            return None
        braced = [brace_words(w, MAX_LOOP_WORDS) for w in words]
        found = None if None in braced else bounded(
            [x for b in braced for x in b or ()], MAX_LOOP_WORDS)
        if found is not None and any(GLOB.search(w) and self._matches_misread(w)
                                     for w in found):
            return None
        return found

    def _loop_value(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """The words one value of a ``for`` list gives: ``"${a[@]}"`` one per element,
        an unquoted expansion split at blanks (default IFS), a literal itself."""
        keys = re.fullmatch(r'"\$\{!([A-Za-z_]\w*)\[@\]\}"', _text(node, ctx))
        if keys:  # "${!m[@]}": the keys of a map, the indices of an array
            return self._keys(self._resolved(keys.group(1)))
        m = re.fullmatch(r'"\$\{([A-Za-z_]\w*)\[@\]\}"', _text(node, ctx))
        if m and self._resolved(m.group(1)) in self.maps:
            name = self._resolved(m.group(1))
            return None if self.taint_all or name in self.unknown else list(
                self.maps[name].values())
        if m:
            found = self.arrays.get(self._resolved(m.group(1)))
            if found is None or len(found) != 1 or m.group(1) in self.unknown or \
                    self.taint_all or self._resolved(m.group(1)) in self.sparse:
                return None  # several arrays it may be: each a loop of its own
            return list(found[0])
        values = self._static(node, ctx)
        if values is None or node.type in ("string", "raw_string", "ansi_c_string") or \
                "$" not in _text(node, ctx):
            return values
        if self.ifs != " \t\n" or len(values) != 1:
            return None
        return values[0].split()

    def _keys(self, name: str) -> list[str] | None:
        if self.taint_all or name in self.unknown:
            return None
        if name in self.maps:
            return list(self.maps[name])
        found = self.arrays.get(name)
        return None if found is None or len(found) != 1 or name in self.sparse else [
            str(i) for i in range(len(found[0]))]

    def _indices(self, node: Node, ctx: _Ctx) -> bool:
        """``"${!a[@]}"`` of an indexed array: its indices, numbers whatever it holds."""
        m = re.fullmatch(r'"?\$\{!([A-Za-z_]\w*)\[[@*]\]\}"?', _text(node, ctx))
        return m is not None and m.group(1) not in self.assoc

    def _case(self, node: Node, ctx: _Ctx) -> None:
        """``case WORD in ..``: with WORD's values and the patterns known, only the branches
        bash takes for one of them are walked (``;&`` falls through, ``;;&`` tests on);
        otherwise every one."""
        subject = node.child_by_field_name("value")
        items = [c for c in node.named_children if c.type == "case_item"]
        if subject is not None:
            self._visit(subject, ctx)
        found = self._static(subject, ctx) if subject is not None and not self._any_name(
            _text(subject, ctx)) else None
        taken: set[int] | None = None
        if found and not self.nocasematch:  # for f in a.txt b.txt: each value's branches
            each = [self._taken(items, value, ctx) for value in found]
            taken = None if None in each else {i for t in each for i in t or ()}
        for item in items:
            parts = _case_parts(item)
            for pattern in parts[0]:
                self._visit(pattern, ctx)
            if taken is None or item.id in taken:
                for child in parts[1]:
                    self._visit(child, ctx)

    def _taken(self, items: list[Node], subject: str, ctx: _Ctx) -> set[int] | None:
        """The ids of the case items bash runs for ``subject``; None when a pattern before
        the decision is only known at run time."""
        taken: set[int] = set()
        falling = False
        for item in items:
            patterns, _ = _case_parts(item)
            if not falling:
                found = [self._pattern(p, ctx) for p in patterns]
                if any(f is None for f in found):
                    return None
                falling = any(glob_match(subject, *f) for f in found if f is not None)
            if not falling:
                continue
            taken.add(item.id)
            end = next((c.type for c in item.children if c.type in (";;", ";&", ";;&")), ";;")
            if end == ";;":
                return taken
            falling = end == ";&"
        return taken

    def _pattern(self, node: Node, ctx: _Ctx) -> tuple[str, bool] | None:
        """A case pattern: (text, whether it matches only itself), or None when bash's
        reading of it is not computed here (expansions, mixed quoting, classes, escapes)."""
        text = _text(node, ctx)
        if node.type in ("word", "extglob_pattern") and not re.search(r"[$`\\'\"\[(]", text):
            return text, False
        if node.type in ("raw_string", "string"):
            w = self._word(node, ctx)
            return None if w.value is None else (w.value, True)
        return None

    def _loop(self, node: Node, ctx: _Ctx) -> None:
        if node.type != "c_style_for_statement":
            self._loop_body(node, ctx)
            return
        self._arithmetic_node(node, ctx)  # for ((i=0; i<3; i++)): the header, once
        body = next((c for c in node.named_children if c.type in ("do_group",
                                                                  "compound_statement")), None)
        for child in node.named_children:
            if child is not body:
                self._visit(child, ctx)
        # in the body i holds any number the header gives it, not only the first
        self._arithmetic_sets(_text(node, ctx)[:body.start_byte - node.start_byte]
                              if body is not None else _text(node, ctx))
        if body is not None:
            self._loop_body(body, ctx)

    def _loop_body(self, node: Node, ctx: _Ctx) -> None:
        """A loop's body is walked again when it assigns: a value set late in one pass is
        what an earlier line of the next pass sees (``for ..; do $c; c=rm; done``). A path
        ``mktemp`` made is only that in the body when the body hands it to nothing: ``rm
        "$t"; mv src "$t"`` in one pass is ``rm -rf src`` in the next."""
        for var in _expanded_names(_text(node, ctx)) & self.made_temps:
            self._not_made(var)
        before = len(self.entries)
        self._children(node, ctx)
        if not _LOOP_ASSIGNS.search(_text(node, ctx)):
            return
        seen = {_entry_key(e) for e in self.entries[before:]}
        mark = len(self.entries)
        first = self._values()
        self._children(node, ctx)
        changing = [v for v in {*self.known, *first.known} if set(self.known.get(v, ())) !=
                    set(first.known.get(v, ())) or (v in self.unknown) != (v in first.unknown)]
        changing += [v for v in {*self.arrays, *first.arrays}
                     if self.arrays.get(v) != first.arrays.get(v)]
        if changing:  # i=$((i+1)): a new value each pass, any of them in a later one
            for var in changing:
                self.known.pop(var, None)
                self.arrays.pop(var, None)
                self.unknown.add(var)
            self._children(node, ctx)
        fresh = []  # each command a later pass judged once, and only when the first did not
        for e in self.entries[mark:]:
            if _entry_key(e) not in seen:
                seen.add(_entry_key(e))
                fresh.append(e)
        self.entries[mark:] = fresh

    def _group(self, node: Node, ctx: _Ctx) -> None:
        """``{ cmd; }`` is a group; ``{}`` or ``{x}`` is a word bash runs as a program, which
        the grammar reads as an (empty) group."""
        text = _text(node, ctx)
        if text.startswith("(("):
            self._arithmetic_parts(node.named_children, ctx)
        elif text.startswith("{") and text[1:2] not in (" ", "\t", "\n"):
            self.problems.append("a word starting with '{' read as a group")
            self._simple([Word.of(text.split()[0] if text.split() else text)], ctx)
        self._children(node, ctx)

    def _children(self, node: Node, ctx: _Ctx) -> None:
        """A node's parts in order; in a list of commands, those after one that may leave
        (``[ -e x ] || return``, ``break``, ``exit``) may not run."""
        children = node.named_children
        for i, child in enumerate(children):
            leaves = self.leaves
            self._visit(child, ctx)
            if self.leaves != leaves and node.type in _SEQUENCES and i + 1 < len(children):
                with self._may_not_run():
                    for rest in children[i + 1:]:
                        self._visit(rest, ctx)
                return

    # ------------------------------------------------------------ constructs (constructs.py)

    def _declaration(self, node: Node, ctx: _Ctx) -> None:
        """``declare``/``local``/``typeset``/``export``: ``-n`` is opaque, ``-i`` arithmetic.
        One given an option it does not take fails and changes nothing (``declare -Z -u
        o``): judged as one that may not run."""
        keyword = _text(node.children[0], ctx) if node.children else ""
        flags = [_text(c, ctx) for c in node.named_children if c.type == "word"]
        takes = _DECLARATION_FLAGS.get(keyword, "")
        if any(f[:1] in "-+" and f != "--" and set(f[1:]) - set(takes) for f in flags):
            with self._may_not_run():
                self._declared(keyword, flags, node, ctx)
        else:
            self._declared(keyword, flags, node, ctx)

    def _declared(self, keyword: str, flags: list[str], node: Node, ctx: _Ctx) -> None:
        names = [c for c in node.named_children
                 if c.type != "word" or not _text(c, ctx).startswith("-")]
        why = opaque_builtin(keyword, [f for f in flags if f.startswith("-")])
        if prints_variables(keyword, [_text(c, ctx) for c in node.named_children]):
            self.secrets.append(f"{_text(node, ctx)} prints the shell's variables")
        if why and names and not self._name_references(node, ctx):
            self.opaque.append(why)  # declare -n alone lists the name references
        cased = next((c for f in reversed(flags) if f[:1] in "-+" for c in "luc" if c in f[1:]),
                     "")
        if cased and any(f.startswith("+") and cased in f for f in flags):
            cased = "-" + cased  # declare +l x: no -l from now on (a -u stays)
        dashes = "".join(f[1:] for f in flags if f.startswith("-"))  # -gx -r: "gxr"
        local = (keyword == "local" or (keyword in ("declare", "typeset") and _in_function(
            node))) and "g" not in dashes
        if cased and (self.conditional or local or len(set(dashes) & set("luc")) > 1):
            cased = "?" + cased.strip("+-")  # false && declare -l x, a local's -l (gone
            # after the call), declare -l -u x (neither): x may or may not be
        self._declared_names(keyword, flags, dashes, node, ctx, local)
        arrays = any(f.startswith("-") and ("a" in f or "A" in f) for f in flags)
        for c in node.named_children:
            if c.type == "variable_assignment" or c.type == "variable_name":
                name = c.child_by_field_name("name") if c.type != "variable_name" else c
                if cased and name is not None:
                    self._set_case(_text(name, ctx), cased)
                if arrays and c.type == "variable_assignment":
                    self._compound_reparsed(keyword, c, ctx)
            elif c.type != "word" or not _text(c, ctx).startswith("-"):
                exports = ((keyword == "export" and not set(dashes) & set("nfp")) or
                           "x" in dashes) and not self.conditional
                self._dynamic_name(keyword, c, ctx, arrays, exports)
        on = any(f.startswith("-") and "i" in f for f in flags)
        off = any(f.startswith("+") and ("i" in f or "n" in f) for f in flags)
        for c in node.named_children if on or off else ():
            name = c.child_by_field_name("name") if c.type == "variable_assignment" else c
            if name is None or not _text(name, ctx) or _text(name, ctx)[0] in "-+":
                continue
            if on:
                self._integer_now(_text(name, ctx), (local and not self.calling) or off)
            for f in flags if off else ():
                for attribute in f[1:] if f.startswith("+") else ():
                    self._attribute_off(_text(name, ctx), attribute)

    def _integer_now(self, name: str, maybe: bool) -> None:
        """``declare -i x``: from here on x's values are evaluated as arithmetic. Declared
        where that may not run, or by a ``local`` (gone after the call), x may also keep
        the text it is given."""
        self.integers.add(name)
        if maybe or self.conditional:
            self.maybe_integers.add(name)
        else:
            self.maybe_integers.discard(name)

    def _attribute_off(self, name: str, attribute: str) -> None:
        """``declare +i x`` and ``unset x`` end x's ``-i`` (``+n`` and ``unset -n`` end a
        name reference); where that may not run, it may or may not hold."""
        if attribute == "i" and name in self.integers:
            if self.conditional:
                self.maybe_integers.add(name)
            else:
                self.integers.discard(name)
                self.maybe_integers.discard(name)
        elif attribute == "n":
            self.refs.pop(name, None)  # where it may not run, the join refuses the name

    def _declared_names(self, keyword: str, flags: list[str], dashes: str, node: Node,
                        ctx: _Ctx, local: bool) -> None:
        """The names a declaration makes readonly (not a ``local -r``: gone after the call)
        or associative, and the locals it makes: new variables without the caller's case
        attribute, unset when given no value (``local c``)."""
        names = [_text(c.child_by_field_name("name") or c, ctx) for c in node.named_children
                 if c.type in ("variable_assignment", "variable_name")]
        if keyword == "readonly" or (not local and "r" in dashes):
            self.readonly.update(names)
        if "A" in dashes:
            self.assoc.update(names)
        if local:
            self.call_locals.update(names if self.calling else ())
            for name in names:
                self.cased.pop(name, None)
                if self.calling and name not in self.shadowed and (
                        name in self.known or name in self.unknown or name == "IFS"):
                    self.shadowed[name] = None if name in self.unknown else \
                        self.known.get(name, [self.ifs or ""])  # f(){ c=rm; local c=cat; }:
                    # the global holds rm after the call (an unset one stays as it was)
            for c in node.named_children:  # local OPTIND: getopts starts again (modelled)
                if c.type == "variable_name" and _text(c, ctx) != "OPTIND":
                    self._unknown_now(_text(c, ctx))
        if (keyword == "export" and "n" in dashes) or any(
                f.startswith("+") and "x" in f for f in flags):
            self.exported_vars.difference_update(names)  # export -n c, declare +x c
        elif ((keyword == "export" and not set(dashes) & set("fp")) or "x" in dashes) and \
                not self.conditional:  # false && export c: a new shell may not hold it
            self.exported_vars.update(names)

    def _unknown_now(self, name: str) -> None:
        """``name`` holds a value only known at run time from here on."""
        for held in (self.known, self.arrays, self.maps, self.loops):
            held.pop(name, None)
        self.unknown.add(name)

    def _ifs_value(self) -> str | None:
        """IFS as assigned: one known value, else only known at run time (IFS=, in one
        branch and IFS=: in another is neither)."""
        found = self.known.get("IFS")
        return None if "IFS" in self.unknown or found is None or len(found) != 1 else found[0]

    def _set_case(self, var: str, case: str) -> None:
        """``declare -l x`` (``l``), ``declare +l x`` (``+``: none), and either (``?l``)."""
        if case.startswith("-"):  # +l: that attribute goes, another stays
            if self.cased.get(var, "").strip("?") == case[1:]:
                self.cased.pop(var, None)
        elif case == "+":
            self.cased.pop(var, None)
        elif case == "?":
            self.cased[var] = "?" + self.cased.get(var, "?").strip("?")
        else:
            self.cased[var] = case

    def _name_references(self, node: Node, ctx: _Ctx) -> bool:
        """``declare -n r=k`` (``local -n c=$1`` in a call): r reads and ``r=v`` writes k.
        Modelled only when every name it declares has a plain name as its known target and
        is set nowhere but by ``r=v`` (a read, a loop or ``printf -v`` through it would change
        k out of sight); else False (opaque)."""
        found: dict[str, str] = {}
        for c in node.named_children:
            if c.type == "word" and _text(c, ctx).startswith("-"):
                continue
            name = c.child_by_field_name("name") if c.type == "variable_assignment" else None
            value = c.child_by_field_name("value") if name is not None else None
            target = self._static(value, ctx) if value is not None else None
            ref = _text(name, ctx) if name is not None else ""
            if not target or len(target) != 1 or not re.fullmatch(
                    r"[A-Za-z_]\w*", target[0]) or ref in self.other_writes or (
                    is_dangerous_variable(target[0]) or shell_code_var(target[0])):
                return False  # r=PATH, r=BASH_ENV: a write through it stays refused
            found[ref] = target[0]
        self.refs.update(found)
        return bool(found)

    def _compound_reparsed(self, keyword: str, node: Node, ctx: _Ctx) -> None:
        """``declare -a x="($v)"``: a value that expands to ``(..)`` is parsed again as a
        compound assignment, running the code it holds (a literal ``x=(..)`` is not)."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None or value is None or value.type == "array":
            return
        found = self._static(value, ctx)
        if found is None:
            self.unnamed.append(f"{keyword} -a sets {_text(name, ctx)} to a value only known "
                                "at run time, which bash parses again (code in it runs)")
        for v in found or ():
            self._compound_code(keyword, f"{_text(name, ctx)}={v}", ctx)

    def _compound_code(self, keyword: str, assignment: str, ctx: _Ctx) -> None:
        """An expanded ``NAME=(..)`` given to ``declare -a``/``-A``: judged as the shell
        code bash makes of it."""
        if re.fullmatch(r"[A-Za-z_]\w*\+?=\(.*\)", assignment, re.S):
            self._script("eval", Word.of(assignment), ctx)

    def _dynamic_name(self, keyword: str, node: Node, ctx: _Ctx,
                      arrays: bool = False, exports: bool = False) -> None:
        """``declare "$x"=1``: a name only known at run time, or whose subscript
        (``a[$(cmd)]``) is evaluated; with ``-a``/``-A``, an expanded ``NAME=(..)`` is
        parsed again (``_compound_code``)."""
        found = self._static(node, ctx)
        if found is None:
            self.unnamed.append(f"{keyword} sets a variable whose name is only known at run "
                                "time (a subscript in it would run commands)")
        held: dict[str, list[str]] = {}
        for value in found or ():
            if arrays:
                self._compound_code(keyword, value, ctx)
            name = value.partition("=")[0]
            if "$(" in name or "`" in name:
                self.opaque.append(f"{keyword} sets a variable whose name holds shell code")
            elif "[" in name:
                self._arithmetic_text(name.partition("[")[2].rpartition("]")[0],
                                      f"{keyword} into an array element")
            elif "=" in value and re.fullmatch(r"[A-Za-z_]\w*", name):
                held.setdefault(name, []).append(value.partition("=")[2])
        for name, values in held.items():  # declare "$(echo c=rm)": c holds rm
            self._may_hold(name, values if len(found or ()) == len(values) else None,
                           merge=False)
            self._setting(name, values, ctx)
            if exports:  # export "GIT_PAGER=cmd": the programs after it are handed it
                self.exported_vars.add(name)

    def _setting(self, var: str, values: list[str], ctx: _Ctx) -> None:
        """What setting ``var`` to one of ``values`` in a word does (``export "X=v"``), as
        the literal assignment would: code the shell runs from elsewhere, a setting that
        changes what programs run, a command line a program runs."""
        shown = Word.of(f"{var}={values[0] if values else ''}")
        if shell_code_var(var):
            self._entry([shown], "exec", "deny",
                        [f"setting {var} makes the shell run code from elsewhere"], "deny", ctx)
        elif is_dangerous_variable(var) and not harmless_setting(var, values):
            self._entry([shown], "exec", "ask", [f"setting {var} changes what programs run"],
                        "", ctx)
            if unseen := loads_unseen_code(var, values):
                self.unnamed.append(unseen)  # export NODE_OPTIONS='-r ./x.js'; node ..
        if command_variable(var):
            for value in values:
                self._script(f"{var}=", run_with_arguments(var, Word.of(value)), ctx)

    def _indirect(self, node: Node, ctx: _Ctx) -> None:
        """``${!x}`` expands the variable named by x's value: a subscript in that value
        (``x='a[$(cmd)]'``) is evaluated, running the code."""
        var = next((c for c in node.named_children if c.type == "variable_name"), None)
        if var is None:
            return
        found = self._static_variable(_text(var, ctx))
        if found is None:
            self.unnamed.append(f"{_text(node, ctx)} names a variable only known at run time "
                                "(a subscript in it would run commands)")
        for value in found or ():
            if "$(" in value or "`" in value:
                self.opaque.append(f"{_text(node, ctx)} names a variable whose subscript "
                                   "holds shell code")
            elif "[" in value:
                self._arithmetic_text(value.partition("[")[2].rpartition("]")[0],
                                      _text(node, ctx))

    def _expansion(self, node: Node, ctx: _Ctx) -> None:
        """``${x@P}`` runs code stored in ``x``; ``${s:o:l}`` evaluates ``o`` and ``l``."""
        kinds = [c.type for c in node.children]
        if kinds[:2] == ["${", "!"] and kinds[2:] == ["variable_name", "}"]:
            self._indirect(node, ctx)
        assigns = _ASSIGNS_DEFAULT.match(_text(node, ctx))
        if assigns:  # ${X:=w} sets X to w when X is unset (or empty): X is what it gives
            found = self._static(node, ctx)
            var = assigns.group(1)
            self._may_hold(var, found, merge=False)
            self._set_by_default(var, found, node, ctx)
        if "@" in kinds and _text(node, ctx).rstrip("}").endswith("P") and \
                not self._plain_prompt(node, ctx):
            self.opaque.append("${x@P} expands a value as a prompt, running code stored in it")
        if ":" in kinds:
            after = node.children[kinds.index(":") + 1:]
            self._arithmetic_parts(after, ctx)

    def _set_by_default(self, var: str, found: list[str] | None, node: Node,
                        ctx: _Ctx) -> None:
        """``${GIT_EXTERNAL_DIFF:=CMD}`` sets the variable as ``GIT_EXTERNAL_DIFF=CMD`` does:
        a value some program runs as a command is judged as one, a variable that changes
        what programs run is asked."""
        text = _text(node, ctx)
        if shell_code_var(var):
            self._entry([Word.of(text)], "exec", "deny",
                        [f"setting {var} makes the shell run code from elsewhere"], "deny", ctx)
        elif command_variable(var):
            for value in found if found is not None else [None]:
                self._script(f"{var}=", run_with_arguments(var, Word(value, text)), ctx)
        elif is_dangerous_variable(var) and not harmless_setting(
                var, found, self._untouched_env().get(var)):
            self._entry([Word.of(text)], "exec", "ask",
                        [f"setting {var} changes what programs run"], "", ctx)
            if unseen := loads_unseen_code(var, found):
                self.unnamed.append(unseen)

    def _static_arithmetic(self, text: str) -> str | None:
        """``$((OPTIND - 1))``, ``$(( $# - 3 ))``: the value of sums and products of numbers
        and variables with one known integer value; None for anything else."""
        def number(m: re.Match[str]) -> str:
            found = self._static_variable(m.group(1) or m.group(2))
            return found[0] if found and len(found) == 1 and re.fullmatch(
                r"-?\d{1,9}", found[0]) else "x"
        plain = re.sub(r"\$?\{?([A-Za-z_]\w*)\}?|\$(\d|#)", number, text)  # $# too
        if not re.fullmatch(r"[\d\s+*()-]{1,80}", plain) or re.search(r"\*\*|--|\+\+", plain):
            return None  # n++ / n-- change n while bash evaluates (n--1 is even an error)
        try:
            return str(int(eval(plain, {"__builtins__": {}}, {})))  # digits, + - * ( ) only
        except (SyntaxError, ValueError, TypeError, ArithmeticError):
            return None

    def _plain_prompt(self, node: Node, ctx: _Ctx) -> bool:
        """``${p@P}`` where every value ``p`` may hold has no ``$`` or backquote (a final
        ``\\$`` aside): its escapes print names and paths, nothing runs."""
        var = next((c for c in node.named_children if c.type == "variable_name"), None)
        values = self._static_variable(_text(var, ctx)) if var is not None else None
        return values is not None and not any(  # \044 decodes to $ before expanding
            re.search(r"[$`]|\\[0-7x]", re.sub(r"\\\$\s*$", "", v)) for v in values)

    def _arithmetic_node(self, node: Node, ctx: _Ctx) -> None:
        """Arithmetic contexts: their variables' values are evaluated as expressions."""
        t = node.type
        if t == "subscript":
            index = node.child_by_field_name("index")
            parts = [index] if index is not None else node.named_children[1:]
            array = node.child_by_field_name("name")
            if array is not None and _text(array, ctx) in self.assoc:
                return  # m[$k]: an associative array's key is a string, not arithmetic
            if not any(_text(p, ctx) in ("@", "*") for p in parts):
                self._arithmetic_parts(parts, ctx)
        elif t in ("arithmetic_expansion", "c_style_for_statement"):
            for c in node.named_children:
                if c.type == "variable_assignment":
                    self._remember(_text(c, ctx).split("=")[0], c, ctx)
            self._arithmetic_parts([c for c in node.named_children
                                    if c.type not in ("do_group", "compound_statement")], ctx)
        else:  # [ A -eq B ] and test do not evaluate A and B; [[ ]] does
            self._test_arithmetic(node, ctx, _text(node, ctx).startswith("[["))

    def _test_arithmetic(self, node: Node, ctx: _Ctx, double: bool) -> None:
        """``[[ A -eq B ]]`` evaluates A and B; ``[[ -v a[i] ]]`` and ``[ -v a[i] ]``
        evaluate ``i`` (``-R`` likewise), whatever variable the name comes from."""
        for expr in node.named_children:
            ops = [_text(c, ctx) for c in expr.named_children if c.type == "test_operator"]
            if double and expr.type == "binary_expression" and set(ops) & ARITHMETIC_TEST_OPS:
                self._arithmetic_parts([c for c in expr.named_children
                                        if c.type != "test_operator"], ctx)
            elif expr.type == "unary_expression" and ops in (["-v"], ["-R"]):
                self._tested_name(expr.named_children[-1], ctx, f"[ {ops[0]} ]")
            elif expr.type in ("binary_expression", "parenthesized_expression",
                               "unary_expression"):
                self._test_arithmetic(expr, ctx, double)

    def _tested_name(self, operand: Node, ctx: _Ctx, how: str) -> None:
        """The variable name ``-v``/``-R`` tests: a subscript in it is evaluated."""
        found = self._static(operand, ctx)
        if found is None:
            self.unnamed.append(f"{how} tests a name only known at run time (a subscript in "
                                "it would run commands)")
        for value in found or ():
            if "$(" in value or "`" in value:
                self.opaque.append(f"{how} evaluates shell code in a tested name")
            else:
                self._arithmetic_text(value.partition("[")[2], how)

    def _arithmetic_parts(self, nodes: Sequence[Node], ctx: _Ctx) -> None:
        for node in nodes:
            self._arithmetic_refs(node, ctx)
            self._arithmetic_sets(_text(node, ctx))

    def _arithmetic_refs(self, node: Node, ctx: _Ctx) -> None:
        t = node.type
        if t == "command_substitution":
            if not self._numeric_output(node, ctx):
                self.unnamed.append("an arithmetic context evaluates the output of a command "
                                    "(a subscript in it would run commands)")
            return
        if t in ("variable_name", "word") and re.fullmatch(r"[A-Za-z_]\w*", _text(node, ctx)):
            self._arithmetic_text(_text(node, ctx), "an arithmetic context")
            return
        if t == "raw_string" and ("$(" in _text(node, ctx) or "`" in _text(node, ctx)):
            self.opaque.append("an arithmetic context evaluates shell code in a string")
            return
        if t == "string_content" and re.search(r"\[[^]]*(?:\$\(|`)", _text(node, ctx)):
            self.opaque.append("an arithmetic context evaluates shell code in a string")
            return
        if t in ("simple_expansion", "expansion"):
            if _LENGTH.fullmatch(_text(node, ctx)):
                return  # ${#x}, ${#a[@]}: a count, digits whatever x holds
            found = self._static(node, ctx) if "[" in _text(node, ctx) else None
            for value in found or ():  # $(( ${a[0]} )): the element's text is evaluated
                self._arithmetic_text(value, "an arithmetic context")
            var = next((c for c in node.named_children
                        if c.type in ("variable_name", "special_variable_name")), None)
            sub = next((c for c in node.named_children if c.type == "subscript"), None)
            if var is None and sub is not None:  # ${a[i]} not known here: judged by a
                var = sub.child_by_field_name("name")
            if var is not None and found is None:
                self._arithmetic_text(_text(var, ctx), "an arithmetic context")
            return
        for child in node.named_children:
            self._arithmetic_refs(child, ctx)

    def _last_command(self, node: Node, ctx: _Ctx) -> tuple[str, list[str | None]]:
        """The program a substitution's output comes from (its last command) and its
        words' values (None: only known at run time); ("", []) when that is not one
        simple command."""
        prog, words = self._last_words(node, ctx)
        return prog, [w.value for w in words]

    def _last_words(self, node: Node, ctx: _Ctx) -> tuple[str, list[Word]]:
        """The program a substitution's output comes from (its last command) and its
        words; ("", []) when that is not one simple command."""
        inner = [c for c in node.named_children if c.type != "comment"]
        return self._statement_words(inner[0], ctx) if len(inner) == 1 else ("", [])

    def _statement_words(self, statement: Node, ctx: _Ctx) -> tuple[str, list[Word]]:
        """The program whose output a statement's output is (a pipeline's last stage, the
        redirected command) and its words; ("", []) when that is not one simple command."""
        last: Node | None = statement
        while last is not None and last.type in ("pipeline", "redirected_statement"):
            kids = [c for c in last.named_children if c.type == "command"]
            while last.type == "pipeline" and len(kids) > 1 and self._selects_lines(kids[-1],
                                                                                   ctx):
                kids.pop()  # git tag -l 'v*' | head -1: some of the lines the stage prints
            last = kids[-1] if kids else None
        if last is None or last.type != "command":
            return "", []
        name = last.child_by_field_name("name")
        words = [self._word(a, ctx) for a in last.children_by_field_name("argument")]
        return (program_name(self._word(name, ctx)) if name is not None else ""), words

    def _selects_lines(self, command: Node, ctx: _Ctx) -> bool:
        """``head -n 1``, ``tail -3``, ``sed -n 2p``, ``sed 1q``: prints some of the lines it
        reads, each whole."""
        name = command.child_by_field_name("name")
        words = [self._word(a, ctx).value for a in command.children_by_field_name("argument")]
        if name is None or None in words or any(c.type.endswith("redirect") for c in
                                                 command.named_children):
            return False
        prog, given = program_name(self._word(name, ctx)), " ".join(str(w) for w in words)
        if prog in ("head", "tail"):
            return bool(_LINE_COUNT.fullmatch(given))
        return prog == "sed" and bool(_LINE_PICK.fullmatch(given))

    def _names_output(self, node: Node, ctx: _Ctx) -> bool:
        """A substitution that prints object names only (``constructs.names_printed``)."""
        return names_printed(*self._last_command(node, ctx))

    def _ids_output(self, node: Node, ctx: _Ctx) -> bool:
        """A substitution that prints hex object ids only (``constructs.ids_printed``)."""
        return node.type == "command_substitution" and ids_printed(
            *self._last_command(node, ctx))

    def _columns(self, stages: Sequence[Node], ctx: _Ctx) -> Columns:
        """The numeric columns of what ``stages`` print (``columns.py``): those of the last
        producer, through filters that keep lines (``sort | uniq -c | sort -rn``)."""
        found = NONE
        for stage in stages:
            program, words = self._statement_words(stage, ctx)
            found = columns_after(program, words, found) if program else NONE
        return found

    def _fed_columns(self, redirect: Node, ctx: _Ctx) -> Columns:
        """``< <(git diff --numstat)``: the numeric columns of what the substitution
        prints; none for a file or a here-string."""
        dest = redirect.child_by_field_name("destination")
        if redirect.type != "file_redirect" or dest is None or \
                dest.type != "process_substitution" or not _text(dest, ctx).startswith("<"):
            return NONE
        inner = [c for c in dest.named_children if c.type != "comment"]
        if len(inner) != 1:
            return NONE
        stages = [c for c in inner[0].named_children if c.type != "comment"] if \
            inner[0].type == "pipeline" else inner
        return self._columns(stages, ctx)

    def _numeric_output(self, node: Node, ctx: _Ctx) -> bool:
        """A substitution whose last command prints a number (``$(wc -l < f)``), or a list
        whose every command prints a number or nothing (``$(grep -c x "$f" || true)``)."""
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) == 1 and inner[0].type == "list":
            return all(self._prints_number(part, ctx) for part in inner[0].named_children
                       if part.type != "comment")
        return len(inner) == 1 and self._prints_number(inner[0], ctx, alone=True)

    def _prints_number(self, statement: Node, ctx: _Ctx, alone: bool = False) -> bool:
        """One command of a list: it prints numbers (``wc -l < f | tr -d ' '``), or nothing
        (``true``, ``:``)."""
        stages = [c for c in statement.named_children if c.type != "comment"] if \
            statement.type == "pipeline" else [statement]
        if self._columns(stages, ctx).count == EVERY:
            return True
        if alone:
            return False
        program, words = self._statement_words(statement, ctx)
        return (
            program in (":", "true", "false") and not words) or (
            program == "echo" and bool(words) and all(
                w.value is not None and w.value.isdigit() for w in words))  # || echo 0

    def _opaque_name(self, node: Node, ctx: _Ctx) -> str | None:
        """Why a command name that does not decode is hidden by an unmodelled construct."""
        if _descendants(node, "process_substitution"):
            return "a process substitution in command position runs a file made at run time"
        for sub in _descendants(node, "expansion"):
            text = _text(sub, ctx)
            if _simple_braced(sub) or re.fullmatch(
                    r"\$\{([A-Za-z_]\w*)(:?[-=+])([^$`'\"\\{}]*)\}", text):
                continue
            if any(c.type == "subscript" for c in sub.children):
                return f"the array element {text} is not known statically"
            return f"the expansion {text} in command position is not modelled"
        if self.ifs is None and _has_type(node, ("simple_expansion", "expansion")):
            return "IFS is set to a value only known at run time"
        return None

    def _heredoc(self, node: Node, ctx: _Ctx) -> None:
        """``cat <<E | bash``: the pipeline after the here-doc's start reads its output.
        An unquoted body's backquotes run, and the grammar does not read them: each is
        judged as the command it holds."""
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        quoted = start is not None and _text(start, ctx)[:1] in ("'", '"', "\\")
        for child in node.named_children:
            self._visit(child, replace(ctx, piped=True, stdin=None, numbered=NONE)
                        if child.type == "pipeline" else ctx)
            if child.type == "heredoc_body" and not quoted:
                self._backquoted(_text(child, ctx), ctx)

    def _backquoted(self, text: str, ctx: _Ctx) -> None:
        """The commands of backquoted substitutions in text bash expands (a here-doc)."""
        bare = re.sub(r"\\.", "", text, flags=re.S)
        if bare.count("`") % 2:
            self.problems.append("a here-doc has an unclosed backquote")
        for m in _BACKQUOTED.finditer(text):
            self.run(re.sub(r"\\([`$\\])", r"\1", m.group(1)), "a here-doc's `..`",
                     ctx.depth + 1, shell=ctx.shell)

    def _declared_as_words(self, words: list[Word]) -> None:
        """``declare``, ``export``... the grammar read as a plain command (after ``!``,
        ``time``, ``command``, ``builtin``): each ``NAME=VALUE`` may now hold VALUE; a name
        or value only known at run time makes every variable unknown."""
        for w in words:
            m = re.fullmatch(r"([A-Za-z_]\w*)(\+?)=(.*)", w.value or "", re.S)
            if w.value is None or (m is None and not w.value.startswith("-")
                                   and not re.fullmatch(r"[A-Za-z_]\w*", w.value)):
                self.taint_all = True
            elif m is not None and not m.group(2):
                self.arrays.pop(m.group(1), None)
                self._may_hold(m.group(1), [m.group(3)])
            elif m is not None:
                self.unknown.add(m.group(1))

    def _assigned_as_words(self, words: list[Word]) -> None:
        """Assignments the grammar read as a program (after ``time``): each leading
        ``NAME=VALUE`` may now hold VALUE; an element or an append makes NAME unknown."""
        for w in words:
            m = _ASSIGNMENT_WORD.fullmatch(w.value or "")
            if m is None:
                return
            var, index, append, value = m.groups()
            if index or append:
                self.maps.pop(var, None)
                self.arrays.pop(var, None)
                self.unknown.add(var)
            else:
                self.arrays.pop(var, None)
                self._may_hold(var, [value])

    def _unset_functions(self, words: list[Word]) -> None:
        """``unset -f NAME`` removes a function, and so does ``unset NAME`` when no variable
        has that name: a call after it runs the program (``rm() {..}; unset -f rm; rm f``).
        A name only known at run time may be any function's."""
        flags = "".join(w.value[1:] for w in words if w.value and w.value.startswith("-"))
        if "v" in flags and "f" not in flags:
            return
        names = [w.value for w in words if not (w.value or "").startswith("-")]
        for name in list(self.bodies) if None in names else names:
            if name is not None and ("f" in flags or not self._static_variable(name)):
                self.bodies.pop(name, None)

    def _unset_elements(self, node: Node, w: Word, ctx: _Ctx) -> None:
        """``unset "a[$k]"`` with ``k`` only known at run time, or holding several values:
        bash evaluates an indexed array's subscript as arithmetic (a ``$(..)`` in it runs),
        and expands a map's key again."""
        name = w.text.lstrip("\"'").partition("[")[0]
        values = self._static(node, ctx)
        if values is None:
            self.unnamed.append(f"unset {w.text}: the subscript, only known at run time, is "
                                "evaluated (a substitution in it would run)")
            return
        for value in values:
            index = value.partition("[")[2].rpartition("]")[0]
            if name not in self.assoc:
                self._arithmetic_text(index, "unset of an element")
            elif re.search(r"[$`]", index):
                self.run(f": {index}", "unset of an element's key", ctx.depth + 1,
                         shell=ctx.shell)

    def _unset_subscript(self, name: str, index: str, w: Word, ctx: _Ctx) -> None:
        """``unset 'a[i]'`` evaluates i; ``unset "m[$k]"`` expands a map's key again."""
        if index and name not in self.assoc:
            self._arithmetic_text(index.rpartition("]")[0], "unset of an element")
        elif index and re.search(r"[$`]", index):
            self.run(f": {index.rpartition(']')[0]}", "unset of an element's key",
                     ctx.depth + 1, shell=ctx.shell)  # again, as a word
        elif w.value is None and re.search(r"\w\[", w.text) and \
                w.text.partition("[")[0].strip("'\"") in self.assoc:
            self.unnamed.append(f"unset {w.text}: the key, only known at run time, is "
                                "expanded again (a substitution in it would run)")

    def _unset(self, node: Node, ctx: _Ctx) -> None:
        """``unset c``: ``$c`` may now expand to nothing (the next word becomes the program);
        ``unset 'a[0]'`` leaves an array whose elements are no longer known."""
        self._children(node, ctx)  # unset x$(..): the words are expanded first
        words = [Word.of(_text(c, ctx)) if c.type == "variable_name" else self._word(c, ctx)
                 for c in node.named_children]
        self._unset_functions(words)
        flags = "".join(w.value[1:] for w in words if w.value and w.value.startswith("-"))
        if "f" in flags:
            return
        for child, w in zip(node.named_children, words, strict=True):
            if w.value is None and re.match(r"[\"']?[A-Za-z_]\w*\[", w.text):
                self._unset_elements(child, w, ctx)
            name, _, index = (w.value or "").partition("[")
            if name == "IFS" and not index:
                self.ifs = " \t\n"  # unset IFS: the default splitting again
                self.known.pop("IFS", None)
                self.unknown.discard("IFS")
            elif not index and is_dangerous_variable(name):  # unset PATH: ./ls runs for ls
                self._entry([Word.of(f"unset {name}")], "exec", "ask",
                            [f"unsetting {name} changes what programs run"], "", ctx)
            if not index and name in self.cased:  # unset x: its -l/-u/-c goes with it
                self._set_case(name, "?" if self.conditional else "+")
            if not index:
                self._attribute_off(name, "n" if "n" in flags else "i")
            self._unset_subscript(name, index, w, ctx)
            if w.value is None:
                self.taint_all = True
            elif w.value == "IFS":
                pass  # unset IFS: the default splitting, set above (not an empty IFS)
            elif "[" in w.value or name in self.arrays:
                self._set_array(name, None)
            elif name in self.known:
                self.known[name] = list(dict.fromkeys([*self.known[name], ""]))
                self.maybe_unset.add(name)  # ${x-w} gives w now
            elif name not in self.unknown and name not in self.loops and re.fullmatch(
                    r"[A-Za-z_]\w*", name) and not self.taint_all:
                before = self.env.get(name)  # unset DIR: empty now, or as it was
                self.known[name] = [""] if before is None else [before, ""]
                self.maybe_unset.add(name)
            if w.value is not None and not index:
                self._caller_local_gone(name)

    def _caller_local_gone(self, name: str) -> None:
        """``unset x`` in a called function, of an ``x`` a caller made local: that local
        goes, and the value it shadowed shows again (``o=-delete; g(){ unset o; }; f(){
        local o=-print; g; find src $o; }``). A local of the function itself stays unset."""
        if name in self.call_locals:
            return
        for held in self.shadow_stack:
            if name in held:
                found = held[name]
                if found is None:
                    self._unknown_now(name)
                else:
                    self._may_hold(name, found, merge=True)

    def _comment(self, node: Node, ctx: _Ctx) -> None:
        return None

    def _substitution(self, node: Node, ctx: _Ctx) -> None:
        """``$(..)``, ``<(..)``: inner commands read the outer input; ``>(..)``: they read what
        the outer command writes into it, like the next stage of a pipeline."""
        fed = node.type == "process_substitution" and _text(node, ctx).startswith(">")
        start = len(self.entries)
        self._in_subshell(node, replace(ctx, piped=fed, stdin=None, numbered=NONE))
        if node.type == "command_substitution" and self._numeric_output(node, ctx):
            self.counts.add(_text(node, ctx))  # let n+=$(wc -l < f): a number
        if node.type == "command_substitution" and self._names_output(node, ctx):
            self.names_out.add(_text(node, ctx))
        if any(e["risk"] == "network" for e in self.entries[start:]):
            self.downloads.add(_text(node, ctx))

    def _pipeline(self, node: Node, ctx: _Ctx) -> None:
        stages = [c for c in node.named_children if c.type != "comment"]
        printed: str | None = None
        decoded = False
        found: list[tuple[int, int]] = []  # per stage: the credentials found before, after
        start = len(self.entries)
        for i, child in enumerate(stages):
            if i == len(stages) - 1:
                self.last_stage = len(self.entries)  # what it prints is the pipeline's output
            before_stage = len(self.secrets)
            # the first stage reads what the pipeline reads (a | b | c || d parses as
            # a | (b | c || d): b reads a's lines)
            listed = self._listed_before(stages, i, ctx) if i > 0 else ctx.listed
            self.decoding = False
            printed = self._printed(stages[i - 1], ctx, printed) if i > 0 else None
            decoded = decoded or self.decoding  # base64 -d | bash: never shown as code
            stdin = (None if printed is None else Word(printed, "|", "subst") if decoded else
                     Word.of(printed)) if i > 0 else ctx.stdin
            fetched = ctx.fetched or any(e["risk"] == "network" for e in self.entries[start:])
            staged = replace(ctx, piped=i > 0 or ctx.piped, listed=listed, stdin=stdin,
                             fetched=fetched,  # curl .. | tee f: f holds the download
                             numbered=self._columns(stages[:i], ctx) if i > 0 else
                             ctx.numbered)
            before = self._static_argv(stages[self._source(stages, i, ctx)], ctx) if i else None
            after = self._static_argv(child, ctx) if before is not None else None
            why = pipe_discards(before, after) if before and after else None
            if why is None and before and after and not patch_files(after) and (
                    source := self._diff_source_of(before)) is not None:
                why = reverts(after, source)  # git diff > p; cat p | git apply -R
            if why is not None:  # git diff | git apply -R: the two together discard work
                self.floors.append(("deny", why))
            if i and (soaked := self._sponged(stages[:i], child, ctx, printed is not None)):
                self.floors.append(("deny", soaked))
            if len(stages) > 1 and (i < len(stages) - 1 or "lastpipe" not in ctx.src.decode(
                    "utf-8", "surrogateescape")):
                self._in_subshell(child, staged, visit=True)  # a stage runs in a subshell
            else:
                self._visit(child, staged)
            found.append((before_stage, len(self.secrets)))
        self._secrets_summarized(stages, found, ctx)

    def _sponged(self, upstream: Sequence[Node], stage: Node, ctx: _Ctx, shown: bool) -> str:
        """``git log | sponge a.txt``: sponge soaks up the pipeline, then replaces its file
        whole (``-a`` appends), like ``>``: what the file held is lost, whether or not the
        command line shows what replaces it (``echo x | sponge f``, ``shown``). A file an
        earlier stage names (``sort f | sponge f``) is edited in place, like ``sed -i``."""
        argv = self._static_argv(stage, ctx)
        if not argv or program_name(argv[0]) != "sponge" or any(
                w.value is None or w.value.startswith("-") for w in argv[1:]) or len(argv) != 2:
            return ""  # sponge -a f, sponge "$f": a write, judged as one
        texts = [_text(node, ctx) for node in upstream]
        named = {path for text in texts for token in shlex.split(text, posix=True)
                 if not token.startswith("-") for path in self.resolved_files(Word.of(token))
                 } if _splits(texts) else None
        target = argv[1]
        for path in self.resolved_files(target):
            why = self.holds_work(path) if named is not None and path not in named else ""
            if why:
                return f"sponge {target.shown} replaces {target.shown}, {why}, " + (
                    "whose content is lost" if shown else
                    "with output the command line does not show")
        return ""

    def _secrets_summarized(self, stages: Sequence[Node], found: list[tuple[int, int]],
                            ctx: _Ctx) -> None:
        """``env | wc -l``, ``env | grep -c PATH``: credentials a stage prints into one that
        prints none of its input (a count, a digest, a status) never reach the output."""
        for i, (before, after) in reversed(list(enumerate(found))):
            if after > before and self._summarized_after(stages, i, ctx):
                del self.secrets[before:after]

    def _summarized_after(self, stages: Sequence[Node], i: int, ctx: _Ctx) -> bool:
        """Whether what stage ``i`` prints reaches, through filters that only drop lines
        (``head``, ``sort``), a stage that prints none of it."""
        for stage in stages[i + 1:]:
            argv = self._static_argv(stage, ctx)
            if argv is None:
                return False
            if prints_none_of_its_input(argv) or keeps_named_variables(argv):
                return True
            if not keeps_lines(argv):
                return False
        return False

    def _if(self, node: Node, ctx: _Ctx) -> None:
        """``if (( dry )); then echo ..; else rm ..; fi`` after ``dry=1``: where the one
        condition is decided by values known here (``ShellValues._decided``), the branch
        that cannot run is not judged; otherwise every branch is. Only in the command itself,
        which bash runs: ``sh -c`` code (dash) fails ``[[`` and ``((`` and goes the other way."""
        conditions = [c for c in node.children_by_field_name("condition") if c.is_named]
        decided = self._decided(_text(conditions[0], ctx)) if len(conditions) == 1 and \
            not ctx.depth else None  # nested code may run in sh, where [[ and (( fail
        if decided is None:
            self._generic(node, ctx)
            return
        self._visit(conditions[0], ctx)
        if decided:
            for child in _branch_body(node):
                self._visit(child, ctx)
            return
        for clause in node.named_children:
            if clause.type in ("elif_clause", "else_clause"):
                self._visit(clause, ctx)

    def _list(self, node: Node, ctx: _Ctx) -> None:
        """``a && b``, ``a || b``: what follows the first command may not run."""
        self._list_outcome(node, ctx)

    def _list_outcome(self, node: Node, ctx: _Ctx) -> bool | None:
        """Walk ``a && b`` / ``a || b``; whether it succeeds, where known. A condition
        decided by values known here (``[ -n "$target" ]`` after ``target=""``) decides
        whether what follows runs: ``[ -n "" ] && rm -rf "$target"`` never reaches rm. Only
        in the command itself, as ``_if``; any other command's status is not known (``echo``
        fails when its output is closed)."""
        kids = [c for c in node.named_children if c.type != "comment"]
        ops = [c.type for c in node.children if c.type in ("&&", "||")]
        if len(kids) != 2 or len(ops) != 1 or ctx.depth:
            for i, child in enumerate(node.named_children):
                with self._may_not_run() if i else nullcontext():
                    self._visit(child, ctx)
            return None
        first = self._outcome(kids[0], ctx)
        if first is (ops[0] == "||"):
            return first  # true || b, false && b: b never runs
        if first is None:
            with self._may_not_run():
                self._visit(kids[1], ctx)
            return None
        return self._outcome(kids[1], ctx)

    def _outcome(self, node: Node, ctx: _Ctx) -> bool | None:
        if node.type == "list":
            return self._list_outcome(node, ctx)
        decided = self._decided(_text(node, ctx)) if node.type in (
            "test_command", "command", "compound_statement") else None
        self._visit(node, ctx)
        return decided

    @contextmanager
    def _may_not_run(self, ran: Callable[[], bool] | None = None) -> Iterator[None]:
        """Commands that may not run (a branch, a loop, what follows ``&&``, a trap): a
        ``cd`` there may not either, and what they change joins the values before them.
        When ``ran`` says afterwards that they did run (each pass of a loop over plain words
        with no ``break``), what they set is set for sure; still, the values may be either."""
        self.conditional += 1
        before = self._values()
        try:
            yield
        finally:
            self.conditional -= 1
            kept = set(self.maybe_unset) if ran is not None and ran() else None
            self._join(before)
            if kept is not None:
                self.maybe_unset &= kept | before.maybe_unset

    def _values(self) -> _Values:
        return _Values(dict(self.known), set(self.unknown), dict(self.arrays),
                       {k: dict(v) for k, v in self.maps.items()}, dict(self.refs),
                       self.positional, self.ifs, set(self.numeric), set(self.maybe_unset),
                       dict(self.loops), set(self.blankless), set(self.made_temps),
                       set(self.dashless_vars))

    def _join(self, before: _Values) -> None:
        """After commands that may not have run (a branch, a loop, what follows ``&&``):
        each value they changed may still be the one before. Set, appended, shifted or
        re-targeted alike, by whatever builtin: variables may hold either value; positional
        words and maps changed there are only known at run time, a name reference
        re-targeted there is refused (one made there is kept: assigning through it is
        judged as assigning its target)."""
        self.unknown |= before.unknown
        for var in list(self.known):
            old = before.known.get(var)
            if var in self.unknown:
                self.known.pop(var)
            elif old is not None and old != self.known[var]:
                self._may_hold(var, old)
            elif old is None and var in self.env:
                self._may_hold(var, [self.env[var]])
        self.maybe_unset |= before.maybe_unset
        self.maybe_unset.update(v for v in [*self.known, *self.loops] if v not in before.known
                                and v not in before.loops and v not in before.unknown
                                and v not in self.env and v not in ALWAYS_SET)
        for var, old in before.known.items():  # for x in ..: the loop's words hold it now
            if var not in self.known and var not in self.unknown:
                self._may_hold(var, [*old, *self.loops.get(var, [])])
        self._join_arrays(before)
        for var in [v for v, entries in self.maps.items()  # changed, or made here
                    if before.maps.get(v) != entries]:
            self.maps.pop(var)
            self.unknown.add(var)
        for ref in before.refs:  # re-targeted or dropped: its target is known at run time
            if before.refs[ref] != self.refs.get(ref):
                self.opaque.append(f"the name reference {ref} may or may not have been "
                                   "re-targeted")
        if self.positional != before.positional:
            self.positional = None
        if self.ifs != before.ifs:
            self.ifs = None
        self.numeric = {v for v in self.numeric if v in before.numeric or (
            v not in before.known and v not in before.unknown) or (  # n=0; .. ((n++))
                v in before.known and all(DECIMAL.fullmatch(x) or not x  # '' counts as 0
                                          for x in before.known[v]))}
        self.blankless = {v for v in self.blankless if v in before.blankless or (
            v not in before.known and v not in before.unknown)}
        self.made_temps &= before.made_temps  # made where it may not have run: the old value
        self.dashless_vars = {v for v in self.dashless_vars if v in before.dashless_vars or (
            v not in before.known and v not in before.unknown)}

    def _join_arrays(self, before: _Values) -> None:
        """An array changed where that may not have run holds either list; one made there
        may still be what the name held (a value, or nothing: ``${a[@]}`` of no array)."""
        for var, alternatives in list(self.arrays.items()):
            was = before.arrays.get(var)
            if was is None and var not in before.unknown:
                was = [[v] for v in before.known[var]] if var in before.known else \
                    [[self.env[var]]] if var in self.env else [[]]
            if was is not None and was != alternatives:
                merged = [*was, *(a for a in alternatives if a not in was)]
                if len(merged) > MAX_VALUES:
                    self.arrays.pop(var)
                    self.unknown.add(var)
                else:
                    self.arrays[var] = merged

    def _in_subshell(self, node: Node, ctx: _Ctx, visit: bool = False) -> None:
        """``( .. )``, ``$( .. )``, a pipeline's stage: a ``cd``, ``set --``, ``IFS=`` or a
        function defined inside does not reach the commands after it (the folder it left
        stays a base paths are judged against; variables it set are kept as values they
        may hold; a function's name stays one the command defines)."""
        outer, words, splits = list(self.cwds), (self.positional, self.args_given), self.ifs
        bodies, maps, folders = dict(self.bodies), dict(self.maps), (self.oldpwd, self.pushed)
        self.pushed, hashed, maybe = list(self.pushed), dict(self.hashed), set(self.maybe_defined)
        values, exported = self._values(), set(self.exported_vars)
        ifs_value, ifs_unknown = self.known.get("IFS"), "IFS" in self.unknown
        attributes = self._attributes()
        if visit:
            self._visit(node, ctx)
        else:
            self._children(node, ctx)
        self._join(values)
        self.known.pop("IFS", None)  # IFS=, in $( ): the words after it split as before
        self.known.update({"IFS": ifs_value} if ifs_value is not None else {})
        (self.unknown.add if ifs_unknown else self.unknown.discard)("IFS")
        self.cwds = outer
        (self.positional, self.args_given), self.ifs, self.bodies = words, splits, bodies
        self.maps, (self.oldpwd, self.pushed), self.hashed = maps, folders, hashed
        self.maybe_defined, self.exported_vars = maybe, exported
        self._restore_attributes(attributes, values.refs)

    def _attributes(self) -> tuple[dict[str, str], set[str], set[str], set[str], set[str]]:
        return (dict(self.cased), set(self.integers), set(self.maybe_integers),
                set(self.readonly), set(self.assoc))

    def _restore_attributes(self, attributes: tuple[dict[str, str], set[str], set[str],
                                                    set[str], set[str]],
                            refs: dict[str, str]) -> None:
        """A subshell's ``declare -u x``, ``-i``, ``-r``, ``-A`` or ``-n`` ends with it
        (``(declare -u o); o=-delete`` keeps -delete): the attributes before, and no name
        reference made there."""
        (self.cased, self.integers, self.maybe_integers, self.readonly,
         self.assoc) = attributes
        for ref in [r for r in self.refs if r not in refs]:
            self.refs.pop(ref)

    def _listing(self, node: Node, ctx: _Ctx, whole: bool = False) -> tuple[str, ...]:
        """The directories a pipeline stage (or a whole pipeline) lists paths under (``git
        ls-files``, ``ls | head -n1``), or (). ``whole``: its consumer splits at NUL only
        (``xargs -0``), so a name with a blank stays one path."""
        if node.type == "pipeline":
            stages = [c for c in node.named_children if c.type != "comment"]
            return self._listed_before(stages, len(stages), ctx)
        body = node.child_by_field_name("body") if node.type == "redirected_statement" else None
        if body is not None and all(_QUIET_ERRORS.fullmatch(_text(r, ctx)) for r in
                                    node.children_by_field_name("redirect")):
            node = body  # find build -name '*.jar' 2>/dev/null: the same lines, no errors
        argv = self._static_argv(node, ctx)
        if argv is None:
            return ()
        dirs = tuple(listed_dirs(argv) or (["."] if self._lists_status(argv) else ()))
        dashed = self._dashed_entry(bare_folders(argv, list(dirs))) if dirs else None
        if dashed is not None:  # ls | xargs sort beside a file --output=a.txt
            self.unnamed.append(f"{_text(node, ctx)} prints {dashed}, which the program it "
                                "feeds reads as an option")
            return ()
        found = self._misread_entry(dirs, argv, not whole) if dirs else None
        if found is not None and found[0] == "cut":  # beside a folder "x " holding etc/passwd
            self.floors.append(("ask", f"{_text(node, ctx)} lists {found[1]!r}, which the "
                                       "command it feeds may cut into other paths"))
            return ()
        if found is not None:  # find . | xargs cat beside leak -> /etc/passwd
            self.floors.append(("ask", f"{_text(node, ctx)} lists {found[1]!r}, a link that "
                                       "may lead out of the workspace"))
            return ()
        return dirs

    def _misread_entry(self, dirs: Sequence[str], argv: list[Word],
                       cut: bool) -> tuple[str, str] | None:
        """An entry under ``dirs`` that the consumer of the listing ``argv`` would take for
        another path (``listings.misread_entry``), remembered for this command."""
        folders = sorted({os.path.normpath(os.path.join(base, d)) for base in self._current()
                          for d in dirs})
        key = (tuple(folders), self.made.changes, " ".join(map(str, (cut, *argv))))
        if key not in self.misread:
            ws = os.path.realpath(self.ws)
            made = [*self.made.files, *self.made.dirs, *self.made.links, *self.made.copies]
            self.misread[key] = misread_entry(
                [self.made.resolve(f, copies=True) for f in folders], made, self.made.links,
                ws, links_listed(argv, ws), cut)
        return self.misread[key]

    def _listed_before(self, stages: Sequence[Node], i: int, ctx: _Ctx,
                       split: bool = False) -> tuple[str, ...]:
        """What the stages before ``i`` list, through filters that print some of their
        input lines unchanged (``find . -name '*.py' | head | xargs wc -l``) and through
        ``xargs grep -l``, which prints some of the names it reads. ``split``: a later
        consumer cuts names at blanks."""
        j = self._source(stages, i, ctx, status_paths)
        consumer = self._static_argv(stages[i], ctx) if i < len(stages) else None
        whole = ((consumer is not None and ((program_name(consumer[0]) == "xargs" and
                                             xargs_splits_at_nul(consumer[1:])) or
                                            _nul_filter(consumer))) or (
            i < len(stages) and _reads_nul_records(stages[i], ctx))) and not split
        if stages[j].type == "pipeline":
            return ()
        source = self._static_argv(stages[j], ctx)
        if j > 0 and source is not None and program_name(source[0]) == "xargs" and \
                xargs_prints_names(source[1:]):  # git ls-files | xargs grep -l x | xargs wc
            return self._listed_before(stages, j, ctx, split=not whole)
        cuts = any((argv := self._static_argv(s, ctx)) is not None and status_paths(argv)
                   for s in stages[j + 1:i])
        if cuts and (source is None or not self._lists_status(source)):
            return ()  # cut -c4- of what find prints may begin with / or ../
        return self._listing(stages[j], ctx, whole)

    def _lists_status(self, argv: list[Word]) -> bool:
        """``git status --porcelain`` or ``-s``, whose lines are ``XY PATH``: a short
        format's paths are relative to the folder it runs in (``../x`` from a subfolder),
        which stays in the workspace only where the workspace is the repository."""
        status = status_listing(argv)
        return status == "root" or (status == "here" and os.path.isdir(
            os.path.join(self.ws, ".git")))

    def _source(self, stages: Sequence[Node], i: int, ctx: _Ctx,
                fields: Callable[[list[Word]], bool] = lambda argv: False) -> int:
        """The stage before ``i`` whose lines reach it, through filters that print some of
        their input lines unchanged (``find . | head | xargs``, ``git diff | head | git
        apply -R``) or, given ``fields``, one part of each line."""
        j = i - 1
        while j > 0 and (argv := self._static_argv(stages[j], ctx)) is not None and (
                keeps_lines(argv) or _passes_lines(argv) or fields(argv)):
            j -= 1
        return j

    def _static_argv(self, node: Node, ctx: _Ctx) -> list[Word] | None:
        """A simple command's words, with no redirection (which could feed it other input)."""
        if node.type != "command" or any(c.type.endswith("redirect")
                                         for c in node.named_children):
            return None
        name = node.child_by_field_name("name")
        if name is None:
            return None
        return [self._word(name, ctx)] + [self._word(a, ctx)
                                          for a in node.children_by_field_name("argument")]

    def _dashed_entry(self, dirs: Sequence[str]) -> str | None:
        """A name starting with ``-`` in one of the folders ``dirs`` whose entries a listing
        prints bare (``listings.bare_folders``), now or made by the command: it reaches the
        program the listing feeds as an option."""
        for base in self._current():
            for d in dirs:
                folder = os.path.normpath(os.path.join(base, d))
                names = [n for n, _ in self.made.entries(folder)]
                try:
                    with os.scandir(self.made.resolve(folder, copies=True)) as it:
                        names += [entry.name for entry in it]
                except OSError:
                    pass
                found = next((n for n in names if n.startswith("-")), None)
                if found is not None:
                    return found
        return None

    def _function(self, node: Node, ctx: _Ctx) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None:
            fname = _text(name, ctx)
            if body is not None and _runs_arguments(body, ctx):
                self.runs_args.add(fname)
            self.functions.add(fname)
            if body is not None and _starts_copies(body, fname, ctx):
                self.fork_bombs.add(fname)
            if body is not None and fname not in self.fork_bombs:
                self.bodies[fname] = (body, ctx)  # judged where it is called
                self.redirects[fname] = [c for c in node.named_children
                                         if c.type.endswith("redirect")]
                if self.conditional:
                    self.maybe_defined.add(fname)
                else:
                    self.maybe_defined.discard(fname)
                self.definitions.append((body, ctx))
                return
            self.defined.add(fname)
        if body is not None:
            outer = (self.argv0, self.positional)
            self.argv0, self.positional = "bash", None
            self._visit(body, replace(ctx, piped=False, stdin=None, numbered=NONE))
            self.argv0, self.positional = outer

    def _redirected(self, node: Node, ctx: _Ctx) -> None:
        stdin, numbered = ctx.stdin, ctx.numbered
        body = node.child_by_field_name("body")
        for child in node.named_children:  # a here-string has no field name in the grammar
            if child.type.endswith("redirect") and (body is None or child.id != body.id):
                given = self._stdin_of(child, ctx)
                stdin, numbered = (given, self._fed_columns(child, ctx)) if given else (
                    stdin, numbered)
        silent = body is None or self._writes_nothing(body, ctx) or self._opens_only(node, ctx)
        read = self._read_back(node, ctx)
        moves = body is not None and self._moves_folder(body, ctx)  # before the walk moves
        fetched = False
        if body is not None:  # first: what it ran tells whether it printed anything
            start = len(self.entries)
            self._visit(body, replace(ctx, stdin=stdin, numbered=numbered))
            fetched = any(e["risk"] == "network" for e in self.entries[start:])
            if body.type == "pipeline":  # a | b > f: only b writes to f
                start = max(start, self.last_stage)
            silent = silent or _ran_silently(self.entries[start:])
        fed = stdin.value if stdin is not None else None  # cat > f <<'E': the here-doc
        writer = body  # a && b > f: the grammar hangs the redirection on the list; bash on b
        while writer is not None and writer.type == "list" and writer.named_children:
            writer = writer.named_children[-1]
        printed = self._printed(writer, ctx, fed) if writer is not None else None
        for child in node.named_children:
            if body is None or child.id != body.id:
                self._visit(child, replace(ctx, truncate=silent, read_back=read,
                                           printed=printed, moves=moves, fetched=fetched))
        if writer is not None and (argv := self._static_argv(writer, ctx)) is not None:
            self._diff_redirects(node, argv, ctx)

    def _redirect_wrote(self, word: Word, op: str, ctx: _Ctx) -> None:
        """What later commands see of a file a redirection wrote (a download, when the
        command writing it uses the network)."""
        if ctx.fetched:
            self.fetched.add(_written_as(word))
        if word.value in NULL_DEVICES:
            return  # > /dev/null: nothing is kept, nothing a later program may read
        if word.value:
            self._written(word.value)
            self._wrote(os.path.normpath(word.value), op, ctx.printed)
        else:
            self.written_unknown.add(unquoted_text(word.text))

    def _diff_redirects(self, node: Node, argv: list[Word], ctx: _Ctx) -> None:
        """``git diff > p`` fills p with the working tree's diff; ``patch -R < p`` applies
        the one in p (``_patch_sources``)."""
        reversed_diff = worktree_diff(argv)
        for redirect in node.named_children:
            dest = redirect.child_by_field_name("destination")
            if redirect.type != "file_redirect" or dest is None:
                continue
            op = _redirect_op(redirect, ctx)
            if op == "<" and dest.type == "process_substitution":  # patch -R < <(git diff)
                inner = [c for c in dest.named_children if c.type != "comment"]
                before = self._static_argv(inner[0], ctx) if len(inner) == 1 else None
                why = pipe_discards(before, argv) if before else None
                if why is not None:
                    self.floors.append(("deny", why))
                continue
            key = self._diff_file_key(self._word(dest, ctx).value)
            if reversed_diff is not None and key and op in (">", ">|", "&>") and \
                    1 in _descriptors(redirect, op, ctx):
                self.diff_files[key] = reversed_diff
            elif reversed_diff is None and key in self.diff_files and op == "<" and \
                    not patch_files(argv) and (why := reverts(argv, self.diff_files[key])):
                self.floors.append(("deny", why))

    def _diff_file_key(self, value: str | None) -> str | None:
        if value is None or len(self.cwds) != 1 or self.cwds[0] is None:
            return None
        return os.path.normpath(os.path.join(self.cwds[0], value))

    def _git_aliased(self, argv: list[Word]) -> list[Word]:
        """``git config alias.co 'checkout --'; git co a.txt``: a later git command runs
        with the aliases set before it, as ``git -c alias.co=.. co`` (judged by the alias)."""
        if not argv or argv[0].value is None or program_name(argv[0]) != "git":
            return argv
        setting = configured_alias(argv)
        if setting is not None:
            self.git_aliases.append(setting)
            return argv
        given = [w for a in self.git_aliases for w in (Word.of("-c"), Word.of(a))]
        return [argv[0], *given, *argv[1:]] if given else argv

    def _patch_sources(self, argv: list[Word]) -> None:
        """``git diff --output=p; git apply -R p``, ``git apply -R <(git diff)``: the patch
        applied is the working tree's own diff, so applying it reversed discards it."""
        reversed_diff = worktree_diff(argv)
        if reversed_diff is not None:
            for value in (w.value or "" for w in argv[1:]):
                if value.startswith("--output=") and (
                        key := self._diff_file_key(value.split("=", 1)[1])):
                    self.diff_files[key] = reversed_diff
            return
        for w in patch_files(argv):
            source = self._diff_source(w)
            if source is not None and (why := reverts(argv, source)):
                self.floors.append(("deny", why))

    def _diff_source_of(self, argv: list[Word]) -> bool | None:
        """``cat p`` of one file holding the working tree's diff: whether it is reversed."""
        if program_name(argv[0]) != "cat" or len(argv) != 2:
            return None
        return self._diff_source(argv[1])

    def _diff_source(self, w: Word) -> bool | None:
        """Whether the patch file ``w`` holds the working tree's diff (reversed or not)."""
        if w.value is None and w.text.startswith("<(") and w.text.endswith(")"):
            try:
                inner = shlex.split(w.text[2:-1])
            except ValueError:
                return None
            return worktree_diff([Word.of(t) for t in inner])
        key = self._diff_file_key(w.value)
        return self.diff_files.get(key) if key else None

    def _opens_only(self, node: Node, ctx: _Ctx) -> bool:
        """``exec 3>a.txt``: exec without a program only opens files, so ``>`` empties one
        that exists (a new log file it creates is not a loss)."""
        body = node.child_by_field_name("body")
        if body is None or body.type != "command":
            return False
        name = body.child_by_field_name("name")
        if name is None or _text(name, ctx) != "exec" or any(
                not _fd_variable(a, ctx) for a in body.children_by_field_name("argument")):
            return False
        base = self.cwds[-1] or self.ws
        for redirect in node.children_by_field_name("redirect") or node.named_children:
            dest = redirect.child_by_field_name("destination") \
                if redirect.type == "file_redirect" else None
            value = self._word(dest, ctx).value if dest is not None else None
            if value and (base / value).is_file():
                return True
        return False

    def _read_back(self, node: Node, ctx: _Ctx) -> frozenset[str]:
        """The files a redirected command or pipeline names as arguments or input (``sort
        a.txt > a.txt``): bash truncates a ``>`` target before any of it runs."""
        found: set[str] = set()
        body = node if node.type == "command" else node.child_by_field_name("body")
        while body is not None and body.type == "list" and body.named_children:
            body = body.named_children[-1]  # a && b > f: bash redirects b alone
        if body is None:
            return frozenset()
        for cmd in [body] if body.type == "command" else _descendants(body, "command"):
            name = cmd.child_by_field_name("name")
            if name is None or _text(name, ctx) in ("echo", "printf"):
                continue
            for arg in cmd.children_by_field_name("argument"):
                found.update(os.path.normpath(v) for v in self._static(arg, ctx) or ()
                             if v and not v.startswith("-"))  # sort "$f" > "$f": f's values
        for redirect in _descendants(node, "file_redirect"):
            op = _redirect_op(redirect, ctx)
            dest = redirect.child_by_field_name("destination")
            if dest is not None and op in ("<", "<>"):
                found.update(os.path.normpath(v) for v in self._static(dest, ctx) or () if v)
        return frozenset(found)

    def _writes_nothing(self, body: Node, ctx: _Ctx) -> bool:
        """``:``, ``true``, ``cat /dev/null``, ``echo -n``: a ``>`` after them empties a file
        (also alone in a group or a subshell: ``(exec :) > f``)."""
        inner = [c for c in body.named_children if c.type != "comment"]
        if body.type in ("subshell", "compound_statement") and len(inner) == 1:
            return self._writes_nothing(inner[0], ctx)
        if body.type != "command":
            return False
        name = body.child_by_field_name("name")
        found = self._static(name, ctx) if name is not None else None
        words = [self._word(a, ctx).value for a in body.children_by_field_name("argument")]
        return bool(found) and all(_prints_nothing(_unwrapped([*self._split(f), *words]))
                                   for f in found or ())

    def _moves_folder(self, body: Node, ctx: _Ctx) -> bool:
        """``cd``, ``pushd``, ``popd`` (also after ``builtin`` or ``command``, or in a group
        the redirection applies to: ``{ cd src; } > a.txt``)."""
        if body.type != "command":
            return any(self._moves_folder(c, ctx) for c in body.named_children)
        name = body.child_by_field_name("name")
        found = self._static(name, ctx) if name is not None else None
        words = [self._word(a, ctx).value for a in body.children_by_field_name("argument")]
        return bool(found) and any(_unwrapped([*self._split(f), *words])[:1] in (
            ["cd"], ["pushd"], ["popd"]) for f in found or ())

    def _stdin_of(self, node: Node, ctx: _Ctx) -> Word | None:
        if node.type == "heredoc_redirect":
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            text = _text(body, ctx) if body is not None else ""
            quoted = start is not None and _text(start, ctx)[:1] in ("'", '"', "\\")
            if not quoted and body is not None and (body.named_children or
                                                     _BACKQUOTED.search(text)):
                subst = _has_type(body, ("command_substitution", "process_substitution")) or \
                    _BACKQUOTED.search(text) is not None
                # the commands in it are judged where the walk meets them; what it holds is
                # judged by the program that reads it (a shell: code only known at run time)
                value = None if subst else self._expanded_body(body, ctx)  # a shell
                return Word(value, text, "subst" if subst else "var")  # reading it refuses
            return Word.of(text)
        if node.type == "herestring_redirect":
            word = next(iter(node.named_children), None)
            if word is None:
                return None
            found = self._static(word, ctx)
            if found is not None and len(found) > 1:  # <<< "$c" in a loop over words
                self.fed[_text(word, ctx)] = found
                return Word(None, _text(word, ctx), "var")
            return self._word(word, ctx)
        if node.type == "file_redirect":
            dest = node.child_by_field_name("destination")
            op = _redirect_op(node, ctx)
            if op == "<" and dest is not None and dest.type == "process_substitution":
                inner = [c for c in dest.named_children if c.type != "comment"]
                self.decoding = False
                printed = self._printed(inner[0], ctx) if len(inner) == 1 and _text(
                    dest, ctx).startswith("<") else None  # < <(echo ..) is a here-string
                if printed is not None and self.decoding:
                    self.decoded.add(_text(dest, ctx))
                dirs = self._listing(inner[0], ctx) if len(inner) == 1 and printed is None \
                    and _text(dest, ctx).startswith("<") else ()
                if dirs:  # < <(git ls-files): each line a path under these folders
                    return replace(_paths_under(dirs), dynamic="subst")
                return Word(printed, _text(dest, ctx), "subst")
            if op == "<" and dest is not None:
                return Word(None, _text(dest, ctx), "other")  # a file: not shown
        return None

    def _expanded_body(self, body: Node, ctx: _Ctx) -> str | None:
        """An unquoted here-doc whose expansions are all variables with one known value
        (``SELECT .. FROM $tbl``): its text as the shell expands it; None otherwise."""
        out, at = [], body.start_byte
        for child in body.named_children:
            if child.type not in ("simple_expansion", "expansion"):
                if child.type == "heredoc_content":
                    continue
                return None
            found = self._static(child, ctx)
            if found is None or len(found) != 1:
                return None
            out += [ctx.src[at:_start(child, ctx)].decode("utf-8", "surrogateescape"), found[0]]
            at = child.end_byte
        rest = ctx.src[at:body.end_byte].decode("utf-8", "surrogateescape")
        return re.sub(r"\\([$`\\])", r"\1", "".join(out) + rest)

    def _assignment(self, node: Node, ctx: _Ctx) -> None:
        name = node.child_by_field_name("name")
        var = _text(name, ctx).split("[")[0] if name is not None else ""
        parent = node.parent
        if parent is None or parent.type != "declaration_command" or not any(
                c.type == "word" and re.fullmatch(r"-\w*n\w*", _text(c, ctx))
                for c in parent.named_children):  # declare -n r=k itself names the target
            var = self.refs.get(var, var)  # r=v through a name reference sets its target
        if shell_code_var(var) and not harmless_setting(var, self._assigned(node, ctx)):
            self._entry([Word.of(_text(node, ctx))], "exec", "deny",
                        [f"setting {var} makes the shell run code from elsewhere"], "deny", ctx)
        elif shell_code_var(var):
            pass  # PS4='+ $LINENO: ': a prompt that only expands variables
        elif var == "IFS" and self._static_value(node, ctx):
            pass  # a static IFS is modelled: words split at it name the program judged
        elif is_dangerous_variable(var) and not harmless_setting(  # PAGER=cat: cat is judged
                var, values := self._assigned(node, ctx), self._untouched_env().get(var)):
            self._entry([Word.of(_text(node, ctx))], "exec", "ask",
                        [f"setting {var} changes what programs run"], "", ctx)
            if unseen := loads_unseen_code(var, values):
                self.unnamed.append(unseen)  # NODE_OPTIONS='-r ./x.js'; export ..; node ..
        if var == "IFS" and any(c.type == "+=" for c in node.children) and \
                var not in self.known and var not in self.unknown:
            self.known[var] = [self.ifs or ""]  # IFS+=_: the default blanks, then _
        self._remember(var, node, ctx)
        if var == "IFS":
            self.ifs = self._ifs_value()
        if var in self.integers:
            self._integer_assignment(var, node, ctx)
        self._command_variable(node, ctx)
        self._children(node, replace(ctx, piped=False, stdin=None, numbered=NONE))
        value = _text(node, ctx).partition("=")[2]
        if any(d in value for d in self.downloads) or self._names_download(value):
            self.downloaded.add(var)  # c=$(curl ..): c holds downloaded text
        else:
            self.downloaded.discard(var)
        if any(d in value for d in self.decoded) or _expanded_names(value) & self.decoders:
            self.decoders.add(var)  # c=$(tr a-z n-za-m <<< ..): c holds decoded text
        else:
            self.decoders.discard(var)
        if var in self.unknown and (_OUTPUT_SUBST.search(value) or
                                    _expanded_names(value) & self.from_output):
            self.from_output.add(var)
        else:
            self.from_output.discard(var)

    def _static_value(self, node: Node, ctx: _Ctx) -> bool:
        """Whether an assignment's value is one known string (IFS=$'\\n' is modelled)."""
        found = self._assigned(node, ctx)
        return found is not None and len(found) == 1

    def _assigned(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """The values an assignment may give (None: only known at run time)."""
        value = node.child_by_field_name("value")
        return self._static(value, ctx) if value is not None else [""]

    def _names_download(self, text: str) -> bool:
        """Whether ``text`` expands a variable holding downloaded text, or a download."""
        return any(d in text for d in self.downloads) or any(
            m in self.downloaded for m in _expanded_names(text))

    def _command_variable(self, node: Node, ctx: _Ctx) -> None:
        """``GIT_SSH_COMMAND='...'``, ``EDITOR=...``: a value some program runs as a command."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        var = _text(name, ctx) if name is not None else ""
        if command_variable(var) and value is not None:
            self._script(f"{var}=", run_with_arguments(var, self._word(value, ctx)), ctx)

    def _remember(self, var: str, node: Node, ctx: _Ctx) -> None:
        """``a=rm; $a -rf x``: keep what the variable holds for a later command position."""
        value = node.child_by_field_name("value")
        append = any(c.type == "+=" for c in node.children)
        target = node.child_by_field_name("name")
        self._not_made(var)
        if value is not None:  # d=$t: the path goes on under another name
            for source in _expanded_names(_text(value, ctx)) & (self.made_temps |
                                                                  self.removed_temps):
                self._not_made(source, handed=True)
        if not append:
            self.listed_vars.discard(var)  # f=rm after a loop over a listing: rm, known
            self.glob_vars.discard(var)
        if not append and target is not None and target.type != "subscript" and \
                value is not None and self._makes_temp(value, ctx) and \
                "TMPDIR" not in self.assignments:
            self._may_hold(var, None)
            self.made_temps.add(var)  # t=$(mktemp -d): a new path of its own
            return
        self._made_from_names(var, value, ctx)
        if value is not None and value.type == "array":
            self._remember_array(var, value, append, ctx)
            return
        if target is not None and target.type == "subscript":
            self._remember_element(var, target, value, ctx, append)
            return
        if value is not None and not append and self._remember_listed(var, value, ctx):
            return
        cands = self._static(value, ctx) if value is not None else [""]
        if var in self.integers and not (cands and not append and all(
                DECIMAL.fullmatch(c) for c in cands)):
            self._holds_number(var)  # declare -i n; n+=3 adds, n=010 is 8: a number only
            return
        if cands is not None and append and var in self.known and var not in self.unknown:
            cands = bounded([a + b for a in self.known.pop(var) for b in cands])
            if cands is None:  # more values than followed: only known at run time
                self.unknown.add(var)
                return
        elif cands is None or append:
            held = self._only_numbers(var)  # x+=5 appends to the text x held
            self.unknown.add(var)
            self._not_numeric(var)
            if value is not None and self._number_value(value, ctx) and (held or not append):
                self.numeric.add(var)
            if value is not None and not append and self._ids_output(value, ctx):
                self.dashless_vars.add(var)  # b=$(git merge-base HEAD main)
            return
        self.arrays.pop(var, None)  # declare -l/-u/-c: _may_hold stores it in that case
        self._may_hold(var, cands, merge=bool(self.conditional))  # a branch: joined after

    def _made_from_names(self, var: str, value: Node | None, ctx: _Ctx) -> None:
        """``g=${f%.py}``: made from any listed (or globbed) name, any too."""
        used = _expanded_names(_text(value, ctx)) if value is not None else set()
        if used & self.listed_vars:
            self.listed_vars.add(var)
        if used & self.glob_vars:
            self.glob_vars.add(var)

    def _remember_listed(self, var: str, value: Node, ctx: _Ctx) -> bool:
        """``f=$(find b -name '*.gz' | head -n1)``: f holds a path under b (``_listed_value``)."""
        listed = self._listed_value(value, ctx)
        if listed is not None:
            self._may_hold(var, [listed], merge=bool(self.conditional))
            self.listed_vars.add(var)
        return listed is not None

    def _listed_value(self, value: Node, ctx: _Ctx) -> str | None:
        """The path ``$(LISTING)`` (alone, quoted or not) prints when a listing of one folder
        prints it (``ls -t b/*.gz | head -n1``): ``DIR/found``, judged like each line of
        the listing read by ``while read``; None for any other value."""
        node = value
        if node.type == "string" and len(node.named_children) == 1 and \
                _text(node, ctx) == f'"{_text(node.named_children[0], ctx)}"':
            node = node.named_children[0]
        if node.type != "command_substitution":
            return None
        word = self._word(node, ctx)
        return word.value if word.text == LISTED and not word.expandable else None

    def _made_handed(self, e: Effect, ctx: _Ctx) -> None:
        """A path ``mktemp`` made stays that only while the command reads it (``wc -l
        "$t"``, ``diff "$t/a" "$t/b"``: words the rule reads as files), writes into it by
        redirection, or removes it. Handed to anything else (``mv src "$t"``, ``cd "$t"``,
        ``tar -x -C "$t"``, ``echo "$t"``, a function or a shell given it), what is there is
        no longer only what this command wrote, and its removal (here, in the background,
        in a trap at exit) removes that: refused, like any path only known at run time."""
        name = program_name(e.argv[0]) if e.argv else ""
        read = {id(w) for w in e.reads}
        reads_only = e.risk == "read" and not e.nested and not e.scripts and \
            name not in ("cd", "pushd", "popd") and name not in self.functions
        for w in [*e.argv[1:], *e.chdir]:
            for var in _expanded_names(w.text) if w.value is None else ():  # '..$t..': text
                if w.made and name == "rm":
                    self.removed_temps.add(var)
                    if ctx.via != "trap":  # removed now: anything may be put there again
                        self.made_temps.discard(var)
                elif not (reads_only and id(w) in read) and ctx.via != "trap":
                    self._not_made(var, handed=True)

    def _makes_temp(self, value: Node, ctx: _Ctx) -> bool:
        """Whether an assigned value is ``$(mktemp ..)`` alone (``made_temp``)."""
        if value.type == "string" and len(value.named_children) == 1 and \
                _text(value, ctx) == f'"{_text(value.named_children[0], ctx)}"':
            value = value.named_children[0]
        inner = [c for c in value.named_children if c.type != "comment"]
        if value.type != "command_substitution" or len(inner) != 1 or \
                inner[0].type != "command":
            return False
        parts = inner[0].named_children
        if any(c.type == "variable_assignment" or (c.type.endswith("redirect") and " ".join(
                _text(c, ctx).split()) not in ("2>/dev/null", "2> /dev/null")) for c in parts):
            return False  # TMPDIR=x mktemp, mktemp > f
        words = [self._word(c, ctx) for c in parts if not c.type.endswith("redirect")]
        return all(w.value is not None and not w.expandable for w in words) and \
            made_temp([w.value or "" for w in words])

    def _setting_files(self, e: Effect, var: str, values: list[str] | None) -> None:
        """Files a variable names for the program to write or load: ``GIT_TRACE2_EVENT=
        /path`` (git writes its trace there; a number or ``true`` is standard error), and
        ``RUBYOPT=-r./x.rb``, ``NODE_OPTIONS=--require ./x.js`` naming a file this command
        wrote, or a ``data:`` URL (code the command line does not show as code)."""
        if var.startswith("GIT_TRACE"):
            traces = [Word(None, f"${var}", "other")] if values is None else [
                Word.of(v) for v in values if v.startswith("/")]
            e.writes.extend(traces)
            if traces:
                e.add("write", f"{var} makes git write its trace to a file")
            return
        if var not in _LOADER_OPTIONS or values is None:
            return
        for v in values:
            if "data:" in v:
                self.unnamed.append(f"{var} loads code from a data: URL")
            wrote = next((w for w in sorted(self.written) if os.path.normpath(w) in v), None)
            if wrote is not None:
                self.unnamed.append(f"{var} loads {wrote}, which this command wrote")

    def _copies_number(self, text: str) -> bool:
        """``s=$SECONDS``, ``n="${count}"``: the value of a variable that holds a number;
        ``l=${#name}``, ``n=${#files[@]}``: a length, digits whatever the value."""
        if re.fullmatch(r"\"?\$\{#[A-Za-z_]\w*(\[[@*]\])?\}\"?", text):
            return True
        m = re.fullmatch(r"\"?\$\{?([A-Za-z_]\w*)\}?\"?", text)
        return m is not None and self._arithmetic_lookup(m.group(1)) == ["0"]

    def _array_of_output(self, var: str, value: Node, ctx: _Ctx) -> None:
        """``files=( $(git diff --name-only) )``: each element a line of a listing (a path
        under the folders it lists), ``c=( $(git rev-list HEAD) )`` an object id, as the
        words of ``for f in $(..)`` are."""
        parts = [c for c in value.named_children if c.type != "comment"]
        if len(parts) != 1 or parts[0].type != "command_substitution" or \
                self.ifs != " \t\n" or self.conditional:
            return
        inner = [c for c in parts[0].named_children if c.type != "comment"]
        dirs = self._listing(inner[0], ctx) if len(inner) == 1 else ()
        if dirs:
            self._set_array(var, [_paths_under(dirs).value or ""])
            self.listed_arrays.add(var)
        elif self._ids_output(parts[0], ctx):
            self.dashless_vars.add(var)

    def _remember_array(self, var: str, value: Node, append: bool, ctx: _Ctx) -> None:
        """``a=(rm -rf x)``, ``a+=(y)``: the elements, when each is one static word."""
        if var in self.assoc:
            self._remember_map(var, value, append, ctx)
            return
        items: list[str] | None = [] if not append else self._last_items(var)
        at = len(items or [])
        held: set[int] = set(range(at))
        for c in value.named_children:  # a=([i]=v): i is evaluated as arithmetic
            if c.type == "word" and GLOB.search(_text(c, ctx)) and items is not None:
                matched = self._word_matches(self._word(c, ctx))  # a=(src/*.py): the names
                if matched is None:  # (none under nullglob when nothing matches)
                    items = None
                    break
                items, at = _placed(items, at, held, matched)
                continue
            if c.type in ("simple_expansion", "expansion", "command_substitution") and \
                    items is not None:
                found = self._static(c, ctx)  # a=($o): split at IFS, each word an element
                parts = self._split(found[0]) if found is not None and len(
                    found) == 1 and self.ifs is not None else None
                if parts is None:
                    items = None
                    break
                items, at = _placed(items, at, held, parts)
                continue
            keyed = self._static(c, ctx)
            for k in keyed or ():
                if k.startswith("[") and "]=" in k and var not in self.assoc:
                    self._arithmetic_text(k[1:].partition("]=")[0], "an array's [index]=")
            found = self._static(c, ctx) if items is not None else None
            key = _ELEMENT_KEY.match(found[0]) if found is not None and len(found) == 1 \
                else None
            if found is None or len(found) != 1 or (key is None and found[0].startswith("[")
                                                    and "]=" in found[0]):
                items = None
                break
            if key is not None:  # a=([2]=x [0]=y z): the next unkeyed element goes at 1
                at = int(key.group(1))
            items = [*(items or []), *[""] * (at + 1 - len(items or []))]
            items[at] = found[0][key.end():] if key is not None else found[0]
            held.add(at)
            at += 1
        gaps = frozenset(range(len(items))) - held if items is not None else frozenset()
        sparse = (append and var in self.sparse) or bool(gaps)  # t[2]=a; t+=(b): the gap stays
        self._set_array(var, items)
        if items is None and not append:
            self._array_of_output(var, value, ctx)
        if sparse and items is not None:
            self.sparse.add(var)
            if not append and not self.conditional:
                self.holes[var] = gaps

    def _remember_map(self, var: str, value: Node, append: bool, ctx: _Ctx) -> None:
        """``declare -A m=([k]=v ..)``: the entries, when every key and value is known."""
        entries: dict[str, str] | None = dict(self.maps.get(var, {})) if append else {}
        for c in value.named_children:
            found = self._static(c, ctx)
            m = re.fullmatch(r"\[([^]]*)\]=(.*)", found[0], re.S) if found and len(
                found) == 1 else None
            if m is None or entries is None:
                entries = None
                break
            entries[m.group(1)] = m.group(2)
        self._set_map(var, entries)

    def _set_map(self, var: str, entries: dict[str, str] | None) -> None:
        if entries is None or len(entries) > MAX_LOOP_WORDS:
            self.maps.pop(var, None)
            self.unknown.add(var)
        else:
            self.maps[var] = entries
            self.known[var] = [entries.get("0", "")]
            self.unknown.discard(var)

    def _remember_element(self, var: str, target: Node, value: Node | None, ctx: _Ctx,
                          append: bool = False) -> None:
        """``a[3]=rm``, ``a[0]+=m``: one element of an array with static elements (an
        element past the end leaves a gap: then its list is not followed)."""
        numbers = self._only_numbers(var) and value is not None and (
            self._number_value(value, ctx) or bool(DECIMAL.fullmatch(_text(value, ctx))))
        self._remember_one(var, target, value, ctx, append)
        if numbers and var not in self.readonly:
            self.numeric.add(var)  # seen[$k]=$(( ${seen[$k]:-0} + 1 )): numbers, any key
        elif var not in self.readonly:
            self.numeric.discard(var)

    def _only_numbers(self, var: str) -> bool:
        """Whether ``var`` (a scalar or an array) holds numbers only: each value it is known
        to hold is one (none, when nothing has set it yet). Only looks: reading what the
        environment holds is not noted as a read here."""
        var = self._resolved(var)
        if var in self.numeric:
            return True
        if self.taint_all or var in self.unknown:
            return False
        held = list(self.maps[var].values()) if var in self.maps else [
            v for items in self.arrays[var] for v in items] if var in self.arrays else \
            self.known.get(var, [self.env[var]] if var in self.env else [])
        return all(DECIMAL.fullmatch(v) for v in held)

    def _number_part(self, part: Node, ctx: _Ctx) -> bool:
        """A part of a quoted word that is a number at run time (``$((n + 1))``, ``$n`` of
        a number): the checks that cost no walk, as every quoted word asks."""
        return part.type == "arithmetic_expansion" or (
            part.type in ("simple_expansion", "expansion") and
            self._holds_a_number(_text(part, ctx)))

    def _number_value(self, value: Node, ctx: _Ctx) -> bool:
        """``$(( .. ))``, ``$(wc -l < f)``, ``$n`` of a number: a value that is a number."""
        return value.type == "arithmetic_expansion" or (
            value.type == "command_substitution" and self._numeric_output(value, ctx)) or \
            self._copies_number(_text(value, ctx)) or self._held_number(value, ctx)

    def _remember_one(self, var: str, target: Node, value: Node | None, ctx: _Ctx,
                      append: bool) -> None:
        index = _text(target, ctx).partition("[")[2].rstrip("]")
        if var in self.assoc:  # m[key]=v
            found = self._static(value, ctx) if value is not None else [""]
            known = var in self.maps and found is not None and len(found) == 1 and \
                not re.search(r"[$`\\'\"]", index)
            self._set_map(var, {**self.maps[var], index: (found or [""])[0]} if known else None)
            return
        found = self._static(value, ctx) if value is not None else [""]
        items = self._last_items(var) if var in self.arrays or var in self.unknown else []
        if items is None or found is None or len(found) != 1 or not index.isdigit() or \
                int(index) > 64 or (append and var in self.unknown):
            self._set_array(var, None)
            return
        at, sparse = int(index), var in self.sparse or int(index) > len(items)
        old = items[at] if at < len(items) else ""
        items = [*items, *[""] * (at + 1 - len(items))]  # an unset element expands to ""
        items[at] = old + found[0] if append else found[0]
        self._set_array(var, items)
        if sparse:
            self.sparse.add(var)

    def _may_replace(self, op: str, word: Word, values: list[str], ctx: _Ctx) -> None:
        """``> "$out"`` where out may hold several known paths: refused when one of them
        holds work (each value is one bash may see)."""
        for v in values:
            alt = Word(v, word.text)
            if v and v not in NULL_DEVICES and (why := self._work_at(alt)):
                self._entry([Word.of(op), alt], "destructive", "deny",
                            [f"replaces {v} ({word.shown} may hold it), {why}, with output "
                             "the command line does not show"], "deny", ctx)
                return

    def _integer_assignment(self, var: str, node: Node, ctx: _Ctx) -> None:
        """``declare -i n; n=EXPR``: EXPR is evaluated as arithmetic."""
        value = node.child_by_field_name("value")
        if value is not None and value.type == "command_substitution" and \
                self._numeric_output(value, ctx):
            self.numeric.add(var)  # total+=$(wc -l < f): a count, evaluated as one
            return
        self._integer_values(var, self._static(value, ctx) if value is not None else [""])
        self._number_held(var)

    def _file_redirect(self, node: Node, ctx: _Ctx) -> None:
        op = _redirect_op(node, ctx)
        dest = node.child_by_field_name("destination")
        for child in node.named_children:
            self._visit(child, replace(ctx, piped=False, stdin=None, numbered=NONE))
        if dest is None or dest.type == "process_substitution":
            return
        word = self._word(dest, ctx)
        if word.value is None and word.dynamic in ("var", "other"):  # f=a.txt; cat < "$f"
            known = self._known_words(dest, word, ctx)
            word = known[0] if len(known) == 1 else word
        fds = _descriptors(node, op, ctx)
        moved = _DUPLICATED.fullmatch(word.value or "") if op in (">&", "<&") else None
        if moved and int(moved.group(1)) in self.opened and (op == ">&" or fds & {1, 2}):
            self._written_over(self.opened[int(moved.group(1))], ctx)  # exec 3<>f; echo >&3
        if self._note_streams(op, fds, word) or word.value == "-":
            return
        if op == "<>" and word.value not in NULL_DEVICES:
            self._read_write(word, fds, ctx)
            return
        fd = re.fullmatch(r'"?\$\{([A-Za-z_]\w*)\[[01]\]\}"?', _text(dest, ctx))
        if op in (">&", "<&") and fd and fd.group(1) in self.coprocs and \
                fd.group(1) not in self.other_writes and fd.group(1) not in self.arrays and \
                fd.group(1) not in self.known and fd.group(1) not in self.unknown:
            return  # >&"${BC[1]}": a coprocess's descriptor, a number

        values = self._static(dest, ctx) if op in (">", ">|", "&>") and ctx.printed is None \
            else None
        if values is not None and len(values) > 1:
            self._may_replace(op, word, values, ctx)
        if op in _WRITE_OPS:
            self._redirect_wrote(word, op, ctx)
            self._redirect_entry(op, word, True, ctx)
            emptied = op in (">", ">|", "&>", ">&") and word.value not in NULL_DEVICES
            if emptied and ctx.truncate and (ctx.moves or self._may_hold_work(word)):
                self._entry([Word.of(op), word], "destructive", "deny",
                            [f"empties {word.shown}: the command before > writes nothing"],
                            "deny", ctx)
            elif emptied and word.value and os.path.normpath(word.value) in ctx.read_back:
                self._entry([Word.of(op), word], "destructive", "deny",
                            [f"empties {word.shown}: the shell truncates it before the "
                             "command reads it"], "deny", ctx)
            elif emptied and (why := self._work_at(word) or (
                    "a file a listing names" if word.text == LISTED else "")):
                self._entry([Word.of(op), word], "destructive", "deny", [
                    f"replaces {word.shown}, {why}, with output the command line does not "
                    "show" if ctx.printed is None else f"replaces {word.shown}, {why}, whose "
                    "content is lost (the command line shows what it writes, not what it "
                    "replaces)"], "deny", ctx)
        elif op in _READ_OPS:
            self._redirect_entry(op, word, False, ctx)

    def _read_write(self, word: Word, fds: set[int], ctx: _Ctx) -> None:
        """``N<>FILE`` opens FILE for reading and writing, creating it when missing and
        emptying nothing. What is written to it lands over its first bytes: on standard
        output or error at once; on another descriptor when a later ``>&N`` writes there
        (``exec 3<>f; echo y >&3``); only read on standard input."""
        for fd in fds - {1, 2}:  # 0<>f too: >&0 then writes into f
            self.opened[fd] = word
        if fds & {1, 2} or word.value is None:
            self._written_over(word, ctx)
        elif any(os.path.lexists(p) for p in self.resolved_files(word)):
            self._redirect_entry("<>", word, False, ctx)
            inside = os.path.realpath(self.ws).rstrip("/") + "/"
            if not all(p.startswith(inside) for p in self.resolved_files(word)):
                self._entry([Word.of("<>"), word], "write", "ask", [
                    f"<> opens {word.shown}, outside the workspace, for writing"], "", ctx)
        else:
            self._redirect_entry("<>", word, True, ctx)  # creates it

    def _written_over(self, word: Word, ctx: _Ctx) -> None:
        """Bytes written over FILE in place (``<>``): what they replace is lost and the rest
        stays, so a file that holds work is refused, like a file emptied by ``>``."""
        if word.value:
            self._written(word.value)
            self.contents.pop(os.path.normpath(word.value), None)
        if (why := self._work_at(word)):
            self._entry([Word.of("<>"), word], "destructive", "deny",
                        [f"writes over {word.shown} in place ({why}): <> keeps the bytes it "
                         "does not replace"], "deny", ctx)
        else:
            self._redirect_entry("<>", word, True, ctx)

    def _note_streams(self, op: str, fds: set[int], word: Word) -> bool:
        """What a redirection puts on the descriptors ``fds``, for ``_streams_reopened``;
        True for a duplication (``2>&1``), which names no file."""
        moved = _DUPLICATED.fullmatch(word.value or "") if op in (">&", "<&") else None
        if moved:  # 4<&3, and 4<&3- (moved: 4 holds what 3 held)
            self.redirected.append((fds | {int(moved.group(1))}, None))
            return True
        fd = stream_descriptor(word.value)
        if fd is not None and op in _WRITE_OPS:  # the shell opens it again: > empties,
            self.stream_writes.append((fd, str(word.value), op not in (">>", "&>>")))  # >>
            self.stream_joins.append(fds | {fd})  # appends; what it holds is on fds then
            return True
        if op in _WRITE_OPS | _READ_OPS and word.value not in NULL_DEVICES:
            self.redirected.append((fds, word))
        return False

    def _streams_reopened(self) -> list[tuple[DecisionValue, str]]:
        """A standard stream opened for writing where a redirection may have put a file on
        it: that file is opened again and emptied (``tee /dev/stdin < README.md``)."""
        out: list[tuple[DecisionValue, str]] = []
        dups = [*(joined for joined, w in self.redirected if w is None), *self.stream_joins]
        named = set().union(*(joined for joined, _ in self.redirected))
        for fd, name, empties in dict.fromkeys(self.stream_writes):
            if fd > 2 and fd not in named:
                out.append(("deny", f"writes {name}, a descriptor this command does not open: "
                                    "what it holds is not known"))
                continue
            fds = {fd}
            while any(joined & fds and joined - fds for joined in dups):  # 2>&1, any order
                fds = fds.union(*(joined for joined in dups if joined & fds))
            for joined, w in self.redirected:
                if w is not None and joined & fds:
                    out.extend(self._reopened(name, w, empties))
        return out

    def _reopened(self, name: str, w: Word, empties: bool) -> list[tuple[DecisionValue, str]]:
        """Writing the stream ``name`` opens ``w`` again: emptied, refused where it holds
        work; else judged as writing ``w`` by its name is (a write, at least)."""
        if w.value is None:
            return [("ask", f"writing {name} opens a file only known at run time again")]
        why = self._work_at(w) if empties else ""
        if why:
            return [("deny", f"writing {name} opens {w.shown} again, which a redirection put "
                             f"on it, and empties it ({why})")]
        decision, reasons = self._judge_paths([w], True)
        return [(strictest("ask", decision), f"writing {name} opens {w.shown} again, which "
                 f"a redirection put on it, and {'empties' if empties else 'appends to'} it"
                 f"{': ' if reasons else ''}{'; '.join(reasons)}")]

    def _may_hold_work(self, word: Word) -> bool:
        """Whether emptying the file ``word`` names may lose work: it holds some, or which
        file it is is only known at run time (``: > "$f"`` in a loop). A new file, or an
        untracked one in a repository, holds none (``: > new.log`` makes an empty file); a
        file outside the workspace is someone's (``: > /etc/passwd``)."""
        files = [] if word.text == LISTED else self.resolved_files(word)  # a listed path:
        ws = os.path.realpath(self.ws).rstrip("/") + "/"  # any file there (git ls-files)
        return not files or bool(self._work_at(word)) or any(
            os.path.lexists(f) and not f.startswith(ws) for f in files)

    def _work_at(self, word: Word) -> str:
        """``holds_work`` of the file a redirection names, from the working directory."""
        return next((why for path in self.resolved_files(word)
                     if (why := self.holds_work(path) or self.folder_work(path))), "")

    def _wrote(self, path: str, op: str, printed: str | None) -> None:
        """What a ``>``/``>>`` target holds after a static echo or printf; else unknown."""
        before = "" if op in (">", ">|") else self.contents.get(path)
        if printed is not None:
            self.authored.add(path)
        if printed is None or before is None or op not in (">", ">|", ">>"):
            self.contents.pop(path, None)
        else:
            self.contents[path] = before + printed

    def _redirect_entry(self, op: str, word: Word, for_write: bool, ctx: _Ctx) -> None:
        if word.value in NULL_DEVICES:
            return
        decision, reasons = self._judge_paths([word], for_write)
        risk: Risk = "write" if for_write else "read"
        if for_write:
            decision = strictest(decision, "ask")
            reasons = reasons or [f"redirection writes {word.shown}"]
        self._entry([Word.of(op), word], risk, decision, reasons,
                    "deny" if decision == "deny" else "", ctx)

    # ------------------------------------------------------------ simple commands

    def _command(self, node: Node, ctx: _Ctx) -> None:
        """A simple command; one that names a loop variable with several words (``for s in
        status log; do git "$s"; done``) and is not allowed for the words as one list, or
        one of whose words is an option, is judged again once per word, the variable
        holding that word alone."""
        mark = self._marks()
        self._command_once(node, ctx)
        multi = {n: found for n in dict.fromkeys(_VARIABLE.findall(_text(node, ctx)))
                 if (found := self._alternatives(n))}
        combos = list(itertools.islice(itertools.product(*multi.values()), MAX_LOOP_WORDS + 1))
        options = any(isinstance(v, str) and v.startswith("-") for n, found in multi.items()
                      if n != "_" for v in found)  # $_ is the command's own last word now
        if not multi or len(combos) > MAX_LOOP_WORDS or not (
                self._short_of_allow(mark) or options) or not self._external(node, ctx):
            return  # {-print,-delete} as one word reads as a path: each word is judged
        self._rewind(mark)
        saved = {n: (self.loops.get(n), self.known.get(n), self.arrays.get(n)) for n in multi}
        unset = self.maybe_unset & set(multi)
        try:
            for combo in combos:
                self.maybe_unset |= unset
                for n, value in zip(multi, combo, strict=True):
                    self._hold_one(n, value)
                self._command_once(node, ctx)
        finally:
            self.maybe_unset |= unset
            for n, (loop, known, items) in saved.items():
                if loop is not None:
                    self.loops[n] = loop
                if known is not None:
                    self.known[n] = known
                if items is not None:
                    self.arrays[n] = items

    def _hold_one(self, name: str, value: str | Sequence[str]) -> None:
        if value:  # "" is one of the values held in turn: there it may be unset
            self.maybe_unset.discard(name)
        if not isinstance(value, str):  # one of an array's alternatives
            self.arrays[name] = [list(value)]
            self.known[name] = [value[0] if value else ""]
        elif name in self.known:
            self.known[name] = [value]
        else:
            self.loops[name] = [value]

    def _alternatives(self, name: str) -> list[str] | list[list[str]] | None:
        """The values a variable may hold when it may hold several known ones (a loop's
        words, values set in branches, an array's alternatives), else None."""
        if name in self.unknown or self.taint_all:
            return None
        if len(self.arrays.get(name, ())) > 1:
            return self.arrays[name]
        found = self._static_variable(name) if name in self.known or name in self.loops \
            else None
        return found if found is not None and len(found) > 1 else None

    def _lists(self) -> tuple[list[Any], ...]:
        """What judging a command appends to: entries, then the reasons that ask or refuse."""
        return (self.entries, self.problems, self.unnamed, self.floors, self.opaque,
                self.secrets, self.private, self.hunted, self.env_secrets, self.secret_files,
                self.senders)

    def _marks(self) -> tuple[int, ...]:
        return tuple(len(got) for got in self._lists())

    def _short_of_allow(self, mark: tuple[int, ...]) -> bool:
        lists = self._lists()
        return any(e["decision"] != "allow" for e in self.entries[mark[0]:]) or any(
            len(got) > at for got, at in zip(lists[1:5], mark[1:5], strict=True))

    def _rewind(self, mark: tuple[int, ...]) -> None:
        for got, at in zip(self._lists(), mark, strict=True):
            del got[at:]
        self.printers = {i for i in self.printers if i < mark[0]}  # entries gone with them

    def _external(self, node: Node, ctx: _Ctx) -> bool:
        """A command that changes nothing of the walker's own (no assignment, no builtin,
        no function of this command): judging it again once per word is exact."""
        name = node.child_by_field_name("name")
        word = _text(name, ctx) if name is not None else ""
        return (not any(c.type == "variable_assignment" for c in node.named_children)
                and word not in _STATEFUL and word not in self.bodies)

    def _command_once(self, node: Node, ctx: _Ctx) -> None:
        self.row = node.start_point[0]
        name_node = node.child_by_field_name("name")
        arg_nodes = node.children_by_field_name("argument")
        fds = [_fd_variable(a, ctx) for a in arg_nodes]
        self.numeric.update(f for f in fds if f)  # exec {fd}<F: fd holds a number
        arg_nodes = [a for a, f in zip(arg_nodes, fds, strict=True) if not f]
        stdin, numbered = ctx.stdin, ctx.numbered
        assigned: list[str] = []
        exported: dict[str, list[str] | None] = {}
        redirect_ctx: _Ctx | None = None  # > a.txt : is : > a.txt (worked out once)
        lasting = self.posix and name_node is not None and _text(
            name_node, ctx) in _SPECIAL_BUILTINS  # set -o posix; c=rm :; $c a.txt
        for child in node.named_children:
            if child.type == "variable_assignment" and lasting:
                with self._may_not_run():  # in POSIX mode it stays; else it is gone
                    self._visit(child, replace(ctx, piped=False, stdin=None, numbered=NONE))
            elif child.type == "variable_assignment":
                var = child.child_by_field_name("name")
                assigned.append(_text(var, ctx) if var is not None else "")
                value = child.child_by_field_name("value")
                exported[assigned[-1]] = self._static(value, ctx) if value is not None else [""]
                self._command_variable(child, ctx)
                self._children(child, replace(ctx, piped=False, stdin=None, numbered=NONE))
            elif child.type in ("herestring_redirect", "heredoc_redirect", "file_redirect"):
                fed = self._stdin_of(child, ctx)
                stdin, numbered = (fed, self._fed_columns(child, ctx)) if fed else (
                    stdin, numbered)
                redirect_ctx = redirect_ctx or replace(
                    ctx, truncate=name_node is not None and self._writes_nothing(node, ctx),
                    moves=self._moves_folder(node, ctx), read_back=self._read_back(node, ctx))
                self._visit(child, redirect_ctx)
            else:
                self._visit(child, replace(ctx, piped=False, stdin=None, numbered=NONE))
        if name_node is None:
            return
        if _text(name_node, ctx) in ("{", "}"):  # ! { ..; }: the grammar has no such group
            self.problems.append("the parser reads the reserved word { or } as a program")
        argv = [self._word(name_node, ctx)] + [w for a in arg_nodes
                                               for w in self._arg_words(a, ctx)]
        if _text(name_node, ctx) == "time":  # the keyword: time c=rm assigns in this shell
            for a in arg_nodes:
                if _text(a, ctx).startswith("-"):
                    continue
                target = re.match(r"([A-Za-z_]\w*)(?:\[[^]]*\])?\+?=", _text(a, ctx))
                if target:
                    self.known.pop(target.group(1), None)
                    self.unknown.add(target.group(1))
                break
        listed = _expanded_names(_text(name_node, ctx)) & (
            self.listed_vars | self.listed_arrays) or argv[0].text == LISTED
        names = None if listed else self._names(name_node, argv[0], ctx)
        if listed:  # a file name read from a listing: any program at all
            argv[0] = Word(None, LISTED, "other")
        if names is None:
            self.unnamed.append(f"the program {argv[0].text} is only known at run time")
            names = ([[argv[0]]], [])
        alternatives, floor_reasons = names
        env = self._handed_environment(exported)
        for words in alternatives:  # GIT_CONFIG_KEY_0=core.pager .. git: git -c core.pager=..
            given = options_from_environment(program_name(words[0]), env) if words else []
            self._simple([*words, *given, *argv[1:]], replace(ctx, stdin=stdin,
                                                              numbered=numbered), assigned,
                         floor_reasons, exported)
        self._last_argument([*alternatives[-1], *argv[1:]])

    def _handed_environment(self, prefixed: Mapping[str, list[str] | None]) -> Environment:
        """The variables a command hands its program that can become its options
        (``env_options``): those its prefix assigns, and those exported before."""
        env: dict[str, list[str] | None] = {
            v: (None if v in self.unknown else self.known.get(v))
            for v in self.exported_vars if watched(v) or _NAME.fullmatch(v)}
        env.update({v: found for v, found in prefixed.items()})
        return env

    def _last_argument(self, argv: Sequence[Word]) -> None:
        """``$_`` is the last word of the previous command: each one it may be is kept
        (a branch or a loop decides which ran last)."""
        last = argv[-1].value if argv else None
        if not self.ran:  # at start-up $_ is the shell run_shell starts
            self.known.pop("_", None)
            self.ran = True
        if last is None or "_" in self.unknown:
            self.unknown.add("_")
        else:
            self.known["_"] = list(dict.fromkeys([*self.known.get("_", []), last]))[-16:]

    # ------------------------------------------------------------ command position

    def _names(self, node: Node, word: Word, ctx: _Ctx
               ) -> tuple[list[list[Word]], list[str]] | None:
        """What the command word can stand for: alternatives, each one or more words.

        Decodes what is static (quotes, ``$'..'``, braces, ``${IFS}``, globs, variables
        assigned earlier in the command, ``$(echo ..)``); None when the program cannot be named.
        """
        text = _text(node, ctx)
        reasons: list[str] = []
        if text in ('"$@"', '"${@}"') and self.positional:  # each word as given
            return [[Word(v, text) for v in self.positional]], reasons
        subst = _has_type(node, ("command_substitution", "simple_expansion", "expansion"))
        if word.value in ("/proc/self/exe", "/proc/thread-self/exe"):
            return [[Word("bash", text)]], [*reasons, f"{text} is the running shell"]
        if word.value is not None and not word.expandable and not _IFS.search(text) \
                and not subst:
            return [[word]], reasons
        if word.value is not None and word.expandable and not subst:
            expanded = self._expanded_name(word)
            if expanded is None:
                return None
            # one plain brace group is expanded here as bash expands it ({ls,-la,src} is
            # ls -la src); nested or quoted braces may not be, and a glob matches what the
            # file system holds when the command runs
            plain = _ONE_BRACE_GROUP.fullmatch(word.text) is not None or \
                _in_system_folder(word.value)
            return expanded, [] if plain else ["the command name is expanded by the shell"]
        cands = self._static(node, ctx)
        if cands is None:
            why = self._opaque_name(node, ctx)
            if why:
                self.opaque.append(why)
            return None
        if _IFS.search(text):
            reasons.append("the command name is computed by the shell")
        if _SUBSTRING_NAME.search(text):  # ${s:1:2} -la: decoded, but no one writes a name so
            reasons.append("a substring of a variable names the program")
        globbed = self._name_matches(cands)
        if globbed is None:
            return None
        if globbed:  # for t in /usr/bin/[s]hred; do "$t": the loop matched it already
            cands = [*cands, *(m for m in globbed if m not in cands)]
            reasons.append("the command name is expanded by the shell")
        if self.ifs is None and subst:
            self.opaque.append("IFS is set to a value only known at run time")
        alternatives = [[Word(w, text) for w in self._split(c)] for c in cands]
        # an empty value expands to no word: the next argument is the program
        return alternatives or [[Word("", text)]], reasons

    def _name_matches(self, values: list[str]) -> list[str] | None:
        """The files a computed command name's pattern matches: a loop over a glob holds
        what bash matched (``for t in /usr/bin/[s]hred``), and an unquoted ``$t`` is
        matched again. None when there are more than ``MAX_NAME_MATCHES``."""
        found: list[str] = []
        for value in values:
            if not GLOB.search(value):
                continue
            for base in self.cwds:
                matched = self._glob(value, str(base or self.ws))
                if matched is None:
                    return None
                found.extend(m for m in matched if m not in found)
        return None if len(found) > MAX_NAME_MATCHES else found

    def _expanded_name(self, word: Word) -> list[list[Word]] | None:
        """The words a command word's braces make, or the files its glob matches: the first
        (in the locale's order) is the program, the others its first arguments, so each is
        judged as the program before the rest. None when the braces make more words than
        are followed, or the glob matches more than ``MAX_NAME_MATCHES`` files."""
        value = word.value or ""
        braced = brace_words(value)
        if braced is None:
            return None
        items = [i for i in braced if i]  # {rm,}: an empty word is dropped
        if len(items) > 1 or (items and items[0] != value):
            return [[Word(i, word.text) for i in items]]
        if not GLOB.search(value):
            return [[word]]
        found = [self._glob(value, str(base or self.ws)) for base in self.cwds]
        if None in found:
            return None
        matches = sorted({m for each in found for m in each or ()})
        if len(matches) > MAX_NAME_MATCHES:
            return None  # which comes first is the locale's collation: known at run time
        return [[Word(m, word.text), *(Word(o, word.text) for o in matches if o != m)]
                for m in matches] or [[word]]

    def _static(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """Every string ``node`` can expand to when that is known without running anything."""
        t = node.type
        if t == "command_name":
            child = next(iter(node.named_children), None)
            return self._static(child, ctx) if child is not None else [""]
        if t in ("word", "raw_string", "ansi_c_string", "string_content", "number"):
            w = self._word(node, ctx)
            return None if w.value is None else [w.value]
        if t in ("string", "concatenation", "translated_string"):
            return self._static_parts(node, ctx)
        if t == "simple_expansion" or (t == "expansion" and _simple_braced(node)):
            var = next((c for c in node.named_children
                        if c.type in ("variable_name", "special_variable_name")), None)
            return None if var is None else self._static_variable(_text(var, ctx))
        if t == "command_substitution":
            return self._static_output(node, ctx)
        if t == "arithmetic_expansion":
            found = self._static_arithmetic(_text(node, ctx)[3:-2])
            return None if found is None else [found]
        if t == "brace_expression":  # {1..3}: expanded where words are counted (a loop)
            return [_text(node, ctx)]
        if t == "expansion" and any(c.type == "subscript" for c in node.children):
            return self._static_element(node, ctx)
        if t == "expansion":
            return self._static_expansion(_text(node, ctx))
        return None

    def _arg_words(self, node: Node, ctx: _Ctx) -> list[Word]:
        """An argument's words: ``"${a[@]}"`` of an array with static elements is one word
        per element; anything else one word."""
        inner = node.named_children[0] if node.type == "string" and len(
            node.named_children) == 1 else node
        if inner.type == "expansion" and not self.taint_all and \
                [c.type for c in inner.children] == ["${", "subscript", "}"]:
            name, _, index = _text(inner.children[1], ctx).partition("[")
            found = self.arrays.get(name)
            if found is not None and len(found) == 1 and index in ("@]", "*]") and \
                    name not in self.unknown and name not in self.sparse:
                text = _text(node, ctx)
                if index == "*]" and node.type == "string":  # "${a[*]}" is one word
                    joined = (self.ifs or " ")[:1].join(found[0]) if self.ifs != "" else \
                        "".join(found[0])
                    return [Word(joined, text)]
                items = found[0]
                if node.type != "string":  # ${a[@]} unquoted: each element split at IFS
                    if self.ifs is None:
                        return [Word(None, text, "var")]
                    if index == "*]" and self.ifs:  # ${a[*]}: joined at IFS, then split
                        items = [self.ifs[:1].join(items)]
                    items = [w for v in items for w in self._split(v)]
                shown = LISTED if name in self.listed_arrays else text
                return [Word(v, shown, "", False, bool(GLOB.search(v))) for v in items]
        if _text(node, ctx) in ('"$@"', '"${@}"') and self.positional is not None:
            return [Word(v, LISTED if i in self.listed_args else _text(node, ctx))
                    for i, v in enumerate(self.positional, 1)]  # xargs sh -c '..' _ {}
        listed = re.fullmatch(r'("?)\$\{!([A-Za-z_]\w*)([@*])\}\1', _text(node, ctx))
        if listed is not None and not (listed.group(1) and listed.group(3) == "*"):
            names = self._prefixed(listed.group(2))  # ${!x_@}, "${!x_@}": a word each name
            text = _text(node, ctx)
            return [Word(None, text, "var")] if names is None else [Word(v, text) for v in names]
        word = self._word(node, ctx)
        if node.type == "command_substitution" and word.text == LISTED:
            return [word, word]  # $(git ls-files): several paths (uniq $(..) writes one)
        split = self._split_value(node, word, ctx)
        if split is not None:
            return split
        text = _text(node, ctx)
        braces = brace_words(text, MAX_PATH_WORDS) if _BRACED.fullmatch(text) else []
        # no quote, no $: the text is the value (l{1..3} is a word and a brace_expression)
        if braces is None:  # more words than are judged: known at run time
            return [Word(None, text, "other")]
        if len(braces) > 1:  # cp src/{new,old}.py: two words, each then tilde-expanded
            return [replace(self._plain_word(v, True), text=text) if v.startswith("~") else
                    Word(v, text, "", False, bool(GLOB.search(v))) for v in braces if v]
        if word.value is None and (word.dynamic in ("var", "other") or _prints_plainly(
                node, ctx)):
            return self._known_words(node, word, ctx)  # $(echo reset --hard): two words
        return [word]

    def _split_value(self, node: Node, word: Word, ctx: _Ctx) -> list[Word] | None:
        """The words a known unquoted expansion splits into (``for s in "a b": $s``; ``IFS=,;
        set -- $(echo rm,-rf,x)``), unknown ones at an IFS only known at run time; None
        where it stays one word."""
        if node.type in ("simple_expansion", "expansion") and word.value and self.ifs is None:
            return [replace(word, value=None, dynamic="var")]
        if node.type in ("simple_expansion", "expansion") and word.value is not None and \
                self.ifs == " \t\n" and len(word.value.split()) != 1:
            return [replace(word, value=v) for v in word.value.split()]
        if node.type == "command_substitution" and word.value is not None and \
                self.ifs != " \t\n" and (self.ifs is None or set(word.value) & set(self.ifs)):
            if self.ifs is None:
                return [replace(word, value=None, dynamic="subst")]
            text = _text(node, ctx)
            return [Word(w, text, "", False, bool(GLOB.search(w))) for w in self._split(word.value)]
        return None

    def _known_words(self, node: Node, word: Word, ctx: _Ctx) -> list[Word]:
        """An argument made of variables whose value is known (``x='rm -rf d'; eval "$x"``):
        that value, split into words when unquoted; unknown when it may hold several."""
        text = _text(node, ctx)
        if _special_variable(node, ctx) and not ((ctx.depth or self.calling or self.set_words)
                                                 and self.positional is not None):
            return [word]  # $1, $@: what a caller passes, unless bash -c CODE ARGS, a
            # function call or a set -- seen in this command gave them
        if text in ("$@", "$*", "${@}", "${*}") and self.positional is not None:
            if self.ifs is None:  # set -- 'a b' c; cat $@: each word split at IFS
                return [word]
            return [Word(w, text, "", False, bool(GLOB.search(w))) for a in self.positional
                    for w in (self._split(a) if self.ifs else [a] if a else [])]
        cands = self._static(node, ctx)
        if cands is None or len(cands) != 1:
            return [word]
        if self.listed_vars and _expanded_names(text) & self.listed_vars:
            text = LISTED  # read from a listing: a path here, unknown as a program
        if node.type in ("string", "raw_string"):
            return [Word(cands[0], text)]
        parts = self._concat_words(node, ctx) if node.type == "concatenation" else None
        if parts is not None:  # x="$c": one word; "$a"$b: a whole, b split
            glob = any(c.type == "word" and GLOB.search(_text(c, ctx))
                       for c in node.named_children)
            return [Word(w, text, "", False, glob) for w in parts]
        if self.ifs is None and cands[0]:
            return [word]  # split at an IFS only known at run time (set in a function)
        return [Word(w, text, "", False, bool(GLOB.search(w))) for w in self._split(cands[0])]

    def _concat_words(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """The words an unquoted concatenation makes: its quoted and literal parts whole,
        each unquoted expansion split at IFS (a field boundary at either end of its value
        when it starts or ends with an IFS character); None when a part's value is not one
        known string, or IFS is only known at run time."""
        if self.ifs is None:
            return None
        words: list[str] = []
        current: list[str | None] = [None]  # the word being made; None: none started

        def close() -> None:
            if current[0] is not None:
                words.append(current[0])
            current[0] = None

        pos = node.start_byte
        for child in node.children:
            gap = ctx.src[pos:_start(child, ctx)].decode("utf-8", "surrogateescape")
            pos = child.end_byte
            if not child.is_named:
                current[0] = (current[0] or "") + gap + _text(child, ctx)
                continue
            found = self._static(child, ctx)
            if found is None or len(found) != 1:
                return None
            if child.type not in _SPLIT_EXPANSIONS or not self.ifs:
                current[0] = (current[0] or "") + gap + found[0]
                continue
            if gap:
                current[0] = (current[0] or "") + gap
            value = found[0]
            if value[:1] and value[:1] in self.ifs and value[:1].isspace():
                close()
            for i, piece in enumerate(self._split(value)):
                if i:
                    close()
                current[0] = (current[0] or "") + piece
            if value[-1:] and value[-1:] in self.ifs:
                close()
        tail = ctx.src[pos:node.end_byte].decode("utf-8", "surrogateescape")
        if tail:
            current[0] = (current[0] or "") + tail
        close()
        return words

    def _static_expansion(self, text: str) -> list[str] | None:
        """``${!ref}`` where ref names an array element (``ref='a[1]'``): that element's
        values; anything else as ``ShellValues`` computes it."""
        m = re.fullmatch(r"\$\{!([A-Za-z_]\w*)\}", text)
        names = self._static_variable(m.group(1)) if m is not None else None
        elements = [_ELEMENT_NAME.fullmatch(n) for n in names or ()]
        if names and all(elements):
            found = [self._element_values(e.group(1), e.group(2)) for e in elements if e]
            return None if None in found else bounded(list(dict.fromkeys(
                v for values in found for v in values or ())))
        return ShellValues._static_expansion(self, text)

    def _static_element(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """``${a[@]}``, ``${a[*]}``, ``${a[2]}`` of an array with static elements."""
        if [c.type for c in node.children] != ["${", "subscript", "}"]:
            return None
        sub = next(c for c in node.children if c.type == "subscript")
        name, _, index = _text(sub, ctx).partition("[")
        return self._element_values(name, index.rstrip("]"))

    def _element_values(self, name: str, index: str) -> list[str] | None:
        """The values of element ``index`` of the array ``name`` (``@``/``*``: all)."""
        name = self._resolved(name)
        found = self.arrays.get(name)
        if name in self.sparse and index in ("@", "*"):
            gaps = self.holes.get(name)
            if gaps is None or found is None or len(found) != 1:
                return None  # t[2]=x: t has one element, at 2; its list is not followed
            found = [[v for i, v in enumerate(found[0]) if i not in gaps]]
        if name in self.maps and not self.taint_all:  # ${m[key]}, ${m[@]}, ${m[$k]}
            entries = self.maps[name]
            if index in ("@", "*"):
                return [" ".join(entries.values())]
            keys = self._subscript_values(index, arithmetic=False)
            return None if keys is None else list(dict.fromkeys(entries.get(k, "")
                                                                for k in keys))
        if found is not None and index not in ("@", "*") and not index.isdigit():
            indices = self._subscript_values(index, arithmetic=True)  # ${a[$i]}, ${a[i]}
            if indices is None and self._numeric_index(index):  # i counts: any element
                return list(dict.fromkeys([*(v for items in found for v in items), ""]))
            if indices is None or not all(i.isdigit() for i in indices):
                return None
            return list(dict.fromkeys(items[int(i)] if int(i) < len(items) else ""
                                      for i in indices for items in found))
        if found is None or not (index in ("@", "*") or index.isdigit()):
            return None
        if index == "*":  # joined at the first character of IFS
            return None if self.ifs is None else [self.ifs[:1].join(items) for items in found]
        if index == "@":
            return [" ".join(items) for items in found]
        at = int(index)
        return list(dict.fromkeys(items[at] if at < len(items) else "" for items in found))

    def _numeric_index(self, index: str) -> bool:
        """An indexed array's subscript made of numbers, operators and variables that hold
        numbers only (``$i``, ``i + 1``): it picks an element or none, and runs nothing."""
        names = re.findall(r"[A-Za-z_]\w*", index)
        return not self.taint_all and bool(names) and \
            re.fullmatch(r"[\w\s$(){}+*/%-]*", index) is not None and \
            all(n in self.numeric for n in names)

    def _subscript_values(self, index: str, arithmetic: bool) -> list[str] | None:
        """The values of a subscript that is a literal key or one variable (``$k``,
        ``${k}``; a bare name in an indexed array's arithmetic subscript)."""
        m = re.fullmatch(r"\$([A-Za-z_]\w*)|\$\{([A-Za-z_]\w*)\}" +
                         (r"|([A-Za-z_]\w*)" if arithmetic else ""), index)
        if m is None:
            return None if re.search(r"[$`\\'\"]", index) or arithmetic else [index]
        name = next(g for g in m.groups() if g)
        if self.taint_all or name in self.unknown:
            return None
        return self.known.get(name) or self.loops.get(name)

    def _static_parts(self, node: Node, ctx: _Ctx) -> list[str] | None:
        out = [""]
        pos = node.start_byte
        quoted = node.type != "concatenation"
        for child in node.children:
            gap = ctx.src[pos:_start(child, ctx)].decode("utf-8", "surrogateescape")
            pos = child.end_byte
            if not child.is_named:
                parts = [gap] if quoted or child.type == "``" else [gap + _text(child, ctx)]
            else:
                found = self._static(child, ctx)
                if found is None:
                    return None
                parts = [gap + f for f in found]
            joined = bounded([a + b for a in out for b in parts])
            if joined is None:
                return None  # more values than followed: only known at run time
            out = joined
        tail = ctx.src[pos:node.end_byte].decode("utf-8", "surrogateescape")
        return [o + tail for o in out]

    def _static_output(self, node: Node, ctx: _Ctx) -> list[str] | None:
        """``$(echo rm)``, ``$(printf '\\x72m')``: the output of a static echo or printf, as bash
        makes a word of it (NUL bytes dropped, trailing newlines cut)."""
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1:
            return None
        self.decoding = False
        out = self._printed(inner[0], ctx)
        if out is not None and self.decoding:
            self.decoded.add(_text(node, ctx))
        return None if out is None else [out.replace("\x00", "").rstrip("\n")]

    def _held_number(self, value: Node, ctx: _Ctx) -> bool:
        """``$(< run/app.pid)``, ``$(cat run/app.pid)``: a small workspace file nothing in
        this command may have written first holds one number now (a pid, a port). The
        value is judged as a number, never taken as a word: what the file holds is not
        what the command line shows."""
        inner = [c for c in value.named_children if c.type != "comment"]
        if value.type != "command_substitution" or len(inner) != 1:
            return False
        cmd = inner[0]
        if cmd.type == "file_redirect" and _text(cmd, ctx).lstrip().startswith("<"):
            dest = cmd.child_by_field_name("destination")
        elif cmd.type == "command" and len(args := cmd.children_by_field_name("argument")) \
                == 1 and len(cmd.named_children) == 2 and _text(cmd, ctx).startswith("cat "):
            dest = args[0]
        else:
            return False
        found = self._static(dest, ctx) if dest is not None else None
        text = self._fed_file(found[0]) if found is not None and len(found) == 1 else None
        return text is not None and len(text) < 64 and DECIMAL.fullmatch(
            text.rstrip("\n")) is not None

    def _printed_words(self, program: str, node: Node, ctx: _Ctx) -> list[str] | None:
        """The words one argument gives a printer (``{r,}m``, ``"${a[@]}"``, ``$x``: as bash
        makes them; ``echo *.c``: the names it matches, not the pattern), or None."""
        if self._static(node, ctx) is None:
            return None
        out: list[str] = []
        for w in self._arg_words(node, ctx):
            if w.value is None:
                return None
            names = self._glob_here(w.value) if program in ("echo", "printf") and \
                node.type in ("word", "concatenation") and w.expandable else None
            out += names or [w.value]
        return out

    def _printed(self, cmd: Node, ctx: _Ctx, stdin: str | None = None) -> str | None:
        """What a static command prints: ``echo``/``printf``, or a decoder or filter
        (``base64 -d``, ``rev``, ``tr``, ``xxd -r -p``) over known input; None otherwise."""
        if cmd.type == "pipeline":
            return self._printed_stages(cmd, ctx, stdin)
        if cmd.type == "redirected_statement":
            return self._printed_fed(cmd, ctx, stdin)
        if cmd.type == "file_redirect":  # $(< f): what f holds
            return self._printed_file(cmd, ctx)
        if cmd.type != "command":
            return None
        name = cmd.child_by_field_name("name")
        for c in cmd.named_children:
            if c.type.endswith("redirect") or c.type == "variable_assignment":
                stdin = self._fed_text(c, ctx, stdin)
                if stdin is None:
                    return None
        if name is None:
            return None
        found = self._static(name, ctx)
        if found is None or len(found) != 1:
            return None
        argv = list(found)
        for node in cmd.children_by_field_name("argument"):
            words = self._printed_words(argv[0], node, ctx)
            if words is None:
                return None
            argv += words
        if argv == ["git", "rev-parse", "--show-toplevel"]:
            top = self._repository_top()
            return None if top is None else top + "\n"
        if argv[:3] == ["git", "rev-parse", "--git-path"] and len(argv) == 4:
            return self._git_path(argv[3])
        return self._prints(argv, stdin)

    def _git_path(self, name: str) -> str | None:
        """What ``git rev-parse --git-path NAME`` prints at a repository's top whose ``.git``
        is a folder: ``.git/NAME`` (``hooks`` only where no ``core.hooksPath`` is set in the
        repository's or the user's configuration, which would name another folder)."""
        top = self._repository_top()
        folders = self._current()
        if top is None or len(folders) != 1 or os.path.realpath(folders[0]) != top or \
                not os.path.isdir(os.path.join(top, ".git")) or ".." in name.split("/") or \
                name.startswith("/") or {"GIT_DIR", "GIT_COMMON_DIR", "GIT_CONFIG_GLOBAL",
                                         "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT"} & (
                    set(self.env) | self.tainted):
            return None
        if name.split("/")[0] == "hooks":
            home = self.env.get("HOME", "/nonexistent")
            configs = [os.path.join(top, ".git", "config"), os.path.join(home, ".gitconfig"),
                       os.path.join(self.env.get("XDG_CONFIG_HOME", f"{home}/.config"), "git",
                                    "config"), "/etc/gitconfig"]
            for path in configs:
                try:
                    text = Path(path).read_text(errors="replace")
                except OSError:
                    continue
                if "hookspath" in text.lower():
                    return None
        return f".git/{name}\n"

    def _repository_top(self) -> str | None:
        """What ``git rev-parse --show-toplevel`` prints where the shell is: the nearest
        folder holding ``.git`` at or above it, when that is inside the workspace (``cd
        "$(git rev-parse --show-toplevel)"``); None when the folder, or the repository
        (``GIT_DIR``, ``GIT_WORK_TREE``), is only known at run time."""
        folders = self._current()
        if len(folders) != 1 or len(self.cwds) != 1 or {"GIT_DIR", "GIT_WORK_TREE"} & (
                set(self.env) | set(self.known) | self.unknown | self.tainted):
            return None
        ws = os.path.realpath(self.ws)
        here = os.path.realpath(folders[0])
        while here == ws or here.startswith(ws + "/"):
            if os.path.lexists(os.path.join(here, ".git")):
                return here
            if here == ws:
                return None
            here = os.path.dirname(here)
        return None

    def _prints(self, argv: list[str], stdin: str | None) -> str | None:
        """What a printer with static words prints (echo, printf, seq, a lookup), or a
        filter over known input (``decoding`` notes a decoder)."""
        if argv[0] == "echo":
            out = echo_output(argv[1:], self.xpg_echo)
            return None if out is None else out + "\n"
        if argv[0] == "printf":
            return printf_output(argv[1:])
        if argv[0] == "seq":
            return seq_output(argv[1:])
        if argv[0] in ("dirname", "basename"):
            return path_part_output(argv[0], argv[1:])
        if argv[:2] in (["command", "-v"], ["type", "-P"]) or argv[0] == "which":
            return _lookup_output(argv[-1])
        if argv[0] == "cat" and len(argv) > 1 and not any(a.startswith("-") for a in argv[1:]):
            held = [self._content(a) for a in argv[1:]]
            return None if None in held else "".join(h or "" for h in held)
        out = None if stdin is None else filter_output(argv, stdin)
        if out is not None and argv[0].rsplit("/", 1)[-1] in _DECODERS:
            self.decoding = True
        return out

    def _printed_stages(self, pipeline: Node, ctx: _Ctx, stdin: str | None) -> str | None:
        for stage in (c for c in pipeline.named_children if c.type != "comment"):
            stdin = self._printed(stage, ctx, stdin)
            if stdin is None:
                return None
        return stdin

    def _printed_file(self, redirect: Node, ctx: _Ctx) -> str | None:
        dest = redirect.child_by_field_name("destination")
        found = self._static(dest, ctx) if dest is not None and _text(
            redirect, ctx).lstrip().startswith("<") else None
        return self._content(found[0]) if found is not None and len(found) == 1 else None

    def _content(self, path: str) -> str | None:
        """What a file this command wrote with shown text holds (``printf CODE > f``), when
        no ``cd`` anywhere in the command can make the name another file."""
        if "PWD" in self.tainted or not path:
            return None
        return self.contents.get(os.path.normpath(path))

    def _printed_fed(self, cmd: Node, ctx: _Ctx, stdin: str | None) -> str | None:
        """``cat <<'E' .. E`` (a command the grammar wraps with its here-doc): what it
        prints of the here-doc's static body."""
        body = cmd.child_by_field_name("body")
        feeds = [c for c in cmd.named_children if body is None or c.id != body.id]
        if body is None or any(c.type != "heredoc_redirect" for c in feeds):
            return None
        for c in feeds:
            stdin = self._fed_text(c, ctx, stdin)
        return None if stdin is None else self._printed(body, ctx, stdin)

    def _fed_text(self, node: Node, ctx: _Ctx, stdin: str | None) -> str | None:
        """The static text a here-string or a here-doc feeds a printer; None for any other
        redirection or assignment (what it prints is then not known)."""
        if node.type == "herestring_redirect" and node.named_children:
            found = self._static(node.named_children[0], ctx)
            return found[0] + "\n" if found is not None and len(found) == 1 else None
        if node.type == "heredoc_redirect":
            fed = self._stdin_of(node, ctx)
            return fed.value if fed is not None else None
        return None

    def _promoted(self, e: Effect, exported: Mapping[str, list[str] | None] | None) -> None:
        """``x=rm export x``, ``x=rm readonly x``: bash keeps the value given before them."""
        if exported and not e.wrappers and e.argv and program_name(e.argv[0]) in _PROMOTES:
            for var, values in exported.items():
                self._may_hold(var, values)

    @staticmethod
    def _printed_secrets(e: Effect, read: list[str]) -> None:
        """``cat .env``, ``grep KEY .env``: a workspace file of secrets printed into the
        transcript, like ``gh auth token`` (a person sees it first; a count, a test or the
        names alone print none of them)."""
        read = [r for r in read if os.path.basename(r) not in _SETTINGS_NOT_SECRETS]
        if read and prints_secrets_read(e.argv):
            e.secret = e.secret or f"{e.argv[0].shown} prints {read[0]}, a file of secrets"

    def _credentials(self, e: Effect, decision: DecisionValue) -> None:
        """Credentials the command prints, and searches for them: a search among files it
        may read unasked only matters when something sends what it finds away; one a person
        is asked about anyway (a folder outside) may reach credentials, like a print."""
        if e.secret or e.hunts:
            self.printers.add(len(self.entries))  # the entry it is about to get
        if e.secret:
            self.secrets.append(e.secret)
        if e.hunts:
            (self.hunted if decision == "allow" else self.secrets).append(e.hunts)

    def _simple(self, argv: list[Word], ctx: _Ctx, assigned: Sequence[str] = (),
                floor_reasons: Sequence[str] = (),
                exported: Mapping[str, list[str] | None] | None = None) -> None:
        argv, ctx = self._arg_file(argv, ctx)
        argv, assigned = _as_options(argv, assigned, exported or {})
        argv = self._git_aliased(argv)
        e = self._analyzed(argv, by_hash=not ctx.child)
        self._glob_argv(e, by_hash=not ctx.child)
        self._patch_sources(argv)
        if _may_leave(argv, e):
            self.leaves += 1
        self._promoted(e, exported)
        if self._call(e, ctx) or self._alias_call(e, ctx):
            return
        self._hidden_name(e, ctx)
        ifs = (exported or {}).get("IFS", [self.ifs or ""]) if self.ifs is not None or (
            "IFS" in (exported or {})) else None
        self._builtin(e, ctx.stdin or (_paths_under(ctx.listed) if ctx.listed else None),
                      ifs[0] if ifs is not None and len(ifs) == 1 else None, ctx.numbered)
        self._reads_decoded(e, ctx)
        if "IFS" in self.unknown or "IFS" in self.known:  # printf -v IFS, read IFS
            self.ifs = self._ifs_value()
        untouched = self._untouched_env()
        for var in assigned:  # before _runs_written: GIT_CONFIG_GLOBAL=written.ini git ..
            values = (exported or {}).get(var)
            self._setting_files(e, var, values)
            if shell_code_var(var) and not harmless_setting(var, values, untouched.get(var)):
                e.at_least("deny", f"setting {var} makes the shell run code from elsewhere")
            if is_dangerous_variable(var) and not (var == "IFS" and values is not None) and \
                    not harmless_setting(var, values, untouched.get(var)):
                e.add("exec", f"setting {var} changes what programs run")  # a static IFS is
                # modelled; PAGER=cat: cat is judged; HOME="$HOME": what it held
                e.unseen = e.unseen or loads_unseen_code(var, values)
        self._runs_written(e, ctx, exported)
        for reason in floor_reasons:
            e.at_least("ask", reason)
        if e.argv and ".." in (e.argv[0].value or "").split("/")[:-1]:
            # judged as the program it names when that is stricter (/usr/../bin/rm is rm),
            # never less than ask: a link on the way may lead elsewhere than it reads
            e.at_least("ask", f"the path {e.argv[0].shown} goes through '..', which a link "
                              "on the way may send to another program")
        self._defined_names(e, ctx)
        self._stdin(e, ctx)
        if self._covers_workspace(e.trees):
            e.add("destructive", f"{e.argv[0].shown} changes the whole workspace recursively")
        self._hidden_command(e, ctx)
        self._option_matches(e)
        if e.unseen:
            self.unnamed.append(e.unseen)
        self._made_handed(e, ctx)
        before_secrets = len(self.secret_files)
        decision, path_reasons = self._judge_effect(e, moves_shell=not ctx.child)
        self._printed_secrets(e, self.secret_files[before_secrets:])
        self._credentials(e, decision)
        if e.sends and e.argv:
            self.senders.append(e.argv[0].shown)
        self._note_writes(e, ctx.fetched)
        decision = strictest(decision, DEFAULT_DECISION[e.risk], e.floor)
        reasons = [*e.reasons, *path_reasons]
        floor = "deny" if decision == "deny" else e.floor
        self._entry(e.argv or argv, e.risk, decision, reasons, floor, ctx, e.wrappers)
        saved = {v: (self.known.get(v), v in self.unknown) for v in exported or {}}
        outer_ifs, outer_prefixed = self.ifs, self.prefixed
        for var, found in (exported or {}).items():
            self._hold(var, found, found is None)
            if var == "IFS":  # IFS=_ eval '..': the code splits at the prefix's value
                self.ifs = found[0] if found is not None and len(found) == 1 else None
        self.prefixed, outer_kept = frozenset(exported or ()), self.env_kept
        self.env_kept = outer_kept and _hands_on_env(argv, e)
        self._run_inner(e, ctx)
        self.ifs, self.prefixed, self.env_kept = outer_ifs, outer_prefixed, outer_kept
        for var, (held, unknown) in saved.items():
            self._hold(var, held, unknown)

    def _hidden_name(self, e: Effect, ctx: _Ctx) -> None:
        """A program whose name is only known at run time, or named by a download or a
        decoder."""
        if e.argv and (e.argv[0].text == LISTED or (
                not program_name(e.argv[0]) and e.argv[0].value is None)):
            self.unnamed.append(f"the program {e.argv[0].text} is only known at run time")
            if self._names_download(e.argv[0].text):
                e.at_least("deny", "runs a program named by downloaded text, like code "
                                   "piped from a download into a shell")
            if ctx.piped:
                e.at_least("deny", "pipes data into a program the preview cannot name (it "
                                   "may be a shell)")
            self._maybe_shell_code(e, ctx)
        if e.argv and (any(d in e.argv[0].text for d in self.decoded)
                       or _expanded_names(e.argv[0].text) & self.decoders):
            e.at_least("ask", "the program is named by a decoder's output (base64, rev, tr): "
                              "a person should see what it decodes to")

    def _alias_call(self, e: Effect, ctx: _Ctx) -> bool:
        """A call of an alias this command defined with a shown value, on a later line of
        the same code, with ``shopt -s expand_aliases`` (a non-interactive bash expands
        nothing else): judged as its expansion followed by the call's words."""
        name = e.argv[0].value if e.argv else None
        found = self.alias_values.get(name or "")
        if found is None or not self.expands_aliases or e.wrappers:
            return False
        value, shell, src, row = found
        if shell != ctx.shell or src is not ctx.src or row >= self.row:
            return False
        self._entry(e.argv, "read", "allow", [f"calls the alias {name}, defined earlier in "
                                              "this command (its expansion is judged)"], "", ctx)
        words = " ".join(shlex.quote(w.value) if w.value is not None else w.text
                         for w in e.argv[1:])
        self.run(f"{value} {words}", f"alias {name}", ctx.depth + 1, shell=ctx.shell)
        return True

    def _recursion(self, e: Effect, name: str, body: Node, ctx: _Ctx) -> None:
        """A function calling itself (``walk() { ..; walk "$e"; }``): its body is judged again
        with the call's words (when shown) and with words only known at run time, each walked
        again while a pass changes a value, as a loop's is (``_loop_body``); a deeper call
        adds nothing these passes did not judge."""
        self._entry(e.argv, "read", "allow", [f"calls {name} again (its body is judged with "
                                              "words only known at run time)"], "", ctx)
        self.entries[-1]["function"] = name
        if body.id in self.recursing:
            return
        self.calls += 1
        outer = (self.argv0, self.positional, self.args_given, self.listed_args)
        known = [w.value for w in e.argv[1:]]
        self.listed_args = _listed_indices(e.argv[1:])
        self.recursing.add(body.id)
        seen = {_entry_key(x) for x in self.entries}
        mark = len(self.entries)
        if None not in known:  # f 'rm -rf src': these words first, then any words
            self.positional, self.args_given = [v or "" for v in known], True
            self._loop_body(body, ctx)
        self.positional, self.args_given = None, False
        self._loop_body(body, ctx)
        self.recursing.discard(body.id)
        self.argv0, self.positional, self.args_given, self.listed_args = outer
        self.entries[mark:] = [x for x in self.entries[mark:] if _entry_key(x) not in seen]

    def _call(self, e: Effect, ctx: _Ctx) -> bool:
        """A call of a function this command defined, in the shell that defined it: its body
        is judged with the call's words as ``"$@"`` (``run(){ "$@"; }; run wc -l f`` runs
        wc). ``command NAME``, ``env NAME``, ``sudo NAME`` run the program, not the function."""
        name = e.argv[0].value if e.argv else None
        if name and name not in self.bodies and name not in RULES and "/" not in name and \
                _NOT_FOUND_HANDLER in self.bodies and name != _NOT_FOUND_HANDLER:
            handled = copy.copy(e)  # restore x after command_not_found_handle() { git "$@"; }
            handled.argv = [Word.of(_NOT_FOUND_HANDLER), *e.argv]  # bash calls it when no
            self._call(handled, ctx)  # program of that name is found: judged as well
        if name not in self.bodies or e.wrappers not in ([], ["time"]) or ctx.child or (
                name in self.maybe_defined and name in RULES):
            return False  # false && rm() { ..; }; rm f: the program may run; xargs rm and
            # find -exec rm run the program: only the shell calls its functions
        body, where = self.bodies[name]
        if where.shell != ctx.shell and not self._imported(name):
            return False  # another shell's: the program of that name runs
        if name in self.maybe_defined:
            self.unnamed.append(f"{name} may run the function or a program of that name: its "
                                "definition may not have run")
        if body.id in self.calling and self.calls < MAX_CALLS:
            self._recursion(e, name, body, replace(where, piped=ctx.piped, stdin=ctx.stdin,
                                                   shell=ctx.shell))
            return True
        if body.id in self.calling or self.calls >= MAX_CALLS:
            self.unnamed.append(f"a call of {name} is not followed (more calls than are "
                                "judged): what it runs is only known at run time")
            return False
        self.called.add(body.id)
        self.calls += 1
        self._entry(e.argv, "read", "allow", [f"calls {name}, a function this command "
                                              "defines (its commands are judged)"], "", ctx)
        self.entries[-1]["function"] = name  # prints only what its body prints
        for w in e.argv[1:]:  # f "$t": the path goes on as $1
            for var in _expanded_names(w.text) if w.value is None else ():
                self._not_made(var, handed=True)
        known = [w.value for w in e.argv[1:]]
        outer = (self.argv0, self.positional, self.args_given, self.listed_args)
        self.positional = None if None in known else [v or "" for v in known]
        self.args_given = self.positional is not None
        self.listed_args = _listed_indices(e.argv[1:])
        self.calling.append(body.id)
        start, ifs, values = len(self.entries), self.ifs, self._values()
        shadowed, self.shadowed = self.shadowed, {}
        self.shadow_stack.append(shadowed)
        call_locals, self.call_locals = self.call_locals, set()
        attributes, refs = self._attributes(), dict(self.refs)
        leaves = self.leaves
        self._visit(body, replace(where, piped=ctx.piped, stdin=ctx.stdin, shell=ctx.shell))
        for redirect in self.redirects.get(name, ()):
            self._visit(redirect, replace(where, piped=False, stdin=None, numbered=NONE,
                                          shell=ctx.shell))
        sure = self._set_for_sure(_text(body, where)) if self.leaves == leaves else set()
        self._join(values)  # local x=v ends with the call: a value before may still hold
        for name, held in self.shadowed.items():
            self._may_hold(name, held, merge=True)  # what the global held when local came
        global_ifs = self.shadowed.get("IFS", [ifs or ""])
        self.shadowed = shadowed
        self._locals_gone(attributes, refs)
        self.call_locals = call_locals
        self.shadow_stack.pop()
        self.maybe_unset -= sure
        self.calling.pop()
        self.argv0, self.positional, self.args_given, self.listed_args = outer
        if re.search(r"\blocal\b[^;\n]*\bIFS=", _text(body, where)):
            self.ifs = ifs if global_ifs == [ifs or ""] else None  # local IFS=,: back to
            # the caller's value on return (IFS=_; local IFS=' ': the global is _ now)
        ran = self.entries[start:]
        if name in RULES and any(x["decision"] != "allow" for x in ran):
            self._entry(e.argv, "exec", "deny", [
                f"{name} was defined earlier in this command under a program's name: the "
                "call runs more than a read in its place"], "deny", ctx)
        elif name in RULES and not any(program_name(Word.of(str(x["argv"][0]))) == name
                                       for x in ran if x["argv"]):
            self._entry(e.argv, "exec", "ask", [
                f"{name} was defined earlier in this command under a program's name and runs "
                "other programs in its place"], "", ctx)
        return True

    def _locals_gone(self, attributes: tuple[dict[str, str], set[str], set[str], set[str],
                                              set[str]], refs: dict[str, str]) -> None:
        """A call's end: its locals' ``-i`` and ``-n`` go with them (``f(){ local -n o=p;
        }; f; o=-delete`` sets o), the caller's come back."""
        _, integers, maybe_integers, _, _ = attributes
        for name in self.call_locals:
            (self.integers.add if name in integers else self.integers.discard)(name)
            (self.maybe_integers.add if name in maybe_integers else
             self.maybe_integers.discard)(name)
            if name in refs:
                self.refs[name] = refs[name]
            else:
                self.refs.pop(name, None)

    def _set_for_sure(self, body: str) -> set[str]:
        """Names a function's body that ran to its end set for sure and keeps after the call:
        set, not maybe unset, and no word of a ``local``/``declare``/``typeset`` of it."""
        declared = {n for m in _DECLARED_IN.finditer(body) for n in _NAME.findall(m.group(1))}
        return {n for n in [*self.known, *self.loops]
                if n not in self.maybe_unset and n not in declared}

    def _glob_argv(self, e: Effect, by_hash: bool) -> None:
        """``uniq src/*``: bash hands the program each name a glob matches, and a program
        that takes its operands by place reads the second as its output (``uniq IN OUT``,
        ``xxd``, ``python3 -m json.tool``) or a name ``@FILE`` as a file of options (gcc,
        nm). The command is judged again on those names (up to ``MAX_GLOB_ARGV`` words) and
        the stricter of the two taken."""
        if not e.argv or len(self.cwds) != 1 or self.cwds[0] is None:
            return
        words: list[Word] = [e.argv[0]]
        for w in e.argv[1:]:
            found = self._glob_here(w.value) if w.expandable and w.value is not None else None
            words.extend([w] if found is None or found == [w.value] else map(Word.of, found))
        if len(words) == len(e.argv) or len(words) > MAX_GLOB_ARGV:
            return  # no glob matched more than itself, or too many names to judge again
        other = self._analyzed(words, by_hash)
        e.writes.extend(w for w in other.writes if w not in e.writes)
        e.replaces.extend(w for w in other.replaces if w not in e.replaces)
        for reason in other.reasons:
            e.add(other.risk, reason)
        e.add(other.risk, "")
        e.at_least(other.floor, "")
        e.unseen = e.unseen or other.unseen

    def _option_matches(self, e: Effect) -> None:
        """``sort *`` where a file is named ``--output=a.txt``, ``tar -cf x.tar *`` beside
        ``--checkpoint-action=exec=sh``: a glob's match that starts with ``-`` is an option
        to the program, not the path it was judged as. Before a ``--``, such a match (now,
        or among what the command made) is not shown: ask, and deny under auto."""
        prog = program_name(e.argv[0]) if e.argv else ""
        for w in e.argv[1:]:
            if w.value == "--":
                return
            if not w.expandable or w.value is None or not GLOB.search(w.value):
                continue
            for base in self._current():
                found = self._glob(w.value, str(base))
                option = next((m for m in found or () if m.startswith("-")), None)
                if option is not None:
                    why = f"{w.shown} matches the file {option}, which {prog} reads as an option"
                    self.unnamed.append(why)
                    e.at_least("ask", why)
                    return

    def _hidden_command(self, e: Effect, ctx: _Ctx) -> None:
        """A program that runs code the preview cannot see (an unknown program, ``uv run``,
        ``npm exec``, a script, inline code) may run what its arguments say: each tail of them
        that starts with a known program that is not read-only is judged as run (unless the
        program's own command is known: a wrapper's), and an argument that reads as a refused
        command line refuses the call (``perl -e 'system(@ARGV)' 'rm -rf src'``). Only a
        refusal is taken from them: the program itself is already ``ask``."""
        if e.risk not in ("exec", "install") or ctx.depth > 4:
            return
        if len(e.argv) > MAX_HIDDEN_ARGS or any(
                len(w.value or "") > MAX_HIDDEN_TEXT for w in e.argv[1:]):
            # not searched: what they may run is only known at run time (deny under auto)
            self.unnamed.append(f"{e.argv[0].shown} is given more arguments than are searched "
                                "for a command it may run")
        args = e.argv[1:MAX_HIDDEN_ARGS]
        own = program_name(e.argv[0]) if e.argv else ""
        if e.nested or e.nested_under or e.scripts:  # a wrapper's command is judged
            args = []  # already; data it is given (perl -e 'system(@ARGV)' 'rm -rf src') is
            # searched below
        sub = next((i for i, w in enumerate(args) if not (w.value or "-").startswith("-")),
                   None) if own in SUBCOMMAND_PROGRAMS else None
        for i, w in enumerate(args):
            name = program_name(w)
            if not name or name == own or name not in RULES or i == sub or (
                    w.value or "").startswith("-"):
                continue  # npm install x: the subcommand is not the install program
            tail = analyze(args[i:])
            if tail.risk != "read" or tail.scripts or tail.nested or tail.nested_under or \
                    tail.floor not in ("", "allow"):
                e.nested.append((f"argument of {e.argv[0].shown}", args[i:]))
        code = {c.value for _, c in e.scripts} | {w.value for w in e.inline}  # judged already
        for w in e.argv[1:MAX_HIDDEN_ARGS]:
            if not w.value or w.value in code or not _SHELL_LIKE.search(w.value.strip()):
                continue
            walker = self._as_command_line(w.value)
            if walker is not None and walker.verdict().decision == "deny":
                e.at_least("deny", f"an argument of {e.argv[0].shown} is a command line "
                                   f"that is refused: {w.shown}")
                return
            if walker is not None and walker.unnamed:  # g${unset}it checkout -- .
                self.unnamed.append(f"an argument of {e.argv[0].shown} is a command line "
                                    f"whose program is only known at run time: {w.shown}")

    def _as_command_line(self, text: str) -> _Walker | None:
        """``text`` walked as a command line on its own (None: too long, unnamed above, or
        a program's code that bash would not read)."""
        if len(text) > MAX_HIDDEN_TEXT:
            return None
        if "\n" in text and _PARSER.parse(text.encode("utf-8", "surrogateescape")
                                          ).root_node.has_error:
            return None  # a program's code (perl, lua..), not a command line bash would run
        walker = _Walker(self.ws, self.roots, self.env)
        walker.run(text, "", 1)
        return walker

    def _hold(self, var: str, values: list[str] | None, unknown: bool) -> None:
        """Set what a variable holds for the code a command runs (``c=rm bash -c '$c ..'``),
        and back afterwards."""
        if values is None:
            self.known.pop(var, None)
        else:
            self.known[var] = values
        (self.unknown.add if unknown else self.unknown.discard)(var)

    def _run_inner(self, e: Effect, ctx: _Ctx) -> None:
        """The shell code and the commands one simple command runs."""
        for how, code in e.scripts:
            if how == "trap":  # its code runs when the signal comes, if ever
                self._trap_set(e, code, ctx)
            else:
                self._script(how, code, ctx,
                             e.code_args if how.endswith((" -c", " <<", " -O")) else None)
        if e.argv and program_name(e.argv[0]) in self.runs_args and len(e.argv) > 1:
            e.nested.append((f"{e.argv[0].shown} (runs its arguments)", e.argv[1:]))
        for how, nested in e.nested:
            if how == "xargs" and ctx.listed:
                nested = [_fed(w, ctx.listed) for w in nested]
            elif how == "xargs" and ctx.numbered.ids and ctx.numbered.whole:
                nested = [replace(w, dashless=True) if w.value is None and (is_input_arguments(
                    w.text) or w.dynamic == "input") else w for w in nested]  # git rev-list |
                # xargs git show, xargs -I{} sh -c 'git show {}': object ids
            elif how == "xargs" and ctx.stdin is not None and ctx.stdin.value is not None:
                lines = _fed_lines(nested, ctx.stdin.value)
                for line in lines:  # xargs -I R: one command per input line
                    self._simple(line, replace(ctx, via=how, piped=False, stdin=None, numbered=NONE,
                                               listed=(), child=True))
                if lines:
                    continue
                nested = _fed_words(nested, ctx.stdin.value)
            self._simple(nested, replace(ctx, via=how, piped=False, stdin=None,
                                         numbered=NONE, listed=(), child=True))
        for how, nested, start in e.nested_under:  # find -execdir: in each file's folder
            self._in_folders_under(start.value, nested, replace(
                ctx, via=how, piped=False, stdin=None, numbered=NONE, listed=(), child=True))

    def _in_folders_under(self, start: str | None, argv: list[Word], ctx: _Ctx) -> None:
        """``argv`` judged in every folder under ``start`` (from each folder the command may
        be in; ``.git`` folders, which hold git's files and no project's, left out), up to
        ``MAX_EXECDIR_FOLDERS`` of them; past that, or for a start only known at run time,
        in a folder only known at run time."""
        saved = self.cwds
        folders: list[Path | None] = []
        if start is not None and None not in saved:
            for base in self._current():
                for at, dirs, _files in os.walk(os.path.normpath(os.path.join(base, start))):
                    dirs[:] = [d for d in dirs if d != ".git"]  # git's own: no project code
                    folders.append(Path(at))
                    if len(folders) > MAX_EXECDIR_FOLDERS:
                        break
        if not folders or len(folders) > MAX_EXECDIR_FOLDERS:
            folders = [None]
        self.cwds = folders
        try:
            self._simple(argv, ctx)
        finally:
            self.cwds = saved

    def _runs_written(self, e: Effect, ctx: _Ctx,
                      exported: Mapping[str, list[str] | None] | None) -> None:
        """``echo CODE > x.sh; bash x.sh``, ``PATH=bin:$PATH ls`` after writing ``bin/ls``:
        a file written earlier in the command is run. Shell code written by a static
        ``echo``/``printf`` is judged with the call's words; anything else is not shown, like a
        program only known at run time."""
        name = program_name(e.argv[0]) if e.argv else ""
        runners = SHELLS | INTERPRETERS | {"source", "."}
        at = next((i for i, w in enumerate(e.argv[1:], 1) if not (w.value or "-").startswith(
            "-")), None) if name in runners else 0
        script = next((w for w in e.argv[1:] if not (w.value or "").startswith("-")), None) \
            if name in runners else e.argv[0] if e.argv else None
        if script is not None and _written_as(script) in self.fetched:
            e.at_least("deny", f"runs {script.shown}, which this command downloaded")
        if e.argv and (shadow := self._shadowing(e.argv[0], exported)):
            e.at_least("deny", f"{e.argv[0].shown} runs {shadow}, a file of the workspace a "
                               f"PATH set here puts before the system's {e.argv[0].shown}")
        ran = self._ran_file(e.argv[at], exported) if at is not None and e.argv else None
        if ran is not None and at is not None:
            code = self.contents.get(ran)
            if code is not None and (name in SHELLS | {"source", "."} or (
                    at == 0 and re.match(r"#!\s*(/usr)?/bin/(env\s+)?(ba|da)?sh\b|[^#]", code))):
                self.run(code, f"{e.argv[at].shown}, written by this command", ctx.depth + 1,
                         e.argv[at:])
            else:
                self.unnamed.append("runs a file written earlier in this command")
                e.at_least("ask", "runs a file written earlier in this command: what it "
                                  "holds is not shown")
                self._linked_program(e, at, ran)
        elif configuration := self._authored_configuration():
            wrote = ", ".join(configuration[:3])
            self.unnamed.append(f"{name} may read {wrote}, which this command wrote")
            e.at_least("ask", f"{name} may read {wrote}, configuration this command wrote "
                              "that can name programs it runs (core.fsmonitor in .git/config)")
        elif self.authored and e.risk == "exec" and not e.inline and not self._installed(e) \
                and not (name in SHELLS and at is not None):  # sh FILE reads FILE alone
            wrote = ", ".join(sorted(self.authored)[:3])
            self.unnamed.append(f"{name} runs code this command does not show, after it "
                                f"wrote {wrote}")
            e.at_least("ask", f"{name} runs code the command line does not show (a "
                              f"Makefile, a package's scripts, tests) after this command "
                              f"wrote {wrote}: it may run what was written")

    def _linked_program(self, e: Effect, at: int, ran: str) -> None:
        """``ln -s /bin/rm .bin/git; PATH=$PWD/.bin:$PATH git -rf src``: the file run is a
        link or copy this command made of a program, judged as that program too."""
        target = self._made_program(ran)
        if not target:
            return
        other = analyze([Word(target, e.argv[at].text), *e.argv[at + 1:]],
                        self._untouched_env())
        for why in other.reasons or [f"{e.argv[at].shown} is {target}"]:
            e.add(other.risk, f"{e.argv[at].shown} is {target}, linked here: {why}")

    def _note_writes(self, e: Effect, fed_download: bool = False) -> None:
        """What later commands see as written by this one (after it is judged: ``mv a b``
        does not edit a file written before it, ``ln -s /etc kk`` does not write /etc); a
        file written by a command that uses the network, or is fed a download, holds one."""
        name = program_name(e.argv[0]) if e.argv else ""
        self._links(e)
        for w in e.writes:
            if e.risk == "network" or fed_download:
                self.fetched.add(_written_as(w))
            if w.value is None:
                self.written_unknown.add(unquoted_text(w.text))
            if w.value:
                self._written(w.value, folder=name == "mkdir")
                if name not in _METADATA_WRITERS and name != "mkdir" and e.risk in (
                        "write", "destructive"):  # tee, cp, mv, sed -i: any content
                    self.authored.add(os.path.normpath(w.value))
                if name not in _METADATA_WRITERS:
                    self.contents.pop(os.path.normpath(w.value), None)

    def _installed(self, e: Effect) -> bool:
        """A program named by a path outside the workspace and the system's folders
        (``/opt/venv/bin/python -c``): what it runs is its own, like any installed
        program's, not the workspace's files (``/usr/bin/make`` is make)."""
        value = os.path.normpath(e.argv[0].value or "") if e.argv else ""
        return os.path.isabs(value) and os.path.dirname(value) not in SYSTEM_DIRS and \
            not Path(value).is_relative_to(self.ws)

    def _authored_configuration(self) -> list[str]:
        """Files this command wrote with content of its choosing that tools read as their
        configuration, which can name programs to run (``paths.SENSITIVE_DIRS``: a
        ``.git/config`` setting ``core.fsmonitor``, a ``.kube/config`` exec plugin): whatever
        runs after may run what was written."""
        out = []
        for path in sorted(self.authored):
            for base in self._current():
                at = Path(os.path.normpath(os.path.join(base, path)))
                parts = at.relative_to(self.ws).parts if at.is_relative_to(self.ws) else at.parts
                if not SENSITIVE_DIRS.isdisjoint(parts):
                    out.append(path)
                    break
        return out

    def _written(self, path: str, folder: bool = False) -> None:
        """A path this command wrote (a new folder when ``folder``): later globs match it
        (``made``) and running it is judged as running what was written (``written``)."""
        self.written.add(os.path.normpath(path))
        for base in self._current():
            self.made.wrote(os.path.join(base, path), folder)

    def _ran_file(self, word: Word, exported: Mapping[str, list[str] | None] | None
                  ) -> str | None:
        """The written file a program word runs: its path, or NAME found through a PATH
        that names a folder this command wrote into."""
        if not word.value:
            return None
        if word.expandable and GLOB.search(word.value):  # bash [x].sh after writing x.sh
            matched = [self._glob(word.value, str(base)) for base in self._current()]
            return next((key for each in matched for m in each or ()
                         if (key := self._written_key(m)) is not None), None)
        key = self._written_key(word.value)
        if "/" in word.value or key is not None:
            return key
        exported = exported or {}
        path = exported["PATH"] if "PATH" in exported else self.known.get("PATH")
        if path is None and ("PATH" in exported or "PATH" in self.tainted):
            # a PATH only known at run time: a written file of that name may be the one
            return next((f for f in sorted(self.written) if os.path.basename(f) == word.value),
                        None)
        if path is None and "PATH" in self.env:  # the caller's: a folder of the workspace
            path = [self.env["PATH"]]  # on it (a venv's bin) runs what was written there
        for folder in (path[0].split(":") if path and len(path) == 1 else []):
            found = os.path.normpath(os.path.join(folder or ".", word.value))
            inside = os.path.relpath(found, self.ws) if os.path.isabs(found) and \
                Path(found).is_relative_to(self.ws) else None
            hit = next((f for f in (found, inside) if f is not None and f in self.written),
                       None)
            if hit is not None:
                return hit
        return None

    def _shadowing(self, word: Word, exported: Mapping[str, list[str] | None] | None
                   ) -> str | None:
        """The workspace file a system program's name runs through a PATH this command set
        (``export PATH=$PWD/scripts:$PATH; ls`` beside ``scripts/ls``): a program disguised
        as another; None when the name finds the system's program first."""
        name = word.value or ""
        path = (exported or {}).get("PATH") if "PATH" in (exported or {}) else \
            self.known.get("PATH")  # checked first: most commands set no PATH, no stat
        if not name or "/" in name or not path or len(path) != 1 or not any(
                os.path.isfile(os.path.join(d, name)) for d in SYSTEM_DIRS):
            return None
        ws = os.path.realpath(self.ws)
        for folder in path[0].split(":"):
            if folder in SYSTEM_DIRS:
                return None
            for base in self._current():
                found = os.path.realpath(os.path.join(base, folder or ".", name))
                if found.startswith(ws.rstrip("/") + "/") and (
                        os.path.isfile(found) or os.path.relpath(found, ws) in self.written
                        or found in self.made.files or found in self.made.copies):
                    return os.path.relpath(found, ws)
        return None

    def _written_key(self, value: str) -> str | None:
        """The path as ``written`` holds it when this command wrote it, or made a file there
        by a move or a copy (``mv d/x .``), seen from any folder it may be in; else None."""
        plain = os.path.normpath(value)
        if plain in self.written:
            return plain
        for base in self._current():
            at = os.path.normpath(os.path.join(base, value))
            if at in self.made.files or at in self.made.copies:
                return plain
        return None

    def _links(self, e: Effect) -> None:
        """``ln -s /bin/rm ls``, ``cp /bin/rm ls``, ``ln -s /etc kk``: what later words
        reach through the new file (``MadeFiles.record``), from each folder it may run in."""
        name = program_name(e.argv[0]) if e.argv else ""
        for base in self._current():
            self.made.record(name, [w.value for w in e.argv[1:]], str(base))

    def _maybe_shell_code(self, e: Effect, ctx: _Ctx) -> None:
        """``$SHELL -c CODE``: a program only known at run time may be a shell, so the code
        after its ``-c`` is judged as shell code too."""
        args = e.argv[1:]
        for i, w in enumerate(args[:-1]):
            if w.value is not None and re.fullmatch(r"-\w*c", w.value) and \
                    args[i + 1].value is not None:
                self._script(f"{e.argv[0].shown} -c", args[i + 1], ctx)
                return

    def _defined_names(self, e: Effect, ctx: _Ctx) -> None:
        """Calls of functions and aliases this command defines, and aliases it defines."""
        name = program_name(e.argv[0]) if e.argv else ""
        if name == "unset":  # builtin unset -f NAME, command unset -f NAME
            self._unset_functions(e.argv[1:])
        if name in _DECLARERS:  # ! declare x=rm, command export x=rm: still assignments
            self._declared_as_words(e.argv[1:])
        if e.argv and _ASSIGNMENT_WORD.fullmatch(e.argv[0].value or "") and \
                set(e.wrappers) <= {"time"}:  # time x=rm, time m[k]=rm: bash assigns
            self._assigned_as_words(e.argv)
        if name in self.fork_bombs:
            e.add("destructive", f"{name} is a fork bomb: it starts copies of itself forever")
        if name in self.bodies and (e.wrappers not in ([], ["time"]) or (
                self.bodies[name][1].shell != ctx.shell and not self._imported(name))):
            pass  # command NAME, sudo NAME, a child shell: the program runs, not the function
        elif name in self.defined:
            e.add("exec", "")
            e.at_least("deny", f"{name} was defined earlier in this command: the call runs "
                               "code planted under another name")
        elif name in self.functions and name in RULES:
            e.add("exec", "")
            e.at_least("deny", f"{name} is also a function defined in this command: the call "
                               "may run it instead of the command it names")
        elif name in self.functions:
            e.add("exec", f"{e.argv[0].shown} is a function defined in this command")
        for alias, code in e.defines:
            self.defined.add(alias)
            if code.value is not None:
                self.alias_values[alias] = (code.value, ctx.shell, ctx.src, self.row)
            if alias in RULES or alias in self.functions:
                e.at_least("deny", f"alias {alias} replaces a command for later lines")

    def _stdin(self, e: Effect, ctx: _Ctx) -> None:
        """Code a shell or interpreter reads on standard input: shown, or refused."""
        unknown = ctx.stdin is not None and (ctx.stdin.value is None or (
            ctx.stdin.dynamic in ("subst", "var") and e.stdin_code == "shell"))  # bash < <(..)
        fed_code = e.stdin_code == "interpreter" and ctx.stdin is not None
        if fed_code and ctx.stdin is not None and not ctx.piped and \
                ctx.stdin.value is not None and not ctx.stdin.dynamic:
            inline_input(e, ctx.stdin)  # python3 - <<'EOF': shown, judged as python3 -c
            return
        if fed_code and ctx.stdin is not None and not ctx.piped and \
                ctx.stdin.dynamic == "other" and _PLAIN_PATH.fullmatch(ctx.stdin.text):
            e.nested.append((f"{e.argv[0].shown} <", [  # python3 < x.py runs x.py, as
                *(w for w in e.argv if w.value != "-"), Word.of(ctx.stdin.text)]))  # x.py
            return
        shown = e.stdin_code == "shell" and ctx.stdin is not None and not unknown  # printf | sh
        if e.stdin_code and ((ctx.piped and not shown) or unknown or fed_code):
            e.add("exec", f"{e.argv[0].shown} runs the code it reads on its input")
            e.at_least("deny", "feeds a shell or interpreter code the preview cannot show "
                               "(a pipe, a download, a decoder or an expansion)")
        elif e.stdin_code == "shell" and ctx.stdin is not None:
            e.scripts.append((f"{e.argv[0].shown} <<", ctx.stdin))  # judged like bash -c
        elif e.stdin_code:
            e.add("exec", f"{e.argv[0].shown} runs the commands it reads from its input")
        elif e.stdin_reader is not None and ctx.stdin is not None:
            fed = ctx.stdin
            if fed.value is None and fed.dynamic == "other" and not ctx.piped and \
                    not e.stdin_data:  # < FILE: commands it acts on (tee's data: as before)
                text = "" if fed.text == "/dev/null" else self._fed_file(fed.text)
                if text is not None:
                    fed = Word(text, fed.text)  # sqlite3 db < schema.sql: judged as written
                else:
                    e.unseen = e.unseen or f"what {e.argv[0].shown} reads from {fed.text} " \
                                           "and acts on"
            e.stdin_reader(e, fed)
        elif e.stdin_reader is not None and ctx.piped:
            e.at_least("ask", f"{e.argv[0].shown} acts on what it reads from a pipe (SQL, "
                              "code, a file's new content), which the command does not show")
            if ctx.fetched and not e.stdin_data:  # curl URL | psql: psql's \! runs programs
                e.at_least("deny", f"{e.argv[0].shown} acts on what was downloaded (SQL, "
                                   "code), like a shell running a downloaded script")
            if not e.stdin_data:  # SQL, a makefile, ed's commands: not run unseen
                e.unseen = e.unseen or f"what {e.argv[0].shown} reads from a pipe and acts on"

    def _fed_file(self, text: str) -> str | None:
        """What ``< FILE`` feeds a program that acts on its input (SQL, a script): the text
        of a small file inside the workspace that nothing in this command may have written
        first; None otherwise (then it is not shown)."""
        folders = self._current()
        if not _PLAIN_PATH.fullmatch(text) or len(folders) != 1 or self.written_unknown or \
                self._written_key(text) is not None:
            return None
        path = os.path.realpath(os.path.join(folders[0], text))
        if not path.startswith(os.path.realpath(self.ws) + os.sep):
            return None
        data = small_file(path, MAX_FED_FILE)
        return None if data is None else data.decode("utf-8", "replace")

    def _sourced_text(self, path: str) -> str | None:
        """What ``. ./env.sh`` or ``. /etc/os-release`` runs: the text of a small file of
        the workspace nothing in this command may have written first, or of a file that says
        what system this is (``SYSTEM_FACTS``); None otherwise (a script not shown). A name
        without ``/`` is looked for on PATH first: not followed."""
        if path in SYSTEM_FACTS:
            data = small_file(path, MAX_FED_FILE)
            return None if data is None else data.decode("utf-8", "replace")
        return self._fed_file(path)

    def _reads_decoded(self, e: Effect, ctx: _Ctx) -> None:
        """``read p < <(base64 -d ..)``: the names ``read``/``mapfile`` set hold decoded
        text, like ``p=$(base64 -d ..)``."""
        if not e.argv or program_name(e.argv[0]) not in ("read", "mapfile", "readarray") or \
                ctx.stdin is None or not self._is_decoded(ctx.stdin.text):
            return
        self.decoders.update(w.value for w in e.argv[1:]
                             if w.value and re.fullmatch(r"[A-Za-z_]\w*", w.value))

    def _is_decoded(self, text: str) -> bool:
        return any(d in text for d in self.decoded) or bool(_expanded_names(text) & self.decoders)

    def _analyzed(self, argv: list[Word], by_hash: bool) -> Effect:
        """The command's effect, with names this command linked to programs followed
        (``./ls`` after ``ln -s /bin/rm ls``, ``ls`` or ``command ls`` after ``hash -p``;
        not ``by_hash`` where a program, not the shell, runs it: ``xargs rm`` searches PATH).
        When the ``hash -p`` may not have run (a branch, a loop), the name may run either
        program: the riskier one is judged, and a person asked."""
        e, unsure = self._followed(argv, hashed=by_hash)
        if unsure:
            self.unnamed.append(f"{unsure} runs {self.hashed[unsure][0]} or the program of "
                                "that name: the hash -p (or enable -n) before it may not have "
                                "run")
            other, _ = self._followed(argv, hashed=False)
            if RISK_ORDER.index(other.risk) > RISK_ORDER.index(e.risk):
                e = other
        return e

    def _numbered(self, text: str) -> str | None:
        """The path a word names when its only parts known at run time are numbers
        (``/proc/"$(pgrep -o app)"/status``, ``logs/run-$n.txt``): each written as ``0``."""
        if self._holds_a_number(text):
            return "0"
        out = text
        for sub in sorted(self.counts, key=len, reverse=True):
            out = out.replace(sub, "0")
        out = re.sub(r"\$(?:\$|!|\{\$\})|\$\{?([A-Za-z_]\w*)\}?", lambda m: "0" if (
            m.group(1) is None or self._holds_a_number(f"${m.group(1)}")) else m.group(0), out)
        out = out.replace('"', "")
        return out if out != text.replace('"', "") and re.fullmatch(r"[\w./+:@%-]+", out) \
            else None

    def _untouched_env(self) -> Mapping[str, str]:
        """The base environment's variables this command never sets: their values are the
        ones every program inherits (``env -i HOME="$HOME"`` hands on what it had)."""
        return _Untouched(self.env, self.tainted)

    def _followed(self, argv: list[Word], hashed: bool) -> tuple[Effect, str]:
        """The effect with links (and, if ``hashed``, ``hash -p`` names) followed; the name
        followed to a file a ``hash -p`` that may not have run gave it, or ""."""
        found, unsure = self._file_of(argv[0], hashed) if argv else ("", "")
        if found:
            argv = [Word(found, argv[0].text), *argv[1:]]
        argv = self._shown_script(argv)
        e = analyze(argv, self._untouched_env())
        self._loose_words(argv, e)
        if e.wrappers and e.argv:  # command ls: the shell's lookup; env ls: PATH's
            inner = e.argv[0]
            found, unsure_inner = self._file_of(inner, hashed and
                                                set(e.wrappers) <= _HASH_LOOKUPS)
            unsure = unsure or unsure_inner
            if found:
                e = analyze([*argv[:len(argv) - len(e.argv)], Word(found, inner.text),
                             *e.argv[1:]], self._untouched_env())
        return e, unsure

    def _blankless_loop(self, name: str, values: list[Node]) -> None:
        """``for w in $(cat f)``: bash split and matched the words already, so each value of
        w is one word again where it is used unquoted (``"$(cat f)"`` is not split)."""
        if self.ifs == " \t\n" and values and not any(
                v.type in ("string", "raw_string", "ansi_c_string") for v in values):
            self.blankless.add(name)

    def _loose_words(self, argv: list[Word], e: Effect) -> None:
        """An unquoted value only known at run time is split into words there: ``grep $x f``
        with x holding ``-r key /etc`` reads outside. Where the program's rule did not judge
        it as a path (a pattern, an option's value), what it becomes is not shown; numbers
        (``$((i+1))``, ``$(wc -l < f)``, a variable that only counts) stay one word."""
        if self.ifs == "" or not argv:
            return
        judged = {id(w) for w in (*e.reads, *e.writes, *e.chdir)}
        name = program_name(argv[0])
        for i, w in enumerate(argv[1:], 1):
            if w.value is not None or w.text == LISTED or id(w) in judged or \
                    name in _WORDS_NOT_SPLIT_INTO_OPTIONS or (
                        name == "printf" and argv[1].value is not None) or (
                        name == "set" and "--" in (v.value for v in argv[1:i])) or \
                    not self._splits(w.text):
                continue
            self.unnamed.append(f"{argv[0].shown}: {w.text}, unquoted and only known at run "
                                "time, may become several words (options, paths)")
            return

    def _splits(self, text: str) -> bool:
        """Whether an unquoted expansion in ``text`` may give words nobody can see: one
        that is not a number (arithmetic, a count, a variable that only counts)."""
        bare = _QUOTED_PARTS.sub("", text)
        for m in _UNQUOTED_EXPANSION.finditer(bare):
            found = m.group(0)
            name = m.group(1) or m.group(2)
            if found.startswith("$((") or found in self.counts or found in self.names_out or (
                    name is not None and (name in self.numeric or (
                        name in self.blankless and self.ifs == " \t\n"))):
                continue
            return True
        return False

    def _file_of(self, word: Word, by_hash: bool) -> tuple[str, str]:
        """The program file ``word`` names in this command: a ``hash -p`` mapping (when
        ``by_hash``) or a link or copy it made, else ""; and the name, when the ``hash -p``
        giving it may not have run."""
        if not word.value:
            return "", ""
        file, certain = self.hashed.get(word.value, ("", True)) if by_hash else ("", True)
        unsure = bool(file) and (not certain or self.hash_resets)
        return file or self._made_program(word.value), word.value if unsure else ""

    def _made_program(self, value: str) -> str:
        """The program a path runs through the links and copies this command made on its
        way (``b/rm`` after ``ln -s /bin b``), else "". A bare name is taken as a path here
        too: stricter than bash, which looks it up on PATH."""
        for base in self._current():
            path = os.path.normpath(os.path.join(base, value))
            found = self.made.resolve(path, copies=True)
            if found != path:
                return found
        return self._foreign_tool(value)

    def _foreign_tool(self, value: str) -> str:
        """``node_modules/.bin/tsc`` that is a link out of the workspace (to ``/usr/bin/rm``,
        to someone's file): not the project's install of tsc, so its full path, which names a
        program given by path; else ""."""
        tail = value.rpartition("/")[2]
        if "/" not in value or value.startswith("/") or tail not in PROJECT_BIN_TOOLS or \
                program_name(Word.of(value)) != tail:  # a bare name: bash looks on PATH
            return ""  # not a project tool's path: judged as it is
        ws = os.path.realpath(self.ws).rstrip("/") + "/"
        for base in self._current():
            path = os.path.normpath(os.path.join(base, value))
            if not os.path.realpath(path).startswith(ws):
                return path
        return ""

    def _arg_file(self, argv: list[Word], ctx: _Ctx) -> tuple[list[Word], _Ctx]:
        """``xargs -a <(git diff --name-only) CMD``: like ``git diff --name-only | xargs
        CMD``, the words are paths of a listing. ``awk -f <(echo CODE)``: the one file a
        static printer fills is what ``/dev/stdin`` given ``CODE`` would be, judged as that
        (where the command reads no input of its own)."""
        name = program_name(argv[0]) if argv else ""
        shown = [i for i, w in enumerate(argv[1:], 1)
                 if w.value is None and w.text in self.shown_files]
        if len(shown) == 1 and ctx.stdin is None and not ctx.piped and name not in (
                "source", ".", "make", "gmake", "xargs", *SHELLS, *INTERPRETERS):
            i = shown[0]
            fed = Word.of(self.shown_files[argv[i].text])
            return [*argv[:i], Word("/dev/stdin", argv[i].text), *argv[i + 1:]], replace(
                ctx, stdin=fed)
        if name != "xargs":
            return argv, ctx
        for i, w in enumerate(argv[1:-1], 1):
            if w.value in ("-a", "--arg-file") and argv[i + 1].text in self.listings:
                dirs = self.listings[argv[i + 1].text]
                return [*argv[:i], *argv[i + 2:]], replace(ctx, piped=True, listed=dirs)
        return argv, ctx

    def _shown_script(self, argv: list[Word]) -> list[Word]:
        """``source <(echo CODE)`` is ``eval CODE``; ``bash <(echo CODE) ARGS`` is
        ``bash -c CODE <(..) ARGS``: the code is shown."""
        name = program_name(argv[0]) if argv else ""
        if name in ("make", "gmake"):
            return self._shown_makefile(argv)
        if name in ("source", ".") and len(argv) == 2 and argv[1].value is not None and \
                "/" in argv[1].value and (text := self._sourced_text(argv[1].value)):
            if SECRETS_FILE.match(os.path.basename(argv[1].value)):
                self.secret_files.append(argv[1].value)  # . ./.env: its values in variables
            return [Word("eval", argv[0].text), Word(text, argv[1].text)]
        if len(argv) < 2 or argv[1].value is not None or argv[1].text not in self.shown_files:
            if name in ("source", ".") and argv[1:2] and argv[1].text.startswith("<("):
                self.taint_all = True  # source <(a command): any variable may change
            return argv
        code = Word(self.shown_files[argv[1].text], argv[1].text)
        if name in ("source", ".") and len(argv) == 2:
            return [Word("eval", argv[0].text), code]
        if name in SHELLS:
            return [argv[0], Word.of("-c"), code, *argv[1:]]
        return argv

    def _shown_makefile(self, argv: list[Word]) -> list[Word]:
        """``make -f <(printf 'all:\\n\\trm -f x\\n')``: the makefile is shown, its text
        judged as ``make --eval`` judges makefile code."""
        out: list[Word] = []
        words = iter(argv)
        for w in words:
            shown = next(words, None) if w.value in ("-f", "--file", "--makefile") else None
            if shown is not None and shown.value is None and shown.text in self.shown_files:
                out.append(Word(f"--eval={self.shown_files[shown.text]}", shown.text))
            else:
                out.extend(x for x in (w, shown) if x is not None)
        return out

    def _shown_file(self, node: Node, ctx: _Ctx) -> None:
        """``<(echo 'f() { ..; }')``: the file a static printer fills (not a decoder), for
        ``source``/``bash`` of it to run as shown code."""
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1 or not _text(node, ctx).startswith("<"):
            return
        self.decoding = False
        printed = self._printed(inner[0], ctx)
        if printed is not None and not self.decoding:
            self.shown_files[_text(node, ctx)] = printed
        dirs = self._listing(inner[0], ctx) if printed is None else ()
        if dirs:  # xargs -a <(git ls-files): a listing of paths under these folders
            self.listings[_text(node, ctx)] = dirs

    def _script(self, how: str, code: Word, ctx: _Ctx, args: list[Word] | None = None) -> None:
        if code.value is None and code.text in self.shown_files:  # source <(echo ..)
            code = Word(self.shown_files[code.text], code.text)
        if code.text != LISTED and self._is_decoded(code.text):
            self._entry([Word.of(how), code], "exec", "deny",
                        [f"{how} runs decoded text (base64, rev, tr) as shell code: a person "
                         "should see what it decodes to"], "deny", ctx)
            return
        text = code_of(code) if code.text != LISTED else None
        if code.value is None and text is not None and not code.dashless:
            self.unnamed.append(f"{how} runs shell code with text read at run time pasted "
                                "in (xargs -I, find -exec {}): a $(..) or ; in it runs")
        if text is not None:
            text = text.replace("\0", "")  # bash drops NUL bytes from the code it reads
            same = how in _SAME_SHELL or how.startswith("alias ") or how in _SOURCED_INPUT
            self.run(text, how, ctx.depth + 1, args, ctx.shell if same else None)
            if _slot(how) and (found := self._workspace_program(text)):
                self._entry([Word.of(how), code], "exec", "deny", [
                    f"{how} runs {found}, a file of the workspace, where a program of its "
                    "own belongs (a pager, a diff tool, ssh): a script disguised as a "
                    "setting"], "deny", ctx)
        elif code.dynamic == "subst" or _expanded_names(code.text) & self.from_output:
            self._entry([Word.of(how), code], "exec", "deny",
                        [f"{how} runs the output of a command as shell code"], "deny", ctx)
        else:
            self.unnamed.append(f"{how} runs shell code only known at run time")
            self._entry([Word.of(how), code], "exec", "ask",
                        [f"{how} runs shell code only known at run time"], "ask", ctx)

    def _entry(self, argv: list[Word], risk: Risk, decision: DecisionValue, reasons: list[str],
               floor: str, ctx: _Ctx, wrappers: Sequence[str] = ()) -> None:
        entry: dict[str, Any] = {
            "argv": [w.shown for w in argv], "risk": risk, "decision": decision,
            "reason": "; ".join(reasons) or _DEFAULT_REASON[risk],
            "capability": capability(argv), "floor": floor or "allow",
        }
        if ctx.via:
            entry["via"] = ctx.via
        if wrappers:
            entry["wrappers"] = list(wrappers)
        self.entries.append(entry)

    # ------------------------------------------------------------ words

    def _word(self, node: Node, ctx: _Ctx, at_start: bool = True) -> Word:
        t = node.type
        text = _text(node, ctx)
        if t == "command_name":
            child = next(iter(node.named_children), None)
            return self._word(child, ctx) if child is not None else Word.of(text)
        if t == "word":
            return self._plain_word(text, at_start)
        if t == "number":
            return Word.of(text)
        if t == "raw_string":
            return Word(text[1:-1], text)
        if t == "ansi_c_string":
            return _ansi_c(text)
        if t == "string_content":
            return Word(re.sub(r'\\([$`"\\\n])', r"\1", text), text)
        if t in ("string", "concatenation", "translated_string"):
            spliced = self._splice(node, ctx)
            return self._made_word(spliced, text) if t == "string" else spliced
        if t == "simple_expansion" or (t == "expansion" and _simple_braced(node)):
            var = next((c for c in node.named_children
                        if c.type in ("variable_name", "special_variable_name")), None)
            name = _text(var, ctx) if var is not None else ""
            held = self._made_word(self._variable(
                name, text, var is not None and var.type == "special_variable_name"), text)
            return replace(held, dashless=True) if held.value is None and \
                name in self.dashless_vars else held
        if t == "command_substitution":
            inner = [c for c in node.named_children if c.type != "comment"]
            dirs = self._listing(inner[0], ctx) if len(inner) == 1 else ()
            printed = self._static_output(node, ctx) if _prints_plainly(node, ctx) else None
            if printed and not re.search(r"[\s*?\[{]", printed[0]):  # one word, unglobbed
                return Word(printed[0], text)
            return _paths_under(dirs) if dirs else Word(
                None, text, "subst", dashless=self._ids_output(node, ctx))
        if t == "process_substitution":
            self._shown_file(node, ctx)
            return Word(None, text, "subst")
        if t == "expansion" and not any(c.type == "subscript" for c in node.children):
            found = self._static_expansion(text)  # ${f/app/new}, ${b^^}, ${!v}
            if found is not None and len(found) == 1:
                return Word(found[0], text)
        elif t == "expansion" and not self.taint_all:
            return self._element_word(node, text, ctx)
        return Word(None, text, "other")

    def _element_word(self, node: Node, text: str, ctx: _Ctx) -> Word:
        """``${a[2]}``, ``${a[i]}`` of an array with static elements: the element, or, for
        an index that counts (``for ((i=0; ..; i++))``), any of them or none, as a loop's
        word is (``{x,y,}``: each judged)."""
        found = self._static_element(node, ctx)
        if found is not None and len(found) == 1:
            name = self._resolved(_text(node, ctx)[2:].partition("[")[0])
            return Word(found[0], LISTED if name in self.listed_arrays else text)
        if found and len(found) <= MAX_LOOP_WORDS and all(
                not re.search(r"[\s{},*?\[\]\\$`'\"]", v) for v in found):
            return Word("{" + ",".join(found) + "}", text, "", False, True)
        return Word(None, text, "other")

    def _plain_word(self, text: str, at_start: bool) -> Word:
        expandable = bool(GLOB.search(text)) or ("{" in text and ("," in text or ".." in text))
        value = re.sub(r"\\(.)", r"\1", text, flags=re.S)
        if at_start and text.startswith("~") and (len(text) == 1 or text[1] == "/"):
            home = self._variable("HOME", text, False)
            if home.value is None:
                return replace(home, text=text)
            value = home.value + value[1:]
        elif at_start and text.startswith(("~+", "~-")) and (len(text) == 2 or text[2] == "/"):
            return self._tilde_dir(text, value)
        elif at_start and text.startswith("~"):
            return Word(None, text, "other")
        if expandable and GLOB.search(text) and self._matches_misread(value):
            return Word(None, text, "other")  # for f in docs/*; eval wc -l $f: $(..) runs
        return Word(value, text, "", False, expandable)

    def _matches_misread(self, pattern: str) -> bool:
        """Whether a name the glob ``pattern`` matches here changes what bash makes of it
        once pasted into code (``eval``, ``sh -c "wc -l $f"``) or split unquoted
        (``MISREAD_NAME``): its value is then only known at run time. A
        repository can carry such names (``docs/$(rm a.txt)``, ``docs/z -oa.txt``)."""
        patterns = brace_words(pattern) if "{" in pattern else [pattern]
        if patterns is None:
            return True
        for base in self._current():
            for each in patterns:
                found = self._glob(each, str(base))
                if found is None or any(MISREAD_NAME.search(m) for m in found):
                    return True
        return False

    def _tilde_dir(self, text: str, value: str) -> Word:
        """``~+`` is the current directory (``$PWD``), ``~-`` the previous one (``$OLDPWD``)."""
        here = self.cwds[0] if len(self.cwds) == 1 else None
        known = here if text[1] == "+" else self.oldpwd
        if known is None:
            return Word(None, text, "var")
        return Word(str(known) + value[2:], text)

    def _splice(self, node: Node, ctx: _Ctx) -> Word:
        src = ctx.src
        out: list[str] = []
        pos = node.start_byte
        dynamic = ""
        unset = expandable = listed = dashless = by_text = False
        each_dashless = True
        unknowns = 0
        numbers: list[str] | None = []
        quoted = node.type != "concatenation"
        for i, child in enumerate(node.children):
            out.append(src[pos:_start(child, ctx)].decode("utf-8", "surrogateescape"))
            pos = child.end_byte
            if not child.is_named:
                if not quoted and child.type != "``":  # `` is an empty substitution
                    out.append(_text(child, ctx))
                continue
            w = self._word(child, ctx, at_start=i == 0 and not quoted)
            if quoted and w.value is None and _prints_plainly(child, ctx):
                printed = self._static_output(child, ctx)  # "$(printf ..)": one word
                w = Word(printed[0], w.text) if printed else w
            listed = listed or w.text == LISTED
            if w.value is None and not unknowns:  # what starts the word: text, or an id
                lead = "".join(out)
                dashless = not lead.startswith("-") if lead else w.dashless
                by_text = bool(lead)
            if w.value is None:
                unknowns += 1
                dynamic = dynamic or w.dynamic or "other"
                unset = unset or w.unset
                each_dashless = each_dashless and w.dashless
                out.append("\0")  # where it stands: the text after it may start the word
                numbers = numbers if numbers is not None and self._number_part(
                    child, ctx) else None
            else:
                out.append(w.value)
            expandable = expandable or (w.expandable and (
                not quoted or child.type in ("simple_expansion", "expansion")))
        out.append(src[pos:node.end_byte].decode("utf-8", "surrogateescape"))
        text = _text(node, ctx)
        value = "".join(out)
        if dynamic:  # v"$x", origin/$b: text first; "$(git rev-parse HEAD)": an id alone;
            # "$a..$b" of two ids: either may be empty, so each piece may start the word
            return Word(None, text, dynamic, unset,  # type: ignore[arg-type]
                        dashless=(dashless and (by_text or unknowns == 1)) or (
                            each_dashless and not any(
                                piece.startswith("-") for piece in value.split("\0"))),
                        numbers=None if numbers is None or not quoted else
                        value.replace("\0", "1"))
        if not quoted and "{" in value and ("," in value or ".." in value):
            expandable = True
        if expandable and not quoted and not listed and GLOB.search(value) and \
                self._matches_misread(value):
            return Word(None, text, "other")  # {docs,src}/*: a name holding $(..)
        return Word(value, LISTED if listed else text, "", False, expandable)

_RISKS: tuple[str, ...] = ("read", "exec", "write", "network", "install", "destructive")
_DEFAULT_REASON: dict[str, str] = {
    "read": "reads only", "exec": "runs a program", "write": "writes files",
    "network": "uses the network", "install": "installs software",
    "destructive": "can destroy data",
}
_LEAF_TEXT = frozenset({"word", "string_content", "heredoc_content", "extglob_pattern", "regex"})
"""Text nodes in which a backtick or ``$(`` means the parser missed a substitution."""
_HANDLERS = {
    "command": _Walker._command,
    "pipeline": _Walker._pipeline,
    "redirected_statement": _Walker._redirected,
    "file_redirect": _Walker._file_redirect,
    "variable_assignment": _Walker._assignment,
    "function_definition": _Walker._function,
    "command_substitution": _Walker._substitution,
    "process_substitution": _Walker._substitution,
    "comment": _Walker._comment,
    "compound_statement": _Walker._group,
    "list": _Walker._list,
    "subshell": _Walker._in_subshell,
    "for_statement": _Walker._for,
    "heredoc_redirect": _Walker._heredoc,
    "unset_command": _Walker._unset,
    "while_statement": _Walker._loop,
    "c_style_for_statement": _Walker._loop,
    "case_statement": _Walker._case,
    "if_statement": _Walker._if,
}


LISTED = LISTED_TEXT
"""The text of a word read from a listing: a path as an argument, unknown as code or program
(a file name can be any text)."""


_UNQUOTED_EXPANSION = re.compile(r"\$\(\((?:[^()]|\([^()]*\))*\)\)|\$\((?:[^()]|\([^()]*\))*\)|"
                                 r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|[$`]")
"""An expansion in a word's unquoted text: arithmetic, a substitution, a variable (its
name), or any other (``${x%y}``, a backquote) as one character."""
_QUOTED_PARTS = re.compile(r"'[^']*'|\"(?:[^\"\\$]|\\.|\$\((?:[^()]|\([^()]*\))*\)|\$)*\"|\\.")
"""What quotes hold, substitutions inside double quotes included (not split)."""
_WORDS_NOT_SPLIT_INTO_OPTIONS = frozenset({"echo", ":", "true", "false", "let", "return",
                                           "exit", "shift", "break", "continue"})
"""Builtins whose words, however many, are printed, ignored, or arithmetic (judged there);
``return $n`` and the like take a number, never evaluated (``a[$(cmd)]`` is refused)."""


MAX_PLANTED_FILES = 5000
"""Files of a folder written "into", outside a repository, looked at for a planted
command."""
MAX_EXECDIR_FOLDERS = 64
"""Folders under a ``find -execdir`` start in which its command is judged one by one."""
_SUBSTRING_NAME = re.compile(r"\$\{[A-Za-z_]\w*:(?![-=+?])")
"""``${s:1:2}`` in a command's name: the program is decoded, and asked (a person sees it)."""
MAX_FED_FILE = 256 * 1024
_SETTINGS_NOT_SECRETS = frozenset({".npmrc", ".pypirc"})
"""Files of secrets (``SECRETS_FILE``) that a project's copy holds registry settings in more
often than a token: printing one is no secret shown; only sending it away is refused."""
"""Bytes of a file given on standard input (``sqlite3 db < schema.sql``) read to judge what
it holds; a larger one is not shown."""
_PLAIN_PATH = re.compile(r"[\w@%+=:,./-]+")
"""A path written plainly: no quote, expansion or pattern."""
_NOT_FOUND_HANDLER = "command_not_found_handle"
"""The function bash calls, with the command's words, for a command no program answers."""
_ELEMENT_NAME = re.compile(r"([A-Za-z_]\w*)\[([^\]]*)\]")
"""A name that stands for an array element (``a[1]``, ``m[key]``), as ``${!ref}`` reads it."""
_LENGTH = re.compile(r"\$\{#[A-Za-z_]\w*(?:\[[@*]\])?\}")
"""``${#x}`` and ``${#a[@]}``: a length or a count, digits whatever the variable holds."""
_SPLIT_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution",
                               "arithmetic_expansion"})
"""Parts of a word whose value the shell splits into words when they stand unquoted."""


def _files_under(folder: str, limit: int, ws: str) -> list[str]:
    """Up to ``limit`` files under ``folder``, relative to ``ws``."""
    found: list[str] = []
    for at, _dirs, files in os.walk(folder):
        found.extend(os.path.relpath(os.path.join(at, f), ws) for f in files)
        if len(found) >= limit:
            break
    return found[:limit]


def _paths_under(dirs: Sequence[str]) -> Word:
    """Any path a listing of ``dirs`` prints: each ``DIR/found`` is judged."""
    paths = [f"{d.rstrip('/') or '.'}/found" for d in dirs]
    value = paths[0] if len(paths) == 1 else "{" + ",".join(paths) + "}"
    return Word(value, LISTED, "", False, len(paths) > 1)


def _placed(items: list[str], at: int, held: set[int],
            words: list[str]) -> tuple[list[str], int]:
    """``words`` as an array's elements from index ``at`` on (a gap before them holds
    ""): the elements, and the index after them."""
    for word in words:
        items = [*items, *[""] * (at + 1 - len(items))]
        items[at] = word
        held.add(at)
        at += 1
    return items, at


def _fed(w: Word, dirs: Sequence[str]) -> Word:
    """An ``xargs`` argument that is one path read from a listing of ``dirs``. Input pasted
    into a longer word (shell code for ``sh -c``) stays unknown: a file name can be code."""
    if w.value is None and (is_input_arguments(w.text) or w.text == INPUT_CODE):
        return _paths_under(dirs)
    return w


_EXTGLOB = re.compile(r"([?*+@!])\(([^()'\"\\]*)\)")
MAX_EXTGLOB_VARIANTS = 16


_HERESTRING_NUMBER = re.compile(r"<<<[ \t]*(\d+)(?=[\s;&|)]|$)")
_BRACE_WORD = re.compile(r"\{[\w./:@%+,-]*,[\w./:@%+,-]*\}(?=[ \t;&|)\n]|$)")
"""A command's first word that is one plain brace list (``{ls,-la,src}``): the grammar reads
a group where bash expands the braces. No ``=`` (an assignment is found before expansion),
quote or expansion in it."""
_COMMAND_START = re.compile(r"(?:^|[;&|(\n]|\b(?:then|do|else|elif|if|while|until))[ \t]*$")


def _brace_command(text: str, i: int) -> tuple[str, int] | None:
    """A plain brace list at a command's start (``_BRACE_WORD``) behind an empty quote, and
    where it ends: ``''{ls,-la,src}`` is the same words to bash, and a word to the grammar,
    judged as a command name the shell expands. None elsewhere, or when a word of it is empty
    (bash drops an empty word of ``{,ls}``, but keeps ``''``)."""
    m = _BRACE_WORD.match(text, i)
    if m is None or not _COMMAND_START.search(text, 0, i) or \
            not all(expand_braces(m.group())):
        return None
    return "''" + m.group(), m.end()


_WORD_CHAR = re.compile(r"[\w./:@%+,=-]")


def _grammar_repaired(text: str) -> tuple[str, bytes, Any] | None:
    """``text`` rewritten where the grammar misreads what bash reads plainly, with its parse;
    None when nothing was rewritten or the rewrite does not parse either. The rewrites leave
    bash's meaning alone: a here-string of digits (``done <<< 1``) is quoted, a ``#``
    inside an unquoted word (``ls#``, a comment only at a word's start) is escaped, and a
    command's first word that is a plain brace list is read as a word (``_brace_command``)."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            step = 2 if ch == "\\" and quote == '"' else 1
            quote = "" if ch == quote else quote
            out.append(text[i:i + step])
            i += step
            continue
        if ch == "\\" or text.startswith(("${", "$(("), i):
            end = i + 2 if ch == "\\" else _closing(text, i)
            out.append(text[i:end])
            i = end
            continue
        if ch in "'\"":
            quote = ch
        elif (m := _HERESTRING_NUMBER.match(text, i)) is not None:
            out.append(f'<<< "{m.group(1)}"')
            i = m.end()
            continue
        elif ch == "#" and i and _WORD_CHAR.match(text[i - 1]):
            out.append("\\")
        elif ch == "{" and (braced := _brace_command(text, i)) is not None:
            out.append(braced[0])
            i = braced[1]
            continue
        out.append(ch)
        i += 1
    src = "".join(out).encode("utf-8", "surrogateescape")
    root = _PARSER.parse(src).root_node
    for _ in range(8):
        if not root.has_error or (wrapped := _wrap_herestring_body(src, root)) is None:
            break
        src = wrapped
        root = _PARSER.parse(src).root_node
    fixed = src.decode("utf-8", "surrogateescape")
    return None if root.has_error or fixed == text else (fixed, src, root)


def _reread(src: bytes, root: Node) -> tuple[bytes, Node, list[int]]:
    """The text and tree after moving the words the grammar hangs on redirections and
    quoting the lone dashes it drops (``misreads``), when it parses as well; and the
    offsets of the text the final tree still leaves out."""
    quoted = closers_quoted(src, root)
    if quoted is not None:  # rm 3<&- -f a.txt -> rm -f a.txt 3<&-
        tree = _PARSER.parse(quoted).root_node
        moved = _reread(quoted, tree)[0] if not tree.has_error else None
        back = closers_restored(moved) if moved is not None else None
        if back is not None and not (again := _PARSER.parse(back).root_node).has_error and \
                closers_quoted(back, again) is None:
            return back, again, uncovered(back, again)
    dropped = uncovered(src, root)
    for _ in range(MAX_REWRITES):
        changed = dashes_quoted(src, dropped) if dropped else None  # first: it keeps its place
        if changed is None:
            changed = words_moved(src, root) or assignments_ended(src, root)
        if changed is None:
            break
        again = _PARSER.parse(changed).root_node
        if again.has_error:
            break
        src, root = changed, again
        dropped = uncovered(src, root)
    return src, root, dropped


def _wrap_herestring_body(src: bytes, root: Any) -> bytes | None:
    """``{ ..; } <<< w``, ``for ..; done <<< w``, ``cmd 2>f <<< w``: the grammar takes a
    here-string only as the first redirect of a simple command, ``while`` or ``if``, so what
    comes before it is wrapped in ``if :; then ..; fi`` (same shell, same input); None when
    no statement reads so."""
    stack = [root]
    while stack:
        node = stack.pop()
        kids = node.children
        errors = [k for k in kids[1:] if k.type == "ERROR" and src.startswith(b"<<", k.start_byte)]
        if node.type == "redirected_statement" and errors:
            start, cut = node.start_byte, errors[0].start_byte
            inner = src[start:cut].rstrip()
            return src[:start] + b"if :; then " + inner + b"; fi " + src[cut:]
        stack.extend(kids)
    return None


def _closing(text: str, i: int) -> int:
    """The end of the ``${..}`` or ``$((..))`` opening at ``i`` (braces and parentheses
    balanced; the end of the text when unclosed)."""
    pairs = {"{": "}", "(": ")"}
    opener = text[i + 1]
    depth, j = 0, i + 1
    while j < len(text):
        if text[j] == opener:
            depth += 1
        elif text[j] == pairs[opener]:
            depth -= 1
            if not depth:
                return j + 1
        j += 1
    return len(text)


def _extglob_variants(text: str) -> list[str]:
    """``text`` with each unquoted extended glob replaced by what it may match: ``@(a|b)``
    by ``[a]`` or ``[b]``, ``?(a)`` and ``*(a)`` also by nothing, ``!(a)`` by ``*``; [] when
    there is none, or more than ``MAX_EXTGLOB_VARIANTS`` ways (none is dropped unjudged)."""
    variants = [""]
    pos = 0
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
            i += 2 if ch == "\\" and quote == '"' else 1
            continue
        if ch == "\\":
            i += 2
            continue
        if ch in "'\"":
            quote = ch
            i += 1
            continue
        m = _EXTGLOB.match(text, i)
        if m is None:
            i += 1
            continue
        kind, alts = m.group(1), m.group(2).split("|")
        choices = ["*"] if kind == "!" else [_as_glob(a) for a in alts] + (
            [""] if kind in "?*" else [])
        head = text[pos:i]
        variants = [v + head + c for v in variants for c in choices]
        if len(variants) > MAX_EXTGLOB_VARIANTS:
            return []  # more ways to match than are judged: read as text the parser cannot
        pos = i = m.end()
    return [v + text[pos:] for v in variants] if pos else []


def _substitutions(text: str) -> list[str]:
    """The code of each ``$(..)`` and backtick pair in ``text`` (parentheses balanced)."""
    found: list[str] = []
    i = 0
    while i < len(text) and len(found) < 8:
        if text[i] == "\\":
            i += 2
        elif text.startswith("$(", i) and not text.startswith("$((", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            found.append(text[i + 2:j - 1] if not depth else text[i + 2:])
            i = j
        elif text[i] == "`":
            end = text.find("`", i + 1)
            found.append(text[i + 1:end if end > 0 else len(text)])
            i = end + 1 if end > 0 else len(text)
        else:
            i += 1
    return found


def _as_glob(word: str) -> str:
    """``rm`` as ``[r]m``: the same name, still matched against the files (a pattern)."""
    return f"[{word[0]}]{word[1:]}" if word and word[0] not in "[]*?/\\$`{}~" else word


_QUIET_WRAPPERS = {"exec": "a", "command": "", "builtin": "", "time": "", "nice": "n",
                   "timeout": "sk"}
"""Builtins and programs that run the rest of their words and print nothing themselves, with
their options that take a value."""


def _unwrapped(argv: list[str | None]) -> list[str | None]:
    """``exec -a x : > f``, ``time -p true > f``: the wrappers that run the rest are left
    out (``timeout`` with its duration)."""
    while argv and argv[0] in _QUIET_WRAPPERS and len(argv) > 1:
        takes, name = _QUIET_WRAPPERS[argv[0]], argv[0]
        argv = argv[1:]
        while argv and (argv[0] or "").startswith("-") and argv[0] != "-":
            flag = argv.pop(0) or ""
            if flag == "--":
                break
            if flag[-1:] in takes and argv:
                argv.pop(0)
        if name == "timeout" and argv:
            argv = argv[1:]
    return argv


_BRACED = re.compile(r"[^'\"\\$`\s{}]*(?:\{[^'\"\\$`\s{}]*\}[^'\"\\$`\s{}]*)+")
"""An unquoted word with brace expressions and no expansion: bash expands the braces."""
_EXPANDED_NAME = re.compile(r"\$\{?[#!]?([A-Za-z_]\w*)")


def _expanded_names(text: str) -> set[str]:
    """The variables a word's text expands (``$x``, ``${x..}``)."""
    return set(_EXPANDED_NAME.findall(text))


def _fd_variable(arg: Node, ctx: _Ctx) -> str | None:
    """``exec {fd}<FILE``: ``{fd}`` just before a redirection names the variable that gets
    the new descriptor's number (returned); it is not a word of the command. A coprocess's
    ``{UP[1]}>&-`` names an element by a number (a subscript that expands is a word)."""
    m = re.fullmatch(r"\{([A-Za-z_]\w*)(?:\[\d+\])?\}", _text(arg, ctx))
    parent = arg.parent.parent if arg.parent is not None else None
    redirects = (c for c in (parent.named_children if parent is not None else ())
                 if c.type == "file_redirect")
    if m is None or not any(r.start_byte == arg.end_byte for r in redirects):
        return None
    return m.group(1)


def _in_system_folder(pattern: str) -> bool:
    """A glob that can match one name only (each bracket holds one character:
    ``/usr/bin/[c]at``) in a folder of the system's: no command can add a file there (the
    sandbox keeps it read-only, a write there is refused), so the program is the one it
    names now. A glob that may match several names stays asked (which ones is the
    machine's)."""
    first = GLOB.search(pattern)
    if not pattern.startswith("/") or first is None or ".." in pattern.split("/") or \
            GLOB.search(_ONE_CHARACTER_CLASS.sub("x", pattern)):
        return False  # /usr/[b]in/../../tmp/x: the folder it ends in is not the system's
    real = os.path.realpath(os.path.dirname(pattern[:first.start()]) or "/")
    return any(real == top or real.startswith(top + "/") for top in SYSTEM_PROGRAM_TREES)


SYSTEM_PROGRAM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/nix")
_ONE_CHARACTER_CLASS = re.compile(r"\[[^]!^\\[]\]")
"""A bracket expression holding one plain character (``[c]``): it matches that one only."""
_DECLARED_IN = re.compile(r"\b(?:local|declare|typeset)\b([^;&|\n]*)")
_NAME = re.compile(r"[A-Za-z_]\w*")
MAX_NAME_MATCHES = 32
"""Files a glob in a command's name may match and still be judged, each as the program."""
_LEAVES = frozenset({"break", "continue", "return", "exit"})
"""Builtins after which the rest of a loop's pass, a function or the shell does not run."""
_SEQUENCES = frozenset({"program", "compound_statement", "do_group", "subshell",
                        "if_statement", "elif_clause", "else_clause", "case_item"})
"""Nodes whose parts are commands run one after another."""


_QUIET_ERRORS = re.compile(r"2>\s*/dev/null|2>&-")
"""A redirection that only silences a listing's errors."""
def _listed_indices(args: Sequence[Word]) -> frozenset[int]:
    """The positions (``$1`` is 1) of the arguments that are paths from a listing (``find
    -exec sh -c '..' _ {}``: each path find lists)."""
    return frozenset(i for i, w in enumerate(args, 1) if w.text in (LISTED, "{}"))


def _splits(texts: Sequence[str]) -> bool:
    """Whether every text splits into words as a shell would quote them."""
    try:
        for text in texts:
            shlex.split(text, posix=True)
    except ValueError:
        return False
    return True


def _may_leave(argv: list[Word], e: Effect) -> bool:
    """A command after which what follows it may not run: ``_LEAVES``, ``exec CMD``, or a
    program named only at run time (it may be any of them)."""
    if not argv or argv[0].value is None or (e.argv and e.argv[0].value is None):
        return True
    name = program_name(e.argv[0]) if e.argv else ""
    return name in _LEAVES or (program_name(argv[0]) == "exec" and len(argv) > 1)
_PLAIN_WORD = re.compile(r"[\w./:@%+,=-]+")
"""A loop word that is itself, one word, whatever the shell's state (no glob, no expansion)."""


def _loop_runs(node: Node, ctx: _Ctx) -> bool:
    """A ``for`` loop over plain words (``_PLAIN_WORD``, or quoted text): it runs a pass for
    each, unless a ``break`` or the like ends it (``_Walker.leaves``)."""
    if node.type != "for_statement":
        return False
    values = node.children_by_field_name("value")
    return bool(values) and all(c.type == "raw_string" or (
        c.type == "word" and _PLAIN_WORD.fullmatch(_text(c, ctx))) for c in values)


def _set_on_every_path(node: Node, ctx: _Ctx) -> set[str]:
    """Variables a conditional construct sets whichever way it goes: an ``if`` with an
    ``else``, or a ``case`` with a ``*)``, whose every branch assigns the name as one of its
    own commands; a ``for`` loop's variable over plain words (it runs at least once). The
    join after the construct (``_may_not_run``) takes them as maybe unset; these are not."""
    if node.type == "for_statement":
        var = node.child_by_field_name("variable")
        return {_text(var, ctx)} if var is not None and _loop_runs(node, ctx) else set()
    if node.type == "if_statement":
        clauses = [c for c in node.named_children if c.type in ("elif_clause", "else_clause")]
        if not clauses or clauses[-1].type != "else_clause":
            return set()
        bodies = [_branch_body(node), *(_branch_body(c) for c in clauses)]
    elif node.type == "case_statement":
        items = [c for c in node.named_children if c.type == "case_item"]
        if not any(_text(p, ctx) == "*" for i in items for p in _case_parts(i)[0]):
            return set()
        bodies = [_case_parts(i)[1] for i in items]
    else:
        return set()
    found = [_assigned_here(body, ctx) for body in bodies]
    return set.intersection(*found) if found else set()


def _branch_body(node: Node) -> list[Node]:
    """The commands an ``if``'s (or ``elif``'s) ``then`` runs, or an ``else``'s."""
    after = node.type == "else_clause"
    body: list[Node] = []
    for c in node.children:
        if c.type in ("then", "else"):
            after = True
        elif c.type in ("elif_clause", "else_clause", "fi"):
            break
        elif after and c.is_named and c.type != "comment":
            body.append(c)
    return body


def _assigned_here(body: list[Node], ctx: _Ctx) -> set[str]:
    """Plain names a list of commands assigns as commands of its own (``x=1``, ``x=1 y=2``;
    not ``x=1 &``, which runs in a subshell)."""
    names: set[str] = set()
    for c in body:
        if c.next_sibling is not None and c.next_sibling.type == "&":
            continue  # x=1 &: set in a subshell of its own
        for a in [c] if c.type == "variable_assignment" else (
                c.named_children if c.type == "variable_assignments" else []):
            name = a.child_by_field_name("name")
            if a.type == "variable_assignment" and name is not None and \
                    name.type == "variable_name":
                names.add(_text(name, ctx))
    return names


def _case_parts(item: Node) -> tuple[list[Node], list[Node]]:
    """A case item's patterns (before ``)``) and its body."""
    close = next((i for i, c in enumerate(item.children) if c.type == ")"), len(item.children))
    return ([c for c in item.children[:close] if c.is_named],
            [c for c in item.children[close + 1:] if c.is_named])


_ELEMENT_KEY = re.compile(r"\[(0|[1-9]\d?)\]=")
"""An array element given its index as a decimal literal (``a=([2]=x)``): placed there."""
_DECODERS = frozenset({"base64", "xxd", "rev", "tr"})
"""Filters whose output, used as a program's name, is a disguise (``cat`` passes text on)."""
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)")
_STATEFUL = frozenset({"cd", "pushd", "popd", "read", "mapfile", "readarray", "declare",
                       "typeset", "local", "export", "readonly", "set", "shift", "unset",
                       "source", ".", "eval", "alias", "printf", "getopts", "let", "exec",
                       "trap", "hash", "enable", "shopt", "builtin", "command"})
"""Builtins that change the shell's state: judged once, never again per loop word."""
_SHELL_LIKE = re.compile(r"\s|[{;|&$`<>(]")
"""An argument that may be a command line on its own (words, a brace list, a list)."""
_METADATA_WRITERS = frozenset({"chmod", "chown", "chgrp", "touch", "setfacl", "chattr"})
"""Programs that change a file's metadata, not what it holds."""


class _Untouched(Mapping[str, str]):
    """``env`` without the names in ``tainted``, read through (no copy per command)."""

    def __init__(self, env: Mapping[str, str], tainted: set[str]) -> None:
        self._env, self._tainted = env, tainted

    def __getitem__(self, name: str) -> str:
        if name in self._tainted:
            raise KeyError(name)
        return self._env[name]

    def __iter__(self) -> Iterator[str]:
        return (n for n in self._env if n not in self._tainted)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _prints_plainly(node: Node, ctx: _Ctx) -> bool:
    """``$(echo ..)``, ``$(printf ..)``, ``$(dirname ..)``, ``$(git rev-parse
    --show-toplevel)`` or ``--git-path NAME`` alone: its output stands for words. Output of
    a decoder (``base64 -d``, ``rev``) stays a substitution: code from a decoder is
    refused."""
    if node.type != "command_substitution":
        return False
    inner = [c for c in node.named_children if c.type != "comment"]
    name = inner[0].child_by_field_name("name") if len(inner) == 1 and \
        inner[0].type == "command" else None
    return name is not None and (_text(name, ctx) in ("echo", "printf", "dirname",
                                                      "basename") or " ".join(
        _text(inner[0], ctx).split()) == "git rev-parse --show-toplevel" or re.fullmatch(
            r"git rev-parse --git-path [\w./-]+", " ".join(_text(inner[0], ctx).split()))
        is not None)


def _ran_silently(entries: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every command judged in a redirected body prints nothing to its output:
    ``sh -c '"$@"' sh :`` or ``find . -exec : \\;`` before ``>`` empty the file as ``:``
    does. A command whose output is not known to be empty makes it a write."""
    ran = [e["argv"] for e in entries if e["argv"] and e["argv"][0] not in _REDIRECT_OPS
           and "function" not in e]
    return bool(ran) and all(_prints_nothing(_unwrapped(list(a))) or _only_runs(a)
                             for a in ran)


def _only_runs(argv: Sequence[str]) -> bool:
    """A program that prints nothing itself and runs commands judged as entries of their
    own: a shell's ``-c`` code, ``find`` whose actions are all ``-exec``-like."""
    name = argv[0].rsplit("/", 1)[-1]
    if name in SHELLS:  # sh -c CODE, sh -ec CODE
        return any(w[:1] == "-" and w[1:2] != "-" and "c" in w for w in argv[1:3])
    if name == "find":
        return bool(_FIND_RUNS & set(argv)) and not _FIND_PRINTS & set(argv)
    wrapper = WRAPPERS.get(name)  # env -S CODE, flock -c CODE
    return wrapper is not None and any(w.split("=", 1)[0] in wrapper.script_options
                                       for w in argv[1:])


_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_PRINTS = frozenset({"-print", "-print0", "-printf", "-ls", "-fprint", "-fprint0",
                          "-fprintf", "-fls"})
"""``find``'s actions that print (to its output, or a file given after them)."""


def _prints_nothing(argv: Sequence[str | None]) -> bool:
    """``:``, ``true``, ``cat /dev/null``, ``echo -n``: a ``>`` after them empties a file
    (``echo``, ``echo ""``, ``printf '\\n'`` leave one blank line: what it held is lost all
    the same)."""
    prog, args = (argv[0], argv[1:]) if argv else (":", [])
    if prog in (":", "true", "false", "test", "[", "sleep", "wait"):
        return True
    if prog == "cd":  # cd - prints the folder
        return "-" not in args
    if prog == "cat":
        return bool(args) and all(a == "/dev/null" for a in args)
    if prog == "echo":
        return all(a in ("-n", "-e", "-E", "") for a in args)
    return prog == "printf" and args in ([""], ["\\n"])


MAX_HIDDEN_TEXT = 8192
"""Longer arguments are not read as command lines: the program is then only known at run
time (ask, deny under ``--approval auto``), never taken as running nothing."""
MAX_HIDDEN_ARGS = 257
"""Arguments of a program that runs unseen code searched for a command line it may run;
beyond them, as for ``MAX_HIDDEN_TEXT``."""

_WORDS = frozenset({"command_name", "word", "concatenation", "string", "raw_string",
                    "ansi_c_string", "translated_string", "command_substitution",
                    "simple_expansion", "expansion", "number", "arithmetic_expansion",
                    "process_substitution"})
"""Nodes that stand for (part of) one shell word."""


def _start(child: Node, ctx: _Ctx) -> int:
    """Where a part of a string begins: the grammar counts the blanks before an expansion
    that follows another (``"$a $b"``) as part of it, and they are the string's own text."""
    if not child.is_named:
        return child.start_byte
    text = ctx.src[child.start_byte:child.end_byte]
    return child.start_byte + len(text) - len(text.lstrip(b" \t"))


def _split_word(root: Node) -> bool:
    """Whether the tree has two word nodes side by side with nothing between them: bash
    reads them as one word (``r`:`m`` is ``rm``) where the grammar made two, so what the
    tree says runs is not what bash runs."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("concatenation", "string", "translated_string"):
            continue  # parts of one word abut by definition
        kids = node.named_children
        for a, b in itertools.pairwise(kids):
            if a.end_byte == b.start_byte and a.type in _WORDS and b.type in _WORDS:
                return True
        stack.extend(kids)
    return False


def _body_as_words(root: Node) -> bool:
    """Whether the tree hangs words on a here-document's redirection below the line that
    starts it: the grammar reads a body whose first line starts with a backslash (``psql
    <<'E'`` then ``\\! rm -rf src``) as words after the delimiter, and the body as empty."""
    for node in _descendants(root, "heredoc_redirect"):
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is not None and any(
                c.type not in _HEREDOC_PARTS and c.is_named and (
                    c.start_point[0] > start.end_point[0] or b"\n" in (c.text or b""))
                for c in node.children):
            return True
    return False


_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end"})


def _redirect_op(node: Node, ctx: _Ctx) -> str:
    """A file redirection's operator, ``<>`` included (``read_write_marked``)."""
    token = next((c for c in node.children if not c.is_named), None)
    if token is None:
        return ""
    op = _text(token, ctx)
    marked = ctx.src[token.end_byte:token.end_byte + 1] == READ_WRITE_MARK
    return "<>" if op == "<" and marked else op


def _descendants(node: Node, kind: str) -> list[Node]:
    found = [node] if node.type == kind else []
    for c in node.named_children:
        found.extend(_descendants(c, kind))
    return found


def _runs_arguments(body: Node, ctx: _Ctx) -> bool:
    """A function body with ``"$@"`` or ``$*`` as a command name (``retry() { "$@"; }``)."""
    for cmd in _descendants(body, "command"):
        name = cmd.child_by_field_name("name")
        if name is not None and _text(name, ctx).strip('"') in ("$@", "$*", "${@}", "${*}"):
            return True
    return False


def _entry_key(entry: Mapping[str, Any]) -> tuple[str, ...]:
    return (*entry["argv"], entry["decision"], entry["reason"], entry.get("via", ""))


def _lookup_output(name: str) -> str | None:
    """What ``which NAME`` / ``command -v NAME`` print for a program name: its path."""
    if not re.fullmatch(r"[\w.+-]+", name):
        return None
    return f"/usr/bin/{name}\n"


def _fed_lines(argv: list[Word], text: str) -> list[list[Word]]:
    """``echo rm | xargs -I{} {} -rf x``: the command once per input line (or NUL-ended
    record), the replace string standing for it (beyond ``MAX_LOOP_WORDS`` lines: for a
    run-time word); [] when no word holds it."""
    if not any(w.dynamic == "input" for w in argv):
        return []
    lines = bounded([ln.strip(" \t") for ln in re.split(r"[\n\0]", text) if ln.strip(" \t")],
                    MAX_LOOP_WORDS)  # -0 -I{}: each NUL-ended name (no argument holds a NUL)
    if lines is None:  # more lines than followed: the replace string is only known then
        return [[Word(None, w.text, "var") if w.dynamic == "input" else w for w in argv]]
    return [[Word(w.text.replace(INPUT_CODE, ln), w.text) if w.dynamic == "input" else w
             for w in argv] for ln in lines]


def _fed_words(argv: list[Word], text: str) -> list[Word]:
    """``echo a b | xargs cmd``: the input's words (known statically) replace the marker,
    split as that ``xargs`` splits them (``INPUT_ARGUMENTS``: ``echo rm -rf src | xargs -0
    sh -c`` gives sh one word, newline included, which it runs)."""
    out: list[Word] = []
    for i, w in enumerate(argv):
        if i and w is argv[i - 1] and w.value is None and is_input_arguments(w.text):
            continue  # the second word standing for several: the input is given whole
        words = split_input(w.text, text) if w.value is None and \
            is_input_arguments(w.text) else None
        out.extend([Word.of(x) for x in words] if words is not None else [w])  # all of them:
        # the text is in the command (a cap once dropped find's -delete after 64 words)
    return out


def _looks_up(node: Node, ctx: _Ctx) -> bool:
    """A name that is ``"$(command -v NAME)"``, ``$(which NAME)`` or ``$(type -P NAME)``
    alone: the path of a program named plainly (judged as that program), not a computation."""
    while node.type in ("command_name", "string") and len(node.named_children) == 1:
        node = node.named_children[0]
    inner = [c for c in node.named_children if c.type != "comment"]
    if node.type != "command_substitution" or len(inner) != 1 or inner[0].type != "command":
        return False
    words = [_text(c, ctx) for c in inner[0].named_children]
    return (words[:-1] in (["command", "-v"], ["type", "-P"], ["which"])
            and re.fullmatch(r"[\w.+-]+", words[-1]) is not None)


def _has_type(node: Node, types: tuple[str, ...]) -> bool:
    if node.type in types:
        return True
    return any(_has_type(c, types) for c in node.named_children)


def _starts_copies(body: Node, name: str, ctx: _Ctx) -> bool:
    """A function body that runs itself in a pipeline or in the background (``:|:&``)."""
    def calls(node: Node) -> bool:
        if node.type == "command":
            n = node.child_by_field_name("name")
            if n is not None and _text(n, ctx) == name:
                return True
        return any(calls(c) for c in node.named_children)

    def spawns(node: Node) -> bool:
        if node.type == "pipeline" and calls(node):
            return True
        if node.type in ("list", "compound_statement") and any(
                c.type == "&" for c in node.children) and calls(node):
            return True
        return any(spawns(c) for c in node.named_children)

    return spawns(body)


def _special_variable(node: Node, ctx: _Ctx) -> bool:
    """Whether ``node`` expands ``$1``, ``$@``, ``$#``, ``$$``...: what a caller passes."""
    return bool(_descendants(node, "special_variable_name")) or any(
        _text(v, ctx).isdigit() for v in _descendants(node, "variable_name"))


def _passes_lines(argv: list[Word]) -> bool:
    """``cat`` with no operand and ``tee FILES`` print every line of their input unchanged
    (what tee writes is judged as its own write)."""
    name = program_name(argv[0]) if argv else ""
    words = [w.value for w in argv[1:]]
    if name == "cat":
        return all(w in ("-u", "--") for w in words)
    return name == "tee" and all(w is not None and (not w.startswith("-") or w in (
        "-a", "--append", "-i", "--ignore-interrupts", "-p")) for w in words)


_ALLOCATED = range(10, 20)
"""Descriptors ``{var}<FILE`` may give (bash takes the lowest free one from 10)."""


def _descriptors(node: Node, op: str, ctx: _Ctx) -> set[int]:
    """The descriptors a file redirection sets: its number, else 0 for ``<``/``<>``, 1 for
    ``>``, both 1 and 2 for ``&>`` and ``>& FILE``."""
    desc = node.child_by_field_name("descriptor")
    if desc is not None and _text(desc, ctx).isdigit():
        return {int(_text(desc, ctx))}
    before = node.prev_sibling
    while before is not None and before.type == "command" and before.children:
        before = before.children[-1]  # exec {fd}<f: {fd} is the command's last word
    if before is not None and before.end_byte == node.start_byte and re.fullmatch(
            r"\{[A-Za-z_]\w*\}", _text(before, ctx)):
        return set(_ALLOCATED)  # the lowest free descriptor from 10
    if op in ("<", "<>", "<&"):
        return {0}
    return {1, 2} if op in ("&>", "&>>", ">&") else {1}


def _text(node: Node, ctx: _Ctx) -> str:
    return ctx.src[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


_NUL_READ = re.compile(r"IFS=\s+read\s+(?:-r\s+-d\s*''|-d\s*''\s+-r|-rd\s*'')\s+"
                       r"[A-Za-z_]\w*")
"""``IFS= read -r -d '' f``: one NUL-ended record, whole (no blank trimmed, no backslash
taken), into one variable."""


def _reads_nul_records(stage: Node, ctx: _Ctx) -> bool:
    """``find -print0 | while IFS= read -r -d '' f; do ..``: a loop that reads each name
    whole, as ``xargs -0`` does."""
    condition = stage.child_by_field_name("condition") if stage.type == "while_statement" \
        else None
    return condition is not None and _NUL_READ.fullmatch(
        " ".join(_text(condition, ctx).split()).rstrip(";").strip()) is not None


def _nul_filter(argv: list[Word]) -> bool:
    """``sort -z``, ``head -z``, ``grep -z``: a filter that passes NUL-ended records whole
    (``find -print0 | sort -z``): it cuts no name, whatever characters it holds."""
    return keeps_lines(argv) and any(
        w.value in ("--zero-terminated", "--null-data") or (
            (w.value or "").startswith("-") and not (w.value or "").startswith("--") and
            "z" in (w.value or "")) for w in argv[1:])


def _written_as(word: Word) -> str:
    """A file written, as a later command names it: its path, or, when that is only known at
    run time, its text (``"$t/setup.sh"`` and ``$t/setup.sh`` alike)."""
    return os.path.normpath(word.value) if word.value else "$" + unquoted_text(word.text)


def _hands_on_env(argv: list[Word], e: Effect) -> bool:
    """Whether the code or commands ``e`` runs get the environment as it is: each wrapper
    keeps it (``env`` without ``-i``/``-u``), and so does the program (a shell, ``xargs``)."""
    if any(not (w in WRAPPERS and WRAPPERS[w].keeps_env) for w in e.wrappers):
        return False
    prefix = [w.value or "-" for w in argv[:len(argv) - len(e.argv)]]
    if "env" in e.wrappers and any(v.startswith("-") and v.split("=")[0]
                                   not in ENV_KEEPING_OPTIONS for v in prefix[1:]):
        return False
    letters = "".join(WRAPPERS[w].env_letters for w in e.wrappers)
    if letters and any(re.fullmatch(r"-\w+", v) and set(v[1:]) & set(letters)
                       for v in prefix):  # exec -c bash: an empty environment
        return False
    name = program_name(e.argv[0]) if e.argv else ""
    return name in SHELLS or name in STARTS_WITH_ENV or (
        name in WRAPPERS and WRAPPERS[name].keeps_env)


def _in_function(node: Node) -> bool:
    """Whether ``node`` is inside a function's body (where ``declare x`` makes a local)."""
    parent = node.parent
    while parent is not None:
        if parent.type == "function_definition":
            return True
        parent = parent.parent
    return False


def _simple_braced(node: Node) -> bool:
    """``${NAME}`` with no operator (``${NAME:-x}`` and ``${#NAME}`` are not plain values)."""
    kinds = [c.type for c in node.children]
    return kinds in (["${", "variable_name", "}"], ["${", "special_variable_name", "}"])


_ANSI_C_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|"
                            r"U([0-9A-Fa-f]{1,8})|c(.)|(.))", re.S)
_ANSI_C_NAMED = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                 "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str) -> Word:
    """``$'..'``: its escapes decoded as bash decodes them (``\\u72`` takes 1-4 hex digits,
    ``\\x7`` 1-2, ``\\cX`` is a control character, an unknown escape stays as written); a
    string ends at a NUL byte (``$'rm\\0x'`` is ``rm``); a code point past Unicode's leaves
    it only known at run time."""
    def decoded(m: re.Match[str]) -> str:
        octal, hex2, u4, u8, control, other = m.groups()
        if octal or hex2:
            return chr(int(octal, 8) & 0xFF if octal else int(hex2, 16))
        if u4 or u8:
            point = int(u4 or u8, 16)
            if point > 0x10FFFF:
                raise ValueError(m.group())
            return chr(point)
        if control is not None:
            return chr(ord(control.upper()) & 0x1F) if control != "?" else "\x7f"
        return _ANSI_C_NAMED.get(other, "\\" + other)
    try:
        value = _ANSI_C_ESCAPE.sub(decoded, text[2:-1])
    except ValueError:
        return Word(None, text, "other")
    return Word(value.split("\x00", 1)[0], text)
