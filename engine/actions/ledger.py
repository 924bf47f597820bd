"""The side-effect ledger: each tool call goes started -> done | failed | unknown.

``started`` is the intent: written before the handler runs, with the planned file change, and
committed with ``synchronous=FULL`` when the call is not idempotent; the outcome is written
after. On
resume, a call left ``started`` is resolved by what can be proven (DESIGN 5):
read-only or idempotent -> run again; a file write -> compare the file's hash with the base and
the post-image; anything else -> ``unknown``, never repeated silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.store.base import EffectRecord, Store
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec
from engine.vocabulary.state import ToolCall

logger = logging.getLogger(__name__)

Resolution = Literal["run", "rerun", "applied", "conflict", "unknown"]


def sha256_file(path: Path) -> str | None:
    """Hex digest of a file's bytes, or None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


@dataclass(frozen=True, slots=True)
class FilePlan:
    """What a file write will do: the base it starts from and, when known, its post-image."""

    path: str
    base_hash: str | None
    post_hash: str | None
    patch: str | None = None
    """The change as a unified diff, so a resumed run can tell the model what was applied."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "base_hash": self.base_hash, "post_hash": self.post_hash,
                "patch": self.patch}


def plan_file_change(spec: ToolSpec | None, call: ToolCall, workspace: Path,
                     run_data: Mapping[str, Any]) -> FilePlan | None:
    """The base and post-image of the file a call will write, from the tool's own dry run.

    None for tools that declare no dry run, and for a call that would change several files
    (one plan cannot prove them all: resume treats such a call as unknown, never repeats it).
    A dry run that fails still records the file's current hash when the call names a path.
    """
    if spec is None or spec.dry_run is None:
        return None
    planned = spec.dry_run(dict(call.args), ToolContext(workspace=workspace, run_data=run_data))
    if isinstance(planned, ToolResult):
        path, _ = spec.path_args(call.args)
        if path is None:
            return None
        return FilePlan(path, sha256_file((workspace / path).resolve()), None)
    if len(planned) != 1:
        return None
    (change,) = planned
    return FilePlan(change.path, change.base_hash, change.result_hash, change.patch)


class Ledger:
    """Writes one step's effect records and answers what is known about a call."""

    def __init__(self, store: Store, run_id: str, step: int, clock: Any, *,
                 resumed: bool = True) -> None:
        """``resumed=False``: the step runs for the first time, so the ledger holds nothing
        of it yet and is not read (reading would commit the rows waiting for the step's
        transaction, a commit per step)."""
        self.store = store
        self.run_id = run_id
        self.step = step
        self.clock = clock
        self._known = ({e.call_id: e for e in store.effects(run_id, step=step)} if resumed
                       else {})

    def get(self, call_id: str) -> EffectRecord | None:
        return self._known.get(call_id)

    def mark(self, call: ToolCall, spec: ToolSpec | None, status: str, *,
             result: ToolResult | None = None, file: FilePlan | None = None,
             file_data: Mapping[str, Any] | None = None) -> None:
        """Record ``status`` for ``call``; intents of unprovable effects are synced to disk."""
        idempotent = bool(spec and spec.idempotent)
        side_effects = bool(spec and spec.side_effects)
        file_dict = dict(file_data) if file_data else (file.to_dict() if file else None)
        record = EffectRecord(
            self.run_id, call.id, self.step, call.name, spec.version if spec else "",
            status, idempotent, side_effects, dict(call.args), self.clock(),
            result.to_dict() if result is not None else None, file_dict)
        provable = idempotent or not side_effects  # resume runs it again: no sync needed
        durable = status == "started" and not provable
        # A call that may change the world starts in a transaction of its own, so the steps
        # riding along before it (an approval) are on disk before anything they decided runs.
        buffered = provable and not (side_effects and status == "started")
        self.store.record_effect(record, durable=durable, buffered=buffered)
        prev = self._known.get(call.id)
        if prev is not None and record.file is None and prev.file is not None:
            record = dataclasses.replace(record, file=prev.file)  # the SQL keeps it the same way
        self._known[call.id] = record


def resolve_in_flight(record: EffectRecord, spec: ToolSpec | None,
                      workspace: Path) -> tuple[Resolution, str]:
    """What to do with a call a crashed process had started, and the line that says why."""
    name = record.tool
    if spec is not None and (spec.idempotent or not spec.side_effects):
        return "rerun", f"re-ran {name} (idempotent)"
    if record.file:
        path = record.file.get("path", "")
        current = sha256_file((workspace / path).resolve())
        post, base = record.file.get("post_hash"), record.file.get("base_hash")
        if post is not None and current == post:
            return "applied", f"{name} to {path} was already applied (hash matches)"
        if current == base:
            return "rerun", f"{name} to {path} had not been applied (base hash matches): applied"
        return "conflict", (f"{name} to {path}: the file matches neither the base nor the "
                            "result of the interrupted write (conflict)")
    arg = spec.command_arg if spec is not None else None
    preview = record.args.get(arg) if arg and isinstance(record.args, Mapping) else None
    what = f"shell command `{preview}`" if preview else f"{name} call"
    return "unknown", f"{what} may or may not have run"
