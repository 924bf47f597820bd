"""The keys of a run's ``data``: every key, its type and what it means, declared here once.

A run's data is a JSON object persisted with each step (the stored names below never change,
so old runs load). Actions declare the keys they read and write (``ActionInfo.reads`` and
``writes``); the runner refuses an update to a key the action did not declare, or of the wrong
type (``UndeclaredDataError``), so no module can start writing a key nobody knows about.
Tools reach the data only through ``ToolSpec.records`` (keys marked ``by_tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from engine.vocabulary.errors import UndeclaredDataError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DataKey(Generic[T]):
    """One key of the run's data: its stored name, its JSON type and its meaning."""

    name: str
    types: tuple[type, ...]
    """What ``isinstance`` accepts for a written value (``type(None)`` when it may be null)."""
    default: Callable[[], T]
    doc: str
    by_tools: bool = False
    """Tools may write it (through ``ToolSpec.records``); ``exec_tool`` and ``run_tool`` do."""
    persisted: bool = True
    """False for keys that only exist in the data a dry run sees (never committed)."""

    def get(self, data: Mapping[str, Any]) -> T:
        """The key's value in ``data``, or its default when absent or null."""
        value = data.get(self.name)
        return self.default() if value is None else cast(T, value)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.types)


def _key(name: str, types: tuple[type, ...], default: Callable[[], Any], doc: str,
         **flags: bool) -> DataKey[Any]:
    return DataKey(name, types, default, doc, **flags)


_NONE = type(None)

TASK: DataKey[str] = _key("task", (str,), str, "The task text the run was started with.")
HISTORY: DataKey[list[Any]] = _key(
    "history", (list,), list,
    "An earlier conversation this run continues (``Message.to_dict()``, no system message): "
    "``plan`` puts it between the system prompt and the task.")
PLAN: DataKey[list[Any]] = _key(
    "plan", (list,), list, "The agent's plan: ``[{step, status}]``, replaced by the planning tool.",
    by_tools=True)
PLAN_TEXT: DataKey[str] = _key("plan_text", (str,), str,
                               "The model's initial plan when ``plan`` asks for one.")
PENDING_CALLS: DataKey[list[Any]] = _key(
    "pending_calls", (list,), list,
    "The tool calls of the last model turn not yet run (``ToolCall.to_dict()``).")
APPROVALS: DataKey[dict[str, Any]] = _key(
    "approvals", (dict,), dict, "This turn's decisions by call id (``Approval.to_dict()``).")
GRANTED: DataKey[list[str]] = _key(
    "granted", (list,), list, "Capabilities a person allowed \"always\" in this run.")
RESULTS: DataKey[dict[str, Any]] = _key(
    "results", (dict,), dict, "Each workflow state's result by state name (templates read it).")
FILES_CHANGED: DataKey[dict[str, Any]] = _key(
    "files_changed", (dict,), dict,
    "Path -> ``{base_hash, result_hash[, created, deleted]}`` of every file the run changed.")
FILE_HASHES: DataKey[dict[str, str]] = _key(
    "file_hashes", (dict,), dict,
    "Workspace-relative path -> sha256 of the content the agent last saw (file tools).",
    by_tools=True)
PLANNED_FILES: DataKey[dict[str, bytes]] = _key(
    "planned_files", (dict,), dict,
    "Dry runs only: path -> the post-image an earlier call of the same batch will leave.",
    persisted=False)
CONTEXT: DataKey[dict[str, Any]] = _key(
    "context", (dict,), dict, "The context view's shape and token correction "
    "(``engine.actions.context_window.ContextState``).")
MODEL_TURNS: DataKey[int] = _key("model_turns", (int,), int, "Model turns taken so far.")
FINAL_ANSWER: DataKey[str | None] = _key(
    "final_answer", (str, _NONE), lambda: None, "The model's last answer without tool calls.")
REFUSAL: DataKey[bool] = _key("refusal", (bool,), bool,
                              "True when that answer was the model declining.")
STOP_REASON: DataKey[str] = _key("stop_reason", (str,), str,
                                 "Why ``evaluate_stop`` ended the loop (budgets).")
COUNTERS: DataKey[dict[str, int]] = _key(
    "counters", (dict,), dict, "Workflow loop counters by name (``count_rounds``).")

INPUTS: DataKey[dict[str, Any]] = _key(
    "inputs", (dict,), dict, "What the parent's ``run_machine`` state gave a child run "
    "(``with.inputs``; templates read ``data.inputs``).")

KEYS: dict[str, DataKey[Any]] = {k.name: k for k in (
    TASK, HISTORY, PLAN, PLAN_TEXT, PENDING_CALLS, APPROVALS, GRANTED, RESULTS, FILES_CHANGED,
    FILE_HASHES, PLANNED_FILES, CONTEXT, MODEL_TURNS, FINAL_ANSWER, REFUSAL, STOP_REASON,
    COUNTERS, INPUTS)}
"""Every key a run's data may hold, by stored name."""
TOOL_KEYS: frozenset[str] = frozenset(k.name for k in KEYS.values() if k.by_tools)
"""The keys tools may record (``ToolSpec.records``)."""


def names(keys: Iterable[DataKey[Any]]) -> frozenset[str]:
    """The stored names of ``keys``; each must be declared here."""
    out = frozenset(k.name for k in keys)
    unknown = sorted(out - KEYS.keys())
    if unknown:
        raise UndeclaredDataError("run-data keys not declared in engine.vocabulary.run_data: "
                                  f"{unknown}")
    return out


def check_updates(updates: Mapping[str, Any], allowed: frozenset[str], who: str) -> None:
    """Refuse an update to a key ``who`` did not declare, or a value of the wrong type."""
    for name, value in updates.items():
        key = KEYS.get(name)
        if key is None or not key.persisted:
            raise UndeclaredDataError(f"{who} wrote run-data key {name!r}, which "
                                      "engine.vocabulary.run_data does not declare")
        if name not in allowed:
            raise UndeclaredDataError(f"{who} wrote run-data key {name!r} without declaring it "
                                      f"(declared: {', '.join(sorted(allowed)) or 'none'})")
        if not key.accepts(value):
            raise UndeclaredDataError(f"{who} wrote run-data key {name!r} as "
                                      f"{type(value).__name__}; it holds "
                                      f"{' or '.join(t.__name__ for t in key.types)}")
