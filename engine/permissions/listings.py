"""Listings: commands whose every output line is a path under known directories.

``find .``, ``fd``, ``git ls-files``, ``rg -l``, ``ls``: their output fed to ``xargs``, ``fd -x``
or ``$(...)`` names files under those directories, so ``find . -name '*.py' | xargs wc -l``
reads inside the workspace. A listed name is a path, never code (a file name can be any text).
Some of a listing's lines are a listing too: a filter that prints some of its input lines
unchanged (``head``, ``sort -u``, ``grep -v``) keeps it one (``keeps_lines``).

A listed path is whole only while its consumer keeps it whole: ``xargs`` cuts at blanks and
honours quotes, the shell splits ``$(find .)`` at blanks, ``read`` takes a line. A folder
named ``x `` holding ``etc/passwd`` is listed as ``./x /etc/passwd``, and a piece of that is
any path. So a listing counts as one only where no name under its folders has such a
character (``split_name``), unless its consumer splits at NUL only.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engine.permissions.effect import parse_opts
from engine.permissions.words import Word
from engine.workspace.index import tracked

SPLIT_AT = re.compile(r"[\s'\"\\]")
"""Characters a consumer of a listing cuts a name at or reads as quoting: blanks and line
breaks (``xargs``, the shell's word splitting, ``read``), quotes and backslashes (``xargs``)."""
MAX_LISTED_ENTRIES = 200_000
"""Folder entries ``split_name`` looks at before it gives up (the listing counts as split)."""
TOO_MANY = "(more names than the classifier looks at)"
_GLOB_CHARS = re.compile(r"[*?[]")
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
    if dirs is None:
        return None
    dirs = [_glob_base(d) for d in dirs]
    if not all(_safe_dir(d) for d in dirs):
        return None
    return dirs


def bare_folders(argv: list[Word], dirs: list[str]) -> list[str]:
    """The folders whose entries the listing ``argv`` (of ``dirs``) prints as bare names,
    with nothing before them: ``ls docs`` prints ``--output=a.txt`` for
    ``docs/--output=a.txt``, which the program it feeds reads as an option. ``find`` puts
    its start folder before every name (``./-x``); the others print paths from the folder
    they run in, where an entry of that folder has nothing before it."""
    name = (argv[0].value or "").rsplit("/", 1)[-1] if argv else ""
    if name == "find":
        return []
    if name == "ls":
        given = parse_opts(argv[1:], "IwT").positionals
        return [w.value or "" for w in given] or ["."]
    return dirs


def _glob_base(d: str) -> str:
    """The folder every match of the glob ``d`` lies under (``src/*.py``: ``src``), the
    part before its first pattern; ``d`` itself when it holds none (or a ``..``, which a
    match could climb out by)."""
    parts = d.split("/")
    at = next((k for k, p in enumerate(parts) if _GLOB_CHARS.search(p)), None)
    if at is None or ".." in parts:
        return d
    return "/".join(parts[:at]) or ("/" if d.startswith("/") else ".")


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


_STATUS_OPTIONS = re.compile(r"-(?:s|u(?:no|normal|all)?)|--(?:short|porcelain(?:=v1)?|"
                             r"untracked-files(?:=(?:no|normal|all))?|no-renames|renames|"
                             r"ignored(?:=(?:traditional|matching|no))?|no-ahead-behind)")
_STATUS_FIELDS = frozenset({("cut", "-c4-"), ("cut", "-c", "4-"), ("awk", "{print $2}"),
                            ("awk", "{ print $2 }"), ("awk", "{print $NF}"),
                            ("awk", "{ print $NF }"), ("colrm", "1", "3"),
                            ("sed", "s/^...//"), ("sed", "-e", "s/^...//")})
"""Filters that keep the path part of ``git status`` lines (``XY PATH``, ``R  A -> B``)."""


def status_listing(argv: list[Word]) -> str | None:
    """``git status`` printing ``XY PATH`` lines, each word of which (a status, a path,
    ``->``) is a relative name: "root" for ``--porcelain`` (paths from the repository's
    top, whatever the folder), "here" for ``-s`` (from the current folder: ``../x`` from a
    subfolder), else None (the long format, ``-b``'s branch line, ``-z``, ``--porcelain=v2``)."""
    vals = [w.value for w in argv]
    if not vals or vals[0] != "git" or None in vals:
        return None
    rest = [v or "" for v in vals[1:]]
    while rest and rest[0] in ("--no-pager", "--no-optional-locks"):
        rest = rest[1:]
    if rest[:1] != ["status"]:
        return None
    given = [v for v in rest[1:] if v.startswith("-")]
    if not all(_STATUS_OPTIONS.fullmatch(v) or v == "--" for v in given):
        return None
    if any(v.startswith("--porcelain") for v in given):
        return "root"
    return "here" if {"-s", "--short"} & set(given) else None


def status_paths(argv: list[Word]) -> bool:
    """Whether ``argv`` prints the path part of each ``git status`` line it reads
    (``cut -c4-``, ``awk '{print $2}'``); of any other listing it may print a path's tail
    (``cut -c4-`` of ``./x../y`` is ``../y``)."""
    return tuple(w.value for w in argv) in _STATUS_FIELDS


def _ls_lists(args: list[Word]) -> list[str] | None:
    o = parse_opts(args, "IwT")
    if any(n in ("-a", "-A", "--all", "--almost-all", "-l", "-d", "--directory", "-R", "-n",
                 "-g", "-o", "-s", "-i") for n in o.flags):
        return None
    if not all(_safe_dir(_glob_base(w.value or "")) for w in o.positionals):
        return None  # ls b/*.gz: the paths the shell matched, each under b
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


@dataclass(frozen=True, slots=True)
class _Filter:
    """A program that prints some of the lines it reads, each unchanged."""

    flags: str
    """Option letters that change which lines, not what a line holds."""
    valued: str
    """Option letters that take a value (``-n 3``, ``-k 2,2``, ``-e PAT``)."""
    longs: frozenset[str]
    """Long options (the part before ``=``) of either kind."""
    pattern: bool = False
    """Its first operand is a pattern (grep) unless ``-e`` gives one; any other operand is a
    file it reads in place of its input."""


_FILTERS: dict[str, _Filter] = {
    "head": _Filter("qz", "n", frozenset({"--lines", "--quiet", "--silent",
                                          "--zero-terminated"})),
    "tail": _Filter("qz", "n", frozenset({"--lines", "--quiet", "--silent",
                                          "--zero-terminated"})),
    "sort": _Filter("bdfghMnrRsuVz", "ktS", frozenset({
        "--key", "--field-separator", "--reverse", "--unique", "--numeric-sort",
        "--version-sort", "--ignore-case", "--human-numeric-sort", "--general-numeric-sort",
        "--month-sort", "--random-sort", "--stable", "--ignore-leading-blanks",
        "--dictionary-order", "--buffer-size", "--parallel", "--zero-terminated"})),
    "uniq": _Filter("diuDz", "fsw", frozenset({"--repeated", "--unique", "--ignore-case",
                                               "--skip-fields", "--skip-chars",
                                               "--check-chars", "--zero-terminated"})),
    "grep": _Filter("vixwsEFGPz", "e", frozenset({"--invert-match", "--ignore-case",
                                                   "--line-regexp", "--word-regexp",
                                                   "--extended-regexp", "--fixed-strings",
                                                   "--perl-regexp", "--regexp",
                                                   "--no-messages", "--null-data"}),
                    pattern=True),
    "tac": _Filter("", "", frozenset()),
    "shuf": _Filter("rz", "n", frozenset({"--head-count", "--repeat", "--zero-terminated"})),
    "cat": _Filter("", "", frozenset()),
}
"""Each filter's flags, options taking a value, and long options that keep lines whole;
``-z`` reads and prints records ended by NUL instead (``find -print0 | sort -z``): the
same records, unchanged."""
_FILTERS["egrep"] = _FILTERS["fgrep"] = _FILTERS["grep"]


def keeps_lines(argv: list[Word]) -> bool:
    """Whether the command prints only lines of its input, each unchanged (``head -n 3``,
    ``tail -n +2``, ``sort -u``, ``grep -v test``): its output is a listing when its input
    is one. Options that change a line (``grep -o``, ``uniq -c``, ``head -c``) or read or
    write elsewhere (``sort -o``, a file operand) do not keep it."""
    if not argv or any(w.value is None for w in argv):
        return False
    spec = _FILTERS.get((argv[0].value or "").rsplit("/", 1)[-1])
    if spec is None:
        return False
    words = [w.value or "" for w in argv[1:]]
    operands, given, i = [], False, 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            if w.split("=", 1)[0] not in spec.longs:
                return False
            given = given or w.startswith("--regexp")
        elif re.fullmatch(r"[-+]\d+", w) and spec.valued == "n":
            pass  # head -3, tail +2
        elif w.startswith("-") and len(w) > 1:
            letters = w[1:]
            for at, c in enumerate(letters):
                if c in spec.valued:
                    given = given or c == "e"
                    i += not letters[at + 1:]  # -n 3, or -n3
                    break
                if c not in spec.flags:
                    return False
        else:
            operands.append(w)
        i += 1
    allowed = int(spec.pattern and not given)
    return len([o for o in operands if o != "-"]) <= allowed and len(operands) <= allowed + (
        "-" in operands)


def split_name(folders: Iterable[str], made: Iterable[str]) -> str | None:
    """A path under ``folders`` (absolute) that holds a ``SPLIT_AT`` character, on disk now
    or among the paths ``made`` by the command before its listing; ``TOO_MANY`` past
    ``MAX_LISTED_ENTRIES``; None when every name stays whole. Links to folders are not
    descended into, as listings do not follow them."""
    found = misread_entry(folders, made, (), "/", _NO_LINK)
    return None if found is None else found[1]


def misread_entry(folders: Iterable[str], made: Iterable[str], made_links: Iterable[str],
                  workspace: str, listed: Callable[[str], bool],
                  cut: bool = True) -> tuple[str, str] | None:
    """The first entry under ``folders`` (absolute) that the consumer of their listing
    would take for something else, on disk now or ``made`` (``made_links``) by the command
    before the listing: ``("cut", path)``, a name holding a ``SPLIT_AT`` character when the
    consumer cuts names (``cut``); ``("link", path)``, a symbolic link the listing may print
    (``listed``) that leads out of ``workspace`` (resolved): the listing prints its own name,
    inside, the program fed follows it (``find . | xargs cat`` beside ``leak ->
    /etc/passwd``); ``("cut", TOO_MANY)`` past ``MAX_LISTED_ENTRIES``. One walk for both."""
    roots = [f.rstrip("/") or "/" for f in folders]
    for path in made if cut else ():
        if any(path.startswith(r + "/") and SPLIT_AT.search(path[len(r):]) for r in roots):
            return "cut", path
    for path in made_links:
        if any(path.startswith(r + "/") for r in roots) and listed(path):
            return "link", path  # where it leads is not followed: any place
    top = workspace.rstrip("/") + "/"
    for seen in _folders_under(roots):
        if seen is None:
            return "cut", TOO_MANY
        if cut and seen.split is not None:
            return "cut", seen.split
        out = next((link for link in seen.links
                    if listed(link) and not _target(link).startswith(top)), None)
        if out is not None:
            return "link", out
    return None


def _no_link(_path: str) -> bool:
    return False


_NO_LINK: Callable[[str], bool] = _no_link


def _folders_under(roots: Iterable[str]) -> Iterator[_Seen | None]:
    """Each folder under ``roots`` as ``_folder`` reads it (links to folders are not
    descended into, as listings do not follow them); None, then no more, once more than
    ``MAX_LISTED_ENTRIES`` entries were read."""
    budget = MAX_LISTED_ENTRIES
    stack = list(roots)
    while stack:
        seen = _folder(stack.pop())
        if seen is None:
            continue
        budget -= seen.entries
        if budget < 0:
            yield None
            return
        yield seen
        stack.extend(seen.folders)


def links_listed(argv: list[Word], workspace: str) -> Callable[[str], bool]:
    """Which symbolic links (absolute paths) a listing may print: ``find -type f`` and
    ``-type d`` print none (unless told to follow links), ``-name PAT`` only those named
    so; ``rg -l`` and ``grep -rl`` skip the links they meet; ``git ls-files`` and git's
    name listings print what git tracks (not an untracked ``.venv/bin/python``), and ``git
    status`` untracked files too, unless ``-uno``."""
    name = (argv[0].value or "").rsplit("/", 1)[-1] if argv else ""
    vals = [w.value or "" for w in argv[1:]]
    if name == "find" and not {"-L", "-follow", "-xtype"} & set(vals):
        types = {vals[i + 1] for i, v in enumerate(vals[:-1]) if v == "-type"}
        if types and "l" not in ",".join(types):
            return _NO_LINK
        names = [vals[i + 1] for i, v in enumerate(vals[:-1]) if v in ("-name", "-iname")]
        if names and not {"-o", "-or", "!", "-not"} & set(vals):
            return lambda path: any(fnmatch.fnmatch(os.path.basename(path), n) or (
                fnmatch.fnmatch(os.path.basename(path).lower(), n.lower())) for n in names)
    if name == "rg" and not {"-L", "--follow"} & set(vals):
        return _NO_LINK
    if name in ("grep", "egrep", "fgrep") and not any(
            v == "--dereference-recursive" or (v[:1] == "-" and v[1:2] != "-" and "R" in v)
            for v in vals):
        return _NO_LINK
    untracked = {"-o", "--others"} & set(vals) if "status" not in vals else not {
        "-uno", "--untracked-files=no"} & set(vals)
    if name == "git" and not untracked:
        root = Path(workspace)
        return lambda path: tracked(root, os.path.relpath(path, workspace)) is not False
    return lambda _path: True


def _target(link: str) -> str:
    """Where ``link`` leads, resolved by the kernel in one open (a quarter of
    ``os.path.realpath``'s time, which looks at each component: a pnpm tree holds
    thousands of links); ``realpath`` for a link that leads nowhere, or without ``/proc``."""
    try:
        fd = os.open(link, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return os.path.realpath(link)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(link)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class _Seen:
    """One folder's names as ``split_name`` last read them."""

    changed: tuple[int, int, int]
    """The folder's inode, ``st_mtime_ns`` and ``st_ctime_ns`` then: adding, removing or
    renaming an entry changes both times, and setting the modification time back (``touch
    -d``) changes the inode change time, which no command can set."""
    entries: int
    split: str | None
    folders: tuple[str, ...]
    links: tuple[str, ...]
    """Its entries that are symbolic links (to a file or a folder)."""


_SEEN: dict[str, _Seen] = {}
MAX_SEEN_FOLDERS = 100_000
RACY_NS = 2_000_000_000
"""A folder changed this recently may change again within the same clock tick, which its
times would not show (git's "racy" entries): it is read again next time."""


def _folder(path: str) -> _Seen | None:
    """What one folder holds, from ``_SEEN`` while its times are unchanged."""
    try:
        st = os.stat(path)
        changed = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        seen = _SEEN.get(path)
        if seen is not None and seen.changed == changed:
            return seen
        with os.scandir(path) as it:
            entries = list(it)
    except OSError:
        return None
    split = next((e.path for e in entries if SPLIT_AT.search(e.name)), None)
    folders = tuple(e.path for e in entries if _is_folder(e))
    links = tuple(e.path for e in entries if e.is_symlink())
    seen = _Seen(changed, len(entries), split, folders, links)
    if time.time_ns() - max(changed[1:]) > RACY_NS:
        if len(_SEEN) >= MAX_SEEN_FOLDERS:
            _SEEN.clear()
        _SEEN[path] = seen
    return seen


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
