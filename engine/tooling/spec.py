"""The tool contract: what a tool declares (``ToolSpec``), receives (``ToolContext``), returns.

Tool failures are results (``ToolResult(is_error=True)``), never exceptions: the model sees
them and can recover. Risk, idempotency and side effects are declared here and read by the
permission layer and the side-effect ledger.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from engine.sandbox import Confinement

Risk = Literal["read", "exec", "write", "network", "install", "destructive"]
RISK_ORDER: tuple[Risk, ...] = ("read", "exec", "write", "network", "install", "destructive")
"""Risk classes from least to most dangerous; a compound takes the highest."""


SEEN_HASHES_KEY = "file_hashes"
"""``run_data`` key: workspace-relative path -> sha256 of the content the agent last saw."""
PLANNED_FILES_KEY = "planned_files"
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
    confinement: Confinement | None = None
    """How subprocesses are confined (``engine.sandbox``); None: unconfined, as decided by
    whoever builds the context (tests, dry runs)."""
    approved_risk: str | None = None
    """The risk the call was approved under (``network`` opens the network in ``ask`` mode)."""
    idempotency_key: str = ""
    """``RUN_ID:CALL_ID``: the same for every attempt at this call (a resumed or retried step
    too), so a system outside the ledger's reach can drop a repeat: shell commands get it as
    ``ENGINE_IDEMPOTENCY_KEY``, MCP calls in their request ``_meta``."""


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
