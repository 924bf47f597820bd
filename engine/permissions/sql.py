"""SQL handed to a database client: which statements read, write, or destroy data.

A statement that drops or truncates, or deletes or updates rows without a ``WHERE`` (or with one
that is always true), is destructive. Client escape commands that run a shell (``.shell``,
``\\!``, ``system``) and ``COPY ... PROGRAM`` are returned as shell code to judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.permissions.words import STDIN_FILES
from engine.tooling.spec import Risk, max_risk

_COMMENT = re.compile(r"('(?:''|[^'])*')|--[^\n]*|/\*(?!M?!).*?\*/", re.S)
_RUN_COMMENT = re.compile(r"/\*M?!(?:\d{5,6})?(.*?)\*/", re.S)
"""MySQL's executable comment ``/*! code */`` (``/*!50100 ..*/``, MariaDB's ``/*M! ..*/``):
the server runs what it holds, so it is read as SQL."""
_EXECUTES = re.compile(r"\bprepare\s+\w+\s+from\b|\bexecute\s+immediate\b|\bexecute\s+'|"
                       r"\bdblink(?:_exec)?\s*\(|\bquery_to_xml\w*\s*\(|\\gexec\b", re.I)
"""Constructs that run text as SQL: the string literals of such a batch are judged as
statements too (``PREPARE s FROM 'DROP TABLE t'``, ``dblink_exec(c, '..')``)."""
_LITERAL = re.compile(r"'((?:''|[^'])*)'|\"((?:\"\"|[^\"])*)\"|\$\$(.*?)\$\$", re.S)
_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
    "database_list", "collation_list", "compile_options", "function_list", "module_list",
    "pragma_list", "page_count", "page_size", "freelist_count", "journal_mode",
    "user_version", "application_id", "schema_version", "encoding", "auto_vacuum",
    "cache_size", "busy_timeout", "data_version", "max_page_count", "mmap_size",
    "synchronous", "temp_store", "foreign_keys", "recursive_triggers", "wal_autocheckpoint",
    "locking_mode", "secure_delete", "journal_size_limit", "cache_spill", "cell_size_check",
    "defer_foreign_keys", "ignore_check_constraints", "query_only", "read_uncommitted",
    "reverse_unordered_selects", "automatic_index", "analysis_limit", "hard_heap_limit",
    "soft_heap_limit", "threads", "trusted_schema", "legacy_alter_table", "stats"})
"""SQLite pragmas that only report when given no value (``PRAGMA journal_mode``); with
``= v`` or ``(v)`` most of them set (the introspection ones take a table in parentheses)."""
_TABLE_PRAGMAS = frozenset({"table_info", "table_xinfo", "table_list", "index_list",
                            "index_info", "index_xinfo", "foreign_key_list",
                            "foreign_key_check", "integrity_check", "quick_check"})
_TRUE_WHERE = re.compile(r"^\s*\(?\s*(?:1\s*=\s*1|true|1|'(\w*)'\s*=\s*'\1'|not\s+false|"
                         r"\w+\s+is\s+not\s+null\s*or\s+\w+\s+is\s+null)\s*\)?\s*;?\s*$", re.I)
DB_CHANGE = "SQL changes the database"
"""The reason for a change of the database's own content (nothing for an in-memory one)."""
_READ_FIRST = frozenset({"select", "with", "explain", "show", "describe", "desc", "values",
                         "table", "begin", "commit", "rollback", "set", "use", "\\d", "\\dt",
                         "\\l", "\\dn", "\\du", "\\df", "\\di", "\\dv", "\\conninfo", "\\q",
                         ".tables", ".schema", ".headers", ".mode", ".indexes", ".dump",
                         ".dbinfo", ".show", ".print", ".echo", ".fullschema", ".indices",
                         ".version", ".stats", ".changes", ".eqp", ".lint", ".bail",
                         ".databases", ".quit", ".exit", ".help", ".timer", ".width",
                         ".nullvalue", ".separator", ".sha3sum", ".expert", ".recover",
                         ".vfsinfo", ".vfsname", "help", "status", "\\s", "\\gset",
                         "\\gdesc", "\\x", "\\timing", "\\pset", "\\echo", "\\set",
                         "\\a", "\\t", "\\g", "\\gx", "\\d+", "\\dt+", "\\sf", "\\sv",
                         "\\c", "\\connect", "\\encoding", "\\dx", "\\ds", "\\dp"})
_SHELL_ESCAPES = re.compile(r"^\s*(?:\.shell|\.system|\\!|system|!|pager|\\P)\s*(.*)$",
                            re.S | re.I)
_COPY_PROGRAM = re.compile(r"\bprogram\s+'((?:''|[^'])*)'", re.I)
_OUTPUT = re.compile(r"^\s*(?:\.output|\.once|\.save|\.backup|\.log|\.trace|\.clone|"
                     r"\\o|\\out|tee|\\T|\.excel|\\g|\\gx|\\w|\\write)(?![\w])\s*(.*)",
                     re.I | re.S)
_REFUSED = (
    (re.compile(r"\b(?:writefile|fts3_tokenizer)\s*\(", re.I),
     "sqlite3 writefile() writes any file with any content"),
    (re.compile(r"\bload_extension\s*\(|^\s*\.load\b", re.I),
     "the database shell loads native code (an extension)"),
    (re.compile(r"\bedit\s*\(", re.I), "sqlite3 edit() runs an editor program"),
    (re.compile(r"^\s*alter\s+system\s+set\s+\"?\w*(?:_command|_libraries|_library|"
                r"library_path)\b", re.I),
     "ALTER SYSTEM sets a program or library the server runs later (archive_command, "
     "shared_preload_libraries)"),
)
"""Functions and commands of database shells that write or run what SQL cannot show."""
_FILE_SQL = re.compile(r"\b(?:readfile|lo_export|lo_import|pg_read_file|pg_read_binary_file|"
                       r"load_file|fsdir|zipfile|sqlar_uncompress|pg_ls_dir|pg_stat_file|"
                       r"read_csv\w*|read_parquet|read_json\w*|read_text|read_blob)\s*\(|"
                       r"\binto\s+(?:outfile|dumpfile)\b|"
                       r"^\s*vacuum\b.*\binto\b", re.I | re.S)
"""SQL that reads or writes files, or opens another database: never plain reads."""
_FILE_READS = re.compile(r"\b(?:(?:readfile|fsdir|glob|read_csv\w*|read_parquet|read_json\w*|"
                         r"read_text|read_blob|read_ndjson\w*)\s*\(|(?:from|join)\s)"
                         r"\s*'((?:''|[^'])*)'|\b(?:from|join)\s+\"((?:\"\"|[^\"])*)\"", re.I)
"""Functions of the local database shells (sqlite3, duckdb) that read the file named by a
literal (``glob`` lists a folder), and duckdb's ``FROM 'data.csv'`` or ``FROM "data.csv"``
(a table name it does not know is tried as a file): a read of that path, judged like
``cat PATH``."""


_AUTOLOADED = re.compile(r"\b(?:sqlite_(?:scan|attach)|postgres_(?:scan|attach|query|execute)|"
                         r"mysql_(?:scan|query|execute)|iceberg_\w+|delta_scan|read_xlsx|"
                         r"st_read|st_\w+|excel_text)\s*\(", re.I)
"""Functions of duckdb's extensions that are not built in: the first call installs the
extension from the internet and loads it (autoloading), unless already installed."""


_ATTACH = re.compile(r"^\s*attach\b(?:\s+database\b)?\s*(?:'((?:''|[^'])*)')?", re.I)
ATTACHES = "SQL opens another database file (ATTACH), which it may create and change"
"""The reason an ``ATTACH`` gives; on a connection opened read-only the file is only read."""


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
"""duckdb reads ``https://``, ``s3://``, ``gs://``, ``hf://``... through its extensions: a
request to another machine, never a path in the workspace."""


def _read_file(out: SqlEffect, m: re.Match[str]) -> str:
    name = m.group(1).replace("''", "'") if m.group(1) is not None else \
        m.group(2).replace('""', '"')
    if _URL.match(name):
        out.add("network", f"SQL reads {name.split('://')[0]}:// (another machine)")
    else:
        out.reads.append(name)
    return "''"


_WRITES_TO = re.compile(r"^\s*vacuum\b.*?\binto\s+'((?:''|[^'])*)'|"
                        r"\binto\s+(?:outfile|dumpfile)\s+'((?:''|[^'])*)'|"
                        r"^\s*\\?copy\b.*?\bto\s+'((?:''|[^'])*)'|"
                        r"^\s*export\s+database\s+'((?:''|[^'])*)'", re.I | re.S)
"""The file a statement writes (``VACUUM INTO``, ``INTO OUTFILE``, ``COPY .. TO``, psql's
``\\copy .. TO`` on this machine, duckdb's ``EXPORT DATABASE 'dir'``)."""
_OPENS_VIEWER = re.compile(r"^\s*(?:\.excel\b|\.(?:once|output)\s+(?:-\w+\s+)*-[xe]\b)",
                           re.I)
"""sqlite3's ``.excel`` and ``.once -x``/``-e``: the output is opened in the system's spreadsheet
program or text editor."""
_OPENS = re.compile(r"^\s*\.open\b(.*)", re.I | re.S)
_IMPORTS = re.compile(r"^\s*\.import\s+(.*)", re.I | re.S)
"""``.import FILE TABLE``: rows read from a file into a table (data, not commands)."""
_READS_FILE = re.compile(r"^\s*(?:\.read|\.restore|\\i|\\ir|source|\\\.)\s+"
                         r"(.*)", re.I | re.S)


@dataclass(slots=True)
class SqlEffect:
    """What a batch of SQL and client commands does."""

    risk: Risk = "read"
    reasons: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    """Shell commands the client runs (escapes, ``COPY ... PROGRAM``, ``.read |cmd``)."""
    files: list[str] = field(default_factory=list)
    """Files it writes (``.output``, ``\\o``)."""
    reads: list[str] = field(default_factory=list)
    attached: list[str | None] = field(default_factory=list)
    """Files ``ATTACH`` opens (None: a name that is not a plain literal)."""
    from_input: bool = False
    """A ``.read``/``source``/``\\i`` of the standard input: what feeds it is run too."""

    def add(self, risk: Risk, reason: str) -> None:
        self.risk = max_risk(self.risk, risk)
        if reason not in self.reasons:
            self.reasons.append(reason)


def judge_sql(text: str, depth: int = 0) -> SqlEffect:
    """Judge every statement and client command in ``text``."""
    out = SqlEffect()
    for line in _client_lines(text):
        _statement(out, line)
    if depth < 3 and _EXECUTES.search(text):
        for m in _LITERAL.finditer(text):
            inner = judge_sql(next(g for g in m.groups() if g is not None), depth + 1)
            if inner.risk == "destructive":
                out.add("destructive", "SQL run from a string: " + "; ".join(inner.reasons))
    if re.search(r"\\gexec\b", text):
        out.add("destructive", "psql \\gexec runs each value a query returns as a statement "
                               "the preview cannot show")
    return out


def _client_lines(text: str) -> list[str]:
    """Client commands (one per line, starting with ``.``/``\\``) and ``;``-ended statements."""
    parts: list[str] = []
    buf: list[str] = []
    for line in text.splitlines() or [text]:
        stripped = line.strip()
        if stripped.startswith((".", "\\", "!")) or re.match(r"(?i)(system|source|tee|pager)\b",
                                                              stripped):
            parts.append(stripped)
            continue
        at = _meta_command_at(line)
        if at >= 0:  # SELECT 1 \g |cmd: the query ends, the meta-command takes the line
            buf.append(line[:at] + ";")
            parts.append(line[at:].strip())
            continue
        buf.append(line)
    sql = _RUN_COMMENT.sub(r" \1 ", _COMMENT.sub(lambda m: m.group(1) or " ", "\n".join(buf)))
    parts.extend(_split_statements(sql))
    return [p for p in parts if p.strip()]


def _meta_command_at(line: str) -> int:
    """Where a backslash meta-command starts in the middle of a line (``SELECT 1 \\g |cmd``,
    ``... \\o file``), outside quotes and comments; -1 when there is none."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "-" and line[i:i + 2] == "--":
            return -1
        elif ch == "\\" and re.match(r"[A-Za-z!?]", line[i + 1:i + 2]):
            return i
    return -1


def _split_statements(sql: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in sql:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


_DOT_COMMANDS = ("shell", "system", "load", "output", "once", "import", "read", "restore",
                 "open", "save", "backup", "excel", "log", "trace", "cd")
"""sqlite3 dot-commands with a side effect, most dangerous first: sqlite3 accepts any
unambiguous-enough prefix (``.sh`` is ``.shell``, ``.sys`` is ``.system``)."""


def _full_dot_command(stmt: str) -> str:
    """``.sh cmd`` as ``.shell cmd``: a prefix of a dot-command with a side effect."""
    m = re.match(r"(\s*)\.(\w+)", stmt)
    if m is None or len(m.group(2)) < 2:
        return stmt
    name = m.group(2).lower()
    full = next((c for c in _DOT_COMMANDS if c.startswith(name)), None)
    return stmt if full is None else f"{m.group(1)}.{full}{stmt[m.end():]}"


_QUOTED_CALL = re.compile(r'"((?:[^"]|"")+)"(\s*\()|\[([^\]]+)\](\s*\()|`((?:[^`]|``)+)`(\s*\()')
"""A function called through a quoted name (``"writefile"(..)``, ``[edit](..)``, or in
backquotes): the same function as its bare name."""


def _bare_calls(stmt: str) -> str:
    return _QUOTED_CALL.sub(lambda m: "".join(g for g in m.groups() if g is not None), stmt)


def _statement(out: SqlEffect, stmt: str) -> None:
    stmt = _bare_calls(_full_dot_command(stmt))
    if re.match(r"\s*\.restore\b", stmt):
        out.add("destructive", "sqlite3 .restore replaces the database with a file's content")
    for pattern, why in _REFUSED:
        if pattern.search(stmt):
            out.add("destructive", why)
    if _AUTOLOADED.search(re.sub(r"'(?:''|[^'])*'", "''", stmt)):
        out.add("install", "SQL calls a function of an extension duckdb installs on first "
                           "use (downloaded and loaded: code)")
    rest = _FILE_READS.sub(lambda m: _read_file(out, m), stmt)
    if _FILE_SQL.search(rest):
        out.add("write", "SQL reads or writes files, or opens another database")
    attach = _ATTACH.match(stmt)
    if attach:
        out.add("write", ATTACHES)
        out.attached.append((attach.group(1) or "").replace("''", "'") if attach.group(1)
                            is not None else None)
    shell = _SHELL_ESCAPES.match(stmt)
    if shell:
        out.add("exec", "the database client runs a shell command")
        out.scripts.append(shell.group(1).strip())
        return
    if _open(out, stmt) or _output(out, stmt) or _input(out, stmt):
        return
    for code in _COPY_PROGRAM.findall(stmt):
        out.add("exec", "COPY ... PROGRAM runs a shell command on the server")
        out.scripts.append(code.replace("''", "'"))
    for m in _WRITES_TO.finditer(stmt):
        out.files.append(next(g for g in m.groups() if g is not None).replace("''", "'"))
    _sql_risk(out, stmt)


def _output(out: SqlEffect, stmt: str) -> bool:
    """``.output FILE``, ``\\o FILE``, ``tee FILE``: the client writes what queries print to
    a file, or with ``|`` pipes it into a command."""
    m = _OUTPUT.match(stmt)
    if m is None:
        return False
    if _OPENS_VIEWER.match(stmt):
        out.add("exec", "sqlite3 .excel/.once -x/-e opens the output in another program")
    target = _client_arg(m.group(1))
    if target.startswith("|"):  # the query's output is piped into the command
        out.add("exec", "the database client pipes its output into a shell command")
        out.scripts.append(f": | {target[1:].strip()}")
    elif target and target not in ("stdout", "/dev/stdout", "/dev/stderr", "/dev/null"):
        out.add("write", "the database client writes its output to a file")
        out.files.append(target)
    return True


def _open(out: SqlEffect, stmt: str) -> bool:
    """``.open FILE``: later statements use another database, opened like ``ATTACH``
    (made when missing); ``--new`` empties it first."""
    m = _OPENS.match(stmt)
    if m is None:
        return False
    if re.search(r"(?:^|\s)--?new\b", m.group(1)):
        out.add("destructive", "sqlite3 .open --new empties the database file it opens")
    out.add("write", ATTACHES)
    target = _client_arg(m.group(1))
    out.attached.append(target or None)
    return True


def _input(out: SqlEffect, stmt: str) -> bool:
    """``.import FILE T`` reads rows (data); ``.read FILE``, ``\\i FILE`` run the commands
    a file holds; ``.read '|cmd'`` runs what cmd prints as SQL and client commands."""
    m = _IMPORTS.match(stmt)
    if m and not _client_arg(m.group(1)).startswith("|"):  # .import '|cmd': below
        out.reads.append(_client_arg(m.group(1)))
        out.add("write", DB_CHANGE)
        return True
    m = m or _READS_FILE.match(stmt)
    if m is None:
        return False
    target = _client_arg(m.group(1))
    if target.startswith("|"):
        out.add("exec", "the database client runs a command for input")
        out.scripts.append(target[1:])
        if not _IMPORTS.match(stmt):
            out.add("destructive", "the database client runs what a command prints as SQL "
                                   "and client commands (nobody sees them first)")
    elif target in STDIN_FILES and not _IMPORTS.match(stmt):
        out.from_input = True
    else:
        out.reads.append(target)
        out.add("exec", "the database client runs commands from a file")
    return True


def _client_arg(rest: str) -> str:
    """The file argument of a client command: options (``-x``, ``--bom``) skipped, quotes
    removed (``.once '|cmd args'``); an unquoted ``|cmd args`` is the rest of the line."""
    rest = rest.strip()
    while rest.startswith("-"):
        rest = rest.partition(" ")[2].lstrip()
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        found = rest[1:] if end < 0 else rest[1:end]
        return _resolved(found) if rest[0] == '"' else found
    return rest if rest.startswith("|") else (rest.split() or [""])[0]


_BACKSLASHED = re.compile(r"\\([0-7]{1,3}|.)", re.S)
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r"}


def _resolved(text: str) -> str:
    """A double-quoted argument as the sqlite3 shell reads it: ``\\174`` is ``|`` (octal),
    ``\\t`` a tab, a backslash before anything else that thing."""
    return _BACKSLASHED.sub(lambda m: chr(int(m.group(1), 8) & 0xFF)
                            if m.group(1)[0] in "01234567"
                            else _ESCAPES.get(m.group(1), m.group(1)), text)


def _sql_risk(out: SqlEffect, stmt: str) -> None:
    stmt = re.sub(r"'(?:''|[^'])*'|\"(?:\"\"|[^\"])*\"", "''", stmt)
    words = re.findall(r"[\w.\\]+", stmt.lower())
    if not words:
        return
    first = words[0]
    if first in _READ_FIRST and first.startswith("."):  # .mode insert T: no SQL in it
        return
    if first == "explain" and not re.search(r"\banaly[sz]e\b", stmt, re.I):
        return  # EXPLAIN [QUERY PLAN] DELETE ..: planned, never run (ANALYZE runs it)
    if first in _READ_FIRST and not re.search(r"\b(?:delete|insert|drop|truncate)\b|"
                                              + _UPDATE, stmt, re.I):
        return
    if first in ("drop", "truncate") or (first == "alter" and "drop" in words):
        out.add("destructive", f"SQL {first.upper()} destroys data")
    elif re.search(r"\bdelete\b|" + _UPDATE, stmt, re.I) and _unbounded(stmt):
        out.add("destructive", "SQL DELETE/UPDATE without a WHERE changes every row")
    elif re.search(r"\b(?:drop|truncate)\s+(?:table|database|schema|index|view)\b", stmt,
                   re.I):
        out.add("destructive", "SQL DROP/TRUNCATE destroys data")
    elif first == "pragma" and _reads_pragma(stmt):
        return
    elif first in ("install", "load", "force"):
        out.add("install", "SQL INSTALL/LOAD fetches or loads an extension: code")

    elif first.startswith((".", "\\")):  # not the database's content: files, settings
        out.add("write", f"the client command {first} is not modelled (it may write files)")
    else:
        out.add("write", DB_CHANGE)


_UPDATE = r"(?<!for\s)(?<!key\s)\bupdate\b"
"""UPDATE, not the row lock of ``SELECT .. FOR [NO KEY] UPDATE``."""


def _reads_pragma(stmt: str) -> bool:
    """``PRAGMA table_info(t)``, ``PRAGMA journal_mode``: a report; ``PRAGMA optimize``,
    ``wal_checkpoint``, ``journal_mode = WAL`` or ``user_version(3)`` change the file."""
    m = re.match(r"\s*pragma\s+(?:\w+\.)?(\w+)\s*(\(|=)?", stmt, re.I)
    if m is None or m.group(2) == "=":
        return False
    name = m.group(1).lower()
    return name in (_TABLE_PRAGMAS if m.group(2) == "(" else _READ_PRAGMAS)


def _unbounded(stmt: str) -> bool:
    for m in re.finditer(r"\bdelete\b|" + _UPDATE, stmt, re.I):
        rest = stmt[m.end():]
        where = re.search(r"\bwhere\b(.*)", rest, re.I | re.S)
        if where is None or _TRUE_WHERE.match(where.group(1)):
            return True
    return False
