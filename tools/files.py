"""The file tools: read_file, list_files, write_file and edit_file.

Writes never clobber what the agent has not seen: overwriting or editing checks a base hash,
either passed by the model (``base_hash``) or remembered by the runner from earlier results
(``ctx.run_data["file_hashes"]``, see ``record_seen``). Every write is atomic and reports the
base hash, the result hash and the patch in its data and in a ``file_changed`` event.

Reads check the path first, then, where the run's host keeps the file's text
(``ctx.read_text``: an editor's open buffer), show that text: the disk's result when it is the
same text, else the host's with its own hash, marked unsaved. Writes always go to the disk, so
a write based on an unsaved buffer's hash is refused as a conflict instead of replacing it.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.tooling.spec import (
    PLANNED_FILES_KEY,
    SEEN_HASHES_KEY,
    EventKind,
    FileChange,
    ToolContext,
    ToolResult,
    ToolSpec,
)
from engine.vocabulary import held_files
from engine.workspace import listing
from engine.workspace.ignore import walk
from turnstile_tools.patch import apply_diff, diff_target, make_patch
from turnstile_tools.workspace import (
    atomic_write,
    is_binary,
    open_in,
    rel,
    resolve_in,
    sha256,
)

logger = logging.getLogger(__name__)

MAX_READ_BYTES = 10_000_000
MAX_LINE_CHARS = 2000
MAX_PATCH_CHARS = 200_000
"""A patch longer than this is cut in tool data and events (``patch_truncated`` says so)."""


def record_seen(seen: Mapping[str, str], result: ToolResult) -> dict[str, str]:
    """``seen`` updated with the file hash a tool result reports (call after every tool call)."""
    updated = dict(seen)
    reported = _reported_hash(result)
    if reported is not None:
        updated[reported[0]] = reported[1]
    return updated


def _reported_hash(result: ToolResult) -> tuple[str, str] | None:
    """The (path, sha256) a successful file tool result reports, if any."""
    data = result.data or {}
    path = data.get("path")
    digest = data.get("result_hash") or data.get("sha256")
    if isinstance(path, str) and isinstance(digest, str) and not result.is_error:
        return path, digest
    return None


def record_hashes(run_data: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """``ToolSpec.records`` of the file tools: the hash the agent now knows for the file (no
    update, and no copy of the hashes known, when it knew that one already)."""
    seen = run_data.get(SEEN_HASHES_KEY) or {}
    reported = _reported_hash(result)
    if reported is None or seen.get(reported[0]) == reported[1]:
        return {}
    return {SEEN_HASHES_KEY: record_seen(seen, result)}


FILE_DATA_KEYS = ("path", "base_hash", "result_hash", "sha256", "created", "patch",
                  "patch_truncated", "conflict")
"""What a file tool's result data reports in the ``tool_call`` event."""
_FILE_CONTRACT: dict[str, Any] = {
    "records": record_hashes, "records_keys": frozenset({SEEN_HASHES_KEY}),
    "reported": FILE_DATA_KEYS}


def _strict() -> ConfigDict:
    return ConfigDict(extra="forbid")


# ---------------------------------------------------------------- read_file

class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    model_config = _strict()
    path: str = Field(description="File path, relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to show (1-based).")
    limit: int = Field(2000, ge=1, le=10_000, description="Maximum number of lines to show.")


async def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
    """Numbered lines of a text file, with the file's sha256 (the base hash for writes); where
    the host keeps the file's text (``ctx.read_text``: an editor's buffer), that text, once the
    path checks passed."""
    found = open_in(ctx.workspace, args.path)
    if found is None:  # not a plain path to a regular file: resolved and explained first
        target = resolve_in(ctx.workspace, args.path)
        if isinstance(target, ToolResult):
            return target
        problem = _not_a_readable_file(ctx.workspace, target, args.path)
        if problem is not None:
            return problem
        found = open_in(ctx.workspace, str(target))
        if found is None:
            return ToolResult.error(f"{args.path} changed while it was being opened (a "
                                    "symbolic link or a directory on its way was replaced); "
                                    "try again")
    fd, name, st = found
    try:  # read through this checked descriptor, never the path again
        if ctx.read_text is not None:
            data = (_read_bytes(fd, st.st_size, name) if st.st_size <= INLINE_READ_BYTES else
                    await anyio.to_thread.run_sync(_read_bytes, fd, st.st_size, name))
        elif st.st_size <= INLINE_READ_BYTES:
            return _read_file(fd, st.st_size, name, args)
        else:
            return await anyio.to_thread.run_sync(_read_file, fd, st.st_size, name, args)
    finally:
        os.close(fd)
    if isinstance(data, ToolResult):
        return data
    return await _read_hosted(ctx, name, data, args)


INLINE_READ_BYTES = 64 * 1024
"""Regular files up to this size are read on the event loop: a worker thread's round trip costs
more than such a read (up to a millisecond per call on a busy machine)."""


def _read_file(fd: int, size: int, name: str, args: ReadFileArgs) -> ToolResult:
    """The result for the open file ``fd`` of ``size`` bytes, named ``name``."""
    data = _read_bytes(fd, size, name)
    return data if isinstance(data, ToolResult) else _show_bytes(name, data, args)


def _read_bytes(fd: int, size: int, name: str) -> bytes | ToolResult:
    """The content of the open file ``fd``, or the error for a file over the size limit."""
    if size > MAX_READ_BYTES:
        return _too_large(name, size)
    return _read_all(fd, size)


def _too_large(name: str, size: int) -> ToolResult:
    return ToolResult.error(
        f"{name} is {size / 1e6:.1f} MB, over read_file's {MAX_READ_BYTES // 1_000_000} MB "
        "limit; use search_text to find what you need, or run_shell with sed -n 'A,Bp'",
        path=name, size=size)


async def _read_hosted(ctx: ToolContext, name: str, disk: bytes,
                       args: ReadFileArgs) -> ToolResult:
    """The file as its host has it (``ctx.read_text``), read whole: the disk's result when
    the host has the same text or cannot say (so the hash stays the disk's, the base the
    writes check), else the host's text, hashed as returned and marked as unsaved.

    A binary file is not asked for. The host is given the absolute path and reads the whole
    file: the hash and the line count are of the whole text, so ``offset``/``limit`` are
    applied here as for a file on disk."""
    assert ctx.read_text is not None
    if is_binary(disk):
        return _show_bytes(name, disk, args)
    text = await ctx.read_text(ctx.workspace.resolve() / name)
    if text is None or _same_text(text, disk):
        return _show_bytes(name, disk, args)
    data = text.encode("utf-8")
    if len(data) > MAX_READ_BYTES:
        return _too_large(name, len(data))
    note = ("; the editor's unsaved buffer, which differs from the file on disk: a write or "
            "edit of it is refused until the buffer is saved")
    return _show_text(name, text, sha256(data), args, note, {
        "source": "editor", "unsaved": True, "disk_sha256": sha256(disk)})


def _same_text(text: str, disk: bytes) -> bool:
    """Whether the host's text is the file on disk (an editor may show CRLF lines as LF)."""
    on_disk = disk.decode("utf-8", "replace")
    return text == on_disk or text == on_disk.replace("\r\n", "\n")


def _show_bytes(name: str, data: bytes, args: ReadFileArgs) -> ToolResult:
    """The result for a file's ``data`` read on disk: refused when binary."""
    digest = sha256(data)
    if is_binary(data):
        return ToolResult.error(f"{name} is a binary file ({len(data)} bytes, sha256 {digest}); "
                                "read_file shows text files only", path=name, sha256=digest,
                                binary=True)
    return _show_text(name, data.decode("utf-8", "replace"), digest, args)


def _show_text(name: str, text: str, digest: str, args: ReadFileArgs, note: str = "",
               extra: Mapping[str, Any] | None = None) -> ToolResult:
    """Numbered lines ``args`` asks for of ``text`` (whose hash is ``digest``); ``note`` ends
    the footer and ``extra`` goes into the data."""
    lines = _split_lines(text)
    total = len(lines)
    more_data = dict(extra or {})
    if total == 0:
        return ToolResult(f"{name} is empty (sha256 {digest}{note})",
                          data={"path": name, "sha256": digest, "lines": [0, 0], "total_lines": 0,
                                **more_data})
    if args.offset > total:
        return ToolResult.error(f"offset {args.offset} is past the end of {name} "
                                f"({total} lines{note})", path=name, sha256=digest,
                                total_lines=total, **more_data)
    first, last = args.offset, min(total, args.offset + args.limit - 1)
    body = "\n".join(f"{n:>6}\t{_clip(lines[n - 1])}" for n in range(first, last + 1))
    more = f"; use offset={last + 1} to read more" if last < total else ""
    footer = f"({name}: lines {first}-{last} of {total}; sha256 {digest}{more}{note})"
    return ToolResult(f"{body}\n{footer}", data={
        "path": name, "sha256": digest, "lines": [first, last], "total_lines": total,
        **more_data})


def _read_all(fd: int, size: int) -> bytes:
    """Everything left in ``fd``: ``size`` bytes expected, more taken if the file grew. A read
    of a regular file returns less than asked only at its end, so a first read that does not
    fill ``size + 1`` bytes is the whole file (no second read to see the end)."""
    first = os.read(fd, size + 1)
    if len(first) <= size:
        return first
    chunks = [first]
    while chunks[-1]:
        chunks.append(os.read(fd, max(size, 1 << 16)))
    return b"".join(chunks)


def _not_a_readable_file(workspace: Path, target: Path, asked: str) -> ToolResult | None:
    if target.is_dir():
        return ToolResult.error(f"{asked} is a directory; use list_files to see its contents")
    if not target.exists():
        return ToolResult.error(f"no such file: {asked}{_similar_names(workspace, target)}")
    if not target.is_file():
        return ToolResult.error(f"{asked} is not a regular file (device, socket or pipe)")
    if held_files.held_path(target):
        return ToolResult.error(f"{asked} is the engine's open run database, which tools do "
                                "not read (its runs are shown by `python -m engine show`)")
    return None


def _similar_names(workspace: Path, target: Path) -> str:
    try:
        names = [p.name for p in target.parent.iterdir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(target.name, names, n=3, cutoff=0.6)
    if not close:
        return ""
    parent = rel(workspace, target.parent)
    options = ", ".join(name if parent == "." else f"{parent}/{name}" for name in close)
    return f" (did you mean {options}?)"


def _split_lines(text: str) -> list[str]:
    parts = text.split("\n")
    lines = parts[:-1] if parts[-1] == "" else parts
    return [line.removesuffix("\r") for line in lines]


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line cut: {len(line)} chars]"


# ---------------------------------------------------------------- list_files

class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    model_config = _strict()
    path: str = Field(".", description="Directory to list, relative to the workspace root.")
    depth: int = Field(3, ge=1, le=20,
                       description="How many directory levels to descend (1: direct children).")
    limit: int = Field(500, ge=1, le=10_000, description="Maximum number of entries to show.")


COUNT_CAP = 20_000
"""Entries beyond the shown ones are counted up to this many ("at least" beyond)."""


async def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
    """The files git would see under a directory (``.gitignore`` respected: in a repository,
    as git itself answers), depth-limited; an ignored folder is not named at all, unless the
    call's ``path`` is itself ignored (then everything under it is listed)."""
    target = resolve_in(ctx.workspace, args.path)
    if isinstance(target, ToolResult):
        return target
    return await anyio.to_thread.run_sync(_list_files, ctx.workspace.resolve(), target, args,
                                          abandon_on_cancel=True)


def _list_files(root: Path, target: Path, args: ListFilesArgs) -> ToolResult:
    if not target.is_dir():
        hint = "; use read_file for a file" if target.is_file() else ""
        return ToolResult.error(f"{args.path} is not a directory{hint}")
    shown: list[str] = []
    total = 0
    start = rel(root, target)
    judge = listing.judge(root, "" if start == "." else start)
    for entry in walk(root, target, args.depth, judge):
        total += 1
        if len(shown) < args.limit:
            suffix = "/" if entry.is_dir else "@" if entry.is_symlink else ""
            shown.append(entry.rel + suffix)
        elif total >= COUNT_CAP:
            break
    name = rel(root, target)
    data: dict[str, Any] = {"path": name, "entries": len(shown), "total": total,
                            "truncated": total > len(shown)}
    if not shown:
        return ToolResult(f"{name}: no files (empty, or everything is ignored by .gitignore)",
                          data=data)
    text = "\n".join(shown)
    if total > len(shown):
        counted = f"at least {total}" if total >= COUNT_CAP else str(total)
        text += (f"\n(truncated: showing {len(shown)} of {counted} entries; narrow `path`, "
                 "lower `depth` or raise `limit`)")
    return ToolResult(text, data=data, truncated=total > len(shown))


# ---------------------------------------------------------------- write_file and edit_file

class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    model_config = _strict()
    path: str = Field(description="File to create or overwrite, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")
    base_hash: str | None = Field(
        None, description="sha256 of the file as you last read it (from read_file); required "
        "to overwrite an existing file unless the runtime remembers what you read.")


class EditFileArgs(BaseModel):
    """Arguments of edit_file: either old/new (exact replacement) or diff (unified diff)."""

    model_config = _strict()
    path: str = Field(description="File to edit, relative to the workspace root.")
    old: str | None = Field(None, description="Exact text to replace (with its whitespace); "
                            "must occur exactly once unless replace_all is true.")
    new: str | None = Field(None, description="Replacement text for `old`.")
    replace_all: bool = Field(False, description="Replace every occurrence of `old`.")
    diff: str | None = Field(None, description="A unified diff for this one file (instead of "
                             "old/new); every hunk must match the file exactly.")
    base_hash: str | None = Field(None, description="sha256 of the file as you last read it; "
                                  "the edit is refused if the file changed since.")

    @model_validator(mode="after")
    def _one_mode(self) -> EditFileArgs:
        if self.diff is not None and (self.old is not None or self.new is not None):
            raise ValueError("give either old/new or diff, not both")
        if self.diff is None and (self.old is None or self.new is None):
            raise ValueError("give old and new (exact replacement), or diff (unified diff)")
        return self


async def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
    """Create a file, or overwrite one whose current hash equals the base the agent read."""
    target = resolve_in(ctx.workspace, args.path)
    if isinstance(target, ToolResult):
        return target
    return await anyio.to_thread.run_sync(_write_file, ctx, target, args)


@dataclass(frozen=True, slots=True)
class Change:
    """A write or edit worked out but not yet applied."""

    target: Path
    name: str
    old: bytes | None
    """The current content; None when the file does not exist yet."""
    new: bytes


def _write_file(ctx: ToolContext, target: Path, args: WriteFileArgs) -> ToolResult:
    change = _plan_write(ctx, target, args)
    return change if isinstance(change, ToolResult) else _commit(ctx, change, "write_file")


def _plan_write(ctx: ToolContext, target: Path, args: WriteFileArgs,
                planned: bytes | None = None) -> Change | ToolResult:
    """The change write_file would make; ``planned`` stands for the file's content when an
    earlier call of the same batch will have written it (dry runs only)."""
    name = rel(ctx.workspace, target)
    if planned is None and target.is_dir():
        return ToolResult.error(f"{args.path} is a directory")
    old = planned if planned is not None else target.read_bytes() if target.exists() else None
    if old is None and args.base_hash is not None:
        return ToolResult.error(f"{name} does not exist any more but base_hash was given; "
                                "it was deleted since you read it (omit base_hash to create it)")
    if old is not None:
        base = args.base_hash or _seen(ctx, name)
        if base is None:
            return ToolResult.error(
                f"{name} already exists; read it first (read_file) and pass its sha256 as "
                "base_hash to overwrite it, or use edit_file")
        conflict = _conflict(name, base, old)
        if conflict is not None:
            return conflict
    return Change(target, name, old, args.content.encode("utf-8"))


async def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolResult:
    """Replace an exact string or apply a unified diff; returns the diff applied."""
    target = resolve_in(ctx.workspace, args.path)
    if isinstance(target, ToolResult):
        return target
    return await anyio.to_thread.run_sync(_edit_file, ctx, target, args)


def _edit_file(ctx: ToolContext, target: Path, args: EditFileArgs) -> ToolResult:
    change = _plan_edit(ctx, target, args)
    return change if isinstance(change, ToolResult) else _commit(ctx, change, "edit_file")


def _plan_edit(ctx: ToolContext, target: Path, args: EditFileArgs,
               planned: bytes | None = None) -> Change | ToolResult:
    """The change edit_file would make (``planned`` as for ``_plan_write``)."""
    name = rel(ctx.workspace, target)
    problem = None if planned is not None else _not_a_readable_file(ctx.workspace, target,
                                                                    args.path)
    if problem is not None:
        if not target.exists():
            return ToolResult.error(f"{problem.content}; use write_file to create a new file")
        return problem
    old = planned if planned is not None else target.read_bytes()
    base = args.base_hash or _seen(ctx, name)
    conflict = _conflict(name, base, old) if base is not None else None
    if conflict is not None:
        return conflict
    if is_binary(old):
        return ToolResult.error(f"{name} is a binary file; edit_file edits text files only")
    text = old.decode("utf-8", "surrogateescape")
    try:
        new_text = _apply_edit(name, text, args)
    except ValueError as exc:
        return ToolResult.error(f"edit_file {name}: {exc}", path=name, sha256=sha256(old))
    new = new_text.encode("utf-8", "surrogateescape")
    if new == old:
        return ToolResult.error(f"edit_file {name}: the edit changes nothing")
    return Change(target, name, old, new)


def dry_run_write(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileChange, ...] | ToolResult:
    """write_file's dry run: the same plan its handler commits, without writing."""
    return _dry_run(WriteFileArgs, args, ctx)


def dry_run_edit(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileChange, ...] | ToolResult:
    """edit_file's dry run: the same plan its handler commits, without writing."""
    return _dry_run(EditFileArgs, args, ctx)


def _dry_run(model: type[WriteFileArgs | EditFileArgs], args: Mapping[str, Any],
             ctx: ToolContext) -> tuple[FileChange, ...] | ToolResult:
    name = "write_file" if model is WriteFileArgs else "edit_file"
    try:
        parsed = model.model_validate(dict(args))
    except ValueError as exc:
        return ToolResult.error(f"invalid arguments for {name}: {exc}")
    target = resolve_in(ctx.workspace, parsed.path)
    if isinstance(target, ToolResult):
        return target
    planned = _planned(ctx, rel(ctx.workspace, target))
    try:
        change = (_plan_write(ctx, target, parsed, planned) if isinstance(parsed, WriteFileArgs)
                  else _plan_edit(ctx, target, parsed, planned))
    except OSError as exc:
        return ToolResult.error(f"{name} {parsed.path}: {exc.strerror or exc}")
    if isinstance(change, ToolResult):
        return change
    data = _change_data(change)
    return (FileChange(change.name, change.old, change.new, data["patch"]),)


def _apply_edit(name: str, text: str, args: EditFileArgs) -> str:
    if args.diff is not None:
        named = diff_target(args.diff)
        if named is not None and named != name:
            raise ValueError(f"the diff is for {named!r}, not {name!r}")
        return apply_diff(text, args.diff)
    assert args.old is not None and args.new is not None
    return replace_exact(text, args.old, args.new, args.replace_all)


def replace_exact(text: str, old: str, new: str, replace_all: bool = False) -> str:
    """``text`` with ``old`` replaced; ``ValueError`` unless it occurs once (or ``replace_all``)."""
    if not old:
        raise ValueError("`old` is empty; give the exact text to replace")
    if old == new:
        raise ValueError("`old` and `new` are identical")
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ValueError(f"`old` was not found{_closest_line(text, old)}; copy the text exactly "
                         "as read_file shows it (without the line-number prefix), whitespace "
                         "included")
    if count > 1 and not replace_all:
        lines = _occurrence_lines(text, old)
        raise ValueError(f"`old` occurs {count} times (lines {lines}); include more surrounding "
                         "text to make it unique, or set replace_all=true")
    return text.replace(old, new)


def _closest_line(text: str, old: str) -> str:
    first = next((line.strip() for line in old.split("\n") if line.strip()), "")
    lines = text.split("\n")
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(first, stripped, n=1, cutoff=0.6)
    if not first or not close:
        return ""
    return f" (closest line: {stripped.index(close[0]) + 1}: {close[0][:120]!r})"


def _occurrence_lines(text: str, old: str) -> str:
    found: list[str] = []
    start = text.find(old)
    while start >= 0 and len(found) < 10:
        found.append(str(text.count("\n", 0, start) + 1))
        start = text.find(old, start + 1)
    return ", ".join(found)


def _planned(ctx: ToolContext, name: str) -> bytes | None:
    """The post-image an earlier call of the same batch plans for ``name`` (dry runs only)."""
    planned = ctx.run_data.get(PLANNED_FILES_KEY)
    value = planned.get(name) if isinstance(planned, Mapping) else None
    return value if isinstance(value, bytes) else None


def _seen(ctx: ToolContext, name: str) -> str | None:
    seen = ctx.run_data.get(SEEN_HASHES_KEY) or {}
    value = seen.get(name) if isinstance(seen, Mapping) else None
    return value if isinstance(value, str) else None


def _conflict(name: str, base: str, current: bytes) -> ToolResult | None:
    now = sha256(current)
    if now == base:
        return None
    return ToolResult.error(
        f"{name} changed since you read it (base {base[:12]}, now {now[:12]}); read it again "
        "and redo the change on the current content", path=name, base_hash=base, current=now,
        conflict=True)


def _change_data(change: Change) -> dict[str, Any]:
    old_text = None if change.old is None else change.old.decode("utf-8", "replace")
    patch = make_patch(change.name, old_text, change.new.decode("utf-8", "replace"))
    data: dict[str, Any] = {
        "path": change.name, "base_hash": None if change.old is None else sha256(change.old),
        "result_hash": sha256(change.new), "created": change.old is None,
        "patch": patch[:MAX_PATCH_CHARS]}
    if len(patch) > MAX_PATCH_CHARS:
        data["patch_truncated"] = True
    return data


def _commit(ctx: ToolContext, change: Change, tool: str) -> ToolResult:
    """Write atomically, then report hashes and patch in the result and a ``file_changed``."""
    atomic_write(change.target, change.new)
    data = _change_data(change)
    ctx.emit(EventKind.FILE_CHANGED, {"call_id": ctx.call_id, "tool": tool, **data})
    added, removed = _diffstat(data["patch"])
    stat = f"+{added} -{removed} lines, sha256 {data['result_hash']}"
    if tool == "edit_file":
        return ToolResult(f"edited {change.name} ({stat}):\n{data['patch']}", data=data)
    verb = "created" if change.old is None else "overwrote"
    return ToolResult(f"{verb} {change.name} ({stat})", data=data)


def _diffstat(patch: str) -> tuple[int, int]:
    lines = patch.split("\n")
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++ "))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("--- "))
    return added, removed


SPECS = (
    ToolSpec(
        name="read_file", version="1.0.0",
        description="Read a text file: numbered lines (offset/limit for long files) and the "
        "file's sha256, which write_file/edit_file use as base_hash. Binary files and files "
        "over 10 MB are refused.",
        input_model=ReadFileArgs, handler=read_file, risk="read", idempotent=True,
        side_effects=False, timeout_s=30.0, read_paths=("path",), **_FILE_CONTRACT,
        changelog=("1.0.0: numbered lines, offset/limit, binary and size detection, sha256",)),
    ToolSpec(
        name="list_files", version="1.1.0",
        description="List files and directories (directories end with '/', symlinks with '@') "
        "under a directory, respecting .gitignore, depth- and count-limited.",
        input_model=ListFilesArgs, handler=list_files, risk="read", idempotent=True,
        side_effects=False, timeout_s=60.0, read_paths=("path",), reported=("path",),
        changelog=("1.0.0: .gitignore-aware listing with depth and count limits",
                   "1.1.0: in a git repository git says what is ignored (a tracked file in an "
                   "ignored folder is listed); a path that is itself ignored is listed whole; "
                   "counts stop at 20,000 ('at least'); a capped listing says 'truncated'")),
    ToolSpec(
        name="write_file", version="1.0.0",
        description="Create a new file, or overwrite an existing one you have read (pass its "
        "sha256 as base_hash). Refused if the file changed since you read it. Prefer edit_file "
        "for changes to existing files.",
        input_model=WriteFileArgs, handler=write_file, risk="write", idempotent=False,
        side_effects=True, timeout_s=60.0, dry_run=dry_run_write, write_paths=("path",),
        **_FILE_CONTRACT,
        changelog=("1.0.0: atomic create/overwrite guarded by base hash; reports the patch",)),
    ToolSpec(
        name="edit_file", version="1.0.0",
        description="Edit a text file by exact replacement (old -> new; old must be unique "
        "unless replace_all) or by a unified diff whose hunks match the file exactly. Refused "
        "if the file changed since you read it. Returns the diff applied.",
        input_model=EditFileArgs, handler=edit_file, risk="write", idempotent=False,
        side_effects=True, timeout_s=60.0, dry_run=dry_run_edit, write_paths=("path",),
        **_FILE_CONTRACT,
        changelog=("1.0.0: exact replacement or strict unified diff, base hash, returns diff",)),
)
