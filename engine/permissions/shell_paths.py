"""Judging the paths a shell command reads and writes, from every directory it may run in.

A word is expanded as the shell would (braces, globs matched now), each candidate resolved from
each working directory the command may be in (``cd`` changes it), and judged by
``paths.judge_literal``. A recursive permission change that reaches the whole workspace is
destructive.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from engine.permissions.c_includes import IncludeWalk, Preprocess, hidden_setting
from engine.permissions.effect import Effect, Loads, program_name
from engine.permissions.globbing import GLOB, glob_matches
from engine.permissions.made_files import MadeFiles
from engine.permissions.paths import (
    SENSITIVE_NAMES,
    Root,
    holds_credentials,
    is_private,
    is_startup_file,
    judge_literal,
)
from engine.permissions.programs import INTERPRETERS, SHELLS
from engine.permissions.shell_values import LISTED_TEXT
from engine.permissions.small_files import small_file
from engine.permissions.words import MAX_PATH_WORDS, Word, brace_words
from engine.workspace.index import tracked, tracked_under

DecisionValue = Literal["allow", "ask", "deny"]
STRICTNESS: dict[str, int] = {"": 0, "allow": 0, "ask": 1, "deny": 2}
Pushed = tuple[tuple[Path | None, ...], bool]
"""A ``pushd``'s entry on the folder stack: the folders it may have left (None: one only
known at run time), and whether it surely ran and moved (else a ``popd`` may also go to the
entry below, or stay)."""
UNKNOWN_PUSH: Pushed = ((None,), True)

SECRETS_FILE = re.compile(r"(?!.*\.(?:example|sample|template|tmpl|dist|defaults?)$)(?:"
                          + "|".join(fnmatch.translate(p) for p in SENSITIVE_NAMES) + ")")
"""A workspace file of secrets (``.env``, ``*.pem``; not a template such as
``.env.example``): printed, a person sees it first; read by a command that also sends files,
its input or run-time text to another machine, it may be what is sent."""
NULL_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty",
                          "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full"})
_SYSTEM_FACT = re.compile(
    r"/proc/\d+/(?:status|stat|statm|limits|comm|cgroup|cmdline|oom_score(?:_adj)?|io|sched|"
    r"wchan|maps|smaps_rollup|mountinfo|"
    r"net/(?:tcp|udp|unix|dev|route|sockstat)6?)|"
    r"/proc/(?:sys/(?:kernel|fs|net|vm)/[\w./-]+|"
    r"stat|vmstat|diskstats|swaps|filesystems|partitions|pressure/(?:cpu|memory|io))|"
    r"/sys/fs/cgroup/[\w.-]+\.(?:max|current|stat|events|peak|controllers|weight)")
"""Files of the kernel's that say how a process or the system is doing, as ``ps``, ``ss``,
``lsof`` and ``free`` print (not ``/proc/N/environ``, a process's secrets; not its ``fd``
table, which ``grep -R`` would read through)."""


def system_fact(path: str) -> bool:
    """A file that says what system this is or how it is doing: read like the workspace."""
    return path in SYSTEM_FACTS or _SYSTEM_FACT.fullmatch(path) is not None


SYSTEM_FACTS = frozenset({
    "/etc/os-release", "/usr/lib/os-release", "/etc/lsb-release", "/etc/debian_version",
    "/etc/redhat-release", "/etc/alpine-release", "/etc/issue", "/etc/hostname",
    "/etc/timezone", "/proc/version", "/proc/cpuinfo", "/proc/meminfo", "/proc/loadavg",
    "/proc/uptime", "/sys/fs/cgroup/cgroup.controllers"})
"""Files outside the workspace that say what system this is, as ``uname`` and ``nproc``
do, and nothing of anyone's: read like the workspace (``check-path`` still calls them
outside)."""
_STREAM = re.compile(r"/dev/(?:std(in|out|err)|fd/(\d+))|/proc/self/fd/(\d+)")


def no_file(path: str | None) -> bool:
    """``/dev/null``, ``/dev/stdout``, ``/dev/fd/N``: written, no file changes (what a
    redirection put behind a descriptor is judged by the shell's walker)."""
    return path in NULL_DEVICES or stream_descriptor(path) is not None


def unquoted_text(text: str) -> str:
    """A word's text without its quotes and braces (``"${tmp}"`` is ``$tmp``): the same
    path written and then moved, however each was quoted."""
    return re.sub(r"\$\{([A-Za-z_]\w*)\}", r"$\1", text.replace('"', "").replace("'", ""))


def stream_descriptor(path: str | None) -> int | None:
    """The descriptor ``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` or
    ``/proc/self/fd/N`` names, else None. Not devices: each opens again whatever its
    descriptor holds. Where that is the engine's pipes, writing one is harmless; where a
    redirection put a file there (``tee /dev/stdin < f``), the open empties that file."""
    m = _STREAM.fullmatch(path or "")
    if m is None:
        return None
    return ("in", "out", "err").index(m.group(1)) if m.group(1) else int(m.group(2) or m.group(3))


def strictest(*decisions: str) -> DecisionValue:
    """``deny`` over ``ask`` over ``allow``."""
    best: DecisionValue = "allow"
    for d in decisions:
        if STRICTNESS[d] > STRICTNESS[best]:
            best = d  # type: ignore[assignment]
    return best


def _module_name(base: Path | None, entry: str) -> str:
    """The module an entry of a folder on the import path provides ("" for none)."""
    stem, dot, ext = entry.partition(".")
    if dot and ext.split(".")[-1] in ("py", "pyc", "so", "pyd"):
        return stem
    if not dot and base is not None and os.path.isfile(os.path.join(base, entry, "__init__.py")):
        return entry
    return ""


def _upward(base: str, top: str, upward: bool) -> list[str]:
    """``base``, then (when ``upward``) each parent folder up to ``top`` when inside it."""
    folders = [base]
    real = os.path.realpath(base)
    while upward and real != top and real.startswith(top + os.sep):
        real = os.path.dirname(real)
        folders.append(real)
    return folders


_SCRATCH_DIRS = frozenset({"/tmp", "/var/tmp", "/run/lock", "/dev/shm"})
"""World-writable sticky folders where a program makes its lock files."""
_CONFIG_LIMIT = 1 << 20


def _names_code(path: str, loads: Loads, top: str) -> str:
    """Why the start-up file at ``path`` runs code ("" when it does not): without ``keys``
    it is code; with them, when it mentions one; ``runs`` (``runs_in``, with the workspace's
    ``top``) judges it itself. What cannot be read as a small regular file may (a fifo, a
    dangling link, a megabyte of settings)."""
    if loads.runs_in is not None:
        return loads.runs_in(path, top)
    if loads.runs is not None:
        return loads.runs(path)
    if not loads.keys:
        return "code that runs"
    what = "it names code to load"
    data = small_file(path, _CONFIG_LIMIT)
    if data is None:
        return what
    text = data.decode("utf-8", "replace").lower()
    return what if any(k in text for k in loads.keys) else ""


SAME_SHELL_WRAPPERS = frozenset({"builtin", "command", "time"})
"""Prefixes after which ``cd`` is still the shell's builtin (``env cd`` runs a program)."""


_ONE_EXPANSION = re.compile(r'"?(?:\$\{?[A-Za-z_]\w*\}?|\$\([^()]*\))"?')
"""A word that is one variable or one command's output, nothing around it."""
OBJECT_NAME = "0" * 40
"""What a word holding an object's name (``git rev-parse HEAD``) stands for as a path."""


class PathJudge:
    """The path half of the shell walker: needs the workspace, roots and working directories."""

    ws: Path
    roots: Sequence[Root]
    cwds: list[Path | None]
    """Every folder the shell may be in now (None: one only known at run time)."""
    conditional: int
    """Above 0 inside a branch, a loop or a list after its first command: what runs may not."""
    oldpwd: Path | None
    pushed: list[Pushed]
    known: dict[str, list[str]]
    unknown: set[str]
    tainted: set[str]
    taint_all: bool
    cdable_vars: bool
    names_cdpath: bool
    env: Mapping[str, str]
    secrets: list[str]
    private: list[str]
    secret_files: list[str]
    dashless_vars: set[str]
    unnamed: list[str]
    written: set[str]
    written_unknown: set[str]
    facts: list[str]
    """``SYSTEM_FACTS`` files the command reads."""
    made: MadeFiles
    globbed: dict[tuple[str, str, frozenset[str], int], list[str] | None]
    """Files this command wrote before (normalised relative or absolute paths)."""
    glob_options: frozenset[str]
    """``shopt`` options that widen globs which the command may set (``globbing``)."""
    stream_writes: list[tuple[int, str, bool]]
    """Descriptors opened for writing by name (``stream_descriptor``), with the name and
    whether the open empties: a file a redirection put on one is opened again, emptied or
    appended to (judged with the redirections, at the end)."""

    def _judge_effect(self, e: Effect, moves_shell: bool = True) -> tuple[DecisionValue,
                                                                        list[str]]:
        """The decision on the paths ``e`` touches; a ``cd`` the shell runs
        (``moves_shell``) moves it."""
        self._made_if_missing(e)
        d1, r1 = self._judge_paths(e.reads, False)
        d2, r2 = self._judge_paths(e.writes, True)
        chdir = [self._previous(e, w) for w in e.chdir]
        d3, r3 = self._judge_paths(chdir, False)
        replaced = [*self._replaced(e), *self._checkout_of_file(e), *self._moved_tag(e)]
        shadowed = [*self._shadowed(e), *self._included(e)]
        if moves_shell and e.argv and e.argv[0].value == "dirs" and any(
                w.value is None or (w.value[:1] == "-" and "c" in w.value) for w in e.argv[1:]):
            self.pushed = [UNKNOWN_PUSH] * len(self.pushed)  # dirs -c: a later popd fails
        if moves_shell and e.argv and e.argv[0].value in ("cd", "pushd", "popd") and \
                set(e.wrappers) <= SAME_SHELL_WRAPPERS:  # git -C, env cd: their own only
            for w in chdir:
                self._change_folder(w, e.argv[0].value == "pushd")
        return (strictest(d1, d2, d3, "deny" if replaced else "allow",
                          "ask" if shadowed else "allow"),
                [*replaced, *shadowed, *r1, *r2, *r3])

    def _made_if_missing(self, e: Effect) -> None:
        """``flock FILE``: a read of a file that is there (through a link, where it leads);
        a write where it is missing, or may be (a path only known at run time). A lock that
        leads into a scratch folder every user may write (``/tmp/deploy.lock``) is what the
        program is for: an existing file keeps its content, and no name there is anyone's
        work."""
        for who, w in e.creates:
            found = self.resolved_files(w)
            if found and all(os.path.dirname(p) in _SCRATCH_DIRS for p in found):
                continue
            if found and all(os.path.exists(p) for p in found):
                e.reads.append(w)
            else:
                e.writes.append(w)
                e.add("write", f"{who} makes {w.shown} when it is missing")
        e.creates.clear()

    def _previous(self, e: Effect, w: Word) -> Word:
        """``cd -`` and ``cd "$OLDPWD"`` go back to the folder a cd of this command left;
        ``popd`` to the one ``pushd`` left (else where they go is only known at run time)."""
        back = None
        if w.value is None and w.text.strip('"').replace("{", "").replace("}", "") == \
                "$OLDPWD":
            if "OLDPWD" in self.known or "OLDPWD" in self.unknown:
                return w  # OLDPWD=..; cd -: the value assigned, a folder only known at run time
            back = self.oldpwd
        elif w.value is None and w.text == "popd" and self.pushed:
            folders, sure = self.pushed.pop()
            if not sure:  # the pushd may not have run or failed: popd may go to the entry
                older = self.pushed[-1][0] if self.pushed else ()  # below, or stay
                folders = (*folders, *self.cwds, *older)
                self.pushed = [UNKNOWN_PUSH] * len(self.pushed)
            if self.conditional:  # a popd that may not run: the stack is either, and the
                self.pushed = [UNKNOWN_PUSH] * len(self.pushed)  # folder may stay
                folders = (*folders, *self.cwds)
            folders = tuple(dict.fromkeys(folders))
            if len(folders) > 1 and None not in folders:
                self.cwds = list(folders)  # each folder it may return to: "." from each
                return Word(".", w.text)
            back = folders[0] if len(folders) == 1 else None
        elif w.value is None and w.text.startswith(("popd ", "pushd ")):
            self.pushed = [UNKNOWN_PUSH] * len(self.pushed)  # popd -n, pushd +1: reordered
        elif w.value is None and w.text == "$HOME" and not (
                self.taint_all or {"HOME"} & (self.tainted | self.unknown | set(self.known))):
            home = self.env.get("HOME")  # cd alone: the home folder, as the command starts
            return w if not home else Word(home, w.text)
        return w if back is None else Word(str(back), w.text)

    def _shadowed(self, e: Effect) -> list[str]:
        """``python -m json.tool`` run where a file or package is named like a standard
        module (``json/``, ``argparse.py``): that file is the code that runs. Likewise a
        program's start-up code file (``e.loads_here``) in the working directory."""
        loaded = [why for loads in e.loads_here for why in self._loaded_here(e, loads)]
        if loaded or not e.imports_here:
            return loaded[:1]
        own = e.imports_here.split(".")[0]
        for written in sorted({*self.written, *self.made.files}):
            path = os.path.join(self.ws, written)
            if any(os.path.dirname(os.path.normpath(path)) == os.path.normpath(str(base))
                   for base in self._started_in(e) if base is not None) and \
                    _module_name(None, os.path.basename(path)) in (
                        *sys.stdlib_module_names, own):
                self.unnamed.append(f"python imports {written}, which this command wrote")
                return [f"python imports {written}, which this command wrote, instead of "
                        "the library's module"]
        for base in self._started_in(e):
            try:
                names = os.listdir(base) if base is not None else None
            except OSError:
                names = None
            if names is None:
                return ["python -m runs from a folder only known at run time: a module there "
                        "may stand in for a standard one"]
            found = sorted(n for n in names if _module_name(base, n) in sys.stdlib_module_names
                           or _module_name(base, n) == own)
            if found:
                return [f"python -m imports from its folder first: {found[0]} there stands in "
                        f"for a module it runs ({own} or a standard one)"]
        return []

    def _started_in(self, e: Effect) -> list[Path | None]:
        """The folders the program starts in: the shell's, or where a wrapper's ``-C`` puts
        it (``env -C src python3 -m this``: ``src/this.py`` runs); None where that is only
        known at run time."""
        if not e.starts_in:
            return list(self.cwds)
        out: list[Path | None] = []
        for base in self.cwds:
            folder: Path | None = base
            for w in e.starts_in:
                folder = None if folder is None or w.value is None or w.value[:1] == "~" \
                    else Path(os.path.normpath(os.path.join(folder, w.value)))
            out.append(folder)
        return out

    def _loaded_here(self, e: Effect, loads: Loads) -> list[str]:
        for base in self._started_in(e):
            if base is None:
                return [f"{e.argv[0].shown} runs in a folder only known at run time: code "
                        "there may load when it starts"]
            wrote = {os.path.normpath(os.path.join(str(base), w)) for w in self.written} | {
                os.path.normpath(f) for f in self.made.files}  # written from another folder
            for folder in _upward(str(base), os.path.realpath(self.ws), loads.upward):
                for name in loads.names:
                    path = os.path.join(folder, name)
                    shown = os.path.relpath(path, base)
                    if os.path.normpath(path) in wrote:  # never run unseen, as a file
                        # written and then run (what it holds is not judged here)
                        self.unnamed.append(f"{e.argv[0].shown} loads {shown}, which this "
                                            "command wrote")
                        return [f"{e.argv[0].shown} loads {shown}, which this command "
                                "wrote: what it holds may run"]
                    what = _names_code(path, loads, os.path.realpath(self.ws)) \
                        if os.path.lexists(path) else ""
                    if what:
                        return [f"{e.argv[0].shown} loads {shown}: {what}"]
            if loads.missing and not any(os.path.lexists(os.path.join(str(base), name))
                                         for name in loads.names) and \
                    self._may_appear(str(base), loads):
                return [f"{e.argv[0].shown} {loads.missing}"]
        return []

    @staticmethod
    def _may_appear(base: str, loads: Loads) -> bool:
        """Whether a start-up file missing now matters (``Loads.missing_if``): its project
        is there."""
        return not loads.missing_if or any(os.path.lexists(os.path.join(base, n))
                                           for n in loads.missing_if)

    # ------------------------------------------------------------ C includes (c_includes)

    def _included(self, e: Effect) -> list[str]:
        """``gcc -E a.c``, ``gcc -fsyntax-only``: every file the sources include is read and
        printed though the command line does not name it. One that may not be read unasked,
        a name only known when it runs, one this command wrote first, or a search changed by
        a variable (``CPATH``) or made from a folder only known then, asks."""
        for job in e.preprocesses:
            named = {*self.env, *self.tainted, *self.known, *self.unknown}
            setting = next((n for n in sorted(named) if hidden_setting(n)), None)
            if setting or self.taint_all:
                return [f"{setting or 'a sourced file'} may give {job.how} include folders "
                        "or options the command line does not show"]
            for base in self._started_in(e):
                if base is None:
                    return [f"{job.how} runs in a folder only known at run time: what the "
                            "sources include there is not judged"]
                why = self._include_walk(job, str(base))
                if why:
                    return [why]
        return []

    def _include_walk(self, job: Preprocess, base: str) -> str:
        """``job``'s includes followed from ``base`` (``IncludeWalk``), its globs matched as
        bash will; a file this command wrote or made on the way is never read as it is now."""
        sources: list[str] = []
        for w in job.sources:
            items = brace_words(w.value or "", MAX_PATH_WORDS) if w.expandable else [w.value]
            for item in items or [None]:
                found = self._glob(item, base) if item and w.expandable and GLOB.search(
                    item) else []
                if item is None or found is None:
                    return f"{w.shown} expands to more paths than are judged"
                if any(p.startswith("@") for p in found):  # @x.c: options read from x.c
                    return f"{w.shown} matches a name starting with @: a file of options"
                sources.extend(os.path.join(base, p) for p in found or [item]
                               if p != "/dev/null")
        made = [*self.made.files, *self.made.dirs, *self.made.links, *self.made.copies,
                *(os.path.normpath(os.path.join(base, w)) for w in self.written)]

        def wrote(path: str) -> bool:
            plain = os.path.normpath(path)
            return self.made.resolve(plain) != plain or any(
                plain == p or plain.startswith(p.rstrip("/") + "/") for p in made)

        def judge(path: str) -> str:
            decision, why = self._judge_one(path, False)
            return "" if decision == "allow" else why or "a file that may not be read unasked"

        walk = IncludeWalk(base, [os.path.join(base, w.value or "") for w in job.quote_dirs],
                           [os.path.join(base, w.value or "") for w in job.dirs], wrote, judge,
                           made_any=bool(made or self.made.links))
        why = walk.run(sources, job.stdin)
        if walk.written:
            self.unnamed.append(why)  # never run unseen, as a file written and then loaded
        return why

    def _workspace_program(self, text: str) -> str:
        """The workspace file a command line runs first, as its program (``./run.sh``) or a
        shell's or interpreter's script (``sh scripts/run.sh``, ``python3 x.py``); ""."""
        try:
            words = shlex.split(text, posix=True)
        except ValueError:
            return ""
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0], re.S):
            words = words[1:]
        if not words:
            return ""
        first = words[0]
        if program_name(Word.of(first)) in SHELLS | INTERPRETERS:  # sh x.sh: x.sh runs
            first = next((w for w in words[1:] if not w.startswith("-")), "")
        elif "/" not in first:
            return ""  # ssh: found on PATH, not in the folder
        if not first or first.startswith("~"):
            return ""
        ws = os.path.realpath(self.ws)
        for base in self._current():
            path = os.path.realpath(os.path.join(base, first))
            if (path == ws or path.startswith(ws.rstrip("/") + "/")) and os.path.isfile(path):
                return first
        return ""

    def _replaced(self, e: Effect) -> list[str]:
        """Reasons for each file holding work that the command replaces whole, unless it
        reads it first (``sort -o f f`` sorts in place; ``strace -o src/app.py`` destroys it,
        ``openssl enc -in f -out f`` empties f before reading it)."""
        sources = [w for w in (*e.reads, *e.writes) if w not in e.replaces]
        if not e.replaces or any(unquoted_text(w.text) in self.written_unknown
                                 if w.value is None else
                                 os.path.normpath(w.value) in self.written
                                 for w in sources):  # mv "$tmp" f: an edit made just before
            return []
        read = {path for w in e.reads for path in self.resolved_files(w)} if e.reads_first \
            else set()
        out: list[str] = []
        for w in e.replaces:
            for shown, path in self._replaced_files(w, e):
                why = self.holds_work(path) if path not in read else ""
                if why:
                    out.append(f"replaces {shown}, {why}, " + (
                        "whose content is lost" if e.shows_output else
                        "with output the command line does not show"))
                    break
        return out

    def _checkout_of_file(self, e: Effect) -> list[str]:
        """``git checkout a.txt``: one word that names no branch or tag but a file git
        tracks is a path, so git overwrites the file from the index (its uncommitted
        changes are lost, as with ``git checkout -- a.txt``)."""
        words = [w.value for w in e.argv[1:]]
        if not e.argv or program_name(e.argv[0]) != "git" or None in words or \
                "checkout" not in words:
            return []
        before, rest = words[:words.index("checkout")], words[words.index("checkout") + 1:]
        names = [w for w in rest if w not in ("-q", "--quiet")]
        if len(names) != 1 or (names[0] or "-").startswith("-") or any(
                w not in ("-c", "--no-pager", "-P") and not w.startswith("alias.")
                for w in before if w):  # git -C dir checkout: another folder
            return []
        name = str(names[0])
        ws = os.path.realpath(self.ws)
        if _names_ref(os.path.join(ws, ".git"), name):
            return []
        for base in self._current():
            path = os.path.realpath(os.path.join(base, name))
            rel = os.path.relpath(path, ws)
            if rel.startswith(".."):
                continue
            known = tracked(Path(ws), rel)
            if known or (known is False and rel != "." and os.path.isdir(path)):
                what = "a file git tracks" if known else "a folder of the repository"
                return [f"git checkout {name}: {name} is {what} and no branch, so its "
                        "uncommitted changes are lost"]
        return []

    def _moved_tag(self, e: Effect) -> list[str]:
        """``git tag -f v1.0``: a tag that exists is moved, and tags keep no reflog, so
        where it pointed is lost (as with ``git tag -d``); a new name is only created."""
        words = [w.value for w in e.argv[1:]]
        if not e.argv or program_name(e.argv[0]) != "git" or None in words or \
                "tag" not in words:
            return []
        before, rest = words[:words.index("tag")], [str(w) for w in words[words.index("tag")
                                                                           + 1:]]
        if any(w not in ("-c", "--no-pager", "-P") and not re.fullmatch(r"\w[\w.-]*=.*", w or "")
               for w in before if w):
            return []  # git -C dir tag: another repository
        flags = "".join(w[1:] for w in rest if re.fullmatch(r"-[a-zA-Z]+", w))
        if not ("f" in flags or "--force" in rest) or set(flags) & set("dlv") or {
                "--delete", "--list", "--verify"} & set(rest):
            return []
        names = [w for i, w in enumerate(rest) if not w.startswith("-") and not (
            i > 0 and (rest[i - 1] in ("-m", "-F", "-u", "--message", "--file", "--local-user",
                                       "--cleanup") or re.fullmatch(r"-[a-zA-Z]*[mFu]",
                                                                    rest[i - 1])))]
        if names and _has_tag(os.path.join(os.path.realpath(self.ws), ".git"), names[0]):
            return [f"git tag -f {names[0]} moves the tag {names[0]}, which keeps no reflog: "
                    "where it pointed is lost"]
        return []

    def _replaced_files(self, w: Word, e: Effect) -> list[tuple[str, str]]:
        """The files replacing ``w`` replaces: itself, or for a folder (``cp -f y/a.txt .``,
        ``-t DIR``) the file of each source's name in it."""
        out: list[tuple[str, str]] = []
        for path in self.resolved_files(w):
            if not os.path.isdir(path):
                out.append((w.shown, path))
                continue
            for source in (*e.reads, *e.writes):  # mv's sources are writes
                name = os.path.basename((source.value or "").rstrip("/"))
                if source is not w and source.value and not source.expandable and name and \
                        name not in (".", ".."):
                    out.append((f"{w.shown.rstrip('/')}/{name}", os.path.join(path, name)))
            out.extend((f"{w.shown.rstrip('/')}/{name}", os.path.join(path, name))
                       for name in e.fetched if name not in ("", ".", ".."))
        return out

    def holds_work(self, path: str) -> str:
        """Why the file at ``path`` (resolved) holds work that replacing it would lose, or
        "": a file git tracks, or any existing file where git cannot tell (no repository,
        an index not read). An untracked file in a repository (a log, a build output) and a
        new file hold none; a file outside the workspace is the path rules' to judge."""
        ws = os.path.realpath(self.ws)
        if not path.startswith(ws.rstrip("/") + "/") or not os.path.isfile(path):
            return ""
        known = tracked(Path(ws), os.path.relpath(path, ws))
        return "a file git tracks" if known else "" if known is False else "an existing file"

    def folder_work(self, path: str) -> str:
        """Why writing "into" the folder at ``path`` (resolved) may lose work, or "". bash
        cannot open a folder with ``>``, so a redirection's folder stands for the files
        under it (``find src -exec sh -c 'cmd > "$1"' _ {} \\;``): any of them git tracks,
        or any at all where git cannot tell."""
        ws = os.path.realpath(self.ws)
        if not (path == ws or path.startswith(ws.rstrip("/") + "/")) or \
                not os.path.isdir(path):
            return ""
        rel = os.path.relpath(path, ws)
        known = tracked_under(Path(ws), rel)
        if known:
            return f"a folder of files git tracks ({rel}/...)"
        if known is None:
            with os.scandir(path) as entries:
                return f"a folder of existing files ({rel}/...)" if any(entries) else ""
        return ""

    def resolved_files(self, w: Word) -> list[str]:
        """The file ``w`` names from each known folder the command may be in; a glob
        (``"$f"`` of ``for f in data/*.csv``), each file it matches now."""
        if w.value is None:
            return []
        out: list[str] = []
        for base in self._current():
            names = [w.value]
            if w.expandable and GLOB.search(w.value):
                names = self._glob(w.value, str(base)) or []
            for name in names:
                try:
                    out.append(os.path.realpath(os.path.join(base, name)))
                except OSError:  # /proc/1/cwd/..: a link not followed is no file replaced
                    continue
        return out

    def _current(self) -> list[Path]:
        """The folders the next command may run in that are known."""
        return [base for base in self.cwds if base is not None]

    def _change_folder(self, w: Word, push: bool) -> None:
        """After ``cd w`` the shell is in ``w`` seen from each folder it may have been in;
        where the cd may not run (a branch, a loop, after ``&&``) or may fail (the folder is
        not there now), also still where it was."""
        before = list(self.cwds)
        there = [self._resolved_dir(w, base) for base in before]
        if self.cdable_vars and re.fullmatch(r"[A-Za-z_]\w*", w.value or ""):
            there = [t if t is not None and t.is_dir() else None for t in there]  # cd v: $v
        if self._searches_cdpath(w):  # CDPATH=..; cd up: ../up first, where that is
            there = [None for _ in there]
        fails = any(  # the path as bash opens it: cd ./src/.. fails when src is not there
            t is not None and not os.path.isdir(os.path.join(base or self.ws, w.value or ""))
            for base, t in zip(before, there, strict=True))
        sure = len(before) == 1 and not fails and not self.conditional and None not in there
        # (a cd into a folder only known at run time may fail: OLDPWD is then not set by it)
        if push:  # a pushd that may fail or not run may push nothing: popd's folder unknown
            self.pushed.append(((before[0],), True) if sure else (tuple(before), False))
        folders = [*before, *there] if self.conditional or fails else there
        self.cwds = list(dict.fromkeys(folders))
        self.oldpwd = before[0] if sure else None  # cd - after a cd that may not run: unknown
        if not self.conditional:  # the cd sets OLDPWD, whatever a command assigned before
            self.known.pop("OLDPWD", None)
            self.unknown.discard("OLDPWD")

    def _searches_cdpath(self, w: Word) -> bool:
        """``cd NAME`` (not ``./NAME``, ``../NAME`` or ``/NAME``) where CDPATH may be set (the
        command names it anywhere, or its environment has it): bash looks in each CDPATH
        folder before this one."""
        cdpath = self.names_cdpath or bool(self.env.get("CDPATH"))
        return cdpath and w.value is not None and not w.value.startswith(("/", "./", "../")) \
            and w.value not in (".", "..", "-")

    def _resolved_dir(self, w: Word, base: Path | None) -> Path | None:
        if w.value is None or w.expandable or (base is None and not w.value.startswith("/")):
            return None
        return Path(os.path.realpath(self.made.resolve(os.path.join(base or self.ws, w.value))))

    def _judge_paths(self, words: list[Word], for_write: bool) -> tuple[DecisionValue, list[str]]:
        decision: DecisionValue = "allow"
        reasons: list[str] = []
        for w in words:
            d, reason = self._judge_word(w, for_write)
            if STRICTNESS[d] > STRICTNESS["allow"] and reason not in reasons:
                reasons.append(reason)
            decision = strictest(decision, d)
        return decision, reasons

    def _numbered(self, text: str) -> str | None:
        """The path a word names when what is only known at run time in it is numbers,
        each written ``0`` (the walker knows); None otherwise."""
        return None

    def _judge_word(self, w: Word, for_write: bool) -> tuple[DecisionValue, str]:
        if w.value is None and w.dynamic == "subst" and w.text.startswith(("<(", ">(")):
            return "allow", ""  # a pipe to or from a command judged on its own
        if w.value is None and not for_write and (numbered := self._numbered(w.text)):
            return self._judge_word(Word(numbered, w.text), for_write)  # lsof -p "$pid":
            # digits, a name in the working folder at most; /proc/"$pid"/status
        if w.value is None and not for_write and w.dashless and _ONE_EXPANSION.fullmatch(w.text):
            return self._judge_word(Word(OBJECT_NAME, w.text), for_write)  # git diff "$base":
            # an object's or a ref's name (never /, .., or -): a name in the working folder
        if w.value is None and not for_write and w.dashless and (
                named := self._objects_named(w.text)) is not None:
            return self._judge_word(Word(named, w.text), for_write)  # "$base"..HEAD
        if w.value is None:
            return self._judge_unknown(w, for_write)
        if w.value.startswith("~/") and w.text == w.value:  # a rule's own ~/.ssh/known_hosts
            home = self.env.get("HOME") if "HOME" not in self.tainted else None
            return self._judge_word(Word(f"{home}{w.value[1:]}", w.text) if home else Word(
                None, w.text, "var"), for_write)
        if for_write and w.text == LISTED_TEXT:  # xargs sed -i, while read f; do .. > "$f"
            self.unnamed.append(f"changes {w.value}: files another program lists at run time")
        if (fd := stream_descriptor(w.value)) is not None and (for_write or fd <= 2):
            if for_write:
                self.stream_writes.append((fd, str(w.value), True))
            return "allow", ""  # read: the standard input, output or error (cat /dev/fd/0)
        if w.value == "-" or w.value in NULL_DEVICES:
            return "allow", ""
        candidates = self._candidates(w)
        if candidates is None:
            if for_write:
                self.unnamed.append(f"writes {w.shown}: more paths than are judged")
            return "ask", f"{w.shown} expands to more paths than are judged"
        decision: DecisionValue = "allow"
        reason = ""
        for candidate in candidates:
            d, r = self._judge_one(candidate, for_write)
            if STRICTNESS[d] > STRICTNESS[decision]:
                decision, reason = d, r
        return decision, reason

    def _objects_named(self, text: str) -> str | None:
        """``"$base"..HEAD``, ``"$a...$b"``: the path a word names when every expansion in
        it is a variable holding an object id (hex, never ``/`` or ``..``), each written as
        one; None when anything else in it is only known at run time."""
        out = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda m: OBJECT_NAME if m.group(1) in
                     self.dashless_vars else m.group(0), text).replace('"', "")
        return None if "$" in out or "`" in out or "'" in out or "\\" in out else out

    def _judge_unknown(self, w: Word, for_write: bool) -> tuple[DecisionValue, str]:
        """A path only known at run time: asked (an unset one fails closed; a startup file's
        name in an unknown folder is refused)."""
        if w.unset:
            return ("deny" if for_write else "ask", f"{w.text} is unset: the path fails closed")
        tail = re.sub(r"[\"']", "", w.text).rsplit("/", 1)[-1]
        if for_write and "/" in w.text and is_startup_file(f"/unknown/{tail}"):
            return "deny", f"writes {tail} in a folder only known at run time: a startup " \
                           "file (python's, a shell's) runs later"
        if for_write:  # which file it changes cannot be shown: never run unasked
            self.unnamed.append(f"writes {w.text}, a path only known at run time")
        else:  # which file it reads cannot be shown: it may be someone's
            self.private.append(f"{w.text} (a path only known at run time)")
        return "ask", f"path {w.text} is only known at run time"

    def _candidates(self, w: Word) -> list[str] | None:
        """The paths ``w`` stands for: its brace words and every match of their globs; None
        when its braces make more words than ``MAX_PATH_WORDS``."""
        value = w.value or ""
        if not w.expandable:
            return [value]
        items = brace_words(value, MAX_PATH_WORDS)
        if items is None:
            return None
        out: list[str] = []
        for item in items:
            out.append(item)
            if GLOB.search(item):
                for base in self.cwds:
                    found = self._glob(item, str(base or self.ws))
                    if found is None:
                        return None  # too many to follow: only known at run time
                    out.extend(found)  # every match: a link out of the workspace may be
                    # the last of thousands
        return out

    def _glob(self, pattern: str, base: str) -> list[str] | None:
        """``glob_matches`` from ``base`` as bash will match it here: under the options the
        command may set, in the folders as what it made so far leaves them; each walk once."""
        key = (pattern, base, self.glob_options, self.made.changes)
        if key not in self.globbed:
            self.globbed[key] = glob_matches(pattern, base, self.glob_options, self.made)
        return self.globbed[key]

    def _judge_one(self, path: str, for_write: bool) -> tuple[DecisionValue, str]:
        decision: DecisionValue = "allow"
        reason = ""
        bases = [None] if os.path.isabs(path) else self.cwds
        for base in bases:
            if base is None and not os.path.isabs(path):
                if for_write:  # which file it changes cannot be shown: never run unasked
                    self.unnamed.append(f"writes {path} in a folder only known at run time")
                else:
                    self.private.append(f"{path} (in a folder only known at run time)")
                return "ask", f"{path} is relative to a directory only known at run time"
            at = os.path.join(base or self.ws, path)
            through = self.made.resolve(at)  # a link this command made on the way: its target
            v = judge_literal(path if through == os.path.normpath(at) else through, self.ws,
                              roots=self.roots, for_write=for_write, cwd=base)
            if v.resolved in NULL_DEVICES:
                if for_write and (fd := stream_descriptor(v.resolved)) is not None:
                    self.stream_writes.append((fd, path, True))
                continue
            if not for_write and system_fact(v.resolved):
                self.facts.append(v.resolved)
                continue
            if v.inside and not for_write and SECRETS_FILE.match(os.path.basename(path)):
                self.secret_files.append(path)  # read freely; sent away with curl: refused
            if not v.inside and v.resolved and holds_credentials(v.resolved):
                self.secrets.append(v.resolved)
            elif not v.inside and v.resolved and not for_write and is_private(
                    v.resolved, self.env.get("HOME")):
                self.private.append(v.resolved)
            if STRICTNESS[v.decision] > STRICTNESS[decision]:
                decision, reason = v.decision, v.reason
        return decision, reason

    def _covers_workspace(self, words: list[Word]) -> bool:
        """Whether a recursive change given these targets reaches the whole workspace."""
        ws = Path(os.path.realpath(self.ws))
        for w in words:
            if w.value is None:
                return True
            if w.value in ("*", "./*", ".*", "**", "./**"):
                return True
            for base in self.cwds:
                target = Path(os.path.realpath(os.path.join(base or self.ws, w.value)))
                if ws.is_relative_to(target):
                    return True
        return False



def _has_tag(gitdir: str, name: str) -> bool:
    """Whether the repository has the tag ``name``; unreadable tags count as one."""
    if os.path.lexists(os.path.join(gitdir, "refs", "tags", name)):
        return True
    if os.path.isfile(gitdir):  # a worktree's .git file: its tags are elsewhere
        return True
    try:
        with open(os.path.join(gitdir, "packed-refs"), encoding="utf-8",
                  errors="replace") as f:
            return any(line.rstrip("\n").endswith(f" refs/tags/{name}") for line in f)
    except FileNotFoundError:
        return False
    except OSError:
        return True


def _names_ref(gitdir: str, name: str) -> bool:
    """Whether ``name`` is a branch, tag or remote branch of the repository (or a commit
    id or symbolic name); unreadable refs count as one (``git checkout`` then switches)."""
    if name in ("HEAD", "@", "-", "FETCH_HEAD", "ORIG_HEAD") or re.fullmatch(
            r"[0-9a-f]{4,64}|.*[~^@:].*", name):
        return True
    refs = [f"refs/heads/{name}", f"refs/tags/{name}"]
    if any(os.path.lexists(os.path.join(gitdir, r)) for r in refs):
        return True
    remotes = os.path.join(gitdir, "refs", "remotes")
    try:
        if any(os.path.lexists(os.path.join(remotes, r, name)) for r in os.listdir(remotes)):
            return True
    except OSError:
        pass
    try:
        with open(os.path.join(gitdir, "packed-refs"), encoding="utf-8",
                  errors="replace") as f:
            return any(line.rstrip("\n").endswith((f" refs/heads/{name}", f" refs/tags/{name}"))
                       or re.search(rf" refs/remotes/[^/]+/{re.escape(name)}$", line.rstrip())
                       for line in f)
    except FileNotFoundError:
        return False
    except OSError:
        return True
