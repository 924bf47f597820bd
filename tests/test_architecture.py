"""The architecture as a test: every module in a layer, imports only in the allowed directions, no
import cycles, each third-party library behind its one adapter (ARCHITECTURE.md, "Layers").

Imports are read with ``ast``, never executed: a module-level import, one inside a function (a
lazy import) and one under ``if TYPE_CHECKING:`` all count alike, since each is a dependency a
reader has to know about. Each rule has a test that builds a small violating tree in tmp_path
and shows the checker reports it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"engine": "engine", "tools": "turnstile_tools"}
"""Source folder -> the import name it installs as (the built-in tools are ``turnstile_tools``)."""

# -- the layers ---------------------------------------------------------------------------------
# layer -> its modules: a dotted name, or ``name.*`` for a package and everything under it.
# A layer is one folder of engine/ (test_each_layer_is_one_folder): the tree shows the layers.
# A module matched by no pattern fails test_every_module_has_a_layer.
LAYERS: dict[str, tuple[str, ...]] = {
    # the words every layer shares: exceptions, the values of a run, events, path globs, hints
    "vocabulary": ("engine.vocabulary.*",),
    # a machine and the other YAML documents as values; workflow templates; the bundled
    # machines; a machine drawn as a diagram (graphviz source, Mermaid)
    "spec": ("engine.spec.*",),
    "sandbox": ("engine.sandbox.*",),
    # the workspace as git sees it: the one door to git, .gitignore rules, bounded listings
    "workspace": ("engine.workspace.*",),
    # what a tool declares, receives and returns; the registry; invoking one call
    "tool_contract": ("engine.tooling.*",),
    "store_protocol": ("engine.store", "engine.store.base", "engine.store.deferred",
                       "engine.store.readback"),
    # the model contract and its vocabulary: stream events, call settings (options), prices
    "model_protocol": ("engine.models.*",),
    # the Store protocol's implementations, one folder each under engine/store/: the SQL both
    # databases share (statements, row codecs, the shared store), SQLite, PostgreSQL, and the
    # store a URL names; all the SQL is in these
    "store_sql": ("engine.store.sql.*",),
    "store_sqlite": ("engine.store.sqlite.*",),
    "store_postgres": ("engine.store.postgres.*",),
    "store_url": ("engine.store.url.*",),
    "providers": ("engine.providers.*",),
    "builtin_tools": ("turnstile_tools.*",),
    "mcp": ("engine.mcp.*",),
    "permissions": ("engine.permissions.*",),
    # the actions, with what only they use: the side-effect ledger, the context window
    "actions": ("engine.actions.*",),
    # checking a parsed machine against the actions' contracts (and loading = parse + check)
    "validation": ("engine.validation.*",),
    # the runner: transitions, the step protocol, interrupts, fault injection
    "runner": ("engine.core.*",),
    "tracing": ("engine.tracing.*",),
    # golden task folders (what a run started from one reads) and the checks that judge it
    "tasks": ("engine.tasks.*",),
    # the composition root: wires machine, model, tools, policy and store for one run
    "session": ("engine.session.*",),
    # a new run composed from a stored one: its rows, its rebuilt workspace
    "forks": ("engine.forks.*",),
    # the front door: every caller starts, resumes, streams, reads and decides runs here
    "runs": ("engine.runs.*",),
    # another way to drive the same runs: Temporal workflows, each step one activity
    "backends": ("engine.temporal.*",),
    # whole-run testing: evals over golden tasks, replay
    "harness": ("engine.harness.*",),
    # the web console
    "web": ("engine.web.*",),
    # the IDE entry point: the Agent Client Protocol agent an editor starts (``acp``)
    "ide": ("engine.ide.*",),
    # the public Python API: what a program imports (``engine.__init__`` re-exports it)
    "api": ("engine", "engine.api", "engine.door"),
    # the command line; ``python -m engine`` needs its ``__main__`` at the package root
    "cli": ("engine.cli.*", "engine.__main__"),
}

STORE_ADAPTERS = frozenset({"store_sql", "store_sqlite", "store_postgres", "store_url"})
"""The layers that implement the store protocol (the composition root picks none of them)."""

_BELOW_SESSION = frozenset({
    "vocabulary", "spec", "validation", "sandbox", "workspace", "tool_contract",
    "store_protocol", "model_protocol", "providers", "builtin_tools", "mcp", "permissions",
    "actions", "runner", "tracing", "tasks"})

# layer -> the other layers its modules may import (a layer may always import itself)
MAY_IMPORT: dict[str, frozenset[str]] = {
    "vocabulary": frozenset(),
    "spec": frozenset({"vocabulary"}),
    # the sandbox reads the workspace's git index (its gitlinks)
    "sandbox": frozenset({"vocabulary", "spec", "workspace"}),
    "workspace": frozenset({"vocabulary"}),
    "tool_contract": frozenset({"vocabulary", "sandbox"}),
    "store_protocol": frozenset({"vocabulary"}),
    "model_protocol": frozenset({"vocabulary", "spec"}),
    "store_sql": frozenset({"vocabulary", "store_protocol"}),
    "store_sqlite": frozenset({"vocabulary", "store_protocol", "store_sql"}),
    "store_postgres": frozenset({"vocabulary", "store_protocol", "store_sql"}),
    "store_url": frozenset({"vocabulary", "store_protocol", "store_sqlite", "store_postgres"}),
    "providers": frozenset({"vocabulary", "spec", "model_protocol"}),
    # tools know only the tool contract, the workspace as git sees it and the vocabulary
    "builtin_tools": frozenset({"vocabulary", "workspace", "tool_contract"}),
    "mcp": frozenset({"vocabulary", "spec", "sandbox", "tool_contract"}),
    "permissions": frozenset({"vocabulary", "spec", "sandbox", "workspace", "tool_contract",
                              "store_protocol"}),
    # actions know the model protocol, the tool registry and the store protocol: not the
    # providers, not the built-in tools, not SQLite
    "actions": frozenset({"vocabulary", "spec", "sandbox", "workspace", "tool_contract",
                          "store_protocol", "model_protocol", "permissions"}),
    "validation": frozenset({"vocabulary", "spec", "actions"}),
    # the runner knows the store protocol, not SQLite; the actions, not the tools or models
    "runner": frozenset({"vocabulary", "spec", "store_protocol", "actions"}),
    "tracing": frozenset({"vocabulary", "spec", "validation", "store_protocol"}),
    "tasks": frozenset({"vocabulary", "spec", "store_protocol"}),
    # the composition root picks every part but the storage: the caller opens the store
    "session": _BELOW_SESSION,
    "forks": _BELOW_SESSION,
    "runs": _BELOW_SESSION | {"session", "forks"} | STORE_ADAPTERS,
    "backends": _BELOW_SESSION | {"session", "runs"} | STORE_ADAPTERS,
    "harness": _BELOW_SESSION | {"session", "runs", "backends"} | STORE_ADAPTERS,
    "web": _BELOW_SESSION | {"session", "runs", "backends"} | STORE_ADAPTERS,
    "ide": _BELOW_SESSION | {"session", "runs"} | STORE_ADAPTERS,
    "api": _BELOW_SESSION | {"session", "forks", "runs", "backends"} | STORE_ADAPTERS,
    # nothing imports the CLI
    "cli": _BELOW_SESSION | STORE_ADAPTERS | {"session", "forks", "runs", "backends",
                                              "harness", "web", "ide", "api"},
}

# Imports that break the rules above, as (importer, imported): none, and the set may only
# shrink, so it stays empty. test_imports_follow_the_layers fails on any violation not listed
# here AND on any listed one that no longer exists. Never add a line to make a new import pass:
# fix the import, or change the rule here and in ARCHITECTURE.md together.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()

# third-party library -> the only modules (patterns as in LAYERS) that may import it
ADAPTERS: dict[str, tuple[str, ...]] = {
    "transitions": ("engine.core.fsm",),
    "sqlite3": ("engine.store.sqlite.*",),
    "sqlite_utils": ("engine.store.sqlite.*",),
    "psycopg": ("engine.store.postgres.*",),
    "httpx": ("engine.providers.http",),
    "httpx_sse": ("engine.providers.http",),
    "mcp": ("engine.mcp.*", "turnstile_tools.project_server"),
    "yaml": ("engine.spec.load",),
    "graphviz": ("engine.spec.diagram",),
    "jinja2": ("engine.spec.templates", "engine.web.*"),
    "starlette": ("engine.web.*",),
    "uvicorn": ("engine.web.*",),
    "rich": ("engine.cli.console",),
    "tree_sitter": ("engine.permissions.shell", "engine.permissions.misreads"),
    "tree_sitter_bash": ("engine.permissions.shell",),
    "bashlex": ("engine.permissions.shell",),
    "opentelemetry": ("engine.tracing.otlp",),
    "temporalio": ("engine.temporal.*",),
    "asyncio": ("engine.cli.plain_output", "engine.ide.server"),
    "acp": ("engine.ide.*",),
    "ctypes": ("engine.workspace.inotify", "engine.tooling.process", "engine.sandbox.mountlink"),
}


# -- the checker --------------------------------------------------------------------------------


def find_modules(root: Path,
                 packages: Mapping[str, str] = PACKAGES) -> dict[str, Path]:
    """Every module under ``packages``, by dotted import name (a package by its own name)."""
    found: dict[str, Path] = {}
    for folder, name in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [name, *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(path: Path) -> set[str]:
    """Every absolute name ``path`` imports, wherever the import stands; ``from a import b`` gives
    ``a.b`` (``b`` may be a submodule; when it is not, the module ``a`` owns the name)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module of ``modules`` that ``name`` names: itself, or its nearest parent."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (itself excluded)."""
    modules = find_modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {_owner(n, modules) for n in imported_names(path)}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return module == base or module.startswith(base + ".")
    return module == pattern


def layer_of(module: str, layers: Mapping[str, tuple[str, ...]] = LAYERS) -> str | None:
    """The module's layer: an exact name wins over a ``.*`` pattern."""
    for layer, patterns in layers.items():
        if module in patterns:
            return layer
    for layer, patterns in layers.items():
        if any(matches(module, p) for p in patterns):
            return layer
    return None


def unassigned(graph: Mapping[str, set[str]]) -> list[str]:
    return sorted(m for m in graph if layer_of(m) is None)


def violations(graph: Mapping[str, set[str]]) -> set[tuple[str, str]]:
    """Imports from one layer into a layer it may not import."""
    found = set()
    for importer, targets in graph.items():
        src = layer_of(importer)
        for target in targets:
            dst = layer_of(target)
            if src and dst and dst != src and dst not in MAY_IMPORT[src]:
                found.add((importer, target))
    return found


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def adapter_breaches(root: Path) -> list[str]:
    """Third-party imports outside the library's adapter modules."""
    found = []
    for module, path in find_modules(root).items():
        for name in sorted(imported_names(path)):
            library = name.split(".")[0]
            allowed = ADAPTERS.get(library)
            if allowed is not None and not any(matches(module, p) for p in allowed):
                found.append(f"{module} imports {name}; only {', '.join(allowed) or 'nobody'}")
    return sorted(set(found))


def _diff_message(found: set[tuple[str, str]], known: frozenset[tuple[str, str]]) -> str:
    lines = [f"new: {a} -> {b} ({layer_of(a)} may not import {layer_of(b)})"
             for a, b in sorted(found - known)]
    lines += [f"fixed, remove from KNOWN_VIOLATIONS: {a} -> {b}" for a, b in sorted(known - found)]
    return "\n".join(lines)


# -- the rules, on this repository --------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    assert unassigned(graph) == [], "add these modules to a layer in LAYERS"


def layer_folders(modules: Mapping[str, Path]) -> dict[str, str]:
    """Layer -> the one package holding all its modules (their common folder)."""
    folders: dict[str, list[list[str]]] = {}
    for name, path in modules.items():
        parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        folders.setdefault(layer_of(name) or "?", []).append(parts)
    found = {}
    for layer, all_parts in folders.items():
        common = all_parts[0]
        for parts in all_parts[1:]:
            size = 0
            while size < min(len(common), len(parts)) and common[size] == parts[size]:
                size += 1
            common = common[:size]
        found[layer] = ".".join(common)
    return found


def folder_breaches(modules: Mapping[str, Path]) -> list[str]:
    """Layers whose folder holds another layer's module (a layer may nest in another's folder
    as a sub-folder of its own, as the store adapters sit in the store's)."""
    folders = layer_folders(modules)
    found = []
    for name in modules:
        layer = layer_of(name) or "?"
        for other, folder in folders.items():
            inside = name == folder or name.startswith(folder + ".")
            nested = folders[layer] != folder and folders[layer].startswith(folder + ".")
            if other != layer and folder not in ROOT_FOLDERS and inside and not nested:
                found.append(f"{name} ({layer}) sits in {folder}/, the folder of {other}")
    return sorted(found)


ROOT_FOLDERS = frozenset({"engine", "turnstile_tools"})
"""Package roots: the api layer's modules sit in ``engine`` itself, every other layer below."""


def test_each_layer_is_one_folder() -> None:
    """The tree shows the layers: each layer's modules sit in one folder that holds no other
    layer's (the package root ``engine/`` is the public API and holds only its own files)."""
    modules = find_modules(ROOT)
    folders = layer_folders(modules)
    assert folder_breaches(modules) == []
    assert folders["api"] == "engine"
    assert all(folder != "engine" for layer, folder in folders.items()
               if layer not in ("api", "cli")), folders
    stray = sorted(n for n in modules if n.count(".") == 1 and n.startswith("engine.")
                   and modules[n].name != "__init__.py" and layer_of(n) not in ("api", "cli"))
    assert stray == []


def test_imports_follow_the_layers(graph: dict[str, set[str]]) -> None:
    assert _diff_message(violations(graph), KNOWN_VIOLATIONS) == ""


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_third_party_libraries_only_in_their_adapter() -> None:
    assert adapter_breaches(ROOT) == []


def test_the_layer_table_has_one_direction() -> None:
    """Declared directions form no loop: no two layers may (even indirectly) import each other."""
    table = {layer: set(allowed) for layer, allowed in MAY_IMPORT.items()}
    assert set(table) == set(LAYERS)
    assert cycles(table) == []
    assert all(allowed <= set(LAYERS) for allowed in table.values())


def test_the_required_rules_are_stated() -> None:
    """The rules ARCHITECTURE.md promises, read off the table (so none is dropped quietly)."""
    assert MAY_IMPORT["runner"].isdisjoint(STORE_ADAPTERS | {"providers", "builtin_tools"})
    assert "store_protocol" in MAY_IMPORT["runner"]
    assert MAY_IMPORT["actions"].isdisjoint(STORE_ADAPTERS | {"providers", "builtin_tools",
                                                              "mcp"})
    assert {"model_protocol", "tool_contract", "store_protocol"} <= MAY_IMPORT["actions"]
    assert [layer for layer, allowed in MAY_IMPORT.items() if "cli" in allowed] == []
    assert MAY_IMPORT["builtin_tools"] == {"vocabulary", "workspace", "tool_contract"}
    assert MAY_IMPORT["workspace"] == {"vocabulary"}
    assert MAY_IMPORT["session"].isdisjoint(STORE_ADAPTERS)
    # the shared SQL and each database's store know no database's store but their own
    assert all(MAY_IMPORT[layer].isdisjoint({"store_sqlite", "store_postgres"})
               for layer in ("store_sql", "store_sqlite", "store_postgres"))


def test_architecture_md_matches_the_code() -> None:
    """ARCHITECTURE.md has a row per layer and names only files that exist."""
    doc = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing_rows = [layer for layer in LAYERS if f"| {layer.replace('_', ' ')} |" not in doc]
    assert missing_rows == []
    named = set(re.findall(r"`([\w/]+\.py)`", doc))
    gone = sorted(n for n in named if not any((ROOT / base / n).is_file()
                                              for base in ("", "engine", "tools")))
    assert len(named) > 30
    assert gone == []


def test_public_vocabulary_is_sorted_and_importable() -> None:
    import engine

    assert engine.__all__ == sorted(engine.__all__)
    for name in engine.__all__:
        assert getattr(engine, name) is not None


# -- each rule can fail: small violating trees --------------------------------------------------


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> source) under root, with the package ``__init__``s."""
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if parent != Path(".") and not init.exists():
                init.write_text("")
        path.write_text(source)
    return root


def test_a_lazy_import_of_sqlite_by_the_runner_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "engine/core/runner.py": "def open():\n    from engine.store.sqlite import SqliteStore\n",
        "engine/store/sqlite.py": "",
    })
    assert violations(import_graph(root)) == {("engine.core.runner", "engine.store.sqlite")}


def test_an_action_importing_tools_or_providers_under_type_checking_is_reported(
        tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "engine/actions/new.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from turnstile_tools import files\n"
                                  "    import engine.providers.anthropic\n"
                                  "from engine.models.base import ModelClient\n"),
        "engine/providers/anthropic.py": "",
        "engine/models/base.py": "",
        "tools/files.py": "",
    })
    assert violations(import_graph(root)) == {("engine.actions.new", "turnstile_tools.files"),
                                              ("engine.actions.new", "engine.providers.anthropic")}


def test_a_module_below_the_cli_importing_it_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/web/app.py": "import engine.cli.main\n",
                            "engine/cli/main.py": "from engine.cli import console\n",
                            "engine/cli/console.py": "",
                            "engine/session/compose.py": "from engine.cli.main import main\n"})
    graph = import_graph(root)
    assert violations(graph) == {("engine.web.app", "engine.cli.main"),
                                 ("engine.session.compose", "engine.cli.main")}


def test_a_tool_importing_more_than_the_tool_contract_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"tools/new.py": ("from engine.tooling.spec import ToolSpec\n"
                                             "from engine.permissions.policy import Policy\n"),
                            "engine/tooling/spec.py": "",
                            "engine/permissions/policy.py": ""})
    assert violations(import_graph(root)) == {("turnstile_tools.new", "engine.permissions.policy")}


def test_a_layer_sharing_a_folder_with_another_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/store/base.py": "", "engine/store/sqlite.py": "",
                            "engine/core/runner.py": ""})
    breaches = folder_breaches(find_modules(root))
    assert "engine.store.sqlite (store_sqlite) sits in engine.store/, the folder of " \
           "store_protocol" in breaches
    assert not any(b.startswith("engine.core") for b in breaches)


def test_a_module_outside_every_layer_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/newthing.py": "", "engine/core/runner.py": ""})
    assert unassigned(import_graph(root)) == ["engine.newthing"]


def test_a_cycle_through_a_lazy_import_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "engine/tracing/trace.py": "def f():\n    from engine.tracing.otlp import export\n",
        "engine/tracing/otlp.py": "from engine.tracing.trace import build\n",
    })
    assert cycles(import_graph(root)) == [["engine.tracing.otlp", "engine.tracing.trace"]]


def test_a_known_violation_that_is_gone_or_a_new_one_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/actions/agent.py": "from engine.providers import anthropic\n",
                            "engine/providers/anthropic.py": ""})
    found = violations(import_graph(root))
    known = frozenset({("engine.actions.agent", "engine.models.prices")})
    assert _diff_message(found, known).splitlines() == [
        "new: engine.actions.agent -> engine.providers.anthropic "
        "(actions may not import providers)",
        "fixed, remove from KNOWN_VIOLATIONS: engine.actions.agent -> engine.models.prices"]


def test_a_library_outside_its_adapter_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"engine/core/runner.py": "import sqlite3\n",
                            "engine/store/sqlite.py": "import sqlite3\n"})
    assert adapter_breaches(root) == [
        "engine.core.runner imports sqlite3; only engine.store.sqlite.*"]


def test_a_two_way_layer_table_is_reported() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
