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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from engine.actions.context import Observer, RunParts
from engine.actions.registry import ACTIONS, machine_calls_model
from engine.core.faults import Faults
from engine.core.runner import Runner, RunResult
from engine.models.base import ModelClient
from engine.models.options import merge_options
from engine.permissions.approvals import ApprovalMode, Prompter
from engine.permissions.policy import Policy
from engine.providers.factory import check_options, make_model, preflight, resolve_model_spec
from engine.providers.scripted import ScriptedModel, load_turns
from engine.sandbox import Confinement, confinement, merge, protected_paths
from engine.session.wiring import build_parts
from engine.spec import MachineSpec
from engine.store.base import Store
from engine.tasks.golden import GoldenTask, copy_fixture, load_task, run_setup
from engine.tooling.functions import is_reference, resolve
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import ToolSpec
from engine.validation import load_machine, machine_from_definition
from engine.validation.check import fixed_tool_problems
from engine.vocabulary.errors import (
    MachineChangedError,
    ModelConfigError,
    SpecError,
    ToolImportError,
    TurnstileError,
    UsageError,
)
from engine.vocabulary.events import EventKind
from engine.vocabulary.run_data import HISTORY, INPUTS, TASK
from engine.vocabulary.state import Message, RunState
from turnstile_tools import builtin_specs

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
    definition: Mapping[str, Any] | None = None
    """The machine given as Python values (``machine`` then only names it); stored with the
    run so ``resume`` rebuilds it."""
    tools: tuple[ToolSpec, ...] = ()
    """Tools given in code, beside the machine's; functions are stored by import path."""
    model_client: ModelClient | None = None
    """A model object given in code instead of a model spec (``resume`` needs it again)."""
    history: tuple[Message, ...] = ()
    """An earlier conversation the run continues (a follow-up prompt in an editor)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Stored with the run's config, for a host to find its runs by (an editor's session)."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """Values for the run's data under ``inputs`` (a child run's ``with.inputs``)."""
    parent: ParentLink | None = None
    """For a child run: the run and step that start it, and the policies above it."""


@dataclass(frozen=True)
class ParentLink:
    """Where a child run comes from, recorded with it so ``resume`` narrows it again."""

    run_id: str
    step: int
    policies: tuple[str | None, ...] = ()
    """The policy files of the runs above, outermost first (None: the built-in defaults)."""
    caps: Mapping[str, Any] = field(default_factory=dict)
    """What the parent has left of its limits: the child's own limits are lowered to these."""
    call_id: str = ""
    """The parent's tool call that started the child (``delegate``), if any."""
    model: str | None = None
    """The parent's model spec: the child's when neither it nor its machine names one."""

    def to_config(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "step": self.step, "policies": list(self.policies),
                "call_id": self.call_id}


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
    config: Mapping[str, Any] | None = None
    """For a resumed run: the config it was rebuilt from (the recorded one plus overrides)."""
    created: bool = False
    """The model passed its preflight and a new run's row is written (``preflight_and_create``
    ran): driving it again does neither twice."""


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


def prepare_new(req: RunRequest, store: Store, *, db_path: Path | None = None,
                observer: Observer, prompter: Prompter | None, json_output: bool = False,
                data_dir: Path | None = None) -> Prepared:
    """Load everything a new run needs, create it in the store, and return it ready to drive.
    A golden task's workspace goes under ``data_dir`` (default: the database file's folder;
    a database on a server has no folder, so its caller names one)."""
    notes: list[str] = []
    golden = load_task(req.golden) if req.golden else None
    model_spec = resolve_model_spec(req.model, None)
    loaded = _read_machine(req.machine, req.definition)
    needs_model = machine_calls_model(loaded)
    if golden is None and req.task is None and needs_model:
        if model_spec is not None:
            raise UsageError("no task given: pass --task TEXT or --task-file FILE (or --golden "
                             "DIR); without a model configured, run runs the offline demo")
        demo = find_demo(req.machine)
        if demo is None:
            raise UsageError(f"no task given and the demo task {DEMO_TASK} was not found")
        golden = load_task(demo)
        notes.append(f"no task given: running the bundled demo task {demo} offline")
    if golden is not None and req.workspace is not None:
        raise UsageError("--workspace is for --task runs: a golden task (and the demo) runs in "
                         "a fresh copy of its fixture under .engine/workspaces/RUN_ID")
    machine = _configured(loaded, req.limits, req.context, golden)
    limits = dict(req.limits) or (golden.limits if golden else {})
    if req.parent is not None:
        machine, limits = _capped(machine, req.parent.caps)
    model_arg = req.model
    if model_arg is None and req.parent is not None and not machine.model:
        model_arg = req.parent.model  # a child without a model of its own uses its parent's
    model_spec = None if req.model_client else resolve_model_spec(model_arg, machine.model)
    if golden is None and model_spec is None and req.model_client is None and needs_model:
        raise ModelConfigError(
            "a free task needs a model: pass --model openai:<model> | anthropic:<model> | "
            "ollama:<model> | scripted:PATH, set ENGINE_MODEL, or add `model:` to the machine "
            "(OPENAI_API_KEY / ANTHROPIC_API_KEY; a local Ollama needs no key)")
    run_id = new_run_id()
    if golden is not None:  # the fixture is copied by ``execute``, with the run row
        base = data_dir or (db_path.parent if db_path else Path(".engine"))
        workspace = (base / "workspaces" / run_id).resolve()
        task_text = golden.prompt
        if model_spec is None and needs_model:
            notes.append(f"model: scripted (replaying {golden.turns_path})")
    else:
        workspace = (req.workspace or Path.cwd()).resolve()
        if not workspace.is_dir():
            raise UsageError(f"--workspace {workspace}: no such directory")
        task_text = req.task or ""
    approval = req.approval or (golden.approval if golden and not _terminal() else None)
    approval = approval or default_approval(json_output or prompter is None)
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
        "limits": limits,
        "context": dict(req.context) or (golden.context if golden else {}),
        "model_options": dict(req.model_options),
        "durability": req.durability,
        **_code_config(req),
        **({"labels": dict(req.labels)} if req.labels else {}),
        **({"parent": req.parent.to_config()} if req.parent else {}),
    }
    runner = Runner(machine, build_services(config, machine, store, workspace, observer,
                                            prompter, tools=req.tools,
                                            model_client=req.model_client))
    data: dict[str, Any] = {TASK.name: task_text}
    if req.inputs:
        data[INPUTS.name] = dict(req.inputs)
    if req.history:
        data[HISTORY.name] = [m.to_dict() for m in req.history if m.role != "system"]
    state = RunState(run_id, machine.name, machine.initial, 0, (), data)
    create: dict[str, Any] = {"workspace": str(workspace), "config": config,
                              "data": dict(state.data)}
    if req.parent is not None:
        create |= {"parent_run_id": req.parent.run_id, "parent_step": req.parent.step}
    return Prepared(runner, state, machine, False, _mcp_servers(machine, config), notes, create,
                    golden)


def prepare_resume(run_id: str, store: Store, *, observer: Observer,
                   prompter: Prompter | None, overrides: Mapping[str, Any],
                   allow_changed_machine: bool = False, tools: Sequence[ToolSpec] = (),
                   model_client: ModelClient | None = None) -> Prepared:
    """Rebuild a run's parts from its stored config (plus overrides) and its state; tools and
    a model object given in code are given again (tools named by import path are imported)."""
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
                            config.get("context") or {}, None, config.get("machine_definition"))
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
    runner = Runner(machine, build_services(config, machine, store, Path(info.workspace),
                                            observer, prompter, tools=tools,
                                            model_client=model_client))
    return Prepared(runner, state, machine, True, _mcp_servers(machine, config), notes,
                    config=config)


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
                   workspace: Path, observer: Observer, prompter: Prompter | None, *,
                   tools: Sequence[ToolSpec] = (),
                   model_client: ModelClient | None = None) -> RunParts:
    """The run's parts from its stored config, with the tools and model given in code."""
    policy = run_policy(config)
    jail = run_confinement(config, machine, policy, store, workspace)
    registry = run_tools(config, machine, tools)
    if model_client is None and config.get("model_client") and not config.get("model"):
        raise ModelConfigError(
            f"the run was started with a model object ({config['model_client']}): give it "
            "again to resume (engine.resume(..., model=...)) or choose one with --model")
    turns = Path(config["turns"]) if config.get("turns") else None
    # A machine that never calls a model gets none: no script read, no client built, no key
    # needed (its model is built on first use, which never comes).
    asks = machine_calls_model(machine)
    model_spec = config.get("model") if asks else None
    # A task's script is read now: a bad turns file is bad input (exit 2), not a run that
    # fails at its first model call.
    script = (load_turns(turns) if asks and not model_spec and turns and turns.exists()
              else None)

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
    mode: ApprovalMode = config.get("approval") or "policy"
    return build_parts(store=store, workspace=workspace, tools=registry,
                       model=model_client or client or model_factory, approval=mode, policy=policy,
                       prompter=prompter, observer=observer, fault=Faults.from_env(),
                       model_options=cli_options, confinement=jail,
                       start_events=_sandbox_events(machine, jail),
                       fresh_model=model_factory if model_client is None else None,
                       sandboxed_servers=_sandboxed_servers(machine, config))


def run_tools(config: Mapping[str, Any], machine: MachineSpec,
              given: Sequence[ToolSpec]) -> ToolRegistry:
    """The machine's built-in tools, its tools named by import path, and the tools given in
    code (which win over an import of the same tool)."""
    named = [t for t in machine.tools if not is_reference(t)]
    refs = [t for t in machine.tools if is_reference(t)]
    builtins = {s.name: s for s in builtin_tools()}
    given_names = {s.name for s in given}
    unknown = sorted(set(named) - set(builtins) - given_names)
    missing = sorted({*(config.get("code_tools") or ()), *_unimportable(config)} - given_names)
    if missing or (unknown and _from_code(config)):
        raise ToolImportError(_give_again(sorted({*missing, *unknown})))
    if unknown:
        raise UsageError(f"{machine.path}: unknown tool(s) in tools: {', '.join(unknown)}")
    found = resolve([*refs, *(config.get("python_tools") or ())], given)
    if machine.children:
        from engine.actions.delegate import delegate_spec

        found.append(delegate_spec(machine.children))
    registry = ToolRegistry([*(builtins[n] for n in named if n in builtins
                               and n not in {s.name for s in found}), *found])
    problems = fixed_tool_problems(machine, registry.names())
    if problems:
        raise SpecError(problems)
    return registry


def _unimportable(config: Mapping[str, Any]) -> list[str]:
    """The names of tools a run was started with that no other process can import: defined
    in the starting program's ``__main__`` or inside a function."""
    refs = [r for r in config.get("python_tools") or ()
            if r.startswith("__main__:") or "<locals>" in r]
    return [r.rpartition(":")[2].rpartition(".")[2] for r in refs]


def _from_code(config: Mapping[str, Any]) -> bool:
    return any(k in config for k in ("machine_definition", "python_tools", "code_tools"))


def _give_again(names: Sequence[str]) -> str:
    """What to do about tools given in code that a resume does not have."""
    listed = ", ".join(names)
    return (f"the run was started with tool(s) given in code: {listed}; give them again to "
            f"resume: engine.resume(RUN_ID, tools=[{listed}]), or, to resume from the command "
            "line, define them in an importable module and name them in the machine's tools "
            "by import path (module:function)")


def _code_config(req: RunRequest) -> dict[str, Any]:
    """What a run started from code records so that ``resume`` can rebuild it (nothing for a
    run started from the command line, whose config stays as it was)."""
    out: dict[str, Any] = {}
    if req.definition is not None:
        out["machine_definition"] = dict(req.definition)
    refs = [s.source.removeprefix("python:") for s in req.tools if s.source.startswith("python:")]
    if refs:
        out["python_tools"] = refs
    bare = [s.name for s in req.tools if not s.source.startswith("python:")]
    if bare:
        out["code_tools"] = bare
    if req.model_client is not None:
        kind = type(req.model_client)
        out["model_client"] = f"{kind.__module__}:{kind.__qualname__}"
    return out


def _option_layers(machine: MachineSpec, cli: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model settings of every ``call_model`` state (and the machine's), as merged."""
    states = [s.params.get("model_options") or {} for s in machine.states.values()
              if s.action == "call_model"]
    return [merge_options(machine.model_options, state, cli) for state in [{}, *states]]


def run_policy(config: Mapping[str, Any]) -> Policy:
    """The run's policy file (or the defaults), narrowed by its parents' for a child run."""
    policy = load_policy(Path(config["policy"])) if config.get("policy") else Policy.default()
    parents = (config.get("parent") or {}).get("policies") or ()
    if not parents:
        return policy
    from engine.permissions.narrowing import narrowed

    return narrowed(policy, [load_policy(Path(p)) if p else Policy.default() for p in parents])


def run_confinement(config: Mapping[str, Any], machine: MachineSpec, policy: Policy,
                    store: Store, workspace: Path) -> Confinement:
    """The run's sandbox: the machine's ``sandbox:`` under the policy file's, probed once.
    ``mode: required`` without confinement raises ``SandboxUnavailableError`` (exit 2)."""
    db = getattr(store, "path", None)
    run_files: list[Path | str | None] = [machine.path, config.get("policy"),
                                          config.get("mcp_config")]
    secret: list[str] = []
    if isinstance(db, Path):  # the store's other runs (their traces) too
        ws = os.path.realpath(workspace)
        private = getattr(store, "private_files", None)  # data/old.db beside data/new.db
        files = private() if private is not None else [str(db)]
        secret = [p for p in (*files, str(db.parent / "traces"))
                  if not (ws + os.sep).startswith(os.path.realpath(p) + os.sep)]
        run_files += [*secret, db.parent / "workspaces"]  # other runs' copies: read-only
    spec = merge(machine.sandbox, policy.sandbox)
    protected = protected_paths(workspace, run_files)
    return confinement(spec, workspace, protected, secret=secret)


def builtin_tools() -> list[ToolSpec]:
    """The built-in tools (``tools.builtin_specs``): the engine knows them only from here."""
    specs: list[ToolSpec] = builtin_specs()
    return specs


def load_policy(path: Path) -> Policy:
    """A policy file, checked against the names of the tools a run can call."""
    from engine.actions.delegate import DELEGATE

    return Policy.load(path, tools=frozenset(s.name for s in builtin_tools()) | {DELEGATE})


def shell_tool_name() -> str:
    """The name of the built-in tool that runs shell commands ("" when there is none)."""
    return next((s.name for s in builtin_tools() if s.command_arg is not None), "")


def _sandbox_events(machine: MachineSpec,
                    jail: Confinement) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """The run-start ``sandbox`` event, for machines that run shell commands."""
    shells = {s.name for s in builtin_tools() if s.command_arg is not None}
    runs_shell = bool(shells & set(machine.tools)) or any(
        s.params.get("tool") in shells for s in machine.states.values())
    if not runs_shell:
        return ()
    return ((EventKind.SANDBOX, {**jail.describe(), "note": sandbox_note(jail)}),)


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
                  golden: GoldenTask | None,
                  definition: Mapping[str, Any] | None = None) -> MachineSpec:
    return _configured(_read_machine(path, definition), limits, context, golden)


def _read_machine(path: Path, definition: Mapping[str, Any] | None) -> MachineSpec:
    """The machine file at ``path``, or the machine ``definition`` gives (named ``path``)."""
    return (load_machine(path, ACTIONS) if definition is None
            else machine_from_definition(definition, ACTIONS, str(path)))


def _configured(machine: MachineSpec, limits: Mapping[str, Any], context: Mapping[str, Any],
                golden: GoldenTask | None) -> MachineSpec:
    """``machine`` with the task's and the caller's limits and context settings."""
    limits = {**(golden.limits if golden else {}), **limits}
    context = {**(golden.context if golden else {}), **context}
    if limits:
        machine = machine.model_copy(update={"limits": machine.limits.model_copy(update=limits)})
    if context:
        base = machine.context.model_dump() if machine.context else {}
        from engine.spec.model import ContextSpec

        machine = machine.model_copy(update={"context": ContextSpec(**{**base, **context})})
    return machine


def _capped(machine: MachineSpec, caps: Mapping[str, Any]) -> tuple[MachineSpec, dict[str, Any]]:
    """``machine`` with each limit no higher than ``caps`` has it, and its limits as recorded."""
    own = machine.limits.model_dump()
    lowered = {k: v if not own.get(k) else min(own[k], v)
               for k, v in caps.items() if v is not None}
    limits = {**own, **lowered}
    return machine.model_copy(update={"limits": machine.limits.model_copy(update=lowered)}), {
        k: v for k, v in limits.items() if v is not None}


def _policy_parks(path: Path | None) -> bool:
    """The policy file says ``approval: park`` (a run nobody watches waits for a person)."""
    return path is not None and load_policy(path).approval == "park"


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


Driver = Callable[[Runner, RunState, bool], Awaitable[RunResult]]
"""How a prepared run is driven: ``plain_drive``, or the CLI's, which owns the signals."""


async def plain_drive(runner: Runner, state: RunState, resumed: bool) -> RunResult:
    """Drive without touching signals: cancelling the caller's task interrupts the run."""
    return await runner.drive(state, resumed=resumed)


async def execute(prepared: Prepared, *, drive: Driver = plain_drive) -> RunResult:
    """Drive a prepared run: MCP servers up for its duration, model closed at the end.

    No signal handler is installed here: the host program owns its signals (the CLI passes
    ``engine.core.interrupts.drive_until_interrupted``)."""
    parts = prepared.runner.parts
    await preflight_and_create(prepared)
    async with AsyncExitStack() as stack:
        _store_streams(prepared, stack)
        _stream_spans(prepared, stack)
        if prepared.mcp:
            from engine.mcp import McpHub

            emit = _run_emitter(prepared)
            await stack.enter_async_context(McpHub(prepared.mcp, parts.tools, emit))
        try:
            return await drive(prepared.runner, prepared.state, prepared.resumed)
        finally:
            client = parts.models.started()
            if client is not None:
                await client.aclose()


async def preflight_and_create(prepared: Prepared) -> None:
    """Check the model answers, then write a new run's row (and copy its fixture): what
    ``execute`` does before driving, and a backend that drives elsewhere does before starting."""
    if prepared.created:
        return
    client = prepared.runner.parts.models.started()
    if client is not None:  # unreachable server, rejected key, unknown model: exit 2
        try:
            await preflight(client)
        except BaseException:
            await client.aclose()
            raise
    if prepared.create is not None:
        _create_run(prepared, prepared.create)
    prepared.created = True


def _store_streams(prepared: Prepared, stack: AsyncExitStack) -> None:
    """Streamed text and tool output become stored ``stream`` events (the web console's feed)."""
    from engine.tracing.stream_events import StreamRecorder

    parts = prepared.runner.parts
    recorder = StreamRecorder(parts.store, prepared.state.run_id, parts.observer,
                              clock=parts.clock)
    parts.observer = cast(Observer, recorder)
    stack.callback(recorder.flush)


def _stream_spans(prepared: Prepared, stack: AsyncExitStack) -> None:
    """With an OTLP collector configured, send the run's spans as its steps commit."""
    from engine.tracing.otlp import OtlpStream, otlp_configured

    if not otlp_configured():
        return
    parts = prepared.runner.parts
    try:
        stream = OtlpStream(parts.store, prepared.state.run_id)
    except TurnstileError as exc:
        logger.warning("no live OTLP export: %s", exc)
        return
    parts.observer = cast(Observer, stream.wrap(parts.observer))
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
    parts = prepared.runner.parts
    run_id = prepared.state.run_id

    def emit(kind: str, payload: Mapping[str, Any]) -> None:
        step = prepared.runner.current_step(prepared.state)  # in memory: no read per event
        parts.store.append_event(run_id, step, kind, payload, parts.clock())
        parts.observer(kind, payload)

    return emit


__all__ = ["Driver", "ParentLink", "Prepared", "RunRequest", "execute", "plain_drive",
           "prepare_new", "prepare_resume"]
