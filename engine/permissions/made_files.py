"""The files a command makes before its later parts run: the folders as it will leave them.

The classifier judges a path against the disk as it is now, but a command can change the disk
on its way: ``ln -s /etc kk; cat kk/shadow`` reads ``/etc/shadow``, ``ln -s /bin b; b/rm -rf
src`` runs ``rm``, and ``cp /bin/rm x; ./[x]rm`` matches a file no folder holds yet. Rather
than list such tricks, every path and glob after such a command is seen through what it made:
links (reads, writes and programs reach their targets), copies (the same program, not the same
file), and new folders and files (globs match them). Paths resolve a component at a time, so
``kk/../x`` leaves through the link as the kernel does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_LINK_HOPS = 40
"""Links followed in a row before a path counts as a loop (the kernel's own bound)."""
_VALUED = {"ln": "St", "cp": "St", "mv": "St", "install": "mogSt"}
"""Per program that makes files, the short options that take a value."""
_LINKERS = frozenset(_VALUED)


@dataclass
class MadeFiles:
    """What a command made so far, by absolute path."""

    links: dict[str, str] = field(default_factory=dict)
    """Symbolic and hard links: path -> the target (reads and writes go there), as a
    symbolic link holds it: relative to the link's folder unless absolute."""
    copies: dict[str, str] = field(default_factory=dict)
    """Copies (``cp``, ``install``): path -> the source; it runs as the source's program."""
    dirs: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    """Other paths written: globs match them."""

    changes: int = 0
    """How many times what was made changed (a key for what was matched before)."""

    def __bool__(self) -> bool:
        return bool(self.links or self.copies or self.dirs or self.files)

    def wrote(self, path: str, folder: bool = False) -> None:
        """A file (or, with ``folder``, a folder) the command wrote at ``path`` (absolute)."""
        (self.dirs if folder else self.files).add(os.path.normpath(path))
        self.changes += 1

    def resolve(self, path: str, copies: bool = False) -> str:
        """``path`` (absolute) with the links made on its way followed, a component at a time
        (``..`` after a link leaves its target); with ``copies``, copies count as links (the
        program a copied file runs). Unchanged when nothing made lies on it."""
        table = {**self.copies, **self.links} if copies else self.links
        plain = os.path.normpath(path)
        if not table or not any(k in (path, plain) or path.startswith(k + "/") or
                                plain.startswith(k + "/") or "/../" in path for k in table):
            return plain
        out = "/"
        parts = [p for p in path.split("/") if p]
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                out = os.path.dirname(os.path.realpath(out) if os.path.lexists(out) else out)
                continue
            out = os.path.join(out, part)
            if out in table and hops < MAX_LINK_HOPS:
                hops += 1
                target = os.path.join(os.path.dirname(out), table[out])  # as the kernel reads
                parts = [p for p in target.split("/") if p] + parts
                out = "/"
        return os.path.normpath(out)

    def entries(self, folder: str) -> list[tuple[str, bool]]:
        """Names this command made directly in ``folder`` (absolute), each with whether it is
        a folder (a new one, or a link or copy of one)."""
        folder = os.path.normpath(folder)
        out: list[tuple[str, bool]] = []
        for path in (*self.links, *self.copies, *self.dirs, *self.files):
            if os.path.dirname(path) == folder:
                out.append((os.path.basename(path), self.is_dir(path)))
        return out

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a folder once this command made what it made."""
        path = os.path.normpath(path)
        return path in self.dirs or os.path.isdir(self.resolve(path, copies=True))

    def exists(self, path: str) -> bool:
        path = os.path.normpath(path)
        return path in self.links or path in self.copies or path in self.dirs or \
            path in self.files or os.path.lexists(self.resolve(path, copies=True))

    def record(self, name: str, args: Sequence[str | None], cwd: str) -> None:
        """What ``ln``, ``cp``, ``install`` or ``mv`` with these words made, run in ``cwd``
        (absolute). Words only known at run time make nothing known here (their writes are
        judged as unknown paths)."""
        if name not in _LINKERS or None in args:
            return
        self.changes += 1
        words = [str(a) for a in args]
        flags, target_dir, files, no_dir = _parsed(words, _VALUED[name])
        if target_dir is None and len(files) >= 2:
            last = os.path.join(cwd, files[-1])
            if not no_dir and (len(files) > 2 or files[-1].endswith("/") or
                               self.is_dir(last)):
                target_dir, files = files[-1], files[:-1]
        if target_dir is not None:
            pairs = [(f, os.path.join(target_dir, os.path.basename(f.rstrip("/")))) for f in files]
        elif len(files) == 1 and name == "ln":
            pairs = [(files[0], os.path.basename(files[0].rstrip("/")))]
        elif len(files) == 2:
            pairs = [(files[0], files[1])]
        else:
            return
        for source, dest in pairs:
            self._made(name, flags, source, os.path.normpath(os.path.join(cwd, dest)), cwd)

    def _made(self, name: str, flags: set[str], source: str, dest: str, cwd: str) -> None:
        at = os.path.normpath(os.path.join(cwd, source))
        symbolic = name in ("ln", "cp") and "s" in flags
        if name == "mv":
            self._moved(at, dest)
        elif symbolic and name == "ln" and "r" in flags:  # ln -sr: the way from dest to it
            self.links[dest] = os.path.relpath(self.resolve(at), os.path.dirname(dest))
        elif symbolic:
            self.links[dest] = source  # the text as written, read from where the link lies
        elif name == "ln" or (name == "cp" and "l" in flags):  # a hard link: the same file
            self.links[dest] = self.resolve(at)
        elif name == "cp" and flags & set("PdarR") and not flags & set("LH") and (
                at in self.links or os.path.islink(at)):
            self.links[dest] = self.links.get(at) or os.readlink(at)  # cp -P, -a, -r: the link
        else:
            self.copies[dest] = self.resolve(at, copies=True)

    def _moved(self, source: str, dest: str) -> None:
        """``mv``: what was made at or under ``source`` is now under ``dest`` (a link keeps
        its text: a relative one now reads from its new folder); a link on the disk too."""
        for table in (self.links, self.copies):
            for path in [p for p in table if p == source or p.startswith(source + "/")]:
                table[dest + path[len(source):]] = table.pop(path)
        if os.path.islink(source) and dest not in self.links:
            self.links[dest] = os.readlink(source)
        self.files.add(dest)


_LONG = {"--symbolic": "s", "--relative": "r", "--link": "l", "--no-dereference": "P",
         "--archive": "a", "--recursive": "R", "--dereference": "L"}
"""Long options by the short flag they stand for (``ln -r`` and ``cp -r`` differ: each is
read by its own program)."""


def _parsed(words: list[str], valued: str) -> tuple[set[str], str | None, list[str], bool]:
    """Short flags, the ``-t`` folder, the file words, and whether ``-T`` (no folder) was
    given, for the GNU tools' shared syntax (``--`` ends options; ``valued`` letters take
    a value, attached or the next word)."""
    flags: set[str] = set()
    target_dir: str | None = None
    files: list[str] = []
    no_dir = False
    it = iter(words)
    for w in it:
        if w == "--":
            files.extend(it)
            break
        if w.startswith("--"):
            key, _, value = w.partition("=")
            if key == "--target-directory":
                target_dir = value or next(it, None)
            elif key in ("--suffix", "--mode", "--owner", "--group") and not value:
                next(it, None)
            no_dir = no_dir or key == "--no-target-directory"
            flags.update(_LONG.get(key, ""))
        elif w.startswith("-") and len(w) > 1:
            letters = w[1:]
            at = next((i for i, c in enumerate(letters) if c in valued), None)
            if at is not None:
                given = letters[at + 1:] or next(it, None)
                if letters[at] == "t":
                    target_dir = given
                letters = letters[:at + 1]
            flags.update(letters)
            no_dir = no_dir or "T" in letters
        else:
            files.append(w)
    return flags, target_dir, files, no_dir
