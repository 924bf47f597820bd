"""The search_text tool: a regular-expression search over the workspace, grep-style output.

Python ``re`` syntax, matched line by line. Files are those git would see
(``engine.workspace.listing.files``: in a repository ``git ls-files`` names tracked and untracked
files, so an ignored tree such as ``node_modules`` is never opened, nor named); a ``path`` that
is itself ignored (``node_modules/react``) asks for its files, as ``rg`` searches a path it is
given. In a repository a pattern that is plain text is first looked for by ``git grep -F``
(in C, in parallel), and only the files it names are read and matched here. Binary files (a
NUL byte in the first 8 KB), symlinks and files over 20 MB are skipped. Each file is
searched whole first (one C-level scan; most files do not match), and only matching files are
split into lines. Output is ``path:line:text`` for matches and ``path-line-text`` for context,
groups separated by ``--``; matches beyond ``max_results`` are counted, not shown.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, AnyStr, Generic

import anyio
import anyio.from_thread
from pydantic import BaseModel, ConfigDict, Field

from engine.tooling.spec import ToolContext, ToolResult, ToolSpec
from engine.vocabulary import held_files
from engine.vocabulary.globs import GlobError, expand_braces, translate
from engine.workspace import listing
from turnstile_tools.workspace import is_binary, rel, resolve_in

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 20_000_000
MAX_TEXT_CHARS = 400
"""A shown line longer than this is cut."""
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CANCEL_CHECK_EVERY = 256
"""Files searched between two checks for cancellation."""


class SearchTextArgs(BaseModel):
    """Arguments of search_text."""

    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="Regular expression (Python re syntax), "
                         "matched against each line.")
    path: str = Field(".", description="Directory or file to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only search files matching this glob, e.g. "
                             "'*.py', 'src/**/*.ts' or '*.{js,jsx}'.")
    context: int = Field(0, ge=0, le=20, description="Lines of context around each match.")
    max_results: int = Field(200, ge=1, le=5000, description="Maximum matching lines to show.")
    case_sensitive: bool = Field(True, description="False for a case-insensitive search.")


@dataclass
class Matcher(Generic[AnyStr]):
    """A compiled pattern working on bytes (ASCII patterns, fast) or on decoded text."""

    regex: re.Pattern[AnyStr]
    newline: AnyStr

    def lines(self, data: bytes) -> list[AnyStr] | None:
        """The file's lines if the pattern can match in it, else None."""
        text: Any = data if isinstance(self.newline, bytes) else data.decode("utf-8", "replace")
        if self.regex.search(text) is None:
            return None
        parts: list[AnyStr] = text.split(self.newline)
        return parts[:-1] if not parts[-1] else parts

    def hit(self, line: AnyStr) -> bool:
        return self.regex.search(line) is not None


def compile_matcher(pattern: str, case_sensitive: bool) -> Matcher[Any]:
    """A matcher for ``pattern``; ``re.error`` when it is not a valid expression."""
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    if pattern.isascii():
        return Matcher(re.compile(pattern.encode(), flags), b"\n")
    return Matcher(re.compile(pattern, flags), "\n")


@lru_cache(maxsize=256)
def glob_filter(glob: str | None) -> re.Pattern[str] | None:
    """One regex (for ``fullmatch``) for the glob, in the project's glob syntax
    (``engine.vocabulary.globs``): each alternative without a ``/`` matches the file name at any
    depth
    (like ``rg -g``), one with a ``/`` the path from the workspace root. ``GlobError`` when
    the glob cannot be used."""
    if not glob:
        return None
    alternatives = [g.lstrip("/") for g in expand_braces(glob)]
    return re.compile("|".join(f"(?:{translate(g if '/' in g else '**/' + g)})"
                               for g in alternatives), re.DOTALL)


@dataclass
class Report:
    """What a search found: shown lines and counts."""

    lines: list[str] = field(default_factory=list)
    shown: int = 0
    total: int = 0
    files_matched: int = 0
    files_searched: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    prefiltered: bool = False
    """Only the files ``git grep -F`` said contain the (literal) pattern were read."""


async def search_text(args: SearchTextArgs, ctx: ToolContext) -> ToolResult:
    """Search for a regular expression; results as ``path:line:text``."""
    target = resolve_in(ctx.workspace, args.path)
    if isinstance(target, ToolResult):
        return target
    try:
        glob_filter(args.glob)
    except GlobError as exc:
        return ToolResult.error(f"{exc} (write fewer {{a,b}} groups)")
    try:
        matcher = compile_matcher(args.pattern, args.case_sensitive)
    except re.error as exc:
        return ToolResult.error(f"invalid regular expression {args.pattern!r}: {exc} "
                                "(Python re syntax; escape literal characters like ( [ . *)")
    if not target.exists():
        return ToolResult.error(f"no such file or directory: {args.path}")
    root = ctx.workspace.resolve()
    report = await anyio.to_thread.run_sync(_search, root, target, matcher, args)
    return _result(rel(root, target), args, report)


def _search(root: Path, target: Path, matcher: Matcher[Any], args: SearchTextArgs) -> Report:
    """Files are read and matched by ``READERS`` threads (a read waits on the disk with the
    interpreter lock released), a batch at a time and in order: what is shown and counted is
    the same as one thread's result."""
    report = Report()
    wanted = glob_filter(args.glob)
    pending: deque[Future[list[tuple[str, Outcome]]]] = deque()
    found = _prefilter(root, target, args)
    report.prefiltered = found is not None
    with ThreadPoolExecutor(READERS) as pool:
        try:
            for batch in _batches(_files(root, target, wanted, found)):
                pending.append(pool.submit(_scan_batch, batch, matcher))
                if len(pending) > READERS:
                    _take(pending.popleft().result(), args, report)
            while pending:
                _take(pending.popleft().result(), args, report)
        finally:
            for future in pending:
                future.cancel()
    return report


def _take(found: list[tuple[str, Outcome]], args: SearchTextArgs, report: Report) -> None:
    anyio.from_thread.check_cancelled()
    for name, outcome in found:
        _count(name, outcome, args, report)


def _scan_batch(batch: list[tuple[str, str]], matcher: Matcher[Any]
                ) -> list[tuple[str, Outcome]]:
    return [_scan(name, path, matcher) for name, path in batch]


READERS = 2
"""Threads reading and matching files."""


def _batches(files: Iterator[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    batch: list[tuple[str, str]] = []
    for item in files:
        batch.append(item)
        if len(batch) >= CANCEL_CHECK_EVERY:
            yield batch
            batch = []
    if batch:
        yield batch


Outcome = tuple[str, Any]
"""What one file gave: ``("large", None)``, ``("binary", None)``, ``("none", None)`` or
``("hits", (lines, hit indexes))``."""


def _scan(name: str, path: str, matcher: Matcher[Any]) -> tuple[str, Outcome]:
    data = _read(path)
    if data is None:
        return name, ("large", None)
    if is_binary(data):
        return name, ("binary", None)
    lines = matcher.lines(data)
    hits = [i for i, line in enumerate(lines) if matcher.hit(line)] if lines is not None else []
    return name, (("hits", (lines, hits)) if hits else ("none", None))


def _count(name: str, outcome: Outcome, args: SearchTextArgs, report: Report) -> None:
    kind, found = outcome
    if kind == "large":
        report.skipped_large += 1
        return
    if kind == "binary":
        report.skipped_binary += 1
        return
    report.files_searched += 1
    if kind != "hits":
        return
    lines, hits = found
    report.files_matched += 1
    report.total += len(hits)
    room = args.max_results - report.shown
    if room > 0:
        shown = hits[:room]
        report.shown += len(shown)
        _format(name, lines, shown, args.context, report.lines)


_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


def _prefilter(root: Path, target: Path, args: SearchTextArgs) -> list[str] | None:
    """For a pattern that is plain text, the files git says contain it; None otherwise.

    Only where both give the same answer: no regular-expression syntax, and a
    case-insensitive search only of ASCII text (git folds ASCII case only)."""
    pattern = args.pattern
    if target.is_file() or not _REGEX_SYNTAX.isdisjoint(pattern):
        return None
    if not args.case_sensitive and not pattern.isascii():
        return None
    return listing.files_containing(root, target, pattern, not args.case_sensitive)


def _files(root: Path, target: Path, wanted: re.Pattern[str] | None,
           found: list[str] | None = None) -> Iterator[tuple[str, str]]:
    if target.is_file():
        yield rel(root, target), str(target)
        return
    start = rel(root, target)
    prefix = "" if start == "." else f"{start}/"
    named = ((n, f"{root}/{n}") for n in found) if found is not None else listing.files(
        root, target)
    for name, path in named:
        if wanted is None or wanted.fullmatch(name[len(prefix):]) or wanted.fullmatch(name):
            yield name, path


def _read(path: str) -> bytes | None:
    """The file's bytes; None when it is over ``MAX_FILE_BYTES``; ``b""`` when unreadable.

    Sized by ``fstat``: ``f.read(n)`` would allocate ``n`` bytes per file (3x slower here).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return b""  # gone, or a symbolic link
    st: os.stat_result | None = None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or held_files.held(st):  # not the engine's database
            return b""
        size = st.st_size
        if size > MAX_FILE_BYTES:
            return None
        data = os.read(fd, size + 1)
        if len(data) < size:  # a short read (rare): finish the file
            parts = [data]
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            data = b"".join(parts)
    except OSError:
        return b""
    finally:
        held_files.close(fd, st)
    return None if len(data) > MAX_FILE_BYTES else data


def _format(name: str, lines: list[Any], hits: list[int], context: int, out: list[str]) -> None:
    hit_set = set(hits)
    last = -2
    for start, end in _windows(hits, context, len(lines)):
        if context and out and start > last + 1:
            out.append("--")
        for i in range(start, end + 1):
            sep = ":" if i in hit_set else "-"
            out.append(f"{name}{sep}{i + 1}{sep}{_show(lines[i])}")
        last = end


def _windows(hits: list[int], context: int, size: int) -> list[tuple[int, int]]:
    """Merged [start, end] line ranges around the hits."""
    windows: list[tuple[int, int]] = []
    for i in hits:
        start, end = max(0, i - context), min(size - 1, i + context)
        if windows and start <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def _show(line: Any) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.rstrip("\r")
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "... [cut]"


def _result(where: str, args: SearchTextArgs, r: Report) -> ToolResult:
    skipped = _skipped(r)
    data = {"path": where, "matches": r.total, "shown": r.shown, "files_matched": r.files_matched,
            "files_searched": r.files_searched, "omitted_matches": r.total - r.shown}
    if r.prefiltered:
        data["prefilter"] = "git grep"
    if r.total == 0:
        searched = ("no file git sees contains it" if r.prefiltered
                    else f"{r.files_searched} files searched")
        return ToolResult(f"no matches for {args.pattern!r} in {where} ({searched}{skipped})",
                          data=data)
    summary = f"({r.total} matching lines in {r.files_matched} files{skipped}"
    if r.shown < r.total:
        summary = (f"(truncated: {r.total - r.shown} of {r.total} matching lines in "
                   f"{r.files_matched} files not shown{skipped}; showing the first {r.shown}: "
                   "narrow the pattern, path or glob, or raise max_results")
    text = "\n".join(r.lines) + f"\n{summary})"
    return ToolResult(text, data=data, truncated=r.shown < r.total)


def _skipped(r: Report) -> str:
    parts = []
    if r.skipped_binary:
        parts.append(f"{r.skipped_binary} binary")
    if r.skipped_large:
        parts.append(f"{r.skipped_large} over 20 MB")
    return f"; skipped {' and '.join(parts)}" if parts else ""


SPEC = ToolSpec(
    name="search_text", version="1.1.0",
    description="Search file contents for a regular expression (Python re syntax, per line), "
    "respecting .gitignore and skipping binary files. Output: path:line:text; context lines "
    "as path-line-text. Optional glob filter, context lines, result cap.",
    input_model=SearchTextArgs, handler=search_text, risk="read", idempotent=True,
    side_effects=False, timeout_s=120.0, read_paths=("path",), reported=("path",),
    changelog=("1.0.0: regex search with glob, context lines and result cap",
               "1.1.0: in a git repository the files come from git ls-files (ignored trees "
               "never opened); a path that is itself ignored is searched whole; a capped "
               "result says 'truncated'"),
)
