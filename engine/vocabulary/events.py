"""Every kind of event a run records or shows, and the payload each one carries, in one place.

``EventKind`` is a ``str`` enum: a member *is* its stored string (``EventKind.TOOL_CALL ==
"tool_call"``), so events written before it existed read back unchanged and JSON and SQLite
see plain strings. Emitters name members, never bare strings; readers compare with members.
``PAYLOADS`` maps each kind to the ``TypedDict`` of its payload (keys a reader may rely on;
``total=False`` where a key is only sometimes there). Transient kinds are shown live, never
persisted (``TRANSIENT``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict


class EventKind(StrEnum):
    """The kind of an event: the ``kind`` column of the events table."""

    SANDBOX = "sandbox"
    """Run start: how shell commands are confined."""
    STEP_BEGIN = "step_begin"
    STEP_COMMIT = "step_commit"
    RUN_END = "run_end"
    TEXT_DELTA = "text_delta"
    STREAM = "stream"
    """Streamed model text and command output, coalesced (``engine.tracing.stream_events``)."""
    MODEL_CALL = "model_call"
    MODEL_RETRY = "model_retry"
    CONTEXT_COMPRESSED = "context_compressed"
    APPROVAL = "approval"
    APPROVAL_REQUESTED = "approval_requested"
    TOOL_STARTED = "tool_started"
    TOOL_PROCESS = "tool_process"
    TOOL_OUTPUT = "tool_output"
    TOOL_CALL = "tool_call"
    FILE_CHANGED = "file_changed"
    EFFECT_RESOLVED = "effect_resolved"
    LEFTOVER_STOPPED = "leftover_stopped"
    MCP_TOOLS_CHANGED = "mcp_tools_changed"
    MCP_SERVER_FAILED = "mcp_server_failed"
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable"
    MCP_SERVER_CRASHED = "mcp_server_crashed"
    MCP_SERVER_ERROR = "mcp_server_error"
    MCP_CALL_FAILED = "mcp_call_failed"
    CHILD_STARTED = "child_started"
    """A step started (or resumed) a child run: ``child_run_id``, ``machine``, ``resumed``."""
    CHILD_ENDED = "child_ended"
    """That child run ended: ``child_run_id``, ``status``, ``error``."""


TRANSIENT = frozenset({EventKind.TEXT_DELTA, EventKind.STEP_BEGIN, EventKind.STEP_COMMIT,
                       EventKind.RUN_END})
"""Shown live, never persisted (``tool_output`` is both: shown, and stored up to a cap)."""


def kind_of(value: str) -> EventKind | str:
    """The member for a stored kind, or the string itself for a kind this version does not
    know (a newer engine's), so reading an old or new database never fails on it."""
    try:
        return EventKind(value)
    except ValueError:
        return value


class SandboxPayload(TypedDict, total=False):
    """``Confinement.describe()`` plus the line the live output shows."""

    sandboxed: bool
    mode: str
    network: str
    reason: str
    writable: list[str]
    limits: dict[str, bool]
    note: str


class StepBeginPayload(TypedDict):
    step: int
    state: str
    action: str
    resumed: bool
    waits: bool
    """The step may wait before it shows anything (``ActionInfo.waits``)."""


class StepCommitPayload(TypedDict):
    step: int
    state: str
    trigger: str
    dest: str
    note: str | None


class RunEndPayload(TypedDict, total=False):
    status: str
    state: str
    error: str | None


class TextDeltaPayload(TypedDict):
    text: str


class StreamPayload(TypedDict, total=False):
    channel: str
    """``text`` (the model's) or ``tool_output`` (a command's, with ``call_id``)."""
    call_id: str
    text: str
    truncated: bool


class ModelCallPayload(TypedDict, total=False):
    provider: str
    model: str
    response_model: str | None
    response_id: str | None
    server_address: str | None
    server_port: int | None
    request: dict[str, Any]
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    refusal: str | None
    reasoning_blocks: int | None
    duration_s: float
    ttft_s: float | None
    retries: int
    finish_reason: str | None
    messages: int
    purpose: str
    context_tokens: int | None
    tool_calls: list[dict[str, Any]]
    text: str


class ModelRetryPayload(TypedDict):
    attempt: int
    reason: str
    wait_s: float


class ContextCompressedPayload(TypedDict, total=False):
    tokens_before: int
    tokens_after: int
    window: int
    budget: int
    strategy: str
    kept_turns: int
    stubbed: int
    summarized: list[int] | None
    summary_text: str | None


class ApprovalPayload(TypedDict, total=False):
    call_id: str
    tool: str
    decision: str
    risk: str
    reason: str
    rule: str | None
    decided_by: str
    capability: str
    post_images: dict[str, str]
    args: dict[str, Any]


class ApprovalRequestedPayload(TypedDict):
    calls: list[str]
    note: str


class ToolStartedPayload(TypedDict, total=False):
    call_id: str
    tool: str
    version: str | None
    args: dict[str, Any]
    sandbox: dict[str, Any]


class ToolProcessPayload(TypedDict, total=False):
    call_id: str
    pid: int
    pgid: int
    start_ticks: int | None


class ToolOutputPayload(TypedDict, total=False):
    call_id: str
    stream: str
    line: str


class ToolCallPayload(TypedDict, total=False):
    """``engine.tooling.invoke.describe_call`` plus ``content``; the tool's ``reported`` result
    keys (``path``, ``result_hash``, ``exit_code``, ...) ride along."""

    call_id: str
    tool: str
    version: str | None
    args: dict[str, Any]
    duration_s: float
    outcome: str
    is_error: bool
    risk: str
    idempotent: bool
    side_effects: bool
    source: str
    truncated: bool
    content_chars: int
    content: str


class FileChangedPayload(TypedDict, total=False):
    call_id: str
    tool: str
    path: str
    base_hash: str | None
    result_hash: str | None
    created: bool
    deleted: bool
    patch: str


class EffectResolvedPayload(TypedDict):
    call_id: str
    tool: str
    resolution: str
    message: str


class LeftoverStoppedPayload(TypedDict):
    call_id: str
    pgid: int
    message: str


class McpPayload(TypedDict, total=False):
    """The MCP events' common shape: the server and what happened to it."""

    server: str
    tool: str | None
    error: str | None
    reason: str
    phase: str
    stderr: str
    restarts: int
    max_restarts: int
    added: list[str]
    removed: list[str]
    changed: list[str]
    registry_version: int


class ChildStartedPayload(TypedDict):
    child_run_id: str
    machine: str
    resumed: bool


class ChildEndedPayload(TypedDict):
    child_run_id: str
    status: str
    error: str | None


PAYLOADS: dict[EventKind, type] = {
    EventKind.SANDBOX: SandboxPayload,
    EventKind.STEP_BEGIN: StepBeginPayload,
    EventKind.STEP_COMMIT: StepCommitPayload,
    EventKind.RUN_END: RunEndPayload,
    EventKind.TEXT_DELTA: TextDeltaPayload,
    EventKind.STREAM: StreamPayload,
    EventKind.MODEL_CALL: ModelCallPayload,
    EventKind.MODEL_RETRY: ModelRetryPayload,
    EventKind.CONTEXT_COMPRESSED: ContextCompressedPayload,
    EventKind.APPROVAL: ApprovalPayload,
    EventKind.APPROVAL_REQUESTED: ApprovalRequestedPayload,
    EventKind.TOOL_STARTED: ToolStartedPayload,
    EventKind.TOOL_PROCESS: ToolProcessPayload,
    EventKind.TOOL_OUTPUT: ToolOutputPayload,
    EventKind.TOOL_CALL: ToolCallPayload,
    EventKind.FILE_CHANGED: FileChangedPayload,
    EventKind.EFFECT_RESOLVED: EffectResolvedPayload,
    EventKind.LEFTOVER_STOPPED: LeftoverStoppedPayload,
    EventKind.MCP_TOOLS_CHANGED: McpPayload,
    EventKind.MCP_SERVER_FAILED: McpPayload,
    EventKind.MCP_SERVER_UNAVAILABLE: McpPayload,
    EventKind.MCP_SERVER_CRASHED: McpPayload,
    EventKind.MCP_SERVER_ERROR: McpPayload,
    EventKind.MCP_CALL_FAILED: McpPayload,
    EventKind.CHILD_STARTED: ChildStartedPayload,
    EventKind.CHILD_ENDED: ChildEndedPayload,
}
"""The payload type of every kind (a test checks that each member has one)."""
