"""The Python API: load or build a machine, run it with Python tools and any model, from code.

A run started here is the same run the CLI starts (both go through ``engine.runs.Runs``),
stored in the same store (``store=`` a path or URL, else ``$ENGINE_STORE_URL``,
``$ENGINE_DB``, ``.engine/engine.db``), resumable from Python or with the ``resume`` command.
The library never installs a signal handler: cancelling the task that awaits ``run`` or
``resume`` interrupts the run cleanly (status ``interrupted``, resumable), from any thread and
any asyncio or anyio event loop. Names are imported as they are used: ``engine.door`` (the
``Runs`` front door and the approval functions) only when a run is started or read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.runs.events import (
    Answer,
    ApprovalRequest,
    Approver,
    AsyncApprover,
    EventHandler,
    RunEvent,
)
from engine.tooling.functions import tool
from engine.tooling.spec import ToolContext, ToolResult, ToolSpec

if TYPE_CHECKING:
    from engine.core.runner import RunResult
    from engine.models.base import ModelClient
    from engine.runs.reading import RunStore
    from engine.runs.stream import RunStream
    from engine.spec.model import MachineSpec, StateSpec

DEFAULT_DB = Path(".engine") / "engine.db"
"""Where runs are stored when nothing (argument or environment) names a store."""


# -- machines ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """A checked machine: loaded from YAML (``load_machine``) or built in Python
    (``build_machine``); both go through the same validation."""

    spec: MachineSpec
    definition: Mapping[str, Any] | None = None
    """The Python values it was built from (None for a YAML file); stored with its runs."""
    tools: tuple[ToolSpec, ...] = ()
    """Tools given as objects in ``build_machine(tools=...)`` (run with every run)."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def path(self) -> Path:
        return Path(self.spec.path)

    @property
    def states(self) -> Mapping[str, StateSpec]:
        return self.spec.states

    def render(self, fmt: Literal["mermaid", "dot"] = "mermaid") -> str:
        """The state diagram as Mermaid or Graphviz DOT text."""
        return render(self, fmt)


def load_machine(path: str | Path) -> Machine:
    """Read and check a machine file (or the bundled machine of that name: ``coding_agent``);
    ``SpecError`` lists every problem with its line."""
    from engine.actions.registry import ACTIONS
    from engine.spec.bundled import machine_path
    from engine.validation import load_machine as load_spec

    return Machine(load_spec(machine_path(os.fspath(path)), ACTIONS))


def build_machine(*, name: str, initial: str, states: Mapping[str, Mapping[str, Any]],
                  tools: Sequence[str | ToolSpec | Callable[..., Any]] = (),
                  **fields: Any) -> Machine:
    """The machine a YAML file with these fields would declare, checked the same way.

    ``states`` maps each state to ``{"action": ..., "with": {...}, "on": {...}}`` or
    ``{"final": True}``; ``tools`` takes built-in names, ``module:function`` references and
    ``@tool`` functions. Other top-level fields (``limits``, ``context``, ``model``, ...) are
    passed by keyword.
    """
    from engine.actions.registry import ACTIONS
    from engine.tooling.functions import spec_of
    from engine.validation import machine_from_definition

    names: list[str] = []
    objects: list[ToolSpec] = []
    for entry in tools:
        if isinstance(entry, str):
            names.append(entry)
        else:
            found = spec_of(entry, repr(entry))
            objects.append(found)
            names.append(found.source.removeprefix("python:") if _importable(found)
                         else found.name)
    definition = {"name": name, "initial": initial, **fields, "tools": names,
                  "states": {k: dict(v) for k, v in states.items()}}
    shown = f"<machine {name}>"
    spec = machine_from_definition(definition, ACTIONS, shown)
    return Machine(spec, definition, tuple(s for s in objects if not _importable(s)))


def render(machine: Machine | str | Path, fmt: Literal["mermaid", "dot"] = "mermaid") -> str:
    """The machine's state diagram as Mermaid (default) or Graphviz DOT source."""
    from engine.spec.diagram import diagram_text

    return diagram_text(_machine(machine).spec, fmt)


def _machine(machine: Machine | str | Path) -> Machine:
    return machine if isinstance(machine, Machine) else load_machine(machine)


def _importable(spec: ToolSpec) -> bool:
    """A function tool a new process can import again (not one defined in ``__main__`` or
    inside a function)."""
    ref = spec.source.removeprefix("python:")
    return (spec.source.startswith("python:") and not ref.startswith("__main__:")
            and "<locals>" not in ref)


# -- running ----------------------------------------------------------------------------


async def run(machine: Machine | str | Path, *, task: str | None = None,
              tools: Sequence[ToolSpec | Callable[..., Any]] = (),
              model: str | ModelClient | None = None, db: str | Path | None = None,
              workspace: str | Path | None = None, approver: Approver | None = None,
              approval: Literal["policy", "auto", "deny", "park"] | None = None,
              policy: str | Path | None = None, on_event: EventHandler | None = None,
              limits: Mapping[str, Any] | None = None,
              model_options: Mapping[str, Any] | None = None,
              store: str | os.PathLike[str] | None = None,
              mcp_config: str | Path | None = None) -> RunResult:
    """Start a run of ``machine`` on ``task`` and drive it to its end.

    ``machine`` is a ``Machine``, a machine file or the name of a bundled machine
    (``coding_agent``). ``tools`` are ``@tool`` functions (or ``ToolSpec`` objects) offered
    beside the machine's; ``model`` is a spec (``"openai:gpt-4.1"``, ``"scripted:turns.yaml"``)
    or any object with the ``ModelClient`` protocol (a machine that calls no model needs
    none). With ``approver``, calls the policy would ask about go to it; otherwise ``approval``
    (default ``policy``) decides. ``on_event`` sees every ``RunEvent``. ``store`` (a path or
    URL, as ``--store``; ``db`` is a path) defaults to ``$ENGINE_STORE_URL``, ``$ENGINE_DB``,
    ``.engine/engine.db``. Returns the run's ``RunResult`` (``status``: completed, failed,
    waiting_approval).
    """
    from engine.door import Runs

    return await Runs(store, db=db).start(
        machine, task=task, tools=tools, model=model, workspace=workspace, approver=approver,
        approval=approval, policy=policy, on_event=on_event, limits=limits,
        model_options=model_options, mcp_config=mcp_config)


async def resume(run_id: str, *, tools: Sequence[ToolSpec | Callable[..., Any]] = (),
                 model: str | ModelClient | None = None, db: str | Path | None = None,
                 approver: Approver | None = None,
                 approval: Literal["policy", "auto", "deny", "park"] | None = None,
                 on_event: EventHandler | None = None,
                 allow_changed_machine: bool = False,
                 store: str | os.PathLike[str] | None = None) -> RunResult:
    """Continue an interrupted, failed, crashed or parked run from its last committed step.

    Tools the machine names by import path are imported again; tools and a model object the
    run was started with in code are given again here (``ToolImportError`` or
    ``ModelConfigError`` says which is missing).
    """
    from engine.door import Runs

    return await Runs(store, db=db).resume(
        run_id, tools=tools, model=model, approver=approver, approval=approval,
        on_event=on_event, allow_changed_machine=allow_changed_machine)


def run_sync(machine: Machine | str | Path, **kwargs: Any) -> RunResult:
    """``run`` for code without an event loop (a script, a worker thread)."""
    import anyio

    return anyio.run(partial(run, machine, **kwargs))


def stream(machine: Machine | str | Path, *, task: str | None = None,
           **kwargs: Any) -> RunStream:
    """Start a run like ``run`` and read its events as they happen (an async iterator); the
    run goes at the reader's pace, and leaving the block early interrupts it."""
    from engine.door import Runs

    where = Runs(kwargs.pop("store", None), db=kwargs.pop("db", None))
    return where.stream(machine, task=task, **kwargs)


def stream_resume(run_id: str, **kwargs: Any) -> RunStream:
    """Resume a run like ``resume`` and read its events as they happen."""
    from engine.door import Runs

    where = Runs(kwargs.pop("store", None), db=kwargs.pop("db", None))
    return where.stream_resume(run_id, **kwargs)


# -- reading the store ------------------------------------------------------------------


def open_store(store: str | os.PathLike[str] | None = None, *,
               db: str | os.PathLike[str] | None = None) -> RunStore:
    """Open the run database read-only: a path, ``sqlite:///rel.db``, ``sqlite:////abs.db``
    or ``postgresql://...``; with none, ``$ENGINE_STORE_URL``, ``$ENGINE_DB`` or
    ``.engine/engine.db``."""
    from engine.runs.reading import RunStore

    return RunStore(store, db=db)


__all__ = [
    "Answer", "ApprovalRequest", "Approver", "AsyncApprover", "EventHandler", "Machine",
    "RunEvent", "ToolContext", "ToolResult", "ToolSpec", "build_machine", "load_machine",
    "open_store", "render", "resume", "run", "run_sync", "stream", "stream_resume", "tool",
]
