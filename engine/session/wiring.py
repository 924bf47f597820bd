"""The one way to wire a runner: store, tools, model, approvals and policy into ``RunParts``.

``engine.session.compose`` (the CLI, the eval harness, the web console, the Python API) works out
each
part from a run's stored configuration and calls ``build_parts``; the benchmarks call
``build_runner`` with their own tool and model. Nothing else constructs ``RunParts``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from engine.actions.context import (
    Clock,
    FaultHook,
    ModelSource,
    Observer,
    RunConfig,
    RunParts,
    _no_fault,
    _silent,
)
from engine.core.runner import Runner
from engine.models.base import ModelClient
from engine.permissions.approvals import ApprovalMode, Approver, Prompter
from engine.permissions.policy import Policy, PolicyContext
from engine.sandbox import Confinement
from engine.spec.model import MachineSpec
from engine.store.base import Store
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import ToolSpec

ModelArg = ModelClient | Callable[[], ModelClient]
"""A ready client, or a factory called at the run's first model call."""


def build_parts(*, store: Store, workspace: Path, tools: Iterable[ToolSpec] | ToolRegistry,
                model: ModelArg, approval: ApprovalMode = "policy",
                policy: Policy | None = None, prompter: Prompter | None = None,
                observer: Observer = _silent, clock: Clock = time.time,
                fault: FaultHook = _no_fault, model_options: Mapping[str, Any] | None = None,
                confinement: Confinement | None = None,
                start_events: tuple[tuple[str, Mapping[str, Any]], ...] = (),
                sandboxed_servers: frozenset[str] = frozenset(),
                fresh_model: Callable[[], ModelClient] | None = None) -> RunParts:
    """A run's parts; ``approval="interactive"`` without ``prompter`` falls back to policy.
    ``fresh_model`` builds a new client once ``model`` (a client) was closed and forgotten."""
    policy = policy or Policy.default()
    jail_active = confinement is not None and confinement.active
    policy_ctx = PolicyContext(
        workspace=workspace, policy=policy, env=dict(os.environ), sandboxed=jail_active,
        protected=confinement.protected if confinement is not None else (),
        sandboxed_servers=sandboxed_servers)
    approver = Approver(approval, policy_ctx, prompter if approval == "interactive" else None)
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    models = _model_source(model, fresh_model)
    config = RunConfig(workspace=workspace, policy=policy,
                       interactive=approver.mode == "interactive",
                       on_unknown_effect=policy.on_unknown_effect,
                       model_options=dict(model_options or {}), confinement=confinement,
                       start_events=start_events)
    return RunParts(store=store, tools=registry, approver=approver, models=models,
                    config=config, observer=observer, clock=clock, fault=fault)


def build_runner(machine: MachineSpec, **parts: Any) -> Runner:
    """A ``Runner`` for ``machine`` wired by ``build_parts(**parts)``."""
    return Runner(machine, build_parts(**parts))


def _model_source(model: ModelArg,
                  fresh: Callable[[], ModelClient] | None = None) -> ModelSource:
    if hasattr(model, "stream") and hasattr(model, "aclose"):  # a client, not a factory
        client: ModelClient = model  # type: ignore[assignment]
        return ModelSource(fresh or (lambda: client), client)
    return ModelSource(model)
