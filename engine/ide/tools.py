"""How a tool call looks in an editor: its ACP kind, title, locations and diff.

Everything comes from the tool's spec (its risk, command and path arguments, its dry run),
never from a built-in tool's name, so an MCP or Python tool that declares the same shows the
same. The diff is the tool's own dry run: what the approval preview and the ledger use too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

from engine.tooling.spec import FileChange, ToolContext, ToolSpec
from engine.vocabulary.run_data import PLAN

Content = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

RESULT_CHARS = 8000
"""A result longer than this is cut in the editor (the model saw it whole)."""


@dataclass(frozen=True)
class CallView:
    """A tool call as the editor shows it."""

    title: str
    kind: ToolKind
    locations: tuple[ToolCallLocation, ...]
    diffs: tuple[FileEditToolCallContent, ...]


def view(spec: ToolSpec | None, name: str, args: Mapping[str, Any], workspace: Path,
         *, diff: bool = True) -> CallView:
    """The call's title, kind and locations; with ``diff``, each file its dry run would change
    (worked out before the call runs: after it, the file is already the new one)."""
    if spec is None:
        return CallView(name, "other", (), ())
    path, _ = spec.path_args(args)
    where = (ToolCallLocation(path=str(_absolute(workspace, path))),) if path else ()
    changes = _dry_run(spec, args, workspace) if diff else ()
    return CallView(_title(spec, args, path), kind_of(spec, args), where,
                    tuple(diff_of(c, workspace) for c in changes))


def kind_of(spec: ToolSpec, args: Mapping[str, Any]) -> ToolKind:
    """The ACP kind a call's spec declares, by what it does rather than what it is called."""
    path, writes = spec.path_args(args)
    if spec.command_arg is not None:
        return "execute"
    if PLAN.name in spec.records_keys:
        return "think"
    if writes or spec.dry_run is not None:
        return "edit"
    if spec.risk == "destructive":
        return "delete"
    if spec.risk == "network":
        return "fetch"
    if spec.risk == "read":
        return "read" if path is not None else "search"
    return "other"


def diff_of(change: FileChange, workspace: Path) -> FileEditToolCallContent:
    """An ACP diff: the absolute path, the old text (none for a new file), the whole new one."""
    old = None if change.before is None else change.before.decode("utf-8", "replace")
    return FileEditToolCallContent(type="diff", path=str(_absolute(workspace, change.path)),
                                   old_text=old,
                                   new_text=change.after.decode("utf-8", "replace"))


def text(value: str) -> ContentToolCallContent:
    """A result as text content (cut at ``RESULT_CHARS``)."""
    if len(value) > RESULT_CHARS:
        value = value[:RESULT_CHARS] + f"\n... ({len(value) - RESULT_CHARS} more characters)"
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text",
                                                                           text=value))


def _title(spec: ToolSpec, args: Mapping[str, Any], path: str | None) -> str:
    command = args.get(spec.command_arg) if spec.command_arg else None
    if isinstance(command, str):
        return command if len(command) <= 200 else command[:197] + "..."
    return f"{spec.name} {path}" if path else spec.name


def _dry_run(spec: ToolSpec, args: Mapping[str, Any],
             workspace: Path) -> tuple[FileChange, ...]:
    """The files the call would change; none when it declares no dry run or would fail."""
    if spec.dry_run is None:
        return ()
    try:
        planned = spec.dry_run(args, ToolContext(workspace=workspace))
    except Exception:  # a call the tool itself refuses: its result will say why
        return ()
    return planned if isinstance(planned, tuple) else ()


def _absolute(workspace: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else workspace / p
