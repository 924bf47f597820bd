"""One glob matcher (``engine.vocabulary.globs``) for policy rules, ``.gitignore`` and
``search_text``:
``{a,b}`` and ``[...]`` work everywhere, and every bundled policy decides as it did before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from policy_corpus import SYNTHETIC, bundled_policies, corpus, decisions

from engine.permissions.policy import Policy, PolicyContext, decide
from engine.tooling.spec import ToolContext
from engine.vocabulary.errors import UsageError
from engine.vocabulary.globs import (
    MAX_ALTERNATIVES,
    GlobError,
    compile_glob,
    expand_braces,
    glob_match,
)
from engine.vocabulary.state import ToolCall
from engine.workspace.ignore import parse_rules, walk
from tests.conftest import ROOT
from turnstile_tools import builtin_specs
from turnstile_tools.search import SearchTextArgs, search_text

SPECS = {s.name: s for s in builtin_specs()}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def old_policy_glob(pattern: str, path: str) -> bool:
    """The policy matcher before ``engine.vocabulary.globs`` (kept here as the reference it must
    agree
    with on every pattern that worked then: no ``[``, ``{`` or ``\\``)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] in "*?":
            out.append("[^/]*" if pattern[i] == "*" else "[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z").match(path) is not None


# -- every rule that works today keeps its meaning --------------------------------------------


def test_bundled_policies_decide_exactly_as_before() -> None:
    """Decision and deciding rule for every (policy, tool, path) of the corpus, against what the
    previous matcher gave (tests/policy_decisions.json, written before the switch)."""
    recorded = json.loads((ROOT / "tests" / "policy_decisions.json").read_text())
    now = decisions()
    assert len(now) == len(recorded) > 1000
    changed = [(a, b) for a, b in zip(recorded, now, strict=True) if a != b]
    assert not changed, changed[:5]
    assert {d["decision"] for d in now} == {"allow", "ask"}
    assert sum(bool(d["rule"]) for d in now) > 50  # path rules did decide


def _patterns() -> list[str]:
    found = {"src/**", "**/*.py", "*.md", "docs/?.md", "src/*", "**", "a/**/b", "**.py",
             "src/**.py", "*", "?", "a/*/c"}
    for path in bundled_policies():
        for rule in Policy.load(path).rules:
            found.update(p for p in (rule.path, rule.tool) if p)
    return sorted(found)


@pytest.mark.parametrize("pattern", _patterns())
def test_new_matcher_agrees_with_the_old_one(pattern: str) -> None:
    paths = {*SYNTHETIC, "srcx/a.py", "src", "src/", "a/b", "a/x/y/b", "a/xb", "x/y/z.md",
             "run_shell", "update_plan", "mcp__fs__read", "edit_file"}
    for policy in bundled_policies():
        paths.update(corpus(policy))
    differ = [p for p in sorted(paths) if glob_match(pattern, p) != old_policy_glob(pattern, p)]
    assert not differ, f"{pattern}: {differ}"


# -- what did not work before -----------------------------------------------------------------


def _decision(rules: list[dict[str, str]], tool: str, path: str, ws: Path) -> tuple[str, str]:
    ctx = PolicyContext(workspace=ws, policy=Policy.from_data({"rules": rules}, "p.yaml"))
    args: dict[str, str] = {"path": path, "content": "x\n"}
    d = decide(ToolCall("c", tool, args), SPECS[tool], ctx)
    return d.decision, d.rule or ""


def test_deny_rule_with_braces_denies_the_write(tmp_path: Path) -> None:
    rules = [{"decision": "allow", "tool": "write_file", "path": "docs/**"},
             {"decision": "deny", "tool": "write_file", "path": "docs/*.{md,txt}"}]
    for path in ("docs/a.md", "docs/b.txt"):
        decision, rule = _decision(rules, "write_file", path, tmp_path)
        assert decision == "deny" and "rules[1]" in rule, path
    assert _decision(rules, "write_file", "docs/a.py", tmp_path)[0] == "allow"
    assert _decision(rules, "write_file", "docs/sub/a.md", tmp_path)[0] == "allow"


def test_classes_in_policy_paths_and_tool_names(tmp_path: Path) -> None:
    rules = [{"decision": "deny", "tool": "write_file", "path": "src/[ab]*.py"},
             {"decision": "allow", "tool": "{write,edit}_file", "path": "src/[!ab]*.py"}]
    assert _decision(rules, "write_file", "src/alpha.py", tmp_path)[0] == "deny"
    assert _decision(rules, "write_file", "src/beta.py", tmp_path)[0] == "deny"
    assert _decision(rules, "write_file", "src/gamma.py", tmp_path)[0] == "allow"


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.{md,txt}", "a.md", True), ("*.{md,txt}", "a.txt", True), ("*.{md,txt}", "a.py", False),
    ("{src,lib}/**/*.{py,pyi}", "lib/x/y.pyi", True), ("{src,lib}/**", "test/x", False),
    ("{a,{b,c}}.py", "c.py", True), ("{a}.py", "{a}.py", True), ("{a}.py", "a.py", False),
    ("[ab].py", "a.py", True), ("[ab].py", "c.py", False), ("[!ab].py", "c.py", True),
    ("[^ab].py", "a.py", False), ("[a-c]x", "bx", True), ("[]]x", "]x", True),
    ("a[/]b", "a/b", False), ("a[!x]b", "a/b", False), ("[ab", "[ab", True),
    (r"\*.py", "*.py", True), (r"\*.py", "a.py", False), (r"\{a,b}", "{a,b}", True),
    ("x/**/y", "x/y", True), ("x/**/y", "x/1/2/y", True), ("*", "a/b", False),
])
def test_glob_syntax(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_brace_expansion_and_its_limit() -> None:
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("{a,a}") == ["a"]
    with pytest.raises(GlobError, match=f"more than {MAX_ALTERNATIVES} patterns"):
        compile_glob("{a,b}" * 9)
    with pytest.raises(GlobError):
        compile_glob("[z-a]")


def test_a_bad_glob_is_refused_when_the_policy_loads(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules:\n  - {decision: deny, path: '[z-a].txt'}\n")
    with pytest.raises(UsageError, match=r"policy.yaml:2: rules\[0\]: path: glob '\[z-a\]\.txt'"):
        Policy.load(path)


# -- the same matcher in .gitignore and search_text --------------------------------------------


def test_gitignore_classes_and_git_rules(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("[ab].log\nbuild**/\n{x,y}.tmp\n")
    for name in ("a.log", "c.log", "{x,y}.tmp", "x.tmp", "buildout/f", "keep.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("1\n")
    seen = sorted(e.rel for e in walk(tmp_path, tmp_path) if not e.is_dir)
    # git has no braces: "{x,y}.tmp" ignores only that literal name; "build**" is "build*".
    assert seen == [".gitignore", "c.log", "keep.txt", "x.tmp"]
    (rule,) = parse_rules("docs/**/[!_]*.md")
    assert rule.regex.fullmatch("docs/a/b/c.md") and not rule.regex.fullmatch("docs/_c.md")


@pytest.mark.anyio
async def test_search_text_glob_braces_and_classes(tmp_path: Path) -> None:
    for name in ("docs/a.md", "docs/b.txt", "docs/c.py", "src/a1.py", "src/b2.py", "src/c3.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("needle\n")
    ctx = ToolContext(workspace=tmp_path)

    async def files(glob: str) -> list[str]:
        result = await search_text(SearchTextArgs(pattern="needle", glob=glob), ctx)
        assert not result.is_error, result.content
        return sorted(line.split(":")[0] for line in result.content.splitlines()
                      if line.endswith(":needle"))

    assert await files("docs/*.{md,txt}") == ["docs/a.md", "docs/b.txt"]
    assert await files("src/[ab]*.py") == ["src/a1.py", "src/b2.py"]
    assert await files("*.{md,py}") == ["docs/a.md", "docs/c.py", "src/a1.py", "src/b2.py",
                                        "src/c3.py"]
    bad = await search_text(SearchTextArgs(pattern="needle", glob="{a,b}" * 9), ctx)
    assert bad.is_error and "more than 256 patterns" in bad.content


def test_one_matcher_no_private_copies() -> None:
    """The modules that match globs use engine.vocabulary.globs, not fnmatch or a translator of
    their own."""
    for rel in ("engine/permissions/policy.py", "engine/workspace/ignore.py", "tools/search.py",
                "tools/project_server.py"):
        text = (ROOT / rel).read_text()
        assert "from engine.vocabulary.globs import" in text, rel
        assert "fnmatch" not in text and "def _segment_regex" not in text, rel
