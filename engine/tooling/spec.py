"""The tool contract: what a tool declares (``ToolSpec``), receives (``ToolContext``), returns.

Tool failures are results (``ToolResult(is_error=True)``), never exceptions: the model sees
them and can recover. Everything the engine knows about a tool is declared on its spec: risk,
idempotency and side effects (the permission layer, the side-effect ledger), the command and
path arguments the policy judges, the dry run that previews and plans its file changes, the
run data it records, the result data its events report, and how its file changes are found.
The engine never tells tools apart by name.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from engine.tooling.confine import UNCONFINED, CommandConfinement
from engine.vocabulary.errors import ToolError
from engine.vocabulary.events import EventKind as EventKind
from engine.vocabulary.run_data import FILE_HASHES, PLANNED_FILES, TOOL_KEYS, check_updates

Risk = Literal["read", "exec", "write", "network", "install", "destructive"]
RISK_ORDER: tuple[Risk, ...] = ("read", "exec", "write", "network", "install", "destructive")
"""Risk classes from least to most dangerous; a compound takes the highest."""


SEEN_HASHES_KEY = FILE_HASHES.name
"""``run_data`` key: workspace-relative path -> sha256 of the content the agent last saw."""
PLANNED_FILES_KEY = PLANNED_FILES.name
"""``run_data`` key, for dry runs only: workspace-relative path -> the post-image an earlier
call of the same batch will leave, so a later call's preview is planned on top of it."""


def max_risk(*risks: Risk) -> Risk:
    """The most dangerous of ``risks`` (``read`` when given none)."""
    return max(risks, key=RISK_ORDER.index, default="read")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced, as the model will see it."""

    content: str
    is_error: bool = False
    data: Mapping[str, Any] | None = None
    """Structured data for the engine (hashes, exit code, diff); not sent to the model."""
    truncated: bool = False
    omitted_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"content": self.content, "is_error": self.is_error}
        if self.data:
            d["data"] = dict(self.data)
        if self.truncated:
            d["truncated"] = True
            d["omitted_bytes"] = self.omitted_bytes
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolResult:
        return cls(d.get("content", ""), bool(d.get("is_error")), d.get("data"),
                   bool(d.get("truncated")), int(d.get("omitted_bytes") or 0))

    @classmethod
    def error(cls, message: str, **data: Any) -> ToolResult:
        return cls(message, True, data or None)


class EventSink(Protocol):
    """Where a running tool reports progress (streamed output lines, file changes)."""

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None: ...


def _ignore(kind: str, payload: Mapping[str, Any]) -> None:
    return None


TextReader = Callable[[Path], Awaitable["str | None"]]
"""Reads a file's text where its host keeps it (an editor's buffer, unsaved edits included),
given the file's absolute path; None when the host cannot say (the file is then read on disk)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may use while it runs; nothing else is reachable from a handler."""

    workspace: Path
    emit: EventSink = _ignore
    timeout_s: float | None = None
    """Overrides the tool's default timeout when set."""
    env: Mapping[str, str] | None = None
    """Extra environment for subprocesses (secrets are scrubbed unless passed here)."""
    run_data: Mapping[str, Any] = field(default_factory=dict)
    """Read-only view of the run's data (e.g. file hashes the agent has seen)."""
    call_id: str = ""
    confinement: CommandConfinement = UNCONFINED
    """How subprocesses are confined: the run's sandbox, handed in by the engine; unconfined
    when whoever builds the context gives none (tests, dry runs)."""
    approved_risk: str | None = None
    """The risk the call was approved under (``network`` opens the network in ``ask`` mode)."""
    idempotency_key: str = ""
    """``RUN_ID:CALL_ID``: the same for every attempt at this call (a resumed or retried step
    too), so a system outside the ledger's reach can drop a repeat: shell commands get it as
    ``ENGINE_IDEMPOTENCY_KEY``, MCP calls in their request ``_meta``."""
    read_text: TextReader | None = None
    """Where a file's text is read besides the disk: the host's (an editor's open buffers),
    asked only after the tool's own path checks passed; None: the disk only."""


Handler = Callable[[Any, ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a call would change, as the tool's own dry run works it out.

    The approval preview shows ``patch`` and the side-effect ledger records ``result_hash`` as
    the planned post-image: both come from the code path the call itself runs.
    """

    path: str
    """Workspace-relative, ``/``-separated."""
    before: bytes | None
    """The current content; None when the call creates the file."""
    after: bytes
    """The post-image: the content the file will have after the call."""
    patch: str
    """The unified diff from ``before`` to ``after``, as the tool reports it."""

    @property
    def base_hash(self) -> str | None:
        return None if self.before is None else hashlib.sha256(self.before).hexdigest()

    @property
    def result_hash(self) -> str:
        return hashlib.sha256(self.after).hexdigest()


DryRun = Callable[[Mapping[str, Any], ToolContext], "tuple[FileChange, ...] | ToolResult"]
"""What a call would change, without changing anything: every file with its post-image, or an
error result saying why the call would fail. Pure apart from reading files."""


Recorder = Callable[[Mapping[str, Any], "ToolResult"], Mapping[str, Any]]
"""What a finished call means for the run's data: given the data as the call saw it and the
result, the updates to make (only keys the tool declares in ``ToolSpec.records_keys``)."""


@dataclass(frozen=True, slots=True)
class WatchReport:
    """The files a call changed, and what could not be looked at (None: everything was)."""

    files: list[dict[str, Any]]
    """Each changed file: ``path``, ``base_hash``, ``result_hash``, ``created``, ``deleted``
    and, for a small text file whose earlier content is known, ``patch``."""
    not_covered: str | None = None
    """A sentence for the model and the trace when part of the workspace was not compared."""


class Watcher(Protocol):
    """Finds the files a call changed when the tool cannot say itself (a shell command)."""

    def snapshot(self, workspace: Path) -> Any:
        """The workspace before the call (a mark: its cost must not grow with the workspace)."""

    def changes(self, workspace: Path, before: Any) -> WatchReport:
        """Each file changed since ``before``."""

    def prepare(self, workspace: Path) -> None:
        """Begin, off the caller's thread, the one-time work the first ``snapshot`` of
        ``workspace`` needs (a large repository's watches and baseline), so that a run's first
        command does not wait for it; the run calls it when it starts."""


@functools.lru_cache(maxsize=512)
def _model_schema(model: type[BaseModel]) -> Mapping[str, Any]:
    """A pydantic model's JSON schema, built once (it is asked for on every model call)."""
    return model.model_json_schema()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """Everything the engine knows about a tool before running it."""

    name: str
    version: str
    description: str
    input_model: type[BaseModel] | None
    """Pydantic model validating arguments; None when ``input_schema`` is given (MCP tools)."""
    handler: Handler
    risk: Risk = "read"
    idempotent: bool = True
    side_effects: bool = False
    changelog: tuple[str, ...] = ()
    source: str = "builtin"
    """``builtin`` or ``mcp:<server>``."""
    timeout_s: float = 120.0
    raw_input_schema: Mapping[str, Any] | None = None
    """JSON schema for tools not described by a pydantic model (MCP)."""
    annotations: Mapping[str, Any] | None = None
    """What an MCP server claimed about the tool (never trusted on its own)."""
    server: str | None = None
    trust: str | None = None
    dry_run: DryRun | None = None
    """Declared by tools that write files: the approval preview and the ledger's planned
    post-image are both taken from it, never worked out a second time elsewhere."""
    command_arg: str | None = None
    """The argument holding a shell command the call runs (None: the tool runs no command).
    Such a call is judged command by command, confined by the run's sandbox, and watched."""
    read_paths: tuple[str, ...] = ()
    """Arguments naming a file or directory the call reads (judged as reads of that path)."""
    write_paths: tuple[str, ...] = ()
    """Arguments naming a file the call writes (judged as writes, previewed by ``dry_run``)."""
    records: Recorder | None = None
    """How a result updates the run's data (e.g. the file hashes the agent has seen)."""
    records_keys: frozenset[str] = frozenset()
    """The run-data keys ``records`` may update; each must be a ``by_tools`` key of
    ``engine.vocabulary.run_data``."""
    reported: tuple[str, ...] = ()
    """Keys of ``ToolResult.data`` copied into the ``tool_call`` event (hashes, exit code)."""
    watcher: Watcher | None = None
    """Finds the files a call changed when its result cannot say (shell commands)."""

    def __post_init__(self) -> None:
        undeclared = sorted(self.records_keys - TOOL_KEYS)
        if undeclared:
            raise ToolError(f"tool {self.name}: records_keys {undeclared} are not run-data "
                             "keys tools may write (engine.vocabulary.run_data)")

    def record(self, run_data: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
        """The run-data updates a result makes (checked against ``records_keys``)."""
        if self.records is None:
            return {}
        updates = dict(self.records(run_data, result))
        check_updates(updates, self.records_keys, f"tool {self.name}")
        return updates

    def path_args(self, args: Mapping[str, Any]) -> tuple[str | None, bool]:
        """The path a call names (the first declared path argument given as a string) and
        whether the call writes it."""
        for name in self.write_paths:
            if isinstance(args.get(name), str):
                return args[name], True
        for name in self.read_paths:
            if isinstance(args.get(name), str):
                return args[name], False
        return None, False

    @property
    def input_schema(self) -> dict[str, Any]:
        if self.raw_input_schema is not None:
            return dict(self.raw_input_schema)
        if self.input_model is None:
            return {"type": "object", "properties": {}}
        return dict(_model_schema(self.input_model))

    @property
    def schema_hash(self) -> str:
        blob = json.dumps(self.input_schema, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def describe(self) -> dict[str, Any]:
        """The JSON form used by ``engine tools --json`` (without the policy decision)."""
        d: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "risk": self.risk,
            "idempotent": self.idempotent,
            "side_effects": self.side_effects,
            "source": self.source,
            "input_schema": self.input_schema,
        }
        if self.server is not None:
            d.update(server=self.server, trust=self.trust, annotations=self.annotations or {})
        return d
