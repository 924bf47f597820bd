"""Rules for language SDK drivers asked about themselves: ``dotnet``, ``rustup``, ``composer``.

Each answers some questions from its own installation or the project's manifest without
running project code: ``dotnet --list-sdks``, ``rustup toolchain list``, ``composer show
--no-plugins``. Everything else builds, runs, installs or loads code (MSBuild targets,
Composer plugins from ``vendor/``), and asks as before. A verb not listed here is not
modelled, and asks.
"""

from __future__ import annotations

from engine.permissions.effect import Effect, Loads, Rule, parse_opts, prog, teardown_verb
from engine.permissions.words import Word

_F = frozenset
RULES: dict[str, Rule] = {}


def _words(args: list[Word]) -> list[str] | None:
    """The arguments' values, or None when one is only known at run time."""
    values = [w.value for w in args]
    return None if None in values else [v or "" for v in values]


def _verbs(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-")]


# ---------------------------------------------------------------- dotnet

_DOTNET_ABOUT = _F({"--info", "--version", "--list-sdks", "--list-runtimes", "-h", "--help",
                    "-?"})
_DOTNET_LISTS = {("tool", "list"), ("new", "list"), ("new", "--list"), ("sln", "list"),
                 ("workload", "list"), ("nuget", "locals"), ("nuget", "list")}
"""Verbs that list what is installed (``dotnet new list``, ``dotnet nuget locals all
--list``), read from the SDK's folders, or a solution's projects. Not ``list package``:
it evaluates the project with MSBuild (and may restore it first)."""
_DOTNET_ONLINE = _F({"--check-updates", "--clear", "-c"})
"""Options that make a listing ask a feed or change state (``nuget locals all
--clear``)."""


_DOTNET_HELP = _F({"--help", "-h", "-?"})


def _dotnet_reports(words: list[str]) -> bool:
    """``dotnet build --help`` prints the verb's help; ``dotnet format whitespace --folder
    --verify-no-changes`` reads the files as a folder (no MSBuild) and writes nothing;
    ``dotnet new TEMPLATE --dry-run --no-update-check`` says what it would create (without
    ``--no-update-check`` it asks the feed for newer templates)."""
    options = {w.partition("=")[0] for w in words if w.startswith("-")}
    if len(words) >= 2 and words[-1] in _DOTNET_HELP and len(_verbs(words)) <= 2 and \
            options <= _DOTNET_HELP:
        return True
    if words[:1] == ["format"] and {"--folder", "--verify-no-changes"} <= options:
        return True
    return words[:1] == ["new"] and {"--dry-run", "--no-update-check"} <= options and \
        "--force" not in options


def _dotnet(e: Effect, args: list[Word]) -> None:
    """``dotnet --list-sdks``, ``dotnet tool list -g``, ``dotnet new list``: reads.
    ``build``, ``run``, ``test``, ``restore``, ``list package`` and the rest run MSBuild
    (project code) or change what is installed."""
    words = _words(args)
    if words is None:
        e.add("exec", "dotnet with arguments only known at run time")
        return
    named = [w for w in _verbs(words) if not w.endswith((".sln", ".slnx"))]
    verbs = tuple(named[:2])  # dotnet sln Api.sln list: the solution file is no verb
    if len(words) == 1 and words[0] in _DOTNET_ABOUT:
        return
    if _dotnet_reports(words):
        return
    if verbs in _DOTNET_LISTS or tuple(words[:2]) == ("new", "--list"):
        if _DOTNET_ONLINE.intersection(words) or (verbs == ("nuget", "locals") and not {
                "-l", "--list"} & set(words)):
            e.add("network", f"dotnet {' '.join(verbs)} asks a feed or changes the caches")
        return
    e.add("exec", f"dotnet {' '.join(verbs) or 'with these options'} runs the project's "
                  "build (MSBuild targets are code) or changes what is installed")
    o = parse_opts(args, "ocfrsvpk", frozenset({"--output", "--configuration", "--framework",
                                                "--runtime", "--source", "--verbosity",
                                                "--project", "--api-key"}))
    e.writes.extend(o.all("-o", "--output"))  # dotnet publish -o /var/www/api: written there
    verb = teardown_verb(args)  # ef database drop, nuget delete, ef database update 0
    if verb is not None:
        e.add("destructive", f"dotnet {verb} deletes a database or a published package")


RULES["dotnet"] = _dotnet


# ---------------------------------------------------------------- rustup

_RUSTUP_READS = _F({"show", "which", "help", "--version", "-V", "--help", "-h"})
_RUSTUP_LISTS = _F({"toolchain", "target", "component", "override"})
"""Groups whose ``list`` action reads what is installed (``rustup target list``)."""


def _rustup(e: Effect, args: list[Word]) -> None:
    """``rustup show``, ``rustup toolchain list``, ``rustup which cargo`` read;
    ``rustup run TOOLCHAIN CMD`` runs CMD (judged as run); anything else installs,
    removes or changes the toolchains."""
    words = _words(args)
    verbs = _verbs(words or [])
    if words is None or (not verbs and not (words and set(words) <= _RUSTUP_READS)):
        e.add("exec", "rustup with these arguments is not modelled")
    elif not verbs:
        return  # rustup --version
    elif verbs[0] == "run" and len(args) > 2:
        e.nested.append(("rustup run", args[words.index("run") + 2:]))
    elif verbs[0] in _RUSTUP_READS or (verbs[0] in _RUSTUP_LISTS and verbs[1:2] == ["list"]):
        return
    elif verbs[0] == "doc" and "--path" in words:
        return  # the documentation's path, printed instead of opened
    elif verbs == ["default"]:
        return  # with no toolchain named, the default one is printed
    else:
        e.add("install", f"rustup {verbs[0]} installs, removes or changes toolchains")


RULES["rustup"] = _rustup


# ---------------------------------------------------------------- pyenv

_PYENV_READS = _F({"versions", "version", "version-name", "version-file", "version-origin",
                   "which", "whence", "prefix", "root", "commands", "help", "--version",
                   "-v", "completions", "shims"})
_PYENV_SETTINGS = _F({"local", "global", "shell"})
"""Given no version, they print the one set; given one, ``local`` writes
``.python-version`` here and ``global`` the user's default outside the project."""


def _version_manager(name: str, version_file: str) -> Rule:
    """pyenv and the managers made like it (rbenv, nodenv, goenv, jenv, ..): ``versions``,
    ``which``, ``prefix``, ``install --list`` read; ``exec CMD`` runs CMD (judged as run);
    ``local``/``global`` with a version change which one runs (``local`` writes
    ``version_file`` here); the rest (``install``, ``uninstall``, ``rehash``, ``add``)
    installs or removes."""

    def rule(e: Effect, args: list[Word]) -> None:
        words = _words(args)
        verbs = _verbs(words or [])
        if words is None or not verbs:
            if words is None or not set(words) <= _PYENV_READS:
                e.add("exec", f"{name} with these arguments is not modelled")
        elif verbs[0] in _PYENV_READS:
            return
        elif verbs[0] == "exec" and len(args) > words.index("exec") + 1:
            e.nested.append((f"{name} exec", args[words.index("exec") + 1:]))
        elif verbs[0] == "install" and set(words[1:]) <= {"--list", "-l"} and words[1:]:
            return  # the versions it knows how to build, from its own definitions
        elif verbs[0] in _PYENV_SETTINGS and len(verbs) == 1 and words[1:] == []:
            return
        elif verbs[0] == "local":
            e.writes.append(Word.of(version_file))
            e.add("write", f"{name} local sets the project's version ({version_file})")
        elif verbs[0] == "global":  # the default every shell of the user runs
            e.writes.append(Word.of(f"~/.{name}/version"))
            e.add("write", f"{name} global sets the user's default version")
        else:
            e.add("install", f"{name} {verbs[0]} installs, removes or changes versions")

    return rule


RULES.update({name: _version_manager(name, version_file) for name, version_file in (
    ("pyenv", ".python-version"), ("rbenv", ".ruby-version"), ("nodenv", ".node-version"),
    ("goenv", ".go-version"), ("jenv", ".java-version"), ("plenv", ".perl-version"),
    ("phpenv", ".php-version"), ("luaenv", ".lua-version"))})


# ---------------------------------------------------------------- asdf

_ASDF_READS = _F({"current", "where", "which", "info", "version", "--version", "help"})


def _asdf(e: Effect, args: list[Word]) -> None:
    """``asdf current``, ``where``, ``which``, ``list NAME`` read what is installed;
    ``list all``/``plugin list all`` ask the plugins' sources; ``exec CMD`` runs CMD; the rest
    (``install``, ``set``, ``local``, ``global``, ``plugin add``) installs or changes versions."""
    words = _words(args)
    verbs = _verbs(words or [])
    if words is None:
        e.add("exec", "asdf with these arguments is not modelled")
    elif not verbs or verbs[0] in _ASDF_READS or verbs[:2] in (["plugin", "list"],
                                                                ["plugin-list"]):
        if "all" in verbs[1:] or "--urls" in words:
            e.add("network", "asdf lists what the plugins' sources offer")
    elif verbs[0] == "list":
        if verbs[1:2] == ["all"]:
            e.add("network", "asdf list all asks the plugin's source for versions")
    elif verbs[0] == "exec" and len(args) > words.index("exec") + 1:
        e.nested.append(("asdf exec", args[words.index("exec") + 1:]))
    elif verbs[0] in ("global", "set") and len(verbs) > 1 and (
            verbs[0] == "global" or {"-u", "--home"} & set(words)):
        e.writes.append(Word.of("~/.tool-versions"))  # the user's default, every shell's
        e.add("write", f"asdf {verbs[0]} sets the user's default version")
    else:
        e.add("install", f"asdf {verbs[0]} installs, removes or changes versions")


RULES["asdf"] = _asdf


# ---------------------------------------------------------------- composer

_COMPOSER_READS = _F({"show", "info", "validate", "licenses", "depends", "why", "prohibits",
                      "why-not", "check-platform-reqs", "status", "suggests", "list", "help",
                      "about"})
"""Verbs that read composer.json, composer.lock and what is installed (``list``, the verb
with none given, shows the plugins' commands too)."""
_COMPOSER_ONLINE = _F({"--latest", "-l", "--outdated", "-o", "--all", "-a", "--available"})
"""``show`` options that ask the package repositories."""


_COMPOSER_PLUGINS = Loads(("vendor/composer/installed.json",), ("composer-plugin",))
"""Every composer command first loads the plugins installed in ``vendor/`` (project code),
unless ``--no-plugins``: there are some when the installed list names a package of that
type."""


def _composer(e: Effect, args: list[Word]) -> None:
    """``composer show`` reads composer.json and composer.lock (and runs the plugins
    installed in ``vendor/``, if any, unless ``--no-plugins``); installing, updating and
    running scripts ask as before."""
    o = parse_opts(args, "d", frozenset({"--working-dir"}))
    if not o.has("--no-plugins"):
        e.loads_here.append(_COMPOSER_PLUGINS)
    e.reads.extend(o.all("-d", "--working-dir"))  # the folder whose composer.json is read
    words = _words(args)
    verbs = [w.value or "" for w in o.positionals] or ["list"]
    if words in (["--version"], ["-V"]):
        return
    if verbs[0] in ("run-script", "run") and words is not None and "--list" in words and \
            "--no-plugins" in words and len(verbs) == 1:
        return  # composer run-script --list --no-plugins: the scripts' names
    if words is None or verbs[0] not in _COMPOSER_READS:
        e.add("exec", f"{prog(e)} {verbs[0]} runs project code (plugins, scripts) or "
                      "installs packages")
    elif _COMPOSER_ONLINE.intersection(words):
        e.add("network", f"{prog(e)} {verbs[0]} asks the package repositories")


RULES["composer"] = _composer
