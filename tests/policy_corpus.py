"""The decisions every bundled policy gives over a corpus of paths and tools (for
``test_globs.py``): a change of glob matcher must leave each of them as it was.

Regenerate ``tests/policy_decisions.json`` only for a deliberate change of a policy::

    python tests/policy_corpus.py > tests/policy_decisions.json
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.permissions.policy import Policy, PolicyContext, decide  # noqa: E402
from engine.vocabulary.state import ToolCall  # noqa: E402
from turnstile_tools import builtin_specs  # noqa: E402

SYNTHETIC = (
    "a.py", "pkg/a.py", "pkg/sub/a.py", "ledger/x.py", "ledger/sub/x.py", "ledger.py",
    "docs/a.md", "docs/sub/a.md", "CHANGELOG.md", "sub/CHANGELOG.md", "REVIEW.md",
    "greeting.py", "sub/greeting.py", "textstats/__init__.py", "textstats/core.py",
    "x[1].py", "a{b,c}.py", ".hidden.py", "src/.env", "build/out.py", "a.pyc", "notes.txt",
    "deep/er/still/file.py", "py", ".py",
)
TOOLS = ("edit_file", "write_file", "read_file")


def bundled_policies() -> list[Path]:
    """Every policy file the project ships: the golden tasks' and the machines'."""
    return sorted([*ROOT.glob("golden_tasks/*/policy.yaml"), *ROOT.glob("machines/*policy*.yaml")])


def corpus(policy: Path) -> list[str]:
    """The synthetic paths plus every file of the task's fixture."""
    fixture = policy.parent / "fixture"
    files = [p.relative_to(fixture).as_posix() for p in sorted(fixture.rglob("*")) if p.is_file()]
    return sorted({*SYNTHETIC, *files})


def _rule_name(rule: str | None) -> str:
    """The deciding rule by file and index (its line, added to labels later, left out)."""
    return re.sub(r"\.yaml:\d+: ", ".yaml: ", (rule or "").replace(str(ROOT) + "/", ""))


def decisions() -> list[dict[str, Any]]:
    """(policy, tool, path) -> decision and the rule that decided, in a scratch workspace."""
    specs = {s.name: s for s in builtin_specs()}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        for path in bundled_policies():
            policy = Policy.load(path)
            ctx = PolicyContext(workspace=workspace, policy=policy, env={})
            for rel in corpus(path):
                target = workspace / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("x = 1\n", encoding="utf-8")
                for tool in TOOLS:
                    args = {"path": rel}
                    if tool == "write_file":
                        args["content"] = "y = 2\n"
                    elif tool == "edit_file":
                        args.update(old="x = 1", new="x = 2")
                    d = decide(ToolCall("c", tool, args), specs[tool], ctx)
                    out.append({"policy": path.relative_to(ROOT).as_posix(), "tool": tool,
                                "path": rel, "decision": d.decision,
                                "rule": _rule_name(d.rule)})
            for name in ("update_plan", "run_shell", "search_text", "list_files"):
                d = decide(ToolCall("c", name, {}), specs[name], ctx)
                out.append({"policy": path.relative_to(ROOT).as_posix(), "tool": name,
                            "path": None, "decision": d.decision,
                            "rule": _rule_name(d.rule)})
    return out


if __name__ == "__main__":
    rows = decisions()  # one decision a line, so a change shows as a readable diff
    sys.stdout.write("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
