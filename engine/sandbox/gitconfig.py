"""Which git configuration a confined command may leave behind: keys that never name a program.

Under ``sandbox: {vcs: write}`` a command may create submodules' and linked worktrees' git
folders (``.git/modules/NAME``, ``.git/worktrees/NAME``), and git writes a configuration file in
each. git on the host later reads those files, and many keys make it run a program
(``core.fsmonitor``, ``core.hooksPath``, ``core.sshCommand``, ``filter.*``, ``diff.*.textconv``,
``alias.*``, ``submodule.*.update = !cmd``) or read another file (``include.path``,
``includeIf.*``). A file is kept only when every key it gained or changed is in ``ALLOWED``
(and its value passes the key's check); what is not known is refused.

The file is read by a strict parser (``parse``) rather than by git: the canonical form git writes
(``[section "sub"]`` then ``<tab>key = value``, values quoted when they need it) is understood;
anything else (continuation lines, ``[section.sub]``, a key on the header line, a byte order
mark, carriage returns) is a ``ConfigSyntax`` and the file is refused. Nothing here runs a
program.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

Entry = tuple[str, str | None]
"""A key (``section.subsection.name``: section and name lower-cased, the subsection as
written) and its value (None for a bare boolean key)."""


class ConfigSyntax(ValueError):
    """A configuration file this parser does not fully understand (so it is refused)."""


_HEADER = re.compile(r'\[([A-Za-z0-9-]+)(?:[ \t]+"((?:[^"\\]|\\.)*)")?\][ \t]*(?:[#;].*)?')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:=(.*))?")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "b": "\b"}


def parse(text: str) -> list[Entry]:
    """The entries of a git configuration file, in order; ``ConfigSyntax`` on anything outside
    the form git itself writes."""
    if "\r" in text or "\0" in text or text.startswith("\ufeff"):
        raise ConfigSyntax("carriage return, NUL or byte order mark")
    out: list[Entry] = []
    section: str | None = None
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" \t")
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            header = _HEADER.fullmatch(line)
            if header is None:
                raise ConfigSyntax(f"line {number}: section header")
            name, sub = header.group(1).lower(), header.group(2)
            section = name if sub is None else name + "." + re.sub(r"\\(.)", r"\1", sub)
            continue
        key = _KEY.fullmatch(line)
        if key is None or section is None:
            raise ConfigSyntax(f"line {number}: key")
        value = None if key.group(2) is None else _value(key.group(2), number)
        out.append((f"{section}.{key.group(1).lower()}", value))
    return out


def _value(raw: str, number: int) -> str:
    """A value as git reads it: quotes removed, escapes applied, a comment and the trailing
    blanks outside quotes dropped."""
    out: list[str] = []
    kept = 0  # length of ``out`` up to the last character that is not trailing blank
    quoted = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in _ESCAPES:
                raise ConfigSyntax(f"line {number}: escape or continuation")
            out.append(_ESCAPES[raw[i + 1]])
            kept, i = len(out), i + 2
            continue
        if c == '"':
            quoted = not quoted
            kept = len(out)
        elif not quoted and c in "#;":
            break
        else:
            if c in " \t" and not quoted and not out:
                i += 1
                continue
            out.append(c)
            if quoted or c not in " \t":
                kept = len(out)
        i += 1
    if quoted:
        raise ConfigSyntax(f"line {number}: unterminated quote")
    return "".join(out[:kept])


def _url(value: str | None, _where: str) -> bool:
    """A repository address git fetches by itself: a path, ``scheme://`` of a built-in
    transport, or ``host:path``; never ``<helper>::`` (runs ``git-remote-<helper>``) nor
    ``ext::`` (runs a command)."""
    if not value or "::" in value or value.startswith("-"):
        return False
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", value)
    return scheme is None or scheme.group(1).lower() in ("http", "https", "ssh", "git", "file")


def _any(value: str | None, _where: str) -> bool:
    return True


def _plain(value: str | None, _where: str) -> bool:
    """A boolean, a number, a ref name or a refspec: no program, no path outside."""
    return value is None or re.fullmatch(r"[A-Za-z0-9_./+*:^-]*", value) is not None


def _inside(root: str) -> Callable[[str | None, str], bool]:
    """``core.worktree``: a path that resolves (from the git folder holding the file) inside
    ``root``, the workspace."""
    def check(value: str | None, where: str) -> bool:
        if not value:
            return False
        path = os.path.realpath(os.path.join(where, value))
        return path == root or path.startswith(root.rstrip("/") + "/")
    return check


EXACT: frozenset[str] = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "extensions.worktreeconfig",
    "core.worktree", "user.name", "user.email",
})
SUBSECTION: frozenset[str] = frozenset({
    "remote.url", "remote.pushurl", "remote.fetch", "branch.remote", "branch.merge",
    "submodule.url", "submodule.active", "submodule.update",
})
"""``section.*.name`` keys, written by ``git clone``, ``git remote add``, ``git submodule add``,
``init`` and ``update --init``, and ``git branch --set-upstream-to``."""
UPDATE_MODES: frozenset[str] = frozenset({"checkout", "rebase", "merge", "none"})
"""``submodule.*.update`` values that name no program (``!cmd`` runs one)."""
ALLOWED = EXACT | SUBSECTION
"""The keys a confined command may write into a git configuration file that git on the host
reads: none of them names a program or another file git reads."""


def _update(value: str | None, _where: str) -> bool:
    return value in UPDATE_MODES


def known(key: str) -> str | None:
    """The ``ALLOWED`` name ``key`` is an instance of (``submodule.url`` for
    ``submodule.lib.url``), or None."""
    section, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    if sub:
        generic = f"{section}.{name}"
        return generic if generic in SUBSECTION else None
    return key if key in EXACT else None


def allowed(key: str, value: str | None, where: str, workspace: str) -> bool:
    """Whether one entry may be kept; ``where`` is the git folder holding the file."""
    check: Mapping[str, Callable[[str | None, str], bool]] = {
        "core.worktree": _inside(os.path.realpath(workspace)), "remote.url": _url,
        "remote.pushurl": _url, "submodule.url": _url, "submodule.update": _update,
        "user.name": _any, "user.email": _any,
    }
    generic = known(key)
    return generic is not None and check.get(generic, _plain)(value, where)


def refused(before: bytes | None, after: bytes, where: str, workspace: str) -> str | None:
    """Why the file ``after`` (that was ``before``; None: new) may not be kept, or None: every
    entry it gained or changed is allowed."""
    try:
        old = parse(before.decode()) if before is not None else []
        new = parse(after.decode())
    except (UnicodeDecodeError, ConfigSyntax) as exc:
        return f"not understood ({exc})"
    gained = list(new)
    for entry in old:
        if entry in gained:
            gained.remove(entry)
    for key, value in gained:
        if not allowed(key, value, where, workspace):
            return f"sets {key}"
    return None


def refused_keys(before: bytes, after: bytes, where: str, workspace: str) -> list[str]:
    """The keys whose change keeps ``after`` from replacing ``before`` (empty: it may): a key
    outside ``ALLOWED`` that was added, removed, changed or moved (git reads the last of a
    repeated key), or an ``ALLOWED`` key given a value its check refuses. ``ConfigSyntax`` or
    ``UnicodeDecodeError`` when either file is not understood."""
    old, new = parse(before.decode()), parse(after.decode())
    other_old = [entry for entry in old if known(entry[0]) is None]
    other_new = [entry for entry in new if known(entry[0]) is None]
    out: set[str] = set()
    if other_old != other_new:
        keys = {key for key, _ in other_old + other_new}
        out = {k for k in keys if [e for e in other_old if e[0] == k]
               != [e for e in other_new if e[0] == k]} or keys  # or only their order changed
    gained = list(new)
    for entry in old:
        if entry in gained:
            gained.remove(entry)
    out.update(key for key, value in gained
               if known(key) is not None and not allowed(key, value, where, workspace))
    return sorted(out)
