"""``engine tools``: every tool a machine would see, with its risk and the policy's decision.

Built-ins come from the machine's ``tools:`` (all of them without a machine); MCP tools are
discovered by starting the machine's servers and those of ``--mcp-config``, then stopped.
A server that fails to start is a row of its own (``status: failed`` and its ``error``), never
left out silently; the CLI then exits 1.
A policy rule can depend on confinement (``sandboxed: true``), so each row gives the decision
on this machine (``decision``, with ``sandboxed`` saying whether the tool would run confined)
and both alternatives: ``decision_sandboxed`` and ``decision_unsandboxed``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from engine.actions.registry import ACTIONS
from engine.permissions.policy import Policy, PolicyContext, decide_static
from engine.sandbox import confinement, merge
from engine.tooling.spec import ToolSpec
from engine.validation import load_machine
from engine.vocabulary.errors import SandboxUnavailableError
from engine.vocabulary.events import EventKind


def list_tools(machine_path: Path | None, mcp_config: Path | None,
               workspace: Path) -> list[dict[str, Any]]:
    """One row per tool: ``ToolSpec.describe()`` plus the static ``decision``; then one row
    per MCP server that failed to start."""
    from engine.session.compose import builtin_tools, load_policy

    specs = builtin_tools()
    policy = Policy.default()
    servers: dict[str, Any] = {}
    machine_sandbox = None
    if machine_path is not None:
        machine = load_machine(machine_path, ACTIONS)
        specs = [s for s in specs if s.name in machine.tools]
        machine_sandbox = machine.sandbox
        if machine.policy:
            policy = load_policy(Path(machine.path).parent / machine.policy)
        if machine.mcp_servers:
            from engine.mcp import from_machine

            servers.update(from_machine(machine.mcp_servers, Path(machine.path).parent))
    if mcp_config is not None:
        from engine.mcp import load_mcp_config

        servers.update(load_mcp_config(mcp_config))
    failed: dict[str, str] = {}
    if servers:
        from engine.mcp import discover
        from engine.tooling.registry import ToolRegistry

        def note(kind: str, payload: dict[str, Any]) -> None:
            if kind in (EventKind.MCP_SERVER_FAILED, EventKind.MCP_SERVER_UNAVAILABLE):
                failed[payload["server"]] = payload.get("error") or "failed to start"

        specs = [*specs, *anyio.run(discover, servers, ToolRegistry(builtin_tools()), note)]
    try:
        sandboxed = confinement(merge(machine_sandbox, policy.sandbox), workspace,
                                walled=False).active
    except SandboxUnavailableError:  # mode required: a run would refuse; the list still shows
        sandboxed = False
    confined = frozenset(n for n, c in servers.items() if getattr(c, "sandbox", None))
    ctx = PolicyContext(workspace=workspace.resolve(), policy=policy, env=None,
                        sandboxed=sandboxed, sandboxed_servers=confined)
    return [*(_row(s, ctx) for s in specs),
            *(_failed_row(servers[name], error) for name, error in sorted(failed.items()))]


def _failed_row(config: Any, error: str) -> dict[str, Any]:
    return {"name": None, "server": config.name, "source": f"mcp:{config.name}",
            "transport": config.transport, "trust": config.trust, "status": "failed",
            "error": error, "risk": None, "decision": None}


def _row(spec: ToolSpec, ctx: PolicyContext) -> dict[str, Any]:
    decision = decide_static(spec, ctx)
    servers = frozenset({spec.server}) if spec.server else frozenset()
    inside = replace(ctx, sandboxed=True, sandboxed_servers=servers)
    outside = replace(ctx, sandboxed=False, sandboxed_servers=frozenset())
    return {**spec.describe(), "decision": decision.decision, "reason": decision.reason,
            "sandboxed": ctx.confined(spec),
            "decision_sandboxed": decide_static(spec, inside).decision,
            "decision_unsandboxed": decide_static(spec, outside).decision}
