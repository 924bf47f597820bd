"""Rules for the tools of smaller language stacks asked what they know: Zig, Deno, Dart,
Swift, Haskell, OCaml, Lua, Perl, Bun and the JVM's key tools; and Hatch, whose ``hatch
version`` is the project's version, not its own (a dynamic one runs code).

Each tool answers some questions without running project code or changing a file: ``zig
env``, ``cabal check``, ``opam list``, ``keytool -list``, a formatter's check mode. They are
declared once, in ``QUERIES``: the verbs (the words before any option) that read, the
options a verb needs to stay a read (``zig fmt --check``) and the options that make any
verb write (``ocamlformat -i``). Everything else builds, runs, installs or formats in
place, and asks as an unknown program would. Start-up files that hold code (a
``.luacheckrc`` is Lua; ``deno.json`` and ``analysis_options.yaml`` may name lint plugins)
are judged where the program runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.permissions.effect import Effect, Loads, Rule, prog, teardown_verb
from engine.permissions.words import Word

_F = frozenset
_ABOUT = _F({"--version", "-V", "--help", "-h", "-help", "-version"})


@dataclass(frozen=True, slots=True)
class Queries:
    """What of one program's command lines only reads."""

    verbs: frozenset[tuple[str, ...]] = _F()
    """Leading words (before any option) that read, whatever words follow (files, package
    names); ``()`` for the program with none."""
    exact: frozenset[tuple[str, ...]] = _F()
    """Leading words that read only with no further word (``bun run`` lists the scripts,
    ``bun run build`` runs one)."""
    needs: Mapping[tuple[str, ...], frozenset[str]] = field(default_factory=dict)
    """Verbs that read only given one of these options (``fmt``: ``--check``)."""
    writes: frozenset[str] = _F()
    """Options (or words) that make any command line of it write or load code (``-i``,
    ``--inplace``, ``installGitPreCommitHook``)."""
    about: frozenset[str] = _ABOUT
    """Whole argument lists of one word that only ask the program about itself."""
    files: frozenset[str] = _F()
    """Options whose value is a file the command reads (judged where it lies)."""
    online: frozenset[str] = _F()
    """Options that make a query connect to a server (``keytool -printcert -sslserver``)."""
    outside: frozenset[str] = _F()
    """Options that make a query read the installation's own files outside the workspace
    (``keytool -cacerts``)."""
    loads: tuple[Loads, ...] = ()
    """Files in the working directory whose code the program loads."""
    operands: bool = False
    """Its words after the verb, not options, are files it reads (and may print)."""
    why: str = "builds, runs project code, installs or changes files"


def query_rule(name: str, fallback: Rule | None = None,
               queries: Mapping[str, Queries] | None = None) -> Rule:
    """The rule of ``name``: its queries read (``queries``, by default ``QUERIES``); any
    other command line is judged by ``fallback`` (the program's own rule: ``deno run``,
    ``bun x``), else asks."""
    q = (QUERIES if queries is None else queries)[name]

    def rule(e: Effect, args: list[Word]) -> None:
        if _reads(q, args):
            e.loads_here.extend(q.loads)
            _query_options(e, q, args)
        elif fallback is not None:
            fallback(e, args)
        else:
            e.add("exec", f"{prog(e)} {q.why}")
            verb = teardown_verb(args)  # rake db:drop, mix ecto.drop
            if verb is not None:
                e.add("destructive", f"{prog(e)} {verb} asks the project to tear something "
                                     "down")

    return rule


def _query_options(e: Effect, q: Queries, args: list[Word]) -> None:
    if q.operands:
        verb = _verb([w.value or "" for w in args], q) or ()
        e.reads.extend(w for w in args[len(verb):] if not (w.value or "").startswith("-"))
    for i, w in enumerate(args):
        if w.value in q.files and i + 1 < len(args):
            e.reads.append(args[i + 1])
        name, eq, value = (w.value or "").partition("=")
        if eq and name in q.files:  # --config.file=alertmanager.yml
            e.reads.append(Word.of(value))
        if w.value in q.online:
            e.add("network", f"{prog(e)} {w.value} connects to a server")
        if w.value in q.outside:
            e.at_least("ask", f"{prog(e)} {w.value} reads files outside the workspace")


def _reads(q: Queries, args: list[Word]) -> bool:
    words = [w.value for w in args]
    if None in words:
        return False
    given = [w or "" for w in words]
    if len(given) == 1 and given[0] in q.about:
        return True
    if any(",output=" in g for g in given):  # ktlint --reporter=plain,output=FILE writes it
        return False
    verb = _verb(given, q)
    options = _options(given)
    needed = q.needs.get(verb) if verb is not None else None
    return verb is not None and (needed is None or bool(needed & options)) and \
        not q.writes & (options | set(given))


def _options(words: list[str]) -> set[str]:
    """Each option as written, its name before ``=``, and the option with the word after
    it (``--mode inplace``), so a table can name a value (``--output=none``)."""
    found: set[str] = set()
    for i, w in enumerate(words):
        if w.startswith("-"):
            found |= {w, w.partition("=")[0]}
            if i + 1 < len(words) and not words[i + 1].startswith("-"):
                found.add(f"{w} {words[i + 1]}")
    return found


def _verb(words: list[str], q: Queries) -> tuple[str, ...] | None:
    """The longest declared verb the command line starts with (its leading words that are
    not options), or None."""
    lead: list[str] = []
    for w in words:
        if w.startswith("-"):
            break
        lead.append(w)
    if tuple(lead) in q.exact:
        return tuple(lead)
    for n in range(len(lead), -1, -1):
        if tuple(lead[:n]) in q.verbs or tuple(lead[:n]) in q.needs:
            return tuple(lead[:n])
    return None


def _v(*verbs: str) -> frozenset[tuple[str, ...]]:
    return _F(tuple(v.split()) if v else () for v in verbs)


_LINT_PLUGINS = ("plugins",)
_SHOWN = _F({"--output=none", "--output none", "-o none", "--output=show", "--output show",
             "-o show", "--output=json", "--output json", "-o json"})
"""``dart format`` options that print instead of writing the files."""
QUERIES: dict[str, Queries] = {
    "zig": Queries(_v("env", "targets", "version", "zen", "libc", "ast-check"),
                   needs={("fmt",): _F({"--check"})}),
    "deno": Queries(_v("types", "lint"), _v("info", "task"),
                    {("fmt",): _F({"--check"})}, writes=_F({"--fix"}),
                    loads=(Loads(("deno.json", "deno.jsonc"), _LINT_PLUGINS),),
                    why="runs, type-checks (fetching imports), bundles or changes files"),
    "dart": Queries(_v("analyze", "info", "pub deps"),
                    needs={("format",): _SHOWN, ("fix",): _F({"--dry-run", "-n"})},
                    loads=(Loads(("analysis_options.yaml",), _LINT_PLUGINS),)),
    "swift": Queries(_v("demangle")),
    "hatch": Queries(why="runs project code, builds or changes files (hatch version too: "
                     "a dynamic version runs its source and build hooks)"),
    "swiftc": Queries(needs={(): _F({"-parse"})}, about=_ABOUT | {"-print-target-info"}),
    "swift-format": Queries(_v("", "lint", "format"), writes=_F({"-i", "--in-place"})),
    "swiftlint": Queries(_v("version", "rules"), needs={("lint",): _F({"--no-cache"}),
                                                          (): _F({"--no-cache"})},
                         writes=_F({"--fix", "--autocorrect", "--format"})),
    "cabal": Queries(_v("check", "info", "list", "outdated"),
                     about=_ABOUT | {"--numeric-version"}),
    "ghc": Queries(about=_ABOUT | {"--numeric-version", "--supported-extensions",
                                   "--supported-languages", "--info", "--print-libdir",
                                   "--show-options"}),
    "ghc-pkg": Queries(_v("list", "field", "describe", "latest", "check", "dump")),
    "ktlint": Queries(_v(""), writes=_F({"-F", "--format", "-R", "--ruleset",
                                          "installGitPreCommitHook", "installGitPrePushHook",
                                          "generateEditorConfig", "--baseline"})),
    "clang-tidy": Queries(_v(""), writes=_F({"-fix", "--fix", "-fix-errors", "--fix-errors",
                                             "-fix-notes", "--fix-notes", "-export-fixes",
                                             "--export-fixes", "-load", "--load", "-fplugin",
                                             "-Xclang"}),
                          loads=(Loads(("compile_commands.json", "build/compile_commands.json"),
                                       ("fplugin", "-load", "Xclang")),)),
    "cppcheck": Queries(_v(""), writes=_F({"--dump", "--addon", "--output-file",
                                           "--plist-output", "--cppcheck-build-dir",
                                           "--rule-file", "--errorlist"})),
    "hlint": Queries(_v(""), writes=_F({"--refactor", "--report"})),
    "ormolu": Queries(_v(""), writes=_F({"-i", "--mode inplace", "--mode=inplace"})),
    "fourmolu": Queries(_v(""), writes=_F({"-i", "--mode inplace", "--mode=inplace"})),
    "ocamlformat": Queries(_v(""), writes=_F({"-i", "--inplace", "-o", "--output"})),
    "opam": Queries(_v("list", "show", "switch list", "switch show", "env", "repo list",
                       "config list")),
    "ocamlfind": Queries(_v("list", "query", "printconf")),
    "luarocks": Queries(_v("list", "show", "lint", "path", "which"), _v("config"),
                        why="installs, builds, uploads or asks a rocks server"),
    "luacheck": Queries(_v(""), writes=_F({"--cache"}),
                        loads=(Loads((".luacheckrc",), upward=True),)),
    "luac": Queries(needs={(): _F({"-p"})}, about=_ABOUT | {"-v"}),
    "stylua": Queries(needs={(): _F({"--check", "-c"})}),
    "perldoc": Queries(needs={(): _F({"-l", "-m", "-f", "-v", "-q"})}),
    "podchecker": Queries(_v("")),
    "perlcritic": Queries(_v("")),
    "perltidy": Queries(needs={(): _F({"-st", "--standard-output"})},
                        writes=_F({"-b", "--backup-and-modify-in-place", "-o",
                                   "--outfile"})),
    "prove": Queries(needs={(): _F({"--dry", "-D"})}),
    "keytool": Queries(needs={(): _F({"-list", "-printcert", "-printcertreq", "-printcrl",
                                      "-showinfo"})},
                       writes=_F({"-exportcert", "-importcert", "-delete", "-genkeypair",
                                  "-storepasswd", "-keypasswd", "-importkeystore",
                                  "-changealias", "-certreq", "-gencert", "-genseckey",
                                  "-importpass"}),
                       files=_F({"-keystore", "-file", "-jarfile", "-infile"}),
                       online=_F({"-sslserver"}), outside=_F({"-cacerts"})),
    "jarsigner": Queries(needs={(): _F({"-verify"})}, files=_F({"-keystore"})),
    "sbt": Queries(about=_F({"-h", "--help", "--script-version"})),
    "gradle": Queries(about=_ABOUT | {"-v", "--status"}),
    "rake": Queries(about=_ABOUT),  # rake -h exits before the Rakefile loads; -T loads it
    "mix": Queries(about=_F({"--version", "-v"})),  # mix help (and -h) loads mix.exs
    "bun": Queries(_v("pm ls", "pm bin", "pm hash-print"), _v("run", "pm cache"),
                   why="runs project code, installs or changes files"),
    "just": Queries(needs={(): _F({"--list", "-l", "--summary", "--show", "-s", "--dump",
                                   "--groups", "--variables", "--choose-help"})},
                    writes=_F({"--fmt", "--evaluate", "--init", "--edit", "-e", "--choose",
                               "--command", "-c", "--dotenv-path", "--shell-command"}),
                    why="runs a recipe (its shell lines, backticks in its settings)"),
    "meson": Queries(_v("introspect", "--version", "-v"), writes=_F({"--force-object-output"}),
                     why="configures, builds, installs or changes a build folder"),
    "nix-instantiate": Queries(needs={(): _F({"--parse"})}, operands=True),
    "dvc": Queries(_v("dag", "diff", "params diff", "metrics show", "metrics diff",
                      "remote list", "stage list", "version", "doctor", "root",
                      "check-ignore", "data status", "exp show", "config --list",
                      "config -l", "status"),
                   online=_F({"-c", "--cloud", "-r", "--remote"}),
                   why="runs a pipeline, moves data to or from a remote or changes files"),
    "taplo": Queries(needs={("fmt",): _F({"--check"}), ("format",): _F({"--check"})},
                     operands=True),
}
"""Per program: what of its command lines only reads (``Queries``)."""

_PUBLISH_TASK = re.compile(r"deploy(?::deploy(?:-file)?)?|release:perform|uploadArchives"
                           r"|publish(?!ToMavenLocal\b)\w*")
"""Maven goals and Gradle tasks that upload the build to a repository for everyone
(``mvn deploy``, ``gradle publish``, ``publishToSonatype``; not ``publishToMavenLocal``)."""


def publishing(name: str, rule: Rule) -> Rule:
    """``rule``, and a build that publishes is for a person under ``--approval auto``."""

    def wrapped(e: Effect, args: list[Word]) -> None:
        rule(e, args)
        task = next((w.value for w in args if w.value and _PUBLISH_TASK.fullmatch(w.value)),
                    None)
        if task is not None:
            e.add("network", f"{name} {task} uploads the build to a repository")
            e.unseen = e.unseen or f"{name} {task} publishes for everyone (no undo)"

    return wrapped


def _dvc_changes(e: Effect, args: list[Word]) -> None:
    """``dvc gc`` deletes the cached data (and with ``-c`` the remote's) no commit named
    keeps: work other branches or people may still need. Anything else not a query asks."""
    e.add("exec", f"{prog(e)} {QUERIES['dvc'].why}")
    if [w.value for w in args[:1]] in (["gc"], ["destroy"]):
        e.add("destructive", f"{prog(e)} {args[0].shown} deletes data from the cache")


_KEYTOOL_CHANGES = {"-delete": "deletes an entry (a key no copy may hold) from the keystore",
                    "-changealias": "renames an entry of the keystore",
                    "-keypasswd": "changes a key's password",
                    "-storepasswd": "changes the keystore's password"}


def _keytool_changes(e: Effect, args: list[Word]) -> None:
    """``keytool -delete`` removes a key (a signing key is gone for good); with
    ``-cacerts`` any change is to the JDK's own trust store, outside the workspace."""
    e.add("exec", "keytool changes a keystore")
    words = {w.value for w in args}
    for option, why in _KEYTOOL_CHANGES.items():
        if option in words:
            e.add("destructive", f"keytool {option} {why}")
    if "-cacerts" in words:
        e.writes.append(Word.of("/etc/ssl/certs/java/cacerts"))


CHANGES: dict[str, Rule] = {"dvc": _dvc_changes, "keytool": _keytool_changes}
"""The rule of a program's other command lines, where asking is not all (``dvc gc``)."""
RULES: dict[str, Rule] = {name: query_rule(name, CHANGES.get(name)) for name in QUERIES}
"""Programs without a rule elsewhere take these; ``rules.py`` puts the queries of the others
(``deno``, ``bun``) before their own rule."""
