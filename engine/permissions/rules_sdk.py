"""Rules for language SDK drivers asked about themselves: ``dotnet``, ``rustup``, ``composer``.

Each answers some questions from its own installation or the project's manifest without
running project code: ``dotnet --list-sdks``, ``rustup toolchain list``, ``composer show
--no-plugins``. Everything else builds, runs, installs or loads code (MSBuild targets,
Composer plugins from ``vendor/``), and asks as before. A verb not listed here is not
modelled, and asks.
"""

from __future__ import annotations

from engine.permissions.effect import Effect, Rule, parse_opts, prog
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
                 ("workload", "list"), ("nuget", "locals")}
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
    verbs = tuple(_verbs(words)[:2])
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


def _pyenv(e: Effect, args: list[Word]) -> None:
    """``pyenv versions``, ``which``, ``prefix``, ``install --list`` read; ``pyenv exec
    CMD`` runs CMD (judged as run); ``local``/``global`` with a version change which Python
    runs; the rest (``install``, ``uninstall``, ``rehash``) installs or removes."""
    words = _words(args)
    verbs = _verbs(words or [])
    if words is None or not verbs:
        if words is None or not set(words) <= _PYENV_READS:
            e.add("exec", "pyenv with these arguments is not modelled")
    elif verbs[0] in _PYENV_READS:
        return
    elif verbs[0] == "exec" and len(args) > words.index("exec") + 1:
        e.nested.append(("pyenv exec", args[words.index("exec") + 1:]))
    elif verbs[0] == "install" and set(words[1:]) <= {"--list", "-l"} and words[1:]:
        return  # the versions it knows how to build, from its own definitions
    elif verbs[0] in _PYENV_SETTINGS and len(verbs) == 1 and words[1:] == []:
        return
    elif verbs[0] == "local":
        e.writes.append(Word.of(".python-version"))
        e.add("write", "pyenv local sets the project's Python (.python-version)")
    else:
        e.add("install", f"pyenv {verbs[0]} installs, removes or changes Pythons")


RULES["pyenv"] = _pyenv


# ---------------------------------------------------------------- composer

_COMPOSER_READS = _F({"show", "info", "validate", "licenses", "depends", "why", "prohibits",
                      "why-not", "check-platform-reqs", "status", "suggests", "list", "help",
                      "about"})
"""Verbs that read composer.json, composer.lock and what is installed (``list``, the verb
with none given, shows the plugins' commands too)."""
_COMPOSER_ONLINE = _F({"--latest", "-l", "--outdated", "-o", "--all", "-a", "--available"})
"""``show`` options that ask the package repositories."""


def _composer(e: Effect, args: list[Word]) -> None:
    """``composer show --no-plugins`` reads composer.json and composer.lock. Without
    ``--no-plugins`` every command first loads the plugins installed in ``vendor/``
    (project code); installing, updating and running scripts ask as before."""
    o = parse_opts(args, "d", frozenset({"--working-dir"}))
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
    elif "--no-plugins" not in words:
        e.add("exec", f"{prog(e)} {verbs[0]} loads the plugins installed in vendor/ (project "
                      "code) unless --no-plugins")
    elif _COMPOSER_ONLINE.intersection(words):
        e.add("network", f"{prog(e)} {verbs[0]} asks the package repositories")


RULES["composer"] = _composer
