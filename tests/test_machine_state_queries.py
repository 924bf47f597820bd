"""Tools that show the state of a GPU, a firewall, a data pipeline or large files, one option
or verb away from changing it: the query reads (as ``ps`` does), the change asks, and what
takes something down or rewrites history is refused. ``git lfs`` and ``dvc`` are judged in a
real repository; ``nvidia-smi`` and ``ufw`` by their command lines alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "dvc.yaml").write_text("stages: {}\n")
    (ws / "params.yaml").write_text("lr: 0.1\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


@pytest.mark.parametrize("command", [
    "nvidia-smi", "nvidia-smi -L", "nvidia-smi -q -i 0",
    "nvidia-smi --query-gpu=name,memory.used --format=csv,noheader", "nvidia-smi -l 1",
    "nvidia-smi topo -m", "nvidia-smi dmon -c 5",
    "ufw status", "ufw status verbose", "ufw app list",
    "dvc status", "dvc dag", "dvc diff HEAD~1", "dvc params diff", "dvc remote list",
    "dvc stage list", "dvc metrics show",
    "git lfs track", "git lfs ls-files", "git lfs migrate info", "git lfs status",
])
def test_a_query_of_the_state_reads(workspace: Path, command: str) -> None:
    assert check_shell_json(command, workspace, ENV)["decision"] == "allow"


@pytest.mark.parametrize(("command", "expected"), [
    ("nvidia-smi -pm 1", "ask"), ("nvidia-smi -pl 150", "ask"),
    ("nvidia-smi -f gpu.log", "ask"), ("nvidia-smi -q -f gpu.log", "ask"),
    ("nvidia-smi --gpu-reset -i 0", "ask"),
    ("ufw allow 22", "ask"), ("ufw disable", "deny"), ("sudo ufw disable", "deny"),
    ("ufw reset", "deny"), ("ufw delete allow 22", "deny"),
    ("dvc status -c", "ask"), ("dvc repro", "ask"), ("dvc push", "ask"),
    ("dvc gc -w -c -f", "deny"), ("dvc destroy", "deny"),
    ("git lfs track '*.onnx'", "ask"), ("git lfs pull", "ask"), ("git lfs locks", "ask"),
    ("git lfs migrate import --include='*.onnx' --everything", "deny"),
    ("git lfs migrate export --include='*.bin'", "deny"),
])
def test_a_change_asks_and_a_teardown_is_refused(workspace: Path, command: str,
                                                 expected: str) -> None:
    assert check_shell_json(command, workspace, ENV)["decision"] == expected
