"""The construct part of the shell corpus: every construct crossed with every program.

Built, not collected: each template (a way bash can reach a program: a variable, an array,
``set --``, ``printf -v``, a custom IFS, an arithmetic context, a here-string into a shell, a
database shell's escape...) is filled with each program of three kinds: destructive (must be
``deny``: a hidden destructive program answered ``ask`` would run under ``--approval auto``),
read-only (``allow``, or ``ask`` where the construct itself is one a careful person looks at)
and writing (``ask``). This part is for tuning; ``tests/corpus/constructs_heldback.yaml`` is the
held-back one, written by hand and never tuned against.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from tests.corpus_scoring import Item, item_id, load


@dataclass(frozen=True, slots=True)
class Program:
    argv: tuple[str, ...]
    kind: str
    """``destructive``, ``read`` or ``write``."""


PROGRAMS = (
    Program(("rm", "-rf", "src"), "destructive"),
    Program(("git", "reset", "--hard"), "destructive"),
    Program(("shred", "-u", "a.txt"), "destructive"),
    Program(("git", "clean", "-fdx"), "destructive"),
    Program(("find", ".", "-delete"), "destructive"),
    Program(("truncate", "-s", "0", "README.md"), "destructive"),
    Program(("git", "checkout", "--", "."), "destructive"),
    Program(("git", "stash", "drop"), "destructive"),
    Program(("dd", "if=/dev/zero", "of=a.txt"), "destructive"),
    Program(("git", "push", "--force"), "destructive"),
    Program(("rm", "-r", "src"), "destructive"),
    Program(("mv", "src", "/dev/null"), "destructive"),
    Program(("git", "branch", "-D", "main"), "destructive"),
    Program(("chmod", "-R", "000", "."), "destructive"),
    Program(("sqlite3", "app.db", "drop table t"), "destructive"),
    Program(("psql", "-c", "drop table t"), "destructive"),
    Program(("kubectl", "delete", "pod", "web"), "destructive"),
    Program(("docker", "rm", "-f", "web"), "destructive"),
    Program(("cp", "/dev/null", "a.txt"), "destructive"),
    Program(("ls", "-la"), "read"),
    Program(("cat", "a.txt"), "read"),
    Program(("grep", "-n", "x", "a.txt"), "read"),
    Program(("wc", "-l", "README.md"), "read"),
    Program(("head", "-3", "b.txt"), "read"),
    Program(("git", "status"), "read"),
    Program(("touch", "new.txt"), "write"),
    Program(("mkdir", "-p", "build"), "write"),
    Program(("sed", "-i", "s/x/y/", "a.txt"), "write"),
    Program(("curl", "-sO", "https://example.com/x.tgz"), "write"),
    Program(("python3", "src/app.py"), "write"),
)

# Placeholders: {cmd} the whole command, {p} the program, {args} its arguments, {csv} the
# words joined by commas, {q} the command single-quoted.
MODELLED = (
    ("plain", "{cmd}"),
    ("variable", "c={p}; $c {args}"),
    ("quoted variable", 'c={p}; "$c" {args}'),
    ("braced variable", "c={p}; ${{c}} {args}"),
    ("declare", "declare c={p}; $c {args}"),
    ("export", "export c={p}; $c {args}"),
    ("appended variable", "c={p0}; c+={p1}; $c {args}"),
    ("default value", "${{UNSET_NAME:-{p}}} {args}"),
    ("array", 'a=({cmd}); "${{a[@]}}"'),
    ("array star", "a=({cmd}); ${{a[*]}}"),
    ("array element", 'a=(x {p}); "${{a[1]}}" {args}'),
    ("element assignment", "t[2]={p}; ${{t[2]}} {args}"),
    ("array append", 'a=({p}); a+=({args}); "${{a[@]}}"'),
    ("declare -a", 'declare -a a=({cmd}); "${{a[@]}}"'),
    ("set --", 'set -- {cmd}; "$@"'),
    ("printf -v", "printf -v c %s {p}; $c {args}"),
    ("time before an assignment", "c=ls; time c={p}; $c {args}"),
    ("PATH prefix of system folders", "PATH=/usr/bin:/bin {cmd}"),
    ("parallel over a ::: list", "parallel {q} ::: x"),
    ("env -i PATH of system folders", "env -i PATH=/usr/bin:/bin {cmd}"),
    ("PAGER of man", "PAGER={q} man ls"),
    ("man -P", "man -P {q} ls"),
    ("GIT_PAGER of git log", "GIT_PAGER={q} git log -1"),
    ("git -c core.pager", "git -c core.pager={q} log -1"),
    ("env MANPAGER", "env MANPAGER={q} man ls"),
    ("$0 -c", "$0 -c {q}"),
    ("bash -c", "bash -c {q}"),
    ("split --filter (each piece on the command's input)", "split -n2 --filter={q} a.txt"),
    ("here-string into bash", "bash <<< {q}"),
    ("here-doc into sh", "sh <<'E'\n{cmd}\nE"),
    ("eval", "eval {q}"),
    ("trap", "trap {q} EXIT"),
    ("subshell", "( {cmd} )"),
    ("group", "{{ {cmd}; }}"),
    ("if", "if [ -f a.txt ]; then {cmd}; fi"),
    ("test and", "test -d src && {cmd}"),
    ("loop over a glob", "for f in src/*.py; do {cmd}; done"),
    ("pipeline", "{cmd} | sort | head -5"),
    ("process substitution", "diff <({cmd}) a.txt"),
    ("arithmetic loop", "for (( i=0; i<2; i++ )); do {cmd}; done"),
    ("arithmetic test", "n=2; (( n > 1 )) && {cmd}"),
    ("[[ -gt ]] on a count", '[[ $(wc -l < a.txt) -gt 0 ]] && {cmd}'),
    ("env", "env {cmd}"),
    ("command", "command {cmd}"),
    ("time", "time {cmd}"),
    ("nohup", "nohup {cmd} > /dev/null"),
    ("array of arguments", 'args=({args}); {p} "${{args[@]}}"'),
    ("variable set late in a loop", "c=echo; for i in 1 2; do $c {args}; c={p}; done"),
    ("array set late in a loop", 'a=(echo); n=0; while (( n < 2 )); do "${{a[@]}}"; '
     'a=({cmd}); (( n++ )); done'),
    ("default shell", "${{SHELL:-bash}} -c {q}"),
    ("exec", "exec {cmd}"),
    ("find -exec", "find . -maxdepth 0 -exec {cmd} \\;"),
    ("xargs", "echo {args} | xargs {p}"),
    ("source /dev/stdin", "source /dev/stdin <<< {q}"),
    ("bash -s here-doc", "bash -s <<'E'\n{cmd}\nE"),
    ("while read loop", "while read -r l; do {cmd}; done < a.txt"),
    ("input opened read-write", "while read -r l; do {cmd}; done <> a.txt"),
    ("case", "case x in x) {cmd};; esac"),
    ("negation", "! {cmd}"),
    ("background", "{cmd} &"),
    ("redirected stderr", "{cmd} 2>/dev/null"),
    # prefixes and wrappers, with their options
    ("command -p", "command -p {cmd}"),
    ("command --", "command -- {cmd}"),
    ("builtin command", "builtin command {cmd}"),
    ("exec -a", "exec -a name {cmd}"),
    ("exec -c", "exec -c {cmd}"),
    ("exec -l", "exec -l {cmd}"),
    ("env -i", "env -i {cmd}"),
    ("env -u", "env -u HOME {cmd}"),
    ("env -C", "env -C . {cmd}"),
    ("env --", "env -- {cmd}"),
    ("env -S", "env -S {q}"),
    ("env -S joined", "env -S{q}"),
    ("nice -n", "nice -n 5 {cmd}"),
    ("timeout -k", "timeout -k 5 10 {cmd}"),
    ("timeout --preserve-status", "timeout --preserve-status 10 {cmd}"),
    ("stdbuf -oL", "stdbuf -oL {cmd}"),
    ("setsid -f", "setsid -f {cmd}"),
    ("ionice -c3", "ionice -c3 {cmd}"),
    ("taskset -c", "taskset -c 0 {cmd}"),
    ("chrt -o", "chrt -o 0 {cmd}"),
    ("flock", "flock a.txt {cmd}"),
    ("flock -c", "flock a.txt -c {q}"),
    ("nested wrappers", "nohup nice -n 1 timeout 5 stdbuf -oL {cmd}"),
    ("watch -n", "watch -n 1 {q}"),
    ("path to the program", "/usr/bin/{cmd}"),
    # programs that run their arguments or input
    ("xargs -I", "echo . | xargs -I{{}} {cmd}"),
    ("xargs -0", "printf '%s\\0' {args} | xargs -0 {p}"),
    ("xargs -n", "echo {args} | xargs -n 9 {p}"),
    ("xargs sh -c", "echo x | xargs sh -c {q}"),
    ("find -execdir", "find . -maxdepth 0 -execdir {cmd} \\;"),
    ("find -exec +", "find . -maxdepth 0 -exec {cmd} +"),
    ("find -ok", "find . -maxdepth 0 -ok {cmd} \\;"),
    ("find -exec sh -c", "find . -maxdepth 0 -exec sh -c {q} \\;"),
    # code given to eval, source, trap and nested shells
    ("eval of a concatenation", "eval {p0}''{p1} {args}"),
    ("eval of joined variables", 'a={p0}; b={p1}; eval "$a$b {args}"'),
    ("eval of a variable", 'x={q}; eval "$x"'),
    ("builtin eval", "builtin eval {q}"),
    (". /dev/stdin here-string", ". /dev/stdin <<< {q}"),
    ("source /dev/fd/0 here-doc", "source /dev/fd/0 <<'E'\n{cmd}\nE"),
    ("trap DEBUG", "trap {q} DEBUG"),
    ("trap ERR", "set -E; trap {q} ERR; false"),
    ("trap --", "trap -- {q} EXIT INT"),
    ("bash -c with $0", 'bash -c \'"$0" "$@"\' {cmd}'),
    ("sh -c with $@", 'sh -c \'"$@"\' _ {cmd}'),
    ("here-string into bash -s", "bash -s <<< {q}"),
    ("prefix variable into bash -c", "c={p} bash -c '$c {args}'"),
    ("exported variable into sh -c", "export c={p}; sh -c '$c {args}'"),
    # values that empty out, and more control flow
    ("unset variable", "c=echo; unset c; $c {cmd}"),
    ("empty variable", "c=; $c {cmd}"),
    ("until loop", "until true; do {cmd}; break; done"),
    ("select loop", "select x in a; do {cmd}; break; done < /dev/null"),
    ("elif", "if false; then :; elif true; then {cmd}; fi"),
    ("|| list", "false || {cmd}"),
    ("nested substitution", 'echo "$({cmd})"'),
    ("backticks", "echo `{cmd}`"),
    ("declare -l", "declare -l c={up}; $c {args}"),
    ("let on a number", "n=1; let n+=1; {cmd}"),
    ("[ -gt ] on a quoted count", '[ "$(wc -l < a.txt)" -gt 0 ] && {cmd}'),
    ("[[ -gt ]] on a quoted count", '[[ "$(wc -l < a.txt)" -gt 0 ]] && {cmd}'),
    ("quoting transformation", 'echo "${{HOME@Q}}"; {cmd}'),
    ("listing name references", "declare -n > /dev/null; {cmd}"),
    ("here-doc with a variable", "cat <<E\n$HOME\nE\n{cmd}"),
    ("indirect expansion as an argument", 'v=HOME; echo "${{!v}}"; {cmd}'),
    # values read by builtins, assigned by expansions, shifted
    ("read from a here-string", "read -r c <<< {p}; $c {args}"),
    ("read into two names", "read -r c rest <<< {q}; $c $rest"),
    ("read -a", 'read -ra w <<< {q}; "${{w[@]}}"'),
    ("read with a custom IFS", 'IFS=, read -ra w <<< {csv}; "${{w[@]}}"'),
    ("read from a here-doc", "read -r c <<E\n{p}\nE\n$c {args}"),
    ("mapfile from a here-doc", 'mapfile -t m <<E\n{p}\nE\n"${{m[0]}}" {args}'),
    ("readarray from a here-string", "readarray -t m <<< {p}; ${{m[0]}} {args}"),
    ("read in a loop over lines", "while read -r c; do $c {args}; done <<< {p}"),
    ("read from a pipe", "echo {p} | while read -r c; do $c {args}; done"),
    ("read in a piped group", "echo {p} | {{ read -r c; $c {args}; }}"),
    ("assigning default", ": ${{c:={p}}}; $c {args}"),
    ("assigning default in command position", "${{c:={p}}} {args}"),
    ("shift", 'set -- x {cmd}; shift; "$@"'),
    ("shift 2", "set -- x y {p}; shift 2; $1 {args}"),
    ("IFS prefix for eval", "IFS=_ eval {us}"),
    ("path with doubled slashes", "//usr//bin/{cmd}"),
    ("$\"..\" in command position", '$"{p}" {args}'),
    ("line continuation in the name", "{p0}\\\n{p1} {args}"),
    ("line continuation before arguments", "{p} \\\n{args}"),
    ("time -p", "time -p {cmd}"),
    ("|&", "{cmd} |& cat"),
    ("&>", "{cmd} &> /dev/null"),
    ("caller and wait", "caller; wait; {cmd}"),
    ("ulimit", "ulimit -n 256; {cmd}"),
    ("here-doc into sh, unquoted", "sh <<E\n{cmd}\nE"),
    ("here-doc into bash -s with arguments", "bash -s -- x <<'E'\n{cmd}\nE"),
    ("env through a variable", "c={p}; env $c {args}"),
    ("timeout through an array", 'a=({cmd}); timeout 5 "${{a[@]}}"'),
    ("nice through printf -v", "printf -v c %s {p}; nice $c {args}"),
    ("stdbuf through read", "read -r c <<< {p}; stdbuf -oL $c {args}"),
    ("nohup through a default", "nohup ${{X:-{p}}} {args} > /dev/null"),
    ("setsid through an array element", "a=(x {p}); setsid ${{a[1]}} {args}"),
    ("xargs -I with the program from input", "echo {p} | xargs -I{{}} env {{}} {args}"),
    ("find -exec through a variable", "c={p}; find . -maxdepth 0 -exec $c {args} \\;"),
    # everyday constructs around the program
    ("[ -v ] on a name", "[ -v HOME ] && {cmd}"),
    ("[[ -v ]] on a variable's name", "v=HOME; [[ -v $v ]] && {cmd}"),
    ("[[ -eq ]] on a number", "n=3; [[ $n -eq 3 ]] && {cmd}"),
    ("$(( )) of numbers", "echo $(( 1 + 2 )); {cmd}"),
    ("brace sequence", "echo {{1..3}}; {cmd}"),
    ("tilde", "echo ~; {cmd}"),
    ("substring as an argument", 'x=abc; echo "${{x:1:1}}"; {cmd}'),
    ("case modification as an argument", 'x=abc; echo "${{x^^}}" "${{x,}}"; {cmd}'),
    ("pattern substitution as an argument", 'x=abc; echo "${{x/b/c}}" "${{x%c}}"; {cmd}'),
    ("$'..' as an argument", "echo $'a\\tb'; {cmd}"),
    ("glob as an argument", "ls src/*.py; {cmd}"),
    ("extglob as an argument", "shopt -s extglob\nls src/@(app|old).py; {cmd}"),
    ("default from a substitution as an argument", 'echo "${{UNSET_NAME:-$(pwd)}}"; {cmd}'),
    ("function keyword", "function f {{ {cmd}; }}"),
    ("compgen -W of words", "compgen -W 'a b' a; {cmd}"),
    ("kill -l", "kill -l > /dev/null; {cmd}"),
    ("$_ of the previous command", "echo {p}; $_ {args}"),
    ("bash -c of a joined array", 'a=({cmd}); bash -c "${{a[*]}}"'),
    ("eval of a joined array", 'a=({cmd}); eval "${{a[*]}}"'),
    ("printf -v with a precision", "printf -v c '%.{n}s' {p}x; $c {args}"),
    ("printf -v with a width", "printf -v c '%-{n}s' {p}; $c {args}"),
    ("$_ at start-up", "$_ -c {q}"),
    ("loop over a brace list", "for c in {{echo,{p}}}; do $c {args}; done"),
    ("printf -vNAME", "printf -vc %s {p}; $c {args}"),
    ("value from a here-doc through cat", "c=$(cat <<'E'\n{p}\nE\n); $c {args}"),
    ("compgen -W of a substitution", "compgen -W '$({cmd})' x"),
    ("complete -W of a substitution", "complete -W '$({cmd})' x"),
    ("substitution in ${{x/../..}}", 'echo "${{x/a/$({cmd})}}"'),
    ("select over a substitution", "select c in $(echo {p}); do $c {args}; break; done"),
    # a loop variable holds each word in the body and the last one (or any, with break) after
    ("loop over an earlier value", "c=ls; for c in {p}; do $c {args}; done"),
    ("loop variable after the loop", "c=ls; for c in {p}; do :; done; $c {args}"),
    ("loop over a substitution after an earlier value",
     "c=ls; for c in $(echo {p}); do $c {args}; done"),
    ("loop over $@", "set -- {p}; c=ls; for c; do $c {args}; done"),
    ("empty backticks inside the name", "{p0}``{p1} {args}"),
    # functions defined and called in the command: the body is judged at each call
    ("function calling a local", "f() {{ local c={p}; $c {args}; }}; f"),
    ("function running its arguments", 'run() {{ "$@"; }}; run {cmd}'),
    ("function then call", "f() {{ {cmd}; }}; f"),
    ("function keyword then call", "function f {{ {cmd}; }}; f"),
    ("DEBUG trap with functrace", "set -T; trap {q} DEBUG; f() {{ :; }}; f"),
    ("trap RETURN", "trap {q} RETURN; f() {{ :; }}; f"),
    ("associative array", "declare -A m=([k]={p}); ${{m[k]}} {args}"),
    ("$(which)", '"$(which {p})" {args}'),
    ("$(command -v)", "$(command -v {p}) {args}"),
    ("alias on its own lines", "shopt -s expand_aliases\nalias x={q}\nx"),
    ("local nameref", "f() {{ local -n r=$1; r={p}; }}; f c; $c {args}"),
    ("indirect expansion", "v=c; c={p}; ${{!v}} {args}"),
    ("two-step indirection", "c={p}; v=c; ${{!v}} {args}"),
    ("${x@E}", "x={p}; ${{x@E}} {args}"),
    ("${x,,}", "x={up}; ${{x,,}} {args}"),
    ("${x#prefix}", "x=_{p}; ${{x#_}} {args}"),
    ("${x/pattern/}", "x={p}_; ${{x/_/}} {args}"),
    ("eval of a substitution", 'eval "$(echo {q})"'),
    ("coproc", "coproc {cmd}"),
    ("coproc group", "coproc {{ {cmd}; }}"),
    ("coproc named", "coproc w {{ {cmd}; }}"),
    ("printf substitution", "$(printf %s {p}) {args}"),
    ("echo substitution", "$(echo {p}) {args}"),
    ("nameref", "declare -n r=c; c={p}; $r {args}"),
    ("ANSI-C hex", "$'{hex}' {args}"),
    ("ANSI-C octal", "$'{oct}' {args}"),
    ("source a process substitution a printer fills", ". <(echo {q})"),
    ("a printer's output piped into a shell", "printf '%s\\n' {q} | bash"),
    ("source <(..) a printer fills", "source <(echo {q})"),
    ("bash <(..) a printer fills", "bash <(echo {q})"),
    (". /dev/stdin from a printer's pipe", "echo {q} | . /dev/stdin"),
    # words split at a custom IFS (its splitting is checked against bash by the value
    # oracle)
    ("loop over a custom IFS word", "IFS=,; for w in {csv}; do $w; done"),
    ("custom IFS (prefix)", "IFS=: c={colon}; $c"),
    ("custom IFS", "IFS=,; c={csv}; $c"),
    ("${a[*]} joined at an empty IFS", 'a=({p0} {p1}); IFS=; c="${{a[*]}}"; $c {args}'),
    # names that stand for a system program: judged as that program
    ("hash -p to a system program", "hash -p /usr/bin/{p} x; x {args}"),
    ("enable -n of a builtin with a program twin", "enable -n echo; {cmd}"),
    ("an array's elements given their indices", 'a=([1]={args} [0]={p}); "${{a[@]}}"'),
    ("an array with a gap", 'a=([2]={args} [0]={p}); "${{a[@]}}"'),
    # a pattern in a system folder that can match one name only: that program
    ("extglob of one name in command position", "shopt -s extglob\n/usr/bin/@({p}) {args}"),
    ("brackets of one character in command position", "/usr/bin/[{p0}]{p1} {args}"),
)
"""Templates the classifier models: the program is decoded and judged on its own."""

STRANGE = (
    # decoded, but not ordinary use: a person sees them (ask), and what they hide is
    # judged (deny when destructive)
    ("function shadowing cd", "cd() {{ {cmd}; }}; cd ."),
    ("function keyword shadowing echo", "function echo {{ {cmd}; }}; echo hi"),
    # a link on the way may lead elsewhere than the path reads: judged as the program it
    # names when that is stricter, never less than ask
    ("path through ..", "/usr/local/../bin/{cmd}"),
    ("$SHELL -c", "$SHELL -c {q}"),
    ("array slice", 'a=({cmd}); "${{a[@]:0}}"'),
    ("sudo", "sudo {cmd}"),
    ("alias", "shopt -s expand_aliases; alias x={q}; x"),
    ("here-doc piped into bash", "cat <<'E' | bash\n{cmd}\nE"),
    ("code in an arithmetic value", "x='a[$({cmd})]'; (( x ))"),
    ("code in a $(( )) value", "x='a[$({cmd})]'; echo $(( x + 1 ))"),
    ("code in a [[ -eq ]] value", "x='a[$({cmd})]'; [[ $x -eq 0 ]]"),
    ("code in let", "let 'y=a[$({cmd})]'"),
    ("code in a subscript", "x='a[$({cmd})]'; arr[x]=1"),
    ("code in a declare -i value", "declare -i n; n='a[$({cmd})]'"),
    ("code in printf -v's name", "printf -v 'a[$({cmd})]' x"),
    ("code in test -v", "test -v 'a[$({cmd})]'"),
    ("prompt expansion", "c='$({cmd})'; echo ${{c@P}}"),
    ("substring in command position", "s=x{p}x; ${{s:1:{n}}} {args}"),
    ("BASH_ENV", "BASH_ENV=<(echo {q}) bash -c true"),
    ("ENV", "ENV=<(echo {q}) sh -c true"),
    ("BASH_ENV through env", "env BASH_ENV=<(echo {q}) bash -c true"),
    ("exported BASH_ENV", "export BASH_ENV=<(echo {q}); bash -c true"),
    ("PS4 with xtrace", "PS4='$({cmd}) ' bash -xc true"),
    ("command_not_found_handle", "command_not_found_handle() {{ {cmd}; }}; nosuchprogram"),
    ("docker with the host's /", "docker run --rm -v /:/host alpine chroot /host {cmd}"),
    ("sqlite3 .shell", "sqlite3 app.db '.shell {cmd}'"),
    ("sqlite3 .once pipe", "sqlite3 app.db '.once |{cmd}' 'select 1'"),
    ("psql \\!", "psql -c '\\! {cmd}'"),
    ("psql COPY TO PROGRAM", "psql -c \"COPY t TO PROGRAM '{cmd}'\""),
    ("mysql system", "mysql -e 'system {cmd}'"),
    ("psql \\g into a pipe", "psql -c 'select 1 \\g |{cmd}'"),
    ("psql \\o into a pipe after a query", "psql -c 'select 1; select 2 \\o |{cmd}'"),
    # other users, other shells
    ("sudo -s", "sudo -s {cmd}"),
    ("sudo -i", "sudo -i {cmd}"),
    ("su -c", "su -c {q}"),
    ("su - user -c", "su - agent -c {q}"),
    ("runuser -u", "runuser -u agent -- {cmd}"),
    ("runuser -c", "runuser agent -c {q}"),
    ("script -c", "script -qc {q} /dev/null"),
    # names that stand for something else
    ("alias shadowing a program", "shopt -s expand_aliases; alias cat={q}; cat"),
    ("brace expansion", "{{{p},}} {args}"),
    ("glob in command position", "/usr/bin/{glob} {args}"),
    ("PATH prefix with a workspace folder", "PATH=bin:$PATH {cmd}"),
    ("PATH prefix with the current folder", "PATH=.:/usr/bin {cmd}"),
    # process substitutions, sockets, code from substitutions
    ("process substitution as a program", "<(echo {p}) {args}"),
    (">(..) into a shell", "echo {q} > >(bash)"),
    ("tee into >(sh)", "echo {q} | tee >(sh) > /dev/null"),
    ("/dev/tcp", "{cmd} > /dev/tcp/127.0.0.1/9"),
    ("bash < <(..)", "bash < <(echo {q})"),
    ("parallel over its input", "printf 'x\\n' | parallel {q}"),
    # code stored in values that a name or an arithmetic context evaluates
    ("code in let +=", "x='a[$({cmd})]'; let x+=1"),
    ("code behind ${!x}", "x='a[$({cmd})]'; echo ${{!x}}"),
    ("code in declare's name", "x='a[$({cmd})]'; declare \"$x\"=1"),
    ("code in read's name", "x='a[$({cmd})]'; read \"$x\" <<< 1"),
    ("/proc/self/exe -c", "/proc/self/exe -c {q}"),
    ("exported function", "env 'BASH_FUNC_{p}%%=() {{ :; }}' bash -c {q}"),
    ("prompt holding code", "PS1='$({cmd}) ' bash -i"),
    ("start-up file from a substitution", "bash --rcfile <(echo {q}) -i"),
    ("container with the workspace mounted", "docker run --rm -v .:/w -w /w alpine {cmd}"),
    ("container with $PWD mounted", 'docker run --rm -v "$PWD":/w -w /w alpine {cmd}'),
    # more builtins and wrappers that hide or run a program
    ("extglob ?() in command position", "shopt -s extglob\n/usr/bin/?({p}) {args}"),
    ("extglob in a path", "shopt -s extglob\n/usr/@(bin|sbin)/{cmd}"),
    ("mapfile -C callback", "mapfile -C {q} -c 1 m < a.txt"),
    ("readarray -C callback", "readarray -C {q} -c 1 m < a.txt"),
    ("complete -C", "complete -C {q} x"),
    ("compgen -C", "compgen -C {q} x"),
    ("PROMPT_COMMAND", "PROMPT_COMMAND={q} bash -i < /dev/null"),
    ("fc -e", "fc -e : ; {cmd}"),
    ("doas", "doas {cmd}"),
    ("doas -u", "doas -u root {cmd}"),
    ("chroot", "chroot / {cmd}"),
    ("alias with a trailing space", "shopt -s expand_aliases\nalias s='sudo '\nalias r={q}\ns r"),
    ("code in a [[ -v ]] name", "x='a[$({cmd})]'; [[ -v $x ]]"),
    ("code in a [ -v ] name", "x='a[$({cmd})]'; [ -v \"$x\" ]"),
    ("code in arithmetic after read", "read -r y <<< 1; x='a[$({cmd})]'; (( y + x ))"),
    ("code in ${{!x}} after read", "read -r y <<< 1; x='a[$({cmd})]'; : ${{!x}}"),
    ("BASH_ENV from a written file", "echo {q} > e.sh; BASH_ENV=e.sh bash -c true"),
    ("here-doc into python3", "python3 - <<'E'\nimport subprocess; subprocess.run({pylist})\nE"),
    ("here-string into python3", "python3 <<< {pyq}"),
    ("set -k", "set -k; bash -c '$c {args}' c={p}"),
    ("set -o keyword", "set -o keyword; env c={p} bash -c '$c {args}'"),
    ("code in ${{x#..}}", "echo ${{x#$({cmd})}}"),
    ("container with the host's pids", "docker run --pid host alpine {cmd}"),
    ("container with every capability", "docker run --cap-add ALL -v .:/w alpine {cmd}"),
    ("container with -v=/", "docker run -v=/:/h alpine {cmd}"),
    ("container with /./ mounted", "docker run -v /./:/h alpine {cmd}"),
    ("container with /tmp/../ mounted", "podman run -v /tmp/../:/h alpine {cmd}"),
    ("getopts", "getopts b: o -b {p}; $OPTARG {args}"),
    # IFS set by a builtin: the setting itself is asked (the split is modelled)
    ("IFS from printf -v", "printf -v IFS ,; c={csv}; $c"),
    ("IFS from read", "read -r IFS <<< ,; c={csv}; $c"),
    ("IFS as a loop variable", "for IFS in ,; do c={csv}; $c; done"),
    ("gdb --args", "gdb -batch -ex run --args {cmd}"),
    ("sed s///e", "sed 's|x|{cmd}|e' a.txt"),
    ("code in an array's [index]=", "x='a[$({cmd})]'; b=([x]=1)"),
    ("code in a += [index]=", "x='a[$({cmd})]'; b=(1); b+=([x]=2)"),
    ("code in unset of an element", "x='a[$({cmd})]'; b=(1); unset 'b[x]'"),
    ("code in unset of an element's word", "k='$({cmd})'; b=(1); unset \"b[$k]\""),
    ("getopts over set --", "set -- -b {p}; getopts b: o; $OPTARG {args}"),
    # programs that run a command given in their arguments or their input
    ("uv run", "uv run {cmd}"),
    ("npm exec --", "npm exec -- {cmd}"),
    ("poetry run", "poetry run {cmd}"),
    ("conda run -n", "conda run -n base {cmd}"),
    ("perf stat (a reader's name on the way)", "perf stat {cmd}"),
    ("an unknown program's arguments", "./tools/wrap --verbose {cmd}"),
    ("an unknown program's command-line argument", "./tools/wrap --run {q}"),
    ("git difftool -x", "git difftool -y -x {q}"),
    ("ed reading !cmd", "ed -s a.txt <<< {bang}"),
    ("vim -es reading :!cmd", "vim -es <<< {exbang}"),
    ("dc -e !cmd", "dc -e {bang}"),
    ("m4 esyscmd", "m4 <<< {m4}"),
    ("git's ext:: transport", "git -c protocol.ext.allow=always ls-remote {ext}"),
    ("the command table BASH_CMDS", "BASH_CMDS[ls]=/usr/bin/{p}; ls {args}"),
    ("the command table set whole", "declare -A BASH_CMDS=([ls]=/usr/bin/{p}); ls {args}"),
)
"""Templates a careful person looks at even around a harmless program: ``ask`` at least."""

DATABASE = (
    ("sqlite3 writefile", "sqlite3 app.db \"select writefile('{f}', 'x')\"", "deny"),
    ("sqlite3 load_extension", "sqlite3 app.db \"select load_extension('./{f}')\"", "deny"),
    ("sqlite3 .load", "sqlite3 app.db '.load ./{f}'", "deny"),
    ("sqlite3 edit", "sqlite3 app.db \"select edit('{f}', 'vi')\"", "deny"),
    ("sqlite3 .output", "sqlite3 app.db '.output {f}' 'select 1'", "ask"),
    ("sqlite3 .once quoted pipe", "sqlite3 app.db \".once '|cat {f}'\" 'select 1'", "ask"),
    ("sqlite3 .output quoted pipe", "sqlite3 app.db '.output \"|rm {f}\"' 'select 1'", "deny"),
    ("sqlite3 .import quoted pipe", "sqlite3 app.db \".import '|shred -u {f}' t\"", "deny"),
    ("mysql --pager", "mysql --pager='rm -f {f}' -e 'select 1'", "deny"),
    ("sqlite3 -init <(..)", "sqlite3 -init <(echo 'drop table t') {f} .quit", "deny"),
    ("duckdb -c", "duckdb -c \".shell rm -f {f}\"", "deny"),
    ("VACUUM INTO a file", "sqlite3 app.db \"vacuum into '{f}'\"", "ask"),
    ("sqlite3 .import", "sqlite3 app.db '.import {f} t'", "ask"),
    ("sqlite3 ATTACH", "sqlite3 app.db \"attach '{f}' as o\"", "ask"),
    ("sqlite3 VACUUM INTO", "sqlite3 app.db \"vacuum into '{f}'\"", "ask"),
    ("psql \\o", "psql -c '\\o {f}'", "ask"),
    ("psql COPY TO a file", "psql -c \"COPY t TO '{f}'\"", "ask"),
    ("mysql INTO OUTFILE", "mysql -e \"select 1 into outfile '{f}'\"", "ask"),
    ("sqlite3 .sh (a prefix of .shell)", "sqlite3 app.db '.sh rm -f {f}'", "deny"),
    ("sqlite3 .sys (a prefix of .system)", "sqlite3 app.db '.sys shred -u {f}'", "deny"),
    ("sqlite3 .restore", "sqlite3 app.db '.restore {f}'", "deny"),
    ("sqlite3 fed by <(echo ..)", "sqlite3 app.db < <(echo '.shell rm -f {f}')", "deny"),
    ("sqlite3 .out prefix", "sqlite3 app.db '.out {f}' 'select 1'", "ask"),
    ("tee with an empty input", "tee {f} < /dev/null", "deny"),
    # SQL run from text: an executable comment, a prepared string, a query's rows
    ("mysql executable comment", "mysql -e 'select 1 /*!; drop table t */'", "deny"),
    ("mysql versioned executable comment", "mysql -e 'select /*!50100 1; delete from t*/'",
     "deny"),
    ("mysql PREPARE FROM a string", "mysql -e 'prepare s from \"drop table t\"; execute s'",
     "deny"),
    ("dblink_exec", "psql -c \"select dblink_exec('c', 'drop table t')\"", "deny"),
    ("psql \\gexec", "psql -c \"select 'select 1' \\gexec\"", "deny"),
    ("sqlite3 pragma that writes", "sqlite3 app.db 'pragma optimize'", "ask"),
    ("sqlite3 wal_checkpoint", "sqlite3 app.db 'pragma wal_checkpoint(TRUNCATE)'", "ask"),
    ("sqlite3 pragma set by parentheses", "sqlite3 app.db 'pragma user_version(3)'", "ask"),
)
"""Database shells' file side effects, for each file name of ``FILES``."""
DECODED = (
    ("bash -c of decoded code", 'bash -c "$(echo {b64} | base64 -d)"'),
    ("eval of decoded code", 'eval "$(echo {b64} | base64 -d)"'),
    ("sh -c of reversed code", "sh -c \"$(rev <<< {rq})\""),
)
"""Code a shell runs that comes out of a decoder: refused whatever it decodes to (README:
code from a decoder), so a decoded harmless command never teaches that decoding is safe."""
WRITTEN = (
    ("script written then run", "echo {q} > x.sh; bash x.sh"),
    ("here-string teed then sourced", "tee x.sh <<< {q} > /dev/null; . ./x.sh"),
    ("script made executable then run", "printf '%s\\n' {q} > x.sh; chmod +x x.sh; ./x.sh"),
)
"""A script written by the command, then run: its content is not shown, so it asks, and a
destructive one is refused under ``--approval auto``."""
ARITHMETIC_OUTPUT = (
    ("$(( )) of a substitution", "echo $(( $({cmd}) ))"),
    ("(( )) of a substitution", "(( $({cmd}) ))"),
)
"""A command's output evaluated as arithmetic: a subscript in it would run code, so only a
count (``wc``) is read-only."""
RUN_TIME = (
    ("read from a file", "read -r c < a.txt; $c {args}"),
    ("$(<file) in command position", "$(<a.txt) {args}"),
    ("mapfile from a file", 'mapfile -t m < a.txt; "${{m[@]}}" {args}'),
    # values the decoder does not follow replace what the variable held before
    ("read -n over an earlier value", "c=ls; read -n {n} c <<< {p}x; $c {args}"),
    ("printf -v into element 0 over an earlier value", "c=ls; printf -v 'c[0]' {p}; $c {args}"),
    # more arguments than are searched for a command the program may run: not cut, unknown
    ("a command after 300 arguments of a program that runs unseen code",
     "uv run " + " ".join(f"a{i}" for i in range(300)) + " {cmd}"),
    # the grammar reads r`:`m as two words where bash reads one: the tree is not trusted
    ("a backtick inside the program's name", "{p0}`:`{p1} {args}"),
)
"""A program read from a file: only known at run time, so it asks (a person sees the
command), and is refused under ``--approval auto``."""
TRUNCATIONS = (
    ": > a.txt", "true > a.txt", "> a.txt", "eval '> a.txt'", "bash -c ': > a.txt'",
    "f() {{ > a.txt; }}; f", "c=:; $c > a.txt", "x=a.txt; : > \"$x\"", "cat /dev/null > a.txt",
    "sh <<'E'\n: > a.txt\nE", "a=(true); \"${{a[@]}}\" > a.txt",
    # the shell empties a > target before the command that reads it runs
    "sort a.txt > a.txt", "grep -v x a.txt > a.txt", "cat a.txt | sort > a.txt",
    "sort < a.txt > a.txt", "sed s/x/y/ src/app.py > ./src/app.py", "exec 3>a.txt",
    "ln -sf /dev/null a.txt", "cp /dev/zero a.txt",
    "exec : > a.txt", "> a.txt :", "2>/dev/null > a.txt true", "(exec -a x :) > a.txt",
    "time -p : > a.txt", "timeout 5 true > a.txt", "{{ :; }} > a.txt", "< a.txt > a.txt sort",
    # what ran printed nothing: the shell's code, find's -exec, env -S
    "sh -c '\"$@\"' sh : > a.txt", "bash -c '\"$0\" \"$@\"' : > a.txt",
    "bash -c 'x=1' > a.txt", "find . -maxdepth 0 -exec : \\; > a.txt", "env -S : > a.txt",
    "cd src > a.txt", "flock x.lock -c true > a.txt",
)
"""Redirections that empty a file, behind constructs: destructive."""
FILES = ("out.txt", "src/app.py", "/tmp/x.db", "evil.so")


def _fill(template: str, prog: Program) -> str:
    argv = prog.argv
    p, args = argv[0], shlex.join(argv[1:])
    return template.format(cmd=shlex.join(argv), p=p, args=args, p0=p[:1], p1=p[1:],
                           us=shlex.quote("c=" + shlex.quote("_".join(argv)) + "; $c"),
                           pylist=repr(list(argv)), pyq=shlex.quote(
                               f"import subprocess; subprocess.run({list(argv)!r})"),
                           csv=",".join(argv), colon=":".join(argv), q=shlex.quote(
                               shlex.join(argv)), n=len(p), up=p.upper(),
                           hex="".join(f"\\x{ord(ch):02x}" for ch in p),
                           oct="".join(f"\\{ord(ch):03o}" for ch in p),
                           glob=p[0] + "?" + p[2:],
                           bang=shlex.quote("!" + shlex.join(argv)),
                           exbang=shlex.quote(":!" + shlex.join(argv)),
                           m4=shlex.quote(f"esyscmd({shlex.join(argv)})"),
                           ext=shlex.quote("ext::" + " ".join(
                               a.replace("%", "%%").replace(" ", "% ") for a in argv)))


def _garbled(template: str, prog: Program) -> bool:
    """A program word with a space or a quote, pasted inside a single-quoted part of the
    template (``x='a[$({cmd})]'``, ``IFS=,; c={csv}``): the command would not be the one
    named, so the pair is left out."""
    if not any(set(" '\"") & set(a) for a in prog.argv):
        return False
    if "{csv}" in template or "{colon}" in template:
        return True
    for key in ("{cmd}", "{args}", "{p}"):
        at = template.find(key)
        if at >= 0 and template[:at].count("'") % 2:
            return True
    return False


def _label(kind: str, strange: bool) -> tuple[str, str]:
    if kind == "destructive":
        return "deny", "hidden_program"
    if kind == "write":
        return "ask", "write_inside"
    return ("ask", "exec") if strange else ("allow", "read_only")


def _crossed() -> Iterator[Item]:
    """Each template of the tables crossed with each program."""
    for strange, table in ((False, MODELLED), (True, STRANGE)):
        for name, template in table:
            for prog in PROGRAMS:
                if not _garbled(template, prog):
                    command = _fill(template, prog)
                    expect, category = _label(prog.kind, strange)
                    yield Item(item_id(command), command, expect, category,
                               f"construct: {name}")
    for name, template in ARITHMETIC_OUTPUT:
        for prog in PROGRAMS:
            command = _fill(template, prog)
            expect, category = _label(prog.kind, prog.argv[0] != "wc")
            yield Item(item_id(command), command, expect, category, f"construct: {name}")
    for runs_unseen, table in ((False, WRITTEN), (True, RUN_TIME)):
        for name, template in table:
            for prog in PROGRAMS:
                command = _fill(template, prog)
                destructive = prog.kind == "destructive"
                other = "exec" if runs_unseen else "write_inside"
                yield Item(item_id(command), command, "ask",
                           "hidden_program" if destructive else other, f"construct: {name}",
                           "deny" if destructive or runs_unseen else None)


def _decoded_and_files() -> Iterator[Item]:
    """Code out of a decoder, truncations, and the database shells' file side effects."""
    for name, template in DECODED:
        for prog in PROGRAMS:
            cmd = shlex.join(prog.argv)
            command = template.format(b64=base64.b64encode(cmd.encode()).decode(),
                                      rq=shlex.quote(cmd[::-1]))
            yield Item(item_id(command), command, "deny", "expansion", f"construct: {name}")
    for command in TRUNCATIONS:
        command = command.format()
        yield Item(item_id(command), command, "deny", "destructive",
                   "construct: a truncation behind a construct")
    for name, template, expect in DATABASE:
        for f in FILES:
            command = template.format(f=f)
            yield Item(item_id(command), command, expect, "sql", f"construct: {name}")


def items() -> list[Item]:
    """Every construct x program item, and the database shells' file side effects; a command
    that is also in the held-back construct part is left to that part."""
    out = {it.command: it for it in (*_crossed(), *_decoded_and_files())}
    held = {it.command for it in load("constructs_heldback")}
    return [it for c, it in out.items() if c not in held]
