"""Rules for network clients and package managers."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from itertools import pairwise
from urllib.parse import urlsplit

from engine.permissions.effect import (
    Effect,
    Loads,
    Opts,
    Rule,
    parse_opts,
    plain,
    prog,
    teardown_verb,
)
from engine.permissions.inline import inline_code
from engine.permissions.programs import PROJECT_BIN_TOOLS
from engine.permissions.rules_toolchain import rustup_proxy
from engine.permissions.words import Word
from engine.tooling.spec import Risk

# ---------------------------------------------------------------- network


def _curl(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "odHuXTKAeEFbcCmrwxyYzQ", frozenset({
        "--output", "--data", "--header", "--user", "--request", "--upload-file", "--config",
        "--libcurl",
        "--user-agent", "--referer", "--cert", "--form", "--cookie", "--cookie-jar",
        "--data-binary", "--data-raw", "--data-urlencode", "--dump-header", "--proxy",
        "--max-time", "--connect-timeout", "--write-out", "--output-dir", "--trace",
        "--trace-ascii", "--stderr", "--json", "--resolve", "--retry", "--netrc-file",
        "--key", "--cacert", "--capath"}))
    e.add("network", f"{prog(e)} uses the network")
    e.reads.extend(o.all("--netrc-file", "--cert", "-E", "--key"))  # logins and keys it sends
    method = next((w.value for w in reversed(o.all("-X", "--request")) if w.value), "")
    if method.upper() == "DELETE":  # as http DELETE and gh api -X DELETE
        e.add("destructive", f"{prog(e)} -X DELETE deletes what the URL names")
    for w in o.all("-o", "--output", "-c", "--cookie-jar", "--dump-header", "--trace",
                   "--trace-ascii", "--stderr", "--output-dir", "--libcurl"):
        if w.value != "-":
            e.writes.append(w)
    e.replaces.extend(w for w in o.all("-o", "--output", "--libcurl") if w.value != "-")
    named = _remote_names(o)
    e.writes.extend(named)
    e.replaces.extend(named)
    e.reads.extend(o.all("-K", "--config", "-T", "--upload-file"))
    sent_files = [w for w in o.all("-T", "--upload-file") if w.value not in ("-", ".")]
    sends_input = any(w.value in ("-", ".") for w in o.all("-T", "--upload-file"))
    for w in o.all("-F", "--form", "-d", "--data", "--data-binary", "--data-urlencode",
                   "--json"):  # name=@FILE, @FILE, name@FILE: a file sent
        sent = _sent_file(w)
        if sent is not None:
            e.reads.append(sent)
            sent_files.append(sent)
        sends_input = sends_input or bool(re.match(r"^(?:[^=@<]*=)?[@<]-(?:;|$)", w.value or ""))
    uploads(e, [*sent_files, *([Word(None, "its input", "other")] if sends_input else [])],
             o.positionals)
    _sends_unseen(e, [*o.positionals, *o.all("-d", "--data", "--data-binary", "--data-raw",
                                             "--data-urlencode", "--json", "-F", "--form")],
                  o.positionals)


def _sends_unseen(e: Effect, sent: list[Word], urls: list[Word]) -> None:
    """A URL or data only known at run time (``curl "https://x/?q=$(cat f)"``, ``-d
    "$payload"``) sends what the preview cannot show to another machine: under
    ``--approval auto`` only a person may run it (to this machine's own addresses it stays)."""
    def local(u: Word) -> bool:
        return bool(_LOCAL_URL.match(u.value or re.sub(r"[\"']", "", u.text)))

    if any(u.value is None and not local(u) for u in urls) or (
            urls and any(w.value is None for w in sent) and not all(map(local, urls))):
        e.unseen = e.unseen or f"{prog(e)} sends text only known at run time to another machine"
        e.sends = True


def _remote_names(o: Opts) -> list[Word]:
    """``curl -O URL``: the file named by the URL's last path part, in ``--output-dir`` or
    here, replaced whole (``-J``: a name the server gives, only known at run time)."""
    if not o.has("-O", "--remote-name", "--remote-name-all"):
        return []
    folder = next((w.value for w in reversed(o.all("--output-dir"))), ".")
    if o.has("-J", "--remote-header-name") or folder is None:
        return [Word(None, "<file named by the server>", "other")]
    out: list[Word] = []
    for url in o.positionals:
        if url.value is None:
            out.append(Word(None, url.text, "other"))
            continue
        path = urlsplit(url.value if "://" in url.value else f"http://{url.value}").path
        name = path.rpartition("/")[2]
        if name:
            out.append(Word.of(name if folder == "." else f"{folder.rstrip('/')}/{name}"))
    return out


_LOCAL_URL = re.compile(r"^(?:\w+://)?(?:localhost|127\.\d+\.\d+\.\d+|\[::1\])(?:[:/]|$)")


def uploads(e: Effect, files: list[Word], urls: list[Word]) -> None:
    """A file sent to another machine leaves it for good: under ``--approval auto`` only a
    person may send one (to this machine's own addresses it stays); so may what it reads on
    its input (``--data-binary @-``, ``-T -``), which the command line does not show."""
    if files and not (urls and all(_LOCAL_URL.match(u.value or "") for u in urls)):
        e.unseen = f"{prog(e)} sends {files[0].shown} to another machine"
        e.sends = True


def _sent_file(w: Word) -> Word | None:
    """The file a curl data or form value sends (``@path``, ``name=@path;type=..``,
    ``name=<path``); None for inline data or standard input (``@-``)."""
    if w.value is None:
        return None
    m = re.match(r"^(?:[^=@<]*=)?[@<]([^;]+)", w.value)
    return None if m is None or m.group(1) == "-" else Word.of(m.group(1))


def _wget(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "OoaPie", frozenset({
        "--output-document", "--output-file", "--append-output", "--directory-prefix",
        "--input-file", "--execute", "--post-file", "--body-file", "--load-cookies",
        "--certificate", "--private-key", "--ca-certificate", "--method", "--post-data",
        "--body-data"}))
    e.add("network", "wget uses the network")
    if ((o.get("--method") or Word.of("")).value or "").upper() == "DELETE":
        e.add("destructive", "wget --method=DELETE deletes what the URL names")
    for w in o.all("-O", "--output-document", "-o", "--output-file", "-a", "--append-output"):
        if w.value != "-":
            e.writes.append(w)
    e.replaces.extend(w for w in o.all("-O", "--output-document") if w.value != "-")
    for command in o.all("-e", "--execute"):  # a .wgetrc line: output_document = FILE
        key, eq, value = (command.value or "").partition("=")
        name = key.strip().replace("_", "").replace("-", "").lower()
        if command.value is None or (eq and name in ("outputdocument", "logfile", "dirprefix",
                                                     "appendoutput")):
            target = Word.of(value.strip()) if command.value is not None else command
            e.writes.append(target)
            if name in ("outputdocument", "logfile"):
                e.replaces.append(target)
    e.writes.extend(o.all("-P", "--directory-prefix"))
    e.reads.extend(o.all("-i", "--input-file", "--post-file", "--body-file", "--load-cookies",
                         "--certificate", "--private-key", "--ca-certificate"))
    uploads(e, o.all("--post-file", "--body-file"), o.positionals)
    _sends_unseen(e, [*o.positionals, *o.all("--post-data", "--body-data")], o.positionals)


_SSH_VALUES = "BbcDEeFIiJLlmOoPpQRSWw"
_SSH_CODE_OPTIONS = frozenset({"proxycommand", "localcommand", "remotecommand",
                               "knownhostscommand", "permitlocalcommand"})


def ssh_options(e: Effect, values: list[Word]) -> None:
    """``-o ProxyCommand=CMD`` (and LocalCommand, ...) run CMD on this machine."""
    for w in values:
        if w.value is None:
            e.at_least("ask", f"{prog(e)} -o option only known at run time")
            continue
        key, _, val = w.value.replace("=", " ", 1).partition(" ")
        if key.lower() in _SSH_CODE_OPTIONS and key.lower() != "permitlocalcommand":
            e.add("exec", f"{prog(e)} -o {key} runs a command here")
            e.scripts.append((f"{prog(e)} -o {key}", Word.of(val.strip())))


def _ssh(e: Effect, args: list[Word]) -> None:
    """``ssh [OPTS] HOST [CMD...]``: CMD is shell code run on the other machine. ``ssh -G
    HOST`` prints the configuration it would use and connects to nothing (a ``-F`` file's
    ``Match exec`` still runs, and without ``-F`` it prints the user's own)."""
    o = parse_opts(args, _SSH_VALUES, stop_at_positional=True)
    if o.has("-Q") and not o.positionals:
        return  # ssh -Q kex: the algorithms this ssh supports; nothing connects
    if [w.value for w in args] == ["-V"]:
        return  # the version, printed; nothing connects
    if o.has("-G"):
        configs = [w.value for w in o.all("-F")]
        if not configs:
            e.at_least("ask", "ssh -G prints the user's ssh configuration (~/.ssh/config)")
        elif any(v != "/dev/null" for v in configs):
            e.at_least("ask", "ssh -F reads a configuration that can run commands")
        return
    e.add("network", "ssh runs commands on another machine")
    ssh_options(e, o.all("-o"))
    if o.has("-F"):
        e.at_least("ask", "ssh -F reads a configuration that can run commands")
    remote = o.positionals[1:]
    if remote:
        joined = [w.value for w in remote]
        if all(v is not None for v in joined):
            e.scripts.append(("ssh HOST", Word.of(" ".join(v for v in joined if v))))
        else:
            e.scripts.append(("ssh HOST", next(w for w in remote if w.value is None)))


def _remote_copy(e: Effect, args: list[Word]) -> None:
    o = parse_opts(args, "eBfTM" if prog(e) == "rsync" else "iFPloScJeB", frozenset({
        "--rsh", "--exclude", "--include", "--filter", "--files-from", "--rsync-path"}))
    # rsync's -c (checksum), -i, -l, -o, -P, -S are flags; scp's -c, -i, -l, -o take values
    dry = prog(e) == "rsync" and (o.has("-n", "--dry-run", "--list-only") or len(
        o.positionals) == 1)  # lists what it would do; a source alone is listed
    if not dry or any(w.value is None or _remote_spec(w.value) for w in o.positionals):
        e.add("network", f"{prog(e)} copies over the network")
    ssh_options(e, o.all("-o"))
    if o.has("-e", "--rsh") and any(w.value is None or _remote_spec(w.value)
                                    for w in o.positionals):  # local to local: never run
        e.add("exec", f"{prog(e)} -e runs a remote shell program")
        for code in o.all("-e", "--rsh"):
            e.scripts.append((f"{prog(e)} -e", code))
    for code in o.all("--rsync-path"):
        e.scripts.append((f"{prog(e)} --rsync-path", code))
    if o.has("--delete", "--delete-before", "--delete-after", "--delete-during",
             "--remove-source-files") and not dry:
        e.add("destructive", f"{prog(e)} --delete removes files")
    local = [w for w in o.positionals if w.value is None or not _remote_spec(w.value)]
    if local and o.positionals and local[-1] is o.positionals[-1] and not dry:
        e.writes.append(local[-1])
        e.replaces.append(local[-1])  # a file there is copied over
        e.fetched.extend(fetched_name(w.value) for w in o.positionals[:-1]
                         if w.value is not None and _remote_spec(w.value))
        local = local[:-1]
    e.reads.extend(local)
    dest = o.positionals[-1] if len(o.positionals) > 1 else None
    if dest is not None and (dest.value is None or _remote_spec(dest.value)) and local and \
            not dry:  # scp f host:, rsync dist/ host:/srv: the files leave this machine
        uploads(e, local, [dest])


def fetched_name(spec: str) -> str:
    """The name a copy from ``HOST:PATH`` (``s3://b/k``, ``pod:/p``) gives its file."""
    return posixpath.basename(spec.partition(":")[2].rstrip("/")) or ""


def _remote_spec(v: str) -> bool:
    head = v.split("/", 1)[0]
    return ":" in head or v.startswith("rsync://")


# ---------------------------------------------------------------- package managers


# ---------------------------------------------------------------- package managers


def subcommands(read: frozenset[str], install: frozenset[str], exec_: frozenset[str] = frozenset(),
                network: frozenset[str] = frozenset(), *, bare: Risk = "exec",
                values: str = "", remove: frozenset[str] = frozenset(),
                config: frozenset[str] = frozenset(),
                groups: Mapping[str, tuple[frozenset[str], frozenset[str]]] | None = None
                ) -> Rule:
    """Programs whose first positional says what they do (``npm install``, ``pip list``).

    ``remove`` subcommands uninstall software (destructive); ``config`` ones read settings
    unless they set, delete or edit them (a write: a registry URL decides what installs run).
    ``groups`` are read subcommands whose next positional, when there is one, is an action:
    (the actions that read, those that delete); any other action writes (``poetry env
    list`` reads, ``poetry env use`` writes, ``poetry env remove`` deletes).
    """

    def rule(e: Effect, args: list[Word]) -> None:
        o = parse_opts(args, values, stop_at_positional=True)
        if not o.positionals:
            if o.has("--version", "-v", "-V", "--help", "-h"):
                return
            e.add(bare, f"{prog(e)} without a subcommand")
            return
        sub = o.positionals[0].value or ""
        if sub in remove:
            e.add("destructive", f"{prog(e)} {sub} removes installed software")
            return
        if sub in config:
            _config_change(e, sub, args[args.index(o.positionals[0]) + 1:])
            return
        if sub in (groups or {}):
            _group_action(e, sub, (groups or {})[sub], [
                w for w in o.positionals[1:] if not (w.value or "").startswith("-")][:1])
            return
        if sub in read:
            return
        if sub in install:
            e.add("install", f"{prog(e)} {sub} installs or removes software")
        elif sub in network:
            e.add("network", f"{prog(e)} {sub} uses the network")
            if sub in PUBLISHES:
                e.unseen = f"{prog(e)} {sub} publishes to a registry for everyone (no undo)"
        elif sub in exec_:
            e.add("exec", f"{prog(e)} {sub} runs project code")
        elif teardown_verb([o.positionals[0]], positionals=1):
            e.add("destructive", f"{prog(e)} {sub} tears down what it names")
        else:
            e.add("exec", f"{prog(e)} {sub} is not a known subcommand")

    return rule


def _asks_registry(rule: Rule, queries: Mapping[str, frozenset[str]],
                   offline: frozenset[str]) -> Rule:
    """``rule``, and ``network`` for its read subcommands that ask a registry on the
    internet (``pip list --outdated``, ``cargo search``, ``brew info``). ``queries``: each
    such subcommand and the options that make it ask (none: it always does); ``offline``:
    options that keep every one of them local. What a query carries (a package name, or
    whatever a command substitution put there) leaves the machine."""

    def wrapped(e: Effect, args: list[Word]) -> None:
        rule(e, args)
        words = [w.value for w in args]
        sub = next((v for v in words if v is None or not v.startswith(("-", "+"))), "") or ""
        options = {v.split("=", 1)[0] for v in words if v and v.startswith("-")}
        if sub in queries and not options & offline and (
                not queries[sub] or options & queries[sub]):
            how = " ".join([sub, *sorted(options & queries[sub])])
            e.add("network", f"{how} asks a package registry on the network")

    return wrapped


_YARN_PATH = Loads((".yarnrc.yml", ".yarnrc"), ("yarnpath", "yarn-path"), upward=True)
"""Any yarn command, ``--version`` included, hands over to the file a ``yarnPath``
(``yarn-path`` in yarn 1) setting names: code from the workspace."""


_POETRY_PLUGINS = Loads(("pyproject.toml",), ("requires-plugins",), upward=True)
"""Poetry 2 installs the plugins a project's ``[tool.poetry.requires-plugins]`` names,
missing ones fetched, and loads them on every command: code the project chose."""


def _poetry_rule(e: Effect, args: list[Word]) -> None:
    """``poetry show``, ``check``: reads; the rest by subcommand; any of them loads the
    plugins the project requires (``_POETRY_PLUGINS``)."""
    e.loads_here.append(_POETRY_PLUGINS)
    _poetry(e, args)


def _yarn_rule(e: Effect, args: list[Word]) -> None:
    """``yarn run`` with no script lists them and ``yarn cache dir`` prints a folder; the
    rest by subcommand (a ``yarnPath`` in ``.yarnrc.yml`` is code yarn runs)."""
    e.loads_here.append(_YARN_PATH)
    if [w.value for w in args] in (["run"], ["cache", "dir"]) or ([
            w.value for w in args[:2]] == ["workspaces", "list"] and all(
            w.value in ("--json", "-v", "--verbose") for w in args[2:])):
        return  # yarn workspaces list: the workspaces of the manifests
    _yarn(e, args)


def _group_action(e: Effect, sub: str, kinds: tuple[frozenset[str], frozenset[str]],
                  action: list[Word]) -> None:
    """The action after a group subcommand (``poetry env use``): none or one that reads
    leaves it a read; ``deletes`` destroy; any other writes."""
    reads, deletes = kinds
    name = action[0].value if action else None
    if action and name not in reads:
        if name in deletes:
            e.add("destructive", f"{prog(e)} {sub} {name} deletes what it names")
        else:
            e.add("write", f"{prog(e)} {sub} {action[0].shown} changes the project or its "
                           "environment")


PUBLISHES = frozenset({"publish", "push", "deprecate", "yank", "owner", "dist-tag", "access",
                       "upload", "release"})
"""Verbs that publish to a package registry: under ``--approval auto`` only a person may."""


_CONFIG_READ = frozenset({"get", "list", "ls", "show", "debug", "current", "--list", "-l",
                          "--show", "--get", "--show-sources", "--describe", "--json"})
_CONFIG_WRITE = frozenset({"set", "delete", "del", "unset", "rm", "remove", "edit", "fix",
                           "add", "--add", "--set", "--unset", "--remove", "--append",
                           "--prepend", "--remove-key", "-a", "-r", "--edit", "-e", "-w", "-u"})


def _config_change(e: Effect, sub: str, rest: list[Word]) -> None:
    """``npm config set registry URL``, ``poetry config KEY VALUE``, ``conda config --add``:
    a write (the registry or index decides what later installs run); listing is a read."""
    words = [w.value for w in rest]
    flags = [v.split("=", 1)[0] for v in words if v is not None and v.startswith("-")]
    pos = [v for v in words if v is None or not v.startswith("-")]
    changes = (sub in _CONFIG_WRITE or None in words or any(f in _CONFIG_WRITE for f in flags)
               or (bool(pos) and pos[0] in _CONFIG_WRITE))
    if not changes and (any(f in _CONFIG_READ for f in flags) or (pos and pos[0] in _CONFIG_READ)
                        or len(pos) < 2 or sub in ("sources", "env")):
        return
    e.add("write", f"{prog(e)} {sub} changes package manager settings (registries, indexes)")
    if _user_config(prog(e), words):
        e.at_least("deny", f"{prog(e)} {sub} changes the user's configuration outside the "
                           "workspace (every later install on this machine reads it)")
    named = [v for v in pos if v is not None and (v.split("=")[0].lower() in _PROGRAM_KEYS or (
        v.split("=")[0].lower() == "goflags" and re.search(r"-(?:toolexec|exec)\b", v)))]
    if named:
        e.at_least("deny", f"{prog(e)} {sub} {named[0]} names a program the tool runs later "
                           "(a planted command)")


_CONFIG_IN_PROJECT: Mapping[str, frozenset[str]] = {
    "npm": frozenset({"--location=project", "-L=project"}),
    "pnpm": frozenset({"--location=project"}),
    "pip": frozenset({"--site"}), "pip3": frozenset({"--site"}), "poetry": frozenset({"--local"}),
    "conda": frozenset({"--file", "--env"}), "mamba": frozenset({"--file", "--env"}),
    "go": frozenset(), "gem": frozenset()}
"""Package managers whose configuration change lands in the user's file by default (``npm
config set`` writes ``~/.npmrc``, ``go env -w`` the user's go env file, ``gem sources
--add`` ``~/.gemrc``), and the options that keep it in the project or its environment."""


def _user_config(name: str, words: list[str | None]) -> bool:
    """Whether a configuration change of ``name`` writes the user's (or the machine's)
    file, outside the workspace; yarn's ``-H``/``--home`` too (else the project's, on
    yarn 2 and later)."""
    given = {v for v in words if v is not None} | {
        f"{a}={b}" for a, b in pairwise(words) if a and b}
    if name == "yarn":
        return bool(given & {"-H", "--home"})
    here = _CONFIG_IN_PROJECT.get(name)
    return here is not None and not given & here and not any(
        v.split("=")[0] in here for v in given)


_PROGRAM_KEYS = frozenset({"script-shell", "shell", "editor", "browser", "git", "viewer",
                           "node-options", "init-module", "onload-script", "yarnpath",
                           "yarn-path", "sign-git-commit", "git-tag-version",
                           "cc", "cxx", "fc", "ar", "pkg_config", "gccgo"})
"""Settings of npm, pnpm, yarn and ``go env -w`` whose value is a program (or code) they
run later (and Go's ``GOFLAGS`` naming ``-toolexec`` or ``-exec``)."""


_F = frozenset
_ALWAYS: frozenset[str] = frozenset()
_UNINSTALL = _F({"uninstall", "remove", "rm", "un", "uninstall-all", "erase", "del", "purge",
                 "autoremove", "autopurge"})
pip_rule = _asks_registry(
    subcommands(_F({"list", "show", "freeze", "check", "help", "config", "cache", "debug",
                    "inspect", "hash", "completion"}),
                _F({"install", "wheel"}), network=_F({"download", "index", "search"}),
                values="", remove=_F({"uninstall"}), config=_F({"config"})),
    {"list": _F({"-o", "--outdated", "-u", "--uptodate"})}, _ALWAYS)


_npm = subcommands(_F({"ls", "list", "ll", "la", "help", "config", "prefix", "root", "bin",
                      "why", "explain", "query", "pkg", "fund", "doctor", "get", "sbom"}),
                   _F({"install", "i", "ci", "add", "update", "up", "upgrade", "uninstall",
                       "remove", "rm", "un", "unlink", "link", "dedupe", "prune", "install-test",
                       "it", "install-ci-test", "rebuild", "exec", "x"}),
                   _F({"run", "run-script", "test", "t", "start", "stop", "restart"}),
                   _F({"view", "info", "show", "outdated", "audit", "search", "publish",
                       "login", "logout", "whoami", "ping", "owner", "dist-tag", "deprecate"}),
                   remove=_F({"uninstall", "remove", "rm", "r", "un", "unlink"}),
                   config=_F({"config", "c", "set", "unset", "delete"}))
_yarn = subcommands(_F({"list", "info", "why", "help", "config", "bin", "versions"}),
                    _F({"add", "install", "remove", "upgrade", "up", "dlx", "global", "link",
                        "unlink", "import"}),
                    _F({"run", "test", "start", "build", "exec", "node"}),
                    _F({"publish", "npm", "audit", "outdated"}), bare="install",
                    remove=_F({"remove"}), config=_F({"config"}))
_bun = subcommands(_F({"help"}), _F({"add", "install", "i", "remove", "rm", "update",
                                           "link", "unlink", "x", "create"}),
                   _F({"run", "test", "build", "exec"}), _F({"publish"}),
                   remove=_F({"remove", "rm"}))
_uv = subcommands(_F({"help", "version", "tree", "--version"}),
                  _F({"pip", "add", "remove", "sync", "lock", "tool", "python", "venv",
                      "init", "self", "cache", "build"}), _F({"run"}), _F({"publish"}),
                  remove=_F({"remove"}))
_cargo = subcommands(_F({"tree", "metadata", "version", "help", "search", "locate-project",
                        "read-manifest", "pkgid", "verify-project"}),
                     _F({"install", "uninstall", "add", "remove", "update", "fetch"}),
                     _F({"build", "b", "run", "r", "test", "t", "check", "c", "clippy", "bench",
                         "doc", "fmt", "fix", "clean", "new", "init", "package", "vendor"}),
                     _F({"publish", "login", "owner", "yank"}),
                     remove=_F({"uninstall", "remove", "rm"}))
_go = subcommands(_F({"version", "env", "list", "doc", "help"}), _F({"install", "get"}),
                  _F({"build", "run", "test", "generate", "vet", "fmt", "mod", "clean", "tool",
                      "work", "fix"}), config=_F({"env"}))
_system_pkg = subcommands(_F({"list", "search", "show", "info", "policy", "depends",
                             "rdepends", "changelog", "showpkg", "madison", "help", "provides",
                             "repolist", "whatprovides", "deplist", "check-update", "stats",
                             "--version"}),
                          _F({"install", "remove", "purge", "upgrade", "dist-upgrade",
                              "full-upgrade", "autoremove", "update", "build-dep", "source",
                              "reinstall", "erase", "downgrade", "add", "del", "in", "rm", "up",
                              "fix", "autoclean", "clean", "tap", "untap", "uninstall", "link",
                              "unlink", "refresh", "create", "inject", "mark", "satisfy"}),
                          bare="install", values="oct", remove=_UNINSTALL,
                          config=_F({"config"}))
_gem = subcommands(_F({"list", "search", "info", "help", "contents", "environment", "env",
                      "which", "query", "specification", "spec", "dependency", "outdated"}),
                   _F({"install", "uninstall", "update", "cleanup", "pristine"}),
                   network=_F({"push", "yank", "owner", "signin", "fetch"}),
                   remove=_F({"uninstall", "cleanup"}), config=_F({"sources"}))


def _gem_or_yank(e: Effect, args: list[Word]) -> None:
    """``gem yank NAME -v V`` takes a published version away from everyone who installs
    it (no undo), as ``npm unpublish`` does."""
    _gem(e, args)
    if [w.value for w in args[:1]] == ["yank"]:
        e.add("destructive", "gem yank removes a published version from the registry")
_poetry = subcommands(_F({"show", "check", "help", "about", "search"}),
                      _F({"add", "install", "remove", "update", "lock", "sync", "self", "new",
                          "init", "build"}), _F({"run", "shell"}), _F({"publish"}),
                      remove=_F({"remove"}), config=_F({"config"}),
                      groups={"env": (_F({"info", "list"}), _F({"remove"})),
                              "version": (_F(), _F())})
"""``poetry version patch`` bumps the version in pyproject.toml; ``poetry env use`` makes
an environment and ``env remove`` deletes one."""


_PDM_PLUGINS = (Loads(("pyproject.toml",), ("plugins",), upward=True), Loads((".pdm-plugins",)))
"""pdm installs the plugins ``[tool.pdm] plugins`` names into ``.pdm-plugins`` and loads
them on every command: code the project chose."""
_pdm = subcommands(_F({"help", "--version"}),
                   _F({"add", "install", "remove", "update", "lock", "sync", "self", "new",
                       "init", "build", "use", "venv", "import", "cache", "fix", "plugin"}),
                   _F({"run"}), _F({"publish", "outdated", "search"}),
                   remove=_F({"remove"}), config=_F({"config"}))


def _pdm_rule(e: Effect, args: list[Word]) -> None:
    """``pdm lock --check`` compares the lock's hash with pyproject.toml; ``pdm list``,
    ``info`` and ``show`` make the project's environment (``.venv``) first when it is
    missing; the rest by subcommand, with the project's plugins loaded."""
    e.loads_here.extend(_PDM_PLUGINS)
    words = [w.value for w in args]
    if words[:1] == ["lock"] and set(words[1:]) <= {"--check", "-v", "-q"} and "--check" in words:
        return
    if words[:1] and words[0] in ("list", "info", "show"):
        e.add("write", f"pdm {words[0]} makes the project's environment when it is missing")
        return
    _pdm(e, args)


_SYSTEMCTL_READS = _F({
    "status", "show", "list-units", "list-unit-files", "list-timers", "list-sockets",
    "list-jobs", "list-dependencies", "list-automounts", "list-paths", "list-machines",
    "is-active", "is-enabled", "is-failed", "is-system-running", "cat", "help", "get-default",
    "show-environment"})
_SYSTEMCTL_DOWN = _F({"stop", "kill", "mask", "isolate", "freeze", "clean"})
"""Subcommands that take a service down or delete its state (``clean`` removes its cache,
logs and state folders); ``disable --now`` stops it too."""
_SYSTEMCTL_MACHINE = _F({"poweroff", "reboot", "halt", "kexec", "emergency", "rescue",
                         "hibernate", "suspend", "soft-reboot", "hybrid-sleep",
                         "suspend-then-hibernate", "default", "exit"})
_SYSTEMCTL_VALUES = _F({"--type", "--property", "--state", "--host", "--machine", "--signal",
                        "--lines", "--output", "--root", "--kill-whom", "--kill-value",
                        "--what", "--job-mode", "--when", "--message", "--timestamp",
                        "--drop-in", "--check-inhibitors", "--preset-mode", "--image",
                        "--image-policy", "--reboot-argument", "--boot-loader-entry",
                        "--boot-loader-menu"})


def _systemctl_rule(e: Effect, args: list[Word]) -> None:
    """``systemctl`` acts on the machine's services, outside the workspace. Listing and
    status read; stopping the machine, or stopping, killing, masking or cleaning a service,
    takes something down (destructive); any other subcommand (``start``, ``restart``,
    ``enable``, ``daemon-reload``, ...) changes the services (asked). ``status`` also shows
    the unit's last lines of the system's logs (a read outside, as ``journalctl``)."""
    o = parse_opts(args, "tpHMsnoP", _SYSTEMCTL_VALUES, stop_at_positional=True)
    if not o.positionals:
        return  # systemctl alone lists the units
    sub = o.positionals[0].value
    if sub in _SYSTEMCTL_MACHINE or (sub not in _SYSTEMCTL_READS and any(
            (w.value or "").removesuffix(".target") in _SYSTEMCTL_MACHINE
            for w in o.positionals[1:])):  # start reboot.target
        e.add("destructive", "systemctl stops the machine")
    elif sub in _SYSTEMCTL_DOWN or (sub == "disable" and any(
            a.value == "--now" for a in args)):
        e.add("destructive", f"systemctl {sub} takes a service down")
    elif sub is None:
        e.add("exec", "systemctl's subcommand is only known at run time")
    elif sub not in _SYSTEMCTL_READS:
        e.add("exec", f"systemctl {sub} changes the machine's services")
    elif sub == "status" and not _no_log_lines(args):
        e.reads.append(Word.of("/var/log/journal"))  # its last log lines, like journalctl


def _no_log_lines(args: list[Word]) -> bool:
    """``systemctl status -n0``/``--lines=0``: the status without the unit's log lines."""
    words = [w.value for w in args]
    pairs = zip(words, [*words[1:], None], strict=True)
    return any(w in ("-n0", "--lines=0") or (w in ("-n", "--lines") and v == "0")
               for w, v in pairs)


_SETTINGS_READS = _F({"status", "show", "list-timezones", "list-locales", "list-keymaps",
                      "list-x11-keymap-models", "list-x11-keymap-layouts", "--help", "-h",
                      "--version"})


def _machine_settings(e: Effect, args: list[Word]) -> None:
    """``hostnamectl``, ``timedatectl``, ``localectl``: alone or with ``status``/``show``/
    ``list-*`` they print the machine's settings; any other verb (``set-hostname``,
    ``set-timezone``, ``set-ntp``) changes them; ``-H``/``-M`` reach another machine."""
    verbs = [w for w in args if not (w.value or "x").startswith("-") or w.value in (
        "--help", "-h", "--version")]
    if any(w.value is None for w in args):
        e.add("exec", f"{prog(e)}'s words are only known at run time")
    elif any((w.value or "").startswith(("-H", "--host", "-M", "--machine")) for w in args):
        e.add("network", f"{prog(e)} -H reaches another machine (over ssh)")
    elif verbs and verbs[0].value not in _SETTINGS_READS:
        e.add("exec", f"{prog(e)} {verbs[0].shown} changes the machine's settings")


def pip_command(e: Effect, args: list[Word]) -> None:
    """``pip cache purge``/``remove`` deletes pip's downloads (a write); the rest by
    subcommand."""
    if [w.value for w in args[:1]] == ["cache"] and len(args) > 1 and \
            args[1].value not in ("list", "dir", "info"):
        e.add("write", "pip cache purge/remove deletes pip's download cache")
        return
    o = parse_opts(args, "", frozenset({"--python", "--log", "--log-file"}))
    for python in o.all("--python"):  # pip runs itself again with that program
        e.add("exec", "pip --python runs the program it names")
        e.nested.append(("pip --python", [python, Word.of("--version")]))
    for log in o.all("--log", "--log-file"):
        e.writes.append(log)
        e.add("write", "pip --log writes its log to a file")
    pip_rule(e, args)


def _conda(e: Effect, args: list[Word]) -> None:
    """``conda env remove -n X`` deletes an environment and its packages; ``env list`` and
    ``export`` read; ``env create``/``update`` install; the rest by subcommand."""
    words = [w.value for w in args if not (w.value or "").startswith("-")][:2]
    if words[:1] != ["env"]:
        _system_pkg(e, args)
    elif words[1:] in (["remove"], ["rm"]):
        e.add("destructive", f"{prog(e)} env remove deletes an environment")
    elif words[1:] not in (["list"], ["export"], []):
        e.add("install", f"{prog(e)} env installs packages")


def _npx(e: Effect, args: list[Word], *, downloads: bool = True) -> None:
    """``npx -c CMD`` / ``--call CMD`` runs CMD as shell code (with packages on PATH).

    ``npx --no-install tsc`` and ``pnpm exec tsc`` download nothing: they run the project's
    own ``node_modules/.bin/tsc``, judged as that tool when its rule models the package
    (``PROJECT_BIN_TOOLS``); any other program there could be anything, and asks."""
    o = parse_opts(args, "cp", frozenset({"--call", "--package"}), stop_at_positional=True)
    if downloads and not o.has("--no-install", "--no"):
        e.add("install", "npx downloads and runs a package")
    elif o.positionals and o.positionals[0].value not in PROJECT_BIN_TOOLS:
        e.add("exec", f"{prog(e)} runs a program of the project's node_modules/.bin")
    for code in o.all("-c", "--call"):
        e.scripts.append(("npx -c", code))
    _package_command(e, o.positionals)


def _package_runner(short_values: str, long_values: frozenset[str], why: str) -> Rule:
    """``bunx PKG ARGS``, ``uvx PKG ARGS``: a package fetched and run (``install``), and its
    command judged as run (``uvx alembic downgrade base``)."""

    def rule(e: Effect, args: list[Word]) -> None:
        e.add("install", why)
        _package_command(e, parse_opts(args, short_values, long_values,
                                       stop_at_positional=True).positionals)

    return rule


def _package_command(e: Effect, words: list[Word]) -> None:
    """The command a package runner runs: the package's name (scope and version dropped)
    and the words after it."""
    if not words or words[0].value is None:
        return
    name = re.sub(r"(?<=.)@[^/]*$", "", words[0].value).rsplit("/", 1)[-1]
    if name:
        e.nested.append((f"{prog(e)} {name}", [Word(name, words[0].text), *words[1:]]))


def _npm_rule(e: Effect, args: list[Word]) -> None:
    """``npm exec -c CMD`` runs CMD as shell code; ``--script-shell=CMD`` (or another
    setting naming a program) runs CMD; the rest by subcommand."""
    _program_settings(e, args)
    words = [w.value for w in args]
    if prog(e) == "pnpm" and (not words or words[0] in _PNPM_RESOLVES):
        e.loads_here.append(_PNPMFILE)
    if words[:1] in (["run"], ["run-script"]) and all(
            v is not None and v.startswith("-") for v in words[1:]):
        return  # with no script named, npm lists the scripts (--json too)
    if prog(e) == "pnpm" and (words == ["store", "path"] or words[:2] == ["licenses", "list"]):
        return  # the store's folder; the installed packages' licenses
    if words[:1] == ["version"] and all(v in ("--json", "--no-json") for v in words[1:]):
        return  # with no new version given, npm prints the versions
    if words[:1] == ["pack"] and {"--dry-run", "--ignore-scripts"} <= set(words) and all(
            v in ("--dry-run", "--ignore-scripts", "--json") for v in words[1:]):
        return  # the files the tarball would hold, with no lifecycle script run
    if words[:1] == ["query"] and any(v is None or re.search(r":(?:outdated|vuln)\b", v)
                                      for v in words[1:]):
        e.add("network", f"{prog(e)} query :outdated/:vuln asks the registry")
        return
    if args and args[0].value in ("exec", "x"):
        _npx(e, args[1:], downloads=prog(e) != "pnpm")  # pnpm dlx is the one that fetches
    elif args and args[0].value == "pkg":
        _npm_pkg(e, args[1:])
    else:
        _npm(e, args)


_PNPMFILE = Loads((".pnpmfile.cjs", ".pnpmfile.mjs"), upward=True)
"""pnpm runs the project's pnpmfile (its ``readPackage`` and other hooks) while it resolves
and installs: code from the workspace."""
_PNPM_RESOLVES = frozenset({"install", "i", "add", "update", "up", "upgrade", "remove", "rm",
                            "uninstall", "un", "dedupe", "import", "fetch", "rebuild", "rb",
                            "prune", "link", "ln"})

_WRITES_INTO = frozenset({"logs-dir", "cache"})
"""npm settings naming a folder npm writes into (its logs, its package cache)."""
_RUN_NOW = frozenset({"script-shell", "shell", "editor", "browser", "git", "viewer"})
"""npm settings naming a program npm runs (scripts through ``script-shell``)."""


def _program_settings(e: Effect, args: list[Word]) -> None:
    """``--script-shell=CMD``, ``--editor CMD``: a program npm runs, judged as shell code
    (its value only known at run time is asked)."""
    for i, w in enumerate(args):
        v = w.value or ""
        key, eq, value = v[2:].partition("=")
        given = Word.of(value) if eq else args[i + 1] if i + 1 < len(args) else None
        if v.startswith("--") and key.lower() in _WRITES_INTO and given is not None:
            e.writes.append(given)  # npm ls --logs-dir=/tmp/x: its debug log goes there
            e.add("write", f"{prog(e)} --{key} writes its files into that folder")
        if not v.startswith("--") or key.lower() not in _RUN_NOW:
            continue
        if given is None or given.value is None:
            e.at_least("ask", f"{prog(e)} --{key} names a program only known at run time")
        else:
            e.scripts.append((f"{prog(e)} --{key}", given))


NPM_LIFECYCLE = frozenset({"preinstall", "install", "postinstall", "prepare", "preprepare",
                           "postprepare", "prepublish", "prepack", "postpack", "dependencies",
                           "prepublishonly", "preuninstall", "uninstall", "postuninstall"})
"""Scripts npm runs by itself (on install, pack, publish): one set there runs later."""


def _npm_pkg(e: Effect, args: list[Word]) -> None:
    """``npm pkg get`` reads package.json; ``set``/``delete``/``fix`` write it, and a
    lifecycle script set there runs on the next install (a planted command)."""
    verb = args[0].value if args else None
    if verb == "get":
        return
    e.writes.append(Word.of("package.json"))
    e.add("write", "npm pkg changes package.json")
    for w in args[1:]:
        key = (w.value or "").partition("=")[0].lower()
        if verb == "set" and (w.value is None or (key.startswith("scripts.") and
                              key.removeprefix("scripts.") in NPM_LIFECYCLE)):
            e.at_least("deny", f"npm pkg set {key or w.text} plants a command npm runs on "
                               "install")


def _bun_rule(e: Effect, args: list[Word]) -> None:
    """``bun -e CODE`` / ``--eval``/``--print`` runs inline JavaScript; the rest by
    subcommand."""
    o = parse_opts(args, "ep", frozenset({"--eval", "--print"}), stop_at_positional=True)
    codes = o.all("-e", "--eval", "-p", "--print")
    if [w.value for w in args[:2]] in (["pm", "ls"], ["pm", "hash"], ["pm", "bin"],
                                       ["pm", "untrusted"], ["pm", "hash-string"]):
        return  # bun pm ls: the installed packages, listed; untrusted: blocked scripts
    if not codes:
        _bun(e, args)
        return
    e.add("exec", "bun -e runs inline code")
    for code in codes:
        inline_code(e, "bun -e", "bun", code)


def _sets_version(args: list[Word]) -> bool:
    """``uv version 2.0.0`` and ``uv version --bump minor`` set it (unless ``--dry-run``);
    ``uv version [--short]`` shows it."""
    words = [w.value or "" for w in args]
    if "--dry-run" in words:
        return False
    return bool(parse_opts(args, "", _F({"--bump", "--package"})).positionals) or any(
        w.startswith("--bump") for w in words)


_UV_LISTS = [["python", "list"], ["python", "find"], ["python", "dir"], ["tool", "list"],
             ["tool", "dir"], ["cache", "dir"]]
"""What uv has installed, and where: printed from its own folders."""


def _uv_rule(e: Effect, args: list[Word]) -> None:
    """``uv pip uninstall`` and ``uv tool uninstall`` remove software like ``pip uninstall``;
    ``uv python list`` and the like print what is installed."""
    if [w.value for w in args[:2]] in _UV_LISTS:
        return
    if len(args) >= 2 and args[0].value in ("pip", "tool") and args[1].value == "uninstall":
        e.add("destructive", f"uv {args[0].value} uninstall removes installed software")
    elif [w.value for w in args[:2]] == ["pip", "tree"]:
        if "--outdated" in {w.value for w in args}:
            e.add("network", "uv pip tree --outdated asks the index")  # else: the venv's
    elif args and args[0].value == "pip":
        pip_rule(e, args[1:])
    elif args and args[0].value == "version" and _sets_version(args[1:]):
        e.writes.append(Word.of("pyproject.toml"))
        e.add("write", "uv version VALUE or --bump sets the project's version (and locks)")
    elif args and args[0].value == "export" and "--frozen" in {w.value for w in args} and \
            not {"-o", "--output-file"} & {(w.value or "").partition("=")[0] for w in args}:
        pass  # uv export --frozen: uv.lock rendered on the output, never re-locked
    elif args and args[0].value == "tree" and "--outdated" in {w.value for w in args}:
        e.add("network", "uv tree --outdated asks the package index for the latest versions")
    elif args and args[0].value == "tree" and not {"--frozen", "--locked", "--offline"} & {
            w.value for w in args}:
        e.writes.append(Word.of("uv.lock"))
        e.add("write", "uv tree locks the project first (uv.lock may change)")
    else:
        _uv(e, args)


def _dpkg(e: Effect, args: list[Word]) -> None:
    if any(a.value in ("-r", "-P", "--remove", "--purge") for a in args):
        e.add("destructive", "dpkg --remove/--purge removes installed software")
    elif any(a.value in ("-l", "-L", "-s", "-S", "--list", "--listfiles", "--status",
                         "--search", "--print-architecture") for a in args):
        return
    else:
        e.add("install", "dpkg installs packages")


def _pacman(e: Effect, args: list[Word]) -> None:
    first = (args[0].value or "") if args else ""
    if first.startswith("-R") or first == "--remove":
        e.add("destructive", "pacman -R removes installed software")
    elif first.startswith("-Q") or first == "--query":
        return
    else:
        e.add("install", "pacman installs packages")


_OPENSSL_LOCAL = frozenset({
    "x509", "req", "rsa", "ec", "pkey", "pkcs7", "pkcs12", "crl", "crl2pkcs7", "asn1parse",
    "dgst", "verify", "version", "ciphers", "list", "errstr", "base64", "enc", "rand",
    "genrsa", "genpkey", "ecparam", "dhparam", "pkeyutl", "sha1", "sha256", "sha384",
    "sha512", "md5", "prime", "storeutl", "cms", "smime", "nseq", "sess_id", "help"})
"""openssl commands that work on files and print (``s_client``, ``ocsp -url`` use the
network; any other command is not modelled)."""
_OPENSSL_NETWORK = frozenset({"s_client", "s_server", "s_time", "ocsp"})
_OPENSSL_WRITES = frozenset({"-out", "-keyout", "-writerand", "-CAserial", "-sigout"})
_OPENSSL_CREATES = frozenset({"-CAcreateserial", "-genkey"})
_OPENSSL_CODE = frozenset({"-engine", "-provider", "-provider-path", "-config",
                           "-keygen_engine", "-keyform_engine"})
"""Options that load a module or a configuration (which can load one): code not shown."""
_OPENSSL_FLAGS = frozenset({
    "-noout", "-text", "-pubout", "-pubin", "-modulus", "-subject", "-issuer", "-dates",
    "-enddate", "-startdate", "-serial", "-fingerprint", "-hash", "-subject_hash",
    "-issuer_hash", "-email", "-ocsp_uri", "-purpose", "-check", "-noenc", "-nodes",
    "-batch", "-x509", "-new", "-utf8", "-i", "-dump", "-C", "-help", "-a", "-A", "-d", "-e",
    "-base64", "-r", "-hex", "-binary", "-c", "-v", "-verify", "-info", "-nokeys",
    "-nocerts", "-print_certs", "-noverify", "-req", "-pubkey"})
"""Options that take no word after them (``-verify``: ``req -verify`` checks a signature;
``dgst -verify KEY`` names a file, which the path rule below judges)."""
_OPENSSL_WORDS = frozenset({"-subj", "-addext", "-newkey", "-days", "-checkend", "-set_serial",
                            "-name", "-purpose"})
"""Options whose word is no path even when it holds a ``/`` (``-subj /CN=x``)."""


def _openssl(e: Effect, args: list[Word]) -> None:
    """``openssl x509 -noout -text -in cert.pem`` reads and prints; ``-out``/``-keyout``
    write, ``req -new`` without ``-key`` writes ``privkey.pem``, ``-engine``/``-config``
    load code, ``s_client`` uses the network. The word after any other option (``-in``,
    ``-CAfile``, ``-passin file:P``, but also ``-inform DER``) is judged as a read: a
    relative one names a file in the working directory, wherever ``cd`` went."""
    sub = args[0].value if args else "help"
    if sub in _OPENSSL_NETWORK:
        e.add("network", f"openssl {sub} uses the network")
        return
    if sub not in _OPENSSL_LOCAL:
        e.add("exec", f"openssl {args[0].shown} is not modelled")
        return
    words = [a.value for a in args[1:]]
    i = 1
    while i < len(args):
        v = args[i].value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if v is None or not v.startswith("-"):
            e.reads.append(args[i])  # dgst FILE, verify CERT
        elif v in _OPENSSL_CODE:
            e.add("exec", f"openssl {v} loads a module or a configuration")
        elif v in _OPENSSL_CREATES:
            e.add("write", f"openssl {v} writes a file")
        elif v in _OPENSSL_WRITES and nxt is not None:
            if nxt.value != "-":
                e.writes.append(nxt)
                e.replaces.append(nxt)  # a key, a certificate: made here, not shown
                e.add("write", f"openssl {v} writes a file")
            i += 1
        elif v not in _OPENSSL_FLAGS and nxt is not None and not (nxt.value or "x").startswith(
                "-"):
            value = nxt.value or ""
            if nxt.value is None or (v not in _OPENSSL_WORDS and not value.startswith(
                    ("pass:", "env:", "fd:", "stdin"))):  # rsa:2048, DER: a name in the cwd
                e.reads.append(Word.of(value[5:]) if value.startswith("file:") else nxt)
            i += 1
        i += 1
    if sub == "req" and ("-newkey" in words or (("-new" in words or "-x509" in words)
                         and "-key" not in words)) and "-keyout" not in words:
        e.add("write", "openssl req -new writes the new key to privkey.pem")


_RPM_CODE = frozenset({"--eval", "-E", "--define", "-D", "--macros", "--rcfile", "--pipe",
                       "--load", "--root", "--dbpath"})
"""rpm options whose macros can run shell code (``%(cmd)``) or that pipe output to a
command."""


def _rpm(e: Effect, args: list[Word]) -> None:
    """``rpm -qa``, ``rpm -qi PKG``, ``rpm -V PKG`` query; ``-e`` erases packages,
    ``-i``/``-U``/``-F`` install them."""
    words = [w.value or "" for w in args]
    first = next((w for w in words if w.startswith("-")), "")
    if any(w.split("=")[0] in _RPM_CODE for w in words):
        e.add("exec", "rpm evaluates macros, which can run commands")
    elif first.startswith(("-e", "--erase")):
        e.add("destructive", "rpm -e removes installed software")
    elif first.startswith(("-i", "-U", "-F", "--install", "--upgrade", "--freshen",
                           "--reinstall")):
        e.add("install", "rpm installs software")
    elif not first.startswith(("-q", "--query", "-V", "--verify", "--version", "--help")):
        e.add("exec", f"rpm {first or 'without a mode'} is not modelled")
    # a query reads the package database, not the files it names (rpm -qf /usr/bin/ls)


_bundle_verbs = subcommands(_F({"version", "help"}),
                            _F({"install", "update", "add", "remove", "lock", "cache",
                                "package", "clean", "binstubs", "init", "gem"}),
                            _F({"exec", "console", "open", "list", "info", "show", "check",
                                "platform", "licenses"}), _F({"outdated"}),
                            config=_F({"config"}))
"""``bundle list``/``info``/``check`` evaluate the Gemfile, which is Ruby code: they run
project code like ``bundle exec``."""


def _bundle(e: Effect, args: list[Word]) -> None:
    """``bundle exec CMD`` runs CMD with the bundle's gems (judged as run); the rest by verb
    (every verb that reads the bundle evaluates the Gemfile)."""
    _bundle_verbs(e, args)
    if [w.value for w in args[:1]] == ["exec"] and len(args) > 1:
        e.nested.append(("bundle exec", args[1:]))


_GO_BUILD_RUNS = re.compile(r"--?(?:vettool|toolexec|exec|overlay|modfile|ldflags|gcflags|"
                            r"asmflags|gccgoflags|compiler|pgo|pkgdir|mod(?!=readonly|=vendor)"
                            r")\b")
"""go build flags that name a program it runs (``-vettool``, ``-toolexec``, a linker in
``-ldflags=-extld=``), files that stand in for sources or go.mod, or let it change go.mod
(``-mod=mod``)."""


def _go_or_query(e: Effect, args: list[Word]) -> None:
    """``go mod edit -json``/``-print`` prints go.mod and ``go tool dist list`` the
    platforms; ``go generate -n``/``go clean -n``/``go build -n`` print what they would do
    (nothing run, nothing written); ``go list -export`` builds; ``go mod graph``/``why``
    and the rest of ``go`` by verb."""
    words = [w.value for w in args]
    if words[:2] == ["mod", "edit"] and words[2:] and set(words[2:]) <= {"-json", "-print"}:
        e.reads.append(Word.of("go.mod"))
        return
    if words[:3] == ["tool", "dist", "list"] and set(words[3:]) <= {"-json", "-v"}:
        return  # the platforms this go can build for
    if words[:2] in (["tool", "nm"], ["tool", "objdump"], ["tool", "addr2line"],
                     ["tool", "buildid"]) and None not in words and "-w" not in words:
        e.reads.extend(w for w in args[2:] if not (w.value or "-").startswith("-"))
        return  # the toolchain's own readers of a built binary (buildid -w rewrites it)
    if words[:1] in (["generate"], ["clean"], ["build"]) and "-n" in words:
        return  # the commands it would run or the files it would remove, printed
    if words[:2] in (["mod", "graph"], ["mod", "why"], ["mod", "verify"]) and \
            None not in words and not any(_GO_BUILD_RUNS.match(w or "") for w in words):
        return  # the requirement graph, why a module is needed, the cache's hashes
    if words[:1] == ["list"] and any((w or "").split("=")[0] in ("-export", "-compiled")
                                     for w in words):
        e.add("exec", "go list -export/-compiled builds the packages (cgo runs the C compiler)")
    if words[:1] in (["build"], ["test"]):  # -o FILE, -o=FILE, --o FILE: where it goes
        flags = [Word.of("-o") if (w.value or "") in ("-o", "--o") else
                 Word.of("-o" + (w.value or "").split("=", 1)[1])
                 if (w.value or "").startswith(("-o=", "--o=")) else w for w in args[1:]]
        e.writes.extend(parse_opts(flags, "o").all("-o"))
    _go(e, args)


_SSH_KEYGEN_READS = frozenset({"-l", "-y", "-e", "-B", "-E", "-v", "-f", "-D"})
"""ssh-keygen options that only read a key (fingerprint, public half, export) and their
companions (``-E sha256``, ``-f FILE``)."""


def _ssh_keygen(e: Effect, args: list[Word]) -> None:
    """``ssh-keygen -l -f KEY`` prints a fingerprint and ``-y -f KEY`` the public half (a read
    of KEY); ``-F HOST`` reads known_hosts; generating (``-t``), ``-p``, ``-R`` and the rest
    write keys or known_hosts."""
    o = parse_opts(args, "fEbCNtFRrOnIVzZaMsuwYD")
    files = o.all("-f")
    flags = {k for k in o.flags}
    if o.has("-D", "-w"):  # ssh-keygen -D ./x.so -e: dlopen before anything else
        e.add("exec", "ssh-keygen -D/-w loads a PKCS#11 or security-key library and runs it")
    if flags & {"-l", "-y", "-e"} and flags <= _SSH_KEYGEN_READS:
        e.reads.extend(files)
    elif flags <= {"-F", "-f", "-H"} and "-F" in flags:
        e.reads.extend(files or [Word.of("~/.ssh/known_hosts")])
    else:
        e.writes.extend(files)
        e.add("write", "ssh-keygen writes keys or known_hosts")


def _dpkg_deb(e: Effect, args: list[Word]) -> None:
    """``dpkg-deb -c/-I/-f/-W PKG`` show a package; ``-x``/``-R`` extract, ``-b`` builds."""
    first = (args[0].value or "") if args else ""
    files = [w for w in args[1:] if not (w.value or "-").startswith("-")]
    if first in ("-c", "--contents", "-I", "--info", "-f", "--field", "-W", "--show"):
        e.reads.extend(files[:1])
    else:
        e.writes.extend(files[1:])
        e.add("write", f"dpkg-deb {first or 'without a mode'} writes files")


def _twine(e: Effect, args: list[Word]) -> None:
    """``twine check dist/*`` reads the archives; ``upload`` publishes them."""
    verb = args[0].value if args else None
    files = [w for w in args[1:] if not (w.value or "-").startswith("-")]
    e.reads.extend(files)
    if verb != "check":
        e.add("network", f"twine {verb or ''} uses the network".replace("  ", " "))
        e.unseen = "twine upload publishes to a package index for everyone (no undo)"


def _gh(e: Effect, args: list[Word]) -> None:
    """``gh repo delete``, ``gh release delete`` delete remote data; ``gh pr close
    --delete-branch`` deletes the branch of a pull request nobody merged."""
    e.add("network", "gh uses the network")
    verb = teardown_verb(args)
    words = [w.value for w in args]
    if verb is not None:
        e.add("destructive", f"gh {verb} deletes remote data")
    elif words[:2] == ["pr", "close"] and ("--delete-branch" in words or "-d" in words):
        e.add("destructive", "gh pr close --delete-branch deletes an unmerged branch")
    files = _gh_uploads(args)
    if files:  # gh gist create f, gh release upload TAG f: the files leave this machine
        e.reads.extend(files)
        uploads(e, files, [])


def _gh_uploads(args: list[Word]) -> list[Word]:
    """The files ``gh gist create``/``edit`` and ``gh release create``/``upload`` send."""
    words = [w.value for w in args]
    gist = words[:1] == ["gist"]  # gist's -d/-f take values; -p (public) is a flag, as are
    # release's -d (draft) and -p (prerelease)
    o = parse_opts(args[2:], "dfa" if gist else "tnFR", frozenset({
        "--desc", "--filename", "--add"} if gist else {
        "--repo", "--title", "--notes", "--notes-file", "--target", "--discussion-category",
        "--notes-start-tag"}))
    if words[:2] in (["gist", "create"], ["gist", "new"]):
        return [w for w in o.positionals if w.value != "-"]
    if words[:2] == ["gist", "edit"]:
        return o.all("-a", "--add")
    if words[:2] in (["release", "upload"], ["release", "create"]):
        return [w for w in o.positionals[1:]]  # after the tag
    return []


_CARGO_LOCK = Loads(("Cargo.lock",), runs=lambda path: "",
                    missing="resolves the dependencies and writes Cargo.lock, which is not "
                            "there now (fetching the registry's index)",
                    missing_if=("Cargo.toml",))
"""``cargo tree`` and ``cargo metadata`` resolve the dependency graph: with a lock file they
read it; without one they write it (``--locked``/``--frozen`` refuse to, ``metadata
--no-deps`` resolves nothing)."""


_CARGO_BUILTIN = frozenset({
    "add", "bench", "build", "check", "clean", "config", "doc", "fetch", "fix",
    "generate-lockfile", "help", "info", "init", "install", "locate-project", "login",
    "logout", "metadata", "new", "owner", "package", "pkgid", "publish", "read-manifest",
    "remove", "report", "run", "rustc", "rustdoc", "search", "test", "tree", "uninstall",
    "update", "vendor", "verify-project", "version", "yank", "b", "c", "d", "r", "t", "rm"})
"""cargo's own commands (and their one-letter aliases): an alias of that name is ignored."""
_CARGO_ALIASES = Loads((".cargo/config.toml", ".cargo/config"), keys=("alias",), upward=True)
"""Any other subcommand (``fmt``, ``clippy``: programs of their own) is first looked up among
the aliases a ``.cargo/config.toml`` here or above declares: ``fmt = "run --"`` builds and
runs the crate."""


def _cargo_fmt_or(rest: Rule) -> Rule:
    """``cargo fmt --check`` (also after ``--``) only reports; the rest of cargo by verb."""

    @rustup_proxy
    def rule(e: Effect, args: list[Word]) -> None:
        words = [w.value for w in args]
        if words in (["--list"], ["install", "--list"]):
            return  # the subcommands there are, the binaries cargo install put in place
        if words[:1] == ["clean"] and {"--dry-run", "-n"} & set(words):
            return  # what it would remove, printed
        if words[:1] in (["tree"], ["metadata"]) and not {"--locked", "--frozen"} & set(
                words) and not (words[:1] == ["metadata"] and "--no-deps" in words):
            e.loads_here.append(_CARGO_LOCK)
        if words[:1] and words[0] not in _CARGO_BUILTIN:
            e.loads_here.append(_CARGO_ALIASES)  # cargo fmt: a [alias] fmt = "run --" wins
        if words[:1] != ["fmt"]:
            rest(e, args)
        elif "--check" in words:
            e.reads.append(Word.of("."))
        else:
            e.writes.append(Word.of("."))
            e.add("write", "cargo fmt rewrites the crate's files")

    return rule


_GEM_REMOTE = _F({"-r", "--remote", "-b", "--both"})
_POETRY_ONLINE = {"search": _ALWAYS, "show": _F({"-o", "--outdated", "-l", "--latest"})}
_REGISTRY_QUERIES: dict[str, tuple[Mapping[str, frozenset[str]], frozenset[str]]] = {
    **dict.fromkeys(("npm", "pnpm"), ({"doctor": _ALWAYS}, _ALWAYS)),
    "yarn": ({"info": _ALWAYS}, _ALWAYS),
    "cargo": ({"search": _ALWAYS}, _F({"--offline", "--frozen"})),
    "gem": ({"search": _ALWAYS, "outdated": _ALWAYS, **dict.fromkeys(
        ("list", "info", "query", "dependency", "specification"), _GEM_REMOTE)},
        _F({"-l", "--local"})),
    **dict.fromkeys(("poetry", "pdm"), (_POETRY_ONLINE, _ALWAYS)),
    "go": ({"list": _F({"-u", "-versions", "-retracted"})}, _ALWAYS),
    "brew": ({"search": _ALWAYS, "info": _ALWAYS}, _ALWAYS),
    "snap": ({"info": _ALWAYS}, _ALWAYS),
    **dict.fromkeys(("apt", "apt-get"), ({"changelog": _ALWAYS}, _ALWAYS)),
    **dict.fromkeys(("dnf", "yum"), ({"check-update": _ALWAYS}, _F({"-C", "--cacheonly"}))),
    **dict.fromkeys(("conda", "mamba", "micromamba"), (
        {"search": _ALWAYS}, _F({"--offline", "-C", "--use-index-cache"}))),
}
"""What ``_asks_registry`` wraps each program's rule with."""


def _netcat(e: Effect, args: list[Word]) -> None:
    """``nc HOST PORT`` sends what it reads to HOST, which the command line does not show:
    only a person may send it (a scan, ``-z``, sends nothing; ``-l`` listens here).
    ``-e PROG``/``-c CMD`` run a program with the connection as its input and output."""
    e.add("network", f"{prog(e)} uses the network")
    o = parse_opts(args, "pswixXqIOTVMmecbP" if prog(e) != "telnet" else "lbenX", frozenset({
        "--exec", "--sh-exec", "--source-port", "--source", "--wait", "--proxy"}))
    if prog(e) != "telnet" and o.has("-c", "--sh-exec", "-e", "--exec"):
        e.at_least("deny", f"{prog(e)} -e hands a program to the connection: the other end "
                           "drives it (a remote shell)")
    for code in o.all("-c", "--sh-exec") if prog(e) != "telnet" else ():
        e.scripts.append((f"{prog(e)} -c", code))
    hosts = o.positionals[:1]
    if o.has("-z", "-l", "--listen", "--zero") and prog(e) != "telnet":
        return
    if hosts and not all(_LOCAL_URL.match(w.value or "") for w in hosts):
        e.unseen = f"{prog(e)} sends what it reads to {hosts[0].shown}"


RULES: dict[str, Rule] = {
    "nc": _netcat, "ncat": _netcat, "netcat": _netcat, "telnet": _netcat,
    "curl": _curl, "wget": _wget, "scp": _remote_copy, "rsync": _remote_copy,
    "ssh": _ssh, "sftp": _remote_copy,
    "pip": pip_command, "pip3": pip_command, "npm": _npm_rule, "pnpm": _npm_rule,
    "yarn": _yarn_rule, "bun": _bun_rule,
    "uv": _uv_rule, "cargo": _cargo_fmt_or(_cargo), "go": _go_or_query, "gem": _gem_or_yank,
    "poetry": _poetry_rule, "ssh-keygen": _ssh_keygen, "dpkg-deb": _dpkg_deb,
    "pdm": _pdm_rule,
    **dict.fromkeys(("apt", "apt-get", "aptitude", "yum", "dnf", "zypper", "apk", "brew", "port",
                     "snap", "flatpak", "pipx"), _system_pkg),
    **dict.fromkeys(("conda", "mamba", "micromamba"), _conda),
    "apt-cache": plain(), "dpkg-query": plain(),
    "dpkg": _dpkg, "pacman": _pacman,
    "npx": _npx,
    "pnpx": _package_runner("", frozenset(), "pnpx downloads and runs a package"),
    "bunx": _package_runner("p", frozenset({"--package"}), "bunx downloads and runs a package"),
    "uvx": _package_runner("pw", frozenset({"--from", "--with", "--python", "--index-url",
                                            "--with-requirements", "--index"}),
                           "uvx downloads and runs a tool"),
    "systemctl": _systemctl_rule, "hostnamectl": _machine_settings,
    "timedatectl": _machine_settings, "localectl": _machine_settings, "gh": _gh,
    "openssl": _openssl, "rpm": _rpm,
    "bundle": _bundle, "twine": _twine,
}
RULES.update({name: _asks_registry(RULES[name], *query)
              for name, query in _REGISTRY_QUERIES.items()})
