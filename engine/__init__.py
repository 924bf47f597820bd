"""Turnstile: an agent runtime in which every agent and workflow is a persisted state machine.

``__all__`` is the public vocabulary: ``engine.api`` documents the functions, and a test fails
when a name disappears. Names are imported on first use, so ``import engine`` (which every
``python -m engine`` command does first) stays cheap.
"""

from __future__ import annotations

import os
import sys

# ``python -m engine`` puts the folder it runs in first on ``sys.path``: a workspace file named
# like a module the engine imports (``typing.py``, ``json.py``) would run with the engine's
# rights. The package is found by now and its own modules come from its folder, so the
# engine imports the standard library and its dependencies as ``turnstile`` does.
if sys.argv[:1] == ["-m"] and sys.path and not sys.flags.safe_path and \
        os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd()):
    del sys.path[0]

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.api import (
        Machine,
        build_machine,
        load_machine,
        open_store,
        render,
        resume,
        run,
        run_sync,
        stream,
        stream_resume,
        tool,
    )
    from engine.core.runner import (
        RunResult,
    )
    from engine.door import (
        Runs,
        approve,
        deny,
        fork,
        pending_approvals,
    )
    from engine.forks.service import ForkResult
    from engine.models.base import (
        Done,
        ModelClient,
        ModelParams,
        StreamEvent,
        TextDelta,
        ToolCallDelta,
        ToolSchema,
    )
    from engine.models.base import Usage as ModelUsage
    from engine.providers.function import FunctionModel, function_model, tool_call
    from engine.runs.approvals import DecidedApproval, PendingApproval
    from engine.runs.events import (
        Answer,
        ApprovalRequest,
        Approver,
        AsyncApprover,
        EventHandler,
        RunEvent,
    )
    from engine.runs.prepared import PreparedRun
    from engine.runs.reading import RunStore
    from engine.runs.service import ResumeOptions, StartOptions
    from engine.runs.stream import RunStream
    from engine.tooling.spec import (
        ToolContext,
        ToolResult,
        ToolSpec,
    )
    from engine.vocabulary.errors import (
        ModelConfigError,
        SpecError,
        ToolImportError,
        TurnstileError,
    )
    from engine.vocabulary.state import (
        Message,
        Outcome,
        RunInfo,
        RunState,
        StepRecord,
        ToolCall,
        Usage,
    )

_HOME: dict[str, tuple[str, str]] = {
    "Answer": ("engine.runs.events", "Answer"),
    "ApprovalRequest": ("engine.runs.events", "ApprovalRequest"),
    "Approver": ("engine.runs.events", "Approver"),
    "AsyncApprover": ("engine.runs.events", "AsyncApprover"),
    "EventHandler": ("engine.runs.events", "EventHandler"),
    "RunEvent": ("engine.runs.events", "RunEvent"),
    "RunStore": ("engine.runs.reading", "RunStore"),
    "RunStream": ("engine.runs.stream", "RunStream"),
    "Runs": ("engine.door", "Runs"),
    "approve": ("engine.door", "approve"),
    "deny": ("engine.door", "deny"),
    "fork": ("engine.door", "fork"),
    "ForkResult": ("engine.forks.service", "ForkResult"),
    "pending_approvals": ("engine.door", "pending_approvals"),
    "DecidedApproval": ("engine.runs.approvals", "DecidedApproval"),
    "PendingApproval": ("engine.runs.approvals", "PendingApproval"),
    "PreparedRun": ("engine.runs.prepared", "PreparedRun"),
    "StartOptions": ("engine.runs.service", "StartOptions"),
    "ResumeOptions": ("engine.runs.service", "ResumeOptions"),
    "Machine": ("engine.api", "Machine"),
    "build_machine": ("engine.api", "build_machine"),
    "load_machine": ("engine.api", "load_machine"),
    "open_store": ("engine.api", "open_store"),
    "render": ("engine.api", "render"),
    "resume": ("engine.api", "resume"),
    "run": ("engine.api", "run"),
    "run_sync": ("engine.api", "run_sync"),
    "stream": ("engine.api", "stream"),
    "stream_resume": ("engine.api", "stream_resume"),
    "tool": ("engine.api", "tool"),
    "ToolContext": ("engine.tooling.spec", "ToolContext"),
    "ToolResult": ("engine.tooling.spec", "ToolResult"),
    "ToolSpec": ("engine.tooling.spec", "ToolSpec"),
    "ModelConfigError": ("engine.vocabulary.errors", "ModelConfigError"),
    "SpecError": ("engine.vocabulary.errors", "SpecError"),
    "ToolImportError": ("engine.vocabulary.errors", "ToolImportError"),
    "TurnstileError": ("engine.vocabulary.errors", "TurnstileError"),
    "Done": ("engine.models.base", "Done"),
    "ModelClient": ("engine.models.base", "ModelClient"),
    "ModelParams": ("engine.models.base", "ModelParams"),
    "StreamEvent": ("engine.models.base", "StreamEvent"),
    "TextDelta": ("engine.models.base", "TextDelta"),
    "ToolCallDelta": ("engine.models.base", "ToolCallDelta"),
    "ToolSchema": ("engine.models.base", "ToolSchema"),
    "FunctionModel": ("engine.providers.function", "FunctionModel"),
    "function_model": ("engine.providers.function", "function_model"),
    "tool_call": ("engine.providers.function", "tool_call"),
    "RunResult": ("engine.core.runner", "RunResult"),
    "Message": ("engine.vocabulary.state", "Message"),
    "Outcome": ("engine.vocabulary.state", "Outcome"),
    "RunInfo": ("engine.vocabulary.state", "RunInfo"),
    "RunState": ("engine.vocabulary.state", "RunState"),
    "StepRecord": ("engine.vocabulary.state", "StepRecord"),
    "ToolCall": ("engine.vocabulary.state", "ToolCall"),
    "Usage": ("engine.vocabulary.state", "Usage"),
    "ModelUsage": ("engine.models.base", "Usage"),
}
"""Public name -> (module, name there)."""

__all__ = [
    "Answer",
    "ApprovalRequest",
    "Approver",
    "AsyncApprover",
    "DecidedApproval",
    "Done",
    "EventHandler",
    "ForkResult",
    "FunctionModel",
    "Machine",
    "Message",
    "ModelClient",
    "ModelConfigError",
    "ModelParams",
    "ModelUsage",
    "Outcome",
    "PendingApproval",
    "PreparedRun",
    "ResumeOptions",
    "RunEvent",
    "RunInfo",
    "RunResult",
    "RunState",
    "RunStore",
    "RunStream",
    "Runs",
    "SpecError",
    "StartOptions",
    "StepRecord",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolContext",
    "ToolImportError",
    "ToolResult",
    "ToolSchema",
    "ToolSpec",
    "TurnstileError",
    "Usage",
    "approve",
    "build_machine",
    "deny",
    "fork",
    "function_model",
    "load_machine",
    "open_store",
    "pending_approvals",
    "render",
    "resume",
    "run",
    "run_sync",
    "stream",
    "stream_resume",
    "tool",
    "tool_call",
]

from engine.vocabulary.version import __version__ as __version__  # noqa: E402  (re-exported)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    if name not in _HOME:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    module, attr = _HOME[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
