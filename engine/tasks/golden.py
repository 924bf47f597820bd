"""Golden task folders: ``task.yaml`` + ``fixture/`` + ``turns.yaml`` (DESIGN 8).

A task names its prompt, its machine, the fixture copied into a fresh workspace, the model
(default: the scripted model replaying ``turns.yaml``), approval mode, policy, limits,
injected faults, setup commands run in the fresh workspace, and the checks that decide pass
or fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.spec.bundled import bundled_as, bundled_machines
from engine.spec.documents import load_yaml
from engine.vocabulary.errors import UsageError

TASK_FILE = "task.yaml"
TURNS_FILE = "turns.yaml"
SETUP_TIMEOUT_S = 60.0

SETUP_ENV = {
    "GIT_AUTHOR_NAME": "turnstile", "GIT_AUTHOR_EMAIL": "golden@turnstile.invalid",
    "GIT_COMMITTER_NAME": "turnstile", "GIT_COMMITTER_EMAIL": "golden@turnstile.invalid",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
}
"""Fixed identity and dates, so ``git init && git commit`` in a setup works anywhere and every
fresh workspace gets the same commit ids."""


class GoldenTask(BaseModel):
    """One task folder's ``task.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = ""
    """Defaults to the folder name."""
    description: str = ""
    category: str = "general"
    prompt: str
    machine: str = "machines/coding_agent.yaml"
    """Relative to the project root (the folder holding ``golden_tasks/``)."""
    fixture: str = "fixture"
    model: str | None = None
    """``None``: the scripted model replaying the folder's ``turns.yaml``."""
    approval: Literal["interactive", "policy", "auto", "deny", "park"] = "policy"
    policy: str | None = "policy.yaml"
    """Relative to the task folder; missing file -> the default policy."""
    limits: dict[str, Any] = Field(default_factory=dict)
    faults: list[str] = Field(default_factory=list)
    """``ENGINE_FAULTS`` items injected on the first attempt (the harness resumes)."""
    context: dict[str, Any] = Field(default_factory=dict)
    checks: list[dict[str, Any] | str] = Field(default_factory=list)
    """``{name: argument}`` items (``engine.tasks.checks``); a check without argument may be a
    bare name (``- resumed``)."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run in the fresh workspace after the fixture is copied, in order (e.g.
    ``git init`` and a commit: a fixture cannot hold a nested ``.git``)."""
    folder: Path = Path(".")

    @property
    def turns_path(self) -> Path:
        """``turns.yaml``, or ``turns.json`` when only that exists."""
        path = self.folder / TURNS_FILE
        json_path = path.with_suffix(".json")
        return json_path if not path.exists() and json_path.exists() else path

    @property
    def policy_path(self) -> Path | None:
        if not self.policy:
            return None
        path = self.folder / self.policy
        return path if path.exists() else None

    def machine_path(self) -> Path:
        """The machine file: relative to the task, to the project root above
        ``golden_tasks/``, or to the current directory; else the bundled machine of that
        name (``coding_agent``, or ``machines/coding_agent.yaml`` where no such file is), so
        a task runs outside a checkout as in it."""
        candidates = [self.folder / self.machine, self.folder.parent.parent / self.machine,
                      Path.cwd() / self.machine]
        for c in candidates:
            if c.exists():
                return c
        found = bundled_as(self.machine)
        if found is not None:
            return found
        bundled = bundled_machines()
        raise UsageError(f"{self.folder / TASK_FILE}: machine {self.machine!r} not found "
                         f"beside the task, in the project or the current directory, and not "
                         f"a bundled machine ({', '.join(bundled) or 'none found'})")


def load_task(folder: Path) -> GoldenTask:
    """Read ``folder/task.yaml``; errors name the file and the field."""
    path = folder / TASK_FILE
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a golden task folder (no such directory)")
    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: a task file is a mapping (prompt, machine, checks, ...)")
    try:
        task = GoldenTask.model_validate({"name": folder.name, **raw, "folder": folder})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{path}: {where}: {err['msg']}") from exc
    if not (folder / task.fixture).is_dir():
        raise UsageError(f"{path}: fixture folder {task.fixture!r} does not exist")
    return task


def copy_fixture(task: GoldenTask, workspace: Path) -> None:
    """Copy the task's fixture into a fresh ``workspace`` (which must not exist yet); the caller
    runs ``run_setup`` next."""
    workspace.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(task.folder / task.fixture, workspace, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))


def run_setup(task: GoldenTask, workspace: Path) -> None:
    """Run each ``setup`` command with ``bash -c`` in ``workspace``; the first failure stops.

    Raises ``UsageError`` naming the task file, the command, its exit code and output tail.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGINE_", "GIT_"))}
    env.update(SETUP_ENV)
    for i, command in enumerate(task.setup, 1):
        where = f"{task.folder / TASK_FILE}: setup[{i}] {command!r}"
        try:
            proc = subprocess.run(["bash", "-c", command], cwd=workspace, env=env,
                                  capture_output=True, text=True, timeout=SETUP_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise UsageError(f"{where}: timed out after {SETUP_TIMEOUT_S:g} s") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-400:] or "no output"
            raise UsageError(f"{where}: exit code {proc.returncode}: {tail}")
