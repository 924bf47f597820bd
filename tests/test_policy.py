"""The policy: built-in defaults, rule precedence, final denies, compound commands, previews."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.permissions.approvals import Answer, ApprovalMode, Approver
from engine.permissions.policy import (
    Decision,
    Policy,
    PolicyContext,
    check_shell_json,
    decide,
    decide_static,
    glob_match,
)
from engine.session.compose import load_policy
from engine.tooling.registry import ToolRegistry
from engine.tooling.spec import Risk, ToolContext, ToolResult, ToolSpec
from engine.vocabulary.errors import UsageError
from engine.vocabulary.state import ToolCall
from turnstile_tools import SEEN_HASHES_KEY, builtin_specs

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin"}


async def _handler(args: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult("unused")


def spec(name: str, risk: Risk = "read", server: str | None = None) -> ToolSpec:
    source = f"mcp:{server}" if server else "builtin"
    return ToolSpec(name, "1", name, None, _handler, risk=risk, source=source, server=server)


BUILTIN = {s.name: s for s in builtin_specs()}
SHELL = BUILTIN["run_shell"]
READ = BUILTIN["read_file"]
WRITE = BUILTIN["write_file"]
EDIT = BUILTIN["edit_file"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    (ws / "README.md").write_text("hello\n")
    return ws


def ctx_with(ws: Path, rules: list[dict[str, Any]] | None = None, **kw: Any) -> PolicyContext:
    policy = Policy.from_data({"rules": rules or []}, "test-policy")
    return PolicyContext(ws, policy, ENV, **kw)


def shell(command: str, ctx: PolicyContext) -> Decision:
    return decide(ToolCall("c1", "run_shell", {"command": command}), SHELL, ctx)


def call(tool: ToolSpec, ctx: PolicyContext, **args: Any) -> Decision:
    return decide(ToolCall("c1", tool.name, args), tool, ctx)


# ------------------------------------------------------------ built-in defaults


def test_defaults_by_risk_and_place(ws: Path) -> None:
    ctx = ctx_with(ws)
    assert call(READ, ctx, path="src/app.py").decision == "allow"
    assert call(READ, ctx, path="/etc/passwd").decision == "ask"
    assert call(WRITE, ctx, path="src/new.py", content="x").decision == "ask"
    assert call(WRITE, ctx, path="/tmp/evil.py", content="x").decision == "deny"
    assert shell("git status", ctx).decision == "allow"
    assert shell("pytest", ctx).decision == "ask"
    assert shell("rm -rf /", ctx).decision == "deny"
    assert call(spec("mcp__web__fetch", "network", "web"), ctx, url="x").decision == "ask"
    assert call(spec("mcp__x__nuke", "destructive", "x"), ctx).decision == "deny"


def test_decision_carries_risk_reason_and_no_rule_for_defaults(ws: Path) -> None:
    d = shell("curl https://example.com", ctx_with(ws))
    assert (d.decision, d.risk, d.rule) == ("ask", "network", None)
    assert "curl" in d.reason and "network" in d.reason


# ------------------------------------------------------------ rule precedence


def test_strictest_matching_rule_wins(ws: Path) -> None:
    rules = [{"decision": "allow", "tool": "run_shell"},
             {"decision": "ask", "command": "git push"},
             {"decision": "deny", "risk": "network", "command": "curl"}]
    ctx = ctx_with(ws, rules)
    assert shell("pytest", ctx).decision == "allow"
    d = shell("git push origin main", ctx)
    assert d.decision == "ask" and "rules[1]" in (d.rule or "")
    d = shell("curl https://x", ctx)
    assert d.decision == "deny" and "rules[2]" in (d.rule or "")


def test_rule_order_does_not_matter(ws: Path) -> None:
    a = [{"decision": "deny", "tool": "write_file"}, {"decision": "allow", "path": "src/**"}]
    for rules in (a, list(reversed(a))):
        assert call(WRITE, ctx_with(ws, rules), path="src/x.py", content="").decision == "deny"


def test_an_allow_never_overrides_a_built_in_deny(ws: Path) -> None:
    rules = [{"decision": "allow", "tool": "run_shell"}, {"decision": "allow", "command": "rm"},
             {"decision": "allow", "risk": "destructive"}, {"decision": "allow", "path": "/**"},
             {"decision": "allow", "tool": "*"}]
    ctx = ctx_with(ws, rules)
    for command in ("rm -rf /", "timeout 5 rm -rf src", "curl x | sh", "git push --force",
                    "echo x > /etc/passwd", "sudo rm -rf /var"):
        d = shell(command, ctx)
        assert d.decision == "deny", command
        assert d.rule is None, command
    assert call(WRITE, ctx, path="/etc/passwd", content="x").decision == "deny"
    assert call(spec("mcp__x__drop", "destructive", "x"), ctx).decision == "deny"


def test_an_allow_never_overrides_a_deny_rule(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "command": "git"},
                        {"decision": "deny", "command": "git log"}])
    assert shell("git log -1", ctx).decision == "deny"
    assert shell("git status", ctx).decision == "allow"


def test_what_is_not_parsed_or_obfuscated_stays_ask_under_allow_rules(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "tool": "run_shell"}])
    for command in ("ls ((", "echo${IFS}hi", "$X foo", "eval $CMD", "{ls,}"):
        assert shell(command, ctx).decision == "ask", command


# ------------------------------------------------------------ compound shell commands


def test_command_prefix_rule_matches_after_unwrapping(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "command": "python -m pytest"}])
    for command in ("python -m pytest", "python -m pytest -x tests/", "timeout 60 python -m pytest",
                    "env PYTHONDONTWRITEBYTECODE=1 python -m pytest -q", "nice python -m pytest"):
        assert shell(command, ctx).decision == "allow", command
    assert shell("python -m pip install x", ctx).decision == "ask"
    assert shell("python -c 'import pytest'", ctx).decision == "ask"


def test_compound_allow_needs_every_simple_command_allowed(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "command": "python -m pytest"}])
    assert shell("python -m pytest && git status", ctx).decision == "allow"
    assert shell("cd src; python -m pytest | tail -5", ctx).decision == "allow"
    assert shell("python -m pytest && curl x.org", ctx).decision == "ask"
    assert shell("python -m pytest $(curl x.org)", ctx).decision == "ask"
    assert shell("python -m pytest > log.txt", ctx).decision == "ask"
    assert shell("python -m pytest; rm -rf src", ctx).decision == "deny"
    assert shell("bash -c 'python -m pytest && make'", ctx).decision == "ask"


def test_risk_rule_applies_to_each_simple_command(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "deny", "risk": "network"}])
    assert shell("ls && git push", ctx).decision == "deny"
    assert shell("ls && git status", ctx).decision == "allow"


def test_shell_preview_lists_parsed_commands_and_risks(ws: Path) -> None:
    d = shell("timeout 5 git status && curl -s x.org", ctx_with(ws))
    lines = d.preview.splitlines()
    assert lines[0] == "$ timeout 5 git status && curl -s x.org"
    assert any("read" in ln and "git status" in ln for ln in lines[1:])
    assert any("network" in ln and "curl -s x.org" in ln for ln in lines[1:])


# ------------------------------------------------------------ paths, MCP, capabilities


def test_path_rule_allows_writes_under_a_directory(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "tool": "write_file", "path": "src/**"}])
    d = call(WRITE, ctx, path="src/pkg/mod.py", content="x = 1\n")
    assert d.decision == "allow" and "rules[0]" in (d.rule or "")
    assert call(WRITE, ctx, path="README.md", content="x").decision == "ask"
    assert call(WRITE, ctx, path="src/../README.md", content="x").decision == "ask"
    assert call(WRITE, ctx, path="src/.env", content="KEY=1").decision == "ask"


def test_mcp_rules_by_server_and_tool_glob(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "ask", "server": "github"},
                        {"decision": "allow", "tool": "mcp__fs__*"}])
    assert call(spec("mcp__github__get_issue", "read", "github"), ctx).decision == "ask"
    assert call(spec("mcp__fs__write", "write", "fs"), ctx, path="x").decision == "allow"
    assert call(spec("mcp__fs__wipe", "destructive", "fs"), ctx).decision == "deny"


def test_capabilities_are_scoped_not_exact(ws: Path) -> None:
    ctx = ctx_with(ws)
    assert shell("python -m pytest -x tests/a.py", ctx).capability == "run_shell:python -m pytest"
    assert shell("git commit -m 'x'", ctx).capability == "run_shell:git commit"
    assert shell("timeout 9 npm install left-pad", ctx).capability == "run_shell:npm install"
    d = call(WRITE, ctx, path="src/pkg/a.py", content="")
    assert d.capability == "write:src/pkg/"
    assert call(WRITE, ctx, path="top.txt", content="").capability == "write:./"
    assert call(WRITE, ctx, path=".env", content="").capability == "write:.env"
    assert call(spec("mcp__gh__x", "network", "gh"), ctx).capability == "tool:mcp__gh__x"


def test_granted_capability_turns_ask_into_allow_but_not_deny(ws: Path) -> None:
    ctx = ctx_with(ws, granted=frozenset({"run_shell:python -m pytest", "write:src/"}))
    assert shell("python -m pytest -q", ctx).decision == "allow"
    assert shell("python -m pytest && make", ctx).decision == "ask"
    assert call(WRITE, ctx, path="src/a.py", content="").decision == "allow"
    ctx = ctx_with(ws, granted=frozenset({"run_shell:rm"}))
    assert shell("rm -rf src", ctx).decision == "deny"


# ------------------------------------------------------------ previews


def test_write_file_preview_is_a_unified_diff(ws: Path) -> None:
    seen = {SEEN_HASHES_KEY: {"src/app.py": hashlib.sha256(
        (ws / "src" / "app.py").read_bytes()).hexdigest()}}
    d = call(WRITE, ctx_with(ws, run_data=seen), path="src/app.py",
             content="def main():\n    return 2\n")
    assert d.preview.splitlines()[:2] == ["--- a/src/app.py", "+++ b/src/app.py"]
    assert "-    return 1" in d.preview and "+    return 2" in d.preview


def test_write_preview_says_when_the_call_would_fail(ws: Path) -> None:
    d = call(WRITE, ctx_with(ws), path="src/app.py", content="x\n")
    assert d.preview.startswith("write_file would fail: src/app.py already exists")
    assert '"content": "x\\n"' in d.preview
    assert d.decision == "ask"


def test_new_file_preview_diffs_from_dev_null(ws: Path) -> None:
    d = call(WRITE, ctx_with(ws), path="src/new.py", content="print(1)\n")
    assert d.preview.splitlines()[:2] == ["--- /dev/null", "+++ b/src/new.py"]


def test_edit_file_preview_applies_the_edit(ws: Path) -> None:
    d = call(EDIT, ctx_with(ws), path="src/app.py", old="return 1", new="return 42")
    assert "-    return 1" in d.preview and "+    return 42" in d.preview
    d = call(EDIT, ctx_with(ws), path="src/app.py", old="not there", new="x")
    assert "not found" in d.preview
    diff = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-hello\n+bye\n"
    assert call(EDIT, ctx_with(ws), path="README.md", diff=diff).preview == diff.rstrip("\n")
    assert (ws / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_other_tools_preview_their_arguments_as_json(ws: Path) -> None:
    d = call(spec("mcp__web__fetch", "network", "web"), ctx_with(ws), url="https://x")
    assert '"url": "https://x"' in d.preview


# ------------------------------------------------------------ static decisions


def test_decide_static_uses_risk_and_unconditional_rules(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "tool": "run_shell"},
                        {"decision": "deny", "tool": "write_file", "path": "secret/**"},
                        {"decision": "allow", "risk": "destructive"}])
    assert decide_static(READ, ctx).decision == "allow"
    assert decide_static(SHELL, ctx).decision == "allow"
    assert decide_static(WRITE, ctx).decision == "ask"
    assert decide_static(spec("nuke", "destructive"), ctx).decision == "deny"
    assert decide_static(SHELL, ctx_with(ws)).capability == "tool:run_shell"


# ------------------------------------------------------------ the policy file


def test_policy_file_loads_with_roots_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    path = tmp_path / "conf" / "policy.yaml"
    path.parent.mkdir()
    path.write_text(
        "default: allow\non_unknown_effect: repeat\n"
        "roots: [{path: ../shared, writable: true}]\n"
        "rules:\n"
        "  - {decision: allow, tool: run_shell, command: 'python -m pytest', idempotent: true}\n"
        "  - {decision: deny, risk: network, reason: no network in CI}\n")
    p = Policy.load(path)
    assert (p.when_asked, p.on_unknown_effect) == ("allow", "repeat")
    assert p.roots[0].path == (tmp_path / "shared").resolve() and p.roots[0].writable
    assert p.rules[0].command == ("python", "-m", "pytest") and p.rules[0].idempotent
    assert "no network in CI" in p.rules[1].label
    assert Policy.from_data(p.to_data()).rules[0].command == p.rules[0].command


@pytest.mark.parametrize(("text", "message"), [
    ("rules: [{decision: allow, tol: x}]", "did you mean 'tool'"),
    ("rules: [{decision: maybe, tool: x}]", "decision"),
    ("rules: [{decision: deny, risk: netwrk}]", "did you mean 'network'"),
    ("rules: [{decision: deny}]", "at least one of"),
    ("default: ask", "default"),
    ("on_unknown_effect: retry", "on_unknown_effect"),
    ("rulez: []", "did you mean 'rules'"),
    ("rules: {a: 1}", "expected a list"),
    ("[1, 2]", "mapping"),
    ("rules: [{decision: allow, command: \"unterminated 'quote\"}]", "command"),
])
def test_bad_policy_files_name_the_file_and_the_problem(tmp_path: Path, text: str,
                                                         message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        Policy.load(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_default_policy_has_no_rules() -> None:
    p = Policy.default()
    assert (p.rules, p.when_asked, p.on_unknown_effect, p.roots) == ((), "deny", "skip", ())


def test_declares_idempotent_only_for_matching_allow_rules(ws: Path) -> None:
    policy = Policy.from_data({"rules": [
        {"decision": "allow", "command": "python -m pytest", "idempotent": True},
        {"decision": "allow", "tool": "write_file", "path": "src/**", "idempotent": True}]})
    def idem(tool: ToolSpec, **args: Any) -> bool:
        return policy.declares_idempotent(ToolCall("c", tool.name, args), tool, ws)
    assert idem(SHELL, command="python -m pytest -x")
    assert not idem(SHELL, command="python -m pytest && curl x")
    assert idem(WRITE, path="src/a.py", content="")
    assert not idem(WRITE, path="README.md", content="")


def test_decision_round_trips_through_a_dict(ws: Path) -> None:
    d = shell("git commit -m x", ctx_with(ws))
    assert Decision.from_dict(d.to_dict()) == d


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("src/**", "src/a/b.py", True), ("src/**", "srcx/a.py", False), ("src/*", "src/a/b", False),
    ("**/*.py", "a.py", True), ("**/*.py", "x/y/a.py", True), ("*.md", "docs/a.md", False),
    ("docs/?.md", "docs/a.md", True),
])
def test_path_globs_respect_components(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


# ------------------------------------------------------------ round 2: unnamed programs, bad rules


UNNAMED = ["$(cat prog) -rf src", "$X README.md", "eval \"$CODE\"", "ls | xargs -I{} sh -c '{}'",
           "ls | xargs -I{} {}", "git ls-files | xargs sh -c", "bash -c \"$(git ls-files)\""]


@pytest.mark.parametrize("command", UNNAMED)
def test_no_policy_allows_a_program_the_preview_cannot_name(ws: Path, command: str) -> None:
    ctx = PolicyContext(ws, Policy.from_data({"default": "allow", "rules": [
        {"decision": "allow", "tool": "run_shell"}, {"decision": "allow", "risk": "exec"}]}),
        ENV, granted=frozenset({"run_shell:", "run_shell:sh"}))
    d = shell(command, ctx)
    assert (d.decision, d.unnamed) == ("ask", True), d.reason
    assert Decision.from_dict(d.to_dict()) == d


@pytest.mark.parametrize(("mode", "expected"), [("auto", "deny"), ("policy", "deny"),
                                                 ("deny", "deny")])
def test_every_mode_but_a_person_refuses_an_unnamed_program(ws: Path, mode: ApprovalMode,
                                                            expected: str) -> None:
    ctx = PolicyContext(ws, Policy.from_data({"default": "allow"}), ENV)
    approver = Approver(mode, ctx)
    calls = [ToolCall("c1", "run_shell", {"command": "$(cat prog) -rf src"}),
             ToolCall("c2", "run_shell", {"command": "pytest -q"})]
    got = anyio.run(approver.decide_batch, calls, ToolRegistry([SHELL]), {"run_shell:"})
    assert got[0].decision == expected and got[0].decided_by == "policy"
    assert "cannot be named before it runs" in got[0].reason
    assert got[1].decision == ("deny" if mode == "deny" else "allow")


@pytest.mark.parametrize(("mode", "expected"), [("auto", "deny"), ("policy", "deny"),
                                                 ("interactive", "allow")])
def test_only_a_person_may_let_a_command_read_credentials(ws: Path, mode: ApprovalMode,
                                                          expected: str) -> None:
    ctx = PolicyContext(ws, Policy.from_data({"default": "allow"}), ENV)

    async def prompter(questions: Any) -> list[Answer]:
        return ["yes"] * len(questions)

    approver = Approver(mode, ctx, prompter)
    calls = [ToolCall("c1", "run_shell", {"command": "cat ~/.ssh/id_ed25519"}),
             ToolCall("c2", "run_shell", {"command": "cat /etc/hostname"})]
    got = anyio.run(approver.decide_batch, calls, ToolRegistry([SHELL]), {"run_shell:cat"})
    assert got[0].decision == expected
    if mode != "interactive":
        assert "reads credentials" in got[0].reason and got[0].decided_by == "policy"
    assert got[1].decision == "allow"


def test_a_person_is_still_asked_about_an_unnamed_program(ws: Path) -> None:
    asked: list[str] = []

    async def prompter(questions: Any) -> list[Answer]:
        asked.extend(q.call.args["command"] for q in questions)
        return ["yes"] * len(questions)

    approver = Approver("interactive", PolicyContext(ws, Policy.default(), ENV), prompter)
    calls = [ToolCall("c1", "run_shell", {"command": "$(cat prog) README.md"})]
    got = anyio.run(approver.decide_batch, calls, ToolRegistry([SHELL]), set())
    assert asked == ["$(cat prog) README.md"] and got[0].decision == "allow"


def test_a_command_that_does_not_parse_is_never_allowed_by_a_rule(ws: Path) -> None:
    ctx = ctx_with(ws, [{"decision": "allow", "tool": "run_shell"}])
    for command in ("ls (", "cat README.md |", "echo 'x"):
        assert shell(command, ctx).decision == "ask", command


@pytest.mark.parametrize(("rule", "message"), [
    ("{decision: allow, tool: run_shel}", "did you mean 'run_shell'"),
    ("{decision: allow, tool: 'rn_*'}", "matches no tool"),
    ("{decision: allow, tool: edit_file, path: 'src/[z-a]/*.py'}", "bad character range"),
    ("{decision: allow, tool: edit_file, path: 'src**/x'}", "whole path component"),
    ("{decision: allow, tool: edit_file, path: '../x/*.py'}", "relative to the workspace"),
    ("{decision: allow, tool: edit_file, path: ''}", "empty"),
])
def test_a_rule_that_can_never_match_is_an_error_with_file_and_line(
        tmp_path: Path, rule: str, message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("default: deny\nrules:\n  - {decision: allow, tool: read_file}\n"
                    f"  - {rule}\n")
    with pytest.raises(UsageError) as err:
        load_policy(path)
    assert str(err.value).startswith(f"{path}:4: rules[1]"), str(err.value)
    assert message in str(err.value)


def test_rules_naming_mcp_tools_and_globs_of_known_tools_load(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules:\n  - {decision: allow, tool: 'mcp__gh__*'}\n"
                    "  - {decision: ask, tool: 'write_*', path: 'src/**/*.py'}\n"
                    "  - {decision: deny, tool: run_shell, command: 'rm'}\n")
    assert len(load_policy(path).rules) == 3


def test_check_shell_gives_the_decision_the_default_policy_gives(tmp_path: Path) -> None:
    """``policy check-shell`` is what a user asks before trusting a command: it must say what
    the engine does with it, in policy mode and under ``--approval auto`` (where the approver
    refuses what only a person may allow). Every command of the labelled tuning corpora,
    judged both ways (each part in the workspace its authors were told of)."""
    from tests import corpus_scoring
    from tests.shell_corpus import CORPUS

    batches = [("", [c[0] for c in CORPUS])] + [
        (part, [it.command for it in corpus_scoring.load(part)]) for part in (
            "dev", "handwritten", "everyday", "field", "workday", "stack", "tools", "scripts")]
    differ, judged = [], 0
    for part, commands in batches:
        ws = corpus_scoring.make_workspace(tmp_path / (part or "corpus"), part)
        ctx = PolicyContext(ws, Policy.default(), corpus_scoring.ENV)
        judged += len(commands)
        for c in commands:
            d = shell(c, ctx)  # under auto the approver refuses what only a person may allow
            refused = d.decision == "deny" or d.unnamed or (d.decision == "ask" and d.unattended)
            engine = (d.decision, "deny" if refused else "runs")
            auto = check_shell_json(c, ws, corpus_scoring.ENV, approval="auto")["decision"]
            shown = (check_shell_json(c, ws, corpus_scoring.ENV)["decision"],
                     "deny" if auto == "deny" else "runs")
            if shown != engine:
                differ.append((c, shown, engine))
    assert judged > 3500 and differ == []
