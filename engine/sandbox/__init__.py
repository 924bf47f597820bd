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
``protected`` (the runtime's own files), ``cgroups`` (the bound on processes and memory),
``wall`` (what a command may change, git folders included), ``gitconfig`` (the keys a git
configuration may gain), ``gitcopy`` (a command's private copy of ``.git/config``, applied
after it when allowed; ``mountlink`` shows it in the sandbox), ``gitlinks`` (submodule
checkouts git on the host enters), ``survey`` (one walk from run start, kept current by
inotify: hard-linked files, other repositories, Python environments, bytecode a command
leaves), ``repos`` (whether a repository a command made may stay).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.sandbox import cgroups, gitcopy, gitlinks, usergit, wall
from engine.sandbox import home as home_view
from engine.sandbox.bwrap import MountPlan, Redirect, bwrap_argv, home_secrets
from engine.sandbox.config import merge, sandbox_from_data
from engine.sandbox.env import is_secret_name, scrub_env
from engine.sandbox.probe import Probe, mounts_links, probe
from engine.sandbox.protected import (
    WORKSPACE_PROTECTED,
    absent,
    is_protected,
    protected_paths,
    remove,
    sweep,
)
from engine.sandbox.survey import Survey
from engine.sandbox.wall import Swept
from engine.spec.model import SandboxSpec
from engine.vocabulary.errors import SandboxUnavailableError

logger = logging.getLogger(__name__)

NETWORK_RISKS = frozenset({"network", "install"})
"""Approved under ``network: ask``, a call with one of these risks gets the network."""
LIMIT_NAMES: tuple[str, ...] = ("processes", "tmp", "memory", "cpu", "file_size")
"""The bounds a confined command gets (``sandbox check --json``'s ``limits`` keys)."""
GIT_CONFIG_WRITERS = re.compile(
    r"\bgit\b.*\b(?:config|submodule|remote|branch|push|pull|fetch|checkout|switch|clone|"
    r"init|worktree|sparse-checkout|mv|rm|maintenance|lfs)\b", re.S)
"""A command that may write a git configuration: its text names git and one of the
subcommands that do (``submodule init``, ``remote add``, ``branch -u``, a checkout that sets
up tracking...). It gets the private copy of ``.git/config`` and the helper that shows it
(a process start, 25-45 ms on a loaded machine); any other command (``git status``, ``git
diff``, ``git commit``, a script that runs git) finds the file read-only and pays nothing."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """What ``Confinement.before`` set up for one command, for ``command`` and ``after``."""

    was_absent: tuple[str, ...] = ()
    group: cgroups.Group | None = None
    git: wall.GitSnapshot = field(default_factory=wall.GitSnapshot)
    checkouts: frozenset[str] = frozenset()
    """Gitlinks' ``.git`` in the workspace before the command (see ``gitlinks``)."""
    read_only: tuple[str, ...] = ()
    """Bound read-only for this command only: those ``.git`` (a folder's sensitive entries
    under ``vcs: write``)."""
    startup: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per ``site-packages`` of a Python environment in the workspace: its start-up files
    (bound read-only, and a new one removed after the command, unless it is an install)."""
    installs: bool = False
    """The command was approved as an install (it may add start-up files)."""
    config: list[gitcopy.Copies] = field(default_factory=list)
    """Under ``vcs: write``: the command's private copies of ``.git/config`` (``gitcopy``),
    made by ``command`` for a command that names git, settled by ``after``."""


def enforced_limits(found: Probe) -> dict[str, bool]:
    """Which of ``LIMIT_NAMES`` a confined command gets here: processes and memory need a
    cgroup this process can create, ``/tmp`` a bwrap that sizes a tmpfs; CPU time and file
    size are resource limits, set wherever commands are confined."""
    groups = cgroups.enforceable() if found.ok else {}
    return {"processes": groups.get("pids", False), "tmp": found.ok and found.sizes_tmp,
            "memory": groups.get("memory", False), "cpu": found.ok, "file_size": found.ok}

def home_report(env: Mapping[str, str] | None = None,
                readable: Sequence[str] = ()) -> dict[str, list[str]]:
    """What a confined command would see of the home folders here, without a run's workspace:
    the folders hidden (``hidden``) and what in them is bound back read-only (``shown``)."""
    homes, seen, git_user = _readable(os.environ if env is None else env, readable, (),
                                      os.getcwd())
    if git_user and git_user.target:
        seen.append(git_user.target)
    inside = [p for p in seen if os.path.exists(p) and any(home_view.under(p, h) for h in homes)]
    return {"hidden": list(homes), "shown": sorted(home_view.outermost(inside)),
            "git_settings_left_out": list(git_user.dropped if git_user else ())}


__all__ = ["LIMIT_NAMES", "WORKSPACE_PROTECTED", "Confinement", "Prepared", "Probe",
           "SandboxSpec", "Swept", "confinement", "enforced_limits", "home_report", "is_protected",
           "is_secret_name", "merge", "probe", "protected_paths", "sandbox_from_data", "scrub_env",
           "server_argv", "unconfined"]


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
    limits: Mapping[str, bool] = field(default_factory=dict)
    """Which of ``LIMIT_NAMES`` hold for this run's commands (see ``enforced_limits``)."""
    gitdirs: tuple[str, ...] = ()
    """Git folders a command may write (``vcs: write``), swept after each command."""
    repository: tuple[str, ...] = ()
    """The workspace's git folders, whatever ``vcs`` says (the first holds its index)."""
    startup_absent: tuple[str, ...] = ()
    """Interpreter start-up files absent from writable folders on ``sys.path``."""
    survey: Survey | None = None
    """Workspace files with a hard link outside it and other repositories' git folders,
    read-only (found from run start, kept current after each command: ``survey``)."""
    redirects: bool = False
    """Under ``vcs: write`` (walled): a command that may write git's configuration gets a
    private ``.git/config`` where ``mountlink`` works, asked once per process at the first
    such command (``probe.mounts_links``, ~33 ms), not at run start."""
    homes: tuple[str, ...] = ()
    """People's home folders, hidden but for what ``readable`` and the workspace show
    (``home``)."""
    files: tuple[tuple[str, str], ...] = ()
    """Files bound read-only in place of others (``source``, ``target``): the filtered copy
    of git's global configuration at ``~/.gitconfig`` (``usergit``)."""

    @property
    def active(self) -> bool:
        return self.bwrap is not None

    def network_for(self, approved_risk: str | None) -> bool:
        """Network inside: ``allow``; ``ask`` only for a call approved as a network call
        (``network``, or ``install``, which fetches packages)."""
        if not self.active or self.spec.network == "allow":
            return True
        return self.spec.network == "ask" and approved_risk in NETWORK_RISKS

    def command(self, argv: Sequence[str], cwd: Path | str, network: bool,
                prepared: Prepared | None = None) -> list[str]:
        """``argv`` as it is spawned: under bwrap inside its limits, or with a parent-death
        signal without it; under ``vcs: write`` with a private copy of ``.git/config`` when
        ``argv`` may write git's configuration (``GIT_CONFIG_WRITERS``), kept in
        ``prepared`` for ``after``."""
        if self.bwrap is None:
            return unconfined(argv)
        bounds = self.spec.limits
        linked = tuple(self.survey.linked()) if self.survey is not None else ()
        extra = prepared.read_only if prepared else ()
        cache = (self.survey.pycache,) if self.survey is not None else ()
        plan = MountPlan(self.workspace, (*self.writable, *cache), self.readable, self.hidden,
                         (*self.protected, *linked, *extra), network,
                         bounds.tmp if self.limits.get("tmp") else None, self.homes,
                         self.files)
        group = prepared.group if prepared else None
        redirect = None
        if prepared is not None and self.gitdirs and self.redirects \
                and any(GIT_CONFIG_WRITERS.search(a) for a in argv) \
                and mounts_links(self.bwrap):
            copies = gitcopy.prepare(gitcopy.config_dirs(self.gitdirs), self.workspace)
            if copies.files:
                prepared.config.append(copies)
                redirect = Redirect(copies.folder, tuple((c.link, c.real) for c in copies.files))
        return [*cgroups.join_script(group.join_files if group else (), bounds.cpu_s,
                                     bounds.file_size),
                *bwrap_argv(self.bwrap, argv, plan, os.path.realpath(cwd), redirect)]

    def before(self, approved_risk: str | None = None) -> Prepared:
        """Before a command (approved under ``approved_risk``): the protected paths absent
        (see ``protected.absent``), the command's cgroups, the git folders' state, the
        ``.git`` of gitlinks and of other repositories in the workspace and the start-up
        files of its Python environments (``survey``) to bind."""
        if not self.active:
            return Prepared()
        wanted = {"pids": self.spec.limits.processes, "memory": self.spec.limits.memory}
        wanted = {k: v for k, v in wanted.items()
                  if self.limits.get("processes" if k == "pids" else k)}
        checkouts = (gitlinks.checkout_gits(self.workspace, self.repository[0],
                                            self.repository[-1]) if self.repository else [])
        others = self.survey.before() if self.survey is not None else []
        gits = list(dict.fromkeys((*checkouts, *others)))
        embedded = [p for p in gits if os.path.isdir(p) and not os.path.islink(p)]
        vcs_write = self.spec.vcs == "write"
        read_only = [p for p in gits if p not in embedded]
        read_only += [r for p in embedded for r in wall.git_read_only(p, vcs_write)]
        startup = self._startup_files()
        installs = approved_risk == "install"
        if not installs:  # an install may replace them (pip rewrites an editable's .pth)
            read_only += [p for files in startup.values() for p in files]
        return Prepared((*absent(self.workspace), *self.startup_absent),
                        cgroups.create(wanted) if wanted else None,
                        wall.git_snapshot((*self.gitdirs, *(embedded if vcs_write else ())),
                                          self.workspace),
                        frozenset(checkouts), tuple(dict.fromkeys(read_only)), startup=startup,
                        installs=installs)

    def _startup_files(self) -> dict[str, frozenset[str]]:
        """Per ``site-packages`` of a Python environment in the workspace, the files python
        runs at every start there (``wall.environment_startup_files``)."""
        sites = self.survey.site_folders() if self.survey is not None else []
        return {site: frozenset(wall.environment_startup_files(site, self.workspace))
                for site in sites}

    def after(self, prepared: Prepared) -> wall.Swept:
        """End what is left in the command's cgroups and remove them; remove protected files
        the command created and undo its git changes that could run a program on the host
        (``wall.sweep_git``, ``gitlinks.sweep_checkouts``, ``Survey.after`` for the git
        folders it made elsewhere); apply the command's copy of ``.git/config`` when every
        change is allowed (``gitcopy.settle``)."""
        if prepared.group is not None:
            prepared.group.remove()
        swept = wall.sweep_git(prepared.git)
        for copies in prepared.config:
            swept.refused.update(gitcopy.settle(copies, self.workspace).refused)
        if self.survey is not None:
            swept.moved.extend(self.survey.after())
            if not prepared.installs:
                swept.removed.extend(self._new_startup_files(prepared))
                swept.removed.extend(remove(p) for p in self.survey.compiled())
        if self.repository:
            swept.moved.extend(gitlinks.sweep_checkouts(
                self.workspace, list(self.repository), prepared.checkouts))
        if prepared.was_absent:
            swept.removed.extend(sweep(prepared.was_absent))
        return swept

    def _new_startup_files(self, prepared: Prepared) -> list[str]:
        """Remove the start-up files (``*.pth``, ``sitecustomize``) a command that is no
        install added to a Python environment in the workspace, a new one included: python
        runs them at every start there, an editor's too. A ``.pth`` that only puts workspace
        folders on ``sys.path`` stays (``uv run`` installs the project so)."""
        return [remove(path) for site, files in self._startup_files().items()
                for path in sorted(files - prepared.startup.get(site, frozenset()))
                if not (path.endswith(".pth")
                        and wall.only_workspace_paths(path, site, self.workspace))]

    def read_only_note(self) -> str:
        """Why a confined write failed with ``Read-only file system``."""
        git = ("" if self.gitdirs else " (`.git/` too: the policy or machine may opt in with "
               "`sandbox: {vcs: write}`)")
        extra = "".join(f", {w}" for w in self.writable)
        return (f"inside the sandbox only the workspace{git}{extra} and a private /tmp are "
                "writable; everything else is read-only, such as a checkout `git worktree add` "
                "would make beside the workspace: add it inside the workspace, or list its "
                "folder in `sandbox.writable`")

    def hidden_note(self, text: str) -> str:
        """Why a confined command found no file where ``text`` names one in a hidden home
        folder; empty when it names none."""
        if not self.active or not self.homes:
            return ""
        for word in re.findall(r"/[^\s:'\"`,;()]+", text):
            if not home_view.is_shown(os.path.normpath(word), self.homes,
                                      (*self.readable, self.workspace, *self.writable)):
                return (f"{word} is in a home folder, which the sandbox hides except for the "
                        "workspace, PATH's folders, git's configuration, toolchains and package "
                        "caches; list what commands need in `sandbox.readable` (`~` shows the "
                        "home, its credential folders still masked)")
        return ""

    def env(self, base: Mapping[str, str], extra: Mapping[str, str] | None = None
            ) -> dict[str, str]:
        """The command's environment: secrets scrubbed unless listed in ``sandbox.env``;
        python keeps its bytecode outside the workspace (``Survey.pycache``)."""
        env = scrub_env(base, extra, self.spec.env)
        if self.active and self.survey is not None:
            env["PYTHONPYCACHEPREFIX"] = self.survey.pycache
        return env

    def describe(self, network: bool | None = None) -> dict[str, Any]:
        """What events, the trace and the audit log say about a command's confinement."""
        if not self.active:
            return {"sandboxed": False, "mode": self.spec.mode, "reason": self.reason}
        net = self.network_for(None) if network is None else network
        return {"sandboxed": True, "mode": self.spec.mode,
                "network": "allow" if net else "deny",
                "writable": [self.workspace, *self.writable, "/tmp (private)"],
                "limits": dict(self.limits)}

    def summary(self, network: bool | None = None) -> str:
        """One line: ``sandboxed (network deny, writes: workspace, /tmp)`` or why not."""
        d = self.describe(network)
        if not d["sandboxed"]:
            return f"unconfined ({self.reason})"
        extra = "".join(f", {w}" for w in self.writable)
        loose = [name for name in LIMIT_NAMES if not self.limits.get(name)]
        unbounded = f"; not enforced here: {', '.join(loose)} limit" if loose else ""
        return (f"sandboxed (network {d['network']}, writes: workspace{extra}, private /tmp"
                f"{unbounded})")


def confinement(spec: SandboxSpec | None, workspace: Path, protected: Sequence[str] = (),
                env: Mapping[str, str] | None = None, secret: Sequence[str] = (),
                walled: bool = True) -> Confinement:
    """Decide this run's confinement; ``mode: required`` without a working bwrap raises
    ``SandboxUnavailableError`` (exit 2). ``secret`` files (the run's database) are masked.
    ``walled=False`` skips looking at the workspace (``wall``): for a server, or to know only
    whether commands would be confined."""
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
    ws = os.path.realpath(workspace)
    writable = tuple(os.path.realpath(p) for p in _expand(spec.writable, home))
    homes, readable, git_user = _readable(env, spec.readable, (ws, *writable), ws)
    hidden = [*home_secrets(home, spec.hide), *_masked(ws, secret),
              *(git_user.masked if git_user else ())]
    gitdirs = wall.git_dirs(ws) if walled else []
    vcs_write = spec.vcs == "write"
    installed, startup_absent = (wall.installation_read_only(wall.installation(), ws, writable)
                                 if walled else ([], []))
    read_only = [*(p for g in gitdirs for p in wall.git_read_only(g, vcs_write)), *installed]
    kept = [p for p in (*protected, *read_only)
            if not any(is_protected(p, [h]) for h in hidden)]
    if gitdirs:
        gitlinks.warm(ws, gitdirs[0], gitdirs[-1])
    return Confinement(
        spec, found.bwrap, found.reason, ws, tuple(dict.fromkeys(kept)), tuple(hidden),
        tuple(readable), writable, enforced_limits(found),
        tuple(gitdirs) if vcs_write else (), tuple(gitdirs), tuple(startup_absent),
        Survey(ws, tuple(gitdirs)) if walled else None,
        walled and vcs_write, homes,
        ((git_user.source, git_user.target),) if git_user and git_user.target else ())


def _readable(env: Mapping[str, str], listed: Sequence[str], writable: Sequence[str],
              workspace: str) -> tuple[tuple[str, ...], list[str], usergit.StandIn | None]:
    """The home folders to hide, what commands read besides the host's system folders
    (``sandbox.readable``, PATH's folders, what their programs link to, toolchains, the files
    git's configuration names and the engine's own installation, bound in read-only where
    the private /tmp or a hidden home would hide them), and the copy of git's global
    configuration (``usergit``). Links in a folder a command can write choose nothing."""
    home = env.get("HOME")
    homes = home_view.hidden_homes(home, env)
    path_dirs = _path_dirs(env)
    linking = [p for p in path_dirs if not any(home_view.under(p, w) for w in writable)]
    own = os.path.realpath(home) if home and os.path.isabs(home) else None
    git_user = usergit.stand_in(workspace, env, homes)
    named = [p for p in (git_user.named if git_user else ())
             if not home_view.is_whole_home(p, own)]
    return homes, [*(os.path.realpath(p) for p in _expand(listed, home)),
                   *(p for p in path_dirs if not home_view.is_whole_home(p, own)),
                   *own_installation(), *home_view.shown(home, linking, homes, env),
                   *named], git_user


def _path_dirs(env: Mapping[str, str]) -> list[str]:
    """``PATH``'s folders, resolved, once each; a relative entry (``.``) names whatever folder
    a command is in, never a folder to show."""
    return list(dict.fromkeys(os.path.realpath(p) for p in env.get("PATH", "").split(os.pathsep)
                              if os.path.isabs(p)))


def _masked(workspace: str, secret: Sequence[str]) -> list[str]:
    """The engine's folder in the workspace and the run's own secret files outside it (a
    mask inside a mask could not be mounted). Each is masked at every command where it then
    exists: a database's ``-wal`` appears once the run writes, after the plan is made."""
    engine_dir = os.path.join(workspace, ".engine")
    out = [engine_dir] if os.path.isdir(engine_dir) and not os.path.islink(engine_dir) else []
    return out + [p for p in map(os.path.realpath, secret) if not is_protected(p, out)]


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
    jail = confinement(spec, Path(cwd or os.getcwd()), walled=False)
    if not jail.active:
        logger.warning("MCP server %s runs unconfined: %s", argv[0], jail.reason)
        return unconfined(argv)
    plan = MountPlan("", jail.writable, (*jail.readable, os.path.realpath(cwd or os.getcwd())),
                     jail.hidden, (), spec.network == "allow",
                     spec.limits.tmp if jail.limits.get("tmp") else None, jail.homes,
                     jail.files)
    return bwrap_argv(jail.bwrap or "bwrap", argv, plan, os.path.realpath(cwd or os.getcwd()))
