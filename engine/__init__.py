"""Turnstile: an agent runtime in which every agent and workflow is a persisted state machine.

``__all__`` is the public vocabulary; a test keeps it sorted and importable.
"""

from engine.errors import TurnstileError
from engine.state import Message, Outcome, RunInfo, RunState, StepRecord, ToolCall, Usage

__all__ = [
    "Message",
    "Outcome",
    "RunInfo",
    "RunState",
    "StepRecord",
    "ToolCall",
    "TurnstileError",
    "Usage",
]

__version__ = "0.1.0"
