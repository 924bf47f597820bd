"""Rules for the JavaScript tools a project installs: eslint, prettier, esbuild, and the
runners (vite, vitest, jest, playwright) that load the project whatever they do.

Each reads the files it is given and prints, unless told to write. What they load is the
question: a configuration file written in JavaScript (``eslint.config.js``,
``prettier.config.mjs``) is code that runs with them, and so is a plugin a settings file
lists; those make the command ask. The tool's own package (in ``node_modules``, where
``node_modules/.bin/eslint`` comes from) is trusted like the tool on the PATH. An option not
listed here is not modelled, and asks.
"""

from __future__ import annotations

import posixpath

from engine.permissions.effect import Effect, Loads, Rule, parse_opts, prog
from engine.permissions.words import Word

_F = frozenset
RULES: dict[str, Rule] = {}


def _code_files(*stems: str) -> tuple[str, ...]:
    """``eslint.config`` as ``eslint.config.js``, ``.mjs``, ``.cjs``, ``.ts``, ..."""
    return tuple(f"{stem}.{ext}" for stem in stems
                 for ext in ("js", "mjs", "cjs", "ts", "mts", "cts"))


def _named_config(e: Effect, named: list[Word], keys: tuple[str, ...]) -> None:
    """A config file the command line names: read, and judged by content (a JavaScript
    file is code; a settings file is code when it lists ``keys``)."""
    for w in named:
        e.reads.append(w)
        if w.value is None:
            e.add("exec", f"{prog(e)} reads a config file only known at run time")
        elif w.value.endswith(_code_files("")):
            e.loads_here.append(Loads((w.value,)))
        else:
            e.loads_here.append(Loads((w.value,), keys))


def _unmodelled(e: Effect, options: list[str], known: frozenset[str]) -> None:
    for name in options:
        if name not in known:
            e.add("exec", f"{prog(e)} {name} is an option not modelled")
            return


# ---------------------------------------------------------------- eslint

_ESLINT_CODE = Loads(_code_files("eslint.config", ".eslintrc"), upward=True)
_ESLINT_KEYS = ("plugins", "parser", "extends", "processor")
_ESLINT_SETTINGS = Loads((".eslintrc", ".eslintrc.json", ".eslintrc.yaml", ".eslintrc.yml",
                          "package.json"), _ESLINT_KEYS, upward=True)
"""What eslint loads where it runs: its flat or legacy config as code, or a settings file
naming plugins, a parser or a shared config (code from wherever they point)."""
_ESLINT_VALUES = _F({"--max-warnings", "--ext", "--ignore-path", "--ignore-pattern",
                     "--report-unused-disable-directives-severity", "--global", "--rule",
                     "--parser-options", "--flag", "--fix-type", "--env", "--stdin-filename",
                     "--cache-strategy", "--print-config", "--concurrency", "-c", "--config",
                     "-f", "--format", "-o", "--output-file", "--cache-location",
                     "--cache-file", "--rulesdir", "--plugin", "--parser",
                     "--resolve-plugins-relative-to"})
_ESLINT_READS = _F({"--max-warnings", "--ext", "--ignore-path", "--ignore-pattern",
                    "--report-unused-disable-directives", "--global", "--rule",
                    "--report-unused-disable-directives-severity", "--parser-options",
                    "--flag", "--fix-type", "--env", "--stdin-filename", "--cache-strategy",
                    "--print-config", "--concurrency", "--quiet", "--no-eslintrc",
                    "--no-config-lookup", "--no-ignore", "--color", "--no-color",
                    "--no-inline-config", "--no-error-on-unmatched-pattern",
                    "--exit-on-fatal-error", "--debug", "--stats", "--pass-on-no-patterns",
                    "--no-warn-ignored", "--fix-dry-run", "--version", "-v", "--help", "-h",
                    "--stdin", "--env-info", "--report-unused-inline-configs", "-c",
                    "--config", "-f", "--format"})
_ESLINT_FORMATS = _F({"stylish", "json", "json-with-metadata", "html", "compact", "unix",
                      "checkstyle", "junit", "tap", "visualstudio", "jslint-xml"})
"""Formatters eslint has built in; any other name loads a module (``./fmt.js``)."""


def _eslint(e: Effect, args: list[Word]) -> None:
    """``eslint src --max-warnings=0`` reads and prints; ``--fix``, ``-o``, ``--cache``
    write; ``--rulesdir``, ``--plugin``, ``--parser``, a formatter module, and the config
    files it finds load code."""
    o = parse_opts(args, "cfo", _ESLINT_VALUES)
    for w in o.all("-o", "--output-file"):
        e.writes.append(w)
        e.replaces.append(w)
        e.add("write", f"{prog(e)} -o writes its report")
    if o.has("--fix"):
        e.writes.extend(o.positionals or [Word.of(".")])
        e.add("write", f"{prog(e)} --fix rewrites the files it lints")
    if o.has("--cache", "--cache-location", "--cache-file"):
        e.add("write", f"{prog(e)} --cache writes its cache")
    if o.has("--rulesdir", "--plugin", "--parser", "--resolve-plugins-relative-to"):
        e.add("exec", f"{prog(e)} loads the rules, plugins or parser an option names")
    if any(w.value not in _ESLINT_FORMATS for w in o.all("-f", "--format")):
        e.add("exec", f"{prog(e)} loads a formatter module")
    if o.has("--init", "--inspect-config", "--mcp"):
        e.add("exec", f"{prog(e)} runs a tool of its own (setup, a server)")
    _unmodelled(e, [n for n, _ in o.items], _ESLINT_READS | _ESLINT_VALUES | {
        "--fix", "--cache", "--init", "--inspect-config", "--mcp"})
    e.reads.extend([*o.positionals, *o.all("--print-config", "--ignore-path")])
    _named_config(e, o.all("-c", "--config"), _ESLINT_KEYS)
    if not o.has("--no-config-lookup", "--no-eslintrc", "--version", "-v", "--help", "-h"):
        e.loads_here.extend((_ESLINT_CODE, _ESLINT_SETTINGS))


RULES["eslint"] = _eslint


# ---------------------------------------------------------------- prettier

_PRETTIER_CODE = Loads(_code_files("prettier.config", ".prettierrc"), upward=True)
_PRETTIER_SETTINGS = Loads((".prettierrc", ".prettierrc.json", ".prettierrc.yaml",
                            ".prettierrc.yml", ".prettierrc.json5", ".prettierrc.toml",
                            "package.json"), ("plugins",), upward=True)
"""A JavaScript config is code; a settings file (or ``package.json``) listing plugins loads
them. A shared config named by package is the project's installed code, like prettier."""
_PRETTIER_VALUES = _F({
    "--config", "--ignore-path", "--log-level", "--loglevel", "--stdin-filepath",
    "--cache-location", "--cache-strategy", "--plugin", "--plugin-search-dir", "--parser",
    "--config-precedence", "--find-config-path", "--file-info", "--arrow-parens",
    "--embedded-language-formatting", "--end-of-line", "--html-whitespace-sensitivity",
    "--print-width", "--prose-wrap", "--quote-props", "--tab-width", "--trailing-comma",
    "--range-start", "--range-end", "--cursor-offset", "--object-wrap",
    "--experimental-operator-position"})
_PRETTIER_READS = _F({
    "--check", "-c", "--list-different", "-l", "--no-editorconfig", "--with-node-modules",
    "--ignore-unknown", "-u", "--no-error-on-unmatched-pattern", "--support-info",
    "--version", "-v", "--help", "-h", "--no-color", "--color", "--no-config",
    "--bracket-same-line", "--no-bracket-spacing", "--jsx-single-quote", "--no-semi",
    "--single-attribute-per-line", "--single-quote", "--use-tabs",
    "--vue-indent-script-and-style", "--experimental-ternaries", "--insert-pragma",
    "--require-pragma", "--debug-check"})


def _prettier(e: Effect, args: list[Word]) -> None:
    """``prettier --check src`` and ``prettier FILE`` (to the output) read; ``--write``
    rewrites the files and ``--cache`` writes its cache; plugins and a JavaScript config
    load code."""
    o = parse_opts(args, "", _PRETTIER_VALUES)
    files = [w for w in o.positionals if w.value != "-"]
    if o.has("--write", "-w"):
        e.writes.extend(files)
        e.add("write", f"{prog(e)} --write rewrites the files it formats")
    else:
        e.reads.extend(files)
    if o.has("--cache", "--cache-location"):
        e.add("write", f"{prog(e)} --cache writes its cache")
    if o.has("--plugin", "--plugin-search-dir") or any(
            "/" in (w.value or "/") for w in o.all("--parser")):
        e.add("exec", f"{prog(e)} loads the plugin or parser an option names")
    _unmodelled(e, [n for n, _ in o.items], _PRETTIER_READS | _PRETTIER_VALUES | {
        "--write", "-w", "--cache"})
    e.reads.extend([*o.all("--ignore-path"), *o.all("--find-config-path"),
                    *o.all("--file-info")])
    _named_config(e, o.all("--config"), ("plugins",))
    if not o.has("--no-config", "--version", "-v", "--help", "-h", "--support-info"):
        e.loads_here.extend((_PRETTIER_CODE, _PRETTIER_SETTINGS))


RULES["prettier"] = _prettier


# ---------------------------------------------------------------- esbuild

_ESBUILD_READS = _F({
    "--bundle", "--format", "--platform", "--target", "--minify", "--minify-whitespace",
    "--minify-identifiers", "--minify-syntax", "--log-level", "--log-limit", "--log-override",
    "--loader", "--define", "--external", "--alias", "--inject", "--banner", "--footer",
    "--jsx", "--jsx-factory", "--jsx-fragment", "--jsx-import-source", "--jsx-dev",
    "--jsx-side-effects", "--splitting", "--entry-names", "--chunk-names", "--asset-names",
    "--public-path", "--main-fields", "--conditions", "--charset", "--tree-shaking",
    "--keep-names", "--pure", "--drop", "--drop-labels", "--supported", "--mangle-props",
    "--reserve-props", "--mangle-quoted", "--packages", "--tsconfig", "--tsconfig-raw",
    "--color", "--version", "--help", "-h", "--sourcemap", "--sources-content",
    "--source-root", "--sourcefile", "--analyze", "--global-name", "--ignore-annotations",
    "--line-limit", "--legal-comments", "--resolve-extensions", "--out-extension",
    "--preserve-symlinks", "--outbase", "--allow-overwrite", "--metafile", "--outfile",
    "--outdir"})
_ESBUILD_RUNS = _F({"--serve", "--servedir", "--watch", "--certfile", "--keyfile"})


def _esbuild(e: Effect, args: list[Word]) -> None:
    """``esbuild src/main.ts --bundle`` prints the bundle (its command line loads no
    plugins); ``--outfile``/``--outdir``/``--metafile`` write; ``--serve``/``--watch`` run
    until stopped. Options take their values after ``=`` or ``:``."""
    named: dict[str, list[Word]] = {}
    for w in args:
        v = w.value
        if v is None or not v.startswith("-"):
            e.reads.append(w)
            continue
        cut = min((i for i in (v.find("="), v.find(":")) if i > 0), default=len(v))
        named.setdefault(v[:cut], []).append(Word.of(v[cut + 1:]))
    for key in ("--outfile", "--metafile", "--outdir"):
        for target in named.get(key, []):
            e.writes.append(target)
            if key != "--outdir":
                e.replaces.append(target)
            e.add("write", f"{prog(e)} {key} writes files")
    entries = {posixpath.normpath(w.value) for w in e.reads if w.value is not None}
    if any(posixpath.normpath(w.value or ".") in entries for w in named.get("--outfile", [])):
        e.add("destructive", f"{prog(e)} --outfile replaces an entry point with the bundle")
    e.reads.extend([*named.get("--inject", []), *named.get("--tsconfig", [])])
    if set(named) & _ESBUILD_RUNS:
        e.add("exec", f"{prog(e)} serves or watches files until stopped")
    _unmodelled(e, list(named), _ESBUILD_READS | _ESBUILD_RUNS)


RULES["esbuild"] = _esbuild


# ---------------------------------------------------------------- runners that load the project


def _project_runner(e: Effect, args: list[Word]) -> None:
    """``vite``, ``vitest``, ``jest``, ``playwright``: asked for their version or help they
    print it; anything else loads the project's config (``vite.config.ts``, ``jest.config.js``)
    and its plugins or tests: workspace code."""
    if [w.value for w in args] not in (["--version"], ["-v"], ["-V"], ["--help"], ["-h"]):
        e.add("exec", f"{prog(e)} runs the project's config, plugins or tests")


RULES.update(dict.fromkeys(("vite", "vitest", "jest", "playwright"), _project_runner))
