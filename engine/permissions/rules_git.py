"""Rules for git: subcommands, global options and ``-c`` settings that run programs."""

from __future__ import annotations

from engine.permissions import programs as p
from engine.permissions.effect import (
    Effect,
    Rule,
    parse_opts,
)
from engine.permissions.words import Word
from engine.tooling.spec import Risk

# ---------------------------------------------------------------- git

GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                               "--config-env", "--super-prefix", "--attr-source", "--exec-path"})


def _git(e: Effect, args: list[Word]) -> None:
    i, n = 0, len(args)
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
        i += 1
    if i >= n:
        return
    sub = args[i].value or ""
    rest = args[i + 1:]
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


def _git_global(e: Effect, key: str, value: Word) -> None:
    if key == "-C" or key in ("--git-dir", "--work-tree"):
        e.reads.append(value)
    elif key == "-c":
        name = (value.value or "").partition("=")[0].lower()
        setting = (value.value or "").partition("=")[2].lower()
        safe = name.startswith(p.GIT_SAFE_CONFIG_PREFIXES) or (
            name.startswith("pager.") and setting in ("false", "true", "0", "1", "no", "yes"))
        if value.value is None or not safe:
            e.add("exec", f"git -c {name or value.shown} can make git run programs")
        raw = (value.value or "").partition("=")[2]
        if name in p.GIT_SHELL_CONFIG or name.startswith("pager.") or (
                name.startswith("alias.") and raw.startswith("!")):
            e.scripts.append((f"git -c {name}", Word.of(raw.removeprefix("!"))))
    elif key in ("--config-env", "--exec-path", "-p", "--paginate"):
        e.add("exec", f"git {key} can make git run programs")


def _git_output(e: Effect, sub: str, rest: list[Word]) -> None:
    o = parse_opts(rest, "o" if sub in ("format-patch", "archive") else "",
                   frozenset({"--output", "--output-directory", "--exec", "--receive-pack",
                              "--upload-pack", "--remote"}))
    for w in o.all("--output", "--output-directory", "-o"):
        e.writes.append(w)
        e.add("write", f"git {sub} --output writes a file")
    if o.has("--ext-diff", "--exec", "--receive-pack", "--upload-pack", "-O",
             "--open-files-in-pager", "--textconv"):
        e.add("exec", f"git {sub} option runs another program")
    if sub == "archive" and o.has("--remote"):
        e.add("network", "git archive --remote uses the network")
    if sub == "clone" and len(o.positionals) >= 2:
        e.writes.append(o.positionals[-1])
    if sub == "diff" and o.has("--no-index"):
        e.reads.extend(o.positionals)


def _git_listing(write_opts: tuple[str, ...], list_opts: tuple[str, ...],
                 exec_opts: tuple[str, ...] = ()) -> Rule:
    """``git branch``/``git tag``: listing unless a name or a changing option is given."""

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, "", frozenset({"--contains", "--points-at", "--sort",
                                            "--format", "--merged", "--no-merged"}))
        if o.has(*exec_opts):
            e.add("exec", "opens an editor")
        elif o.has(*write_opts) or (o.positionals and not o.has(*list_opts)):
            e.add("write", "creates, moves or deletes refs")

    return rule


def _git_remote(e: Effect, args: list[Word]) -> None:
    sub = args[0].value if args else None
    if sub in (None, "-v", "--verbose", "show", "get-url"):
        return
    if sub in ("update", "prune"):
        e.add("network", f"git remote {sub} uses the network")
    else:
        e.add("write", f"git remote {sub} changes the repository configuration")


def _git_stash(e: Effect, args: list[Word]) -> None:
    if args and args[0].value in ("list", "show"):
        return
    e.add("write", "git stash changes the working tree")


def _git_config(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "f", frozenset({"--file", "--blob", "--type", "--default"}))
    reading = ("--get", "--get-all", "--get-regexp", "--list", "-l", "--get-urlmatch",
               "--get-color", "--get-colorbool")
    changing = ("--unset", "--unset-all", "--add", "--replace-all", "--remove-section",
                "--rename-section")
    first = o.positionals[0].value if o.positionals else None
    if o.has("-e", "--edit"):
        e.add("exec", "git config --edit opens an editor")
    elif o.has(*reading) or first in ("get", "list") or (
            len(o.positionals) == 1 and not o.has(*changing)):
        return
    else:
        e.add("write", "git config changes configuration (which can make git run programs)")


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
    refs = [w.value or "" for w in o.positionals[1:]]
    if forced or any(r.startswith(("+", ":")) for r in refs):
        e.add("destructive", "git push overwrites or deletes remote history")
    else:
        e.add("network", "git push uploads to a remote")


def _git_rebase(e: Effect, args: list[Word]) -> None:
    if any((a.value or "").startswith(("-x", "--exec", "-i", "--interactive")) for a in args):
        e.add("exec", "git rebase --exec/--interactive runs commands or an editor")
    else:
        e.add("write", "git rebase rewrites the branch")


def _git_sub(read: tuple[str, ...], risk: Risk, why: str,
             exec_first: tuple[str, ...] = ()) -> Rule:
    """Subcommand families (``git worktree list`` reads, ``git worktree add`` writes)."""

    def rule(e: Effect, args: list[Word]) -> None:
        first = args[0].value if args else None
        if first in exec_first:
            e.add("exec", f"{why} ({first} runs commands)")
        elif (first is not None and first not in read) or (first is None and "" not in read):
            e.add(risk, why)

    return rule


GIT_SUBCOMMANDS: dict[str, Rule] = {
    "branch": _git_listing(("-d", "-D", "-m", "-M", "-c", "-C", "--delete", "--move", "--copy",
                            "-u", "--set-upstream-to", "--unset-upstream", "-f", "--force"),
                           ("-l", "--list", "--contains", "--merged", "--no-merged"),
                           ("--edit-description",)),
    "tag": _git_listing(("-d", "--delete", "-a", "-s", "-m", "-f", "-u", "--annotate",
                         "--sign", "--force", "-F", "--file"),
                        ("-l", "--list", "-n", "--contains", "--points-at", "-v", "--verify")),
    "remote": _git_remote,
    "stash": _git_stash,
    "config": _git_config,
    "reset": _git_reset,
    "clean": _git_clean,
    "push": _git_push,
    "rebase": _git_rebase,
    "reflog": _git_sub(("", "show", "exists"), "write", "git reflog expire/delete drops history"),
    "worktree": _git_sub(("list",), "write", "git worktree changes working trees"),
    "notes": _git_sub(("", "list", "show"), "write", "git notes changes notes"),
    "submodule": _git_sub(("", "status", "summary"), "network", "git submodule fetches",
                          ("foreach",)),
    "bisect": _git_sub(("log", "view", "visualize"), "write", "git bisect checks out commits",
                       ("run",)),
    "lfs": _git_sub(("ls-files", "status", "env", "version"), "network", "git lfs transfers"),
    "apply": _git_sub(("--check", "--stat", "--numstat", "--summary"), "write",
                      "git apply changes files"),
    "sparse-checkout": _git_sub(("list",), "write", "git sparse-checkout changes the tree"),
    "symbolic-ref": lambda e, args: _git_two_writes(e, args, "symbolic-ref"),
    "update-ref": lambda e, args: e.add("write", "git update-ref changes refs"),
}


def _git_two_writes(e: Effect, args: list[Word], sub: str) -> None:
    if len(parse_opts(args, "m").positionals) >= 2:
        e.add("write", f"git {sub} changes refs")


RULES: dict[str, Rule] = {"git": _git}
