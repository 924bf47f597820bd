"""Payloads and word transformations: what the shell oracle's commands are made of.

A payload is a real program invocation with an effect on the oracle's workspace (``rm -rf
src``, ``git reset --hard``, ``ls``, ``touch new.txt``...). A *word* transformation rewrites a
payload's words, taken from a section of ``man bash``: the program name hidden by quoting,
parameter expansion, command substitution, variables and arrays, pathname expansion, aliases
or ``hash``; the argv run by a program that runs its arguments (``env``, ``xargs``, ``find
-exec``...); the path argument hidden; the redirection written another way. The command
transformations that wrap a whole command are in ``tests/shell_wrappers.py``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

WORKSPACE_PATHS = ("src", "a.txt", "README.md", ".")
"""Arguments an argument transformation may rewrite (they exist in the oracle's workspace)."""
BIN = "/usr/bin"
"""Where the payloads' programs live (the sandbox's PATH is /usr/bin:/bin)."""


@dataclass(frozen=True, slots=True)
class Payload:
    """One program invocation: its argv (values, quoted when rendered) and a redirection."""

    name: str
    argv: tuple[str, ...]
    redir: str = ""
    """Appended after the argv, e.g. ``" > a.txt"``."""
    pre: str = ""
    """A command run first, e.g. leaving the branch that is then deleted."""

    def render(self, setup: str = "", words: tuple[str, ...] | None = None) -> str:
        shown = words if words is not None else tuple(shlex.quote(a) for a in self.argv)
        return setup + self.pre + " ".join(shown) + self.redir


PAYLOADS = (
    Payload("rm -rf src", ("rm", "-rf", "src")),
    Payload("rm a.txt", ("rm", "a.txt")),
    Payload("shred -u a.txt", ("shred", "-u", "a.txt")),
    Payload("truncate -s 0 README.md", ("truncate", "-s", "0", "README.md")),
    Payload("git reset --hard", ("git", "reset", "-q", "--hard")),
    Payload("git reset --hard HEAD~1", ("git", "reset", "-q", "--hard", "HEAD~1")),
    Payload("git checkout -- .", ("git", "checkout", "-q", "--", ".")),
    Payload("git clean -fdx", ("git", "clean", "-q", "-fdx")),
    Payload("git stash drop", ("git", "stash", "drop", "-q")),
    Payload("git branch -D main", ("git", "branch", "-D", "main"),
            pre="git checkout -q -b other && "),
    Payload("find -delete", ("find", ".", "-name", "*.txt", "-delete")),
    Payload("chmod -R 000 src", ("chmod", "-R", "000", "src")),
    Payload("cp /dev/null a.txt", ("cp", "/dev/null", "a.txt")),
    Payload("mv a.txt /tmp/x", ("mv", "a.txt", "/tmp/x")),
    Payload(": > a.txt", (":",), redir=" > a.txt"),
    Payload("dd of=a.txt", ("dd", "if=/dev/zero", "of=a.txt", "count=1", "status=none")),
    Payload("ls", ("ls",)),
    Payload("cat a.txt", ("cat", "a.txt")),
    Payload("git status", ("git", "status", "--short")),
    Payload("head README.md", ("head", "-n", "2", "README.md")),
    Payload("touch new.txt", ("touch", "new.txt")),
    Payload("mkdir build", ("mkdir", "build")),
    Payload("sed -i a.txt", ("sed", "-i", "s/x/y/", "a.txt")),
    Payload("echo > new.txt", ("echo", "hello"), redir=" > new.txt"),
    Payload("cat ../secret.txt", ("cat", "../secret.txt")),
    Payload("head ../secret.txt", ("head", "-n", "1", "../secret.txt")),
)

WordFn = Callable[[Payload], str | None]


@dataclass(frozen=True, slots=True)
class Transform:
    """A named construct: ``word`` rewrites a payload's words, ``cmd`` wraps a command."""

    name: str
    kind: str
    fn: Callable[..., str | None]


WORDS: list[Transform] = []
"""The word transformations, in the order they are drawn from."""


def _word(name: str) -> Callable[[WordFn], WordFn]:
    def add(fn: WordFn) -> WordFn:
        WORDS.append(Transform(name, "word", fn))
        return fn
    return add


def q(text: str) -> str:
    """``text`` quoted for the shell as one word."""
    return shlex.quote(text)


def _rest(p: Payload) -> tuple[str, ...]:
    return tuple(q(a) for a in p.argv[1:])


def hex_escaped(text: str) -> str:
    """``text`` as ``\\xHH`` escapes (for ``$'...'``, ``printf`` and ``${x@E}``)."""
    return "".join(f"\\x{b:02x}" for b in text.encode())


def octal_escaped(text: str) -> str:
    """``text`` as ``\\OOO`` escapes."""
    return "".join(f"\\{b:03o}" for b in text.encode())


def _ident(text: str) -> bool:
    return text.isidentifier() and text.isascii()


def _program(name: str, rewrite: Callable[[str], tuple[str, str] | None]) -> None:
    """A word transformation of the program name: ``rewrite(prog) -> (setup, word)``."""

    def fn(p: Payload) -> str | None:
        got = rewrite(p.argv[0])
        if got is None:
            return None
        setup, word = got
        return p.render(setup, (word, *_rest(p)))
    _word(name)(fn)


def _external(rewrite: Callable[[str], tuple[str, str]]) -> Callable[[str], tuple[str, str] | None]:
    """Only for programs that are files (not the builtin ``:``)."""
    return lambda prog: None if prog == ":" else rewrite(prog)


# -- Quoting and quote removal ------------------------------------------------------------
_program("quote_single_split", lambda c: ("", c[0] + "''" + c[1:]))
_program("quote_double_part", lambda c: ("", f'"{c[0]}"{c[1:]}'))
_program("quote_backslash", lambda c: ("", "".join("\\" + ch for ch in c)))
_program("quote_ansi_c_hex", lambda c: ("", f"$'{hex_escaped(c)}'"))
_program("quote_ansi_c_octal", lambda c: ("", f"$'{octal_escaped(c)}'"))
_program("quote_locale", lambda c: ("", f'$"{c}"'))
_program("empty_cmdsub_in_word", lambda c: ("", c[0] + "$()" + c[1:]))
_program("empty_backticks_in_word", lambda c: ("", c[0] + "``" + c[1:]))
_program("empty_unset_var_in_word", lambda c: ("", c[0] + "${nothing_here}" + c[1:]))
_program("empty_at_in_word", lambda c: ("", c[0] + '"$@"' + c[1:]))

# -- Parameter expansion ------------------------------------------------------------------
_program("pe_default", lambda c: ("", "${unset_v:-" + c + "}"))
_program("pe_assign_default", lambda c: ("", "${unset_v:=" + c + "}"))
_program("pe_alternative", lambda c: ("v=1; ", "${v:+" + c + "}"))
_program("pe_substring", lambda c: (f"v=ab{q(c)}cd; ", "${v:2:" + str(len(c)) + "}"))
_program("pe_substring_arith", lambda c: (f"v=ab{q(c)}; ", "${v:$((1+1))}"))
_program("pe_negative_offset", lambda c: (f"v=ab{q(c)}; ", "${v: -" + str(len(c)) + "}"))
_program("pe_strip_longest_prefix", lambda c: (f"v=/no/where/{q(c)}; ", "${v##*/}"))
_program("pe_strip_suffix", lambda c: (f"v={q(c)}.bak; ", "${v%.bak}"))
_program("pe_replace", lambda c: (f"v={q(c[:-1])}Q; ", "${v/Q/" + c[-1] + "}"))
_program("pe_replace_all", lambda c: (f"v={q('@'.join(c))}; ", "${v//@/}"))
_program("pe_lowercase", lambda c: (f"v={q(c.upper())}; ", "${v,,}"))
_program("pe_toggle_case", lambda c: (f"v={q(c.swapcase())}; ", "${v~~}"))
_program("pe_upper_then_lower", lambda c: (f"v={q(c)}; w=${{v^^}}; ", "${w,,}"))
_program("declare_lowercase_attr", lambda c: (f"declare -l v={q(c.upper())}; ", "$v"))
_program("pe_indirect", lambda c: (f"t={q(c)}; v=t; ", "${!v}"))
_program("pe_names_with_prefix",
         lambda c: (f"{c}=1; ", "${!" + c + "@}") if _ident(c) else None)
_program("pe_transform_E", lambda c: (f"v='{hex_escaped(c)}'; ", "${v@E}"))
_program("pe_transform_P", lambda c: (f"v={q(c)}; ", "${v@P}"))
_program("pe_nested_default", lambda c: ("", "${unset_v:-$(echo " + q(c) + ")}"))

# -- Command substitution -----------------------------------------------------------------
_program("cmdsub_dollar", lambda c: ("", f"$(echo {q(c)})"))
_program("cmdsub_backticks", lambda c: ("", f"`echo {q(c)}`"))
_program("cmdsub_nested", lambda c: ("", f"$(echo $(echo {q(c)}))"))
_program("cmdsub_backticks_in_dollar", lambda c: ("", f"$(echo `echo {q(c)}`)"))
_program("cmdsub_printf_hex", lambda c: ("", f"$(printf '{hex_escaped(c)}')"))

# -- Variables, arrays, builtins that set variables ----------------------------------------
_program("var_plain", lambda c: (f"p={q(c)}; ", "$p"))
_program("var_concat", lambda c: (f"a={q(c[:1])}; b={q(c[1:])}; ", "$a$b"))
_program("array_index", lambda c: (f"a=(x {q(c)}); ", "${a[1]}"))
_program("array_index_arith", lambda c: (f"a=(x {q(c)}); ", "${a[$((3-2))]}"))
_program("array_negative_index", lambda c: (f"a=({q(c)} x); ", "${a[-2]}"))
_program("assoc_array", lambda c: (f"declare -A m=([k]={q(c)}); ", "${m[k]}"))
_program("read_herestring", lambda c: (f"read -r p <<< {q(c)}; ", "$p"))
_program("read_heredoc", lambda c: (f"read -r p <<'END'\n{c}\nEND\n", "$p"))
_program("mapfile_procsub", lambda c: (f"mapfile -t a < <(echo {q(c)}); ", "${a[0]}"))
_program("printf_v", lambda c: (f"printf -v p %s {q(c)}; ", "$p"))
_program("declare_nameref", lambda c: (f"v={q(c)}; declare -n r=v; ", "$r"))
_program("let_arith_index", lambda c: (f"let i=2-1; a=(x {q(c)}); ", "${a[i]}"))
_program("special_underscore", lambda c: (f": {q(c)}; ", "$_"))

# -- Pathname expansion, paths, aliases, hash, command lookup ------------------------------
_program("glob_bracket", _external(lambda c: ("", f"{BIN}/{c[:-1]}[{c[-1]}]")))
_program("glob_question", _external(lambda c: ("", f"{BIN}/{c[:-1]}?")))
_program("extglob", _external(lambda c: ("shopt -s extglob\n", f"{BIN}/@({c}|no_such)")))
_program("absolute_path", _external(lambda c: ("", f"{BIN}/{c}")))
_program("dotdot_path", _external(lambda c: ("", f"/usr/lib/../bin/{c}")))
_program("alias", lambda c: (f"shopt -s expand_aliases\nalias za={q(c)}\n", "za"))
_program("hash_p", _external(lambda c: (f"hash -p {BIN}/{c} zh; ", "zh")))
_program("command_builtin", lambda c: ("", f"command {c}"))
_program("command_p", lambda c: ("", f"command -p {c}"))
_program("builtin_keyword", lambda c: ("", f"builtin {c}") if c == ":" else None)
_program("function_named_other", lambda c: (f'zn() {{ {q(c)} "$@"; }}; ', "zn"))
_program("function_shadowing", _external(lambda c: (f'ls() {{ command {q(c)} "$@"; }}; ', "ls")))

# -- Programs that run their argument list -------------------------------------------------
for _name, _prefix in (
        ("runner_env", "env"), ("runner_env_i", "env -i PATH=/usr/bin:/bin"),
        ("runner_env_dashdash", "env --"), ("runner_timeout", "timeout 4"),
        ("runner_nice", "nice -n 1"), ("runner_nohup", "nohup"), ("runner_setsid", "setsid -w"),
        ("runner_stdbuf", "stdbuf -o0"), ("runner_ionice", "ionice -c 3"),
        ("runner_taskset", "taskset -c 0"), ("runner_flock", "flock /tmp/oracle.lock"),
        ("runner_xargs_empty_input", "xargs -a /dev/null"), ("runner_unshare", "unshare -U --"),
):
    _program(_name, _external(lambda c, r=_prefix: ("", f"{r} {c}")))
for _name, _prefix in (("time_keyword_simple", "time"), ("time_posix", "time -p"),
                       ("bang_simple", "!"), ("exec_simple", "exec")):
    _program(_name, lambda c, r=_prefix: ("", f"{r} {c}"))


def _argv(p: Payload) -> str:
    return " ".join(q(a) for a in p.argv)


@_word("brace_expansion_argv")
def _brace(p: Payload) -> str | None:
    if len(p.argv) < 2 or any("," in a or "{" in a for a in p.argv):
        return None
    return p.render("", ("{" + ",".join(q(a) for a in p.argv) + "}",))


@_word("array_all_elements")
def _array_all(p: Payload) -> str | None:
    return p.render(f"a=({_argv(p)}); ", ('"${a[@]}"',))


@_word("set_positional")
def _set_positional(p: Payload) -> str | None:
    return p.render(f"set -- {_argv(p)}; ", ('"$@"',))


@_word("set_then_shift")
def _set_shift(p: Payload) -> str | None:
    return p.render(f"set -- x {_argv(p)}; shift; ", ('"$@"',))


@_word("dollar_star_unquoted")
def _dollar_star(p: Payload) -> str | None:
    return p.render(f"set -- {_argv(p)}; ", ("$*",))


@_word("ifs_split")
def _ifs_split(p: Payload) -> str | None:
    if any("," in a for a in p.argv):
        return None
    return p.render(f"IFS=,; c={q(','.join(p.argv))}; ", ("$c",))


@_word("ifs_newline_split")
def _ifs_newline(p: Payload) -> str | None:
    return p.render(f"IFS=$'\\n'; c=$'{hex_escaped(chr(10).join(p.argv))}'; ", ("$c",))


@_word("pe_replace_then_split")
def _replace_split(p: Payload) -> str | None:
    if any("_" in a or " " in a for a in p.argv):
        return None
    return p.render(f"c={q('_'.join(p.argv))}; ", ("${c//_/ }",))


@_word("bash_c_dollar_zero")
def _dollar_zero(p: Payload) -> str | None:
    return p.render("", ("bash", "-c", q('"$0" "$@"'), _argv(p)))


@_word("sh_c_positional")
def _sh_positional(p: Payload) -> str | None:
    return p.render("", ("sh", "-c", q('"$@"'), "sh", _argv(p)))


@_word("xargs_last_argument")
def _xargs_last(p: Payload) -> str | None:
    if len(p.argv) < 2 or p.argv[0] == ":":
        return None
    head = " ".join(q(a) for a in p.argv[:-1])
    return f"{p.pre}echo {q(p.argv[-1])} | xargs {head}{p.redir}"


@_word("xargs_I_replace")
def _xargs_i(p: Payload) -> str | None:
    if len(p.argv) < 2 or p.argv[0] == ":":
        return None
    head = " ".join(q(a) for a in p.argv[:-1])
    return f"{p.pre}echo {q(p.argv[-1])} | xargs -I{{}} {head} {{}}{p.redir}"


@_word("xargs_null_argv")
def _xargs_null(p: Payload) -> str | None:
    return f"{p.pre}printf '%s\\0' {_argv(p)} | xargs -0 env{p.redir}"


@_word("find_exec_argv")
def _find_exec(p: Payload) -> str | None:
    return f"{p.pre}find . -maxdepth 0 -exec {_argv(p)} \\;{p.redir}"


@_word("find_execdir_argv")
def _find_execdir(p: Payload) -> str | None:
    return f"{p.pre}find . -maxdepth 0 -execdir {_argv(p)} \\;{p.redir}"


@_word("find_ok_argv")
def _find_ok(p: Payload) -> str | None:
    return f"{p.pre}yes | find . -maxdepth 0 -ok {_argv(p)} \\;{p.redir}"


@_word("subshell_exec_a")
def _exec_a(p: Payload) -> str | None:
    return f"{p.pre}(exec -a other {_argv(p)}){p.redir}"


@_word("redirection_first")
def _redir_first(p: Payload) -> str | None:
    return p.render("", (">/dev/null", *(q(a) for a in p.argv)))


# -- Redirections: the same truncation through other operators ---------------------------
def _redirection(name: str, rewrite: Callable[[Payload, str], str]) -> None:
    def fn(p: Payload) -> str | None:
        if not p.redir.startswith(" > "):
            return None
        return p.pre + rewrite(p, p.redir[3:])
    _word(name)(fn)


_redirection("redir_clobber", lambda p, t: f"{_argv(p)} >| {t}")
_redirection("redir_fd1", lambda p, t: f"{_argv(p)} 1> {t}")
_redirection("redir_amp", lambda p, t: f"{_argv(p)} &> {t}")
_redirection("redir_first", lambda p, t: f"> {t} {_argv(p)}")
_redirection("redir_bare", lambda p, t: f"> {t}")
_redirection("redir_exec_fd", lambda p, t: f"exec 3> {t}; {_argv(p)} >&3")
_redirection("redir_named_fd", lambda p, t: f"exec {{fd}}> {t}; {_argv(p)} >&$fd")
_redirection("redir_variable_target", lambda p, t: f"t={t}; {_argv(p)} > \"$t\"")
_redirection("redir_glob_target", lambda p, t: f"{_argv(p)} > {t[:-1]}?")
_redirection("redir_dup_then_file", lambda p, t: f"{_argv(p)} 2>&1 > {t}")


# -- Arguments: the path a command acts on, hidden ----------------------------------------
def _argument(name: str, rewrite: Callable[[str], tuple[str, str]]) -> None:
    def fn(p: Payload) -> str | None:
        spots = [i for i, a in enumerate(p.argv) if i and a in WORKSPACE_PATHS]
        if not spots:
            return None
        i = spots[-1]
        setup, word = rewrite(p.argv[i])
        words = tuple(word if j == i else q(a) for j, a in enumerate(p.argv))
        return p.render(setup, words)
    _word(name)(fn)


_argument("arg_tilde_plus", lambda a: ("", "~+/" + q(a)))
_argument("arg_pwd", lambda a: ("", '"$PWD"/' + q(a)))
_argument("arg_glob_bracket", lambda a: ("", f"[{a[0]}]{a[1:]}" if a != "." else "[.]"))
_argument("arg_glob_question", lambda a: ("", a[:-1] + "?" if len(a) > 1 else "."))
_argument("arg_ansi_c_hex", lambda a: ("", f"$'{hex_escaped(a)}'"))
_argument("arg_cmdsub", lambda a: ("", f"$(echo {q(a)})"))
_argument("arg_brace_extra", lambda a: ("", "{" + q(a) + ",no_such}"))
_argument("arg_variable", lambda a: (f"t={q(a)}; ", '"$t"'))
_argument("arg_pe_default", lambda a: ("", '"${unset_v:-' + a + '}"'))
_argument("arg_cmdsub_ls", lambda a: ("", f"$(ls -d {q(a)})"))


_program("runner_strace", _external(lambda c: ("", f"strace -f -o /dev/null {c}")))


@_word("runner_env_S")
def _env_s(p: Payload) -> str | None:
    return p.render("", ("env", "-S", q(_argv(p))))


# -- Decoys: the payload's program name mapped to something harmless -----------------------
DECOYS: dict[str, Callable[[str], str]] = {
    "function": lambda p: f"{p}() {{ :; }}\n",
    "exported_function": lambda p: f"{p}() {{ :; }}; export -f {p}\n",
    "alias": lambda p: f"shopt -s expand_aliases; alias {p}=:\n",
    "hash_p": lambda p: f"hash -p {BIN}/true {p}\n",
    "hash_p_then_reset": lambda p: f"hash -p {BIN}/true {p}; hash -r\n",
    "path_link": lambda p: f"mkdir -p /tmp/dk; ln -sf {BIN}/true /tmp/dk/{p}; "
                           "PATH=/tmp/dk:$PATH\n",
}
"""Set-ups that make a program's name run something harmless, each only where bash applies
it: a function or an alias only for the shell's own lookups (not ``xargs rm``, ``env rm``, a
new shell), an exported function only in a new bash (not dash), ``hash -p`` only until the
table is emptied (``hash -r``, any assignment to PATH). Put before a payload's command, the
real program may still run."""
VARIABLE_DECOYS: dict[str, tuple[str, str]] = {
    "unexported_variable": ("c=:\n", "$c PAYLOAD"),
    "exported_variable": ("export c=:\n", "$c PAYLOAD"),
    "exported_then_unexported": ("export c=:; export -n c\n", "$c PAYLOAD"),
    "local_in_function": ("c=:; f() { local c; CMD\n}\n", "$c PAYLOAD"),
    "uppercase_attribute": ("declare -u c\n", "c=PROGRAM; $c ARGS"),
    "uppercase_attribute_of_a_local": ("f() { declare -u c; }; f\n", "c=PROGRAM; $c ARGS"),
    "set_where_that_may_not_run": ("[ -e nosuch ] && c=:\n", "$c PAYLOAD"),
    "exported_in_a_branch_not_taken": ("if [ -e nosuch ]; then export c=:; fi\n",
                                       "$c PAYLOAD"),
}
"""Set-ups of a variable ``c``, and how the payload is then called, that keep it harmless
only where the code sees the variable as set: ``: rm a.txt``, or ``RM a.txt`` (no such
program) under ``declare -u``. A new shell holds what was exported, and no attribute;
``local c`` is a new, empty ``c``; a function's ``declare`` is a local, gone after it; what
a branch not taken sets stays unset, so ``$c`` is no word and ``rm`` the program.
``CMD``, when there, is where the command goes (then ``f`` is called)."""
