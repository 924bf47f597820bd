"""Per-program rules: what one simple command does, judged from its argument vector.

``analyze(argv)`` unwraps wrappers (``env``, ``timeout``, ``sudo``, ...), then applies the rule of
the program: its risk class, the paths it reads and writes, the commands it runs (``xargs``,
``find -exec``) and the shell code it runs (``bash -c``, ``eval``). Options that turn a reader
into a writer or an executor count (``sed -i``, ``git -c core.pager=...``, ``sort -o``,
``rg --pre``). Unknown programs are ``exec``. Nothing here parses shell syntax or touches files.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Mapping

from engine.permissions import programs as p
from engine.permissions import rules_code as c
from engine.permissions import rules_codegen as codegen
from engine.permissions import rules_data as data
from engine.permissions import rules_files as f
from engine.permissions import rules_git as g
from engine.permissions import rules_gpg as gpg
from engine.permissions import rules_infra as infra
from engine.permissions import rules_js as js
from engine.permissions import rules_langs as langs
from engine.permissions import rules_migrations as migrations
from engine.permissions import rules_network as n
from engine.permissions import rules_platforms as platforms
from engine.permissions import rules_sdk as sdk
from engine.permissions import rules_shell as sh
from engine.permissions import rules_system as system
from engine.permissions import rules_toolchain as toolchain
from engine.permissions.constructs import shell_code_var
from engine.permissions.effect import (
    Effect,
    Loads,
    Rule,
    command_variable,
    harmless_setting,
    is_dangerous_variable,
    parse_opts,
    path_args,
    plain,
    program_name,
    reader,
    run_with_arguments,
    teardown_verb,
)
from engine.permissions.shell_paths import NULL_DEVICES
from engine.permissions.words import INPUT_VAR, Word


def analyze(argv: list[Word], inherited: Mapping[str, str] | None = None) -> Effect:
    """Unwrap wrappers, then apply the program's rule; ``inherited`` is the environment the
    command starts with, as far as it is known."""
    e = Effect(list(argv))
    _unwrap(e, inherited or {})
    if not e.argv or _times_assignments(e):
        return e
    name = program_name(e.argv[0])
    if not name:
        e.add("exec", "command name is only known at run time")
        e.at_least("ask", "")
        return e
    rule = RULES.get(name)
    asks_itself = "/" not in name and [w.value for w in e.argv[1:]] in (
        _ASKS_ITSELF if rule is None else _ASKS_ITSELF[:2])  # known: tar -help is -h -e ..
    if rule is None:
        e.loads_here.extend(_STARTUP_LOADS.get(name, ()))  # pytest --help: conftest.py runs
        if not asks_itself:  # java -version: prints and exits (a program by path: no)
            _unknown(e, name)
    else:
        unwrapped = copy.deepcopy(e) if asks_itself else e
        rule(e, e.argv[1:])
        if asks_itself and not e.loads_here and not e.imports_here:
            e = unwrapped  # rm --help: prints, whatever rm does (what its wrappers do stays;
            # yarn --version where .yarnrc.yml names a yarnPath runs that file: kept)
    words = [w.value or "" for w in e.argv[1:]]
    said = " ".join([name, *(w.shown for w in e.argv[1:3])])
    if _prints_credentials(name, words):
        e.secret = f"{said} prints credentials"
    elif _hunts_credentials(name, words):
        e.hunts = f"{said} searches for credentials"
    return e


_TIMED_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?=", re.S)


def _times_assignments(e: Effect) -> bool:
    """``time c=cat``: the keyword times assignments, which bash makes in this shell (the
    walker follows their values); no program runs. One that changes what later programs run
    (``time PATH=bin``) is left to be judged as the program it would name."""
    if e.wrappers != ["time"]:
        return False
    names = [_TIMED_ASSIGNMENT.match(w.value or "") for w in e.argv]
    return all(m is not None and not is_dangerous_variable(m.group(1)) and
               not shell_code_var(m.group(1)) for m in names)


_SECRET_NAME = re.compile(r"(?i)token|secret|passw|api_?key|credential|auth")
_SECRET_PATTERN = re.compile(r"(?i)token|secret|passw|api_?key|credential|private.?key|AKIA|"
                             r"BEGIN [A-Z ]*PRIVATE|aws_access|bearer|ghp_|xox[bp]")
"""A search for these prints credentials it finds (sent over the network: refused)."""
SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep", "git-grep"})
ENVIRONMENT_PRINTERS = frozenset({"env", "printenv"})
"""Print the environment, where live tokens and keys are: searched for credentials, a person
sees them first (``printenv | grep -i token``); printed whole, it is a read."""
_DIGESTS = frozenset({"wc", "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum",
                      "cksum"})


def prints_none_of_its_input(argv: list[Word]) -> bool:
    """Whether a stage prints no text of what it reads, only a count, a digest or a status
    (``wc -l``, ``grep -c``, ``grep -q``, ``sha256sum``): credentials printed into it do not
    reach the output. (Not ``cut -d= -f1``: a value's second line has no ``=`` and is
    printed whole.)"""
    if not argv or any(w.value is None for w in argv):
        return False
    name = (argv[0].value or "").rsplit("/", 1)[-1]
    words = [w.value or "" for w in argv[1:]]
    if name in _DIGESTS:
        return not [w for w in words if not w.startswith("-")]  # its input, not files
    if name in ("grep", "egrep", "fgrep"):
        flags = {w for w in words if w.startswith("-")}
        return bool(flags & {"-c", "--count", "-q", "--quiet", "--silent"}) or any(
            not w.startswith("--") and set(w[1:]) & {"c", "q"} for w in flags)
    return False


_PRINTS_FILES = frozenset({
    "cat", "tac", "nl", "head", "tail", "less", "more", "most", "bat", "batcat", "grep",
    "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk", "cut", "sort", "uniq",
    "paste", "column", "fold", "fmt", "pr", "expand", "strings", "xxd", "od", "hexdump", "hd",
    "base64", "base32", "jq", "yq", "gojq", "dasel", "diff", "sdiff", "colordiff", "envsubst",
    "rev", "comm", "join", "look", "view", "vim", "vi", "nano", "emacs", "cmp", "zcat",
    "python", "python3", "pypy", "pypy3"})
"""Programs that print what the files they read hold (or a part of each line)."""
_QUIET_FLAGS = frozenset({"-c", "--count", "-q", "--quiet", "--silent", "-l", "-L",
                          "--files-with-matches", "--files-without-match", "--brief", "-s"})


def _names_only(args: list[Word]) -> bool:
    """``cut -d= -f1`` (or ``-d = -f 1``): the part of each line before its first ``=``."""
    words = [w.value or "" for w in args]
    joined = set(words) | {a + b for a, b in itertools.pairwise(words)}
    return "-f1" in joined and "-d=" in joined


def prints_secrets_read(argv: list[Word]) -> bool:
    """Whether a program prints the text of the files it reads (``cat .env``, ``grep KEY
    .env``), unlike a count, a test or a list of names (``grep -q``, ``diff -q``, ``wc``,
    ``cp``): a file of secrets read by one reaches the transcript. (``cut -d= -f1`` prints
    a value's second line whole.)"""
    if not argv:
        return False
    name = (argv[0].value or "").rsplit("/", 1)[-1]
    if name not in _PRINTS_FILES:
        return False
    flags = {w.value or "" for w in argv[1:] if (w.value or "").startswith("-")}
    if name == "cut" and _names_only(argv[1:]):
        return False  # cut -d= -f1 .env: the names of the settings
    if name in ("grep", "egrep", "fgrep", "rg", "ag", "ack", "diff"):
        return not (flags & _QUIET_FLAGS or any(
            not f.startswith("--") and set(f[1:]) & {"c", "q", "l", "L"} for f in flags))
    return not (name == "cmp" and flags & {"-s", "--silent", "--quiet"})


def keeps_named_variables(argv: list[Word]) -> bool:
    """Whether a stage after ``env`` keeps only the lines of variables it names, none named
    like a secret (``grep '^PATH='``, ``grep -E '^(LANG|TERM)='``): what it prints holds no
    credential. Not with ``-v``, context lines or patterns from a file."""
    if not argv or any(w.value is None for w in argv) or \
            (argv[0].value or "").rsplit("/", 1)[-1] not in ("grep", "egrep"):
        return False
    words = [w.value or "" for w in argv[1:]]
    flags = [w for w in words if w.startswith("-") and w not in ("-e", "--regexp")]
    patterns = [w for w in words if not w.startswith("-")]  # a second: a file it reads
    letters = {c for f in flags if not f.startswith("--") for c in f[1:]}
    if not letters <= set("EGiswxnHh") or any(f.startswith("--") for f in flags) or \
            len(patterns) != 1:
        return False
    match = _NAMED_VARIABLES.fullmatch(patterns[0])
    names = re.split(r"\\?\|", match.group(1) or match.group(2)) if match else []
    return bool(names) and not any(_SECRET_NAME.search(n) for n in names)


_NAMED_VARIABLES = re.compile(r"\^(?:\\?\(((?:\w+\\?\|)*\w+)\\?\)|(\w+))=")
"""``^NAME=``, ``^(A|B)=`` (``\\(A\\|B\\)`` in a basic pattern): whole names."""


_JSON_QUERIES = frozenset({"jq", "gojq", "jaq", "yq", "tomlq", "xq"})
_READS_ENVIRONMENT = re.compile(r"(?:\$ENV\b|(?<![.\w$\"])(?:env|strenv)\b(?!\s*:)|envsubst)"
                                r"(?:\.(\w+)|\(\s*(\w+)\s*\))?(?!\s*\|\s*keys)")
"""A JSON query's ways to read the environment: ``env``, ``$ENV`` (jq), ``env(NAME)``,
``strenv(NAME)``, ``envsubst`` (yq), and the variable named, when one is (``env.HOME``);
a field or key named env (``.env``, ``{env: 1}``) is not one, nor ``env | keys`` (the
names only)."""


def _prints_credentials(name: str, words: list[str]) -> bool:
    """Whether the words hold one of ``PRINTS_CREDENTIALS[name]`` in order (``gh auth status
    -t``; options between them are skipped). ``env`` and ``printenv`` print the environment,
    where tokens and keys live (``env -u X`` too; ``env CMD`` was unwrapped before, ``env
    -S CMD`` runs CMD); ``printenv NAME`` only NAME. A container's ``inspect`` prints the
    environment it was started with; an image's, network's or volume's does not. A JSON
    query may read the environment (``jq -n env``)."""
    if name == "env":
        return not any(w.startswith("-S") or w.startswith("--split-string") for w in words)
    if name == "podman" and words[:2] == ["kube", "generate"]:
        return True  # the pods' YAML holds their containers' environment
    if name in ("docker", "podman") and (words[:1] == ["inspect"] or words[:2] == [
            "container", "inspect"]):
        fmt = next((w for w in words if w.startswith(("--format", "-f"))), None)
        return fmt is None or "env" in " ".join(words).lower()
    if name in _JSON_QUERIES:
        return any(not (m.group(1) or m.group(2)) or _SECRET_NAME.search(m.group(1) or
                                                                           m.group(2))
                   for w in _query_words(words) for m in _READS_ENVIRONMENT.finditer(w))
    if name == "ps":
        return _ps_environment(words)
    if name == "printenv":
        names = [w for w in words if not w.startswith("-")]
        return not names or any(map(_SECRET_NAME.search, names))
    if name in _VARIABLE_PRINTERS:
        return prints_variables(name, words)
    if name == "kubectl" and words[:1] == ["get"] and _shows_secret_values(words):
        return True  # kubectl get secret db -o jsonpath='{.data.password}'
    if name == "bundle" and words[:1] == ["config"] and words[1:2] in ([], ["list"]):
        return True  # the gem sources' credentials (BUNDLE_GEMS__EXAMPLE__COM) in clear
    if name == "bundle" and words[:2] == ["config", "get"]:  # a source's host: its login
        return any("." in k or "__" in k or _SECRET_NAME.search(k) for k in words[2:])
    if name in ("npm", "pnpm", "yarn"):  # npm config get //registry.npmjs.org/:_authToken
        keys = words[2:] if words[:2] in (["config", "get"], ["c", "get"]) else \
            words[1:] if words[:1] == ["get"] else []
        return any(_SECRET_NAME.search(k) for k in keys if not k.startswith("-"))
    for wanted in p.PRINTS_CREDENTIALS.get(name, ()):
        it = iter(words)
        if all(any(w == want for w in it) for want in wanted):
            return True
    return False


def _query_words(words: list[str]) -> list[str]:
    """A JSON query's words without the names and values ``--arg NAME VALUE`` (and its
    kin) bind: ``--arg env dev`` names ``$env``, not the environment."""
    out, skip = [], 0
    for w in words:
        if skip:
            skip -= 1
        elif w in ("--arg", "--argjson", "--slurpfile", "--rawfile"):
            skip = 2
        else:
            out.append(w)
    return out


_PS_VALUED = "oOpUutgGCsq"
"""ps's Unix options (``-o``, ``-p``, ``-u``..) that take the next word as a value."""
_PS_BSD_VALUED = "oOpUtk"
"""ps's BSD letters (no dash) that take the next word as a value (``u`` is a format)."""


def _ps_environment(words: list[str]) -> bool:
    """``ps e``, ``ps auxe``, ``ps eww``: the BSD ``e`` (no dash) prints each process's
    environment after its command; ``ps -e`` selects every process and prints none."""
    skip = False
    for w in words:
        if skip or w.startswith("--"):
            skip = not skip and w in ("--sort", "--format", "--pid", "--user", "--ppid")
            continue
        letters = w.lstrip("-")
        if not letters.isalpha():
            continue
        valued = _PS_VALUED if w.startswith("-") else _PS_BSD_VALUED
        head = re.split(f"[{valued}]", letters, maxsplit=1)[0]
        if not w.startswith("-") and "e" in head:
            return True
        skip = letters[-1] in valued
    return False


def _shows_secret_values(words: list[str]) -> bool:
    """``kubectl get secret NAME -o yaml`` (json, jsonpath, go-template, custom columns)
    prints the values; the default table and ``-o name`` only names and sizes."""
    resources = [w for w in words[1:3] if not w.startswith("-")]
    if not any(r.split("/")[0].split(".")[0].lower() in ("secret", "secrets")
               for part in resources for r in part.split(",")):
        return False
    formats = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")]
    formats += [w.split("=", 1)[1] for w in words if w.startswith(("-o=", "--output="))]
    formats += [w[2:] for w in words if w.startswith("-o") and len(w) > 2 and w[2] != "="]
    return any(f.split("=")[0] not in ("name", "wide") for f in formats)


_VARIABLE_PRINTERS = frozenset({"set", "declare", "typeset", "export", "readonly", "local"})


def prints_variables(name: str, words: list[str]) -> bool:
    """``set``, ``declare``, ``declare -p``, ``export -p``, ``readonly``: the shell's
    variables with their values, the environment's credentials among them (as ``env``);
    ``declare -p NAME`` prints NAME, a secret when named like one. Not an assignment
    (``export X=1``), ``set -e``, ``declare -f`` (functions only) or ``declare -n`` (the
    name references and the names they stand for)."""
    options = [w for w in words if w[:1] in ("-", "+")]
    names = [w for w in words if w[:1] not in ("-", "+")]
    if name == "set":
        return not words
    if any("=" in n for n in names):
        return False
    if names:  # declare X, export X: no output; declare -p X prints X
        return "-p" in options and any(map(_SECRET_NAME.search, names))
    return not set("".join(o[1:] for o in options)) <= set("fFn") or not options


def _hunts_credentials(name: str, words: list[str]) -> bool:
    """A search for credentials: a pattern naming them given to a searcher, or a secret
    scanner (which prints what it finds)."""
    if name == "trufflehog" or (name == "gitleaks" and "--redact" not in words):
        return True
    if name in SEARCHERS or (name == "git" and words[:1] == ["grep"]) or (
            name == "git" and words[:1] == ["log"] and any(w.startswith(("-S", "-G"))
                                                           for w in words)):
        return any(_SECRET_PATTERN.search(w) for w in words)  # grep -r 'AKIA[0-9A-Z]{16}' .
    return False


def _unwrap(e: Effect, inherited: Mapping[str, str]) -> None:
    for _ in range(16):
        if not e.argv:
            return
        name = program_name(e.argv[0])
        wrapper = p.WRAPPERS.get(name)
        if wrapper is None:
            return
        inner = _wrapper_inner(e, name, wrapper, e.argv[1:], inherited)
        if inner is None:
            return
        e.wrappers.append(name)
        e.argv = inner
    e.at_least("ask", "too many nested wrappers")


def _wrapper_inner(e: Effect, name: str, spec: p.Wrapper, args: list[Word],
                   inherited: Mapping[str, str]) -> list[Word] | None:
    """The wrapped command, or None when the wrapper runs nothing (its own rule applies)."""
    i, n = 0, len(args)
    positionals = spec.positionals  # timeout DURATION, chroot NEWROOT, flock FILE
    by_shell = spec.by_shell
    while i < n:
        v = args[i].value
        if v is None:
            break
        by_shell = by_shell or (v[:1] == "-" and v[1:2] != "-" and bool(
            set(v[1:]) & set(spec.shell_options)))
        if v == "--":
            i += 1
            break
        setting = _setting(spec, v, args, i)
        if name == "env" and "=" in v and not v.startswith("-"):
            _assignment(e, v.partition("=")[0], v.partition("=")[2], inherited)
        elif setting is not None:  # strace -E LD_PRELOAD=x.so: set for the command
            _assignment(e, setting.partition("=")[0], setting.partition("=")[2], inherited)
            i += 1 if v in spec.env_options else 0
        elif not v.startswith("-") or v == "-":
            if not positionals:
                break
            positionals -= 1
            if spec.opens_positional and not (v.isdigit() and i + 1 == n):
                _opened_file(e, name, args[i])  # flock 9 alone locks descriptor 9
        elif not _wrapper_option(e, name, spec, v, args, i):
            return None
        elif _takes_value(spec, v):
            i += 1
        i += 1
    i += positionals
    if spec.risk != "read":
        e.add(spec.risk, f"{name} runs the command {spec.why}")
    inner = args[i:]
    if not inner:
        return None if spec.alone is None else _alone(e, name, spec)
    if by_shell:  # sudo -s CMD: $SHELL -c 'CMD': the words are also judged as shell code
        e.scripts.append((f"{name} -{spec.shell_options[:1] or 'c'}", _joined(inner)))
    return inner


def _opened_file(e: Effect, name: str, target: Word) -> None:
    """``flock FILE``: opened with O_CREAT, so a missing FILE is made (an empty
    ``.git/index.lock`` stops every commit; one outside the workspace is a write there);
    judged where the path leads (``PathJudge._made_if_missing``)."""
    e.creates.append((name, target))


def _joined(words: list[Word]) -> Word:
    if all(w.value is not None for w in words):
        return Word.of(" ".join(w.value or "" for w in words))
    return next(w for w in words if w.value is None)


def _setting(spec: p.Wrapper, v: str, args: list[Word], i: int) -> str | None:
    """``strace -E NAME=VALUE`` (``-ENAME=VALUE``, ``--env=NAME=VALUE``): a variable the
    wrapper sets for the command; None for any other word (``-E NAME`` unsets it)."""
    key = v.split("=", 1)[0] if v.startswith("--") else v[:2]
    if key not in spec.env_options:
        return None
    value = (args[i + 1].value if i + 1 < len(args) else "") if v in spec.env_options else (
        v.partition("=")[2] if v.startswith("--") else v[2:])
    if value is None:
        return "BASH_ENV=?"  # a setting only known at run time: any variable at all
    return value if "=" in value else None


def _takes_value(spec: p.Wrapper, v: str) -> bool:
    if v.startswith("--"):
        return "=" not in v and v in spec.long_values
    return len(v) == 2 and v[1] in spec.short_values


def _wrapper_option(e: Effect, name: str, spec: p.Wrapper, v: str, args: list[Word],
                    i: int) -> bool:
    """Options that change what the wrapper is: False when it does not wrap a command."""
    key = v.split("=", 1)[0] if v.startswith("--") else v[:2]
    if key in spec.no_command:
        return False
    if key in spec.later_options:
        e.at_least("deny", f"{name} {key} schedules a command to run later, unseen")
    if key in spec.script_options:  # -c CODE, -cCODE, --command CODE, --command=CODE
        attached = v.partition("=")[2] if v.startswith("--") else v[2:]
        code = Word.of(attached) if attached or "=" in v else (
            args[i + 1] if i + 1 < len(args) else Word.of(""))
        e.scripts.append((f"{name} {key}", code))
        e.add("read", "")
    if key in spec.write_options:
        target = args[i + 1] if "=" not in v and i + 1 < len(args) else Word.of(
            v.partition("=")[2] if v.startswith("--") else v[2:])
        _wrapper_output(e, f"{name} {key}", target)
    if key in spec.chdir_options:  # -C DIR, -CDIR, --chdir DIR, --chdir=DIR
        attached = v.partition("=")[2] if v.startswith("--") else v[2:]
        folder = Word.of(attached) if attached else args[i + 1] if i + 1 < len(args) else None
        if folder is not None:
            e.chdir.append(folder)
            e.starts_in.append(folder)
    return True


def _wrapper_output(e: Effect, how: str, target: Word) -> None:
    """``time -o FILE``, ``strace -o FILE``: a file written; ``/dev/stderr`` and ``/dev/fd/N``
    are no file; strace's ``-o '|cmd'`` pipes into a command."""
    v = target.value or ""
    if v in NULL_DEVICES or re.fullmatch(r"/dev/fd/\d+", v):
        e.writes.append(target)  # a stream: what its descriptor holds, judged at the end
        return
    if v[:1] in ("|", "!") and how.startswith(("strace", "ltrace")):
        e.scripts.append((how, Word.of(v[1:])))
        return
    e.writes.append(target)
    e.replaces.append(target)
    e.add("write", f"{how} writes a file")


def _alone(e: Effect, name: str, spec: p.Wrapper) -> list[Word] | None:
    if spec.alone == "shell":
        e.add("exec", f"{name} without a command starts a shell")
        e.stdin_code = "shell"  # unshare <<< 'rm a.txt': that shell runs its input
    e.argv = [e.argv[0]]
    return None


_ATTACHED = "it reads a running process's memory or calls, which hold what it was given " \
    "(an agent's keys, a shell's tokens)"


def _attacher(name: str) -> Rule:
    """``strace -p PID`` (a tracer given no command), ``gcore PID``, ``py-spy dump --pid
    PID``: attached to another process, it sees its secrets; only a person may allow that."""

    def rule(e: Effect, args: list[Word]) -> None:
        if name == "py-spy" and not any((w.value or "-").startswith(("-p", "--pid"))
                                        for w in args):
            e.add("exec", "py-spy runs the program it profiles")
            return
        e.add("exec", f"{name} attaches to a running process")
        e.secret = e.secret or _ATTACHED

    return rule


def _assignment(e: Effect, name: str, value: str, inherited: Mapping[str, str]) -> None:
    if shell_code_var(name):
        e.at_least("deny", f"setting {name} makes the shell run code from elsewhere")
    if is_dangerous_variable(name) and not harmless_setting(name, [value], inherited.get(name)):
        e.add("exec", f"setting {name} changes what programs run")
        e.unseen = e.unseen or p.loads_unseen_code(name, [value])
    if command_variable(name):
        e.scripts.append((f"{name}=", run_with_arguments(name, Word.of(value.lstrip("|")))))


# ---------------------------------------------------------------- generic rules


_ASKS_ITSELF = (["--version"], ["--help"], ["-version"], ["-help"], ["version"], ["help"])
"""The whole argument list of a program on the PATH that only asks it about itself (the
last two, the subcommands of Go and Rust tools, only for a program without a rule: a known
program's ``version`` may reach a server, as ``kubectl version`` does)."""


_OUTPUT_OPTIONS = frozenset({"-o", "--output", "--output-file", "--outfile", "--out-file",
                            "--out", "--junit-xml", "--junitxml", "--report-log",
                            "--json-report-file", "--result-log"})


def _output_files(args: list[Word], options: frozenset[str] = _OUTPUT_OPTIONS) -> list[Word]:
    """The words after the options most programs use to name the file they write."""
    found: list[Word] = []
    for i, w in enumerate(args):
        key, eq, value = (w.value or "").partition("=")
        if key in options and eq and value:
            found.append(Word.of(value))
        elif key in options and not eq and i + 1 < len(args):
            found.append(args[i + 1])
    return found


def _unknown(e: Effect, name: str) -> None:
    what = "a program given by path" if "/" in name else "an unknown program"
    e.add("exec", f"{name} is {what}")  # what its arguments may run: shell._hidden_command
    for target in _output_files(e.argv[1:]):  # eslint -o README.md: most likely its output
        e.writes.append(target)
        e.replaces.append(target)
    for target in _output_files(e.argv[1:], frozenset({"--basetemp"})):
        e.trees.append(target)
        e.add("destructive", f"{name} --basetemp empties the folder it names first")
    verb = teardown_verb(e.argv[1:])
    if verb is not None:
        e.add("destructive", f"{name} {verb}: an unknown program asked to tear something down")


_MAVEN_START = Loads((".mvn/jvm.config", ".mvn/extensions.xml", ".mvn/maven.config"),
                     upward=True)
"""What ``mvn`` loads from the project before anything, ``-v`` included: its JVM's options
(``-javaagent:`` runs code), core extensions, and options for itself (``-l a.txt`` writes
its log over a.txt)."""
_PYTEST_START = (
    Loads(("conftest.py", "tests/conftest.py", "test/conftest.py", "testing/conftest.py")),
    Loads(("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"),
          keys=("addopts", "-p ", "plugins", "log_file", "pythonpath", "testpaths"),
          upward=True))
"""What ``pytest`` loads before it answers even ``--help``: conftest files and the plugins and
log file its configuration names."""
_FLASK_START = (Loads(("app.py", "wsgi.py")),
                Loads((".flaskenv", ".env"), keys=("flask_app",)))
"""``flask --help`` imports the application (app.py, wsgi.py, what FLASK_APP names) to list
its commands."""

_STARTUP_LOADS = {"pytest": _PYTEST_START, "py.test": _PYTEST_START, "flask": _FLASK_START}
"""Programs without a rule of their own that load the project before any other work,
``--help`` and ``--version`` included."""


_MAVEN_QUERIES = frozenset({"help:effective-pom", "help:describe", "help:active-profiles",
                            "help:all-profiles", "dependency:tree", "dependency:list",
                            "help:evaluate"})
"""Goals that print the model of the build (the effective POM, the dependency graph) and
run no plugin of the project's (not ``help:effective-settings`` or ``help:system``, which
print credentials and the environment; not ``dependency:analyze``, which compiles)."""
_MAVEN_QUIET = frozenset({"-o", "--offline", "-q", "--quiet", "-B", "--batch-mode", "-N",
                          "--non-recursive", "-e", "--errors", "-ntp", "--no-transfer-progress",
                          "-Dverbose", "-Dverbose=true", "-X", "--debug"})
_MAVEN_PROPERTIES = frozenset({"expression", "forceStdout", "includes", "excludes", "scope",
                               "verbose"})
"""``-Dkey=value`` settings of those goals that choose what is printed (not ``-Doutput``,
``-DoutputFile``: a file written)."""
_MAVEN_EXTENSIONS = Loads(("pom.xml",), ("<extensions>",))
"""A POM's build extensions (and plugins marked ``<extensions>true``) load as Maven starts,
whatever goal runs."""


def _maven_property(word: str | None) -> bool:
    """``-Dexpression=project.version``: a setting of what a query goal prints."""
    return (word or "").startswith("-D") and (word or "")[2:].split("=")[0] in _MAVEN_PROPERTIES


def _mvn(e: Effect, args: list[Word]) -> None:
    """``mvn -v`` prints the versions; ``mvn -o dependency:tree`` and ``help:effective-pom``
    print the build's model (asking the repositories unless offline); any other use runs the
    build's plugins (judged as an unknown program: a teardown verb, an output file)."""
    e.loads_here.append(_MAVEN_START)
    words = [w.value for w in args]
    if words in (["-v"], ["--version"], ["-version"], ["-h"], ["--help"]):
        return
    goals = [w for w in words if w and not w.startswith("-")]
    if None not in words and goals and set(goals) <= _MAVEN_QUERIES and all(
            w in _MAVEN_QUIET or w in goals or _maven_property(w) for w in words):
        e.loads_here.append(_MAVEN_EXTENSIONS)
        if not {"-o", "--offline"} & set(words):
            e.add("network", "mvn fetches the plugins and dependencies it lacks")
        return
    _unknown(e, "mvn")


def _network_tool(name: str) -> Rule:
    """A network client (``gh``, ``rclone``, ``etcdctl``...): a teardown verb among its first
    words (``gh repo delete``, ``rclone purge``) deletes remote data."""

    def rule(e: Effect, args: list[Word]) -> None:
        e.add("network", f"{name} uses the network")
        verb = teardown_verb(args)
        if verb is not None:
            e.add("destructive", f"{name} {verb} deletes remote data")

    return rule


_PLUGIN_READERS = frozenset({"nm", "objdump", "readelf", "size", "c++filt", "addr2line",
                             "strings"})


def _plugin_loader(name: str, read: Rule) -> Rule:
    """A binutils reader (``nm``, ``objdump``): ``--plugin LIB`` (or an abbreviation of it)
    loads the shared library LIB and runs its code; ``@FILE`` reads more options from FILE
    (``--plugin`` among them)."""
    def rule(e: Effect, args: list[Word]) -> None:
        read(e, args)
        if any(w.value is None or (len(w.value) > 4 and "--plugin".startswith(
                w.value.partition("=")[0])) for w in args if (w.value or "--").startswith("--")):
            e.add("exec", f"{name} --plugin loads a shared library and runs its code")
        if any((w.value or "").startswith("@") for w in args):
            e.add("exec", f"{name} @FILE reads options from FILE (--plugin loads a library)")
    return rule


def _history(e: Effect, args: list[Word]) -> None:
    """``history -r FILE`` reads a file into the history, ``-w``/``-a`` write one."""
    o = parse_opts(args, "d")
    files = [w for w in o.positionals if not (w.value or "").isdigit()]
    if o.has("-w", "-a"):
        e.writes.extend(files or [Word(None, "$HISTFILE", "var")])
        if o.has("-w"):  # -w writes the history over the file; -a appends to it
            e.replaces.extend(files)
        e.add("write", "history -w/-a writes the history file")
    elif o.has("-r", "-n"):
        e.reads.extend(files or [Word(None, "$HISTFILE", "var")])
    elif o.has("-s", "-c", "-d"):
        e.add("exec", "history -s/-c/-d changes the shell history")


def _output_options(options: frozenset[str], changes: frozenset[str] = frozenset(),
                    why: str = "", filters: frozenset[str] | None = None) -> Rule:
    """A reader (``ss``, ``sar``, ``info``) whose ``options`` name a file it writes (``ss -D
    FILE``, ``sar -o FILE``; a number after ``sar -o`` is its interval) and whose ``changes``
    options act on the system (``ss -K`` closes sockets); otherwise it reads, as
    ``path_args`` judges. ``filters``: its words are a filter expression, not paths (``ss
    state listening 'sport = :8000'``), but for the file these options name."""
    reads = path_args()

    def filtered(e: Effect, args: list[Word]) -> None:
        for i, w in enumerate(args):
            key, eq, value = (w.value or "").partition("=")
            if key in (filters or ()):
                found = Word.of(value) if eq else args[i + 1] if i + 1 < len(args) else None
                e.reads.extend([found] if found is not None else [])
            elif w.value is None and (w.text.lstrip("'\"")[:1] in ("$", "`", "-", "") or (
                    not w.text.startswith(("'", '"')) and INPUT_VAR not in w.text)):
                why = f"{e.argv[0].shown}: a filter word only known at run time (bash may " \
                      "split it, or it may be an option)"
                e.at_least("ask", why)
                e.unseen = e.unseen or why

    def rule(e: Effect, args: list[Word]) -> None:
        rest: list[Word] = []
        i = 0
        while i < len(args):
            key, eq, value = (args[i].value or "").partition("=")
            following = args[i + 1:i + 2]
            target = Word.of(value) if eq else next(
                (w for w in following if not (w.value or "").isdigit()), None)
            if key in options and target is not None:
                e.writes.append(target)
                e.replaces.append(target)
                e.add("write", f"{e.argv[0].shown} {key} writes a file")
                i += 1 if eq else 2
                continue
            if key in changes:
                e.add("exec", why)
            rest.append(args[i])
            i += 1
        (reads if filters is None else filtered)(e, rest)

    return rule


_PID_OPTIONS = frozenset({"-p", "--pid", "-P", "--pgid", "-u", "--uid"})


def _process_setting(e: Effect, args: list[Word]) -> None:
    """``taskset -p MASK PID``, ``chrt -p PRIO PID``, ``ionice -c3 -p PID``, ``prlimit -p PID
    --nofile=N``: given a process and anything more than its id, these change a running
    process (with the id alone they show its setting; with a command they wrap it)."""
    keys = [(w.value or "").partition("=")[0] for w in args]
    given = [w for i, w in enumerate(args) if w.value not in _PID_OPTIONS and not (
        i and args[i - 1].value in _PID_OPTIONS)]  # the words but --pid N
    if program_name(e.argv[0]) == "prlimit" and _PID_OPTIONS & set(keys) and not any(
            w.value is None or re.fullmatch(r"--(?!pid=|output=)\w+=.*|-[a-z]\S+", w.value)
            for w in given):
        return  # prlimit --pid N --nofile: the limits shown (a value after = sets one)
    if _PID_OPTIONS & set(keys) and len(args) > 2:
        e.add("exec", f"{e.argv[0].shown} changes a running process's scheduling or limits")


def capability(argv: list[Word]) -> str:
    """The scope an "always allow" answer grants: program and subcommand, not the string (the
    policy prefixes the shell tool's name: ``<tool>:python -m pytest``)."""
    if not argv:
        return ""
    name = program_name(argv[0]) or argv[0].text
    words = [a.value or "" for a in argv[1:]]
    if name in ("python", "pypy") and len(words) >= 2 and words[0] == "-m":
        return f"{name} -m {words[1]}"
    if name in p.SUBCOMMAND_PROGRAMS:
        skip = False
        for w in words:
            if skip:
                skip = False
            elif w in ("-C", "-c"):
                skip = True
            elif not w.startswith("-"):
                return f"{name} {w}"
    return name






_EDITOR_VALUES: dict[str, tuple[str, frozenset[str]]] = dict.fromkeys(
    ("nano", "pico"), ("YTrsoQX", frozenset({"--syntax", "--operatingdir"})))
"""Editors whose operands are the files they open (vim, ed, emacs and the pagers have
rules of their own): option letters and long options that take the next word."""


def _editor(name: str) -> Rule:
    """An editor or pager: it can write files and run commands (asked), and the files it is
    given are read, judged as paths (one outside the workspace is asked; someone's own is a
    person's call)."""
    values = _EDITOR_VALUES.get(name)

    def rule(e: Effect, args: list[Word]) -> None:
        e.add("exec", f"{name} can write files and run commands")
        if values is not None:
            o = parse_opts(args, values[0], values[1])
            e.reads.extend(w for w in o.positionals
                           if w.value is None or not w.value.startswith(("+", "-")))

    return rule


def _register_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    read_plain = plain()
    for name in p.PLAIN_READ:
        rules[name] = read_plain
    for name, wrapper in p.WRAPPERS.items():
        rules[name] = read_plain if wrapper.risk == "read" else plain(
            "exec", f"{name} without a command")
    for name in (*p.TRACERS, "gcore", "py-spy"):
        rules[name] = _attacher(name)
    for name in p.EDITORS:
        rules[name] = _editor(name)
    for name in p.DESTRUCTIVE_NAMES:
        rules[name] = plain("destructive", f"{name} can destroy data or stop the machine")
    for name in p.NETWORK_NAMES:
        rules[name] = _network_tool(name)
    rules.update({name: _plugin_loader(name, reader(values)) if name in _PLUGIN_READERS else
                  reader(values) for name, values in SIMPLE_READERS.items()})
    for name in p.READS_PATH_ARGUMENTS:
        rules[name] = path_args(not_files=p.ID_OPTIONS.get(name, frozenset()))
    rules["history"] = _history
    rules["ss"] = _output_options(frozenset({"-D", "--diag"}), frozenset({"-K", "--kill"}),
                                  "ss -K closes the sockets it matches",
                                  frozenset({"-F", "--filter"}))
    rules["sar"] = _output_options(frozenset({"-o"}))
    rules["info"] = _output_options(frozenset({"-o", "--output"}))
    for name in ("taskset", "chrt", "ionice", "prlimit"):
        rules[name] = _process_setting
    file_reader = reader("mfFeP", ("--magic-file", "--files-from", "--separator",
                                   "--exclude", "--parameter"),
                         read_opts=("-m", "-f", "--magic-file", "--files-from"))

    def file_rule(e: Effect, args: list[Word]) -> None:
        """``file -C`` compiles the magic files into ``NAME.mgc`` files: a write."""
        file_reader(e, args)
        if any(a.value in ("-C", "--compile") for a in args):
            e.add("write", "file -C writes compiled magic files")

    rules["file"] = file_rule
    rules["mvn"] = _mvn
    for module in (sh, g, f, n, c, infra, system, data, toolchain, js, sdk, platforms,
                   codegen, migrations, gpg):
        rules.update(module.RULES)
    for name in langs.QUERIES:  # deno fmt --check reads; deno run keeps its own rule
        rules[name] = langs.query_rule(name, rules.get(name) or langs.CHANGES.get(name))
    for name in ("mvn", "gradle"):  # mvn deploy, gradle publish: uploads
        rules[name] = langs.publishing(name, rules[name])
    return rules


SIMPLE_READERS: dict[str, str] = {
    "cat": "", "tac": "", "nl": "bdfhilnsvw", "head": "nc", "tail": "ncs", "ls": "IwT",
    "dir": "IwT", "vdir": "IwT", "stat": "c", "file": "mfFeP", "du": "dtBX",
    "diff": "CUxXIFLSD", "cmp": "in", "comm": "", "join": "12jotae",
    "paste": "d", "cut": "bcdf", "fold": "w", "fmt": "wpg", "od": "AjNtwS", "hexdump": "enfs",
    "hd": "enfs", "strings": "ntTeo", "md5sum": "", "sha1sum": "", "sha224sum": "",
    "sha256sum": "", "sha384sum": "", "sha512sum": "", "b2sum": "l", "cksum": "a", "sum": "",
    "base32": "w", "column": "csoNRHWlTEripn", "shellcheck": "sSfeioPW", "expand": "t",
    "unexpand": "t", "pr": "",
    "look": "t", "zcat": "", "bzcat": "", "xzcat": "", "lzcat": "",
    "rev": "", "readelf": "", "objdump": "", "nm": "", "size": "", "wc": "", "eza": "IwTL",
    "exa": "IwTL", "lsd": "IwT",
    "getfacl": "", "lsattr": "", "tsort": "", "bc": "", "identify": "",
    "zipinfo": "", "pyflakes": "", "pycodestyle": "", "yamllint": "cdf",
    "shasum": "a", "c++filt": "s", "addr2line": "ej", "lz4cat": "", "namei": "",
    "lsdiff": "ixpI", "filterdiff": "ixpI#", "datamash": "tgRc", "interdiff": "pUd",
    "combinediff": "pUd", "grepdiff": "ixpI",
    **dict.fromkeys(("zdiff", "zcmp", "xzdiff", "xzcmp", "bzdiff", "bzcmp", "lzdiff", "lzcmp"),
                    "CUxXIFLSDin"),
}
"""Programs that only read the files named by their positionals: name -> short value options."""

RULES: dict[str, Rule] = _register_rules()
