"""The shell constructs the classifier evaluates, declared once: modelled, or opaque.

The walker (``shell.py``) decodes what it models: a construct listed here as modelled is
evaluated statically (its value, or the program it runs, is computed) or judged by a rule. A
construct that is opaque, or any syntax node kind not listed, can hide which program runs, so
``policy check-shell`` answers ``deny`` for it (``ask`` would let ``--approval auto`` run it).
A value that is only known at run time (``$(cat f) -rf dir``, a variable read from a file) is
not a construct: it stays ``ask`` under a policy and ``deny`` under ``--approval auto``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from engine.permissions.effect import SYSTEM_DIRS
from engine.permissions.words import Word, brace_words

Treatment = Literal["modelled", "opaque"]

MODELLED_NODES = frozenset({
    # statements and lists
    "program", "list", "pipeline", "command", "redirected_statement", "compound_statement",
    "subshell", "do_group", "if_statement", "elif_clause", "else_clause", "while_statement",
    "for_statement", "c_style_for_statement", "case_statement", "case_item", "negated_command",
    "function_definition", "test_command", "declaration_command", "unset_command",
    "variable_assignment", "variable_assignments", "comment",
    # expressions ([[ ]], (( )), $(( )))
    "binary_expression", "unary_expression", "ternary_expression", "parenthesized_expression",
    "postfix_expression", "test_operator", "extglob_pattern", "regex",
    # words and expansions
    "word", "number", "string", "string_content", "raw_string", "ansi_c_string",
    "translated_string", "concatenation", "simple_expansion", "expansion",
    "arithmetic_expansion", "command_substitution", "process_substitution", "variable_name",
    "special_variable_name", "subscript", "array", "brace_expression", "command_name",
    # redirections and here-documents
    "file_redirect", "file_descriptor", "heredoc_redirect", "herestring_redirect",
    "heredoc_body", "heredoc_content", "heredoc_start", "heredoc_end",
})
"""Syntax node kinds (tree-sitter-bash) the walker evaluates; any other kind is opaque."""

SHELL_CODE_VARS = frozenset({"BASH_ENV", "ENV", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS4",
                             "SHELLOPTS", "BASHOPTS"})
"""Variables that make a shell run code from elsewhere (a start-up file, a prompt, a trace)."""


def shell_code_var(name: str) -> bool:
    """A variable that makes a shell run code: ``SHELL_CODE_VARS``, or ``BASH_FUNC_NAME%%``,
    a function a child bash imports under a command's name."""
    return name in SHELL_CODE_VARS or name.startswith("BASH_FUNC_")

ARITHMETIC_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
"""``[[ A -eq B ]]`` evaluates both sides as arithmetic (``[ ]`` and ``test`` do not)."""

_DATE_NUMBERS = re.compile(r"\+(?:%[-_0^#]?[sYymdHMSjuwUVWGgeklIzN]|[ \t,:._-])*")
"""A ``date`` format of numbers only (``+%s``, ``+%Y-%m-%d``): not ``+/etc/x``, which it
prints as it is."""
_GETCONF_NUMBERS = re.compile(r"_?[A-Z0-9_]*(?:MAX|SIZE|BITS?|PAGES|NPROCESSORS_\w+|CLK_TCK|"
                              r"LINESIZE|ASSOC)")
"""``getconf`` names whose value is a number (``getconf PATH`` prints folders)."""
_EXPR_NUMBERS = frozenset({"+", "-", "*", "/", "%", "<", "<=", "=", "==", "!=", ">=", ">"})
_STAT_NUMBERS = re.compile(r"(?:%[sbBihugXYZWafodDtT]|[ \t,:;/._-]|\\n)+")
"""A ``stat -c`` format of numbers only (sizes, times, modes, ids; not ``%n``, ``%N``)."""


def numbers_printed(program: str, words: Sequence[Word]) -> bool:
    """Whether ``program WORDS`` prints numbers and no name read from data. Bash's
    arithmetic reads a word beside a count as a variable, and runs a subscript in it: with
    a file ``a[$(cmd)]`` in src, ``n=$(wc -l src/*); (( n ))`` runs cmd. Names the command
    shows are not data; those a glob, a recursive search or a listing finds are."""
    values = [w.value for w in words]
    if program == "nproc":
        return True
    if program == "seq":  # seq 5, seq -w -s, 1 2 9: numbers (not -f FORMAT, its text)
        return _seq_numbers(values)
    if program == "date":  # date, date -u +%s: a format of numbers (a bare date: words)
        return _date_numbers(values)
    if program == "numfmt":  # numfmt --from=iec 50M: the numbers it was given, converted
        return _numfmt_numbers(values)
    if program == "id":  # id -u, id -g, id -G: ids; id -un and plain id print names
        return bool(values) and all(v in ("-u", "-g", "-G", "-r", "-ur", "-ru", "-gr",
                                          "-rg", "-Gr", "-rG") for v in values)
    if program == "getconf":
        return len(values) == 1 and _GETCONF_NUMBERS.fullmatch(values[0] or "") is not None
    if program == "pgrep":  # process ids, one a line (-d: between them); -l/-a add names
        delimiter = _option_value(values, ("-d", "--delimiter"))
        return not ({"-l", "-a", "--list-name", "--list-full"} & set(values) or any(
            re.fullmatch(r"-\w*[la]\w*", v or "") for v in values)) and (
                delimiter is None or re.fullmatch(r"[\s,;:|/-]*", delimiter) is not None)
    if program == "expr":  # expr "$x" prints x; expr "$x" + 1 a number or nothing
        return (len(values) == 3 and values[1] in _EXPR_NUMBERS) or (
            len(values) == 2 and values[0] == "length")
    if program == "wc":
        return not any((v or "").startswith("--files0") for v in values) and \
            _shown_names(_operands(words))
    if program == "du":
        return (_short_flag(values, "s", "dtBX") or "--summarize" in values) and \
            _shown_names(_operands(words))
    if program == "stat":
        fmt = _option_value(values, ("-c", "--format", "--printf"))
        return (fmt is not None and bool(_STAT_NUMBERS.fullmatch(fmt))) or \
            _shown_names(_operands(words))
    if program in ("grep", "rg"):
        return _counts_only(program, words)
    return program == "git" and _git_numbers([v or "" for v in values])


_DATE_INPUTS = frozenset({"-d", "--date", "-r", "--reference"})
"""``date`` options whose value is what it reads (a date, a file's time), not what it
prints: the format alone decides that."""


def _date_numbers(values: Sequence[str | None]) -> bool:
    """``date -u +%s``, ``date -d '30 days ago' +%Y%m%d``: printed in a format of numbers."""
    rest, formats = list(values), 0
    while rest:
        v = rest.pop(0)
        if v is None:
            return False
        if v in _DATE_INPUTS and rest:
            rest.pop(0)
        elif v.startswith("+") and _DATE_NUMBERS.fullmatch(v):
            formats += 1
        elif not (v in ("-u", "--utc", "--universal") or v.startswith(("--date=",
                                                                       "--reference="))):
            return False
    return formats == 1


_NUMFMT_OPTIONS = re.compile(r"--(?:from|to|from-unit|to-unit|round|padding|grouping)(?:=.*)?"
                             r"|--grouping|-d|--delimiter=\S")
_NUMFMT_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?[KMGTPEZYRQ]?i?")


def _numfmt_numbers(values: Sequence[str | None]) -> bool:
    """``numfmt --from=iec 50M``, ``numfmt --to=si 1200``: numbers it was given on the line,
    printed converted (letters and digits); not ``--field``/``--format``/``--suffix``, which
    print other text, nor its input, which is data."""
    given = [v for v in values if v is not None]
    operands = [v for v in given if not v.startswith("--") and v != "-d"]
    return len(given) == len(values) and bool(operands) and all(
        _NUMFMT_OPTIONS.fullmatch(v) for v in given if v.startswith("-") and
        not _NUMFMT_NUMBER.fullmatch(v)) and all(_NUMFMT_NUMBER.fullmatch(v) for v in operands)


def _seq_numbers(values: Sequence[str | None]) -> bool:
    """``seq [-w] [-s SEP] [FIRST [STEP]] LAST`` with numbers and a separator of blanks or
    punctuation."""
    rest = list(values)
    while rest and (rest[0] or "").startswith(("-w", "--equal-width", "-s", "--separator=")):
        head = rest.pop(0) or ""
        if head in ("-w", "--equal-width"):
            continue
        separator = (rest.pop(0) if rest else None) if head == "-s" else \
            head.partition("=")[2] if head.startswith("--") else head[2:]
        if separator is None or not re.fullmatch(r"[ \t\n,;:|/._-]*|\\n|\\t", separator):
            return False
    return 1 <= len(rest) <= 3 and all(re.fullmatch(r"-?\d+(?:\.\d+)?", v or "")
                                       for v in rest)


def _operands(words: Sequence[Word]) -> list[Word]:
    return [w for w in words if not (w.value or "x").startswith("-") or w.value == "-"]


def _shown_names(names: Sequence[Word]) -> bool:
    """Names written in the command, each printed as it is: none a glob or a variable
    expands, none with a ``[`` (a subscript, were it read as arithmetic)."""
    return all(w.value is not None and not w.expandable and "[" not in w.value for w in names)


def _short_flag(values: Sequence[str | None], letter: str, valued: str) -> bool:
    """``letter`` among the short options run together before any of ``valued`` (the
    letters that take a value: ``grep -ec`` is ``-e c``)."""
    for v in values:
        if v is None or v == "--":
            return False
        cluster = v[1:] if v.startswith("-") and not v.startswith("--") else ""
        if valued:
            cluster = re.split(f"[{re.escape(valued)}]", cluster, maxsplit=1)[0]
        if letter in cluster:
            return True
    return False


def _option_value(values: Sequence[str | None], options: tuple[str, ...]) -> str | None:
    for i, v in enumerate(values):
        key, eq, value = (v or "").partition("=")
        if key in options and eq:
            return value
        if key in options and i + 1 < len(values):
            return values[i + 1]
    return None


_GREP_VALUED = "efmABCdD"
_RG_VALUED = "efmABCtTgjEMr"


def _counts_only(program: str, words: Sequence[Word]) -> bool:
    """``grep -c``/``rg -c`` printing counts with no file name: ``-h`` (``-I`` for rg), or
    grep given one file the command names (``rg DIR`` prints the names it finds)."""
    values = [w.value for w in words]
    valued = _GREP_VALUED if program == "grep" else _RG_VALUED
    if not ("--count" in values or "--count-matches" in values or _short_flag(
            values, "c", valued)):
        return False
    if "--no-filename" in values or _short_flag(values, "h" if program == "grep" else "I",
                                                 valued):
        return True
    if program == "rg" or "--with-filename" in values or "--recursive" in values or any(
            _short_flag(values, f, valued) for f in "HrR") or None in values:
        return False
    operands = _operands(words)
    patterned = any(v in ("--regexp", "--file") or (v or "").startswith(("--regexp=", "--file="))
                    for v in values) or _short_flag(values, "e", "fmABCdD") or _short_flag(
                        values, "f", "emABCdD")
    files = operands if patterned else operands[1:]
    return len(files) <= 1 and (_shown_names(files) or _one_file(files[0]))


def _one_file(word: Word) -> bool:
    """A double-quoted word naming one file, whatever its name (``grep -c x "$f"`` prints a
    count alone), and never an option: each name it may hold starts with a character that
    is not ``-`` nor a glob's (``for f in src/*.py``; not ``*.py``, which ``-r.py`` matches)."""
    names = brace_words(word.value) if word.value is not None and word.text.startswith(
        '"') else None
    return names is not None and all(n[:1] not in ("", "-", "*", "?", "[") for n in names)


_TIMESTAMP_FORMAT = re.compile(r"--(?:format|pretty)=(?:t?format:)?(?:%[ac]t|[ ,:;/-])+")
"""``git log -1 --format=%ct``: commit and author times as seconds, numbers only."""


def _git_numbers(words: list[str]) -> bool:
    """``git rev-list --count``, ``git log --format=%ct``."""
    while words and words[0].startswith("-"):  # git -C dir, git -c key=value
        words = words[2:] if words[0] in ("-C", "-c") else words[1:]
    verb, rest = (words[0], words[1:]) if words else ("", [])
    if verb == "rev-list":
        return "--count" in rest
    return verb in ("log", "show") and any(_TIMESTAMP_FORMAT.fullmatch(w) for w in rest)

_REV_PARSE_NAMES = frozenset({"--short", "--verify", "-q", "--quiet", "--abbrev-ref",
                              "--symbolic-full-name", "--default", "--revs-only", "--all",
                              "--branches", "--tags", "--remotes"})
_REV_LIST_NAMES = ("-n", "--max-count", "--skip", "--count", "--all", "--first-parent",
                   "--no-merges", "--merges", "--reverse", "--since", "--after", "--until",
                   "--before", "--author", "--committer", "--branches", "--tags", "--remotes",
                   "--abbrev-commit", "--abbrev", "--parents", "--topo-order", "--date-order",
                   "--ancestry-path", "--not", "--max-parents", "--min-parents", "--no-walk")
"""rev-list's options that keep its output commit names (``--boundary`` marks some with a
dash, ``--graph`` draws ``*``, ``--objects`` and ``--format`` print paths and text)."""


def names_printed(program: str, words: list[str | None]) -> bool:
    """Whether ``program WORDS`` prints object names only: commit hashes, ref names or
    container ids, each a word with no blank or pattern (``git merge-base``, ``git
    rev-parse HEAD``, ``git rev-list -n 5 HEAD``, ``docker ps -q``). Options that print
    paths or text (``--show-toplevel``, ``--objects``, ``--format``) are not, nor a word
    only known at run time (None): it may be such an option, and ``git rev-parse`` prints
    what it does not know as given (``git rev-parse 'a b'`` prints ``a b``)."""
    if None in words:
        return False
    known = [w or "" for w in words]
    while program == "git" and known and known[0].startswith("-"):  # git -C dir rev-parse
        known = known[2:] if known[0] in ("-C", "-c") else known[1:]
    verb, rest = (known[0], known[1:]) if known else ("", [])
    if program == "git" and verb == "merge-base":
        return True
    if program == "git" and verb == "rev-parse":
        return all(not w.startswith("-") or w.partition("=")[0] in _REV_PARSE_NAMES
                   for w in rest)
    if program == "git" and verb == "rev-list":
        return all(not w.startswith("-") or w.partition("=")[0] in _REV_LIST_NAMES or
                   re.fullmatch(r"-n?\d+", w) for w in rest)
    if program == "git" and verb == "log":
        return _logs_ids(rest)
    if program == "git" and verb == "describe":
        return _describes_matching(rest)
    if program == "git" and verb == "tag":
        return _tags_matching(rest)
    if (program in ("docker", "podman") and verb in ("ps", "images")) or known[:2] in (
            ["container", "ls"], ["image", "ls"]):
        return program in ("docker", "podman") and bool({"-q", "--quiet"} & set(known)) and \
            not any(w.startswith("--format") for w in known)
    return False


_ID_FORMATS = frozenset({f"--{o}={p}{c}" for o in ("format", "pretty") for p in ("", "format:",
                                                                               "tformat:")
                         for c in ("%H", "%h")})
_LOG_SEARCH = frozenset({"-S", "-G", "--grep", "--author", "--committer", "--diff-filter"})
_LOG_KEPT = frozenset({"--follow", "--pickaxe-regex", "-i", "--regexp-ignore-case",
                       "--all-match", "--invert-grep", "-E", "-F", "--extended-regexp",
                       "--fixed-strings"})


def _logs_ids(rest: list[str]) -> bool:
    """``git log -S x --reverse --format=%h -- f``: one commit id per line, given an id
    format and only options that choose commits (never ``-p``, ``--stat``, ``--graph``,
    ``--boundary``, which add other lines)."""
    if not _ID_FORMATS & set(rest):
        return False
    i = 0
    while i < len(rest):
        w = rest[i]
        if w == "--":
            return True
        if w in _LOG_SEARCH:
            i += 2
            continue
        if w.startswith("-") and not (w in _ID_FORMATS or w in _LOG_KEPT or
                                      w.partition("=")[0] in (*_REV_LIST_NAMES, *_LOG_SEARCH)
                                      or re.fullmatch(r"-n?\d+", w)):
            return False
        i += 1
    return True


_NAME_START = re.compile(r"[A-Za-z0-9_]")
"""How a pattern starts whose matches can never be read as an option."""
_DESCRIBE_KEPT = re.compile(r"--tags|--abbrev=\d+|--always|--first-parent|--long|"
                            r"--candidates=\d+|--exact-match|--dirty|--broken|--exclude=\S+")


def _describes_matching(rest: list[str]) -> bool:
    """``git describe --tags --abbrev=0 --match 'v*'``: the tag it prints matches each
    pattern given (all starting with a letter or digit: never ``-``), or is a commit id."""
    patterns: list[str] = []
    i = 0
    while i < len(rest):
        w = rest[i]
        if w in ("--match", "--exclude") and i + 1 < len(rest):
            patterns += [rest[i + 1]] if w == "--match" else []
            i += 2
            continue
        if w.startswith("--match="):
            patterns.append(w.partition("=")[2])
        elif w.startswith("-") and not _DESCRIBE_KEPT.fullmatch(w):
            return False
        i += 1
    return bool(patterns) and all(_NAME_START.match(p) for p in patterns)


_TAG_KEPT = re.compile(r"-l|--list|-i|--ignore-case|--sort=\S+|--(?:no-)?merged(?:=\S+)?|"
                       r"--(?:no-)?contains(?:=\S+)?|--points-at(?:=\S+)?")


def _tags_matching(rest: list[str]) -> bool:
    """``git tag -l 'v*' --sort=-v:refname``: names matching each pattern (never ``-``);
    ``--merged``, ``--contains`` and ``--points-at`` take a commit as their next word."""
    if not {"-l", "--list"} & set(rest):
        return False
    patterns: list[str] = []
    takes = ("--merged", "--no-merged", "--contains", "--no-contains", "--points-at")
    for before, w in zip(["", *rest], rest, strict=False):
        if before in takes:
            continue
        if w.startswith("-"):
            if not _TAG_KEPT.fullmatch(w):
                return False
        else:
            patterns.append(w)
    return bool(patterns) and all(_NAME_START.match(p) for p in patterns)


def ids_printed(program: str, words: list[str | None]) -> bool:
    """Whether ``program WORDS`` prints hex object ids only (``names_printed`` but a ref
    name): never a word that starts with ``-``, where a branch may be named
    ``--output=x`` (``git rev-parse --abbrev-ref HEAD`` prints that name)."""
    return names_printed(program, words) and not any(
        (w or "").startswith("--abbrev-ref") for w in words)


IMPLICIT_FUNCTIONS = frozenset({"command_not_found_handle"})
"""Function names the shell calls on its own (for every unknown program)."""


@dataclass(frozen=True, slots=True)
class Builtin:
    """A builtin that hides which program runs when given one of ``options``."""

    options: frozenset[str]
    """Option letters that make it opaque; empty: any use but ``listing`` ones."""
    reason: str
    listing: frozenset[str] = frozenset()
    """Options that only print (``enable -a``, ``fc -l``): never opaque."""


OPAQUE_BUILTINS: dict[str, Builtin] = {
    "hash": Builtin(frozenset("p"), "hash -p maps a command name to any file"),
    "enable": Builtin(frozenset(), "enable loads (-f, or a NAME on BASH_LOADABLES_PATH) or "
                      "hides (-n) builtins, changing what a command name runs",
                      frozenset("aps")),
    "fc": Builtin(frozenset(), "fc re-runs commands from the shell history", frozenset("l")),
    "complete": Builtin(frozenset("CF"), "complete -C/-F names code the shell runs later"),
    "compgen": Builtin(frozenset("CF"), "compgen -C/-F runs a command or function"),
    "bind": Builtin(frozenset("x"), "bind -x names code the shell runs later"),
    "declare": Builtin(frozenset("n"), "a name reference (declare -n) hides which variable "
                       "a name stands for"),
    "typeset": Builtin(frozenset("n"), "a name reference (typeset -n) hides which variable "
                       "a name stands for"),
    "local": Builtin(frozenset("n"), "a name reference (local -n) hides which variable a "
                     "name stands for"),
    "readonly": Builtin(frozenset("n"), "a name reference (readonly -n) hides which variable "
                        "a name stands for"),
    "mapfile": Builtin(frozenset("C"), "mapfile -C names code the shell runs for every line"),
    "readarray": Builtin(frozenset("C"), "readarray -C names code the shell runs for every "
                         "line"),
}
"""Builtins (and the options) the walker does not model."""


@dataclass(frozen=True, slots=True)
class Construct:
    """One row of the documented table (README)."""

    name: str
    treatment: Treatment
    how: str


CONSTRUCTS: tuple[Construct, ...] = (
    Construct("pipelines, lists, groups, subshells, if/case/loops", "modelled",
              "every simple command judged"),
    Construct("a word after a redirection (rm 2>/dev/null a.txt, rm 3<&- -f a.txt, rm <<EOF "
              "a.txt), a lone - before one (cat - 2>x), {fd}>f inside a command", "modelled",
              "the text is rewritten "
              "so the grammar reads bash's words (misreads.py); other text the grammar "
              "leaves out is a problem: ask"),
    Construct("cd, set --, IFS=, f() {..} in a subshell, a $( ), a pipeline's stage; "
              "unset -f f; cd -, ~-, popd; cd to a folder not there; for d in GLOB; do "
              "(cd \"$d\" && ..)",
              "modelled", "a relative path is judged from each folder the shell may be in "
              "(a cd in a branch, a loop or after && may not run; git -C, env cd, xargs cd, "
              "bash -c 'cd ..' and cmd & move only their own process); "
              "each is restored after a subshell; unset -f f (or unset f) makes "
              "a call of f run the program; cd - goes to the folder a cd of this command "
              "left (else unknown); after a cd that may fail both folders are "
              "checked; a loop that changes folder is judged once per value (up to 16), "
              "globs matched now"),
    Construct("a variable, array, map, set -- or shift, hash -p or a function named like a "
              "program, changed in a branch, a loop, after && or || or in a subshell, or "
              "after a command that may leave (|| return, break, exit)",
              "modelled", "the value before may still hold: each value is joined with the one "
              "before, and a name unset before may still be unset, its word then no word at "
              "all (set --, shift and maps changed there become only known at run time; "
              "a call of such a function named like a program may run the program); set for "
              "sure where every path sets it: if/else and case with *) assigning in each "
              "branch, a loop over plain words with no break, a call that ran to its end"),
    Construct("case WORD in PATTERN) ..;; with WORD and the patterns known", "modelled",
              "only the branches bash takes are judged (;& falls through, ;;& tests on); a "
              "WORD made from a name a listing or a glob gives (while read f over git "
              "ls-files, for f in src/*, find's {} as $1) stands for names not seen here: "
              "every branch is judged"),
    Construct("if COND; then ..; else ..; fi where COND is (( x )), (( x == N )), "
              "[ \"$x\" = lit ], [[ $x != lit ]], [ -n \"$x\" ] or $flag (true/false) over "
              "values known for every path", "modelled", "only the branch bash takes is "
              "judged (in the command itself: sh -c code runs in dash, where [[ and (( fail); "
              "an unquoted [ -n $x ] of a value that may be empty, == inside [, or a "
              "name a listing or a glob gives (and ${#f} of it) is not decided"),
    Construct("functions f() { ..; } and function f { ..; }", "modelled",
              "the body is judged at each call with its words as $1..; once more with "
              "unknown words when no call is seen or a child bash may run it (export -f; "
              "declare -f f only prints it); "
              "a call of itself (recursion) again with its words, then with unknown ones, "
              "walked again while a pass changes a value, as a loop's body is, "
              "with the redirections written on its definition; a function named like a "
              "program that does more than read is refused"),
    Construct("declare/local/typeset/readonly -a or -A given a value that expands to "
              "NAME=(..) or (..)", "modelled",
              "parsed again as bash does: the code it holds is judged; a value only known "
              "at run time is asked (deny under --approval auto)"),
    Construct("globs under shopt -s nocaseglob, dotglob, globstar (set anywhere in the "
              "command, by a word only known at run time, or in BASHOPTS)", "modelled",
              "matched as bash 5 does (a link to a folder is not gone into by **); a walk "
              "past 200,000 entries is only known at run time"),
    Construct("quotes, $'..', braces, globs, ~, ${X:-w}; {ls,-la,src} as a command",
              "modelled", "decoded statically (a plain brace list as a command's first word "
              "is replaced by its words, which the grammar reads as a group); a glob in a "
              "command's name is matched now and each match judged as the program, asked "
              "unless it can match one name only ([c]at, @(cat)) in a system folder"),
    Construct("variables assigned in the command (=, +=, declare, export, for)", "modelled",
              "their values stand in for the command name"),
    Construct("arrays a=(..), a=([2]=x [0]=y z), a[i]=, a+=(..); ${a[@]} ${a[*]} ${a[N]}; "
              "declare -A m=([k]=v), m[k]=v, ${m[k]}", "modelled",
              "static elements stand in for the command name (an element given a decimal "
              "index is placed there; ${a[@]} skips the gaps one assignment leaves)"),
    Construct("$0 and set -- / $@ $* $1.. at the top level", "modelled",
              "$0 is bash, or the one value BASH_ARGV0 was surely set to (else only "
              "known at run time); the positional words are tracked"),
    Construct("bash -c CODE ARG0 ARGS; VAR=v CMD; export VAR", "modelled",
              "the code sees ARG0 as $0, ARGS as $1.., and only the variables exported to "
              "it (export, declare -x, VAR=v before its name; not after export -n, nor "
              "through env -i/-u or sudo), none of their attributes, bash's own IFS, the "
              "functions exported by name only through bash, no hash -p mapping; what it "
              "sets is gone after it; local VAR is a new, empty VAR"),
    Construct("unset VAR, VAR= (empty) in command position", "modelled",
              "an empty value is no word: the next word is the program"),
    Construct("declare -l/-u, ${!x} and computed names in declare, read, printf -v, let x+=",
              "modelled", "values are cased; a subscript in a named value is evaluated, so "
              "code in it is refused"),
    Construct("${!ref} where ref names an array element (ref='a[1]', 'm[key]')", "modelled",
              "the element's values, as ${a[1]} gives them"),
    Construct("${!v:-w}, ${!v#p} (an operator on an indirect expansion); set, declare, "
              "declare -p, export -p, readonly with no name", "modelled", "the variable v "
              "names is read (a secret's use noted, asked); printing every variable prints "
              "the environment's tokens: judged like env (asked, refused under --approval "
              "auto)"),
    Construct("p=$(cmd); bash -c \"$p\" or eval \"$p\" (a command's output kept in a "
              "variable and run)", "modelled", "judged as bash -c \"$(cmd)\" is: refused, "
              "unless the output is a static echo or printf, shown"),
    Construct("coproc [NAME] { ..; }, >(..), /proc/self/exe", "modelled",
              "the group runs like a pipeline's stage fed by this shell and is judged by what "
              "it runs (a shell in it is refused); a shell in >(..) reads the command's "
              "output; /proc/self/exe is bash"),
    Construct("a script written earlier in the command, then run (by path, by a shell, "
              "by a glob, or through a PATH naming its folder); ln -s, ln, cp, install, mv "
              "of a program or a folder", "modelled",
              "shell code written by a static echo/printf is judged with the call's words; "
              "other content is not shown: ask, and deny under --approval auto; later paths, "
              "globs, cd and program names are judged through the links, copies and files "
              "made (a link as the kernel reads it: ln -s /bin b; b/rm is rm)"),
    Construct("a file the command wrote with content of its choosing (echo, printf, a "
              "here-doc, tee, cp, mv, sed -i), then a program that runs code it does not "
              "show (make, npm test, python -m, awk -f), or any program after a write under "
              ".git/, .kube/, .aws/, .docker/", "modelled",
              "the program may run what was written (a Makefile's recipe, core.fsmonitor): "
              "ask, and deny under --approval auto"),
    Construct("a glob given to a program before any --, matching a file named like an "
              "option (sort * beside --output=a.txt, tar -cf x *)", "modelled",
              "matched now and among what the command made: a match that starts with - is "
              "an option, not a path: ask, and deny under --approval auto"),
    Construct("printf -v NAME with static arguments", "modelled", "NAME holds what it prints "
              "(widths and precisions applied; %q and other conversions: only known at run "
              "time)"),
    Construct("IFS=VALUE (or set by printf -v, read, for), then unquoted expansions",
              "modelled", "split at VALUE's characters as bash splits (checked against bash "
              "by the value oracle); a program named by the words is judged"),
    Construct("arithmetic: (( )), $(( )), let, [[ -eq ]], for (( )), subscripts, "
              "${s:o:l}, declare -i, test -v", "modelled",
              "variables evaluated are followed; code or run-time data in them is refused"),
    Construct("$(..), `..`, <(..), here-docs and here-strings; a delimiter quoted in part "
              "(<<E'O'F), a backslash at the end of a comment or of a quoted body's line",
              "modelled",
              "inner commands judged; code fed to a shell judged like bash -c; code a "
              "here-doc or here-string shows an interpreter (python3 - <<'EOF') judged like "
              "python3 -c (asked; refused where it deletes); the text is read as bash reads "
              "it (bash_lines.py): a here-doc ends at its delimiter after quote removal, "
              "lines are joined only outside comments, single quotes and quoted bodies"),
    Construct("echo/printf .. | bash, source <(echo ..), bash <(printf ..), eval "
              "\"$(printf %q ..)\"", "modelled", "the printed code is judged like bash -c "
              "(from a decoder or a download it is refused)"),
    Construct("a variable that may hold several known values (set in branches, a loop's "
              "words)", "modelled", "the command is judged once with each value"),
    Construct("bash -c, eval, source, trap, alias, xargs, find -exec, env, sudo ...",
              "modelled", "the code or command they run is judged (xargs's words split as "
              "it splits them: at blanks and quotes, or at NUL with -0, at C with -d C); a "
              "command line a program runs with arguments of its own (GIT_EXTERNAL_DIFF, "
              "an editor, core.sshCommand) is judged with those arguments unknown"),
    Construct("database shells: SQL, dot-commands (and their prefixes, .sh = .shell), \\!, "
              "system, COPY ... PROGRAM, writefile/load_extension/edit (also by a quoted "
              "name: \"edit\"(..), [writefile](..)), .restore, sqlite3 -A x", "modelled",
              "escapes judged as shell code; file writes, extension loads and restores "
              "refused; an archive extracted over the files here asked (deny under "
              "--approval auto)"),
    Construct("for x in {a,b}; printf -vNAME; $(cat <<'E' .. E); $_; gdb --args", "modelled",
              "the braces are expanded; NAME holds the output; the here-doc's static text "
              "is what cat prints; $_ is the previous command's last word (bash at first); "
              "gdb runs its program"),
    Construct("PROGRAM < <(echo ..)", "modelled", "the printed text is its input, like a "
              "here-string (a shell fed this way is still refused)"),
    Construct("docker/podman run with the host's / (or /etc, $HOME, the socket, /./, -v=/), "
              "--privileged, --pid host, --cap-add ALL", "modelled",
              "refused: the container owns the host"),
    Construct("docker/podman run with another host folder mounted (., $PWD, a path)",
              "modelled", "the command the container runs is judged"),
    Construct("read/mapfile/readarray from a here-string or here-doc, getopts, ${X:=w}, "
              "shift N, $((..)) of known numbers", "modelled", "the names hold the input's "
              "fields or lines (any line may be the one read); over known words getopts is "
              "parsed exactly (letters, OPTARG, OPTIND); X holds w; the positional words "
              "move; sums and products are computed"),
    Construct("compgen/complete -W WORDS; a $(..) the parser misses inside ${x#..}",
              "modelled", "the words are expanded like echo's arguments; the code is judged "
              "(and the command asks at least)"),
    Construct("extended globs @(a|b) ?(a) *(a) +(a) !(a)", "modelled",
              "judged once for each alternative they may match (beyond 16 ways: like text "
              "the parser cannot read, ask, deny under --approval auto)"),
    Construct("IFS=VALUE eval/source ..; /usr/../bin/rm, //bin/rm; echo rm | xargs -I{} env {}",
              "modelled", "the code splits at VALUE; the path is normalised; each input "
              "line stands for the replace string"),
    Construct("[ -v NAME ], [[ -v NAME ]], [[ -R NAME ]], a=([i]=v), unset 'a[i]'",
              "modelled", "a subscript (of an indexed array) is evaluated: code stored in "
              "the variables it names is refused"),
    Construct("a for loop's variable (also for x; over \"$@\"), read -n/-N/-d/-u, a[i] set "
              "by printf -v or read, time NAME=v, ! declare NAME=v", "modelled",
              "the loop's words replace what the variable held, in the body and after it; "
              "NAME=v after time, or declare/export after !, time, command or builtin, may "
              "now hold v; the others leave the variable only known at run time"),
    Construct("a program that runs code the preview cannot see (an unknown program, "
              "uv/poetry/conda run, npm exec, perf) given a command in its arguments",
              "modelled", "each tail of its arguments that starts with a known program is "
              "judged as run; an argument that reads as a refused command line refuses the "
              "call"),
    Construct("split --filter, sort --compress-program, git difftool -x, git's ext:: URLs, "
              "ed/vim/dc/m4 fed !cmd or syscmd", "modelled", "the command they run is judged"),
    Construct("a > target the same command or pipeline reads (sort a.txt > a.txt), "
              "exec N> FILE", "modelled", "the file is emptied before it is read: "
              "destructive"),
    Construct("namerefs (declare/local/typeset/readonly -n NAME=TARGET) with a known plain "
              "TARGET, set only by NAME=v", "modelled", "NAME reads TARGET and NAME=v sets it "
              "(a function returning through local -n r=$1); a program named through one is "
              "the program TARGET holds"),
    Construct("namerefs re-targeted in a branch, a loop or a subshell; namerefs set by "
              "read, a loop, printf -v or ${NAME:=w}, naming PATH, IFS, "
              "BASH_ENV or another variable that changes what runs, or with a target only "
              "known at run time", "opaque", "deny"),
    Construct("set -k / set -o keyword (NAME=value anywhere in a command)", "opaque", "deny"),
    Construct("hash -p /usr/bin/PROG NAME, enable -n of echo, test, [, kill, pwd, true or "
              "false, BASH_ENV=/dev/null", "modelled",
              "a later NAME is judged as PROG (after enable -n, as the program PATH finds in "
              "a system folder, none searched before it being the workspace's or relative; "
              "a hash -p given before keeps NAME); where the mapping may not hold "
              "(a branch or a loop, any assignment to PATH, hash -r or -d, set +h, "
              "command -p) as the "
              "riskier of PROG and NAME, refused under --approval auto; env NAME, xargs "
              "NAME, a new bash and a subshell's hash leave NAME itself; no file is run at "
              "start"),
    Construct("hash -p to any other file, enable -f, enable NAME, enable -n of a builtin "
              "that keeps the shell's state (cd, printf -v, read) or of one PATH finds "
              "elsewhere, fc, bind -x, "
              "complete/compgen -C/-F, mapfile/readarray -C", "opaque", "deny"),
    Construct("BASH_ENV, ENV, PROMPT_COMMAND, PS0-PS2, PS4, SHELLOPTS, BASHOPTS, "
              "BASH_FUNC_name%%", "opaque", "deny"),
    Construct("${x^^} ${x,,} ${x^} ${x,} ${x@U} ${x@L} ${x@E} ${x@Q}, ${x#p} ${x%p} (and ## "
              "%%), ${x/p/r} (and // /# /%), ${x:1:2} ${x: -2}, ${#x}, ${!x}, ${!1}, ${!x_@} "
              "${!x_*}", "modelled",
              "computed from the known values (${!x_@}: the names set so far, for a prefix "
              "with a lower-case letter, which no variable of the shell's own, of the "
              "environment's or only known at run time may start), and from nothing for a "
              "variable that may be unset (a pattern with quotes, escapes or classes, or "
              "${x@Q} of control characters: only known at run time); a substring in a "
              "command's name is asked, the program it names judged"),
    Construct("$(echo ..) and $(printf ..) as words and as the program; eval or bash -c of "
              "what they print", "modelled", "their output stands for the words (split when "
              "unquoted) and is judged as the command it makes; a decoder's output stays "
              "code from a decoder"),
    Construct("\"$(command -v NAME)\", $(which NAME), $(type -P NAME) in command position",
              "modelled", "the program NAME (a function or alias of that name is what runs, "
              "and is judged)"),
    Construct("select NAME in WORDS; do ..; done, and a here-string after a group, a loop, a "
              "subshell or another redirect; a # inside a word (ls#)", "modelled",
              "the grammar misreads them; the command is read as bash reads it (the loop runs "
              "like for; the here-string feeds the same commands; the # is part of the "
              "word)"),
    Construct("python -m MODULE for a standard module that only prints (json.tool, tokenize, "
              "base64, ..., inspect of a standard module whose import does nothing)",
              "modelled", "allowed unless the folder it runs in holds a file or package named "
              "like a standard module (json/, argparse.py): -m imports from there first, so "
              "that code would run (ask); -I or -P do not look there"),
    Construct("a loop variable over several words used in a command's arguments (for s in "
              "status log; do git \"$s\"; done)", "modelled", "when the words as one list "
              "do not make the command a plain read, it is judged once per word"),
    Construct("alias NAME=VALUE with VALUE shown, called on a later line of the same code "
              "after shopt -s expand_aliases", "modelled", "the call is judged as VALUE "
              "followed by its words (on the same line, or without expand_aliases, bash runs "
              "the program NAME: an alias called so is refused)"),
    Construct("unset WORDS, unset \"m[KEY]\" of an associative array", "modelled",
              "the words are expanded (a substitution in them runs) and an associative key "
              "once more: code in it is judged, a key only known at run time is asked"),
    Construct("m[$k]=v of an associative array, for i in \"${!a[@]}\" of an indexed one, "
              "$$, $!, PPID, OPTIND after getopts", "modelled", "the key is a string (no "
              "arithmetic); the indices, process ids and counters are numbers"),
    Construct("x=$(wc -l < f), $(grep -c ..), $(date +%s), $(git log --format=%ct), "
              "$(pgrep ..), $(seq ..) in an arithmetic context, or read as a path "
              "(/proc/\"$(pgrep -o app)\"/status); the fields uniq -c, git diff --numstat "
              "and git log --format='%ct ..' print as numbers, read by read -r n rest or "
              "kept by sort, head, grep, cut -f, awk '{print $1}', tr -d, tr -dc 0-9",
              "modelled",
              "the program prints a number, not code; a count printed beside a name read "
              "from data (wc -l src/*, grep -c x src/*, du src) is not a number: bash's "
              "arithmetic evaluates the name, and a subscript in it runs (asked); a variable "
              "holding a number is read as a name in the folder, a word whose run-time "
              "parts are numbers as that path with 0 for each; a field is a number only "
              "where the command always prints one and IFS splits as it prints (the last "
              "name read takes the rest of the line: data)"),
    Construct("a file this command wrote with shown text read back ($(<f), $(cat f)); a "
              "file a static printer fills given as a program's script (awk -f <(echo ..), "
              "sed -f <(..)); a makefile on make's input with .RECIPEPREFIX", "modelled",
              "the text is the value, or the code judged"),
    Construct("a && b, a || b whose condition values known for every path decide "
              "([ -n \"$t\" ] && rm .. after t=\"\")", "modelled",
              "only what bash reaches is judged (in the command itself, as for if; another "
              "command's status, echo's included, is not known)"),
    Construct("X=${X:-default}, HOME=\"$HOME\", ${X:-$HOME/backups}; $(dirname ..), "
              "$(basename ..), $(git rev-parse --git-path NAME)", "modelled",
              "what the name already held, or its default with its variables expanded; the "
              "output stands for the words"),
    Construct("for t in /usr/bin/[s]hred; do \"$t\" ..; t=/usr/bin/[s]hred; $t ..",
              "modelled", "the loop's glob is matched now, as bash matched it, and each match "
              "judged as the program"),
    Construct("an unquoted expansion only known at run time (x=$(cat f); grep $x g) in a "
              "word the program's rule does not judge as a path", "modelled",
              "bash splits it into words nobody sees (options, paths): ask, deny under "
              "--approval auto; numbers ($((..)), a count, a variable that only counts), "
              "object names (git merge-base, rev-parse, rev-list, docker ps -q) and a for "
              "loop's words over split output stay one word; echo, :, true, false, let and "
              "printf's arguments after a shown format only print or count"),
    Construct("export, declare -x, local \"NAME=value\" given as one word (also a computed "
              "name, \"${v^^}=..\")", "modelled", "the assignment it is: the setting judged "
              "(BASH_ENV refused), a command line it names (GIT_PAGER) judged as run, the "
              "name exported"),
    Construct("for k in \"${!m[@]}\" / \"${m[@]}\" of a known map; ${m[$k]}, ${a[$i]}, "
              "${a[i]} with a key or index whose values are known", "modelled",
              "the keys, values or elements, each judged"),
    Construct("${1:-d} ${1-d} ${1:+w} ${1:?msg} where a function call or bash -c ARGS gave "
              "the words, or at the top level", "modelled", "computed from the words; at the "
              "top level there are none (the shell tool runs bash -c COMMAND)"),
    Construct("a here-doc with variables whose values are known, read by a program "
              "(sqlite3 <<EOF .. $tbl ..)", "modelled", "its text is computed; a shell "
              "reading an expanded here-doc is still refused"),
    Construct("seq FIRST [STEP] LAST; a program named by a decoder's output "
              "($(tr a-z n-za-m <<< ..))", "modelled", "seq's numbers are its output (up to "
              "1,000); a decoded program name is asked even when it decodes to a read"),
    Construct("a process substitution as the program, a function named like a command "
              "that does more than read", "opaque", "deny"),
    Construct("${x@P} of values with no $ or backquote", "modelled",
              "prompt escapes print names and paths; nothing runs"),
    Construct("${x@P} of any other value, ${!prefix*}, and operators over values only known "
              "at run time, in command position", "opaque", "deny"),
    Construct("code stored in a variable that an arithmetic context evaluates", "opaque",
              "deny"),
    Construct("command_not_found_handle() { ..; }", "modelled", "bash calls it for any "
              "missing program: the body is judged with words only known at run time, and "
              "with the words of each command no known program answers (restore f)"),
    Construct("find START -execdir CMD", "modelled", "CMD is judged in each folder under "
              "START but .git's (up to 64; past that, in a folder only known at run time)"),
    Construct("two or more assignments on a line inside a block (do a=1 b=2 <newline> "
              "cmd), which the grammar joins to the next line's command", "modelled",
              "read as bash reads it: the line ends, the variables are set in the shell"),
    Construct("trap CODE SIGNAL", "modelled", "CODE is judged where it is set and again at "
              "the end of its shell, each value a variable took after it one it may hold "
              "(it fires at exit, on an error, before a command)"),
    Construct("set -o posix, POSIXLY_CORRECT, a set or shopt of words only known at run time",
              "modelled", "an assignment before a special builtin (c=rm :) may stay after it"),
    Construct("export/declare/local/readonly/typeset words with braces (export "
              "o={a,b}, GIT_EXTERNAL_{DIFF,X}=..)", "modelled",
              "brace-expanded as bash does, then judged as those assignments"),
    Construct("${x/pat/&} (bash 5.2's patsub_replacement), ${x:010} (octal offset), "
              "printf %b's \\c, shopt -s xpg_echo, IFS+=", "modelled",
              "computed as bash does: & is the match, 010 is 8, echo reads escapes; \\c "
              "makes the value only known at run time"),
    Construct("GNU long options abbreviated (sort --o=F, sed --in, git grep --open-f=CMD, "
              "tar --rem)", "modelled", "a start of a long option a rule knows is that "
              "option; --o F is read both as --output's value and as a word of its own"),
    Construct("a word only known at run time given to git's log family (git log \"$x\")",
              "modelled", "it may be an option (--output=FILE writes a file): asked, refused "
              "unattended, unless it starts with text or holds object ids (rev-list, "
              "merge-base, log --format=%H, the first field of log --oneline)"),
    Construct("declare -u/-l/-c/-i/-n made in a subshell, a pipeline's stage or a call's "
              "local, taken off (+i, +n, unset, unset -n), beside its opposite (-l -u) or "
              "with an option declare does not take", "modelled", "as bash keeps it: gone "
              "after a subshell or a call, neither or both values where it may not hold"),
    Construct("$'..' escapes (\\u72 of 1-4 hex digits, \\x7, \\cA, \\400)", "modelled",
              "decoded as bash decodes them"),
    Construct("xargs -I{} sh -c '.. {} ..', find -exec sh -c '.. {} ..' (text read at run time "
              "pasted into shell code)", "opaque", "ask, deny under --approval auto: a "
              "$(..) or ; in a line or a file name runs (passed as \"$1\" it is data)"),
    Construct("any syntax node kind not listed", "opaque", "deny"),
    Construct("two word nodes side by side in the tree (r`:`m, a<(ls)): a word bash reads "
              "whole, split by the grammar", "opaque",
              "like text the parser cannot read: ask, deny under --approval auto"),
    Construct("BASH_CMDS, BASH_ALIASES (the command table and aliases)", "opaque", "deny"),
)


def opaque_builtin(name: str, args: Sequence[str | None]) -> str | None:
    """Why ``name ARGS`` hides which program runs, or None when it is modelled."""
    spec = OPAQUE_BUILTINS.get(name)
    if spec is None:
        return None
    letters: set[str] = set()
    others = False
    for a in args:
        if a is None:
            others = True
        elif a.startswith("-") and not a.startswith("--") and len(a) > 1:
            letters.update(a[1:])
        else:
            others = True
    if name == "hash" and None in args:
        return spec.reason  # hash $x may be hash -p
    if spec.options:
        return spec.reason if letters & spec.options else None
    if not others and letters and letters <= spec.listing:
        return None
    return spec.reason if (others or letters) else None


def hash_mapping(args: Sequence[str | None]) -> tuple[str, list[str]] | None:
    """``hash -p FILE NAME..`` with every word shown and FILE in a system folder: FILE and the
    names that run it from then on (modelled); None when what a NAME runs is not known."""
    if list(args[:1]) != ["-p"] or len(args) < 3 or None in args:
        return None
    path, names = str(args[1]), [str(a) for a in args[2:]]
    if any(n.startswith("-") or "/" in n for n in names) or \
            os.path.dirname(path) not in SYSTEM_DIRS:
        return None  # a file of no system folder: which program it is, is not known
    return path, names


_IDENT = re.compile(r"(?<!\w)[A-Za-z_]\w*")
MAX_ARITH_DEPTH = 6


def arithmetic_problem(text: str, lookup: Callable[[str], list[str] | None],
                       depth: int = 0, seen: set[str] | None = None
                       ) -> tuple[Treatment, str] | None:
    """What an arithmetic context evaluating ``text`` may run that the preview cannot show.

    Bash evaluates a variable's value as an expression, and a subscript in it expands
    ``$(...)``: ``x='a[$(rm -rf d)]'; (( x ))`` runs ``rm``. ``lookup`` gives a variable's
    possible values (None: only known at run time). ``("opaque", why)`` for code in a value,
    ``("modelled", why)`` for run-time data, None when nothing runs. Each variable is
    followed once (``seen``): values naming each other cannot make the walk grow.
    """
    seen = set() if seen is None else seen
    if "$" in text or "`" in text:
        return "opaque", "an arithmetic context evaluates shell code stored in a value"
    if depth > MAX_ARITH_DEPTH:
        return "opaque", "an arithmetic context follows variables too deep"
    run_time: tuple[Treatment, str] | None = None
    for name in dict.fromkeys(_IDENT.findall(text)):
        if name in seen:
            continue
        seen.add(name)
        values = lookup(name)
        if values is None:  # keep looking: code in another variable is opaque
            run_time = run_time or ("modelled", (
                f"an arithmetic context evaluates ${name}, only known at run time (a "
                "subscript in it would run commands)"))
            continue
        for value in values:
            found = arithmetic_problem(value, lookup, depth + 1, seen)
            if found is not None and found[0] == "opaque":
                return found
            run_time = run_time or found
    return run_time
