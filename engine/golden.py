"""Golden task folders: ``task.yaml`` + ``fixture/`` + ``turns.yaml`` (DESIGN 8).

A task names its prompt, its machine, the fixture copied into a fresh workspace, the model
(default: the scripted model replaying ``turns.yaml``), approval mode, policy, limits,
injected faults and the checks that decide pass or fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.config import load_yaml
from engine.errors import UsageError

TASK_FILE = "task.yaml"
TURNS_FILE = "turns.yaml"


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
    approval: Literal["interactive", "policy", "auto", "deny"] = "policy"
    policy: str | None = "policy.yaml"
    """Relative to the task folder; missing file -> the default policy."""
    limits: dict[str, Any] = Field(default_factory=dict)
    faults: list[str] = Field(default_factory=list)
    """``ENGINE_FAULTS`` items injected on the first attempt (the harness resumes)."""
    context: dict[str, Any] = Field(default_factory=dict)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    folder: Path = Path(".")

    @property
    def turns_path(self) -> Path:
        return self.folder / TURNS_FILE

    @property
    def policy_path(self) -> Path | None:
        if not self.policy:
            return None
        path = self.folder / self.policy
        return path if path.exists() else None

    def machine_path(self) -> Path:
        """The machine file: relative to the project root above ``golden_tasks/``."""
        candidates = [self.folder / self.machine, self.folder.parent.parent / self.machine,
                      Path.cwd() / self.machine]
        for c in candidates:
            if c.exists():
                return c
        raise UsageError(f"{self.folder / TASK_FILE}: machine {self.machine!r} not found")


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
    """Copy the task's fixture into a fresh ``workspace`` (which must not exist yet)."""
    workspace.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(task.folder / task.fixture, workspace, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
