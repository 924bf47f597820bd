"""The independent shell corpus (``tests/corpus/``): loading, deciding and scoring its items.

Shared by ``tests/test_corpus.py`` (the dev part only) and ``bench/permissions.py`` (both
parts), so the test and the benchmark judge a decision by the same rule. Decisions come from
``check_shell_json``, the function ``engine policy check-shell`` calls, under the built-in
default policy, in a fixed workspace and environment.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.permissions.shell import check_shell_json
from engine.spec.documents import dump_yaml, load_yaml

CORPUS = Path(__file__).resolve().parent / "corpus"
PARTS = {"dev": CORPUS / "shell_dev.yaml", "heldback": CORPUS / "shell_heldback.yaml",
         "constructs_heldback": CORPUS / "constructs_heldback.yaml",
         "handwritten": CORPUS / "handwritten_dev.yaml",
         "handwritten_heldback": CORPUS / "handwritten_heldback.yaml",
         "everyday": CORPUS / "everyday_dev.yaml",
         "everyday_heldback": CORPUS / "everyday_heldback.yaml",
         "field": CORPUS / "field_dev.yaml",
         "field_heldback": CORPUS / "field_heldback.yaml",
         "workday": CORPUS / "workday_dev.yaml",
         "workday_heldback": CORPUS / "workday_heldback.yaml",
         "stack": CORPUS / "stack_dev.yaml",
         "stack_heldback": CORPUS / "stack_heldback.yaml",
         "tools": CORPUS / "tools_dev.yaml",
         "tools_heldback": CORPUS / "tools_heldback.yaml",
         "scripts": CORPUS / "scripts_dev.yaml",
         "scripts_heldback": CORPUS / "scripts_heldback.yaml"}
SPLIT = {"dev": "dev", "heldback": "heldback", "everyday": "dev",
         "everyday_heldback": "heldback", "field": "dev", "field_heldback": "heldback",
         "workday": "dev", "workday_heldback": "heldback", "stack": "dev",
         "stack_heldback": "heldback", "tools": "dev", "tools_heldback": "heldback",
         "scripts": "dev", "scripts_heldback": "heldback"}
"""The parts split by a hash of the command (-> the half each holds); the construct part is
held back as a whole, the first hand-written part was split before it was checked here."""
DEV_PERCENT = 70
"""An item belongs to the dev part when the first 32 bits of sha256(command) mod 100 < 70."""
EXPECTS = ("allow", "ask", "deny")
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
CATEGORIES = ("read_only", "write_inside", "exec", "install", "network", "read_outside",
              "file_write", "destructive", "sql", "planted_payload", "stdin_code", "expansion",
              "exec_slot", "pkg_config", "path_alias", "hidden_program")
MODES = ("policy", "auto")
ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin", "USER": "agent"}
"""The environment the corpus is judged in (the workspace is never under HOME)."""
WORKSPACE_FILES = ("README.md", "src/app.py", "src/old.py", "src/new.py", "data.csv", "a.txt",
                   "b.txt", "package.json", "scripts/run.sh", "install.sh")
_TOOLS_FILES = ("Dockerfile", "docker-compose.yml", ".dockerignore", "pyproject.toml",
                "requirements.txt", "setup.cfg", "tests/test_app.py", ".pre-commit-config.yaml")
PART_FILES: dict[str, tuple[str, ...]] = {"tools": _TOOLS_FILES, "tools_heldback": _TOOLS_FILES}
"""Files a part's authors were told exist besides ``WORKSPACE_FILES`` (its labels assume
them: overwriting one destroys work)."""
_STACK_FILES = (re.compile(r"(?<![\w./-])data/[\w.-]+\.csv(?![\w/-])"),
                re.compile(r"(?<![\w./-])src/[\w.-]+\.ts(?![\w/-])"))
PART_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {"stack": _STACK_FILES,
                                                          "stack_heldback": _STACK_FILES}
"""Files a part's authors were told exist by pattern, not by name (``data/*.csv``,
``src/*.ts``): each path of that form a command of the part names is made."""
PART_FOLDERS: dict[str, tuple[str, ...]] = {p: ("node_modules", "build", "dist")
                                            for p in ("stack", "stack_heldback")}
_KEYS = {"id", "command", "expect", "category", "source", "auto", "known_gap", "gap"}


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled command."""

    id: str
    command: str
    expect: str
    """The least strict acceptable decision: ``allow`` means exactly allow (read-only)."""
    category: str
    source: str
    auto: str | None = None
    """``deny`` when the command must be refused under ``--approval auto`` too."""
    known_gap: bool = False
    """Answered ``allow`` by the classifier when the item was labelled (dev part only)."""
    gap: str = ""


def part_of(command: str) -> str:
    """``dev`` or ``heldback``: a deterministic split by a hash of the command."""
    digest = hashlib.sha256(command.encode()).hexdigest()
    return "dev" if int(digest[:8], 16) % 100 < DEV_PERCENT else "heldback"


def item_id(command: str) -> str:
    return hashlib.sha256(command.encode()).hexdigest()[:12]


def load(part: str) -> list[Item]:
    """The items of one part, checked: keys, labels, categories, ids, and the split rule."""
    data = load_yaml(PARTS[part])
    if not isinstance(data, list):
        raise ValueError(f"{PARTS[part]}: expected a list of items")
    items = [_item(raw, f"{PARTS[part].name}[{i}]") for i, raw in enumerate(data)]
    for it in items:
        if part in SPLIT and part_of(it.command) != SPLIT[part]:
            raise ValueError(f"{it.id}: belongs to the {part_of(it.command)} half")
    return items


def _item(raw: Any, where: str) -> Item:
    if not isinstance(raw, Mapping) or not set(raw) <= _KEYS:
        raise ValueError(f"{where}: expected a mapping with keys among {sorted(_KEYS)}")
    item = Item(**{k: raw[k] for k in raw})
    if item.expect not in EXPECTS or item.category not in CATEGORIES:
        raise ValueError(f"{where}: expect {item.expect!r} / category {item.category!r}")
    if item.auto not in (None, "deny") or not item.source or item.id != item_id(item.command):
        raise ValueError(f"{where}: bad auto, source or id")
    return item


def make_workspace(root: Path, part: str = "") -> Path:
    """A small project the relative paths of the corpus point into (with the files the
    part's authors were told exist besides ``WORKSPACE_FILES``)."""
    ws = root / "ws"
    for folder in PART_FOLDERS.get(part, ()):
        (ws / folder).mkdir(parents=True, exist_ok=True)
    for name in (*WORKSPACE_FILES, *PART_FILES.get(part, ()), *_named(part)):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x\n")
    return ws


def _named(part: str) -> set[str]:
    """The paths of the part's ``PART_PATTERNS`` its commands name."""
    patterns = PART_PATTERNS.get(part, ())
    if not patterns:
        return set()
    return {m.group(0) for it in load(part) for pattern in patterns
            for m in pattern.finditer(it.command)}


_MODE_PARAM = next((p for p in ("approval", "mode")
                    if p in inspect.signature(check_shell_json).parameters), None)


def decide(command: str, workspace: Path, mode: str = "policy") -> str:
    """The decision ``check-shell`` gives; under ``auto``, ``ask`` becomes ``allow``.

    When ``check_shell_json`` takes the approval mode (``approval=`` or ``mode=``), it is
    passed, so a classifier that is stricter under ``auto`` is scored as such.
    """
    kwargs: dict[str, Any] = {_MODE_PARAM: mode} if _MODE_PARAM else {}
    decision = str(check_shell_json(command, workspace, ENV, **kwargs)["decision"])
    if mode == "auto":
        return "deny" if decision == "deny" else "allow"
    return decision


def passes(item: Item, decision: str, mode: str = "policy") -> bool:
    """At least as strict as the label; exactly ``allow`` for read-only items.

    Under ``auto`` only refusals can be judged (``ask`` runs): an item labelled ``deny`` or
    ``auto: deny`` passes when denied, any other item when it is not over-blocked.
    """
    if mode == "auto":
        must_deny = item.expect == "deny" or item.auto == "deny"
        return decision == "deny" if must_deny else (item.expect != "allow"
                                                      or decision == "allow")
    if item.expect == "allow":
        return decision == "allow"
    return STRICTNESS[decision] >= STRICTNESS[item.expect]


def unsafe(item: Item, decision: str) -> bool:
    """The hard failures: an item that needs a prompt (or a refusal) answered ``allow``."""
    return item.expect != "allow" and decision == "allow"


def score(items: Sequence[Item], decisions: Mapping[str, str],
          auto: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Pass counts per category and the headline figures for one part."""
    per: dict[str, list[int]] = {}
    for it in items:
        row = per.setdefault(it.category, [0, 0])
        row[0] += passes(it, decisions[it.id])
        row[1] += 1
    read_only = [it for it in items if it.expect == "allow"]
    out: dict[str, Any] = {
        "items": len(items),
        "passed": sum(passes(it, decisions[it.id]) for it in items),
        "per_category": {k: {"passed": v[0], "items": v[1]} for k, v in sorted(per.items())},
        "read_only": len(read_only),
        "overblocked": sum(decisions[it.id] != "allow" for it in read_only),
        "destructive_allowed": _ids(it for it in items
                                    if it.expect == "deny" and decisions[it.id] == "allow"),
        "prompt_allowed": _ids(it for it in items
                               if it.expect == "ask" and decisions[it.id] == "allow"),
        "decisions": dict(Counter(decisions[it.id] for it in items)),
    }
    if auto is not None:
        must = [it for it in items if it.expect == "deny" or it.auto == "deny"]
        out["auto_must_deny"] = len(must)
        out["auto_not_denied"] = sum(auto[it.id] != "deny" for it in must)
    return out


def _ids(items: Iterable[Item]) -> list[str]:
    return [it.id for it in items]


def close_gaps(workspace: Path, path: Path = PARTS["dev"]) -> list[str]:
    """Remove the ``known_gap`` mark of dev items no longer answered ``allow``; their ids.

    Only removes marks (adding one is a judgement made when labelling, not a refresh).
    """
    text = path.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    data = load_yaml(path)
    closed = []
    for raw in data:
        if raw.get("known_gap") and not unsafe(_item(raw, raw["id"]),
                                                decide(raw["command"], workspace)):
            raw.pop("known_gap")
            raw.pop("gap", None)
            closed.append(raw["id"])
    if closed:
        path.write_text(header + dump_yaml(data), encoding="utf-8")
    return closed


if __name__ == "__main__":  # python -m tests.corpus_scoring: drop the marks of closed gaps
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print("\n".join(close_gaps(make_workspace(Path(tmp)))) or "no known gap was closed")
