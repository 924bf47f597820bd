"""The OS sandbox: shell commands (and opted-in MCP servers) run confined by bubblewrap.

``confinement(spec, workspace, protected)`` decides once per run, from the ``sandbox:`` settings
and a probe, whether commands run confined; ``Confinement.command`` then wraps each command's
argument vector. Nothing a tool call passes can change it: the model names a command and a cwd
inside the workspace, never mounts, network or environment.

Without bwrap (``mode: auto`` on a machine without it, or ``mode: off``) a command runs
unconfined with ``setpriv --pdeathsig KILL`` (when present): its shell dies with the engine,
what stays in its process group is stopped on resume, but processes that left the group
(``setsid``, daemons) can outlive both.

Modules: ``env`` (the secret-looking variable names, reused by redaction), ``config`` (the
``sandbox:`` section), ``bwrap`` (the command line), ``probe`` (does it work here),
``protected`` (the runtime's own files).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import SandboxUnavailableError
from engine.sandbox.bwrap import MountPlan, bwrap_argv, home_secrets
from engine.sandbox.config import merge, sandbox_from_data
from engine.sandbox.env import is_secret_name, scrub_env
from engine.sandbox.probe import Probe, probe
from engine.sandbox.protected import (
    WORKSPACE_PROTECTED,
    absent,
    is_protected,
    protected_paths,
    sweep,
)
from engine.spec.model import SandboxSpec

logger = logging.getLogger(__name__)

NETWORK_RISKS = frozenset({"network", "install"})
"""Approved under ``network: ask``, a call with one of these risks gets the network."""

__all__ = ["WORKSPACE_PROTECTED", "Confinement", "Probe", "SandboxSpec", "confinement",
           "is_protected", "is_secret_name", "merge", "probe", "protected_paths",
           "sandbox_from_data", "scrub_env", "server_argv", "unconfined"]


@dataclass(frozen=True, slots=True)
class Confinement:
    """How this run's commands are confined: decided at run start, the same for every call."""

    spec: SandboxSpec = field(default_factory=SandboxSpec)
    bwrap: str | None = None
    """The ``bwrap`` executable; None when commands run unconfined."""
    reason: str = "sandbox not configured"
    """Why commands are (un)confined, for the run-start note and the trace."""
    workspace: str = ""
    protected: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def network_for(self, approved_risk: str | None) -> bool:
        """Network inside: ``allow``; ``ask`` only for a call approved as a network call
        (``network``, or ``install``, which fetches packages)."""
        if not self.active or self.spec.network == "allow":
            return True
        return self.spec.network == "ask" and approved_risk in NETWORK_RISKS

    def command(self, argv: Sequence[str], cwd: Path | str, network: bool) -> list[str]:
        """``argv`` as it is spawned: under bwrap, or with a parent-death signal without it."""
        if self.bwrap is None:
            return unconfined(argv)
        plan = MountPlan(self.workspace, self.writable, self.readable, self.hidden,
                         self.protected, network)
        return bwrap_argv(self.bwrap, argv, plan, os.path.realpath(cwd))

    def before(self) -> tuple[str, ...]:
        """The workspace's protected paths absent before a command (see ``protected.absent``)."""
        return absent(self.workspace) if self.active else ()

    def after(self, was_absent: Sequence[str]) -> list[str]:
        """Remove protected files a confined command created; what was removed."""
        return sweep(was_absent) if was_absent else []

    def env(self, base: Mapping[str, str], extra: Mapping[str, str] | None = None
            ) -> dict[str, str]:
        """The command's environment: secrets scrubbed unless listed in ``sandbox.env``."""
        return scrub_env(base, extra, self.spec.env)

    def describe(self, network: bool | None = None) -> dict[str, Any]:
        """What events, the trace and the audit log say about a command's confinement."""
        if not self.active:
            return {"sandboxed": False, "mode": self.spec.mode, "reason": self.reason}
        net = self.network_for(None) if network is None else network
        return {"sandboxed": True, "mode": self.spec.mode,
                "network": "allow" if net else "deny",
                "writable": [self.workspace, *self.writable, "/tmp (private)"]}

    def summary(self, network: bool | None = None) -> str:
        """One line: ``sandboxed (network deny, writes: workspace, /tmp)`` or why not."""
        d = self.describe(network)
        if not d["sandboxed"]:
            return f"unconfined ({self.reason})"
        extra = "".join(f", {w}" for w in self.writable)
        return f"sandboxed (network {d['network']}, writes: workspace{extra}, private /tmp)"


def confinement(spec: SandboxSpec | None, workspace: Path, protected: Sequence[str] = (),
                env: Mapping[str, str] | None = None) -> Confinement:
    """Decide this run's confinement; ``mode: required`` without a working bwrap raises
    ``SandboxUnavailableError`` (exit 2)."""
    spec = spec or SandboxSpec()
    if spec.mode == "off":
        return Confinement(spec, None, "sandbox mode is off")
    found = probe()
    if not found.ok:
        if spec.mode == "required":
            raise SandboxUnavailableError(
                f"sandbox mode is required but commands cannot be confined: {found.reason}")
        return Confinement(spec, None, found.reason)
    env = os.environ if env is None else env
    home = env.get("HOME")
    readable = [os.path.realpath(p) for p in _expand(spec.readable, home)]
    if home:
        readable.append(os.path.realpath(home))
    # Programs on PATH and the engine's own installation stay runnable: folders the private
    # /tmp would hide are bound in read-only.
    readable += [os.path.realpath(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    readable += own_installation()
    return Confinement(
        spec, found.bwrap, found.reason, os.path.realpath(workspace), tuple(protected),
        home_secrets(home, spec.hide), tuple(readable),
        tuple(os.path.realpath(p) for p in _expand(spec.writable, home)))


def own_installation() -> list[str]:
    """The interpreter the engine runs under, its packages and the engine's own source: a
    command that runs ``sys.executable`` (a test command, an MCP server) must find them even
    when they live under ``/tmp``, which the sandbox replaces with a private one."""
    source = Path(__file__).resolve().parents[2]  # the folder that holds ``engine/``
    return [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, source)]


def _expand(paths: Sequence[str], home: str | None) -> list[str]:
    return [home + p[1:] if home and (p == "~" or p.startswith("~/")) else p for p in paths]


def unconfined(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``setpriv --pdeathsig KILL`` in front when available: the command's shell
    is killed when the engine dies (its own children are not)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


def server_argv(spec: SandboxSpec | None, argv: Sequence[str], cwd: str | None) -> list[str]:
    """A long-lived server's command (MCP stdio): as given when ``spec`` is None, else confined
    like a shell command but with nothing writable except ``spec.writable`` and a private
    ``/tmp`` (its ``cwd`` stays readable). Network follows ``spec.network`` (``ask`` is deny:
    nobody approves a server's connections one by one)."""
    if spec is None or spec.mode == "off":
        return list(argv)
    jail = confinement(spec, Path(cwd or os.getcwd()))
    if not jail.active:
        logger.warning("MCP server %s runs unconfined: %s", argv[0], jail.reason)
        return unconfined(argv)
    plan = MountPlan("", jail.writable, (*jail.readable, os.path.realpath(cwd or os.getcwd())),
                     jail.hidden, (), spec.network == "allow")
    return bwrap_argv(jail.bwrap or "bwrap", argv, plan, os.path.realpath(cwd or os.getcwd()))
