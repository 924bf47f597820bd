"""What shell variables hold, for the walker: the value half of ``shell.py``.

Values assigned earlier in the command (scalars, arrays, ``printf -v``, ``set --``), loop words,
the environment, ``$0`` and the positional parameters, the field separators, and what an
arithmetic context evaluates (``constructs.arithmetic_problem``). Nothing here knows the parser:
it works on strings and ``Word`` values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.permissions.columns import NONE, Columns
from engine.permissions.constructs import arithmetic_problem, hash_mapping, opaque_builtin
from engine.permissions.effect import SYSTEM_DIRS, Effect, parse_opts, program_name
from engine.permissions.expansion import apply_operator, parameter_operator, printf_output
from engine.permissions.globbing import GLOB, MISREAD_NAME
from engine.permissions.words import INPUT_VAR, Word
from engine.sandbox.env import is_secret_name
from engine.vocabulary.secrets import holds_credential

LISTED_TEXT = "<a path from a listing>"
"""The text of a word read from a listing (``shell.LISTED``)."""
PROGRAM_TWINS = frozenset({"echo", "test", "[", "kill", "pwd", "true", "false"})
"""Builtins that change nothing of the shell's own and whose program of the same name does what
they do: ``enable -n`` of one is modelled (the program is judged in its place)."""
MAX_VALUES = 16
"""Values followed per variable (and per input line list, per loop: ``MAX_LOOP_WORDS``); a
variable that may hold more is only known at run time: a value left out could be the one that
runs."""
SHELL_NUMBERS = frozenset({"OPTIND", "OPTERR", "LINENO", "RANDOM", "SRANDOM", "SECONDS",
                           "BASHPID", "PPID", "UID", "EUID", "SHLVL", "EPOCHSECONDS",
                           "COLUMNS", "LINES", "HISTCMD"})
"""Variables the shell keeps as numbers (until the command assigns them)."""
ALWAYS_SET = frozenset({"OPTIND"})
"""Variables bash sets when it starts that getopts loops change: set after a loop that may
not run, they are still set (``getopts`` over known words gives their value exactly)."""
SHELL_VARIABLE_PREFIXES = (
    "BASH", "COMP", "DIRSTACK", "EPOCH", "EUID", "FUNCNAME", "GROUPS", "HIST", "HOST", "IFS",
    "LINENO", "LINES", "COLUMNS", "MACHTYPE", "MAIL", "OLDPWD", "OPT", "OSTYPE", "PIPESTATUS",
    "PPID", "PS", "PWD", "RANDOM", "READLINE", "REPLY", "SECONDS", "SHELL", "SHLVL",
    "SRANDOM", "UID", "TIMEFORMAT", "TMOUT", "MAPFILE", "EMACS", "INSIDE_EMACS", "PROMPT",
    "auto_resume", "histchars")
"""Names (and beginnings of names) of variables bash sets itself, which ``${!PREFIX@}``
lists though no command assigned them."""
_PROCESS_IDS = frozenset({"$", "!", "PPID", "BASHPID"})
"""Parameters that hold a process id (a number standing for it: never 1, never -1)."""
MAX_LOOP_WORDS = 64
MAX_ARRAYS = 8
"""Contents an array is followed with (one per way the command may have set it)."""


def bounded(values: list[str], cap: int = MAX_VALUES) -> list[str] | None:
    """``values`` without repeats when at most ``cap`` remain, else None (run time)."""
    kept = list(dict.fromkeys(values))
    return kept if len(kept) <= cap else None


_INTEGER = re.compile(r"-?\d+")
_DECIDED_ARITHMETIC = re.compile(r"\(\(\s*([A-Za-z_]\w*)\s*(?:(==|!=)\s*(0|[1-9]\d*)\s*)?\)\)")
_VAR = r"(\"?)\$\{?([A-Za-z_]\w*)\}?\%d"
_DECIDED_TEST = re.compile(r"(\[\[?)\s+(?:-([nz])\s+" + _VAR % 3 + r"|" + _VAR % 5
                           + r"\s+(==?|!=)\s+(['\"]?)([\w./-]*)\8)\s+\]\]?")
"""``[ "$x" = lit ]``, ``[[ $x != lit ]]``, ``[ -n "$x" ]``: groups 1 the bracket, 2 the
test, 3-4 its quote and variable, 5-6 a comparison's quote and variable, 7 the operator,
9 the literal (no pattern characters)."""
_DECIDED_COMMAND = re.compile(r"\"?\$\{?([A-Za-z_]\w*)\}?\"?")
_INDIRECT_OPERATOR = re.compile(r"\$\{!([A-Za-z_]\w*|[1-9]\d*)(?::|[#%/^,?+=-]|@[A-Za-z]).*\}",
                                re.S)
"""``${!v:-w}``, ``${!v#p}``, ``${!v@Q}``: an operator on the variable ``v`` names (not
``${!v@}``, the names that start with v)."""
DECIMAL = re.compile(r"0|-?[1-9]\d*")
"""A number an integer variable stores as written (``010`` is 8, ``1+2`` is 3)."""
_NAMES_USED = re.compile(r"[A-Za-z_]\w*")
"""Every name a condition may read (any word may be one in ``(( ))``): over-counting only
leaves a condition undecided."""
_POSITIONS_USED = re.compile(r"\$\{?([1-9]\d*|[@*])")
"""The positional parameters a text expands."""
_ARITHMETIC_SETS = re.compile(
    r"(?<![\w$])([A-Za-z_]\w*)\s*(?:\[[^]]*\])?\s*(?:<<|>>|[-+*/%&|^])?=(?!=)"
    r"|(?:\+\+|--)\s*([A-Za-z_]\w*)|(?<![\w$])([A-Za-z_]\w*)\s*(?:\+\+|--)")
"""Names an arithmetic expression assigns: ``n = 1``, ``n += 2``, ``a[i] <<= 1``, ``i++``."""


def cased_values(case: str, values: list[str]) -> list[str]:
    """What a variable declared ``-l``, ``-u`` or ``-c`` stores when given ``values``;
    ``?l`` (an attribute that may or may not be set) gives both."""
    def convert(v: str) -> str:
        mode = case[-1:]
        return v.lower() if mode == "l" else v.upper() if mode == "u" else \
            v[:1].upper() + v[1:].lower() if mode == "c" else v
    converted = [convert(v) for v in values]
    return list(dict.fromkeys([*values, *converted])) if case.startswith("?") else converted


def split_fields(value: str, ifs: str) -> list[str]:
    """The words bash makes of an unquoted expansion's ``value`` at ``ifs``: blanks of IFS
    around a field are trimmed and runs of them split once; each other IFS character ends a
    field (``a,,b`` is three, the last one empty is dropped); an empty IFS splits nothing."""
    white = "".join(c for c in ifs if c in " \t\n")
    other = "".join(c for c in ifs if c not in " \t\n")
    text = value.strip(white) if white else value
    if not text or not ifs:
        return [text] if text else []
    blanks = f"[{re.escape(white)}]*" if white else ""
    parts = [f"{blanks}[{re.escape(other)}]{blanks}"] if other else []
    parts += [f"[{re.escape(white)}]+"] if white else []
    fields = re.split("|".join(parts), text)
    if other and fields[-1] == "" and text[-1] in other:
        fields.pop()
    return fields


class ShellValues:
    """The value half of the shell walker: needs the state its lines have built so far."""

    env: Mapping[str, str]
    tainted: set[str]
    taint_all: bool
    loops: dict[str, list[str]]
    in_turn: set[str]
    known: dict[str, list[str]]
    unknown: set[str]
    unnamed: list[str]
    opaque: list[str]
    arrays: dict[str, list[list[str]]]
    numeric: set[str]
    made_temps: set[str]
    removed_temps: set[str]
    floors: list[tuple[Any, str]]
    texts: list[str]
    blankless: set[str]
    ifs: str | None
    argv0: str | None
    names_argv0: bool
    positional: list[str] | None
    args_given: bool
    set_words: bool
    listed_vars: set[str]
    listed_arrays: set[str]
    nocasematch: bool
    nullglob: bool
    dashless_vars: set[str]
    glob_vars: set[str]
    listed_args: frozenset[int]
    fed: dict[str, list[str]]
    counts: set[str]
    hashed: dict[str, tuple[str, bool]]
    cwds: list[Path | None]
    conditional: int
    readonly: set[str]
    maybe_unset: set[str]
    refs: dict[str, str]
    cased: dict[str, str]
    sparse: set[str]
    holes: dict[str, frozenset[int]]
    ws: Path
    integers: set[str]
    maybe_integers: set[str]
    env_secrets: list[str]
    """Variables read from a listing of paths (any file name: a path, never a program)."""

    def _may_hold(self, var: str, values: list[str] | None, merge: bool = True) -> None:
        """``var`` may hold ``values`` (besides what it held, when ``merge``); beyond
        ``MAX_VALUES`` possible values, or None, it is only known at run time."""
        merge = merge or var in self.readonly  # readonly x: the change fails, x stays
        self._not_made(var)
        if values is None or not all(_INTEGER.fullmatch(v) for v in values):
            self._not_numeric(var)
        if values is not None and var in self.cased:  # declare -l x; read x <<< RM: rm
            values = cased_values(self.cased[var], values)
        if var in self.integers and not (values is not None and all(
                DECIMAL.fullmatch(v) for v in values)):
            self._integer_values(var, values)  # declare -i x; read x: x=EXPR evaluated
            values = None
            self._number_held(var)
        if not merge:
            self.maybe_unset.discard(var)
        found = None if values is None else bounded(
            [*self.known.get(var, []), *values] if merge else values)
        if found is None:
            self.known.pop(var, None)
            self.unknown.add(var)
        else:
            self.known[var] = found
            self.unknown.discard(var)

    def _integer_values(self, var: str, values: list[str] | None) -> None:
        """A variable declared ``-i`` is given ``values`` by any builtin: bash evaluates each
        as arithmetic, and a subscript in it runs commands (``read x <<< 'a[$(cmd)]'``)."""
        if values is None:
            self.unnamed.append(f"{var} is declared -i: a value only known at run time is "
                                "evaluated as arithmetic (a subscript in it would run commands)")
        for v in values or ():
            self._arithmetic_text(v, f"the integer variable {var}")

    def _not_numeric(self, var: str) -> None:
        """``var`` is given a value that may not be a number: an arithmetic context that
        reads it evaluates that value (``i='a[$(cmd)]'; (( i ))`` runs cmd)."""
        self.blankless.discard(var)  # one word no more
        self.dashless_vars.discard(var)  # nor an object id
        if var not in self.readonly:
            self.numeric.discard(var)
            self._not_made(var)

    def _not_made(self, var: str, handed: bool = False) -> None:
        """``var`` is given another value, or its path is ``handed`` on (``mv src "$t"``):
        it no longer holds only what ``mktemp`` made. A removal of it already judged as
        such (``rm -rf "$t"`` in the background, or in ``trap 'rm -rf "$t"' EXIT``, which
        removes what it holds at exit) is refused, like a removal of a path only known at
        run time."""
        if var in self.readonly:
            return
        was = var in self.made_temps
        self.made_temps.discard(var)
        if var in self.removed_temps and (was or handed):
            self.floors.append(("deny", f"${var} is removed as what mktemp made, and holds "
                                        "or is handed more than that"))

    def _made_word(self, word: Word, text: str) -> Word:
        """``word`` (one expansion: ``"$t"``, ``${t}``) marked ``made`` when its variable
        holds the path a ``mktemp`` of this command made and nothing else in the command can
        set it again: the name appears nowhere else but in expansions (``read t``,
        ``printf -v t``, ``declare -n r=t``, ``${t:=x}`` would)."""
        m = re.fullmatch(r'"?\$\{?([A-Za-z_]\w*)\}?"?', text)
        if word.value is not None or m is None or m.group(1) not in self.made_temps or \
                self.taint_all or not all(_only_expanded(t, m.group(1)) for t in self.texts) \
                or any(_fed_text(t, m.group(1)) for t in self.texts):
            return word
        return replace(word, made=True)

    def _resolved(self, name: str) -> str:
        """The variable a name reference stands for (declare -n r=k: k), else the name."""
        for _ in range(8):
            if name not in self.refs:
                return name
            name = self.refs[name]
        return name

    def _static_variable(self, name: str) -> list[str] | None:
        name = self._resolved(name)
        if name == "0":
            argv0 = self._argv0()
            return None if argv0 is None else [argv0]
        if name in ("@", "*", "#") or name.isdigit():
            return self._static_positional(name)
        if name == "IFS" and name not in self.known and name not in self.unknown:
            return [" "]
        if self.taint_all or name in self.unknown or name == INPUT_VAR:
            return None
        found = self.known.get(name, self.loops.get(name))
        if found is not None:  # set where that may not have run: "" too (true || x=echo)
            return [*found, ""] if name in self.maybe_unset and "" not in found else found
        if name in self.tainted:
            return None
        value = self._from_environment(name)
        return None if value is None else [value]

    def _from_environment(self, name: str) -> str | None:
        """The value the command inherits; a variable named like a secret, or holding one,
        is noted (its value is the host's credential, whatever this process holds)."""
        value = self.env.get(name)
        if name == "PWD" and value is None and len(set(self.cwds)) == 1 and \
                self.cwds[0] is not None:
            return str(self.cwds[0])  # the shell's folder, which cd keeps it naming
        if is_secret_name(name) or (value is not None and holds_credential(value)):
            self.env_secrets.append(name)
        return value

    def _static_positional(self, name: str) -> list[str] | None:
        args = self.positional
        if args is None:
            return None
        if name == "#":
            return [str(len(args))]
        if name == "*":  # "$*": joined at the first character of IFS
            return None if self.ifs is None else [self.ifs[:1].join(args)]
        if name == "@":
            return [" ".join(args)]
        return [args[int(name) - 1] if 0 < int(name) <= len(args) else ""]

    def _static_expansion(self, text: str) -> list[str] | None:
        """``${x:-w}``, ``${x^^}``, ``${x#pat}``, ``${x/pat/rep}``, ``${#x}``, ``${!x}``:
        every value when the variable's are known and the operator is computed here."""
        indirect = _INDIRECT_OPERATOR.fullmatch(text)
        if indirect is not None:  # ${!v:-x}, ${!v#p}: the variable v names is read
            self._named_indirectly(indirect.group(1))
            return None
        found = parameter_operator(text)
        if found is not None and self.nocasematch and found[1] in _PATTERN_OPERATORS:
            return None  # ${x/q} under nocasematch also takes Q
        if found is not None:
            name, op, arg = found
            if name in self.glob_vars and name not in self.listed_vars and \
                    self._names_misread(name, op, arg):
                return None  # for f in x*; sort ${f#x}: x-oa.txt gives -oa.txt, an option
            values = self._static_variable(name)
            out = None if values is None else [apply_operator(v, op, arg) for v in values]
            if out is None or None in out:
                return None
            return self._or_unset(name, [v or "" for v in out], "")
        m = re.fullmatch(r"\$\{(#|!)([A-Za-z_]\w*|[1-9]\d*)\}", text)
        if m is None:
            named = re.fullmatch(r"\$\{!([A-Za-z_]\w*)([@*])\}", text)
            if named is None:
                return self._static_default(text)
            names = self._prefixed(named.group(1))
            joint = " " if named.group(2) == "@" else None if self.ifs is None else self.ifs[:1]
            return None if names is None or joint is None else [joint.join(names)]
        values = self._static_variable(m.group(2))
        if values is None or m.group(1) == "#":
            return None if values is None else self._or_unset(
                m.group(2), [str(len(v)) for v in values], "0")
        targets = [self._static_variable(v) if re.fullmatch(r"[A-Za-z_]\w*", v) else None
                   for v in values]  # ${!x}: the variable x names
        return None if None in targets else bounded([v for t in targets for v in t or ()])

    def _names_misread(self, name: str, op: str, arg: str) -> bool:
        """Whether the operator ``op``/``arg`` gives, from a name the loop variable's globs
        match, an option (a leading ``-``) or a name ``MISREAD_NAME`` would mark; also when
        those names are not followed here."""
        names = self._glob_names(name)
        if names is None:
            return True
        out = [apply_operator(v, op, arg) for v in names]
        return any(v is None or v.startswith("-") or MISREAD_NAME.search(v) for v in out)

    def _glob_names(self, name: str) -> list[str] | None:
        """The names a loop variable over globs holds: what its patterns match here (``for
        f in x*; sort ${f#x}``: an operator applies to ``x-oa.txt``, not to ``x*``); None
        when a pattern's matches are not followed here."""
        found = [self._glob_here(p) for p in self.loops.get(name) or ()]
        if name not in self.loops or None in found:
            return None
        return bounded([m for names in found for m in names or ()])

    def _any_name(self, text: str) -> bool:
        """Whether ``text`` reads a name a listing or a glob gave (a loop variable, or
        ``$1`` of ``sh -c '..' _ {}``): it stands for names not seen here."""
        return bool((self.listed_vars or self.glob_vars) and (
            self.listed_vars | self.glob_vars).intersection(_NAMES_USED.findall(text))) or (
            bool(self.listed_args) and any(
                p in "@*" or int(p) in self.listed_args for p in _POSITIONS_USED.findall(text)))

    def _decided(self, condition: str) -> bool | None:
        """Whether a condition on values known here is true, for every value they may hold:
        ``(( dry ))``, ``(( n == 0 ))``, ``[ "$mode" = check ]``, ``[[ -n $x ]]``, ``$dry``
        (``true``/``false``). None when any value, or the form, is not known here (a name
        read from a listing stands for any name, one a glob matched for the names now and
        those a file the command writes first adds)."""
        text = condition.strip().rstrip(";").strip()
        if self._any_name(text) or (self.nocasematch and re.search(r"[!=]=|=~", text)):
            return None
        m = _DECIDED_ARITHMETIC.fullmatch(text)
        if m is not None:
            values = self._static_variable(m.group(1))
            if values is None or not all(v == "" or DECIMAL.fullmatch(v) for v in values):
                return None  # a word names a variable; 010 is octal, 08 an error
            numbers = [int(v or "0") for v in values]  # unset or empty: 0
            op, rhs = m.group(2), int(m.group(3) or "0")
            return _agreed([(n == rhs if op == "==" else n != rhs) if op else n != 0
                            for n in numbers])
        m = _DECIDED_TEST.fullmatch(text)
        if m is not None:
            quoted, name = (m.group(3), m.group(4)) if m.group(2) else (m.group(5), m.group(6))
            values = self._static_variable(name)
            if values is None or (m.group(1) == "[" and not quoted and not all(
                    re.fullmatch(r"[\w./:@%+,-]+", v) for v in values)):
                return None  # [ -n $x ] of an empty x is [ -n ]: true
            if m.group(2):  # -n / -z
                return _agreed([bool(v) == (m.group(2) == "n") for v in values])
            op, literal = m.group(7), m.group(9)
            if op == "==" and m.group(1) == "[":
                return None  # bash's [ takes ==, sh's does not
            return _agreed([(v == literal) == (op != "!=") for v in values])
        m = _DECIDED_COMMAND.fullmatch(text)
        if m is not None:
            values = self._static_variable(m.group(1))
            if values is None or not set(values) <= {"true", "false", ":"}:
                return None
            return _agreed([v != "false" for v in values])
        return None

    def _named_indirectly(self, name: str) -> None:
        """``${!v}`` reads the variable ``v`` names: each one named is read (a secret's
        use noted); a name only known at run time may be any variable, the host's
        credentials included (``read v; echo "${!v}"``)."""
        names = self._static_variable(name)
        if names is None:
            self.unnamed.append(f"${{!{name}}} reads a variable whose name is only known at "
                                "run time (any one, credentials included)")
        for target in names or ():
            if re.fullmatch(r"[A-Za-z_]\w*", target):
                self._static_variable(target)

    def _prefixed(self, prefix: str) -> list[str] | None:
        """``${!x_@}``: the names of the set variables that start with ``x_``, sorted, when
        every such variable is followed here: none the shell sets itself, none only known
        at run time, and none from the environment, whose names are upper-case by
        convention (``${!AWS_@}`` lists what the host holds, not what the caller passed):
        the prefix has a lower-case letter."""
        if self.taint_all or prefix == prefix.upper() or any(
                v.startswith(prefix) or prefix.startswith(v) for v in SHELL_VARIABLE_PREFIXES):
            return None
        doubtful = (*(self.tainted - set(self.known)), *self.unknown, *self.maybe_unset,
                    *self.loops)
        if any(v.startswith(prefix) for v in doubtful):
            return None
        return sorted(v for v in {*self.known, *self.env} if v.startswith(prefix))

    def _or_unset(self, name: str, values: list[str], unset: str) -> list[str]:
        """``values`` and, for a variable that may be unset, what bash gives then: an
        operator applies to set values only (``${x/#/echo }`` of an unset x is ``""``)."""
        if name in self.maybe_unset and unset not in values:
            return [*values, unset]
        return values

    def _static_default(self, text: str) -> list[str] | None:
        """``${X:-rm}``, ``${X-rm}``, ``${X:+rm}``, ``${1:-src}``, ``${1:?usage}``: the value
        or the alternative word (``?``: the value, or the shell stops)."""
        m = _DEFAULT.fullmatch(text)
        if m is None:  # ${X:0:4}, ${X@Q}: not computed here, but X is read
            if (named := re.match(r"\$\{([A-Za-z_]\w*)", text)) is not None:
                self._static_variable(named.group(1))
            return None
        name, op, alt = m.groups()
        if "$" in alt:  # ${BACKUP_ROOT:-$HOME/backups}: the word's variables, expanded
            words = self._referenced(alt)
            found = None if words is None else [self._default_values(name, op, w)
                                                for w in words]
            return None if found is None or None in found else bounded(list(dict.fromkeys(
                v for values in found for v in values or ())))
        if not alt.startswith("~"):
            return self._default_values(name, op, alt)
        home = self.env.get("HOME")  # ${x:-~/.ssh}: unquoted, the tilde is expanded
        if home is None or not re.match(r"~(?:/|$)", alt):
            return None  # ~root, ~+, ~-: another folder, only known at run time
        found = [self._default_values(name, op, w) for w in (home + alt[1:], alt)]
        return None if None in found else list(dict.fromkeys(
            v for values in found for v in values or ()))

    def _referenced(self, word: str) -> list[str] | None:
        """``$HOME/backups``: the word with each ``$NAME``/``${NAME}`` replaced by every
        value the variable may hold; None when one is only known at run time."""
        out = [""]
        for part in re.split(r"(\$\{?[A-Za-z_]\w*\}?)", word):
            if not part.startswith("$"):
                out = [o + part for o in out]
                continue
            values = self._static_variable(part.strip("${}"))
            if values is None:
                return None
            grown = bounded([o + v for o in out for v in values])
            if grown is None:
                return None
            out = grown
        return out

    def _default_values(self, name: str, op: str, alt: str) -> list[str] | None:
        if name.isdigit():
            return self._positional_default(int(name), op, alt)
        value = self._static_variable(name)
        unset_too = [] if value is None or name not in self.maybe_unset else \
            ["" if op.endswith("+") else alt]  # set where that may not have run
        if op.endswith("+"):  # ${x+w}: w when x is set, even empty; ${x:+w}: non-empty
            return None if value is None else list(dict.fromkeys(
                [*(alt if v or op == "+" else "" for v in value), *unset_too]))
        if op.endswith("?"):
            return value if value is not None and all(value) else None
        if value is None:
            unset = name not in self.env and name not in self.tainted and \
                name not in self.known and name not in self.unknown and not self.taint_all
            return [alt] if unset else None
        return list(dict.fromkeys([*(v if v or op[0] != ":" else alt for v in value),
                                   *unset_too]))

    def _positional_default(self, index: int, op: str, alt: str) -> list[str] | None:
        """``${1:-src}``: ``$1`` is unset past the words given (run_shell gives none)."""
        args = self.positional if self.args_given else None  # the top: the caller's
        if args is None or op.endswith("="):  # ${1:=x} is an error in bash
            return None
        value = args[index - 1] if index <= len(args) else None
        chosen = value if op[0] != ":" or value is None else (value or None)
        if op.endswith("+"):
            return [alt if chosen is not None else ""]
        if op.endswith("?"):
            return None if chosen is None else [chosen]
        return [alt if chosen is None else chosen]

    def _arithmetic_text(self, text: str, how: str) -> None:
        found = arithmetic_problem(text, self._arithmetic_lookup)
        if found is None:
            return
        kind, why = found
        (self.opaque if kind == "opaque" else self.unnamed).append(
            why.replace("an arithmetic context", how, 1))

    def _arithmetic_sets(self, text: str) -> None:
        """``(( n = 4 ))``, ``$((i++))``, ``let x+=1``: each name arithmetic assigns holds a
        number only known at run time from then on (not the text it held before)."""
        for m in _ARITHMETIC_SETS.finditer(text):
            self._holds_number(self._resolved(m.group(1) or m.group(2) or m.group(3)))

    def _holds_a_number(self, text: str) -> bool:
        """``"$pid"`` after ``pid=$(pgrep ..)``, ``$n`` after ``(( n++ ))``: one variable
        that holds a number, whatever number it is."""
        bare = text[1:-1] if len(text) > 1 and text[:1] == '"' == text[-1:] else text
        if bare in self.counts:
            return True  # ps -u "$(id -u)": what a numbers-only command prints
        m = re.fullmatch(r'"?\$\{?([A-Za-z_]\w*)\}?"?', text)
        name = self._resolved(m.group(1)) if m else ""
        return bool(name) and (name in self.numeric or (
            name in SHELL_NUMBERS and name not in self.known and name not in self.unknown))

    def _holds_number(self, var: str) -> None:
        """``var`` now holds a number only known at run time (not the text it held)."""
        if var in self.readonly:
            return  # readonly n: bash refuses the change
        self.known.pop(var, None)
        self.arrays.pop(var, None)
        self.unknown.add(var)
        self._number_held(var)

    def _number_held(self, var: str) -> None:
        """``var``, declared ``-i``, holds a number; when that ``-i`` may not be in force
        (``(declare -i o); o=-delete``), also the text it was given."""
        if var in self.maybe_integers:
            self.numeric.discard(var)
        else:
            self.numeric.add(var)

    def _arithmetic_lookup(self, name: str) -> list[str] | None:
        name = self._resolved(name)
        if name in self.numeric or (name in SHELL_NUMBERS and name not in self.known
                                    and name not in self.unknown):
            return ["0"]
        if name in self.arrays:
            return [v for items in self.arrays[name] for v in items]
        found = self._static_variable(name)
        if found is not None:
            return found
        if self.taint_all or name in self.unknown or name in self.tainted or name.isdigit():
            return None
        return []

    def _let(self, words: list[Word]) -> None:
        """``let EXPR..``: each word evaluated as arithmetic; an unquoted one that matches
        files is those names (``let *`` beside ``A[$(rm a.txt)]`` runs rm)."""
        for w in words:
            value = w.value if w.value is not None else self._counted(w.text)
            if value is not None and not w.text.startswith(("'", '"')) and \
                    self._glob_here(value) != [value]:
                value = None  # the names it matches, or a folder not followed here
            if value is None:
                self.unnamed.append("let evaluates a value only known at run time")
                continue
            target, eq, expr = value.partition("=")
            plain = bool(eq) and re.fullmatch(r"[A-Za-z_]\w*[-+*/%&|^<>]?", target)
            if plain and target[-1] in "-+*/%&|^<>":  # x+=1 evaluates x's value too
                self._arithmetic_text(target.rstrip("-+*/%&|^<>"), "let")
            self._arithmetic_text(expr if plain else value, "let")
            self._arithmetic_sets(value)

    def _builtin(self, e: Effect, stdin: Word | None = None, ifs: str | None = " \t\n",
                 numbered: Columns = NONE) -> None:
        """Builtins that set variables, evaluate arithmetic or hide a program. ``stdin`` is
        what the command reads (a here-string, a here-doc), ``ifs`` the field separators
        ``read`` splits at (None: only known at run time), ``numbered`` the fields of its
        lines that are numbers."""
        name = program_name(e.argv[0]) if e.argv else ""
        args = [w.value for w in e.argv[1:]]
        why = None if self._hashed(name, args) else opaque_builtin(name, args)
        if why:
            e.add("exec", "")
            e.at_least("deny", why)
            self.opaque.append(why)
        if name == "let":
            self._let(e.argv[1:])
        elif name in ("test", "[") and "-v" in args:
            for w in e.argv[1:][args.index("-v") + 1:args.index("-v") + 2]:
                if w.value is None or (w.expandable and GLOB.search(w.value)):
                    self.unnamed.append("test -v of a name only known at run time (a "
                                        "subscript in it would run commands)")
                else:
                    self._arithmetic_text(w.value.partition("[")[2], "test -v")
        elif name in ("read", "mapfile", "readarray", "printf"):
            self._sets_names(name, e)
            if name != "printf":
                self._read_values(name, e.argv[1:], stdin, ifs, numbered)
        elif name == "getopts":
            self._getopts(args)
            self.numeric.add("OPTIND")  # the index of the next argument, set by getopts
        elif name == "set":
            self._set_positional(e.argv[1:])
            if _keyword_mode(args):
                why = "set -k makes a NAME=value word anywhere set a variable for the command"
                e.at_least("deny", why)
                self.opaque.append(why)
        elif name == "shift" and self.positional is not None:
            count = args[0] if args else "1"
            self.positional = self.positional[int(count):] if count is not None and \
                count.isdigit() else None

    def _counted(self, text: str) -> str | None:
        """``total+=$(wc -l < "$f")``: the word with each counting substitution read as a
        number; None when anything else in it is only known at run time."""
        for sub in self.counts:
            text = text.replace(sub, "0")
        text = text.strip("'\"")
        return text if re.fullmatch(r"[\w+\-*/%=<>&|^!~ ()\[\]]*", text) else None

    def _hashed(self, name: str, args: list[str | None]) -> bool:
        """``hash -p FILE NAME..``, every word shown: NAME runs FILE from here on (judged as
        that file, like a link this command made). ``enable -n NAME..``: NAME, no longer a
        builtin, runs the program PATH finds (``/usr/bin/echo``), judged the same way."""
        mapping = hash_mapping(args) if name == "hash" else \
            self._disabled(args) if name == "enable" else None
        if mapping is None:
            return False
        path, names = mapping
        for n in names:
            if path or n not in self.hashed:  # hash -p x echo; enable -n echo: echo runs x
                self.hashed[n] = (path or self._on_path(n) or "", not self.conditional)
        return True

    def _disabled(self, args: list[str | None]) -> tuple[str, list[str]] | None:
        """``enable -n NAME..`` where PATH finds each NAME in a system folder first: the
        names (with "" for the file: each NAME has its own)."""
        if args[:1] != ["-n"] or len(args) < 2 or None in args:
            return None
        names = [str(a) for a in args[1:]]
        if any(n not in PROGRAM_TWINS or not self._on_path(n) for n in names):
            return None  # a builtin that changes the shell's state (printf -v, cd, read),
            # or one whose program PATH finds outside the system folders
        return "", names

    def _on_path(self, name: str) -> str | None:
        """The file PATH finds for ``name`` when that is in a system folder and no folder
        searched before it is one a command could put a file of that name in (relative, or
        in the workspace), else None."""
        ws = os.path.realpath(self.ws)
        for folder in self.env.get("PATH", "").split(":"):
            real = os.path.realpath(folder) if os.path.isabs(folder) else ""
            if folder not in SYSTEM_DIRS and (not real or os.path.commonpath([real, ws]) == ws):
                return None  # ./bin/echo, made by this command, would run instead
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate if folder in SYSTEM_DIRS else None
        return None

    def _getopts(self, args: list[str | None]) -> None:
        """``getopts OPTS NAME [ARGS]``: NAME holds an option letter, ``OPTARG`` any of the
        words parsed (ARGS, else the positional words). With OPTS and the words known, the
        parse is exact: the letters given, their arguments, and ``OPTIND`` after the loop."""
        words = args[2:] if len(args) > 2 else self.positional
        var = args[1] if len(args) > 1 else None
        if var is None or not re.fullmatch(r"[A-Za-z_]\w*", var):
            self.opaque.append("getopts sets a variable whose name is only known at run time")
            return
        parsed = None if args[0] is None or words is None or None in words else \
            getopts_parse(args[0], [str(w) for w in words])
        if parsed is not None:
            letters, optargs, optind = parsed
            self._may_hold(var, [*letters, "?"])  # "?" when the options end
            self._may_hold("OPTARG", ["", *optargs])
            self.known["OPTIND"] = [str(optind)]
            self.unknown.discard("OPTIND")
            return
        given = [c for c in (args[0] or "") if c.isalnum()] if args[0] is not None else None
        for target, values in ((var, None if given is None else [*given, "?", ":"]),
                               ("OPTARG", None if words is None or None in words else
                                ["", *words])):
            self._may_hold(target, None if values is None else [v or "" for v in values])

    def _read_values(self, name: str, args: list[Word], stdin: Word | None,
                     ifs: str | None, numbered: Columns = NONE) -> None:
        """``read a b <<< 'x y'``, ``mapfile -t a <<E``: the names hold the input's fields
        or lines when the input is static. Any of its lines may be the one read (a loop
        reads them in turn), so each is a possible value."""
        if name == "read":
            o = parse_opts(args, "adinNptu")
            arrays, names = o.all("-a"), o.positionals
            names = [] if arrays else (names or [Word.of("REPLY")])
        else:
            o = parse_opts(args, "dnOsuCc")
            arrays = o.positionals[:1] or [Word.of("MAPFILE")]
            names = []
        texts = None if stdin is None else [stdin.value] if stdin.value is not None else \
            self.fed.get(stdin.text)  # <<< "$c": each string c may hold is a possible input
        listed = stdin is not None and stdin.text == LISTED_TEXT
        delim = o.get("-d")  # -d '': records end at a NUL byte
        end = "\n" if delim is None else None if delim.value is None else delim.value[:1] or "\0"
        if o.has("-n", "-N", "-u") or end is None:  # a count or another input: not records
            texts = None
        if name == "read" and not o.has("-r") and texts is not None and any(
                "\\" in t for t in texts):
            texts = None  # read x <<< 'r\m': without -r, a backslash escapes (x is rm)
        inputs = [_records(t, end or "\n") for t in texts] if texts is not None else [None]
        for w in names:
            var = w.value or ""
            if not re.fullmatch(r"[A-Za-z_]\w*", var):
                continue
            if any(lines is None for lines in inputs) or ifs is None:
                self.unknown.add(var)
                self._not_numeric(var)
                if var in self.integers:
                    self._integer_values(var, None)
                if numbered.numeric(names.index(w), len(names), ifs) and not o.has(
                        "-n", "-N", "-d", "-u"):
                    self.numeric.add(var)  # uniq -c | while read -r n w: n is a count
                if numbered.id_first(names.index(w)) and not o.has("-n", "-N", "-d", "-u"):
                    self.dashless_vars.add(var)  # git log --format=%H | while read -r c
                continue
            at = names.index(w)
            self._may_hold(var, [_fields(line, ifs, len(names))[at]
                                 for lines in inputs for line in lines or ()])
            (self.listed_vars.add if listed else self.listed_vars.discard)(var)
        for w in arrays:
            var = w.value or ""
            if re.fullmatch(r"[A-Za-z_]\w*", var):
                for lines in inputs:
                    self._read_array(name, var, lines, ifs, o.has("-t"), end)
                if listed:  # mapfile -t f < <(git ls-files): each element a listed path
                    self.listed_arrays.add(var)
                if numbered.ids and numbered.whole and name != "read" and o.has("-t"):
                    self.dashless_vars.add(var)  # mapfile -t c < <(git rev-list ..): ids

    def _read_array(self, name: str, var: str, lines: list[str] | None, ifs: str | None,
                    chomp: bool, end: str | None) -> None:
        if lines is None or (name == "read" and (ifs is None or len(lines) != 1)):
            self._set_array(var, None)
        elif name == "read":
            self._set_array(var, [f for f in _fields(lines[0], ifs or "", 0) if f])
        else:  # mapfile keeps each line's delimiter unless -t (a NUL: bash cannot hold one)
            self._set_array(var, lines if chomp else [
                (ln + (end or "\n")).replace("\0", "") for ln in lines])

    def _sets_names(self, name: str, e: Effect) -> None:
        """``printf -v NAME``: NAME holds what printf prints; ``NAME[i]`` evaluates ``i``."""
        args = e.argv[1:]
        targets: list[Word] = []
        if name == "printf":
            at = next((i for i, w in enumerate(args) if (w.value or "").startswith("-v")),
                      None)
            if at is None:
                return
            if args[at].value != "-v":  # printf -vNAME
                args = [*args[:at], Word.of("-v"), Word.of((args[at].value or "")[2:]),
                        *args[at + 1:]]
            if at + 1 >= len(args):
                return
            targets = [args[at + 1]]
            rest = [w.value for w in args[at + 2:]]
            rest = rest[1:] if rest[:1] == ["--"] else rest
            var = targets[0].value or ""
            out = printf_output([r for r in rest if r is not None]) if None not in rest else None
            out = None if out is None else out.partition("\0")[0]  # a C string: ends at NUL
            if re.fullmatch(r"[A-Za-z_]\w*", var):
                self._may_hold(var, None if out is None else [out], merge=False)
        elif name == "read":  # options with a value: -a NAME is a target too
            o = parse_opts(args, "adinNptu")
            targets = [*o.all("-a"), *o.positionals]
        else:
            targets = parse_opts(args, "dnOsuCc").positionals
        for w in targets:
            if w.value is None:
                self.opaque.append(f"{name} sets a variable whose name is only known at run "
                                   "time")
            elif "[" in w.value:
                self._arithmetic_text(w.value.partition("[")[2].rpartition("]")[0],
                                      f"{name} into an array element")
                base = w.value.partition("[")[0]  # c[0] is $c: what it held is gone
                self._not_numeric(base)
                self.known.pop(base, None)
                self.arrays.pop(base, None)
                self.unknown.add(base)

    def _set_positional(self, args: list[Word]) -> None:
        """``set -- a b``: ``$1``, ``$@`` hold the words (None when one is dynamic); a glob
        holds its matches, as bash expands it before ``set`` runs (``set -- k*`` after
        ``ln -s / kk``: ``"$1"/etc`` is ``kk/etc``)."""
        if args[:1] and args[0].value == "--":
            args = args[1:]
        elif not args or (args[0].value or "-").startswith(("-", "+")):
            return
        words: list[str] | None = []
        for w in args:
            found = self._word_matches(w)
            words = None if words is None or found is None else [*words, *found]
        self.positional = words
        self.set_words = True

    def _word_matches(self, w: Word) -> list[str] | None:
        """The words an argument becomes: its glob's matches from the one folder the shell
        is known to be in (itself when none), or None when only known at run time."""
        if w.value is None:
            return None
        if not w.expandable or not GLOB.search(w.value):
            return [w.value]
        known = [c for c in self.cwds if c is not None]
        if len(known) != len(self.cwds) or len(known) != 1:
            return None
        found = self._glob(w.value, str(known[0]))
        if found == [] and self.nullglob:
            return None  # shopt -s nullglob: a pattern that matches nothing is no word
        return None if found is None else (found or [w.value])

    def _glob(self, pattern: str, base: str) -> list[str] | None:
        raise NotImplementedError  # PathJudge._glob: the walker has both

    def _glob_here(self, pattern: str) -> list[str] | None:
        """The words bash makes of the unquoted ``pattern`` in the one folder the command
        runs in: the names it matches, or the pattern itself when none does; None when
        that folder or its matches are not followed here."""
        if len(self.cwds) != 1 or self.cwds[0] is None:
            return None
        if not GLOB.search(pattern):
            return [pattern]
        found = self._glob(pattern, str(self.cwds[0]))
        return None if found is None else found or [pattern]

    def _split(self, value: str) -> list[str]:
        """Words of an unquoted expansion: split at IFS as bash splits them (at whitespace
        when IFS is only known at run time: a caller refuses that case)."""
        return split_fields(value, " \t\n" if self.ifs is None else self.ifs)

    def _set_array(self, var: str, items: list[str] | None) -> None:
        if var in self.readonly:
            return  # readonly a: bash refuses the change, a keeps what it held
        if not self.conditional:
            self.listed_arrays.discard(var)  # files=(a.txt): no listing's any more
        if items is None or not all(_INTEGER.fullmatch(i) for i in items):
            self._not_numeric(var)
        if var in self.integers:  # declare -ai a; mapfile a: each element is evaluated
            self._integer_values(var, items)
        if items is not None and var in self.cased:
            found = [cased_values(self.cased[var], [i]) for i in items]
            items = [f[0] for f in found] if all(len(f) == 1 for f in found) else None
        if items is None:
            self.arrays.pop(var, None)
            self.unknown.add(var)
            return
        self.sparse.discard(var)
        self.holes.pop(var, None)
        if not self.conditional:
            self.arrays.pop(var, None)  # a=(x); a=(y): y only, unless that may not run
        alternatives = self.arrays.setdefault(var, [])
        if items not in alternatives:
            alternatives.append(items)
        if len(items) > MAX_LOOP_WORDS or len(alternatives) > MAX_ARRAYS:
            self._set_array(var, None)  # more than followed: only known at run time
            return
        self.known[var] = list(dict.fromkeys(i[0] if i else "" for i in alternatives))
        self.unknown.discard(var)

    def _last_items(self, var: str) -> list[str] | None:
        found = self.arrays.get(var)
        return list(found[-1]) if found else None

    def _argv0(self) -> str | None:
        """``$0``: the shell's name, or the one value ``BASH_ARGV0`` was surely set to (bash
        sets ``$0`` from it: ``BASH_ARGV0=rm; $0 a.txt`` runs rm); None when only known at
        run time."""
        if not self.names_argv0:
            return self.argv0
        found = self.known.get("BASH_ARGV0")
        if found is None or len(found) != 1 or self.taint_all or \
                {"BASH_ARGV0"} & (self.unknown | self.maybe_unset):
            return None
        return found[0]

    def _variable(self, name: str, text: str, special: bool) -> Word:
        if name == "0" and (argv0 := self._argv0()) is not None:
            return Word(argv0, text)
        if name == "_":  # the last word of the previous command
            found = self._static_variable(name)
            return Word(found[0], text) if found and len(found) == 1 else Word(
                None, text, "var")
        if (name.isdigit() or name == "#") and self.args_given:  # "$@" is several words
            found = self._static_positional(name)  # bash -c 'wc -l < "$1"' _ FILE
            if found is not None and len(found) == 1 and self._split(found[0]) == [found[0]]:
                listed = name.isdigit() and int(name) in self.listed_args  # xargs sh -c .. {}
                return Word(found[0], LISTED_TEXT if listed else text)  # one word, quoted or not
        if name in _PROCESS_IDS or (name in SHELL_NUMBERS and name not in self.known
                                    and name not in self.unknown):
            return Word("4242" if name in _PROCESS_IDS else "0", text)  # a number, never
        if special or name.isdigit() or name == INPUT_VAR:  # a path or a program
            return Word(None, text, "var")
        if name in self.loops and name not in self.unknown and name not in self.known \
                and not self.taint_all:
            values = self.loops[name]
            joined = values[0] if len(values) == 1 else "{" + ",".join(values) + "}"
            plain = len(values) == 1 and (name in self.in_turn or not GLOB.search(joined)) \
                and joined.split() == [joined]
            shown = LISTED_TEXT if name in self.listed_vars else text  # for f in $(ls-files)
            return Word(joined, shown, "", False, not plain)  # a glob or a list expands
        if self.taint_all or name in self.tainted:
            return Word(None, text, "var")
        value = self._from_environment(name)
        if value is None:
            return Word(None, text, "var", unset=True)
        return Word(value, text)


_PATTERN_OPERATORS = frozenset({"#", "##", "%", "%%", "/", "//", "/#", "/%"})
"""Parameter operators that match a pattern."""


def made_temp(argv: list[str]) -> bool:
    """Whether ``mktemp`` with these words makes a new file or folder of its own (in
    ``$TMPDIR``, ``/tmp`` or the working folder) and prints its path: not ``-u``, no folder
    named (``-p``), no template with a folder in it."""
    o = argv[1:]
    flags = [w for w in o if w.startswith("-")]
    names = [w for w in o if not w.startswith("-")]
    return argv[:1] == ["mktemp"] and set(flags) <= {"-d", "-q", "-t", "-dt", "-td", "-dq",
                                                       "-qd", "--directory", "--quiet"} and \
        len(names) <= 1 and all("/" not in n and "X" * 3 in n for n in names)


def _fed_text(text: str, name: str) -> bool:
    """Whether ``text`` has a here-document or here-string and expands ``name``: the path
    may go on as data (``read -r d <<< "$t"``)."""
    return "<<" in text and re.search(rf"\$\{{?{re.escape(name)}\b", text) is not None


def _only_expanded(text: str, name: str) -> bool:
    """Whether ``name`` appears in ``text`` only where a variable is expanded (``$t``,
    ``${t}``, ``${#t}``, ``${t%/}``), in a path (``/t``, ``t.XXX``) or assigned a
    ``mktemp``'s output: no other builtin can be setting it."""
    for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?!\w)", text):
        before, after = text[max(0, m.start() - 3):m.start()], text[m.end():m.end() + 12]
        if before.endswith("$") or re.search(r"\$\{[#!]?$", before):
            if before.endswith("{") and re.match(r":?=", after):
                return False  # ${t:=x} assigns
            continue
        if before.endswith((".", "/", "-")) or after[:1] in ("/", "."):
            continue
        if re.match(r'="?\$\(\s*mktemp\b', after):
            continue
        return False
    return True


def _fields(line: str, ifs: str, count: int) -> list[str]:
    """``read``'s split of ``line`` at ``ifs`` into ``count`` fields, the last holding the
    rest (every field when ``count`` is 0); missing fields are empty."""
    blank = "".join(c for c in ifs if c in " \t\n")
    out: list[str] = []
    rest = line.strip(blank)
    while rest and (count == 0 or len(out) < count - 1):
        at = next((i for i, c in enumerate(rest) if c in ifs), None)
        if at is None:
            break
        out.append(rest[:at])
        rest = rest[at + 1:].lstrip(blank)
        if rest[:1] and rest[0] in ifs and rest[0] not in blank:
            rest = rest[1:].lstrip(blank)  # one separator with blanks around it
    out.append(rest.rstrip(blank) if count else rest)
    return [*out, *[""] * (count - len(out))] if count else out


def _keyword_mode(args: list[str | None]) -> bool:
    """``set -k`` / ``set -o keyword`` (before ``--`` or the first positional word)."""
    for i, a in enumerate(args):
        if a is None or a == "--" or not a.startswith("-"):
            return a is None
        if a == "-o" and i + 1 < len(args) and args[i + 1] in ("keyword", None):
            return True
        if not a.startswith("--") and "k" in a[1:] and "o" not in a[1:]:
            return True
    return False


def _records(text: str, end: str) -> list[str]:
    """The records ``read``/``mapfile`` see in ``text`` (a final delimiter ends the last)."""
    lines = text.split(end)
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def getopts_parse(optstring: str, words: list[str]) -> tuple[list[str], list[str], int] | None:
    """What a ``while getopts OPTSTRING`` loop over ``words`` sets: the option letters seen
    (``?`` for an unknown one), the option arguments, and ``OPTIND`` when it ends."""
    takes = {c: optstring[i + 1:i + 2] == ":" for i, c in enumerate(optstring) if c != ":"}
    letters: list[str] = []
    optargs: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        for at, c in enumerate(word[1:], 1):
            if c not in takes:
                letters.append("?")
                optargs.append(c)
                continue
            letters.append(c)
            if takes[c]:
                rest = word[at + 1:]
                if not rest:
                    if i + 1 >= len(words):
                        return None  # a missing argument: what bash sets is not followed
                    i += 1
                    rest = words[i]
                optargs.append(rest)
                break
        i += 1
    return list(dict.fromkeys(letters)), list(dict.fromkeys(optargs)), i + 1


_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*|[1-9]\d*)(:?[-=+?])((?:[^$`'\"\\{}]|\$[A-Za-z_]\w*|"
                      r"\$\{[A-Za-z_]\w*\})*)\}")
"""``${X:-word}`` (``-``, ``=``, ``+``, ``?``, with or without ``:``), the word plain text and
simple variable references."""


def _agreed(truths: list[bool]) -> bool | None:
    """The one answer every possible value gives, else None."""
    return truths[0] if truths and all(t == truths[0] for t in truths) else None
