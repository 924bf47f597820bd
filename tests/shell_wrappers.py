"""Command transformations: constructs that wrap a whole command and still run it.

Compound commands and lists, functions, redirections of a group, builtins that run code
(``eval``, ``source``, ``trap``, ``alias``...), shells reading code from ``-c``, stdin, here-docs
or process substitution, encodings decoded into a shell, external programs that run another
program (``awk``, ``sed e``, ``make``, ``split --filter``, ``git -c alias``...), and code run by
expansions, hooks and variables bash reads (array subscripts, ``PS4``, ``ENV``, ``LESSOPEN``,
``core.fsmonitor``...). Each is a named ``str -> str`` function over the command's text.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
from collections.abc import Callable

from tests.shell_constructs import Transform, hex_escaped, octal_escaped, q

CmdFn = Callable[[str], str | None]
WRAPPERS: list[Transform] = []
"""The command transformations, in the order they are drawn from."""


def _cmd(name: str) -> Callable[[CmdFn], CmdFn]:
    def add(fn: CmdFn) -> CmdFn:
        WRAPPERS.append(Transform(name, "cmd", fn))
        return fn
    return add


# -- Compound commands and lists ----------------------------------------------------------
def _wrap(name: str, template: str) -> None:
    _cmd(name)(lambda c, t=template: t.replace("CMD", c))


for _name, _template in (
        ("group", "{ CMD\n}"), ("subshell", "(CMD\n)"), ("if_then", "if true; then CMD\nfi"),
        ("if_condition", "if CMD\nthen :; fi"), ("while_break", "while true; do CMD\nbreak; done"),
        ("until_break", "until false; do CMD\nbreak; done"), ("for_in", "for i in 1; do CMD\ndone"),
        ("for_arith", "for ((i = 0; i < 1; i++)); do CMD\ndone"),
        ("case", "case x in x) CMD\n;; esac"),
        ("select", "select i in a; do CMD\nbreak; done <<< 1"),
        ("and_list", "true && { CMD\n}"), ("or_list", "false || { CMD\n}"),
        ("negation", "! { CMD\n}"), ("dbracket_cond", "[[ -n x ]] && { CMD\n}"),
        ("arith_cond", "(( 1 + 1 )) && { CMD\n}"), ("pipe_into", "true | { CMD\n}"),
        ("pipe_from", "{ CMD\n} | cat"), ("background_wait", "{ CMD\n} & wait"),
        ("coproc", "coproc { CMD\n}\nwait"), ("time_keyword", "time { CMD\n}"),
        ("function_posix", "f() { CMD\n}\nf"), ("function_keyword", "function f { CMD\n}\nf"),
        ("function_nested", "f() { g() { CMD\n}; g; }\nf"),
        ("function_subshell_body", "f() (CMD\n)\nf"),
        ("function_redefined", "f() { :; }\nf() { CMD\n}\nf"),
        ("declare_f_reeval", "f() { CMD\n}\ng=$(declare -f f); unset -f f; eval \"$g\"; f"),
        ("export_f", "f() { CMD\n}\nexport -f f; bash -c f"),
        ("redirect_devnull", "{ CMD\n} > /dev/null 2>&1"),
        ("redirect_amp", "{ CMD\n} &> /dev/null"), ("redirect_clobber", "{ CMD\n} >| /dev/null"),
        ("redirect_readwrite", "{ CMD\n} <> /dev/null"),
        ("redirect_swap_fds", "{ CMD\n} 3>&1 1>&2 2>&3"),
        ("redirect_procsub_out", "{ CMD\n} > >(cat)"),
        ("exec_redirect_first", "exec > /dev/null\nCMD"),
        ("trap_debug_first", "trap 'trap - DEBUG' DEBUG\nCMD"),
):
    _wrap(_name, _template)


# -- Builtins that run code ---------------------------------------------------------------
def _delim(c: str) -> str:
    return "E" + hashlib.sha256(c.encode()).hexdigest()[:6]


def _b64(c: str) -> str:
    return base64.b64encode(c.encode()).decode()


def _watched(c: str) -> str:
    """What ``watch -g`` runs: the command, then a changing output so that it stops."""
    return f"bash -c {q(c)}; date +%N"


def _lines(c: str) -> str:
    return f"printf '%s\\n' {q(c)}"


for _name, _fn in (
        ("eval_quoted", lambda c: f"eval {q(c)}"),
        ("eval_variable", lambda c: f"c={q(c)}\neval \"$c\""),
        ("eval_ansi_c_hex", lambda c: f"eval $'{hex_escaped(c)}'"),
        ("eval_printf_octal", lambda c: f"eval \"$(printf '{octal_escaped(c)}')\""),
        ("eval_concat", lambda c: f"a={q(c[:len(c) // 2])}; b={q(c[len(c) // 2:])}\neval \"$a$b\""),
        ("eval_transform_E", lambda c: f"v='{hex_escaped(c)}'\neval \"${{v@E}}\""),
        ("builtin_eval", lambda c: f"builtin eval {q(c)}"),
        ("command_eval", lambda c: f"command eval {q(c)}"),
        ("enable_eval", lambda c: f"enable eval\neval {q(c)}"),
        ("read_then_eval", lambda c: f"IFS= read -r -d '' c <<< {q(c)}\neval \"$c\""),
        ("mapfile_then_eval",
         lambda c: f"mapfile L <<< {q(c)}\neval \"$(printf %s \"${{L[@]}}\")\""),
        ("printf_v_then_eval", lambda c: f"printf -v c %s {q(c)}\neval \"$c\""),
        ("nameref_then_eval", lambda c: f"v={q(c)}; declare -n r=v\neval \"$r\""),
        ("array_then_eval", lambda c: f"a=({q(c)})\neval \"${{a[0]}}\""),
        ("source_procsub", lambda c: f"source <({_lines(c)})"),
        ("dot_procsub", lambda c: f". <(echo {q(c)})"),
        ("source_stdin_herestring", lambda c: f"source /dev/stdin <<< {q(c)}"),
        ("source_written_file", lambda c: f"{_lines(c)} > /tmp/s.sh\n. /tmp/s.sh"),
        ("exec_fd_then_source",
         lambda c: f"exec 3> /tmp/s.sh\n{_lines(c)} >&3\nexec 3>&-\nsource /tmp/s.sh"),
        ("trap_exit", lambda c: f"trap {q(c)} EXIT"),
        ("trap_debug", lambda c: f"trap {q('trap - DEBUG' + chr(10) + c)} DEBUG\n:"),
        ("trap_err", lambda c: f"trap {q('trap - ERR' + chr(10) + c)} ERR\nfalse"),
        ("alias_whole_command", lambda c: f"shopt -s expand_aliases\nalias zw={q(c)}\nzw"),
        ("bash_env", lambda c: f"{_lines('unset BASH_ENV' + chr(10) + c)} > /tmp/e\n"
                               "BASH_ENV=/tmp/e bash -c :"),
        ("env_exported_function",
         lambda c: f"env {q('BASH_FUNC_zf%%=() { ' + c + chr(10) + '}')} bash -c zf"),
        ("hash_p_bash", lambda c: f"hash -p /usr/bin/bash zb; zb -c {q(c)}"),
        ("bash_c_dollar_zero_eval", lambda c: f"bash -c 'eval \"$0\"' {q(c)}"),
):
    _cmd(_name)(_fn)


# -- Shells reading code: -c, stdin, here-docs, process substitution, encodings ----------
for _name, _fn in (
        ("bash_c", lambda c: f"bash -c {q(c)}"),
        ("sh_c", lambda c: f"sh -c {q(c)}"),
        ("exec_bash_c", lambda c: f"exec bash -c {q(c)}"),
        ("bash_heredoc", lambda c: f"bash <<'{_delim(c)}'\n{c}\n{_delim(c)}\n"),
        ("bash_heredoc_dash", lambda c: f"bash <<-'{_delim(c)}'\n{c}\n{_delim(c)}\n"),
        ("source_heredoc", lambda c: f"source /dev/stdin <<'{_delim(c)}'\n{c}\n{_delim(c)}\n"),
        ("bash_herestring", lambda c: f"bash <<< {q(c)}"),
        ("bash_procsub_file", lambda c: f"bash <({_lines(c)})"),
        ("bash_stdin_procsub", lambda c: f"bash < <({_lines(c)})"),
        ("bash_fd_herestring", lambda c: f"exec 3<<< {q(c)}\nbash <&3"),
        ("procsub_output_to_bash", lambda c: f"{_lines(c)} > >(bash); wait $!"),
        ("base64_pipe", lambda c: f"echo {_b64(c)} | base64 -d | bash"),
        ("base64_eval", lambda c: f"eval \"$(echo {_b64(c)} | base64 -d)\""),
        ("rev_pipe", lambda c: f"{_lines(c[::-1])} | rev | bash" if "\n" not in c else None),
        ("rot13_pipe",
         lambda c: f"{_lines(codecs.encode(c, 'rot13'))} | tr A-Za-z N-ZA-Mn-za-m | bash"),
        ("xxd_pipe", lambda c: f"echo {c.encode().hex()} | xxd -r -p | bash"),
):
    _cmd(_name)(_fn)


# -- External programs that run another program -------------------------------------------
for _name, _fn in (
        ("awk_pipe_to_bash", lambda c: f"awk 'BEGIN {{ print ARGV[1] | \"bash\" }}' {q(c)}"),
        ("awk_system", lambda c: f"awk 'BEGIN {{ system(ARGV[1]) }}' {q('bash -c ' + q(c))}"),
        ("sed_e",
         lambda c: f"sed -n {q('1e bash -c ' + q(c))} <<< x" if "\n" not in q(c) else None),
        ("perl_system", lambda c: f"perl -e 'system(\"bash\", \"-c\", $ARGV[0])' {q(c)}"),
        ("python_subprocess", lambda c: "python3 -c 'import subprocess, sys; subprocess.run"
                                         f"([\"bash\", \"-c\", sys.argv[1]])' {q(c)}"),
        ("xargs_bash_c", lambda c: f"printf '%s\\0' {q(c)} | xargs -0 bash -c"),
        ("xargs_I_bash_c", lambda c: f"echo x | xargs -I{{}} bash -c {q(c)}"),
        ("find_exec_bash", lambda c: f"find . -maxdepth 0 -exec bash -c {q(c)} \\;"),
        ("find_execdir_bash", lambda c: f"find . -maxdepth 0 -execdir bash -c {q(c)} \\;"),
        ("find_ok_bash", lambda c: f"yes | find . -maxdepth 0 -ok bash -c {q(c)} \\;"),
        ("timeout_bash", lambda c: f"timeout 4 bash -c {q(c)}"),
        ("nice_bash", lambda c: f"nice bash -c {q(c)}"),
        ("nohup_bash", lambda c: f"nohup bash -c {q(c)}"),
        ("setsid_bash", lambda c: f"setsid -w bash -c {q(c)}"),
        ("stdbuf_bash", lambda c: f"stdbuf -oL bash -c {q(c)}"),
        ("flock_c", lambda c: f"flock /tmp/oracle.lock -c {q('bash -c ' + q(c))}"),
        ("env_bash", lambda c: f"env bash -c {q(c)}"),
        ("script_c", lambda c: f"script -qec {q('bash -c ' + q(c))} /dev/null"),
        ("split_filter", lambda c: f"echo x | split --filter={q('bash -c ' + q(c))}"),
        ("tar_to_command", lambda c: "tar c -C / etc/passwd 2>/dev/null | tar x "
                                      f"--to-command={q('bash -c ' + q(c))}"),
        ("sort_compress_program",
         lambda c: f"printf '#!/bin/bash\\n%s\\nexec cat\\n' {q(c)} > /tmp/z; chmod +x /tmp/z; "
                   "seq 30000 | sort -S 64K -T /tmp --compress-program=/tmp/z > /dev/null"),
        ("ed_bang", lambda c: f"printf '%s\\n' {q('!bash -c ' + q(c))} q | ed -s"
         if "\n" not in q(c) else None),
        ("m4_syscmd",
         lambda c: f"printf '%s\\n' {q('syscmd(`bash -c ' + q(c) + chr(39) + ')')} | m4"),
        ("git_alias", lambda c: f"git -c alias.zg={q('!bash -c ' + q(c))} zg"),
        ("make_recipe", lambda c: f"printf 'all:\\n\\t@bash -c \"$$C\"\\n' | C={q(c)} make -sf -"),
        ("watch_in_script",
         lambda c: f"TERM=dumb script -qec {q('watch -n 0.1 -g ' + q(_watched(c)))} /dev/null"),
):
    _cmd(_name)(_fn)


# -- Code run by expansions, hooks and variables bash reads --------------------------------
def _no_git_config(c: str) -> str:
    """``c`` without the ``-c`` settings git hands down (a git in a hook would run it again)."""
    return f"unset GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT\n{c}"


def _sub(c: str) -> str:
    """``c`` as a command substitution (the newline keeps a closing here-doc delimiter)."""
    return f"$({c}\n)"


for _name, _fn in (
        ("arith_subscript_cmdsub", lambda c: f"x={q('a[' + _sub(c) + ']')}; (( x )) || :"),
        ("printf_v_subscript", lambda c: f"printf -v {q('a[' + _sub(c) + ']')} x"),
        ("test_v_subscript", lambda c: f"test -v {q('a[' + _sub(c) + ']')}"),
        ("declare_subscript", lambda c: f"declare {q('a[' + _sub(c) + ']=1')}"),
        ("pe_transform_P_cmdsub", lambda c: f"v={q(_sub(c))}; : \"${{v@P}}\""),
        ("ps4_xtrace", lambda c: f"PS4={q(_sub(c))}; set -x; :; set +x"),
        ("command_not_found_handle",
         lambda c: f"command_not_found_handle() {{ {c}\n}}\nno_such_program_x"),
        ("mapfile_callback", lambda c: f"mapfile -C {q(c + chr(10) + ':')} -c 1 m <<< x"),
        ("compgen_C", lambda c: f"compgen -C {q(c + chr(10) + ':')} x > /dev/null"),
        ("trap_signal_self", lambda c: f"trap {q(c)} USR1; kill -USR1 $$"),
        ("sh_interactive_env", lambda c: f"{_lines(c)} > /tmp/env; ENV=/tmp/env sh -i < /dev/null"),
        ("bash_rcfile", lambda c: f"{_lines(c)} > /tmp/rc; bash --rcfile /tmp/rc -i < /dev/null"),
        ("cmdsub_in_noop", lambda c: f": \"{_sub(c)}\""),
        ("cmdsub_in_assignment", lambda c: f"x={_sub(c)}"),
        ("cmdsub_in_for_list", lambda c: f"for i in {_sub(c)}; do :; done"),
        ("cmdsub_in_case_word", lambda c: f"case {_sub(c)} in *) ;; esac"),
        ("cmdsub_in_local", lambda c: f"f() {{ local x={_sub(c)}; }}\nf"),
        ("cmdsub_in_replacement", lambda c: f"v=a; : \"${{v/a/{_sub(c)}}}\""),
        ("procsub_input", lambda c: f"cat < <({c}\n) > /dev/null"),
        ("heredoc_body_cmdsub",
         lambda c: f"cat > /dev/null <<{_delim(c)}\n{_sub(c)}\n{_delim(c)}\n"),
        ("bash_s_stdin", lambda c: f"bash -s -- x <<< {q(c)}"),
        ("sh_dev_stdin", lambda c: f"sh /dev/stdin <<< {q(c)}"),
        ("sh_heredoc_unquoted", lambda c: f"sh <<{_delim(c)}\n{c}\n{_delim(c)}\n"),
        ("heredoc_backquote", lambda c: None if "`" in c or "\\" in c else
         f"cat > /dev/null <<{_delim(c)}\n`{c}\n`\n{_delim(c)}\n"),
        ("case_default_branch", lambda c: f"case x in y) :;; *) {c}\n;; esac"),
        ("case_fallthrough", lambda c: f"case x in x) :;& y) {c}\n;; esac"),
        ("case_test_on", lambda c: f"case x in x) :;;& *) {c}\n;; esac"),
        ("function_eval_arg", lambda c: f"f() {{ eval \"$1\"; }}\nf {q(c)}"),
        ("function_runs_args", lambda c: f"run() {{ \"$@\"; }}\nrun bash -c {q(c)}"),
        ("function_local_nameref",
         lambda c: f"f() {{ local -n r=$1; eval \"$r\"; }}\nv={q(c)}; f v"),
        ("assoc_eval", lambda c: f"declare -A m=([k]={q(c)}); eval \"${{m[k]}}\""),
        ("printf_eval", lambda c: f"eval \"$(printf '%s' {q(c)})\""),
        ("prefix_strip_eval", lambda c: f"x={q('_' + c)}; eval \"${{x#_}}\""),
        ("written_script", lambda c: f"printf '%s\\n' {q(c)} > /tmp/s.sh; bash /tmp/s.sh"),
        ("written_on_path",
         lambda c: f"mkdir -p /tmp/b; printf '%s\\n' {q(c)} > /tmp/b/ls; chmod +x /tmp/b/ls; "
                   "PATH=/tmp/b:$PATH ls"),
):
    _cmd(_name)(_fn)

for _name, _fn in (
        ("git_fsmonitor",
         lambda c: f"git -c core.fsmonitor={q('bash -c ' + q(_no_git_config(c)) + '; false')} "
                   "status"),
        ("less_lessopen",
         lambda c: f"LESSOPEN={q('|bash -c ' + q(c) + '; cat %s')} less README.md > /dev/null"),
        ("tar_compress_program",
         lambda c: f"tar -cf /tmp/t.tar -I {q('bash -c ' + q(c) + ' #')} README.md"),
        ("ssh_proxycommand", lambda c: f"ssh -o ProxyCommand={q('bash -c ' + q(c))} x true"),
        ("vi_bang", lambda c: f"vi -es -c {q('!bash -c ' + q(c))} -c q"
         if "\n" not in q(c) else None),
        ("run_parts",
         lambda c: f"mkdir -p /tmp/rp; printf '#!/bin/bash\\n%s\\n' {q(c)} > /tmp/rp/x; "
                   "chmod +x /tmp/rp/x; run-parts /tmp/rp"),
        ("strace_bash", lambda c: f"strace -f -o /dev/null bash -c {q(c)}"),
        ("zip_test_command",
         lambda c: f"zip -q /tmp/z.zip README.md -T -TT {q('bash -c ' + q(c) + ' #')}"),
):
    _cmd(_name)(_fn)
