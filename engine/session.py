"""Composition of one run: machine, task, workspace, model, tools, policy and store, wired once.

``cli`` and ``evals`` both start and resume runs through here; the runner below never chooses
an adapter itself. What a run was started with is stored in its row, so ``resume`` rebuilds
the same services unless the command line overrides them.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import sys
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from engine.actions.context import Observer, Services
from engine.actions.registry import ACTIONS
from engine.errors import MachineChangedError, ModelConfigError, TurnstileError, UsageError
from engine.faults import Faults
from engine.golden import GoldenTask, copy_fixture, load_task, run_setup
from engine.models.base import ModelClient
from engine.models.factory import make_model, preflight, resolve_model_spec
from engine.models.options import check_options, merge_options
from engine.models.scripted import ScriptedModel, load_turns
from engine.permissions.approvals import ApprovalMode, Approver, Prompter
from engine.permissions.policy import Policy, PolicyContext
from engine.runner import Runner, RunResult, drive_until_interrupted
from engine.sandbox import Confinement, confinement, merge, protected_paths
from engine.spec import MachineSpec, load_machine
from engine.state import RunState
from engine.store.base import Store
from engine.tooling.registry import ToolRegistry
from tools import builtin_specs

logger = logging.getLogger(__name__)

DEMO_TASK = Path("golden_tasks") / "demo_fix_test"


@dataclass(frozen=True)
class RunRequest:
    """What the user asked for on the command line (or the eval harness, for a task)."""

    machine: Path
    task: str | None = None
    golden: Path | None = None
    workspace: Path | None = None
    model: str | None = None
    approval: ApprovalMode | None = None
    policy: Path | None = None
    mcp_config: Path | None = None
    limits: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)
    model_options: Mapping[str, Any] = field(default_factory=dict)
    """``--model-option`` settings (validated): stored with the run, kept by resume."""
    durability: str | None = None
    """``full`` to fsync every commit; recorded so ``resume`` keeps it."""


@dataclass
class Prepared:
    """A run ready to drive."""

    runner: Runner
    state: RunState
    machine: MachineSpec
    resumed: bool
    mcp: Mapping[str, Any]
    notes: list[str] = field(default_factory=list)
    """Lines for the user before the run starts (e.g. "no model configured: scripted")."""
    create: Mapping[str, Any] | None = None
    """For a new run: what ``Runner.create`` persists, once the model's preflight passed."""
    fixture: GoldenTask | None = None
    """For a new golden run: the task whose fixture becomes ``create['workspace']``, copied
    just before the run row is written and removed if that fails (no workspace without a run)."""


def new_run_id(clock: float | None = None) -> str:
    """A sortable, readable run id: ``YYYYMMDD-HHMMSS-xxxxxx``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(clock or time.time()))
    return f"{stamp}-{secrets.token_hex(3)}"


def default_approval(json_output: bool = False) -> ApprovalMode:
    """Interactive on a terminal, otherwise the policy decides."""
    return "interactive" if _terminal() and not json_output else "policy"


def find_demo(machine_path: Path) -> Path | None:
    """The bundled demo task: beside the machines folder, or under the current directory."""
    for base in (machine_path.resolve().parent.parent, Path.cwd()):
        if (base / DEMO_TASK / "task.yaml").exists():
            return base / DEMO_TASK
    return None


def prepare_new(req: RunRequest, store: Store, *, db_path: Path, observer: Observer,
                prompter: Prompter | None, json_output: bool = False) -> Prepared:
    """Load everything a new run needs, create it in the store, and return it ready to drive."""
    notes: list[str] = []
    golden = load_task(req.golden) if req.golden else None
    model_spec = resolve_model_spec(req.model, None)
    if golden is None and req.task is None:
        if model_spec is not None:
            raise UsageError("no task given: pass --task TEXT or --task-file FILE (or --golden "
                             "DIR); without a model configured, run runs the offline demo")
        demo = find_demo(req.machine)
        if demo is None:
            raise UsageError(f"no task given and the demo task {DEMO_TASK} was not found")
        golden = load_task(demo)
        notes.append(f"no task given: running the bundled demo task {demo} offline")
    machine = _load_machine(req.machine, req.limits, req.context, golden)
    model_spec = resolve_model_spec(req.model, machine.model)
    if golden is None and model_spec is None:
        raise ModelConfigError(
            "a free task needs a model: pass --model openai:<model> | anthropic:<model> | "
            "ollama:<model> | scripted:PATH, set ENGINE_MODEL, or add `model:` to the machine "
            "(OPENAI_API_KEY / ANTHROPIC_API_KEY; a local Ollama needs no key)")
    run_id = new_run_id()
    if golden is not None:  # the fixture is copied by ``execute``, with the run row
        workspace = (db_path.parent / "workspaces" / run_id).resolve()
        task_text = golden.prompt
        if model_spec is None:
            notes.append(f"model: scripted (replaying {golden.turns_path})")
    else:
        workspace = (req.workspace or Path.cwd()).resolve()
        if not workspace.is_dir():
            raise UsageError(f"--workspace {workspace}: no such directory")
        task_text = req.task or ""
    approval = req.approval or (golden.approval if golden and not _terminal() else None)
    approval = approval or default_approval(json_output)
    task_policy = golden.policy_path if golden else None
    policy_path = choose_policy(approval, req.policy, task_policy, machine)
    if req.approval is None and approval == "policy" and _policy_parks(policy_path):
        approval = "park"
    config = {
        "machine_path": str(req.machine), "task": task_text, "model": model_spec,
        "turns": str(golden.turns_path.resolve()) if golden else None,
        "golden": str(golden.folder.resolve()) if golden else None,
        "approval": approval, "policy": _resolved(policy_path),
        "policy_arg": _resolved(req.policy), "task_policy": _resolved(task_policy),
        "mcp_config": str(req.mcp_config.resolve()) if req.mcp_config else None,
        "limits": dict(req.limits) or (golden.limits if golden else {}),
        "context": dict(req.context) or (golden.context if golden else {}),
        "model_options": dict(req.model_options),
        "durability": req.durability,
    }
    services = build_services(config, machine, store, workspace, observer, prompter)
    runner = Runner(machine, services)
    state = RunState(run_id, machine.name, machine.initial, 0, (), {"task": task_text})
    create = {"workspace": str(workspace), "config": config, "data": dict(state.data)}
    return Prepared(runner, state, machine, False, _mcp_servers(machine, config), notes, create,
                    golden)


def prepare_resume(run_id: str, store: Store, *, observer: Observer,
                   prompter: Prompter | None, overrides: Mapping[str, Any],
                   allow_changed_machine: bool = False) -> Prepared:
    """Rebuild a run's services from its stored config (plus overrides) and its state."""
    info = store.get_run(run_id)
    if info.status == "completed":
        raise UsageError(f"run {info.run_id} already completed; nothing to resume")
    notes: list[str] = []
    config = {**info.config, **{k: v for k, v in overrides.items() if v is not None}}
    config["model_options"] = {**(info.config.get("model_options") or {}),
                               **(overrides.get("model_options") or {})}
    config["approval"] = _resume_approval(info.config, overrides.get("approval"), notes)
    machine_path = Path(config["machine_path"])
    machine = _load_machine(machine_path, config.get("limits") or {},
                            config.get("context") or {}, None)
    config["policy"] = _resume_policy(info.config, overrides.get("policy"), config["approval"],
                                      machine)
    if machine.source_hash != info.machine_hash:
        if not allow_changed_machine:
            raise MachineChangedError(
                f"{machine_path} changed since run {info.run_id} started; resume with "
                "--allow-changed-machine to continue under the new definition")
        if info.state not in machine.states:
            raise MachineChangedError(
                f"{machine_path}: state {info.state!r} of run {info.run_id} no longer exists")
    state = store.load_state(info.run_id)
    services = build_services(config, machine, store, Path(info.workspace), observer, prompter)
    runner = Runner(machine, services)
    return Prepared(runner, state, machine, True, _mcp_servers(machine, config), notes)


def choose_policy(mode: str, explicit: Path | None, task_policy: Path | None,
                  machine: MachineSpec) -> Path | None:
    """The policy file of a run: ``--policy``, else the task's when nobody is at a terminal
    (at a terminal, a person decides what the task's policy would), else the machine's."""
    return explicit or (task_policy if mode != "interactive" else None) or _machine_policy(
        machine)


def _terminal() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _resolved(path: Path | None) -> str | None:
    return str(path.resolve()) if path else None


def _resume_approval(recorded: Mapping[str, Any], explicit: ApprovalMode | None,
                     notes: list[str]) -> ApprovalMode:
    """The recorded mode, unless ``--approval`` says otherwise; an interactive run resumed
    without a terminal lets the policy decide instead of prompting into nothing."""
    if explicit:
        return explicit
    mode: ApprovalMode = recorded.get("approval") or "policy"
    if mode == "interactive" and not _terminal():
        notes.append("approvals: the run was interactive, but there is no terminal now, so "
                     "the policy decides (pass --approval to choose)")
        return "policy"
    return mode


def _resume_policy(recorded: Mapping[str, Any], explicit: str | None, mode: str,
                   machine: MachineSpec) -> str | None:
    """The policy for the resumed mode, chosen as ``prepare_new`` chose it from what the run
    recorded (runs recorded before ``task_policy`` existed keep their recorded policy)."""
    if "task_policy" not in recorded:
        return explicit or recorded.get("policy") or _legacy_task_policy(recorded, mode)
    arg = explicit or recorded.get("policy_arg")
    task = recorded.get("task_policy")
    chosen = choose_policy(mode, Path(arg) if arg else None, Path(task) if task else None,
                           machine)
    return _resolved(chosen)


def _legacy_task_policy(recorded: Mapping[str, Any], mode: str) -> str | None:
    if mode == "interactive" or not recorded.get("golden"):
        return None
    try:
        return _resolved(load_task(Path(recorded["golden"])).policy_path)
    except UsageError:
        return None


def build_services(config: Mapping[str, Any], machine: MachineSpec, store: Store,
                   workspace: Path, observer: Observer, prompter: Prompter | None) -> Services:
    """The run's collaborators from its stored config."""
    policy = Policy.load(Path(config["policy"])) if config.get("policy") else Policy.default()
    jail = run_confinement(config, machine, policy, store, workspace)
    policy_ctx = PolicyContext(workspace=workspace, policy=policy, env=dict(os.environ),
                               sandboxed=jail.active, protected=jail.protected,
                               sandboxed_servers=_sandboxed_servers(machine, config))
    mode: ApprovalMode = config.get("approval") or "policy"
    approver = Approver(mode, policy_ctx, prompter if mode == "interactive" else None)
    registry = ToolRegistry(s for s in builtin_specs() if s.name in machine.tools)
    unknown = sorted(set(machine.tools) - {s.name for s in builtin_specs()})
    if unknown:
        raise UsageError(f"{machine.path}: unknown tool(s) in tools: {', '.join(unknown)}")
    turns = Path(config["turns"]) if config.get("turns") else None
    model_spec = config.get("model")
    # A task's script is read now: a bad turns file is bad input (exit 2), not a run that
    # fails at its first model call.
    script = load_turns(turns) if not model_spec and turns and turns.exists() else None

    def model_factory() -> ModelClient:
        if script is not None:
            return ScriptedModel(script)
        return make_model(model_spec, turns_path=turns)

    # A configured provider is built now, so a bad spec or a missing key fails before the run;
    # the same client (one connection pool) then serves every call of the run.
    client = make_model(model_spec, turns_path=turns) if model_spec else None
    cli_options = dict(config.get("model_options") or {})
    if client is not None:
        check_options(client.provider, _option_layers(machine, cli_options))
    return Services(store=store, tools=registry, approver=approver, model_factory=model_factory,
                    workspace=workspace, observer=observer, policy=policy,
                    on_unknown_effect=getattr(policy, "on_unknown_effect", "skip"),
                    interactive=approver.mode == "interactive", fault=Faults.from_env(),
                    model_options=cli_options, confinement=jail,
                    start_events=_sandbox_events(machine, jail), _model=client)


def _option_layers(machine: MachineSpec, cli: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model settings of every ``call_model`` state (and the machine's), as merged."""
    states = [s.params.get("model_options") or {} for s in machine.states.values()
              if s.action == "call_model"]
    return [merge_options(machine.model_options, state, cli) for state in [{}, *states]]


def run_confinement(config: Mapping[str, Any], machine: MachineSpec, policy: Policy,
                    store: Store, workspace: Path) -> Confinement:
    """The run's sandbox: the machine's ``sandbox:`` under the policy file's, probed once.
    ``mode: required`` without confinement raises ``SandboxUnavailableError`` (exit 2)."""
    db = getattr(store, "path", None)
    run_files: list[Path | str | None] = [machine.path, config.get("policy"),
                                          config.get("mcp_config")]
    if isinstance(db, Path):
        run_files += [db, f"{db}-wal", f"{db}-shm", f"{db}-journal", db.parent / "traces",
                      db.parent / "workspaces"]
    spec = merge(machine.sandbox, policy.sandbox)
    protected = protected_paths(workspace, run_files)
    return confinement(spec, workspace, protected)


def _sandbox_events(machine: MachineSpec,
                    jail: Confinement) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """The run-start ``sandbox`` event, for machines that run shell commands."""
    runs_shell = "run_shell" in machine.tools or any(
        s.params.get("tool") == "run_shell" for s in machine.states.values())
    if not runs_shell:
        return ()
    return (("sandbox", {**jail.describe(), "note": sandbox_note(jail)}),)


def sandbox_note(jail: Confinement) -> str:
    """The run-start line about confinement (always said when commands run unconfined)."""
    if jail.active:
        return f"sandbox: shell commands run {jail.summary()}"
    if jail.spec.mode == "off":
        return "sandbox: off (shell commands run unconfined, with the user's rights)"
    return (f"sandbox: shell commands run UNCONFINED, with the user's rights: {jail.reason} "
            "(set sandbox: {mode: required} to refuse instead)")


def _sandboxed_servers(machine: MachineSpec, config: Mapping[str, Any]) -> frozenset[str]:
    servers = _mcp_servers(machine, config)
    return frozenset(name for name, cfg in servers.items()
                     if getattr(cfg, "sandbox", None) is not None)


def _load_machine(path: Path, limits: Mapping[str, Any], context: Mapping[str, Any],
                  golden: GoldenTask | None) -> MachineSpec:
    machine = load_machine(path, ACTIONS)
    limits = {**(golden.limits if golden else {}), **limits}
    context = {**(golden.context if golden else {}), **context}
    if limits:
        machine = machine.model_copy(update={"limits": machine.limits.model_copy(update=limits)})
    if context:
        base = machine.context.model_dump() if machine.context else {}
        from engine.spec.model import ContextSpec

        machine = machine.model_copy(update={"context": ContextSpec(**{**base, **context})})
    return machine


def _policy_parks(path: Path | None) -> bool:
    """The policy file says ``approval: park`` (a run nobody watches waits for a person)."""
    return path is not None and Policy.load(path).approval == "park"


def _machine_policy(machine: MachineSpec) -> Path | None:
    if not machine.policy:
        return None
    path = Path(machine.path).parent / machine.policy
    if not path.exists():
        raise UsageError(f"{machine.path}: policy file {machine.policy!r} not found")
    return path


def _mcp_servers(machine: MachineSpec, config: Mapping[str, Any]) -> dict[str, Any]:
    """The run's MCP servers: the machine's, plus those of ``--mcp-config`` (which win)."""
    if not machine.mcp_servers and not config.get("mcp_config"):
        return {}
    from engine.mcp import from_machine, load_mcp_config

    servers = from_machine(machine.mcp_servers, Path(machine.path).parent)
    if config.get("mcp_config"):
        servers.update(load_mcp_config(Path(config["mcp_config"])))
    return servers


async def execute(prepared: Prepared, *, signals: bool = True) -> RunResult:
    """Drive a prepared run: MCP servers up for its duration, model closed at the end.

    ``signals=False`` for a run driven off the main thread (the web console resumes approved
    runs in its own process): Ctrl-C belongs to the host then, not to the run."""
    services = prepared.runner.services
    await preflight_and_create(prepared)
    async with AsyncExitStack() as stack:
        _store_streams(prepared, stack)
        _stream_spans(prepared, stack)
        if prepared.mcp:
            from engine.mcp import McpHub

            emit = _run_emitter(prepared)
            await stack.enter_async_context(McpHub(prepared.mcp, services.tools, emit))
        try:
            if not signals:
                return await prepared.runner.drive(prepared.state, resumed=prepared.resumed)
            return await drive_until_interrupted(prepared.runner, prepared.state,
                                                 resumed=prepared.resumed)
        finally:
            client = services.started_model()
            if client is not None:
                await client.aclose()


async def preflight_and_create(prepared: Prepared) -> None:
    """Check the model answers, then write a new run's row (and copy its fixture): what
    ``execute`` does before driving, and a backend that drives elsewhere does before starting."""
    client = prepared.runner.services.started_model()
    if client is not None:  # unreachable server, rejected key, unknown model: exit 2
        try:
            await preflight(client)
        except BaseException:
            await client.aclose()
            raise
    if prepared.create is not None:
        _create_run(prepared, prepared.create)


def _store_streams(prepared: Prepared, stack: AsyncExitStack) -> None:
    """Streamed text and tool output become stored ``stream`` events (the web console's feed)."""
    from engine.stream_events import StreamRecorder

    services = prepared.runner.services
    recorder = StreamRecorder(services.store, prepared.state.run_id, services.observer,
                              clock=services.clock)
    services.observer = cast(Observer, recorder)
    stack.callback(recorder.flush)


def _stream_spans(prepared: Prepared, stack: AsyncExitStack) -> None:
    """With an OTLP collector configured, send the run's spans as its steps commit."""
    from engine.otlp import OtlpStream, otlp_configured

    if not otlp_configured():
        return
    services = prepared.runner.services
    try:
        stream = OtlpStream(services.store, prepared.state.run_id)
    except TurnstileError as exc:
        logger.warning("no live OTLP export: %s", exc)
        return
    services.observer = cast(Observer, stream.wrap(services.observer))
    stack.callback(stream.close)


def _create_run(prepared: Prepared, create: Mapping[str, Any]) -> None:
    """Copy the fixture and run its setup, then write the run row; if any of it fails, the
    copy is removed, so a workspace under ``.engine/workspaces/`` always has its run."""
    golden, workspace = prepared.fixture, Path(create["workspace"])
    try:
        if golden is not None:
            try:
                copy_fixture(golden, workspace)
            except OSError as exc:
                reason = " ".join(str(exc.strerror or exc).split())
                raise UsageError(f"{golden.folder}: cannot copy the fixture to {workspace}: "
                                 f"{reason}") from exc
            run_setup(golden, workspace)
        prepared.runner.create(prepared.state.run_id, **create)
    except BaseException:
        if golden is not None:
            shutil.rmtree(workspace, ignore_errors=True)
        raise


def _run_emitter(prepared: Prepared) -> Any:
    services = prepared.runner.services
    run_id = prepared.state.run_id

    def emit(kind: str, payload: Mapping[str, Any]) -> None:
        step = prepared.runner.current_step(prepared.state)  # in memory: no read per event
        services.store.append_event(run_id, step, kind, payload, services.clock())
        services.observer(kind, payload)

    return emit


__all__ = ["Prepared", "RunRequest", "execute", "prepare_new", "prepare_resume"]
