"""String literals in inline interpreter code: their values, and the files that calls name by
a literal path (``open('data.csv', 'w')``, ``fs.writeFileSync('package.json', '')``).

A truncating write is a replacement (refused when the file holds work and the code does not
read it too: ``PathJudge._replaced``), unless the data is a literal the command line shows; an
append, ``r+`` or a new file is a write; a read is judged like ``cat``. A path that is not one
plain literal (an f-string, a template, a concatenation, a variable) is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.permissions.effect import Effect
from engine.permissions.words import Word

SINGLE_ESCAPES = frozenset({"python", "pypy", "node", "nodejs", "deno", "lua", "luajit",
                             "javascript"})
"""Languages whose single-quoted strings decode escapes too (perl, ruby and php keep them)."""
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.S)
_NAMED = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "e": "\x1b", "f": "\f", "v": "\v",
          "b": "\b"}


def unescape(text: str, escapes: bool) -> str:
    """A string literal's value: ``\\x20``, ``\\040``, ``\\u0020``, ``\\n`` decoded where
    the quotes decode escapes (so ``"rm\\x20-rf\\x20src"`` is ``rm -rf src``), else only
    the escaped quote and backslash."""
    if not escapes:
        return re.sub(r"\\([\\'])", r"\1", text)

    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] in "xuU" and len(s) > 1:
            return chr(int(s[1:], 16))
        if s[0] in "01234567":
            return chr(int(s, 8))
        return _NAMED.get(s, s)

    return _ESCAPE.sub(one, text)


# ---------------------------------------------------------------- files by a literal path

Access = str  # "read" | "write" | "replace"
"""``replace``: the call truncates the file and writes data the command line does not show."""

_QUOTED = (r'"(?:\\[\s\S]|[^"\\]){0,4096}+"'
           r"|'(?:\\[\s\S]|[^'\\]){0,4096}+'"
           r"|`(?:\\[\s\S]|[^`\\]){0,4096}+`")
"""A quoted string (at most 4096 characters: no path is longer), never backtracked into."""


def _brackets(inner: str) -> str:
    """A ``(...)``, ``[...]`` or ``{...}`` group made of ``inner`` items (bounded)."""
    return "|".join(rf"\{o}(?:{inner}){{0,1000}}+\{c}" for o, c in ("()", "[]", "{}"))


_FLAT = _QUOTED + r"""|[^()\[\]{}'"`]"""
_NESTED = _QUOTED + "|" + _brackets(_FLAT) + r"""|[^()\[\]{}'"`]"""
_ARGUMENT = re.compile(r"\s*+(?:" + _QUOTED + "|" + _brackets(_NESTED)
                       + r"""|[^,;\n()\[\]{}'"`]){0,4096}+""")
"""One argument of a call: strings and groups nested two deep, up to a top-level ``,``, the
call's ``)``, or (without parentheses) the end of the statement. Possessive and bounded, so a
long piece of code is scanned once per call found."""
_MAX_ARGUMENTS = 6
_LITERAL = re.compile(r"([rRbBuU]{0,2})(" + _QUOTED + r")")
_INTERPOLATES = {"perl": re.compile(r"[$@]"), "php": re.compile(r"\$"),
                 "ruby": re.compile(r"#[{$@]")}
"""What makes a double-quoted string of these languages hold a run-time value."""
_JS = frozenset({"node", "nodejs", "deno", "bun", "javascript"})
_KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)\s*(.*)", re.S)
_PERL_MODES = {"<": "r", ">": "w", ">>": "a", "+<": "r+", "+>": "w+", "+>>": "a+"}
_MODE = re.compile(r"[rwaxbtcs+]{1,5}")


_TEXTS = re.compile(r"""'(?:\\[\s\S]|[^'\\])*+(?:'|\Z)|"(?:\\[\s\S]|[^"\\])*+(?:"|\Z)"""
                    r"|`(?:\\[\s\S]|[^`\\])*+(?:`|\Z)")
_PY_TEXTS = re.compile(r"'''(?:\\[\s\S]|(?!''')[^\\])*+(?:'''|\Z)"
                       r'|"""(?:\\[\s\S]|(?!""")[^\\])*+(?:"""|\Z)'
                       r"""|'(?:\\.|[^'\\\n])*+(?:'|$)|"(?:\\.|[^"\\\n])*+(?:"|$)""", re.M)
"""String literals as a lexer reads them, left to right: one not closed runs to the end of
the code (of the line, for Python's one-line strings), so each character is read once."""


def _outside_strings(text: str, language: str) -> str:
    """``text`` with the content of its string literals blanked (same length): a call written
    inside a string (``'import os; open(p, "w")'`` written to a file) is not one this code
    makes."""
    texts = _PY_TEXTS if language in ("python", "pypy") else _TEXTS
    return texts.sub(lambda m: m.group()[:1] + " " * (len(m.group()) - 1), text)


def _call(text: str, pos: int, parens: bool = True) -> tuple[list[str], int] | None:
    """The arguments (as written, stripped) of the call whose ``(`` ends at ``pos`` and the
    position after its ``)``; with ``parens`` false (``File.write 'a', ''``), up to the end of
    the statement. None when they cannot be told apart."""
    args: list[str] = []
    while len(args) < _MAX_ARGUMENTS:
        m = _ARGUMENT.match(text, pos)
        assert m is not None  # it matches the empty string
        args.append(m.group().strip())
        pos = m.end()
        if text.startswith(",", pos):
            pos += 1
        elif parens:
            return (args, pos + 1) if text.startswith(")", pos) else None
        else:
            return args, pos
    return None


def _literal(arg: str, language: str) -> str | None:
    """The value of an argument that is one plain string literal, else None (an f-string, a
    template with fields, an interpolating string, a concatenation, a variable)."""
    m = _LITERAL.fullmatch(arg)
    if m is None:
        return None
    prefix, quoted = m.group(1).lower(), m.group(2)
    python = language in ("python", "pypy")
    quote, body = quoted[0], quoted[1:-1]
    if (prefix and not python) or (quote == "`" and (language not in _JS or "${" in body)):
        return None
    interpolates = _INTERPOLATES.get(language)
    if quote == '"' and interpolates is not None and interpolates.search(body):
        return None
    escapes = "r" not in prefix and (quote != "'" or language in SINGLE_ESCAPES)
    return unescape(body, escapes)


def _access(mode: str) -> Access | None:
    """What opening a file in ``mode`` (python, C, node, ruby, php, perl's ``<``/``>``) does."""
    mode = _PERL_MODES.get(mode.split(":")[0].strip(), mode.split(":")[0].strip())
    if not _MODE.fullmatch(mode):
        return None  # an unknown mode, or perl's pipes (-|)
    if "x" in mode:
        return "write"  # a new file only: it fails when the file is there
    if "w" in mode:
        return "replace"
    return "write" if set(mode) & set("a+c") else "read"


def _data(arg: str | None, language: str, access: Access) -> Access:
    """A replacement whose data is a non-empty literal shows what the file becomes (like
    ``echo hello > f``): a write. An empty literal empties the file."""
    if access == "replace" and arg is not None and _literal(arg, language):
        return "write"
    return access


def _report(e: Effect, access: Access, path: str) -> None:
    if path in ("", "-") or "://" in path or "\0" in path:
        return  # a URL (php://stdout, https://...), the standard streams
    w = Word.of(path)
    if access == "read":
        e.reads.append(w)
        return
    e.writes.append(w)
    if access == "replace":
        e.replaces.append(w)
        e.reads_first = True  # a call's data is made before it opens (File.write(f, read(f)))


def _literal_calls(pattern: re.Pattern[str], text: str, code: str,
                   language: str) -> Iterator[tuple[list[str], str]]:
    """The calls ``pattern`` finds in ``code`` (strings blanked) whose first argument is one
    plain literal: their arguments as written in ``text``, and that literal's value. A
    pattern with a group takes it as the call's ``(``: without one (ruby's ``File.write 'a',
    d``), the arguments run to the end of the statement."""
    for m in pattern.finditer(code):
        call = _call(text, m.end(), parens=pattern.groups == 0 or m.group(1) is not None)
        value = _literal(call[0][0], language) if call else None
        if call is not None and value is not None:
            yield call[0], value


def _split(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """Positional and ``name=value`` arguments of a Python call."""
    positional: list[str] = []
    keywords: dict[str, str] = {}
    for a in args:
        m = _KEYWORD.fullmatch(a)
        if m is None:
            positional.append(a)
        else:
            keywords[m.group(1)] = m.group(2)
    return positional, keywords


def _only(args: list[str]) -> str | None:
    """The one positional argument of a Python call (``write_text('x', encoding=...)``)."""
    positional = _split(args)[0]
    return positional[0] if len(positional) == 1 else None


_PY_OPEN = re.compile(r"(?<![\w.])(?:(?:io|codecs)\s*\.\s*)?open\s*\(")
_PY_PATH = re.compile(r"(?<![\w.])(?:pathlib\s*\.\s*)?(?:Pure)?(?:Posix)?Path\s*\(")
_PY_PATH_CALL = re.compile(r"\s*\.\s*(write_text|write_bytes|read_text|read_bytes|open)\s*\(")
_PY_TRUNCATE = re.compile(r"(?<![\w.])os\s*\.\s*truncate\s*\(")
_PY_WRITE = re.compile(r"\s*\.\s*write\s*\(")
_PY_FRAME_WRITE = re.compile(r"\.\s*(?:to_csv|to_parquet|to_json|to_excel|to_feather|to_pickle|"
                             r"to_html|to_markdown|to_orc|to_stata|write_csv|write_parquet|"
                             r"write_json|write_ndjson|write_ipc|write_excel)\s*\(")
"""A data frame written to a path (pandas' ``to_csv``, polars' ``write_csv``): what it holds
is computed at run time, so the file is replaced with data the command does not show."""


def _python(text: str, code: str, language: str) -> list[tuple[Access, str]]:
    """``open(P, 'w')``, ``io.open``, ``Path(P).write_text()``/``.read_text()``/``.open()``,
    ``os.truncate(P, 0)``; ``open(P, 'w').write('shown')`` writes what it shows."""
    out: list[tuple[Access, str]] = []
    for m in _PY_OPEN.finditer(code):
        call = _call(text, m.end())
        if call is None:
            continue
        positional, keywords = _split(call[0])
        path = positional[0] if positional else keywords.get("file")
        mode = positional[1] if len(positional) > 1 else keywords.get("mode", "'r'")
        value, how = _literal(path or "", language), _literal(mode, language)
        access = _access(how) if how is not None else None
        if value is None or access is None:
            continue
        shown = _PY_WRITE.match(text, call[1])  # open(P, 'w').write('hello')
        data = _call(text, shown.end()) if shown else None
        out.append((_data(_only(data[0]) if data else None, language, access), value))
    for m in _PY_PATH.finditer(code):
        call = _call(text, m.end())
        method = _PY_PATH_CALL.match(text, call[1]) if call and len(call[0]) == 1 else None
        value = _literal(call[0][0], language) if call and method else None
        args = _call(text, method.end()) if method else None
        if value is None or method is None or args is None:
            continue
        name = method.group(1)
        if name.startswith("read"):
            out.append(("read", value))
        elif name.startswith("write"):
            out.append((_data(_only(args[0]), language, "replace"), value))
        else:
            positional, keywords = _split([a for a in args[0] if a])
            how = _literal(positional[0] if positional else keywords.get("mode", "'r'"),
                           language)
            if how is not None and (access := _access(how)) is not None:
                out.append((access, value))
    for m in _PY_TRUNCATE.finditer(code):
        call = _call(text, m.end())
        value = _literal(call[0][0], language) if call else None
        if value is not None:
            out.append(("replace", value))
    for m in _PY_FRAME_WRITE.finditer(code):
        call = _call(text, m.end())
        positional, keywords = _split(call[0]) if call else ([], {})
        path = positional[0] if positional else keywords.get("path_or_buf", keywords.get(
            "path", keywords.get("file", keywords.get("excel_writer"))))
        value = _literal(path or "", language)
        if value is not None:  # a data frame's text, made at run time: the file replaced
            appends = _literal(keywords.get("mode", "'w'"), language) in ("a", "a+")
            out.append(("write" if appends else "replace", value))
    return out


_JS_WRITE = re.compile(r"(?<![\w$])(?:writeFileSync|writeFile|writeTextFileSync|writeTextFile|"
                       r"Bun\s*\.\s*write)\s*\(")
_JS_APPEND = re.compile(r"(?<![\w$])(?:appendFileSync|appendFile)\s*\(")
_JS_STREAM = re.compile(r"(?<![\w$])createWriteStream\s*\(")
_JS_TRUNCATE = re.compile(r"(?<![\w$])(?:truncateSync|(?:fs|Deno)\s*\.\s*(?:promises\s*\.\s*)?"
                          r"truncate)\s*\(")
_JS_OPEN = re.compile(r"(?<![\w$])(?:openSync|fs\s*\.\s*(?:promises\s*\.\s*)?open)\s*\(")
_JS_READ = re.compile(r"(?<![\w$])(?:readFileSync|readFile|readTextFileSync|readTextFile|"
                      r"createReadStream)\s*\(")
_JS_REQUIRE = re.compile(r"(?<![\w$.])require\s*\(")
_JS_FLAGS = re.compile(r"\bflags?\s*:\s*(" + _QUOTED + ")")
_JS_APPENDS = re.compile(r"\bappend\s*:\s*true\b")


def _javascript(text: str, code: str, language: str) -> list[tuple[Access, str]]:
    """node's ``fs`` (``writeFileSync``, ``createWriteStream``, ``truncateSync``,
    ``openSync``, ``readFileSync``; also through ``fs.promises`` or destructured),
    ``require('./x.json')``, Deno's ``writeTextFile``/``readTextFile``, ``Bun.write``."""
    out: list[tuple[Access, str]] = []
    for pattern, access in ((_JS_WRITE, "replace"), (_JS_APPEND, "write"),
                            (_JS_STREAM, "replace"), (_JS_TRUNCATE, "replace"),
                            (_JS_OPEN, "read"), (_JS_READ, "read"), (_JS_REQUIRE, "read")):
        for args, value in _literal_calls(pattern, text, code, language):
            options = args[2] if pattern is _JS_WRITE and len(args) > 2 else \
                args[1] if pattern is _JS_STREAM and len(args) > 1 else ""
            flags = _JS_FLAGS.search(options)
            mode = args[1] if pattern is _JS_OPEN and len(args) > 1 else \
                flags.group(1) if flags else None
            how = _literal(mode, language) if mode is not None else None
            found: Access | None = access
            if pattern is _JS_REQUIRE and not value.startswith(("./", "../", "/")):
                continue  # a module by name
            if how is not None:
                found = _access(how)
            elif mode is not None:
                continue  # flags only known at run time
            if _JS_APPENDS.search(options) and found == "replace":
                found = "write"  # Deno.writeTextFile(P, d, {append: true})
            if found is not None:
                data = args[1] if pattern is _JS_WRITE and len(args) > 1 else None
                out.append((_data(data, language, found), value))
    return out


_RB_WRITE = re.compile(r"(?<![\w$@:.])(?:File|IO)\s*\.\s*(?:bin)?write\b\s*(\()?")
_RB_OPEN = re.compile(r"(?<![\w$@:.])(?:File\s*\.\s*(?:open|new)|open)\b\s*(\()?")
_RB_READ = re.compile(r"(?<![\w$@:.])(?:File|IO)\s*\.\s*(?:read|binread|readlines|foreach)\b"
                      r"\s*(\()?")
_RB_TRUNCATE = re.compile(r"(?<![\w$@:.])File\s*\.\s*truncate\b\s*(\()?")
_RB_MODE = re.compile(r"(?::mode\s*=>|\bmode\s*:)\s*(" + _QUOTED + ")")


def _ruby(text: str, code: str, language: str) -> list[tuple[Access, str]]:
    """``File.write(P, d)`` (an offset or ``mode: 'a'`` keeps the file), ``File.open(P,
    'w')``, ``File.read(P)``, ``File.truncate(P, 0)``; with or without parentheses."""
    out: list[tuple[Access, str]] = []
    for pattern in (_RB_WRITE, _RB_OPEN, _RB_READ, _RB_TRUNCATE):
        for args, value in _literal_calls(pattern, text, code, language):
            if value.startswith("|"):
                continue  # open("|cmd"): a command
            named = next((k for a in args[1:] if (k := _RB_MODE.search(a))), None)
            if pattern is _RB_WRITE:
                mode = named.group(1) if named else "'w'"
                if any(a.isdigit() for a in args[2:3]):
                    mode = "'r+'"  # File.write(P, d, 10): written at an offset
            elif pattern is _RB_OPEN:
                given = args[1] if len(args) > 1 and not _RB_MODE.search(args[1]) else None
                mode = named.group(1) if named else given or "'r'"
            else:
                mode = "'r'" if pattern is _RB_READ else "'w'"
            how = _literal(mode, language)
            access = _access(how) if how is not None else None
            if access is not None:
                data = args[1] if pattern is _RB_WRITE and len(args) > 1 else None
                out.append((_data(data, language, access), value))
    return out


_PL_OPEN = re.compile(r"(?<![\w$@%&>:])open\b\s*(\()?")
_PL_SPEC = re.compile(r"\s*(\+?(?:>>|>|<)?)\s*(.*?)\s*", re.S)
_PL_OR = re.compile(r"\s+(?:or|and|\|\||&&)\s.*", re.S)


def _perl(text: str, code: str, language: str) -> list[tuple[Access, str]]:
    """``open(my $f, '>', P)``, ``open(F, ">P")``, ``open my $f, '<', P or die``."""
    out: list[tuple[Access, str]] = []
    for m in _PL_OPEN.finditer(code):
        call = _call(text, m.end(), parens=m.group(1) is not None)
        if call is None or len(call[0]) not in (2, 3):
            continue
        args = [*call[0][:-1], _PL_OR.sub("", call[0][-1])]  # open F, ">f" or die ...
        if len(args) == 3:
            mode, value = _literal(args[1], language), _literal(args[2], language)
        else:
            spec = _literal(args[1], language)
            parts = _PL_SPEC.fullmatch(spec) if spec is not None else None
            mode, value = (parts.group(1) or "<", parts.group(2)) if parts else (None, None)
            if value is not None and (value[:1] in "|&" or value.endswith("|")):
                continue  # a pipe or a duplicated handle
        access = _access(mode) if mode and mode[:1] in "<>+" else None
        if access is not None and value is not None:
            out.append((access, value))
    return out


_PHP_PUT = re.compile(r"(?<![\w$>:])file_put_contents\s*\(")
_PHP_OPEN = re.compile(r"(?<![\w$>:])fopen\s*\(")
_PHP_READ = re.compile(r"(?<![\w$>:])(?:file_get_contents|file|readfile|parse_ini_file)\s*\(")


def _php(text: str, code: str, language: str) -> list[tuple[Access, str]]:
    """``file_put_contents(P, d)`` (``FILE_APPEND`` keeps the file), ``fopen(P, 'w')``,
    ``file_get_contents(P)``."""
    out: list[tuple[Access, str]] = []
    for pattern in (_PHP_PUT, _PHP_OPEN, _PHP_READ):
        for args, value in _literal_calls(pattern, text, code, language):
            if pattern is _PHP_PUT:
                access: Access | None = "write" if "FILE_APPEND" in " ".join(args[2:]) else \
                    _data(args[1] if len(args) > 1 else None, language, "replace")
            elif pattern is _PHP_OPEN:
                how = _literal(args[1], language) if len(args) > 1 else None
                access = _access(how) if how is not None else None
            else:
                access = "read"
            if access is not None:
                out.append((access, value))
    return out


_FILE_CALLS = {"python": _python, "pypy": _python, "perl": _perl, "ruby": _ruby, "php": _php,
               **dict.fromkeys(_JS, _javascript)}
"""The languages whose file calls are read, by the interpreter's rule name."""


def file_accesses(e: Effect, language: str, text: str) -> None:
    """Report the files ``text`` opens by a literal path to ``e`` (reads, writes,
    replacements); a call written inside a string literal is not one the code makes."""
    if language in _FILE_CALLS:
        for access, path in _FILE_CALLS[language](text, _outside_strings(text, language),
                                                  language):
            _report(e, access, path)
