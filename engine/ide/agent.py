"""The protocol's methods, answered: ``initialize``, ``session/new``, ``session/load``,
``session/set_mode``, ``session/set_config_option`` (model, machine), ``session/prompt``,
``session/cancel`` (and ``authenticate``: none is needed). The SDK validates each request
against the ACP v1 schema before it gets here."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)
from anyio.abc import TaskGroup

from engine.ide.config import config_options, set_option
from engine.ide.sessions import MODES, Session, conversation, restore
from engine.ide.turns import Turns
from engine.ide.updates import Updates
from engine.runs.service import Runs
from engine.spec.bundled import machine_path
from engine.vocabulary.errors import TurnstileError, UsageError
from engine.vocabulary.version import __version__

logger = logging.getLogger(__name__)


class TurnstileAgent:
    """One editor connection: its sessions, driven as runs of one store."""

    def __init__(self, runs: Runs, machine: str, background: TaskGroup) -> None:
        self.runs = runs
        self.machine = machine
        self.sessions: dict[str, Session] = {}
        self.client: Client | None = None
        self.capabilities = ClientCapabilities()
        self._turns: Turns | None = None
        self._background = background
        """Where what outlives a request runs (the requests re-sent after a load)."""

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    @property
    def turns(self) -> Turns:
        if self._turns is None:
            assert self.client is not None, "on_connect comes first"
            self._turns = Turns(self.runs, self.client)
        return self._turns

    # -- the connection ---------------------------------------------------------------------

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: Any) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        fs = self.capabilities.fs
        self.turns.editor_writes = bool(fs is not None and fs.write_text_file)
        self.turns.editor_reads = bool(fs is not None and fs.read_text_file)
        if client_info is not None:
            self.turns.who = f"{client_info.name} (acp)"
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True)),
            auth_methods=[],
            agent_info=Implementation(name="turnstile", title="Turnstile", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return AuthenticateResponse()

    # -- sessions ---------------------------------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        """A new session in ``cwd``; ``_meta.turnstile`` may name the model, machine, policy."""
        workspace = _workspace(cwd)
        meta = kwargs.get("turnstile") or {}
        if not isinstance(meta, dict):
            raise RequestError.invalid_params({"_meta.turnstile": "expected an object"})
        machine = _in(workspace, str(meta.get("machine") or self.machine))
        _check_machine(machine)
        policy = _opt(meta, "policy")
        s = Session(uuid.uuid4().hex, workspace, machine, _opt(meta, "model"),
                    _in(workspace, policy) if policy else None)
        self.sessions[s.id] = s
        return NewSessionResponse(session_id=s.id, modes=_modes(s),
                                  config_options=list(config_options(s)))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse:
        """Replay the session's conversation, answer, then ask again about what is pending."""
        s = self.sessions.get(session_id) or restore(self.runs, session_id, _workspace(cwd))
        if s is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id} in "
                                                            f"{self.runs.location}"})
        self.sessions[s.id] = s
        run_id, messages = conversation(self.runs, s.id)
        if run_id is not None:
            assert self.client is not None
            await Updates(self.client, s.id, s.cwd, self.turns.tools_of(s, run_id)).replay(
                messages)
        self._background.start_soon(self._resend, s)
        return LoadSessionResponse(modes=_modes(s), config_options=list(config_options(s)))

    async def _resend(self, s: Session) -> None:
        try:
            await self.turns.pending(s)
        except (TurnstileError, RequestError) as exc:
            logger.warning("session %s: %s", s.id, exc)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any
                               ) -> SetSessionModeResponse:
        s = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": f"one of {', '.join(MODES)}"})
        s.mode = MODES[mode_id].id
        assert self.client is not None
        await self.client.session_update(session_id=s.id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=s.mode))
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """Pick the model or the machine for the session's next runs."""
        s = self._session(session_id)
        set_option(s, config_id, str(value))
        return SetSessionConfigOptionResponse(config_options=list(config_options(s)))

    # -- turns ------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        s = self._session(session_id)
        text = "\n\n".join(_text_of(block) for block in prompt).strip()
        if not text:
            raise RequestError.invalid_params({"prompt": "no text in the prompt"})
        try:
            return await self.turns.prompt(s, text)
        except UsageError as exc:
            raise RequestError.invalid_params({"details": _line(exc)}) from None
        except TurnstileError as exc:
            raise RequestError.internal_error({"details": _line(exc)}) from None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        s = self.sessions.get(session_id)
        if s is not None:
            self.turns.cancel(s)

    def _session(self, session_id: str) -> Session:
        s = self.sessions.get(session_id)
        if s is None:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id} here "
                                                            "(session/load it first)"})
        return s


def _workspace(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"cwd": f"{cwd}: not an absolute path to a folder"})
    return path.resolve()


def _in(workspace: Path, name: str) -> str:
    """A relative path that names a file in the session's folder, as an absolute path (a
    bundled machine's bare name stays as it is)."""
    path = Path(name)
    return str(workspace / path) if not path.is_absolute() and (workspace / path).is_file() \
        else name


def _check_machine(machine: str) -> None:
    try:
        path = machine_path(machine)
    except UsageError as exc:
        raise RequestError.invalid_params({"machine": _line(exc)}) from None
    if not path.is_file():
        raise RequestError.invalid_params({"machine": f"{machine}: no such machine file"})


def _opt(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return str(value) if value else None


def _modes(s: Session) -> SessionModeState:
    return SessionModeState(current_mode_id=s.mode, available_modes=[
        SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES.values()])


def _text_of(block: Any) -> str:
    """A prompt block as text: text as is, an embedded file with its name, a link by name."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        res = block.resource
        body = getattr(res, "text", None)
        return f"{res.uri}:\n{body}" if body is not None else str(res.uri)
    if kind == "resource_link":
        return str(block.uri)
    return ""


def _line(exc: Exception) -> str:
    return "; ".join(line for line in str(exc).splitlines() if line.strip())
