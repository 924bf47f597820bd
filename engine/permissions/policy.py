"""Policy: the decision for one tool call, from the built-in defaults and a policy file's rules.

Built-in defaults: ``read`` inside the workspace is ``allow``; ``exec``, ``write``, ``network``
and ``install`` are ``ask``; ``destructive`` is ``deny``; paths outside the whitelist are
``deny`` for writes and ``ask`` for reads; writing a sensitive file (``.git/``, ``.env``, keys)
is ``ask``. What a call is judged by comes from its tool's spec, never its name: the command of
a tool with ``command_arg`` is judged by ``shell.classify_command``; the path argument of one with
``read_paths``/``write_paths`` by ``paths.judge_path``. A tool that declares a dry run
(``ToolSpec.dry_run``) is a write tool: its preview is the dry run's patches, never an edit
worked out here.

A policy file (YAML) adds rules::

    default: deny             # what `ask` becomes in non-interactive `policy` mode: deny | allow
    on_unknown_effect: skip   # resume, for an effect with unknown outcome: skip | repeat | fail
    roots:                    # extra directories (relative paths are from the workspace)
      - {path: ../shared-data, writable: false}
    rules:                    # a rule is a decision and one or more matchers; all must match
      - {decision: allow, tool: run_shell, command: "python -m pytest", idempotent: true}
      - {decision: allow, tool: write_file, path: "src/**", reason: "the agent owns src/"}
      - {decision: deny, risk: network}
      - {decision: ask, server: github}
      - {decision: allow, tool: "mcp__fs__*"}
      - {decision: allow, risk: exec, sandboxed: true}   # only when commands run confined
    sandbox: {mode: auto, network: deny}   # engine.sandbox; overrides the machine's key by key

Matchers: ``tool`` (a glob on the tool name), ``command`` (a prefix of the argument vector of a
simple shell command after unwrapping ``timeout``/``env``/...; ``python -m pytest`` matches
``timeout 60 python -m pytest -x``), ``path`` (a glob on the path argument, relative to the
workspace: ``*``, ``?``, ``**`` crossing directories, ``[...]`` and ``{a,b}``, see
``engine.vocabulary.globs``), ``server`` (the MCP server name), ``risk``, ``sandboxed`` (whether
the call
runs confined: a shell command under the run's sandbox, a tool of a sandboxed MCP server).
Optional:
``reason`` (a label shown in audits) and ``idempotent: true`` (an allow rule declaring the
matching calls safe to repeat when a crash leaves their outcome unknown). Relative ``roots`` are
taken from the policy file's directory.

Precedence: the strictest matching rule wins (``deny`` > ``ask`` > ``allow``). A ``deny`` is
final, whether it comes from a rule or from the built-in defaults (destructive commands, writes
outside the whitelist, piping into a shell, writes to the runtime's own files listed by
``engine.sandbox.protected``). What cannot be parsed confidently or is obfuscated
stays at least ``ask`` whatever the rules say. For a compound shell command, an ``allow`` rule
applies only when every simple command is allowed (by a rule or by being read-only).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from engine.permissions.paths import (
    PathVerdict,
    Root,
    check_path_json,
    judge_path,
    resolved_workspace,
)
from engine.permissions.shell import (
    DEFAULT_DECISION,
    ShellVerdict,
    check_shell_json,
    classify_command,
)
from engine.permissions.shell_paths import strictest
from engine.permissions.words import reason_command
from engine.sandbox.config import sandbox_from_data
from engine.sandbox.protected import is_protected
from engine.spec.documents import item_lines, load_document
from engine.spec.model import SandboxSpec
from engine.tooling.spec import (
    RISK_ORDER,
    FileChange,
    Risk,
    ToolContext,
    ToolResult,
    ToolSpec,
    max_risk,
)
from engine.vocabulary.errors import UsageError
from engine.vocabulary.globs import GlobError, compile_glob, glob_match
from engine.vocabulary.state import ToolCall

logger = logging.getLogger(__name__)

__all__ = ["Decision", "Policy", "PolicyContext", "Rule", "check_path_json", "check_shell_json",
           "decide", "decide_static", "glob_match"]

DecisionValue = Literal["allow", "ask", "deny"]
DECISIONS: tuple[DecisionValue, ...] = ("allow", "ask", "deny")
MAX_PREVIEW_LINES = 400
_MATCHERS = ("tool", "command", "path", "server", "risk", "sandboxed")
_RULE_KEYS = ("decision", *_MATCHERS, "idempotent", "reason")
_TOP_KEYS = ("default", "on_unknown_effect", "roots", "rules", "sandbox", "approval")


@dataclass(frozen=True, slots=True)
class Rule:
    """One policy rule: a decision and the matchers that must all match."""

    decision: DecisionValue
    tool: str | None = None
    path: str | None = None
    command: tuple[str, ...] | None = None
    server: str | None = None
    risk: Risk | None = None
    sandboxed: bool | None = None
    """``true``: matches only calls that run confined (shell under bwrap, a sandboxed MCP
    server); ``false``: only unconfined ones; unset: either."""
    idempotent: bool = False
    """On an allow rule: matching calls are safe to repeat after a crash."""
    label: str = ""
    """Where the rule comes from (``policy.yaml: rules[2]``) or its ``reason``; shown in audits."""

    def describe(self) -> str:
        parts = [f"{k}={_show(getattr(self, k))}" for k in _MATCHERS
                 if getattr(self, k) is not None]
        return f"{self.label} ({self.decision} {' '.join(parts)})".strip()

    def matches(self, *, tool: str, risk: str, server: str | None = None,
                argv: Sequence[str] | None = None, path: str | None = None,
                sandboxed: bool = False) -> bool:
        """Whether every matcher of the rule matches; a missing matcher matches anything."""
        if self.tool is not None and not glob_match(self.tool, tool):
            return False
        if self.sandboxed is not None and self.sandboxed != sandboxed:
            return False
        if self.risk is not None and self.risk != risk:
            return False
        if self.server is not None and self.server != server:
            return False
        if self.command is not None and (argv is None or not _prefix(self.command, argv)):
            return False
        return self.path is None or (path is not None and glob_match(self.path, path))


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules and settings from a policy file (or the built-in defaults)."""

    rules: tuple[Rule, ...] = ()
    when_asked: Literal["deny", "allow"] = "deny"
    """The file's ``default``: what ``ask`` becomes in non-interactive ``policy`` mode."""
    on_unknown_effect: Literal["skip", "repeat", "fail"] = "skip"
    roots: tuple[Root, ...] = ()
    source: str = "built-in defaults"
    sandbox: SandboxSpec | None = None
    """The file's ``sandbox:`` section; overrides the machine's key by key."""
    approval: Literal["park"] | None = None
    """``approval: park``: with nobody at a terminal, ``ask`` parks the run for a person."""
    parents: tuple[Policy, ...] = ()
    """The policies of the runs above a child run (``engine.permissions.narrowing``): each
    decides too, and the strictest decision stands."""

    @classmethod
    def default(cls) -> Policy:
        """The built-in defaults, with no rules."""
        return cls()

    @classmethod
    def load(cls, path: Path, *, tools: frozenset[str] | None = None) -> Policy:
        """Read and check a policy file; every problem is a ``UsageError`` naming the file.
        With ``tools`` (the names a run can call), a rule naming no such tool is an error."""
        path = Path(path)
        doc = load_document(path)
        data = doc.value
        return cls.from_data(data if data is not None else {}, str(path), path.parent,
                             lines=item_lines(doc, "rules"), tools=tools)

    @classmethod
    def from_data(cls, data: Any, source: str = "<policy>", base: Path | None = None, *,
                  lines: Sequence[int] = (), tools: frozenset[str] | None = None) -> Policy:
        """A policy from parsed YAML; relative roots are taken from ``base`` when given.

        ``lines`` (the line of each rule) put ``file:line`` in errors; with ``tools`` (the
        known tool names), a rule naming a tool that does not exist is an error.
        """
        if not isinstance(data, Mapping):
            raise UsageError(f"{source}: a policy file is a mapping with keys {_TOP_KEYS}")
        _check_keys(data, _TOP_KEYS, source)
        default = data.get("default", "deny")
        if default not in ("deny", "allow"):
            raise UsageError(f"{source}: default: expected deny or allow, got {default!r}")
        resume = data.get("on_unknown_effect", "skip")
        if resume not in ("skip", "repeat", "fail"):
            raise UsageError(f"{source}: on_unknown_effect: expected skip, repeat or fail, "
                             f"got {resume!r}")
        roots = tuple(_root(r, f"{source}: roots[{i}]", base)
                      for i, r in enumerate(_list(data, "roots", source)))
        rules = tuple(
            _rule(r, f"{source}:{lines[i]}: rules[{i}]" if i < len(lines) and lines[i]
                  else f"{source}: rules[{i}]", tools)
            for i, r in enumerate(_list(data, "rules", source)))
        sandbox = (sandbox_from_data(data["sandbox"], f"{source}: sandbox")
                   if data.get("sandbox") is not None else None)
        approval = data.get("approval")
        if approval not in (None, "park"):
            raise UsageError(f"{source}: approval: expected park, got {approval!r}")
        return cls(rules, default, resume, roots, source, sandbox, approval)

    def to_data(self) -> dict[str, Any]:
        """The policy as it would be written in a file (for ``engine policy show``)."""
        rules = []
        for r in self.rules:
            d: dict[str, Any] = {"decision": r.decision}
            for k in _MATCHERS:
                v = getattr(r, k)
                if v is not None:
                    d[k] = shlex.join(v) if k == "command" else v
            if r.idempotent:
                d["idempotent"] = True
            rules.append(d)
        data: dict[str, Any] = {
            "default": self.when_asked, "on_unknown_effect": self.on_unknown_effect,
            "roots": [{"path": str(r.path), "writable": r.writable} for r in self.roots],
            "rules": rules}
        if self.parents:
            data["parents"] = [p.to_data() for p in self.parents]
        return data

    def declares_idempotent(self, call: ToolCall, spec: ToolSpec, workspace: Path) -> bool:
        """True when an allow rule with ``idempotent: true`` matches ``call`` (for a shell
        command: matches every simple command in it)."""
        rules = [r for r in self.rules if r.idempotent and r.decision == "allow"]
        if not rules:
            return False
        args = dict(call.args or {})
        command = args.get(spec.command_arg) if spec.command_arg else None
        if isinstance(command, str):
            v = classify_command(command, workspace, roots=self.roots)
            return bool(v.commands) and v.parsed and all(
                any(r.path is None and r.matches(tool=spec.name, risk=e["risk"],
                                                 server=spec.server, argv=e["argv"])
                    for r in rules) for e in v.commands)
        rel = None
        path, _ = spec.path_args(args)
        if path is not None:
            rel = _relative(judge_path(path, workspace, roots=self.roots), workspace)
        return any(r.command is None and r.matches(tool=spec.name, risk=spec.risk,
                                                   server=spec.server, path=rel)
                   for r in rules)


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """What ``decide`` needs besides the call: where the workspace is and which policy rules."""

    workspace: Path
    policy: Policy = field(default_factory=Policy)
    env: Mapping[str, str] | None = None
    """Environment for ``~``/``$VAR`` in paths (``os.environ`` when None)."""
    granted: frozenset[str] = frozenset()
    """Capabilities a person allowed "always" in this run: they turn ``ask`` into ``allow``."""
    run_data: Mapping[str, Any] = field(default_factory=dict)
    """What the run's tools will see (file hashes the agent has read), so a write tool's dry
    run, which makes the preview, plans the same change the call will make."""
    sandboxed: bool = False
    """Shell commands run confined (rules with ``sandboxed: true`` apply to them)."""
    sandboxed_servers: frozenset[str] = frozenset()
    """MCP servers that run confined."""
    protected: tuple[str, ...] = ()
    """Resolved paths no write tool may change (``engine.sandbox.protected``)."""

    def confined(self, spec: ToolSpec) -> bool:
        """Whether ``spec``'s calls run inside the sandbox."""
        if spec.server is not None:
            return spec.server in self.sandboxed_servers
        return self.sandboxed and spec.command_arg is not None


@dataclass(frozen=True, slots=True)
class Decision:
    """The permission layer's answer for one tool call, before any person is asked."""

    decision: DecisionValue
    risk: Risk
    reason: str
    rule: str | None
    """The rule that decided (``policy.yaml: rules[2] (...)``); None for built-in defaults."""
    preview: str = ""
    """What a person sees: the parsed command, a unified diff, or the arguments."""
    capability: str = ""
    """The scoped key an "always" answer grants (``<shell tool>:python -m pytest``,
    ``write:src/``, ``tool:<name>``)."""
    _: KW_ONLY
    changes: tuple[FileChange, ...] = ()
    """What the tool's dry run says the call will write (the preview shows their patches)."""
    unnamed: bool = False
    """Only a person may allow the call (``deny`` in every other mode, whatever the policy or
    an "always" answer says): the preview cannot name a program it runs, or it reads
    credentials outside the workspace. The key keeps its first name."""
    unattended: str = ""
    """Why ``--approval auto`` may not run the call although a person or a policy rule may
    (it reads someone's own file outside the workspace, or a path only known at run time):
    auto approves what is asked, and nobody decided this."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"decision": self.decision, "risk": self.risk, "reason": self.reason,
             "rule": self.rule, "preview": self.preview, "capability": self.capability}
        if self.unnamed:
            d["unnamed"] = True
        if self.unattended:
            d["unattended"] = self.unattended
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Decision:
        return cls(d["decision"], d["risk"], d.get("reason", ""), d.get("rule"),
                   d.get("preview", ""), d.get("capability", ""), unnamed=bool(d.get("unnamed")),
                   unattended=str(d.get("unattended", "")))


# ---------------------------------------------------------------- deciding


def decide(call: ToolCall, spec: ToolSpec, ctx: PolicyContext) -> Decision:
    """The decision for ``call`` (pure: reads files for previews, never writes or runs).

    A child run's policy has ``parents``: each decides the call as well, and a parent's
    stricter decision stands, saying whose it is."""
    decision = _decide_one(call, spec, ctx)
    for parent in ctx.policy.parents:
        outer = _decide_one(call, spec, replace(ctx, policy=parent))
        if DECISIONS.index(outer.decision) > DECISIONS.index(decision.decision):
            whose = f"the parent run's policy {parent.source}"
            decision = replace(outer, reason=f"{outer.reason} (decided by {whose})",
                               rule=outer.rule or f"{whose}: built-in default")
    return decision


def _decide_one(call: ToolCall, spec: ToolSpec, ctx: PolicyContext) -> Decision:
    args = dict(call.args or {})
    command = args.get(spec.command_arg) if spec.command_arg else None
    if isinstance(command, str):
        return _decide_shell(spec, command, ctx)
    path, writes = spec.path_args(args)
    if path is not None:
        return _decide_path_tool(spec, args, path, writes, ctx)
    return _decide_generic(spec, args, ctx)


def decide_static(spec: ToolSpec, ctx: PolicyContext) -> Decision:
    """The decision known before seeing arguments (for ``engine tools --json``)."""
    base = DEFAULT_DECISION[spec.risk]
    matched = [r for r in ctx.policy.rules
               if r.command is None and r.path is None
               and r.matches(tool=spec.name, risk=spec.risk, server=spec.server,
                             sandboxed=ctx.confined(spec))]
    return _finish(spec, spec.risk, base, f"{spec.risk} tool", matched,
                   "deny" if base == "deny" else "allow", "", f"tool:{spec.name}", ctx)


def _decide_generic(spec: ToolSpec, args: Mapping[str, Any], ctx: PolicyContext) -> Decision:
    base = DEFAULT_DECISION[spec.risk]
    matched = [r for r in ctx.policy.rules
               if r.command is None and r.path is None
               and r.matches(tool=spec.name, risk=spec.risk, server=spec.server,
                             sandboxed=ctx.confined(spec))]
    where = f" from MCP server {spec.server}" if spec.server else ""
    return _finish(spec, spec.risk, base, f"{spec.risk} tool{where}", matched,
                   "deny" if base == "deny" else "allow", _json_preview(args),
                   f"tool:{spec.name}", ctx)


def _decide_path_tool(spec: ToolSpec, args: Mapping[str, Any], path: str, writes: bool,
                      ctx: PolicyContext) -> Decision:
    for_write = writes or spec.dry_run is not None
    risk: Risk = max_risk(spec.risk, "write") if for_write else spec.risk
    v = judge_path(path, ctx.workspace, roots=ctx.policy.roots, env=ctx.env,
                   for_write=for_write)
    if for_write and v.resolved and is_protected(v.resolved, ctx.protected):
        v = replace(v, decision="deny", reason=f"{v.resolved} is one of the runtime's own files "
                    "or runs code later (engine database, machine, policy, git hooks, ...)")
    base = strictest(DEFAULT_DECISION[risk], v.decision)
    floor: DecisionValue = "allow"
    if v.decision == "deny" or DEFAULT_DECISION[risk] == "deny":
        floor = "deny"
    elif for_write and v.sensitive:
        floor = "ask"
    rel = _relative(v, ctx.workspace)
    matched = [r for r in ctx.policy.rules
               if r.command is None
               and r.matches(tool=spec.name, risk=risk, server=spec.server, path=rel,
                             sandboxed=ctx.confined(spec))]
    preview, changes = (_write_preview(spec, args, ctx) if spec.dry_run is not None
                        else (_json_preview(args), ()))
    reason = v.reason if v.decision != "allow" or not for_write else f"{spec.name}: {v.reason}"
    decision = _finish(spec, risk, base, reason, matched, floor, preview,
                       _path_capability(v, rel, for_write), ctx)
    return replace(decision, changes=changes) if changes else decision


def _decide_shell(spec: ToolSpec, command: str, ctx: PolicyContext) -> Decision:
    verdict = classify_command(command, ctx.workspace, ctx.env, roots=ctx.policy.roots)
    finals: list[DecisionValue] = []
    deciding: list[str] = []
    for entry in verdict.commands:
        final, rule = _decide_entry(spec, entry, ctx)
        finals.append(final)
        if rule:
            deciding.append(rule)
    decision = strictest(*finals, verdict.floor,
                         "ask" if not verdict.parsed else "allow") if finals else verdict.decision
    why = verdict.person_only
    person = bool(why)
    if person:
        decision = strictest(decision, "ask")
    risk = verdict.risk
    reason, rule = _shell_reason(verdict, finals, deciding, decision)
    if person and decision == "ask":
        reason, rule = (reason if why in reason else f"{reason} ({why})"), None
    asked = [_command_capability(spec, e) for e, f in zip(verdict.commands, finals, strict=True)
             if f == "ask"]
    caps = (list(dict.fromkeys(asked))
            or [_command_capability(spec, e) for e in verdict.commands[:1]])
    return Decision(decision, risk, reason, rule, _shell_preview(command, verdict, finals),
                    " + ".join(caps) or f"{spec.name}:", unnamed=person,
                    unattended=verdict.unattended)


def _command_capability(spec: ToolSpec, entry: Mapping[str, Any]) -> str:
    """``<tool>:<program and subcommand>``: what "always" grants for one simple command."""
    return f"{spec.name}:{entry['capability']}"


def _decide_entry(spec: ToolSpec, entry: Mapping[str, Any],
                  ctx: PolicyContext) -> tuple[DecisionValue, str | None]:
    matched = [r for r in ctx.policy.rules
               if r.path is None and r.matches(tool=spec.name, risk=entry["risk"],
                                               server=spec.server, argv=entry["argv"],
                                               sandboxed=ctx.confined(spec))]
    floor = entry.get("floor", "allow")
    if matched:
        top = max(matched, key=lambda r: DECISIONS.index(r.decision))
        final = strictest(top.decision, floor)
        return final, top.describe() if final == top.decision else None
    granted = _command_capability(spec, entry)
    if entry["decision"] == "ask" and granted in ctx.granted:
        final = strictest("allow", floor)
        return final, f"granted: {granted}" if final == "allow" else None
    return entry["decision"], None


def _shell_reason(verdict: ShellVerdict, finals: list[DecisionValue], rules: list[str],
                  decision: DecisionValue) -> tuple[str, str | None]:
    if not verdict.parsed and decision == "ask" and "ask" not in finals and "deny" not in finals:
        return verdict.reason, None
    for entry, final in zip(verdict.commands, finals, strict=True):
        if final == decision and decision != "allow":
            return f"{reason_command(entry['argv'])}: {entry['reason']}", _rule_for(
                rules, decision)
    if decision == "allow":
        return (("allowed by " + "; ".join(rules)) if rules else verdict.reason,
                rules[0] if rules else None)
    return verdict.reason, None


def _rule_for(rules: list[str], decision: str) -> str | None:
    return next((r for r in rules if f"({decision} " in r), None)


def _finish(spec: ToolSpec, risk: Risk, base: DecisionValue, reason: str, matched: list[Rule],
            floor: DecisionValue, preview: str, capability: str,
            ctx: PolicyContext) -> Decision:
    """Apply rules (strictest wins), the floor (deny is final) and granted capabilities."""
    rule: str | None = None
    decision = base
    if matched:
        top = max(matched, key=lambda r: DECISIONS.index(r.decision))
        decision = top.decision
        rule = top.describe()
        reason = f"{reason}; rule {rule}"
    if decision == "ask" and capability in ctx.granted:
        decision, rule = "allow", f"granted: {capability}"
    final = strictest(decision, floor)
    if final != decision:
        rule = None
    return Decision(final, risk, reason, rule, preview, capability)


# ---------------------------------------------------------------- previews and capabilities


def _shell_preview(command: str, verdict: ShellVerdict, finals: Sequence[str]) -> str:
    lines = [f"$ {command}"]
    for entry, final in zip(verdict.commands, finals, strict=True):
        via = f" (via {entry['via']})" if entry.get("via") else ""
        lines.append(f"  {final:<5} {entry['risk']:<11} {shlex.join(entry['argv'])}{via}"
                     f"  -- {entry['reason']}")
    if not verdict.parsed:
        lines.append(f"  not confidently parsed: {verdict.reason}")
    return "\n".join(lines)


def _write_preview(spec: ToolSpec, args: Mapping[str, Any],
                   ctx: PolicyContext) -> tuple[str, tuple[FileChange, ...]]:
    """The tool's own dry run, shown as its patches: what the call will change, nothing else."""
    assert spec.dry_run is not None
    planned = spec.dry_run(args, ToolContext(workspace=ctx.workspace, run_data=ctx.run_data))
    if isinstance(planned, ToolResult):
        return f"{spec.name} would fail: {planned.content}\n{_json_preview(args)}", ()
    if not planned:
        return f"{spec.name}: no file would change", ()
    return _cap_lines("\n".join(c.patch.rstrip("\n") or f"{c.path}: no change"
                                 for c in planned)), tuple(planned)


def _cap_lines(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= MAX_PREVIEW_LINES:
        return text
    more = len(lines) - MAX_PREVIEW_LINES
    return "\n".join([*lines[:MAX_PREVIEW_LINES], f"... {more} more diff lines"])


def _json_preview(args: Mapping[str, Any]) -> str:
    text = _flat_json(args)
    if text is None:
        text = json.dumps(dict(args), indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 4000 else text[:4000] + "\n... (truncated)"


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _flat_json(args: Mapping[str, Any]) -> str | None:
    """``json.dumps(args, indent=2, sort_keys=True, ensure_ascii=False)`` for the common flat
    object of scalars, each part written by the C encoder (with ``indent`` the whole would go
    through the pure-Python one); None for anything else."""
    if not args:
        return "{}"
    if not all(type(k) is str and type(v) in _SCALARS for k, v in args.items()):
        return None
    return "{\n  " + ",\n  ".join(
        f"{_dumps(k)}: {_dumps(args[k])}" for k in sorted(args)) + "\n}"


_dumps = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` without a new encoder per call."""


def _relative(v: PathVerdict, workspace: Path) -> str | None:
    """The resolved path relative to the resolved workspace (``.`` for the workspace itself),
    or the resolved path when outside; both are normalised absolute paths, so a component-wise
    comparison is a comparison of the string with ``workspace + "/"``."""
    if not v.resolved:
        return None
    ws = str(resolved_workspace(workspace))
    if v.resolved == ws:
        return "."
    prefix = ws if ws.endswith("/") else ws + "/"
    return v.resolved[len(prefix):] if v.resolved.startswith(prefix) else v.resolved


def _path_capability(v: PathVerdict, rel: str | None, for_write: bool) -> str:
    verb = "write" if for_write else "read"
    if rel is None:
        return f"{verb}:?"
    if for_write and v.sensitive:
        return f"{verb}:{rel}"
    parent = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ("/" if rel.startswith("/") else "./")
    return f"{verb}:{parent}"


def capability_covers(granted: str, capability: str) -> bool:
    """Whether a granted ``write:src/`` covers ``write:src/pkg/`` (directories nest)."""
    if granted == capability:
        return True
    kind, _, scope = granted.partition(":")
    other_kind, _, other = capability.partition(":")
    return (kind in ("read", "write") and kind == other_kind and scope.endswith("/")
            and scope != "./" and other.startswith(scope))


# ---------------------------------------------------------------- matching and loading


def _prefix(prefix: tuple[str, ...], argv: Sequence[str]) -> bool:
    if len(argv) < len(prefix) or not prefix:
        return False
    first = argv[0].rsplit("/", 1)[-1] if "/" not in prefix[0] else argv[0]
    return first == prefix[0] and tuple(argv[1:len(prefix)]) == prefix[1:]


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return repr(shlex.join(value))
    return str(value)


def _check_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, 1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; expected one of {allowed}"
            raise UsageError(f"{where}: unknown key {key!r}{hint}")


def _list(data: Mapping[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise UsageError(f"{source}: {key}: expected a list")
    return value


def _root(item: Any, where: str, base: Path | None) -> Root:
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, Mapping) or "path" not in item:
        raise UsageError(f"{where}: expected {{path: DIR, writable: true|false}}")
    _check_keys(item, ("path", "writable"), where)
    path = Path(os.path.expanduser(str(item["path"])))
    if base is not None and not path.is_absolute():
        path = Path(os.path.realpath(base / path))
    return Root(path, bool(item.get("writable", False)))


_GLOB_CHARS = ("*", "?", "[", "{")


def _check_tool(pattern: str, tools: frozenset[str], where: str) -> None:
    """A ``tool`` matcher must be able to match: a known tool, an MCP tool, or a glob of them."""
    if pattern.startswith("mcp__") or pattern in tools:
        return
    if any(c in pattern for c in _GLOB_CHARS):
        if any(glob_match(pattern, t) for t in [*tools, "mcp__server__tool"]):
            return
        raise UsageError(f"{where}: tool: {pattern!r} matches no tool")
    close = difflib.get_close_matches(pattern, sorted(tools), 1)
    hint = (f"; did you mean {close[0]!r}?" if close
            else f"; known tools: {', '.join(sorted(tools))}")
    raise UsageError(f"{where}: tool: unknown tool {pattern!r} (MCP tools are mcp__SERVER__TOOL)"
                     f"{hint}")


def _check_path_glob(pattern: str, where: str) -> None:
    """A ``path`` glob must be one that can match a workspace path (``engine.vocabulary.globs``)."""
    why = ""
    parts = pattern.split("/")
    if not pattern.strip():
        why = "it is empty"
    elif any("**" in part and part != "**" for part in parts):
        why = "** must be a whole path component (src/**/x.py)"
    elif ".." in parts or "." in parts[:-1] or (pattern.startswith("./")):
        why = "paths are matched relative to the workspace, without . or .. components"
    elif "\\" in pattern or "\x00" in pattern:
        why = "backslashes and NUL never appear in a matched path"
    if why:
        raise UsageError(f"{where}: path: {pattern!r} is not a valid glob: {why}")


def _rule(item: Any, where: str, tools: frozenset[str] | None = None) -> Rule:
    if not isinstance(item, Mapping):
        raise UsageError(f"{where}: expected a mapping with decision and matchers")
    _check_keys(item, _RULE_KEYS, where)
    decision = item.get("decision")
    if decision not in DECISIONS:
        raise UsageError(f"{where}: decision: expected allow, ask or deny, got {decision!r}")
    if not any(k in item for k in _MATCHERS):
        raise UsageError(f"{where}: a rule needs at least one of {', '.join(_MATCHERS)}")
    risk = item.get("risk")
    if risk is not None and risk not in RISK_ORDER:
        close = difflib.get_close_matches(str(risk), RISK_ORDER, 1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"{where}: risk: unknown risk class {risk!r}{hint}")
    command = item.get("command")
    argv: tuple[str, ...] | None = None
    if command is not None:
        try:
            argv = tuple(command) if isinstance(command, list) else tuple(shlex.split(command))
        except ValueError as exc:
            raise UsageError(f"{where}: command: {exc}") from exc
        if not argv:
            raise UsageError(f"{where}: command: empty")
    sandboxed = item.get("sandboxed")
    if sandboxed is not None and not isinstance(sandboxed, bool):
        raise UsageError(f"{where}: sandboxed: expected true or false, got {sandboxed!r}")
    tool = _opt_str(item, "tool")
    if tool is not None and tools is not None:
        _check_tool(tool, tools, where)
    path = _opt_str(item, "path")
    if path is not None:
        _check_path_glob(path, where)
    label = f"{where}: {item['reason']}" if item.get("reason") else where
    for key in ("tool", "path"):
        _check_glob(item, key, where)
    return Rule(decision, _opt_str(item, "tool"), _opt_str(item, "path"), argv,
                _opt_str(item, "server"), risk, sandboxed, bool(item.get("idempotent", False)),
                label)


def _check_glob(item: Mapping[str, Any], key: str, where: str) -> None:
    """A glob that cannot be compiled is refused when the policy is loaded, not when matched."""
    pattern = _opt_str(item, key)
    if pattern is not None:
        try:
            compile_glob(pattern)
        except GlobError as exc:
            raise UsageError(f"{where}: {key}: {exc}") from exc


def _opt_str(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    return None if value is None else str(value)
