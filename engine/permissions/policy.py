"""The policy: a pure ``decide(call, spec, ctx) -> Decision`` that fails closed.

Defaults: read inside the workspace -> allow; exec/write/network/install -> ask; destructive ->
deny; writes outside the workspace whitelist -> deny, reads outside -> ask. A policy file adds
rules; the strictest matching rule wins and an allow never overrides a deny.

Policy file (YAML)::

    default: deny            # what `ask` becomes in non-interactive policy mode: deny | allow
    on_unknown_effect: skip  # resume of an effect that may have happened: skip | repeat | fail
    roots: [{path: ../data, writable: false}]
    rules:
      - {decision: allow, tool: run_shell, command: "python -m pytest", idempotent: true}
      - {decision: allow, tool: write_file, path: "src/**"}
      - {decision: deny, risk: network}
      - {decision: ask, server: github}
      - {decision: allow, tool: "mcp__fs__*"}

A rule matches when every key it names matches: ``tool`` (glob on the tool name), ``path``
(glob on the workspace-relative path argument), ``command`` (prefix of the parsed shell command,
word by word), ``server`` (MCP server), ``risk``. ``idempotent: true`` on an allow rule declares
the matching calls safe to repeat when a crash leaves their outcome unknown.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import logging
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config import load_yaml
from engine.errors import UsageError
from engine.permissions.paths import Root, judge_path
from engine.state import ToolCall
from engine.tooling.spec import RISK_ORDER, Risk, ToolSpec, max_risk

logger = logging.getLogger(__name__)

DecisionKind = Literal["allow", "ask", "deny"]
_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
PATH_ARG_TOOLS = frozenset({"read_file", "list_files", "search_text", "write_file", "edit_file"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
_RULE_KEYS = {"decision", "tool", "path", "command", "server", "risk", "idempotent", "reason"}


@dataclass(frozen=True, slots=True)
class Rule:
    """One policy rule; every key it names must match."""

    decision: DecisionKind
    tool: str | None = None
    path: str | None = None
    command: tuple[str, ...] | None = None
    server: str | None = None
    risk: Risk | None = None
    idempotent: bool = False
    label: str = ""


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules of a run plus what ``ask`` becomes when no person can answer."""

    rules: tuple[Rule, ...] = ()
    when_asked: Literal["allow", "deny"] = "deny"
    """The file's ``default``: what ``ask`` becomes when no person can answer."""
    on_unknown_effect: Literal["skip", "repeat", "fail"] = "skip"
    roots: tuple[Root, ...] = ()
    source: str = "built-in defaults"

    @classmethod
    def default(cls) -> Policy:
        """The built-in defaults, with no rules."""
        return cls()

    @classmethod
    def load(cls, path: Path) -> Policy:
        """Read a policy file; every problem is one ``UsageError`` naming the file."""
        raw = load_yaml(path) or {}
        if not isinstance(raw, dict):
            raise UsageError(f"{path}: a policy file is a mapping (default, rules, ...)")
        unknown = set(raw) - {"default", "on_unknown_effect", "roots", "rules"}
        if unknown:
            raise UsageError(f"{path}: unknown key(s) {sorted(unknown)}; valid: default, "
                             "on_unknown_effect, roots, rules")
        default = raw.get("default", "deny")
        if default not in ("allow", "deny"):
            raise UsageError(f"{path}: default must be allow or deny, not {default!r}")
        unknown_effect = raw.get("on_unknown_effect", "skip")
        if unknown_effect not in ("skip", "repeat", "fail"):
            raise UsageError(f"{path}: on_unknown_effect must be skip, repeat or fail")
        rules = tuple(_rule(path, i, r) for i, r in enumerate(raw.get("rules") or (), 1))
        roots = tuple(Root((path.parent / r["path"]).resolve(), bool(r.get("writable")))
                      for r in raw.get("roots") or ())
        return cls(rules, default, unknown_effect, roots, str(path))

    def declares_idempotent(self, call: ToolCall, spec: ToolSpec, workspace: Path) -> bool:
        """True when an allow rule with ``idempotent: true`` matches ``call``."""
        facts = _facts(call, spec, workspace)
        return any(r.idempotent and r.decision == "allow" and _matches(r, facts)
                   for r in self.rules)


def _rule(path: Path, index: int, raw: Any) -> Rule:
    where = f"{path}: rules[{index}]"
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: a rule is a mapping with a decision")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        close = difflib.get_close_matches(sorted(unknown)[0], _RULE_KEYS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"{where}: unknown key {sorted(unknown)[0]!r}{hint}")
    decision = raw.get("decision")
    if decision not in _STRICTNESS:
        raise UsageError(f"{where}: decision must be allow, ask or deny")
    risk = raw.get("risk")
    if risk is not None and risk not in RISK_ORDER:
        raise UsageError(f"{where}: risk must be one of {', '.join(RISK_ORDER)}")
    command = tuple(shlex.split(raw["command"])) if raw.get("command") else None
    label = raw.get("reason") or f"{path.name} rule {index}"
    return Rule(decision, raw.get("tool"), raw.get("path"), command, raw.get("server"), risk,
                bool(raw.get("idempotent")), label)


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """Where a decision is made: the workspace, the policy, the environment for ``$VAR``."""

    workspace: Path
    policy: Policy = field(default_factory=Policy)
    env: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The policy's answer for one call, before any person or mode is consulted."""

    decision: DecisionKind
    risk: Risk
    reason: str
    rule: str | None
    preview: str
    capability: str


@dataclass
class _Facts:
    tool: str
    risk: Risk
    server: str | None
    rel_path: str | None
    commands: list[list[str]]


def _facts(call: ToolCall, spec: ToolSpec, workspace: Path) -> _Facts:
    rel = call.args.get("path") if call.name in PATH_ARG_TOOLS else None
    commands: list[list[str]] = []
    if call.name == "run_shell" and isinstance(call.args.get("command"), str):
        verdict = _shell(call.args["command"], workspace)
        commands = [list(c.get("argv") or ()) for c in verdict.get("commands") or ()]
    return _Facts(call.name, spec.risk, spec.server, rel if isinstance(rel, str) else None,
                  commands)


def _matches(rule: Rule, f: _Facts) -> bool:
    if rule.tool is not None and not fnmatch.fnmatchcase(f.tool, rule.tool):
        return False
    if rule.server is not None and f.server != rule.server:
        return False
    if rule.risk is not None and f.risk != rule.risk:
        return False
    if rule.path is not None and (f.rel_path is None or not _path_match(f.rel_path, rule.path)):
        return False
    if rule.command is not None:
        n = len(rule.command)
        return bool(f.commands) and all(tuple(c[:n]) == rule.command for c in f.commands)
    return True


def _path_match(rel: str, pattern: str) -> bool:
    rel = rel.removeprefix("./")
    return fnmatch.fnmatchcase(rel, pattern) or (
        pattern.endswith("/**") and (rel + "/").startswith(pattern[:-2]))


def _shell(command: str, workspace: Path) -> dict[str, Any]:
    try:
        from engine.permissions.shell import classify_command
    except ImportError:  # the shell classifier is not installed: nothing is proven safe
        argv = command.split()
        return {"risk": "exec", "decision": "ask", "commands": [{"argv": argv}],
                "reason": "shell classifier unavailable"}
    v = classify_command(command, workspace)
    return {"risk": v.risk, "decision": v.decision, "reason": v.reason,
            "commands": list(v.commands)}


def decide(call: ToolCall, spec: ToolSpec, ctx: PolicyContext) -> Decision:
    """The policy's decision for ``call``: built-in defaults, then the strictest rule."""
    base, risk, reason, preview = _default(call, spec, ctx)
    facts = _facts(call, spec, ctx.workspace)
    facts.risk = risk
    decision, rule_label = base, "default"
    matched = [r for r in ctx.policy.rules if _matches(r, facts)]
    if matched:
        strictest = max(matched, key=lambda r: _STRICTNESS[r.decision])
        if base == "deny" and strictest.decision != "deny":
            reason = f"{reason} (a rule allows it, but deny cannot be overridden)"
        else:
            decision, rule_label = strictest.decision, strictest.label
            reason = f"{reason}; {strictest.label}: {strictest.decision}"
    return Decision(decision, risk, reason, rule_label, preview, _capability(call, facts))


def _default(call: ToolCall, spec: ToolSpec, ctx: PolicyContext
             ) -> tuple[DecisionKind, Risk, str, str]:
    args = dict(call.args)
    if call.name == "run_shell" and isinstance(args.get("command"), str):
        v = _shell(args["command"], ctx.workspace)
        lines = [f"$ {args['command']}"] + [
            f"  {' '.join(c.get('argv') or [])}  [{c.get('risk', '?')}]"
            for c in v.get("commands") or ()]
        return v["decision"], v["risk"], v["reason"], "\n".join(lines)
    risk: Risk = spec.risk
    preview = json.dumps(args, indent=2, ensure_ascii=False, default=str)
    path = args.get("path")
    if call.name in PATH_ARG_TOOLS and isinstance(path, str):
        for_write = call.name in WRITE_TOOLS
        pv = judge_path(path, ctx.workspace, roots=ctx.policy.roots, env=ctx.env,
                        for_write=for_write)
        if for_write:
            preview = _diff_preview(ctx.workspace, path, args) or preview
        if pv.decision != "allow" or for_write:
            kind: DecisionKind = "deny" if pv.decision == "deny" else "ask"
            return max_decision(kind, _by_risk(risk)), risk, pv.reason, preview
        return _by_risk(risk), risk, pv.reason, preview
    return _by_risk(risk), risk, f"{call.name} has risk {risk}", preview


def _by_risk(risk: Risk) -> DecisionKind:
    return "allow" if risk == "read" else "deny" if risk == "destructive" else "ask"


def max_decision(a: DecisionKind, b: DecisionKind) -> DecisionKind:
    return a if _STRICTNESS[a] >= _STRICTNESS[b] else b


def _diff_preview(workspace: Path, rel: str, args: Mapping[str, Any]) -> str:
    target = workspace / rel
    try:
        old = target.read_text(encoding="utf-8") if target.exists() else ""
    except (OSError, UnicodeDecodeError):
        return ""
    if isinstance(args.get("content"), str):
        new = args["content"]
    elif isinstance(args.get("old"), str) and isinstance(args.get("new"), str):
        new = old.replace(args["old"], args["new"], 1 if not args.get("replace_all") else -1)
    elif isinstance(args.get("diff"), str):
        return args["diff"]
    else:
        return ""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{rel}", f"b/{rel}"))


def _capability(call: ToolCall, facts: _Facts) -> str:
    """What "always allow" grants: a program and subcommand, a directory, or a tool."""
    if call.name == "run_shell" and facts.commands:
        heads = sorted({" ".join(c[:3] if c[:1] in (["python"], ["python3"]) else c[:2])
                        for c in facts.commands})
        return "run_shell:" + " && ".join(heads)
    if call.name in WRITE_TOOLS and facts.rel_path:
        parent = str(Path(facts.rel_path).parent)
        return f"write:{'' if parent == '.' else parent + '/'}"
    return f"tool:{call.name}"


def decide_static(spec: ToolSpec, ctx: PolicyContext) -> Decision:
    """The decision for a tool before looking at arguments (``engine tools``)."""
    facts = _Facts(spec.name, spec.risk, spec.server, None, [])
    decision: DecisionKind = _by_risk(spec.risk)
    reason, label = f"risk {spec.risk}", "default"
    matched = [r for r in ctx.policy.rules
               if r.path is None and r.command is None and _matches(r, facts)]
    if matched and decision != "deny":
        strictest = max(matched, key=lambda r: _STRICTNESS[r.decision])
        decision, label = strictest.decision, strictest.label
    return Decision(decision, spec.risk, reason, label, "", f"tool:{spec.name}")


def check_shell_json(command: str, workspace: Path) -> dict[str, Any]:
    """``policy check-shell --json``: decision, risk, reason and the simple commands."""
    v = _shell(command, workspace)
    return {"decision": v["decision"], "risk": v["risk"], "reason": v["reason"],
            "commands": v.get("commands") or []}


def check_path_json(path: str, workspace: Path) -> dict[str, Any]:
    """``policy check-path --json``: inside, resolved, decision, reason."""
    v = judge_path(path, workspace)
    return {"inside": v.inside, "resolved": v.resolved, "decision": v.decision,
            "reason": v.reason}


def risk_of(commands: Sequence[Mapping[str, Any]]) -> Risk:
    return max_risk(*(c.get("risk", "exec") for c in commands))
