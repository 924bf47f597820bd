"""The import rules of DESIGN 2, read with ``ast``: each third-party library has one adapter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for d in ("engine", "tools") for p in (ROOT / d).rglob("*.py"))

# library -> the only modules (relative paths, or folders ending in /) that may import it
ADAPTERS: dict[str, tuple[str, ...]] = {
    "transitions": ("engine/fsm.py",),
    "sqlite3": ("engine/store/sqlite.py", "engine/store/sqlite_errors.py"),
    "sqlite_utils": ("engine/store/sqlite.py",),
    "httpx": ("engine/models/http.py",),
    "httpx_sse": ("engine/models/http.py",),
    "mcp": ("engine/mcp/", "tools/project_server.py"),
    "yaml": ("engine/spec/load.py",),
    "graphviz": ("engine/diagram.py",),
    "jinja2": ("engine/templates.py", "engine/web/"),
    "starlette": ("engine/web/",),
    "uvicorn": ("engine/web/",),
    "rich": ("engine/console.py",),
    "tree_sitter": ("engine/permissions/shell.py",),
    "tree_sitter_bash": ("engine/permissions/shell.py",),
    "bashlex": ("engine/permissions/shell.py",),
    "opentelemetry": ("engine/otlp.py",),
    "temporalio": ("engine/temporal/",),
    "asyncio": (),
}

# layer rules: modules under the key may not import the listed engine modules
FORBIDDEN_UPWARD: dict[str, tuple[str, ...]] = {
    "engine/state.py": ("engine.",),
    "engine/errors.py": ("engine.",),
    "engine/spec/": ("engine.runner", "engine.cli", "engine.session", "engine.actions.registry"),
    "engine/store/": ("engine.runner", "engine.cli", "engine.session", "engine.actions"),
    "engine/models/": ("engine.runner", "engine.cli", "engine.session", "engine.actions"),
    "engine/tooling/": ("engine.runner", "engine.cli", "engine.session", "engine.actions"),
    "engine/permissions/": ("engine.runner", "engine.cli", "engine.session"),
    "engine/mcp/": ("engine.runner", "engine.cli", "engine.session", "engine.actions"),
    "engine/actions/": ("engine.runner", "engine.cli", "engine.session"),
    "engine/runner.py": ("engine.cli", "engine.session", "engine.evals"),
    "tools/": ("engine.runner", "engine.cli", "engine.session", "engine.actions"),
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _allowed(rel: str, places: tuple[str, ...]) -> bool:
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in places)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_third_party_libraries_only_in_their_adapter(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    for name in _imports(path):
        top = name.split(".")[0]
        if top in ADAPTERS:
            assert _allowed(rel, ADAPTERS[top]), f"{rel} imports {name}; only {ADAPTERS[top]}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_point_down(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    for prefix, banned in FORBIDDEN_UPWARD.items():
        if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
            for name in _imports(path):
                assert not any(name == b.rstrip(".") or name.startswith(b) for b in banned), (
                    f"{rel} imports {name} (layer rule {prefix})")


def test_the_rules_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import sqlite3\nfrom transitions import Machine\n")
    assert _imports(bad) == ["sqlite3", "transitions"]
    assert not _allowed("engine/runner.py", ADAPTERS["sqlite3"])


def test_public_vocabulary_is_sorted_and_importable() -> None:
    import engine

    assert engine.__all__ == sorted(engine.__all__)
    for name in engine.__all__:
        assert getattr(engine, name) is not None
