"""What bash and GNU tools make of forms the classifier once read otherwise.

Each command runs for real in a throwaway workspace (the control: the work is changed or
gone), and the decision is checked against it: bash 5.2's ``&`` in a pattern replacement,
an octal substring offset, ``printf %b``'s ``\\c``, ``shopt -s xpg_echo``, a file opened
with ``<>`` on standard input and written through it, ``IFS+=``, GNU's abbreviated long
options (``sort --o=``, ``sed --in``, ``git grep --open-f=``), and ``tar --index-file``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions, git, work_changed

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree: a diff from it to HEAD shows every file (the external diff runs)."""


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", {"src/app.py": "work\n", "a.txt": "hello\nmore\n",
                                       "data.csv": "b,2\na,1\n"})


@pytest.mark.parametrize("command", [
    "x=-delete; find src ${x/*/&}",  # patsub_replacement: & is the match
    "x=delete; find src ${x/*/-&}", "x=r; ${x/r/&m} a.txt",
    "x=XXXXXXXX-delete; find src ${x:010}",  # 010 is octal: offset 8
    "x=XXXXXXXXrmls; ${x:010:2} a.txt",
    "shopt -s xpg_echo; find src $(echo '\\055delete')",
    "shopt -s xpg_echo; c=$(echo '\\0162m'); $c a.txt",
    "echo pwned 0<>a.txt >&0", "exec 0<>a.txt; echo pwned >&0",
    "echo pwned 0<>a.txt 1<&0",
    "IFS+=_; o=src_-delete; find $o", "declare IFS+=/; o=src/-delete; find $o",
    "sed --e='1e rm a.txt' data.csv",
    "git grep --open-f='rm a.txt;:' hello", "git grep -nO'rm a.txt;:' hello",
    "tar -cf /dev/null --rem src", "tar -cvf /dev/null --ind=a.txt .",
    "TAR_OPTIONS='--index-file=a.txt -v' tar -cf /dev/null src",
    # a trap's code expands its variables when it fires, not when it is set
    "c=cat; trap '$c a.txt' EXIT; c=rm", "c=cat; trap '$c a.txt' ERR; c=rm; false",
    "o=x; trap 'find src $o' EXIT; o=-delete",
    # POSIX mode: an assignment before a special builtin stays after it
    "set -o posix; c=cat; c=rm :; $c a.txt", "POSIXLY_CORRECT=1; c=cat; c=rm :; $c a.txt",
    "set -o posix; o=-print; o=-delete eval :; find src $o",
    # export and declare take words, which bash brace-expands
    "export o={-print,-delete}; find src $o", "declare o={-print,-delete}; find src $o",
    "export GIT_EXTERNAL_{DIFF,X}='rm a.txt;:'; git diff " + EMPTY_TREE + " HEAD",
    "export GIT_EXTERNAL_DIF\"\"F='rm a.txt;:'; git diff " + EMPTY_TREE + " HEAD",
    "v=DIFF; export GIT_EXTERNAL_$v='rm a.txt;:'; git diff " + EMPTY_TREE + " HEAD",
    # a # inside a word (after an escaped blank) begins no comment
    "echo \\ #; rm a.txt", "echo 'x'\\ #; rm a.txt",
    # a loop variable keeps its last word, an option that reads as a path in a list
    "for o in -{print,delete}; do :; done; find src $o",
    "awk 'BEGIN{system(\"\\162m a.txt\")}'",  # awk reads \162 as r
    # a trap that runs between commands (DEBUG, ERR, a signal) and changes the shell
    "trap 'o=-delete' DEBUG; o=-print; find src $o", "trap 'c=rm' ERR; c=cat; false; $c a.txt",
    "trap 'o=-delete' CHLD; o=-print; /bin/true; find src $o",
    "shopt -s extdebug; trap '[[ $BASH_COMMAND != o=-print ]]' DEBUG; o=-delete; o=-print; "
    "find src $o",
    # a function's assignment before its local is the global's; IFS set in a function stays
    "f(){ c=rm; local c=cat; }; c=ls; f; $c a.txt",
    "f(){ o=-delete; declare o=-print; }; f; find src $o",
    "f(){ IFS=_; }; f; o=src_-delete; find $o",
    "f(){ IFS=_; local IFS=' '; }; f; o=src_-delete; find $o",
    "o=src_-delete; IFS=_; a=($o); find \"${a[@]}\"",  # a=($o) splits at IFS
    # nullglob: a pattern that matches nothing is no word
    "shopt -s nullglob; o=(-print?); find src -delete${o[0]}",
    "shopt -s nullglob; set -- -print*; find src ${1:--delete}",
    # nocasematch: case, [[ == ]] and ${x/pat} ignore case
    "shopt -s nocasematch; case X in x) o=-delete;; *) o=-print;; esac; find src $o",
    "shopt -s nocasematch; x=-PRINT; [[ $x == -print ]] && find src -delete",
    # bracket ranges in a pattern operator match as bash 5.2 matches them
    "x=-deleteQ; find src ${x%[A-Z]}", "x=Q-delete; find src ${x#[A-Z]}",
    "x=-deleteQ; find src ${x//[P-R]/}",
    # ${X:=w} assigns X: a command variable set that way is judged as its command
    ": ${GIT_EXTERNAL_DIFF:='rm a.txt;:'}; export GIT_EXTERNAL_DIFF; git diff "
    + EMPTY_TREE + " HEAD",
])
def test_what_bash_does_is_what_is_judged(ws: Path, command: str) -> None:
    decided = decisions(ws, command)
    assert work_changed(ws, command), command
    assert decided[1] == "deny" and decided[0] != "allow", (command, decided)


@pytest.mark.parametrize("command", [
    "sort --o=a.txt data.csv", "sort --o a.txt data.csv", "shuf --ou=a.txt data.csv",
    "iconv -f utf8 -t utf8 --ou=a.txt data.csv", "sed --in 1d a.txt",
])
def test_an_abbreviated_output_option_writes(ws: Path, command: str) -> None:
    decided = decisions(ws, command)
    assert work_changed(ws, command), command
    assert decided[0] != "allow", (command, decided)


@pytest.mark.parametrize("command", [
    "x=src/app.py; cat ${x/app/&}", "x=abc; echo ${x/b/[&]}", "cat 0<>a.txt",
    "exec 3<>a.txt; cat <&3", "IFS+=,; o=src,a.txt; ls $o", "git grep -n hello",
    "sort --s data.csv", "git log --on -1", "parallel -j2 --tag wc -l ::: a.txt",
    "c=cat; c=rm :; $c a.txt", "trap 'echo done' EXIT; c=rm; ls",
    "c=ls; trap \"$c\" EXIT; c=rm", "export o='{-print,-delete}'; find src $o",
    "echo a\\ b #; rm a.txt", "for f in -l -c; do wc $f a.txt; done",
    "v=X; export A_$v=1 B\"\"C=2; echo ok", "echo ls; $_ -la", ": ${OUT:=a.txt}; cat \"$OUT\"",
    "trap 'echo \"failed at $LINENO: $BASH_COMMAND\" >&2' ERR; wc -l a.txt",
    "set -T; trap 'echo \"+ $BASH_COMMAND\" >&2' DEBUG; head -1 a.txt",
    "f=app.py; echo ${f%[!a-z].py}", "f(){ local c=cat; $c a.txt; }; c=ls; f; $c a.txt",
    "shopt -s nullglob; a=(src/*.py); wc -l \"${a[@]}\"",
    "f(){ local IFS=,; echo; }; f; o='a.txt src/app.py'; cat $o",
])
def test_their_read_only_twins_still_read(ws: Path, command: str) -> None:
    assert not work_changed(ws, command), command
    assert decisions(ws, command) == ("allow", "allow"), command


@pytest.mark.parametrize("command", [
    "(declare -u o); o=-delete; find src $o", "declare -u o | cat; o=-delete; find src $o",
    "x=$(declare -u o); o=-delete; find src $o", ": <(declare -u o); o=-delete; find src $o",
    "coproc declare -u o; o=-delete; find src $o", "(declare -i o); o=-delete; find src $o",
    "f(){ declare -gu o; }; (f); o=-delete; find src $o",
    "(declare -n o=p); o=-delete; p=-print; find src $o",
    "declare -i o; declare +i o; o=-delete; find src $o",
    "declare -i o; unset o; o=-delete; find src $o",
    "declare -n o=p; declare +n o; o=-delete; p=-print; find src $o",
    "declare -n o=p; unset -n o; o=-delete; p=-print; find src $o",
    "f(){ local -i o; }; f; o=-delete; find src $o",
    "f(){ local -n o=p; }; f; o=-delete; p=-print; find src $o",
    "declare -Z -u o 2>/dev/null; o=-delete; find src $o",
    "declare -l -u o; o=-delete; find src $o", "declare -u o; declare -l -u o; o=-delete; "
    "find src $o", "(declare -u c); c=rm; $c a.txt", "$'\\u72m' a.txt", "$'\\x72\\U6d' a.txt",
])
def test_an_attribute_that_is_not_in_force(ws: Path, command: str) -> None:
    """A ``declare -u``/``-i``/``-n`` made in a subshell, a pipeline's stage or a call's
    ``local``, taken off by ``+i``/``+n``/``unset``, or given with an option declare does
    not take (it fails) or beside its opposite (``-l -u``: neither) is not in force: the
    text given stays as written. ``$'\\u72'`` takes one to four hex digits."""
    assert work_changed(ws, command), command  # the control: bash destroyed the work
    assert decisions(ws, command) == ("deny", "deny"), command


@pytest.mark.parametrize("command", [
    "declare -u o; o=-delete; find src $o", "declare -i o; o=-delete; find src -maxdepth $o",
    "f(){ local -i n=3; head -n $n a.txt; }; f", "declare -i n=5; n+=2; head -n $n a.txt",
    "declare -l c=LS; $c src", "f(){ local -n r=$1; r=-print; }; f o; find src $o",
])
def test_an_attribute_in_force_still_reads(ws: Path, command: str) -> None:
    assert not work_changed(ws, command), command
    assert decisions(ws, command)[1] == "allow", command


@pytest.mark.parametrize("command", [
    "cat notes.txt | xargs -I{} sh -c 'echo {}'", "xargs -a notes.txt -I@ bash -c 'echo \"@\"'",
    "git log -1 --format=%s | xargs -I{} sh -c 'echo {}'",
    "find . -name '*.txt' -exec sh -c 'echo {}' \\;",
])
def test_text_pasted_into_shell_code_runs(ws: Path, command: str) -> None:
    """``xargs -I{}`` and ``find -exec`` paste what they read (a line, a commit subject, a
    file name) into ``sh -c`` code: a ``$(..)`` in it runs. Passed as ``"$1"`` it is data."""
    payload = "$(rm${IFS}a.txt)"
    (ws / "notes.txt").write_text(payload + "\n")
    git(ws, "commit", "-q", "--allow-empty", "-m", payload)
    (ws / f"{payload}.txt").write_text("")
    assert work_changed(ws, command), command  # the control: a.txt is gone
    assert decisions(ws, command) == ("ask", "deny"), command
    safe = "git ls-files | xargs -I{} sh -c 'wc -l \"$1\"' _ {}"
    assert decisions(ws, safe) == ("allow", "allow")


@pytest.mark.parametrize(("command", "destroys"), [
    ("o=-delete; g(){ unset o; find src $o; }; f(){ local o=-print; g; }; f", True),
    ("o=-delete; g(){ unset o; }; f(){ local o=-print; g; find src $o; }; f", True),
    ("c=rm; g(){ unset c; }; f(){ local c=cat; g; $c a.txt; }; f", True),
    ("o=-delete; f(){ local o=-print; unset o; find src $o; }; f", False),
    ("o=-print; g(){ unset o; }; f(){ local o=-print; g; find src $o; }; f", False),
])
def test_unset_in_a_called_function_shows_the_global(ws: Path, command: str,
                                                     destroys: bool) -> None:
    """bash's dynamic scope: ``unset`` of a caller's local removes it and the global it hid
    shows again; a function's own local, unset, stays unset until it returns."""
    assert work_changed(ws, command) == destroys, command  # the control
    assert decisions(ws, command) == (("deny", "deny") if destroys else ("allow", "allow"))


@pytest.mark.parametrize(("command", "destroys"), [
    ('for f in a.txt data.csv; do case $f in *.txt|*.csv) wc -l "$f" ;; a.*) rm "$f" ;; esac; '
     "done", False),
    ('for f in a.txt data.csv; do case $f in *.csv) wc -l "$f" ;; a.*) rm "$f" ;; esac; done',
     True),
])
def test_a_case_on_each_of_a_loops_words(ws: Path, command: str, destroys: bool) -> None:
    """Each known value of the subject takes the branches bash takes for it: a branch no
    value reaches does not run."""
    assert work_changed(ws, command) == destroys, command  # the control
    assert decisions(ws, command) == (("deny", "deny") if destroys else ("allow", "allow"))


HOSTILE_NAMES = ("docs/$(rm a.txt)", "x-oa.txt", "AA[$(rm a.txt)]")
"""Names a cloned repository can carry: a command substitution, an option after a prefix."""


@pytest.mark.parametrize("command", [
    'for f in docs/*; do sh -c "wc -l $f"; done', 'for f in docs/*; do eval wc -l "$f"; done',
    "eval wc -l docs/*", 'x=$(echo docs/*); bash -c "wc -l $x"',
    "for f in {docs,src}/*; do eval wc -l $f; done", "for f in x*; do sort ${f#x}; done",
    "for f in x*; do n=${f:1}; sort $n; done", "let *", 'for f in *; do test -v "$f"; done',
    "x=(AA*); echo $(( ${x[0]} ))", 'x=(AA*); for i in "${!x[@]}"; do : $(( ${x[i]} )); done',
])
def test_names_a_glob_matches_are_what_bash_pastes(ws: Path, command: str) -> None:
    """A glob's value is the names it matches, which bash pastes into code, splits, or
    hands an operator (``${f#x}`` of ``x-oa.txt`` is ``-oa.txt``): a name holding ``$(..)``
    runs it. Where such a name is there, the glob is only known at run time."""
    (ws / "docs").mkdir()
    for name in HOSTILE_NAMES:
        (ws / name).write_text("b\na\n")
    assert work_changed(ws, command), command  # the control: a.txt removed or sorted over
    decided = decisions(ws, command)
    assert decided[0] != "allow" and decided[1] == "deny", (command, decided)


@pytest.mark.parametrize("command", [
    'for f in src/*; do sh -c "wc -l $f"; done', "eval wc -l src/*",
    'for f in src/*.py; do wc -l "${f%.py}.py"; done', "let x=2*3", "test -v HOME",
    "declare -A n; while IFS=, read -r k _; do n[$k]=$(( ${n[$k]:-0} + 1 )); done < data.csv"
    '; for k in "${!n[@]}"; do echo "$k $(( ${n[$k]} * 2 ))"; done',  # counts kept in a map
])
def test_globs_over_plain_names_stay_reads(ws: Path, command: str) -> None:
    assert not work_changed(ws, command), command
    assert decisions(ws, command) == ("allow", "allow"), command


@pytest.mark.parametrize("command", [
    "read -r x < v.txt; x+=5; : $(( x ))", "read -r x < v.txt; x+=$((1)); : $(( x ))",
])
def test_appending_a_number_to_text_leaves_text(ws: Path, command: str) -> None:
    """``x+=5`` appends to the text x holds: ``A[$(rm a.txt)]5`` is no number, and an
    arithmetic context evaluates its subscript first."""
    (ws / "v.txt").write_text("A[$(rm a.txt)]\n")
    assert work_changed(ws, command), command  # the control: a.txt removed
    assert decisions(ws, command) == ("ask", "deny"), command
    twin = "x=0; for f in src/*; do x+=$(wc -l < $f); done; : $(( x ))"  # digits after digits
    assert decisions(ws, twin) == ("allow", "allow")
