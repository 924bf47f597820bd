"""Hints: the commands a message tells the user to run, spelled so they run as printed.

A hint names the program the user ran (``turnstile``, or the interpreter and ``-m engine`` as
they were typed), the store when it is not the default one (``--db PATH`` for a SQLite file,
``--store URL`` for a server, its password left out), and words quoted for a POSIX shell. The
program is derived once, from how this process was started; every message that suggests a
command builds it with ``command``.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
from pathlib import Path

DEFAULT_STORE = Path(".engine") / "engine.db"
"""The store a command uses when none is named (``engine.store.url`` resolves the same)."""
SCRIPT = "turnstile"
"""The console script's name."""


@functools.cache
def program() -> str:
    """The command that runs Turnstile, as this process was started.

    ``python3 -m engine`` (with the interpreter's own options) when the process was started
    so; the console script as ``turnstile`` when that name finds it, else by its path; in a
    program that embeds the engine, ``turnstile`` when it is on ``PATH``, else this
    interpreter with ``-m engine``.
    """
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable])
    for i in range(1, len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == "engine":
            return shlex.join([*argv[:i], "-m", "engine"])
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == SCRIPT:
        return SCRIPT if _on_path(script) else shlex.quote(str(script))
    if shutil.which(SCRIPT):
        return SCRIPT
    return shlex.join([sys.executable or "python3", "-m", "engine"])


def _on_path(script: Path) -> bool:
    found = shutil.which(SCRIPT)
    return found is not None and os.path.realpath(found) == os.path.realpath(script)


def store_args(store: str | os.PathLike[str] | None) -> list[str]:
    """``--db PATH`` or ``--store URL`` for ``store`` (a SQLite path or a server URL as its
    store names it), or nothing for the default store (or none)."""
    if store is None:
        return []
    text = os.fspath(store)
    if "://" in text and not text.startswith("sqlite://"):
        return ["--store", text]
    path = Path(text.removeprefix("sqlite:///")) if text.startswith("sqlite:///") else Path(text)
    if _same_file(path, DEFAULT_STORE):
        return []
    return ["--db", str(path)]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def command(*words: str, store: str | os.PathLike[str] | None = None) -> str:
    """``program() WORDS... [--db PATH | --store URL]``, quoted for a shell."""
    return " ".join([program(), shlex.join([*words, *store_args(store)])]).rstrip()
