"""Listings: commands whose every output line is a path under known directories.

``find .``, ``fd``, ``git ls-files``, ``rg -l``, ``ls``: their output fed to ``xargs``, ``fd -x``
or ``$(...)`` names files under those directories, so ``find . -name '*.py' | xargs wc -l``
reads inside the workspace. A listed name is a path, never code (a file name can be any text).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from engine.permissions.effect import parse_opts
from engine.permissions.words import Word

_SAFE_DIR = re.compile(r"^[\w@%+=:,./-]+$")
_FIND_PRINTS_OTHER = frozenset({"-printf", "-fprintf", "-ls", "-fls", "-exec", "-execdir",
                                "-ok", "-okdir", "-fprint", "-fprint0", "-L", "-follow"})


def listed_dirs(argv: list[Word]) -> list[str] | None:
    """Directories under which every line a listing command prints is a path (``find .``,
    ``fd``, ``git ls-files``, ``rg -l``), so its output fed to ``xargs`` or ``$(...)`` names
    files there; None for any other command."""
    if not argv or argv[0].value is None or any(w.value is None for w in argv):
        return None
    name = argv[0].value.rsplit("/", 1)[-1]
    args = argv[1:]
    dirs = _LISTERS[name](args) if name in _LISTERS else None
    if dirs is None or not all(_safe_dir(d) for d in dirs):
        return None
    return dirs


def _safe_dir(d: str) -> bool:
    parts = d.split("/")
    return bool(_SAFE_DIR.match(d)) and not d.startswith("/") and ".." not in parts \
        and "," not in d


def _find_lists(args: list[Word]) -> list[str] | None:
    vals = [w.value or "" for w in args]
    if any(v in _FIND_PRINTS_OTHER for v in vals):
        return None
    starts = []
    for v in vals:
        if v.startswith(("-", "(", "!")):
            break
        starts.append(v)
    return starts or ["."]


def _fd_lists(args: list[Word]) -> list[str] | None:
    vals = [w.value or "" for w in args]
    if any(v in ("-x", "--exec", "-X", "--exec-batch", "--base-directory", "-a",
                 "--absolute-path", "-L", "--follow", "-l", "--list-details") for v in vals):
        return None
    o = parse_opts(args, "edtESjcoC", frozenset({"--extension", "--type", "--exclude",
                                                  "--max-depth", "--min-depth", "--size",
                                                  "--search-path", "--format"}))
    if o.has("--format"):
        return None
    paths = [w.value or "" for w in o.positionals[1:] + o.all("--search-path")]
    return paths or ["."]


def _git_lists(args: list[Word]) -> list[str] | None:
    vals = [w.value or "" for w in args]
    sub = next((v for v in vals if not v.startswith("-")), "")
    names = {"--name-only", "--name-status", "-l", "--files-with-matches", "-L",
             "--files-without-match"}
    if sub == "ls-files" or (sub in ("diff", "show", "log", "ls-tree", "grep", "diff-tree")
                             and names & set(vals)):
        return ["."] if not any(v.startswith(("-C", "--git-dir", "--work-tree"))
                                for v in vals) else None
    return None


def _ls_lists(args: list[Word]) -> list[str] | None:
    o = parse_opts(args, "IwT")
    if any(n in ("-a", "-A", "--all", "--almost-all", "-l", "-d", "--directory", "-R", "-n",
                 "-g", "-o", "-s", "-i") for n in o.flags):
        return None
    if not all(_safe_dir(w.value or "") for w in o.positionals):
        return None
    return ["."]


def _matches_lists(pattern_first: bool) -> Callable[[list[Word]], list[str] | None]:
    def lists(args: list[Word]) -> list[str] | None:
        o = parse_opts(args, "efmABCgtT", frozenset({"--regexp", "--file", "--glob", "--type"}))
        if not o.has("-l", "--files-with-matches", "-L", "--files-without-match", "--files"):
            return None
        skip = 0 if o.has("-e", "--regexp", "-f", "--file", "--files") or not pattern_first \
            else 1
        return [w.value or "" for w in o.positionals[skip:]] or ["."]

    return lists


_LISTERS: dict[str, Callable[[list[Word]], list[str] | None]] = {
    "find": _find_lists, "fd": _fd_lists, "fdfind": _fd_lists, "git": _git_lists,
    "ls": _ls_lists, "rg": _matches_lists(True), "grep": _matches_lists(True),
}
