"""The machine spec: frozen values describing a machine as declared in its YAML file.

``engine.spec.load`` builds them (with the line of every key, for error messages) and
``engine.validation.check`` proves them sound against the action registry. Nothing here reads files.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Trust = Literal["trusted", "internal", "untrusted"]
MIB = 1024 * 1024
GIB = 1024 * MIB
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": MIB, "G": GIB}
Kind = Literal["agent", "workflow"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Limits(_Frozen):
    """Budgets a run may not exceed; ``None`` means unlimited."""

    max_steps: int = 100
    """Steps (state executions) before the run fails as exhausted."""
    max_tokens: int | None = None
    """Input plus output tokens over all model calls."""
    max_cost_usd: float | None = None
    """Model cost in US dollars, priced from the model's price table."""
    timeout_s: float | None = None
    """Wall-clock seconds for the whole run."""


class ContextSpec(_Frozen):
    """How the conversation is kept inside the model's window."""

    window_tokens: int | None = None
    """The model's context window; ``None`` takes the model's own default."""
    compress_at: float = 0.8
    """Fraction of the window at which older turns are summarised."""
    keep_recent_turns: int = 6
    """Turns that are never summarised."""


ReasoningEffort = Literal["minimal", "low", "medium", "high"]


class ModelOptions(_Frozen):
    """Model settings (``model_options:`` of a machine or a ``call_model`` state, and
    ``--model-option KEY=VALUE``); ``None`` leaves the provider's default. Each client sends
    them in its own wire format."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature, 0 to 2 (Anthropic: 0 to 1)."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling: the probability mass sampled from, above 0 and at most 1."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Most tokens one answer may have."""
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks (OpenAI ``reasoning_effort``; Anthropic extended
    thinking with a budget of 1024, 2048, 8192 or 24576 tokens)."""
    seed: int | None = None
    """Sampling seed, for repeatable answers where the provider supports it (not Anthropic)."""
    stop: tuple[str, ...] | None = Field(default=None, min_length=1, max_length=4)
    """Up to four sequences that end the answer; one string is one sequence."""

    @field_validator("stop", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        if isinstance(value, str):
            return (value,)
        return tuple(value) if isinstance(value, list) else value

    @field_validator("stop")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and any(not s for s in value):
            raise ValueError("a stop sequence cannot be empty")
        return value

    def set_values(self) -> dict[str, object]:
        """Only the settings given (so a later layer overrides just those)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


SandboxMode = Literal["auto", "required", "off"]
NetworkAccess = Literal["deny", "ask", "allow"]


class SandboxLimits(_Frozen):
    """What one confined command may consume (``sandbox: {limits: {...}}``); the defaults are
    bounds a laptop user would accept: a build or a test suite fits in them. Sizes are bytes,
    or a number with ``K``, ``M`` or ``G`` (powers of 1024)."""

    processes: int = Field(default=1024, ge=16)
    """Processes and threads alive at once in one command (a pids cgroup)."""
    tmp: int = Field(default=GIB, ge=MIB)
    """Bytes the command's private ``/tmp`` may hold (the size of its tmpfs)."""
    memory: int = Field(default=4 * GIB, ge=64 * MIB)
    """Bytes of memory the command's processes use together (a memory cgroup)."""
    cpu_s: int = Field(default=3600, ge=1)
    """CPU seconds each process may use (``RLIMIT_CPU``)."""
    file_size: int = Field(default=4 * GIB, ge=MIB)
    """Largest file a process may write (``RLIMIT_FSIZE``: the write fails with EFBIG)."""

    @field_validator("tmp", "memory", "file_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return parse_size(value)


def parse_size(value: Any) -> Any:
    """``"64M"`` as bytes; anything else unchanged (validation then says what is wrong)."""
    if isinstance(value, str) and (match := _SIZE.match(value)):
        return int(match.group(1)) * _UNITS[match.group(2).upper()]
    return value


class SandboxSpec(_Frozen):
    """How shell commands (and sandboxed MCP servers) are confined; see ``engine.sandbox``."""

    mode: SandboxMode = "auto"
    """``auto``: confine when bubblewrap works, else say so and run unconfined; ``required``:
    refuse to start without confinement; ``off``: never confine."""
    network: NetworkAccess = "deny"
    """``deny``: no network inside; ``ask``: network only for a call approved as a network
    call; ``allow``: the host's network."""
    writable: tuple[str, ...] = ()
    """Directories writable besides the workspace and the private ``/tmp``."""
    readable: tuple[str, ...] = ()
    """Directories made visible read-only (useful for folders under ``/tmp``)."""
    env: tuple[str, ...] = ()
    """Secret-looking environment variables passed through anyway."""
    hide: tuple[str, ...] = ()
    """More secret folders or files to mask (``~`` is the home folder)."""
    vcs: Literal["read", "write"] = "read"
    """``read``: nothing under ``.git/`` changes; ``write``: commits, branches and the index
    may (``git add``/``commit``), never the repository's configuration or hooks."""
    limits: SandboxLimits = SandboxLimits()
    """Bounds on processes, ``/tmp``, memory, CPU time and file size per command."""


class McpServerSpec(_Frozen):
    """One MCP server a machine uses: a local command (stdio) or a URL (streamable HTTP)."""

    command: str | None = None
    """Executable for a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Arguments of ``command``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for ``command``."""
    cwd: str | None = None
    """Working directory for ``command``."""
    url: str | None = None
    """Endpoint of a streamable-HTTP server."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to ``url``."""
    type: Literal["stdio", "http", "sse"] | None = None
    """For ``url``: ``http`` (streamable), ``sse`` (the older HTTP+SSE); unset tries both."""
    trust: Trust = "untrusted"
    """Untrusted servers' annotations never lower a tool's risk."""
    timeout_s: float = 60.0
    """Seconds one call to this server may take."""
    sandbox: SandboxSpec | None = None
    """Confine a stdio server like a shell command; off unless set."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of 'command' (stdio) or 'url' (HTTP)")
        return self


class StateSpec(_Frozen):
    """One state: the action it runs and where each trigger leads, or a final state."""

    name: str
    action: str | None = None
    """Name of an action in the registry; ``None`` for final states."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The state's ``with:`` mapping, validated by the action's params model at check time."""
    on: dict[str, str] = Field(default_factory=dict)
    """Trigger -> destination state, in declaration order."""
    final: bool = False
    """A final state ends the run; it has no action and no transitions."""
    description: str = ""
    line: int = 0
    """Line of the state's name in the file (0 when built in code)."""
    on_lines: dict[str, int] = Field(default_factory=dict)
    """Line of each trigger under ``on:``."""
    key_lines: dict[str, int] = Field(default_factory=dict)
    """Line of every other key inside the state, by dotted path (``action``, ``with.tool``)."""

    def action_label(self) -> str:
        """The action as diagrams show it: a ``run_machine`` state names its child machine."""
        action = self.action or "?"
        if action == "run_machine" and self.params.get("machine"):
            return f"{action} → {self.params['machine']}"
        return action

    def line_of(self, key: str) -> int:
        """The line of ``key`` (a dotted path inside the state), else of the state itself."""
        while key:
            if key in self.key_lines:
                return self.key_lines[key]
            key = key.rpartition(".")[0]
        return self.line


class MachineSpec(_Frozen):
    """A whole machine as declared in one YAML file."""

    name: str
    kind: Kind = "agent"
    """Informational: the engine runs agents and workflows alike."""
    description: str = ""
    initial: str = ""
    """The state a run starts in (``""`` when the file declares none; check reports it)."""
    model: str | None = None
    """Model spec such as ``scripted`` or ``openai:gpt-4o-mini``; the CLI may override it."""
    model_options: ModelOptions = Field(default_factory=ModelOptions)
    """Model settings for every call; a ``call_model`` state's and the CLI's override them."""
    limits: Limits = Field(default_factory=Limits)
    context: ContextSpec | None = None
    tools: tuple[str, ...] = ()
    """Built-in tool names the model may call (existence is checked by the tool registry)."""
    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict)
    children: tuple[str, ...] = ()
    """Machines the model may hand a task to with the ``delegate`` tool (files beside this
    one, or bundled names); each runs as a child run whose permissions only narrow."""
    policy: str | None = None
    """Path to a policy YAML, relative to the machine file."""
    sandbox: SandboxSpec | None = None
    """Confinement of shell commands; a policy file's ``sandbox:`` overrides it key by key."""
    system_prompt: str | None = None
    states: dict[str, StateSpec]
    """State name -> state, in file order."""
    path: str = ""
    """The file as the user named it (used in every error message)."""
    source_hash: str = ""
    """SHA-256 hex of the file's bytes: a run refuses to resume on a changed machine."""
    key_lines: dict[str, int] = Field(default_factory=dict)
    """Line of each top-level key (``initial``, ``states``, ...)."""

    @property
    def final_states(self) -> tuple[str, ...]:
        """Names of the final states, in file order."""
        return tuple(name for name, s in self.states.items() if s.final)

    def transitions(self) -> list[tuple[str, str, str]]:
        """Every declared ``(source, trigger, dest)``, in file order."""
        return [(name, trigger, dest)
                for name, state in self.states.items() for trigger, dest in state.on.items()]


def machine_hash(spec: MachineSpec) -> str:
    """The identity of a machine's source, stored with each run."""
    return spec.source_hash
