"""The front door for runs: start, resume, stream, cancel, list, read and decide, in one store.

Every way into the engine goes through ``Runs``: the CLI, the web console, the eval harness,
the Temporal workers and the Python API (``engine.run``, ``engine.approve``, ...). It is the
one place that turns what a caller names (a store URL, a machine file or bundled name, a model
spec or object, Python tools, an MCP config, a policy, an approval mode or approver, an event
handler) into a composed run; ``engine.session.compose`` does the composing below it. A caller that
drives runs its own way (the CLI owns its signals, a Temporal worker takes one step at a time)
prepares a run here and drives it with its own driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, Unpack

import anyio

from engine.core.runner import RunResult
from engine.permissions.approvals import ApprovalMode, Prompter
from engine.runs.approvals import DecidedApproval, PendingApproval, Wake, decide
from engine.runs.approvals import pending_approvals as _pending
from engine.runs.children import Children
from engine.runs.events import Approver, EventHandler, RunEvent, prompter_for
from engine.runs.prepared import PreparedRun
from engine.runs.reading import RunStore, require_existing, target_of
from engine.runs.stream import Lockstep, RunStream, sink
from engine.session.compose import (
    Driver,
    ParentLink,
    Prepared,
    RunRequest,
    execute,
    plain_drive,
    prepare_new,
)
from engine.session.compose import prepare_resume as _prepare_resume
from engine.spec.bundled import machine_path
from engine.store.base import Store
from engine.store.url import StoreTarget, as_target
from engine.tooling.spec import TextReader, ToolSpec
from engine.vocabulary.hints import command
from engine.vocabulary.state import Message, RunInfo

if TYPE_CHECKING:
    from engine.actions.context import Observer
    from engine.forks.service import ForkResult
    from engine.models.base import ModelClient
    from engine.spec.model import MachineSpec

PathArg = str | os.PathLike[str]
StoreArg = PathArg | StoreTarget | Store | None
"""A store URL or path (what ``--store`` takes), or a store already open (never closed here)."""
ToolArg = ToolSpec | Callable[..., Any]
"""A ``@tool`` function, any function (its signature becomes the schema), or a ``ToolSpec``."""


class MachineSource(Protocol):
    """A machine given as an object (``engine.Machine``: loaded or built in Python)."""

    @property
    def spec(self) -> MachineSpec: ...

    @property
    def definition(self) -> Mapping[str, Any] | None: ...

    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...


MachineArg = MachineSource | PathArg
"""A machine object, a machine file, or the name of a bundled machine (``coding_agent``)."""


class StartOptions(TypedDict, total=False):
    """What a new run can be given (``Runs.start``, ``prepare``, ``stream``)."""

    task: str | None
    """The task text; None with a model-calling machine and no model: the offline demo."""
    golden: PathArg | None
    """A golden task folder: its fixture (copied), script, policy and limits."""
    workspace: PathArg | None
    """Where a task's tools work (default: the current directory)."""
    model: str | ModelClient | None
    """A model spec (``openai:gpt-4.1``, ``scripted:turns.yaml``) or a model object."""
    model_options: Mapping[str, Any] | None
    tools: Sequence[ToolArg]
    """Tools offered beside the machine's (given again to ``resume`` unless importable)."""
    mcp_config: PathArg | None
    """An MCP servers file (``{"mcpServers": {...}}``), beside the machine's servers."""
    approval: ApprovalMode | None
    """Who decides ``ask``: ``policy`` (default), ``auto``, ``deny``, ``park``."""
    approver: Approver | None
    """Asked about each call the policy leaves to a person (the mode is then interactive)."""
    policy: PathArg | None
    limits: Mapping[str, Any] | None
    context: Mapping[str, Any] | None
    durability: Literal["normal", "full"] | None
    on_event: EventHandler | None
    """Called with every ``RunEvent``."""
    observer: Observer | None
    """The engine's own ``(kind, payload)`` observer, for a host that renders events itself."""
    prompter: Prompter | None
    """A prompter that asks about a batch of calls at once (a terminal's)."""
    history: Sequence[Message]
    """An earlier conversation the run continues (the messages of a run before it): the
    task is then the user's next message."""
    labels: Mapping[str, str] | None
    """Stored in the run's config (``labels``), for a host to find its runs by."""
    read_text: TextReader | None
    """Where the run's tools read a file's text besides the disk: a host's copy given the
    file's absolute path (an editor's unsaved buffer), None to read it on disk. Asked after
    the tool's own path checks; never stored (a resume is given it again)."""


class ResumeOptions(TypedDict, total=False):
    """What a resumed run can be given (``Runs.resume``, ``prepare_resume``, ...); anything
    left out is what the run was started with."""

    tools: Sequence[ToolArg]
    model: str | ModelClient | None
    model_options: Mapping[str, Any] | None
    approval: ApprovalMode | None
    approver: Approver | None
    policy: PathArg | None
    allow_changed_machine: bool
    durability: Literal["normal", "full"] | None
    on_event: EventHandler | None
    observer: Observer | None
    prompter: Prompter | None
    read_text: TextReader | None


class _Wiring:
    """A run's observer, prompter and file reader, as the caller asked for them."""

    def __init__(self, options: StartOptions | ResumeOptions,
                 lockstep: Lockstep | None) -> None:
        self.run_id = ""
        given = options.get("on_event")
        self.handler = sink(lockstep, given) if lockstep is not None else given
        self.raw = options.get("observer")
        self.pace = lockstep.pace if lockstep is not None else None
        approver = options.get("approver")
        self.approver = approver
        self.prompter = (prompter_for(approver, lambda: self.run_id, self.observe, self.pace)
                         if approver is not None else options.get("prompter"))
        self.read_text = options.get("read_text")

    def observe(self, kind: str, payload: Mapping[str, Any]) -> None:
        if self.raw is not None:
            self.raw(kind, payload)
        if self.handler is not None:
            self.handler(RunEvent(kind, payload, self.run_id))

    def observer(self) -> Observer:
        """The cheapest observer that serves the caller."""
        if self.handler is None and self.raw is not None:
            return self.raw
        return self.observe



class Runs:
    """The runs of one store: start, resume, stream, cancel, list, show, and decide parked
    approvals. ``Runs()`` uses ``$ENGINE_STORE_URL``, ``$ENGINE_DB`` or ``.engine/engine.db``;
    ``Runs("postgresql://...")``, ``Runs("sqlite:///runs.db")`` or a path name another.

    ``wake`` is told about each approval decision (the Temporal backend's signal);
    ``engine.Runs`` wakes Temporal-driven runs by itself.
    """

    def __init__(self, store: StoreArg = None, *, db: PathArg | None = None,
                 durability: Literal["normal", "full"] | None = None,
                 wake: Wake | None = None) -> None:
        if store is None or isinstance(store, (str, os.PathLike, StoreTarget)):
            self.target = target_of(store, db)
            self._given: Store | None = None
        else:
            self.target = as_target(store.location)
            self._given = store
        self.durability = durability
        self.wake = wake
        self._live: dict[str, anyio.CancelScope] = {}

    # -- the store ----------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The store as messages name it (a server's URL without its password)."""
        return self.target.display

    def hint(self, *words: str) -> str:
        """The command line that does ``words`` on this store, runnable as printed."""
        return command(*words, store=self.location)

    def _open(self, *, must_exist: bool = False, reading: bool = False,
              durability: Literal["normal", "full"] | None = None) -> tuple[Store, bool]:
        """The store, and whether it was opened here (and is closed here)."""
        if self._given is not None:
            return self._given, False
        if must_exist:
            require_existing(self.target)
        if self.target.path is not None and not reading:
            self.target.path.parent.mkdir(parents=True, exist_ok=True)
        return self.target.open(durability=durability or self.durability,
                                reading=reading), True

    def reader(self) -> RunStore:
        """The store opened read-only (steps, messages, events, traces)."""
        return RunStore(self.target)

    # -- starting and resuming --------------------------------------------------------------

    def prepare(self, machine: MachineArg, **options: Unpack[StartOptions]) -> PreparedRun:
        """Compose a new run without driving it; ``drive`` (or a backend) drives it."""
        return self._prepare_new(machine, options, None)

    def child(self, machine: str, link: ParentLink, inputs: Mapping[str, Any], task: str,
              model: str | None, approval: ApprovalMode, prompter: Prompter | None,
              approver: Approver | None, workspace: Path, policy: str | None,
              limits: Mapping[str, Any]) -> PreparedRun:
        """Compose a child run of ``link``'s run and step (``engine.runs.children``):
        its policy narrowed by the policies above it, its limits capped by the parent's."""
        options = StartOptions(task=task, model=model, approval=approval, workspace=workspace,
                               policy=policy, limits=limits)
        if approver is not None:  # its questions name the child's run
            options["approver"] = approver
        elif prompter is not None:
            options["prompter"] = prompter
        return self._prepare_new(machine, options, None, link=link, inputs=inputs)

    async def resume_child(self, run_id: str, approval: ApprovalMode, prompter: Prompter | None,
                           approver: Approver | None) -> RunResult:
        """Resume a child run in its parent's approval mode (asking the same person)."""
        if approver is not None:
            return await self.resume(run_id, approval=approval, approver=approver)
        return await self.resume(run_id, approval=approval, prompter=prompter)

    def prepare_resume(self, run_id: str, **options: Unpack[ResumeOptions]) -> PreparedRun:
        """Rebuild a stopped run's parts from what it recorded, for ``drive``."""
        return self._prepare_resumed(run_id, options, None)

    async def ready(self, prepared: PreparedRun) -> None:
        """Check the model answers and store a new run (``drive`` does it first when needed)."""
        from engine.session.compose import preflight_and_create

        await preflight_and_create(prepared.session)

    async def drive(self, prepared: PreparedRun, *, driver: Driver | None = None) -> RunResult:
        """Drive a prepared run to its end (or a park, a limit, an interruption).

        ``driver``: how the runner is driven (default: plainly; the CLI passes its signal
        handling). ``cancel(run_id)`` ends it ``interrupted``, which is then the result.
        """
        scope = anyio.CancelScope()
        self._live[prepared.run_id] = scope
        try:
            await self.ready(prepared)
            with scope:
                return await execute(prepared.session, drive=driver or plain_drive)
        finally:
            self._live.pop(prepared.run_id, None)
        return self.where_it_stopped(prepared)

    async def start(self, machine: MachineArg, *, driver: Driver | None = None,
                    **options: Unpack[StartOptions]) -> RunResult:
        """Start a run of ``machine`` and drive it to its end."""
        prepared = self.prepare(machine, **options)
        try:
            return await self.drive(prepared, driver=driver)
        finally:
            prepared.close()

    async def resume(self, run_id: str, *, driver: Driver | None = None,
                     **options: Unpack[ResumeOptions]) -> RunResult:
        """Continue an interrupted, failed, crashed or parked run from its last commit."""
        prepared = self.prepare_resume(run_id, **options)
        try:
            return await self.drive(prepared, driver=driver)
        finally:
            prepared.close()

    def stream(self, machine: MachineArg, **options: Unpack[StartOptions]) -> RunStream:
        """Start a run and read its events as they happen, the run going at the reader's
        pace: ``async with runs.stream(...) as events: async for event in events``."""
        return RunStream(self, lambda lockstep: self._prepare_new(machine, options, lockstep))

    def stream_resume(self, run_id: str, **options: Unpack[ResumeOptions]) -> RunStream:
        """Resume a run and read its events as they happen (as ``stream``)."""
        return RunStream(self, lambda lockstep: self._prepare_resumed(run_id, options,
                                                                      lockstep))

    def cancel(self, run_id: str) -> bool:
        """Interrupt a run this object drives, from its event loop's thread: it stops before
        its next commit, ``interrupted`` and resumable. False if it drives no such run."""
        scope = self._live.get(run_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    def where_it_stopped(self, prepared: PreparedRun) -> RunResult:
        """The result of a drive that was cancelled: the run as its store has it."""
        store = prepared.store
        info = store.get_run(prepared.run_id)
        state = store.load_state(info.run_id).evolve(status=info.status)
        return RunResult(state, info.status, info.error)

    def _prepare_new(self, machine: MachineArg, options: StartOptions,
                     lockstep: Lockstep | None, *, link: ParentLink | None = None,
                     inputs: Mapping[str, Any] | None = None) -> PreparedRun:
        path, definition, tools = _machine(machine)
        client, spec = _model(options.get("model"))
        wiring = _Wiring(options, lockstep)
        req = RunRequest(
            machine=path, task=options.get("task"), golden=_path(options.get("golden")),
            workspace=_path(options.get("workspace")), model=spec,
            approval=_mode(options),
            policy=_path(options.get("policy")), mcp_config=_path(options.get("mcp_config")),
            limits=dict(options.get("limits") or {}), context=dict(options.get("context") or {}),
            model_options=dict(options.get("model_options") or {}),
            durability=options.get("durability"), definition=definition,
            tools=(*tools, *_specs(options.get("tools") or ())), model_client=client,
            history=tuple(options.get("history") or ()),
            labels=dict(options.get("labels") or {}), parent=link, inputs=dict(inputs or {}))
        if definition is None and not self.target.exists():
            _check(path)  # a machine that cannot load creates no database
        store, owned = self._open(durability=options.get("durability"))
        try:
            session = prepare_new(req, store, db_path=self.target.path,
                                  data_dir=self.target.data_dir, observer=wiring.observer(),
                                  prompter=wiring.prompter)
        except BaseException:
            if owned:
                store.close()
            raise
        return self._prepared(session, store, owned, wiring)

    def _prepared(self, session: Prepared, store: Store, owned: bool,
                  wiring: _Wiring) -> PreparedRun:
        wiring.run_id = session.state.run_id
        if wiring.pace is not None:
            session.runner.parts.pace = wiring.pace
        session.runner.parts.read_text = wiring.read_text
        session.runner.parts.children = Children(
            lambda store: Runs(store, wake=self.wake), wiring.prompter, wiring.approver)
        return PreparedRun(session, store, owned)

    def _prepared_store(self, run_id: str,
                        durability: Literal["normal", "full"] | None) -> tuple[Store, bool]:
        """The store for resuming ``run_id``, with the durability the run recorded unless
        one is given."""
        store, owned = self._open(must_exist=True, durability=durability)
        if owned and durability is None and self.durability is None:
            recorded = store.get_run(run_id).config.get("durability")
            if recorded == "full":
                store.close()
                store, owned = self._open(must_exist=True, durability="full")
        return store, owned

    def _prepare_resumed(self, run_id: str, options: ResumeOptions,
                         lockstep: Lockstep | None) -> PreparedRun:
        client, spec = _model(options.get("model"))
        wiring = _Wiring(options, lockstep)
        policy = _path(options.get("policy"))
        overrides = {"model": spec,
                     "approval": _mode(options),
                     "policy": str(policy.resolve()) if policy else None,
                     "model_options": dict(options.get("model_options") or {})}
        store, owned = self._prepared_store(run_id, options.get("durability"))
        try:
            session = _prepare_resume(
                run_id, store, observer=wiring.observer(), prompter=wiring.prompter,
                overrides=overrides,
                allow_changed_machine=options.get("allow_changed_machine", False),
                tools=_specs(options.get("tools") or ()), model_client=client)
        except BaseException:
            if owned:
                store.close()
            raise
        return self._prepared(session, store, owned, wiring)

    # -- reading ----------------------------------------------------------------------------

    def list_runs(self) -> list[RunInfo]:
        """Every run, oldest first (none where no database is yet)."""
        if not self.target.exists() and self._given is None:
            return []
        store, owned = self._open(reading=True)
        try:
            return store.list_runs()
        finally:
            if owned:
                store.close()

    def show(self, run_id: str) -> RunInfo:
        """One run (an unambiguous prefix of its id will do)."""
        store, owned = self._open(must_exist=True, reading=True)
        try:
            return store.get_run(run_id)
        finally:
            if owned:
                store.close()

    def children(self, run_id: str) -> list[RunInfo]:
        """The child runs ``run_id`` started (``run_machine`` states, ``delegate`` calls),
        oldest first; each names its parent in ``parent_run_id`` and ``parent_step``."""
        store, owned = self._open(must_exist=True, reading=True)
        try:
            return store.child_runs(store.get_run(run_id).run_id)
        finally:
            if owned:
                store.close()

    # -- forks ----------------------------------------------------------------------------

    def fork(self, run_id: str, step: int, *, workspace: PathArg | None = None,
             allow_partial: bool = False) -> ForkResult:
        """A new run that begins at step ``step`` of ``run_id`` (as ``show --json`` numbers
        them): its conversation, data and usage as they stood then, its workspace a new
        folder (``workspace``, else beside the original's, named after the new run) holding
        the files as they were. ``interrupted``: ``resume`` continues it. Refused
        (``ForkNotExactError``, nothing made) where a file cannot be rebuilt exactly, unless
        ``allow_partial``."""
        from engine.forks.service import fork
        from engine.session.compose import new_run_id

        store, owned = self._open(must_exist=True)
        try:
            return fork(store, run_id, step, new_id=new_run_id(), workspace=_path(workspace),
                        allow_partial=allow_partial)
        finally:
            if owned:
                store.close()

    # -- approvals ------------------------------------------------------------------------

    def pending_approvals(self, run_id: str | None = None) -> list[PendingApproval]:
        """Calls parked for a person's decision, oldest first (of one run, with ``run_id``)."""
        if not self.target.exists() and self._given is None:
            return []
        store, owned = self._open()
        try:
            return _pending(store, run_id)
        finally:
            if owned:
                store.close()

    def approve(self, run_id: str, call_id: str, *, always: str | None = None,
                who: str | None = None, channel: str = "api",
                args_hash: str | None = None) -> DecidedApproval:
        """Allow a parked call, bound to the arguments it was parked with (or to
        ``args_hash``, what the decider was shown); ``always="run"`` (or the call's
        capability) allows its kind for the rest of the run. Resume the run next (a run
        that a backend drives is woken instead)."""
        return self._decide(run_id, call_id, "allow", always=always, who=who,
                            channel=channel, args_hash=args_hash)

    def deny(self, run_id: str, call_id: str, *, reason: str = "", who: str | None = None,
             channel: str = "api", args_hash: str | None = None) -> DecidedApproval:
        """Deny a parked call; the model is told ``reason``."""
        return self._decide(run_id, call_id, "deny", note=reason, who=who, channel=channel,
                            args_hash=args_hash)

    def _decide(self, run_id: str, call_id: str, decision: Literal["allow", "deny"],
                **kw: Any) -> DecidedApproval:
        store, owned = self._open(must_exist=True)
        try:
            return decide(store, run_id, call_id, decision, wake=self.wake, **kw)
        finally:
            if owned:
                store.close()


def _machine(machine: MachineArg) -> tuple[Path, Mapping[str, Any] | None, tuple[ToolSpec, ...]]:
    """The machine's file (or the name a Python-built machine goes by), its Python
    definition, and the tools it was built with."""
    if isinstance(machine, (str, os.PathLike)):
        return machine_path(os.fspath(machine)).resolve(), None, ()
    path = Path(machine.spec.path)
    return (path if machine.definition else path.resolve()), machine.definition, machine.tools


def _mode(options: StartOptions | ResumeOptions) -> ApprovalMode | None:
    """An approver answers ``ask`` itself: the mode is interactive then."""
    return "interactive" if options.get("approver") is not None else options.get("approval")


def _model(model: str | ModelClient | None) -> tuple[ModelClient | None, str | None]:
    if model is None or isinstance(model, str):
        return None, model
    return model, None


def _check(path: Path) -> None:
    from engine.actions.registry import ACTIONS
    from engine.validation import load_machine

    load_machine(path, ACTIONS)


def _path(value: PathArg | None) -> Path | None:
    return Path(value) if value is not None else None


def _specs(tools: Sequence[ToolArg]) -> tuple[ToolSpec, ...]:
    from engine.tooling.functions import spec_of

    return tuple(spec_of(t, repr(t)) for t in tools)


__all__ = ["MachineArg", "MachineSource", "PreparedRun", "ResumeOptions", "Runs",
           "StartOptions", "StoreArg"]
