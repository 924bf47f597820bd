"""Python one-liners that only read, decided on their syntax tree.

``python3 -c "import json; print(json.load(open('package.json'))['version'])"`` reads a
file and prints: nothing else can happen in the subset this module models. The subset is
what the tree shows and nothing more: statements and expressions of the kinds named here,
modules that do no I/O of their own (``json``, ``re``, ``collections``, ``ast``, ``csv``...),
calls of builtins that only compute or print, ``open`` of a literal path in a reading mode,
and methods whose names no writing, deleting, running or connecting API uses. A name or an
attribute with a leading underscore (``__class__``, ``__import__``), ``getattr``, ``eval``,
a module outside the list, or anything the tree holds that the list does not name makes the
code opaque: it stays asked, as all inline code did before.

Python puts the folder it starts in first on the import path: a ``json.py`` or ``re.py``
there runs instead of the library's. The walker checks that folder (``Effect.imports_here``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_MODULES = frozenset({
    "json", "re", "collections", "itertools", "functools", "math", "statistics", "ast",
    "csv", "textwrap", "string", "datetime", "pprint", "tomllib", "difflib", "fnmatch",
    "hashlib", "base64", "binascii", "unicodedata", "heapq", "bisect", "decimal",
    "fractions", "keyword", "shlex", "sys", "os.path", "posixpath", "glob", "uuid",
    "calendar", "zlib", "struct", "typing", "dataclasses", "enum", "copy", "random", "html",
    "urllib.parse", "ipaddress", "time"})
"""Modules whose functions compute, parse or list names, and write nothing of their own (a
file they are handed can only be one ``open`` made for reading)."""
_POWERFUL = frozenset({
    "os", "sys", "subprocess", "shutil", "socket", "ctypes", "importlib", "builtins", "io",
    "pty", "signal", "multiprocessing", "threading", "tempfile", "pathlib", "codecs",
    "urllib", "http", "ftplib", "smtplib", "pickle", "marshal", "shelve", "dbm", "sqlite3",
    "zipfile", "tarfile", "gzip", "bz2", "lzma", "posix", "fcntl", "resource", "mmap",
    "select", "selectors", "asyncio", "concurrent", "runpy", "code", "pdb", "webbrowser",
    "logging", "atexit", "gc", "inspect", "types", "operator", "platform", "request",
    "linecache", "tokenize", "configparser", "genericpath", "stat", "warnings"})
"""Modules (and ``urllib.request``) that write, run, connect or reach the interpreter's
insides: reached as an attribute of an allowed module (``glob.os``, ``json.codecs``) the
code is opaque."""
_ALLOWED_ATTRS = {
    "os": frozenset({"path", "listdir", "walk", "scandir", "getcwd", "sep", "linesep",
                     "curdir", "pardir", "extsep", "cpu_count", "name"}),
    "sys": frozenset({"argv", "stdin", "stdout", "stderr", "version", "version_info",
                      "platform", "maxsize", "exit", "byteorder", "getdefaultencoding",
                      "getsizeof", "executable"}),
}
"""What of ``os`` (bound by ``import os.path``) and ``sys`` the code may use."""
_LISTS = frozenset({"glob", "iglob", "listdir", "scandir", "walk"})
"""Calls that list a folder they are given: only of a literal path (judged as a read)."""
_BUILTINS = frozenset({
    "print", "len", "sorted", "sum", "min", "max", "str", "int", "float", "list", "dict",
    "set", "tuple", "frozenset", "enumerate", "zip", "range", "isinstance", "any", "all",
    "map", "filter", "reversed", "repr", "round", "abs", "bool", "next", "iter", "chr", "ord",
    "hex", "oct", "bin", "divmod", "format", "bytes", "bytearray", "type", "hash", "pow",
    "slice", "ascii", "callable", "issubclass", "open", "True", "False", "None",
    "Exception", "ValueError", "KeyError", "IndexError", "TypeError", "StopIteration",
    "OSError", "FileNotFoundError", "UnicodeDecodeError", "exit", "quit", "input"})
"""Builtins that compute, convert or print (``open`` only to read: checked at its call)."""
_WRITES = frozenset({
    "write", "writelines", "write_text", "write_bytes", "unlink", "rmdir", "mkdir",
    "makedirs", "touch", "rename", "renames", "chmod", "lchmod", "chown", "symlink_to",
    "hardlink_to", "link_to", "remove", "removedirs", "rmtree", "system", "popen", "spawn",
    "run", "call", "check_call", "check_output", "kill", "truncate", "dump", "dumps_to",
    "send", "sendall", "connect", "urlopen", "request", "putenv", "unsetenv", "chdir",
    "setattr", "delattr", "seed", "save", "tofile", "writer", "writerow", "writerows",
    "copy", "copyfile", "move", "replace_path", "execv", "execve", "execl", "execvp",
    "startfile", "fork", "setrecursionlimit", "settrace", "setprofile", "exit_",
    "write_through", "reconfigure", "flush", "detach"})
"""Method names of APIs that write, delete, run, connect or change the interpreter: any
call of one makes the code opaque, whatever object it is on."""
_MODES = frozenset({"r", "rb", "rt", "br", "tr"})
_NODES = (
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While,
    ast.If, ast.With, ast.withitem, ast.Import, ast.ImportFrom, ast.alias, ast.Pass,
    ast.Break, ast.Continue, ast.Try, ast.ExceptHandler, ast.Call, ast.keyword,
    ast.Attribute, ast.Name, ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.BinOp,
    ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Subscript, ast.Slice, ast.List, ast.Tuple,
    ast.Dict, ast.Set, ast.IfExp, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.comprehension, ast.Starred, ast.Lambda, ast.arguments, ast.arg,
    ast.Load, ast.Store, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)
"""The syntax the subset holds: no function or class definitions, no ``global``, no
``del``, no ``await``, no walrus into a name the checks rely on."""


@dataclass(slots=True)
class ReadOnly:
    """What a one-liner of the subset does besides computing: the files it opens."""

    files: list[str] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)


def read_only(code: str) -> ReadOnly | None:
    """What ``code`` reads, when it is in the subset; None when it is not (it may do
    anything: asked)."""
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out = ReadOnly()
    bound = _bound_names(tree)
    if bound & (_BUILTINS | set(_ALLOWED_ATTRS) | _MODULES) - _imported_names(tree) or \
            not _modules_used_directly(tree):
        return None  # print = open; o = os; fs = [os]: a name no longer what it says
    for node in ast.walk(tree):
        if not isinstance(node, _NODES) or not _node_ok(node, out, bound):
            return None
    return out


def _imported_names(tree: ast.AST) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}


def _modules_used_directly(tree: ast.AST) -> bool:
    """``os`` and ``sys`` appear only as ``os.NAME``/``sys.NAME`` (never handed on, stored
    or aliased, where their other attributes would be out of sight), neither is imported
    under another name, and ``open`` is only ever called (where its mode is checked)."""
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and node.name.split(".")[0] in _ALLOWED_ATTRS and \
                node.asname is not None and node.name != "os.path":
            return False
        if isinstance(node, ast.Name) and node.id in _ALLOWED_ATTRS and not isinstance(
                parents.get(id(node)), ast.Attribute):
            return False
        if isinstance(node, ast.Name) and node.id == "open" and not (
                isinstance(parent := parents.get(id(node)), ast.Call) and parent.func is node):
            return False  # f = open; map(open, names): which file and mode, not shown
    return True


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the code assigns, loops over, imports or catches: its own values."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


def _node_ok(node: ast.AST, out: ReadOnly, bound: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return (node.id == "_" or not node.id.startswith("_")) and (
            node.id in _BUILTINS or node.id in bound)
    if isinstance(node, ast.Attribute):
        return _attribute_ok(node)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _imports_ok(node, out)
    if isinstance(node, ast.Call):
        return _call_ok(node, out)
    return True


def _attribute_ok(node: ast.Attribute) -> bool:
    """No private or module attribute, no writing API, never assigned; of ``os`` and
    ``sys`` only what ``_ALLOWED_ATTRS`` names; ``sys.stdout.write`` prints."""
    if node.attr.startswith("_") or isinstance(node.ctx, ast.Store) or (
            node.attr in _POWERFUL and not _is_name(node.value, "os")):
        return False
    if isinstance(node.value, ast.Name) and node.value.id in _ALLOWED_ATTRS:
        return node.attr in _ALLOWED_ATTRS[node.value.id]
    if node.attr in _WRITES:
        return node.attr in ("write", "flush", "writelines") and _std_stream(node.value)
    return True


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _imports_ok(node: ast.Import | ast.ImportFrom, out: ReadOnly) -> bool:
    if isinstance(node, ast.ImportFrom):
        if node.level or node.module is None:
            return False
        names = [node.module] if node.module != "os" else [
            f"os.{a.name}" for a in node.names]
        if any(a.name == "*" or a.name.startswith("_") for a in node.names):
            return False
    else:
        names = [a.name for a in node.names]
    for name in names:
        if name not in _MODULES:
            return False
        out.imports.add(name.split(".")[0])
    return True


def _call_ok(node: ast.Call, out: ReadOnly) -> bool:
    """``open`` only of a literal path in a reading mode (recorded); ``print`` to the
    standard streams; anything else is judged by its name."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "open":
        return _open_ok(node, out)
    if isinstance(func, ast.Name) and func.id == "print":
        return all(k.arg != "file" or _std_stream(k.value) for k in node.keywords)
    if isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes", "open"):
        return False  # Path(..).open("w"): which path and mode, not shown: opaque
    if isinstance(func, ast.Attribute) and func.attr in _LISTS:
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return False  # os.listdir(x): which folder, not shown
        out.files.append(first.value.split("*", 1)[0].rsplit("/", 1)[0] or ".")
    return True


def _open_ok(node: ast.Call, out: ReadOnly) -> bool:
    args = list(node.args)
    mode = args[1] if len(args) > 1 else next(
        (k.value for k in node.keywords if k.arg == "mode"), None)
    if len(args) > 2 or any(k.arg not in ("mode", "encoding", "errors", "newline")
                            for k in node.keywords):
        return False
    if mode is not None and not (isinstance(mode, ast.Constant) and mode.value in _MODES):
        return False
    path = args[0] if args else next((k.value for k in node.keywords if k.arg == "file"),
                                     None)
    if not (isinstance(path, ast.Constant) and isinstance(path.value, str)) or \
            "\0" in path.value:
        return False
    out.files.append(path.value)
    return True


def _std_stream(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
        node.value.id == "sys" and node.attr in ("stdout", "stderr")


_QUIET_FLAGS = frozenset("IEsSBuOqbP")


def plain_flags(flags: list[str]) -> bool:
    """``python3 -c``, ``-I -c``, ``-Bc``: options that change nothing the code can do
    (isolation, no bytecode files, unbuffered, optimised asserts)."""
    return all(f.startswith("-") and not f.startswith("--") and set(f[1:].replace("c", ""))
               <= _QUIET_FLAGS for f in flags)
