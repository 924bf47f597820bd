"""Rules for platform tools asked what they know: mobile SDKs (Flutter, Android, Xcode),
API and document linters, process managers and web servers, binary editors, and the
version managers that keep a default in the user's home.

Like ``rules_langs.QUERIES``, each table entry declares the command lines that only read
(``flutter doctor``, ``adb devices``, ``pm2 jlist``, ``nginx -t``, ``patchelf
--print-rpath``); any other line builds, runs, installs or changes something and asks, and
one that tears down (``pm2 kill``, ``supervisorctl stop all``) is refused by the teardown
verbs. A tool's start-up files that hold code (a ``.spectral.js`` ruleset, a
``.markdownlint.cjs``) make even a query run code. Lines that write a named place say so:
``foreman export systemd /etc/systemd/system`` writes there, ``pyenv global 3.12`` writes
the user's default under their home (outside the workspace: refused).
"""

from __future__ import annotations

import re

from engine.permissions.effect import Effect, Loads, Rule, parse_opts, prog
from engine.permissions.rules_langs import Queries, query_rule
from engine.permissions.words import Word

_F = frozenset
_ABOUT = _F({"--version", "-V", "--help", "-h", "-help", "-version", "version", "help"})


def _v(*verbs: str) -> frozenset[tuple[str, ...]]:
    return _F(tuple(v.split()) if v else () for v in verbs)


_SPECTRAL_CODE = (Loads((".spectral.js", ".spectral.mjs", ".spectral.cjs", ".spectral.ts")),
                  Loads((".spectral.yaml", ".spectral.yml", ".spectral.json"),
                        ("functions", "extends")))
"""Spectral rulesets in JavaScript are code; a YAML one may name custom functions (code) or
extend a ruleset fetched from a URL."""
_MARKDOWNLINT_CODE = (
    Loads((".markdownlint.js", ".markdownlint.cjs", ".markdownlint.mjs",
           ".markdownlint-cli2.cjs", ".markdownlint-cli2.mjs")),
    Loads((".markdownlint-cli2.jsonc", ".markdownlint-cli2.yaml", ".markdownlint.json",
           ".markdownlint.jsonc", ".markdownlint.yaml", ".markdownlint.yml"),
          ("customrules", "markdownitplugins", "outputformatters", "extends")))
"""markdownlint configuration in JavaScript is code; a JSON or YAML one may name custom
rules, markdown-it plugins or formatters (modules it loads)."""

QUERIES: dict[str, Queries] = {
    "flutter": Queries(_v("doctor", "devices", "emulators", "pub deps", "channel"),
                       _v("config"), needs={("analyze",): _F({"--no-pub"})},
                       about=_ABOUT | {"--version"},
                       loads=(Loads(("analysis_options.yaml",), ("plugins",)),),
                       why="builds, runs, fetches packages or changes the project"),
    "emulator": Queries(about=_ABOUT | {"-list-avds"}),
    "xcodebuild": Queries(needs={(): _F({"-list", "-showsdks", "-version"})},
                          writes=_F({"build", "clean", "test", "archive", "install",
                                     "analyze", "docbuild", "build-for-testing",
                                     "test-without-building", "-exportArchive",
                                     "-resolvePackageDependencies", "-create-xcframework"}),
                          files=_F({"-project", "-workspace"})),
    "simctl": Queries(_v("list", "help"), why="boots, installs on or changes a simulator"),
    "plutil": Queries(needs={(): _F({"-p", "-lint"})},
                      writes=_F({"-convert", "-replace", "-insert", "-remove", "-o", "-e",
                                 "-s", "-extract", "-create"}), operands=True),
    "apksigner": Queries(_v("verify"), operands=True, writes=_F({"sign", "rotate"})),
    "aapt": Queries(_v("dump", "list", "l", "d"), operands=True),
    "aapt2": Queries(_v("dump"), operands=True),
    "zipalign": Queries(needs={(): _F({"-c"})}, operands=True),
    "spectral": Queries(_v("lint"), writes=_F({"-o", "--output", "--resolver"}),
                        files=_F({"-r", "--ruleset"}), loads=_SPECTRAL_CODE),
    "openapi-generator": Queries(_v("validate", "list", "config-help"),
                                 files=_F({"-i", "--input-spec"})),
    "openapi-generator-cli": Queries(_v("validate", "list", "config-help"),
                                     files=_F({"-i", "--input-spec"})),
    "markdownlint": Queries(_v(""), writes=_F({"--fix", "-f", "-o", "--output", "-r",
                                                "--rules", "-c", "--config"}),
                            loads=_MARKDOWNLINT_CODE, operands=True,
                            why="fixes files or loads custom rules (code)"),
    "markdownlint-cli2": Queries(_v(""), writes=_F({"--fix", "--config"}),
                                 loads=_MARKDOWNLINT_CODE),
    "vale": Queries(_v("", "ls-config", "ls-dirs", "ls-metrics"), writes=_F({"sync"}),
                    about=_ABOUT | {"-v"}),
    "pandoc": Queries(_v(""), writes=_F({"-o", "--output", "-L", "--lua-filter", "-F",
                                         "--filter", "--extract-media", "-d", "--defaults",
                                         "--data-dir", "--embed-resources", "--self-contained",
                                         "--log", "--print-default-data-file"}),
                      operands=True, why="writes a file or runs filters (code)",
                      about=_ABOUT | {"--list-input-formats",
                                                     "--list-output-formats",
                                                     "--list-extensions",
                                                     "--list-highlight-languages"}),
    "lychee": Queries(needs={(): _F({"--offline"})},
                      writes=_F({"-o", "--output", "--cache", "--dump-inputs"})),
    "dtc": Queries(_v(""), writes=_F({"-o", "--out", "-d", "--out-dependency"}),
                   operands=True, why="writes the compiled tree to a file"),
    "patchelf": Queries(needs={(): _F({"--print-interpreter", "--print-rpath",
                                       "--print-needed", "--print-soname",
                                       "--print-os-abi", "--print-execstack"})},
                        writes=_F({"--set-interpreter", "--set-rpath", "--add-rpath",
                                   "--remove-rpath", "--shrink-rpath", "--add-needed",
                                   "--remove-needed", "--replace-needed", "--set-soname",
                                   "--set-os-abi", "--no-default-lib", "--output",
                                   "--clear-symbol-version", "--add-debug-tag",
                                   "--clear-execstack", "--set-execstack",
                                   "--rename-dynamic-symbols"}), operands=True,
                        why="changes the binary it is given"),
    "rubocop": Queries(_v(""), writes=_F({"-a", "--autocorrect", "-A", "--autocorrect-all",
                                           "-x", "--fix-layout", "--auto-gen-config", "-o",
                                           "--out", "-r", "--require", "--plugin",
                                           "--regenerate-todo", "-c", "--config", "--init",
                                           "--server", "--start-server", "--restart-server",
                                           "--stop-server", "--cache-root",
                                           "--only-guide-cops"}),
                       loads=(Loads((".rubocop.yml", ".rubocop_todo.yml"),
                                    ("require", "plugins", "inherit_gem", "inherit_from"),
                                    upward=True),),
                       why="corrects files or loads Ruby extensions"),
    "task": Queries(needs={(): _F({"--list", "-l", "--list-all", "-a", "--summary"})},
                    writes=_F({"--init", "-i", "--watch", "-w", "--force", "-f",
                               "--taskfile", "-t", "--dir", "-d"}),
                    loads=(Loads(("Taskfile.yml", "Taskfile.yaml", "taskfile.yml",
                                  "taskfile.yaml", "Taskfile.dist.yml", "Taskfile.dist.yaml"),
                                 ("sh:", "includes:")),),
                    why="runs a task's commands"),
    "mkdocs": Queries(_v("get-deps"), why="builds the site (running its plugins and hooks), "
                      "serves it or publishes it"),
    "pm2": Queries(_v("list", "ls", "l", "status", "jlist", "prettylist", "describe", "show",
                      "info", "env", "report"), needs={("logs",): _F({"--nostream"})},
                   about=_ABOUT | {"-v"},
                   why="starts, stops or changes the processes it manages"),
    "supervisorctl": Queries(_v("status", "avail", "pid", "version", "help", "tail",
                                "maintail"),
                             why="starts, stops or changes the programs it supervises"),
    "nginx": Queries(needs={(): _F({"-t", "-T", "-V", "-v", "-h", "-?"})},
                     writes=_F({"-s", "-g"}), files=_F({"-c"}),
                     why="starts the server or signals the running one"),
    "foreman": Queries(_v("check", "help", "version"),
                       why="starts the processes of the Procfile or writes service files"),
    "pio": Queries(_v("project config", "device list", "boards", "system info",
                      "platform list", "pkg list", "lib list", "check"),
                   needs={("run",): _F({"--list-targets"})},
                   loads=(Loads(("platformio.ini",), ("extra_scripts",)),),
                   why="builds, uploads to a board, installs or changes packages"),
    "mise": Queries(_v("ls", "list", "current", "which", "where", "doctor", "version",
                       "config ls", "plugins ls", "tasks ls", "settings ls", "bin-paths",
                       "outdated"), about=_ABOUT | {"-v"},
                    online=_F({"--remote"}),
                    why="installs, removes or changes tool versions"),
    "nvm": Queries(_v("ls", "list", "current", "version", "which"), _v("alias"),
                   about=_ABOUT | {"--version"},
                   why="installs, removes, switches or changes node versions"),
    "promtool": Queries(_v("check config", "check rules", "check web-config",
                           "check metrics", "test rules", "tsdb list", "tsdb analyze"),
                        operands=True, why="queries or changes a server, or writes blocks"),
    "amtool": Queries(_v("check-config"), needs={
        ("config", "routes"): _F({"--config.file"}),
        ("config", "routes", "show"): _F({"--config.file"}),
        ("config", "routes", "test"): _F({"--config.file"})},
        files=_F({"--config.file"}), operands=True,
        why="talks to the alert manager (silences, alerts)"),
    "grafana-cli": Queries(_v("plugins ls", "plugins list"), files=_F({"--pluginsDir"}),
                           why="installs, updates or removes plugins or changes settings"),
    "consul": Queries(_v("validate"), operands=True,
                      why="talks to the cluster (keys, services, members) or runs an agent"),
    "nats-server": Queries(needs={(): _F({"-t"})}, files=_F({"-c", "--config"}),
                           writes=_F({"-sl", "--signal", "-l", "--log", "-P", "--pid",
                                      "--ports_file_dir"}),
                           why="starts the server or signals the running one"),
}
"""Per program: what of its command lines only reads (``rules_langs.Queries``)."""

_DEVICE_QUERIES = (("getprop",), ("dumpsys",), ("pm", "list"), ("pm", "path"),
                   ("wm", "size"), ("wm", "density"), ("settings", "get"), ("df",),
                   ("ps",), ("uptime",), ("id",))
"""Programs ``adb shell`` may run on the device that only report (``adb shell getprop``)."""
_DEVICE_WORD = re.compile(r"[\w.:/=@%+,-]+")
"""A word the device's shell reads as itself: ``adb shell`` joins its words with blanks
and the device's shell parses the line (``getprop x ';' rm -rf /sdcard`` runs rm)."""
_ADB_READS = _F({"devices", "get-state", "get-serialno", "get-devpath", "version",
                 "help", "--version"})


def _adb(e: Effect, args: list[Word]) -> None:
    """``adb devices``, ``adb logcat -d`` (dump and exit; ``-c`` clears), ``adb shell
    getprop``: reads of the device. ``install``, ``push``, ``shell rm``, ``root``,
    anything else changes the device or the files here."""
    words = [w.value for w in args]
    if None in words or not words:
        e.add("exec", "adb with these arguments is not modelled")
        return
    given = [w or "" for w in words]
    if given[0] in _ADB_READS and given[1:] in ([], ["-l"]):  # adb devices -l
        return
    if given[0] == "logcat" and "-d" in given[1:] and not {"-c", "--clear", "-f", "--file",
                                                           "-r", "-n", "-G", "-P"} & set(given):
        return
    rest = given[1:]
    if given[0] == "shell" and all(_DEVICE_WORD.fullmatch(w) for w in rest) and any(
            tuple(rest[:len(q)]) == q for q in _DEVICE_QUERIES):
        return
    e.add("exec", f"adb {args[0].shown} changes the device or runs a command on it")


def _foreman_changes(e: Effect, args: list[Word]) -> None:
    """``foreman export FORMAT LOCATION`` writes service files into LOCATION (often
    ``/etc/systemd/system``: a service started at boot); ``start``/``run`` run the
    Procfile's commands."""
    e.add("exec", f"{prog(e)} {QUERIES['foreman'].why}")
    o = parse_opts(args, "fdaulpcrt", frozenset({"--procfile", "--root", "--app", "--user",
                                                 "--log", "--port", "--template",
                                                 "--concurrency", "--env"}))
    names = [w.value for w in o.positionals]
    if names[:1] == ["export"] and len(o.positionals) >= 3:
        e.writes.append(o.positionals[2])


def _nginx_changes(e: Effect, args: list[Word]) -> None:
    """``nginx -s stop`` (or ``quit``) shuts the server down; ``-s reload``, ``reopen`` and a
    bare ``nginx`` start or signal it."""
    e.add("exec", f"{prog(e)} {QUERIES['nginx'].why}")
    words = [w.value for w in args]
    for at, w in enumerate(words[:-1]):
        if w == "-s" and words[at + 1] in ("stop", "quit"):
            e.add("destructive", f"nginx -s {words[at + 1]} shuts the web server down")


_MISE_GLOBAL = _F({"-g", "--global"})


def _mise_changes(e: Effect, args: list[Word]) -> None:
    """``mise use -g node@20`` writes the user's default (``~/.config/mise/config.toml``);
    ``mise use node@20`` the project's ``mise.toml``; the rest installs or removes."""
    e.add("install", f"{prog(e)} {QUERIES['mise'].why}")
    words = [w.value for w in args]
    if words[:1] == ["implode"]:
        e.add("destructive", "mise implode removes mise and every tool it installed")
    if words[:1] == ["use"]:
        home = _MISE_GLOBAL.intersection(w or "" for w in words)
        e.writes.append(Word.of("~/.config/mise/config.toml" if home else "mise.toml"))


def _nvm_changes(e: Effect, args: list[Word]) -> None:
    """``nvm alias default 20`` writes ``~/.nvm/alias/default``; the rest installs, removes
    or switches versions."""
    e.add("install", f"{prog(e)} {QUERIES['nvm'].why}")
    words = [w.value for w in args]
    if words[:1] == ["alias"] and len(words) >= 3 and words[1]:
        e.writes.append(Word.of(f"~/.nvm/alias/{words[1]}"))
    if words[:1] == ["unalias"] and len(words) >= 2 and words[1]:
        e.writes.append(Word.of(f"~/.nvm/alias/{words[1]}"))


def _pm2_changes(e: Effect, args: list[Word]) -> None:
    """``pm2 startup`` installs a service that starts pm2's processes at every boot (a unit
    under ``/etc/systemd/system``); ``pm2 kill``/``delete all`` stop everything it runs."""
    e.add("exec", f"{prog(e)} {QUERIES['pm2'].why}")
    words = [w.value for w in args]
    if words[:1] in (["startup"], ["unstartup"]):
        e.writes.append(Word.of("/etc/systemd/system"))
    if words[:1] == ["kill"] or (words[:1] in (["stop"], ["delete"], ["del"]) and
                                 "all" in words[1:]):
        e.add("destructive", f"pm2 {' '.join(w or '' for w in words[:2])} stops every "
                             "process it manages")


def _mkdocs_changes(e: Effect, args: list[Word]) -> None:
    """``mkdocs gh-deploy`` pushes the built site to the ``gh-pages`` branch; with
    ``--force`` it replaces the branch's history on the remote."""
    e.add("exec", f"{prog(e)} {QUERIES['mkdocs'].why}")
    words = [w.value for w in args]
    if words[:1] == ["gh-deploy"]:
        e.add("network", "mkdocs gh-deploy pushes the site")
        if {"--force", "-f"} & set(w or "" for w in words):
            e.add("destructive", "mkdocs gh-deploy --force replaces the remote gh-pages "
                                 "branch (a force push)")


CHANGES: dict[str, Rule] = {"foreman": _foreman_changes, "nginx": _nginx_changes,
                            "mise": _mise_changes, "nvm": _nvm_changes, "pm2": _pm2_changes,
                            "mkdocs": _mkdocs_changes}
"""The rule of a program's other command lines, where asking is not all."""
RULES: dict[str, Rule] = {name: query_rule(name, CHANGES.get(name), QUERIES)
                          for name in QUERIES}
RULES["adb"] = _adb
