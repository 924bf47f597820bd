"""Rules for git: subcommands, global options and ``-c`` settings that run programs."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from functools import partial

from engine.permissions import programs as p
from engine.permissions.effect import (
    Effect,
    Loads,
    Opts,
    Rule,
    abbreviates,
    parse_opts,
    run_with_arguments,
)
from engine.permissions.git_repos import working_repository
from engine.permissions.shell_values import LISTED_TEXT
from engine.permissions.words import Word
from engine.tooling.spec import Risk

# ---------------------------------------------------------------- git

GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                               "--config-env", "--super-prefix", "--attr-source", "--exec-path"})


def _git(e: Effect, args: list[Word]) -> None:
    i, n = 0, len(args)
    aliases: dict[str, list[str]] = {}
    _repository_found(e, args)
    while i < n:
        v = args[i].value
        if v is None:
            e.add("exec", "git option only known at run time")
            e.at_least("ask", "")
            return
        if not v.startswith("-") or v in ("--version", "--help", "-h"):
            break
        key, eq, inline = v.partition("=")
        value = Word.of(inline) if eq else (args[i + 1] if i + 1 < n else Word.of(""))
        if key in GIT_GLOBAL_VALUES and not eq:
            i += 1
        _git_global(e, key, value)
        if key == "-c":
            _remember_alias(aliases, value.value or "")
        i += 1
    if i >= n:
        return
    sub = args[i].value or ""
    rest = args[i + 1:]
    expansion = aliases.get(sub) if sub not in _BUILTIN and sub not in GIT_SUBCOMMANDS else None
    if expansion:  # git -c alias.lg='log --oneline' lg -5 is git log --oneline -5
        sub, rest = expansion[0], [Word.of(w) for w in expansion[1:]] + rest
    rest = _without_undone(sub, rest)
    if _only_prints(sub, rest):
        return
    _git_output(e, sub, rest)
    handler = GIT_SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(e, rest)
    elif sub in p.GIT_READ:
        return
    elif sub in p.GIT_WRITE:
        e.add("write", f"git {sub} changes the repository or files")
    elif sub in p.GIT_NETWORK:
        e.add("network", f"git {sub} uses the network")
    elif sub in p.GIT_DESTRUCTIVE:
        e.add("destructive", f"git {sub} rewrites history")
    elif sub in p.GIT_EXEC:
        e.add("exec", f"git {sub} runs other programs")
    else:
        e.add("exec", f"git {sub} is not a known git command (an alias can run anything)")


_DRY_RUNS = frozenset({"add", "rm", "mv"})
"""Subcommands whose ``-n``/``--dry-run`` only prints (none of their short options takes a
value, so ``-rn`` holds it too)."""


def _dry_run(args: list[Word]) -> bool:
    for w in args:
        v = w.value
        if v is None or v == "--":
            return False
        if v == "--dry-run" or (re.fullmatch(r"-[A-Za-z]+", v) and "n" in v):
            return True
    return False


def _repository_found(e: Effect, args: list[Word]) -> None:
    """The repository git finds (``git_repos``), from the folder ``-C`` names (each one
    relative to the last) or the git folder ``--git-dir`` names: one made of the
    workspace's files may name programs git runs."""
    folder, named = ".", None
    for k, w in enumerate(args):
        v = w.value or ""
        if not v.startswith("-"):
            break
        key, eq, inline = v.partition("=")
        value = inline if eq else args[k + 1].value if k + 1 < len(args) else ""
        if key == "-C" and value:
            folder = os.path.join(folder, value)
        elif key == "--git-dir" and value:
            named = os.path.join(folder, value)
    if named is not None:
        e.loads_here.append(Loads((named,), runs_in=partial(working_repository, named=True)))
    else:
        e.loads_here.append(Loads((folder,), runs_in=working_repository))


def _git_global(e: Effect, key: str, value: Word) -> None:
    if key == "-C" or key in ("--git-dir", "--work-tree"):
        e.reads.append(value)
    elif key == "-c":
        name = (value.value or "").partition("=")[0].lower()
        setting = (value.value or "").partition("=")[2].lower()
        safe = name.startswith(p.GIT_SAFE_CONFIG_PREFIXES) or (
            name.startswith("pager.") and setting in ("false", "true", "0", "1", "no", "yes")) or (
            name == "core.fsmonitor" and not runs_command(name, setting))
        raw_value = (value.value or "").partition("=")[2]
        if value.value is None or not (safe or _pager_setting(name)
                                       or _git_alias(name, raw_value)):
            e.add("exec", f"git -c {name or value.shown} can make git run programs")
        raw = (value.value or "").partition("=")[2]
        if runs_command(name, raw):
            e.scripts.append((f"git -c {name}",
                              run_with_arguments(name, Word.of(raw.removeprefix("!")))))
    elif key in ("--config-env", "--exec-path", "-p", "--paginate"):
        e.add("exec", f"git {key} can make git run programs")


def _only_prints(sub: str, rest: list[Word]) -> bool:
    """``git reset -h`` prints the usage (an alias's ``-h`` would run the alias); ``git rm
    -n``, ``git mv --dry-run`` only say what they would do."""
    if [w.value for w in rest] == ["-h"] and (sub in _BUILTIN or sub in GIT_SUBCOMMANDS):
        return True
    return sub in _DRY_RUNS and _dry_run(rest)


_BUILTIN = p.GIT_READ | p.GIT_WRITE | p.GIT_NETWORK | p.GIT_EXEC | p.GIT_DESTRUCTIVE
"""Subcommands an alias cannot replace (git ignores an alias named like a command)."""


def _remember_alias(aliases: dict[str, list[str]], setting: str) -> None:
    """``alias.NAME=git words`` (not ``!shell``): NAME stands for those git words."""
    name, _, value = setting.partition("=")
    if not name.lower().startswith("alias.") or value.startswith("!"):
        return
    try:
        words = shlex.split(value)
    except ValueError:
        return
    if words:
        aliases[name[len("alias."):]] = words


_CONFIG_VALUES = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment",
                            "--value"})
"""``git config`` options whose value is the next word."""


def configured_alias(argv: list[Word]) -> str | None:
    """``git config [--local] [set] alias.NAME VALUE`` as the setting ``alias.NAME=VALUE``:
    a later ``git NAME`` in the same command runs it, as with ``git -c``."""
    words = [w.value for w in argv[1:]]
    if None in words or "config" not in words:
        return None
    rest = [w or "" for w in words[words.index("config") + 1:]]
    if any(w.startswith("-") and w not in _CONFIG_VALUES and "=" not in w and w not in (
            "--local", "--global", "--system", "--worktree", "--add", "--replace-all")
           for w in rest):
        return None  # --unset, --get, --list: no alias set
    positional: list[str] = []
    i = 0
    while i < len(rest):
        i += 2 if rest[i] in _CONFIG_VALUES else 1
        if not rest[i - 1].startswith("-") and (i < 2 or rest[i - 2] not in _CONFIG_VALUES):
            positional.append(rest[i - 1])
    if positional[:1] == ["set"]:
        positional = positional[1:]
    if len(positional) == 2 and positional[0].lower().startswith("alias."):
        return f"{positional[0]}={positional[1]}"
    return None


def _git_alias(name: str, value: str) -> bool:
    """A git alias of git words (not ``!shell``): judged where it is called."""
    return name.startswith("alias.") and not value.startswith("!") and len(name) > 6


def _pager_setting(name: str) -> bool:
    """``core.pager``, ``pager.log``, ``core.editor``: the value is the command line git runs
    (judged as a nested command), and ``-c`` sets it for this call only."""
    return name in ("core.pager", "core.editor", "sequence.editor") or name.startswith("pager.")


_BOOLEAN = frozenset({"false", "true", "0", "1", "no", "yes", "on", "off", ""})


def runs_command(name: str, value: str) -> bool:
    """Whether git runs the value of setting ``name`` as a command (now or on a later call)."""
    parts = name.lower().split(".")
    first, last = parts[0], parts[-1]
    if name.lower() == "core.fsmonitor" and value.lower() in ("false", "0", "no", "off"):
        return False  # the hook turned off (true starts git's own daemon: still judged)
    if name.lower() in p.GIT_SHELL_CONFIG:
        return True
    if first == "alias":
        return value.startswith("!")
    if first == "pager":
        return value.lower() not in _BOOLEAN
    if first == "submodule" and last == "update":
        return value.startswith("!")
    if len(parts) >= 3 and (first, last) in _COMMAND_KEYS:
        return True
    return (first, last) in _COMMAND_KEYS and len(parts) == 2


_COMMAND_KEYS = frozenset({
    ("diff", "textconv"), ("diff", "command"), ("filter", "clean"), ("filter", "smudge"),
    ("filter", "process"), ("merge", "driver"), ("difftool", "cmd"), ("mergetool", "cmd"),
    ("man", "cmd"), ("browser", "cmd"), ("gpg", "program"), ("credential", "helper"),
    ("remote", "uploadpack"), ("remote", "receivepack"), ("remote", "proxy"),
    ("core", "gitproxy"), ("core", "alternaterefscommand"), ("uploadpack", "packobjectshook"),
    ("include", "path"), ("includeif", "path"), ("web", "browser"), ("sequence", "editor"),
    ("core", "pager"), ("core", "editor"), ("core", "sshcommand"), ("core", "fsmonitor"),
    ("core", "hookspath"), ("core", "askpass"), ("diff", "external"), ("sendemail", "tocmd"),
    ("sendemail", "cccmd"), ("sendemail", "smtpserver"), ("instaweb", "httpd"),
    ("gpg", "ssh"), ("ssh", "variant"), ("hook", "command"), ("init", "templatedir"),
    ("clone", "templatedir"), ("tar", "command"), ("trailer", "cmd"), ("trailer", "command"),
})
"""(first, last) parts of settings whose value is a program or config git loads."""


_OPTION_WRITERS = frozenset({"log", "show", "diff", "diff-tree", "diff-index", "diff-files",
                             "whatchanged", "shortlog", "blame", "rev-list", "range-diff",
                             "format-patch", "grep", "archive"})
"""Subcommands with an option that writes a file or runs a program in one word
(``--output=FILE``, ``-O<pager>``): a word only known at run time may be that option."""
_MAY_LEAD_WITH_A_DASH = re.compile(r'"?(?:\$|`|<)')
"""A word whose value starts with what an expansion gives (``"$x"``, ``$(cat f)..HEAD``) or
with words a program reads (``cat f | xargs git log``)."""


_GREP_VALUES = frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "--max-depth",
                          "--threads", "--context", "--after-context", "--before-context"})
_LOG_VALUES = frozenset({"-n", "--max-count", "--skip", "--format", "--pretty", "--author",
                         "--committer", "--grep", "--since", "--until", "--after", "--before",
                         "-S", "-G", "-L", "--date", "--encoding"})
"""Options of ``git grep`` and of the log family whose value is the next word (a pattern,
a count, a date): a word there is that value, never an option."""


def _options_at_run_time(e: Effect, sub: str, rest: list[Word]) -> None:
    """``git log "$(cat f)"`` with f holding ``--output=src/app.py`` writes over that file:
    a word only known at run time before ``--``, in a slot an option may take, is
    unseen unless it starts with text or is an object id (``"$(git merge-base a b)"``)."""
    if sub not in _OPTION_WRITERS:
        return
    valued = False
    for w in rest:
        if w.value == "--":
            return
        if not valued and w.value is None and not w.dashless and \
                _MAY_LEAD_WITH_A_DASH.match(w.text):
            why = f"git {sub} {w.text}: a word only known at run time may be an option " \
                "(--output=FILE writes a file)"
            e.add("write", why)
            e.unseen = e.unseen or why
            return
        valued = w.value in (_GREP_VALUES if sub == "grep" else _LOG_VALUES)


def _git_output(e: Effect, sub: str, rest: list[Word]) -> None:
    _options_at_run_time(e, sub, rest)
    o = parse_opts(rest, "o" if sub in ("format-patch", "archive") else "",
                   frozenset({"--output", "--output-directory", "--exec", "--receive-pack",
                              "--upload-pack", "--remote"}))
    for w in o.all("--output", "--output-directory", "-o"):
        e.writes.append(w)
        e.add("write", f"git {sub} --output writes a file")
    e.replaces.extend([*o.all("--output"), *(o.all("-o") if sub == "archive" else ())])
    if o.has("--ext-diff", "--exec", "--receive-pack", "--upload-pack", "--textconv") or \
            any(w.value in ("-O", "--open-files-in-pager") for w in rest):
        e.add("exec", f"git {sub} option runs another program")  # -O alone: the pager
    for name in ("--exec", "--receive-pack", "--upload-pack"):
        for w in o.all(name):
            e.scripts.append((f"git {sub} {name}", w))
    if sub in ("clone", "fetch", "ls-remote", "pull", "archive"):
        for w in parse_opts(rest, "u").all("-u"):
            e.scripts.append((f"git {sub} -u", w))
    for w in rest:
        if (w.value or "").startswith("ext::"):  # the ext transport runs its URL
            e.add("exec", f"git {sub} ext:: runs the command in the URL")
            e.nested.append((f"git {sub} ext::", [Word.of(a) for a in ext_command(w.value or "")]))
    if sub == "archive" and o.has("--remote"):
        e.add("network", "git archive --remote uses the network")
    if sub == "clone" and len(o.positionals) >= 2:
        e.writes.append(o.positionals[-1])
    if sub == "diff" and o.has("--no-index"):
        e.reads.extend(o.positionals)
    elif sub == "diff":  # a path outside the repository makes it a --no-index diff
        e.reads.extend(w for w in o.positionals
                       if w.value is None or w.value.startswith(("/", "~", "../")))


def ext_command(url: str) -> list[str]:
    """The argv of an ``ext::`` URL: words split at spaces, ``% `` a space inside a word,
    ``%%`` a percent sign, ``%s``/``%S``/``%G`` what git fills in."""
    words, current, i, body = [], "", 0, url[len("ext::"):]
    while i < len(body):
        ch = body[i]
        if ch == "%" and i + 1 < len(body):
            nxt = body[i + 1]
            current += {" ": " ", "%": "%"}.get(nxt, "x")
            i += 2
            continue
        if ch == " ":
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
        i += 1
    return [*words, current] if current else words


def _git_listing(write_opts: tuple[str, ...], list_opts: tuple[str, ...],
                 exec_opts: tuple[str, ...] = (), deletes: str = "") -> Rule:
    """``git branch``/``git tag``: listing unless a name or a changing option is given;
    ``deletes``: why ``-d`` alone destroys (a tag has no merged check and no reflog)."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, "", frozenset({"--contains", "--no-contains", "--points-at",
                                            "--sort", "--format", "--merged", "--no-merged"}))
        if o.has(*exec_opts):
            e.add("exec", "opens an editor")
        elif "-D" in o.flags or ("-d" in o.flags and o.has("-f", "--force")) or (
                o.has("--delete") and o.has("-f", "--force")):
            e.add("destructive", "git branch -D deletes a branch with unmerged work")
        elif o.has("-d", "--delete") and not deletes:
            e.add("destructive", "git branch -d deletes a branch and its reflog (a merged "
                                 "branch's work stays in the one it was merged into)")
        elif deletes and o.has("-d", "--delete"):
            e.add("destructive", deletes)
        elif o.has(*write_opts) or (o.positionals and not o.has(*list_opts)):
            e.add("write", "creates, moves or deletes refs")

    return rule


def _git_remote(e: Effect, args: list[Word]) -> None:
    sub = args[0].value if args else None
    if sub == "show" and len(args) > 1 and "-n" not in [w.value for w in args[1:]]:
        e.add("network", "git remote show NAME asks the remote for its branches (-n: not)")
        return
    if sub in (None, "-v", "--verbose", "show", "get-url"):
        return
    if sub in ("update", "prune"):
        e.add("network", f"git remote {sub} uses the network")
    else:
        e.add("write", f"git remote {sub} changes the repository configuration")


def _git_stash(e: Effect, args: list[Word]) -> None:
    if args and args[0].value in ("list", "show"):
        return
    if args and args[0].value in ("clear", "drop"):
        e.add("destructive", f"git stash {args[0].value} deletes stashed work")
        return
    e.add("write", "git stash changes the working tree")


def _git_checkout(e: Effect, args: list[Word]) -> None:
    """``git checkout [TREE] -- PATHS``, ``git checkout .``, ``-f``: overwrite local changes."""
    o = parse_opts(args, "bBc", frozenset({"--orphan", "--conflict", "--pathspec-from-file"}))
    dashdash = any(a.value == "--" for a in args)
    paths = o.positionals
    if o.has("-p", "--patch"):  # its input answers which hunks: each "y" is discarded
        e.add("destructive", "git checkout -p discards the changes its input says yes to")
    elif o.has("-f", "--force", "--pathspec-from-file") or (dashdash and paths) or (
            not o.has("-b", "-B", "--orphan", "-c") and
            (len(paths) >= 2 or any(_pathlike(w) for w in paths))):
        e.add("destructive", "git checkout of paths (or -f) discards uncommitted changes")
    else:
        e.add("write", "git checkout switches branches")


def _pathlike(w: Word) -> bool:
    v = w.value
    return v is None or v in (".", "..", "*") or v.startswith(("./", ":/", ":(")) or any(
        c in v for c in "*?[") or v.endswith("/")


def _git_restore(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "s", frozenset({"--source", "--pathspec-from-file"}))
    if o.has("-S", "--staged") and not o.has("-W", "--worktree"):
        e.add("write", "git restore --staged unstages changes")
    else:
        e.add("destructive", "git restore overwrites uncommitted changes in the working tree")


def _git_mv(e: Effect, args: list[Word]) -> None:
    """``git mv -f SRC DEST`` replaces an existing DEST (without ``-f`` git refuses)."""
    options = [a.value for a in args if a.value is not None][:len(args)]
    if "--" in options:
        options = options[:options.index("--")]
    if any(v == "--force" or (v.startswith("-") and not v.startswith("--") and "f" in v)
           for v in options):
        e.add("destructive", "git mv -f replaces an existing file")
    else:
        e.add("write", "git mv changes the repository or files")


def _git_switch(e: Effect, args: list[Word]) -> None:
    if any(a.value in ("-f", "--force", "--discard-changes") for a in args):
        e.add("destructive", "git switch -f discards uncommitted changes")
    else:
        e.add("write", "git switch changes the branch")


def _git_gc(e: Effect, args: list[Word]) -> None:
    if any(a.value is None or (a.value.startswith("--prune") and a.value != "--prune=never")
           for a in args):
        e.add("destructive", "git gc --prune deletes unreachable commits")
    else:
        e.add("write", "git gc repacks the repository")


def _git_rm(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args)
    if o.has("--cached"):
        e.add("write", "git rm --cached unstages files")
    elif o.has("-f", "--force"):
        e.add("destructive", "git rm -f deletes files with uncommitted changes")
    else:
        e.add("write", "git rm deletes tracked files")


_REPOSITORY_SCOPES = ("--local", "--worktree", "--file", "-f", "--blob")
"""What keeps ``git config --list`` to the repository's own files (``-f`` names one, which
the path rules judge)."""


_SECRET_KEYS = ("http.https://example.com/.extraheader", "http.extraheader",
                "sendemail.smtppass", "github.token", "hub.oauthtoken", "gitlab.token",
                "credential.https://example.com.password", "http.proxyauthmethod",
                "url.https://x-access-token:t@example.com/.insteadof",
                "url.https://t@example.com/.pushinsteadof")
"""Names of settings that hold secrets (an ``Authorization`` header CI writes, a mail or
forge password; a URL's token in the key of ``url.<base>.insteadOf``): a key, or a
``--get-regexp`` pattern, that names or matches one of them prints it."""
_SECRET_WORDS = re.compile(r"extraheader|passw|pass$|token|secret|auth(?!or)", re.I)


def _prints_secret_setting(o: Opts, first: str | None) -> bool:
    """``git config --get-regexp 'http\\..*\\.extraheader'``, ``git config github.token``:
    a read of settings that hold secrets from every scope (the user's and the system's
    files, outside the workspace)."""
    if o.has(*_REPOSITORY_SCOPES):
        return False
    keys = o.positionals[1:] if first in ("get", "get-regexp", "get-all") else o.positionals
    if not keys:
        return False
    pattern = keys[0].value
    if pattern is None:
        return True
    if o.has("--get-regexp", "--get-urlmatch") or first in ("get-regexp",) or o.has(
            "--regexp"):
        try:
            compiled = re.compile(pattern, re.I)
        except re.error:
            return True
        return any(compiled.search(k) for k in _SECRET_KEYS) or bool(
            _SECRET_WORDS.search(pattern))
    return bool(_SECRET_WORDS.search(pattern.rpartition(".")[2]))


def _git_config(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "f", frozenset({"--file", "--blob", "--type", "--default"}))
    reading = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch",
               "--get-color", "--get-colorbool")
    changing = ("--unset", "--unset-all", "--add", "--replace-all", "--remove-section",
                "--rename-section")
    first = o.positionals[0].value if o.positionals else None
    files = o.all("-f", "--file")  # git config -f ~/.gitconfig: judged where it lies
    if o.has("-e", "--edit") or first == "edit":
        e.add("exec", "git config --edit opens an editor")
        e.writes.extend(files)
    elif o.has(*reading) or first in ("get", "list", "get-regexp", "get-all") or (
            len(o.positionals) == 1 and not o.has(*changing)):
        e.reads.extend(files)
        if _prints_secret_setting(o, first):
            e.secret = "git config prints a setting that holds a secret (from the user's " \
                       "and the system's configuration too)"
        if (o.has("--list", "-l") or first == "list") and not o.has(*_REPOSITORY_SCOPES):
            e.at_least("ask", "git config --list prints the user's and the system's "
                              "configuration too (~/.gitconfig, /etc/gitconfig: outside the "
                              "workspace, where URLs can hold tokens)")
    else:
        e.add("write", "git config changes configuration (which can make git run programs)")
        e.writes.extend(files)
        if o.has("--global"):  # every repository of the user's, outside the workspace
            e.writes.append(Word.of("~/.gitconfig"))
        elif o.has("--system"):
            e.writes.append(Word.of("/etc/gitconfig"))
        keys = o.positionals[1:] if first in ("set", "unset") else o.positionals
        unsetting = first == "unset" or o.has("--unset", "--unset-all", "--remove-section")
        if keys and not unsetting:
            key = keys[0].value
            value = keys[1].value if len(keys) > 1 else ""
            if key is None or value is None or runs_command(key, value):
                e.at_least("deny", f"git config {keys[0].shown} plants a command git runs "
                                   "later")


def _git_var(e: Effect, args: list[Word]) -> None:
    """``git var -l`` prints the whole configuration, the user's and the system's files too
    (where a URL's token can be); ``git var GIT_EDITOR`` prints one value."""
    if any(a.value in ("-l", None) for a in args):
        e.secret = "git var -l prints the user's and the system's configuration too " \
                   "(~/.gitconfig: outside the workspace, where URLs can hold tokens)"


def _git_reset(e: Effect, args: list[Word]) -> None:
    if any(a.value in ("--hard", "--merge", "--keep") for a in args):
        e.add("destructive", "git reset --hard discards uncommitted work")
    else:
        e.add("write", "git reset moves the branch")


def _git_clean(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "e", frozenset({"--exclude"}))
    if o.has("-n", "--dry-run"):
        return
    if o.has("-i", "--interactive"):
        e.add("exec", "git clean -i is interactive")
        return
    e.add("destructive", "git clean deletes untracked files")


def _git_push(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "o", frozenset({"--repo", "--push-option", "--receive-pack",
                                         "--exec", "--signed"}))
    forced = o.has("-f", "--force", "--force-with-lease", "--force-if-includes", "--delete",
                   "-d", "--mirror", "--prune")
    refs = [w.value if w.value is not None else re.sub(r"^[\"']", "", w.text)
            for w in o.positionals[1:]]  # ":refs/tags/$t": a delete, whatever $t holds
    if forced or any(r.startswith(("+", ":")) for r in refs):
        e.add("destructive", "git push overwrites or deletes remote history")
    else:
        e.add("network", "git push uploads to a remote")


def _git_rebase(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "xsX", frozenset({"--exec", "--strategy", "--strategy-option",
                                           "--onto"}))
    for code in o.all("-x", "--exec"):
        e.scripts.append(("git rebase --exec", code))
    if any((a.value or "").startswith(("-x", "--exec", "-i", "--interactive")) for a in args):
        e.add("exec", "git rebase --exec/--interactive runs commands or an editor")
    else:
        e.add("write", "git rebase rewrites the branch")


def _without_ref(args: list[Word]) -> list[Word]:
    """``git notes --ref=review show``: the words after the notes ref is chosen."""
    i = 0
    while i < len(args) and (args[i].value or "").startswith("--ref"):
        i += 1 if "=" in (args[i].value or "") else 2
    return args[i:]


def _foreach(e: Effect, args: list[Word]) -> None:
    """``git submodule foreach [--quiet] [--recursive] CMD``: one word is shell code, more
    are a command, run in each submodule (a folder inside the workspace, so judging its
    paths from here is no less strict); git's own variables there ($name, $toplevel) are
    only known at run time."""
    while args and args[0].value in ("--quiet", "-q", "--recursive"):
        args = args[1:]
    if len(args) == 1:
        e.scripts.append(("git submodule foreach", args[0]))
    elif args:
        e.nested.append(("git submodule foreach", args))


def _submodule(e: Effect, args: list[Word]) -> None:
    """``deinit --force`` discards the submodules' changes; ``foreach`` runs its command;
    ``status`` and ``summary`` read; the rest fetch."""
    words = [a.value for a in args]
    if words[:1] == ["deinit"] and ("-f" in words or "--force" in words):
        e.add("destructive", "git submodule deinit --force discards the submodules' changes")
    elif words[:1] == ["foreach"]:
        _foreach(e, args[1:])
    else:
        _git_sub(("", "status", "summary"), "network", "git submodule fetches")(e, args)


def _git_worktree(e: Effect, args: list[Word]) -> None:
    """``git worktree add PATH`` and ``move WT PATH`` create the folder PATH: judged as a
    write there (outside the workspace: refused); ``remove --force`` discards changes."""
    sub = args[0].value if args else None
    if sub == "remove" and any(a.value in ("-f", "--force") for a in args):
        e.add("destructive", "git worktree remove --force discards its changes")
        return
    _git_sub(("list",), "write", "git worktree changes working trees")(e, args)
    if sub in ("add", "move"):
        o = parse_opts(args[1:], "bB", frozenset({"--reason"}))
        at = 0 if sub == "add" else 1
        if len(o.positionals) > at:
            e.writes.append(o.positionals[at])


def _git_sub(read: tuple[str, ...], risk: Risk, why: str,
             exec_first: tuple[str, ...] = ()) -> Rule:
    """Subcommand families (``git worktree list`` reads, ``git worktree add`` writes)."""

    def rule(e: Effect, args: list[Word]) -> None:
        words = [a.value for a in args]
        first = words[0] if words else None
        if first == "prune" and ("-n" in words or "--dry-run" in words):
            return  # git worktree prune -n: what it would prune, listed
        if first in exec_first:
            e.add("exec", f"{why} ({first} runs commands)")
            code = [a for a in args[1:] if not (a.value or "").startswith("-")]
            if code:
                e.nested.append((f"git bisect {first}", code))
        elif (first is not None and first not in read) or (first is None and "" not in read):
            e.add(risk, why)

    return rule


_APPLY_REPORTS = frozenset({"--check", "--stat", "--numstat", "--summary"})
"""``git apply`` options that report instead of applying (unless ``--apply`` is given too),
wherever they stand (``git apply -R --check``)."""


def _git_apply(e: Effect, args: list[Word]) -> None:
    """``--stat``/``--check`` only report, unless ``--apply`` (or ``--ap``..) applies the
    patch too; ``--build-fake-ancestor=FILE`` writes FILE whole."""
    words = {(a.value or "").partition("=")[0] for a in args}
    applies = any(w == "--apply" or abbreviates(w, "--apply") for w in words)
    if not (words & _APPLY_REPORTS) or applies or "" in words:
        e.add("write", "git apply changes files")
        if any(w == "--unsafe-paths" or (abbreviates(w, "--unsafe-paths") and len(w) > 4)
               for w in words) and not any(w in ("--index", "--cached") or abbreviates(
                   w, "--index") or abbreviates(w, "--cached") for w in words):
            e.at_least("deny", "git apply --unsafe-paths writes where the patch says, outside "
                               "the workspace too")
    o = parse_opts(args, "p", frozenset({"--build-fake-ancestor"}))
    for index in o.all("--build-fake-ancestor"):
        e.writes.append(index)
        e.replaces.append(index)
        e.add("write", "git apply --build-fake-ancestor writes an index file")


def _git_difftool(e: Effect, args: list[Word]) -> None:
    """``git difftool -x CMD`` / ``--extcmd=CMD`` runs CMD (through a shell) on each pair,
    the two files added as its last words: the second is the working tree's own (``-x 'rm
    -f'`` deletes it)."""
    e.add("exec", "git difftool runs other programs")
    o = parse_opts(args, "xtO", frozenset({"--extcmd", "--tool", "--rotate-to", "--skip-to"}))
    for code in o.all("-x", "--extcmd"):
        e.scripts.append(("git difftool --extcmd", code if code.value is None else
                          Word(f'{code.value} "$@"', code.text)))


def _git_plumbing_overwrite(sub: str) -> Rule:
    """``git read-tree -u --reset``, ``git checkout-index -f``: the working tree's files are
    overwritten from the index, changes not committed are lost (like ``reset --hard``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        flags = {a.value for a in args}
        forced = bool({"-f", "--force"} & flags) or any(
            (a.value or "").startswith("-") and not (a.value or "").startswith("--")
            and "f" in (a.value or "")[1:] for a in args)
        if sub == "read-tree" and "-u" in flags and ("--reset" in flags or "-m" in flags):
            e.add("destructive", "git read-tree -u --reset/-m overwrites uncommitted changes")
        elif sub == "checkout-index" and forced:
            e.add("destructive", "git checkout-index -f overwrites uncommitted changes")
        else:
            e.add("write", f"git {sub} changes the index or files")

    return rule


def _git_fsck(e: Effect, args: list[Word]) -> None:
    if any(a.value == "--lost-found" for a in args):
        e.add("write", "git fsck --lost-found writes .git/lost-found")


def _git_maintenance(e: Effect, args: list[Word]) -> None:
    """``git maintenance start``/``register`` add the repository to the user's
    configuration (``~/.gitconfig``) and schedule git in the user's scheduler (cron,
    systemd timers): a job that runs every hour, outside the workspace. ``run`` repacks
    here."""
    verb = next((w.value for w in args if not (w.value or "-").startswith("-")), None)
    e.add("write", "git maintenance changes the repository's objects or schedules git")
    if verb in ("start", "register", "stop", "unregister"):
        e.writes.append(Word.of("~/.gitconfig"))


def _git_bundle(e: Effect, args: list[Word]) -> None:
    """``git bundle create FILE REFS`` writes FILE whole (``-``: the output); ``verify`` and
    ``list-heads`` read a bundle; ``unbundle`` stores its objects."""
    words = [w for w in args if w.value == "-" or not (w.value or "").startswith("-")]
    verb = words[0].value if words else None
    if verb in ("verify", "list-heads"):
        e.reads.extend(words[1:2])
        return
    if verb == "create" and len(words) > 1 and words[1].value == "-":
        return  # the bundle, printed
    e.add("write", "git bundle writes a bundle or stores its objects")
    if verb == "create" and len(words) > 1 and words[1].value != "-":
        e.writes.append(words[1])
        e.replaces.append(words[1])


def _git_reflog(e: Effect, args: list[Word]) -> None:
    """``expire``/``delete`` with ``-n``/``--dry-run`` print what they would drop."""
    first = args[0].value if args else ""
    if first in ("expire", "delete") and any(w.value in ("-n", "--dry-run") for w in args):
        return
    if first in ("expire", "delete", "drop", None):
        e.add("destructive", "git reflog expire/delete/drop drops the history of refs")


def _git_hash_object(e: Effect, args: list[Word]) -> None:
    """``git hash-object FILE`` prints the id FILE would have; ``-w`` stores the object."""
    o = parse_opts(args, "t", frozenset({"--path"}))
    if o.has("-w") or any(name.startswith("-") and not name.startswith("--") and "w" in name
                          for name in o.flags):
        e.add("write", "git hash-object -w writes an object into the repository")
    e.reads.extend(o.positionals)


_PRE_COMMIT_READS = frozenset({"validate-config", "validate-manifest", "sample-config",
                               "help", "--version", "-V"})


def pre_commit(e: Effect, args: list[Word]) -> None:
    """``pre-commit validate-config`` reads; ``run`` runs the configured hooks (programs the
    config names); ``install`` writes a git hook that runs them at every commit, which under
    ``--approval auto`` only a person may; ``autoupdate`` fetches and rewrites the config."""
    verb = next((w.value for w in args if not (w.value or "-").startswith("-")), None)
    if verb in _PRE_COMMIT_READS or (verb is None and args and args[0].value in (
            "--version", "-V", "--help", "-h")):
        e.reads.extend(args[1:])
    elif verb in ("install", "install-hooks", "init-templatedir"):
        e.add("write", "pre-commit install writes a git hook")
        e.unseen = "pre-commit install makes every later commit run the configured hooks"
    else:
        e.add("exec", f"pre-commit {verb or 'run'} runs the hooks its config names")


def _git_merge_tree(e: Effect, args: list[Word]) -> None:
    """``git merge-tree BASE A B`` (the trivial form) prints a merge and writes nothing; with
    two commits or ``--write-tree`` it writes the merged trees into the object store."""
    words = [w.value for w in args]
    if len(words) == 3 and all(w is not None and not w.startswith("-") for w in words):
        return
    e.add("write", "git merge-tree writes the merged trees into the repository")


def _git_interpret_trailers(e: Effect, args: list[Word]) -> None:
    """``git interpret-trailers --parse`` prints a message's trailers; ``--in-place``
    rewrites the files it is given."""
    if any(a.value == "--in-place" or a.value is None for a in args):
        e.add("write", "git interpret-trailers --in-place rewrites the files")
    e.reads.extend(a for a in args if a.value is not None and not a.value.startswith("-"))


GIT_SUBCOMMANDS: dict[str, Rule] = {
    "interpret-trailers": _git_interpret_trailers,
    "merge-tree": _git_merge_tree,
    "hash-object": _git_hash_object,
    "mv": _git_mv,
    "branch": _git_listing(("-d", "-D", "-m", "-M", "-c", "-C", "--delete", "--move", "--copy",
                            "-u", "--set-upstream-to", "--unset-upstream", "-f", "--force"),
                           ("-l", "--list", "--contains", "--no-contains", "--merged",
                            "--no-merged", "--points-at"),
                           ("--edit-description",)),
    "tag": _git_listing(("-d", "--delete", "-a", "-s", "-m", "-f", "-u", "--annotate",
                         "--sign", "--force", "-F", "--file"),
                        ("-l", "--list", "-n", "--contains", "--no-contains", "--merged",
                         "--no-merged", "--points-at", "-v", "--verify"),
                        deletes="git tag -d deletes tags, which keep no reflog"),
    "remote": _git_remote,
    "stash": _git_stash,
    "config": _git_config,
    "var": _git_var,
    "reset": _git_reset,
    "clean": _git_clean,
    "push": _git_push,
    "rebase": _git_rebase,
    "difftool": _git_difftool,
    "read-tree": _git_plumbing_overwrite("read-tree"),
    "checkout-index": _git_plumbing_overwrite("checkout-index"),
    "fsck": _git_fsck,
    "reflog": _git_reflog, "bundle": _git_bundle, "maintenance": _git_maintenance,
    "checkout": _git_checkout, "restore": _git_restore, "switch": _git_switch, "gc": _git_gc,
    "prune": lambda e, args: e.add(
        "read" if any(a.value in ("-n", "--dry-run") for a in args) else "destructive",
        "git prune deletes unreachable objects"),
    "rm": _git_rm,
    "grep": lambda e, args: _git_grep(e, args),
    "worktree": lambda e, args: _git_worktree(e, args),
    "notes": lambda e, args: _git_sub(("", "list", "show"), "write", "git notes changes notes")(
        e, _without_ref(args)),
    "format-patch": lambda e, args: None if any(a.value == "--stdout" for a in args) else (
        e.add("write", "git format-patch writes patch files")),
    "replace": lambda e, args: None if not args or args[0].value in ("-l", "--list") or (
        (args[0].value or "").startswith("--format")) else e.add(
        "write", "git replace changes which object git reads"),
    "submodule": _submodule,
    "bisect": _git_sub(("log", "view", "visualize"), "write", "git bisect checks out commits",
                       ("run",)),
    "lfs": lambda e, args: _git_lfs(e, args),
    "apply": _git_apply,
    "sparse-checkout": _git_sub(("list",), "write", "git sparse-checkout changes the tree"),
    "symbolic-ref": lambda e, args: _git_two_writes(e, args, "symbolic-ref"),
    "update-ref": lambda e, args: e.add(
        "destructive" if any(a.value in ("-d", "--stdin") for a in args) else "write",
        "git update-ref changes or deletes refs"),
}


_LFS_READS = _git_sub(("ls-files", "status", "env", "version", "locks", "ext"), "network",
                     "git lfs transfers")


def _git_lfs(e: Effect, args: list[Word]) -> None:
    """``git lfs track``/``untrack`` with no pattern list what is tracked; ``migrate info``
    reports sizes; ``migrate import``/``export`` rewrite the branch's commits (every branch
    with ``--everything``), as ``filter-branch`` does. ``locks`` asks the server."""
    words = [a.value for a in args]
    if words in (["track"], ["untrack"]) or words[:2] == ["migrate", "info"]:
        return
    if words[:2] in (["migrate", "import"], ["migrate", "export"]):
        e.add("destructive", f"git lfs migrate {words[1]} rewrites the history of commits")
    elif words[:1] == ["locks"]:
        e.add("network", "git lfs locks asks the server")
    else:
        _LFS_READS(e, args)


_UNDOABLE = {"dry-run": ("--dry-run",), "stat": ("--stat",), "numstat": ("--numstat",),
             "check": ("--check",), "summary": ("--summary",), "list": ("--list",),
             "stdout": ("--stdout",), "cached": ("--cached",), "index": ("--index",)}
"""Options that make a git command only report, and their names: ``--no-NAME`` (or any
abbreviation git accepts, ``--no-dry``) turns them off again."""
_DRY_N = frozenset({"clean", "rm", "add", "mv", "push", "fetch", "prune", "remote", "gc",
                    "worktree", "reflog", "notes", "submodule", "lfs"})
"""Subcommands whose ``-n`` is ``--dry-run`` (``git log -n 5`` is a count)."""


def _without_undone(sub: str, args: list[Word]) -> list[Word]:
    """``git clean -n --no-dry-run -f``, ``git apply --stat --no-stat``: a reporting option
    turned off by a ``--no-`` form is dropped wherever it stands (a later one turning it on
    again is dropped too: judged as the change, the stricter reading)."""
    off = {name for w in args if (v := w.value or "").startswith("--no-") and len(v) > 5
           for name in _UNDOABLE if name.startswith(v[5:].partition("=")[0])}
    if not off:
        return args
    dropped = {o for name in off for o in _UNDOABLE[name]}
    letters = ("n" if "dry-run" in off and sub in _DRY_N else "") + (
        "l" if "list" in off and sub in ("branch", "tag") else "")
    out = []
    for w in args:
        v = w.value or ""
        if v in dropped:
            continue
        if letters and re.fullmatch(r"-[A-Za-z]+", v) and set(v[1:]) & set(letters):
            rest = "".join(c for c in v[1:] if c not in letters)  # -nfd: -fd
            if not rest:
                continue
            w = Word.of("-" + rest)
        out.append(w)
    return out


def _git_grep(e: Effect, args: list[Word]) -> None:
    """``git grep -OCMD`` / ``--open-files-in-pager=CMD`` runs CMD (shell code) on the
    matching files, judged as ``CMD "$@"`` with ``$@`` a path git found in the working tree
    (``MATCHED``); an option whose value is only known at run time is unknown code. The
    option may be abbreviated (``--open-f=CMD``) or end a cluster of flags (``-nOCMD``)."""
    for a in args:
        if a.value == "--":
            break
        if a.value is None and re.match(r'"?-(?:\w*O|-op)', a.text):
            e.scripts.append(("git grep -O", Word(None, a.text, "other")))
            continue
        pager = _grep_pager(a.value or "")
        if pager:
            e.scripts.append(("git grep -O", _on_matches(pager)))
        elif pager == "":
            e.add("exec", "git grep -O runs the pager on the matching files")
    if e.scripts:  # every matching file: two of them stand for several (uniq IN OUT)
        e.code_args = [Word.of("git"), *[Word(MATCHED, LISTED_TEXT)] * 2]


_GREP_SHORT_VALUES = "efABCm"
"""git grep's short options whose value is the rest of the word or the next one."""


def _grep_pager(word: str) -> str | None:
    """The pager ``word`` gives git grep's ``-O`` (``""``: the default one), else None."""
    name, _, value = word.partition("=")
    if name.startswith("--"):
        return value if abbreviates(name, "--open-files-in-pager") or \
            name == "--open-files-in-pager" else None
    if not word.startswith("-"):
        return None
    for i, c in enumerate(word[1:], 1):
        if c == "O":
            return word[i + 1:]
        if c in _GREP_SHORT_VALUES:
            return None
    return None


MATCHED = "./matched"
"""What ``git grep -O`` hands its pager: files of the working tree (a path below the folder
it runs in)."""


def _on_matches(command: str) -> Word:
    return Word.of(f'{command} "$@"')


def _git_two_writes(e: Effect, args: list[Word], sub: str) -> None:
    o = parse_opts(args, "m")
    if o.has("-d", "--delete"):  # git symbolic-ref -d HEAD: the repository loses its HEAD
        e.add("destructive", f"git {sub} --delete deletes a ref")
    elif len(o.positionals) >= 2:
        e.add("write", f"git {sub} changes refs")


RULES: dict[str, Rule] = {"git": _git, "pre-commit": pre_commit}


_GIT_CONFIG_PAIR = re.compile(r"'((?:[^']|'\\'')*)'(?:=('(?:[^']|'\\'')*'))?\s*")


def config_from_environment(env: Mapping[str, list[str] | None]) -> list[Word]:
    """The ``key=value`` words of ``git -c`` that git takes from its environment:
    ``GIT_CONFIG_COUNT=N`` with ``GIT_CONFIG_KEY_i``/``GIT_CONFIG_VALUE_i``, and
    ``GIT_CONFIG_PARAMETERS`` (``'core.pager'='less'``, as git quotes them). A pair not
    known as one string is an unknown word, judged like ``git -c "$x"``."""
    def known(name: str) -> str | None:
        values = env.get(name)
        return values[0] if values is not None and len(values) == 1 else None

    pairs: list[Word] = []
    if "GIT_CONFIG_COUNT" in env:
        count = known("GIT_CONFIG_COUNT")
        if count is None or not count.isdigit():
            return [Word(None, "$GIT_CONFIG_KEY_n=$GIT_CONFIG_VALUE_n", "var")]
        for i in range(min(int(count), 64)):
            key, value = known(f"GIT_CONFIG_KEY_{i}"), known(f"GIT_CONFIG_VALUE_{i}")
            pairs.append(Word(None, f"$GIT_CONFIG_KEY_{i}", "var") if key is None or
                         value is None else Word.of(f"{key}={value}"))
    if "GIT_CONFIG_PARAMETERS" in env:
        text = known("GIT_CONFIG_PARAMETERS")
        found = list(_GIT_CONFIG_PAIR.finditer(text or ""))
        if text is None or "".join(m.group(0) for m in found).strip() != text.strip():
            return [*pairs, Word(None, "$GIT_CONFIG_PARAMETERS", "var")]
        for m in found:
            key = m.group(1).replace("'\\''", "'")
            value = (m.group(2) or "''")[1:-1].replace("'\\''", "'")
            pairs.append(Word.of(f"{key}={value}"))
    return pairs
