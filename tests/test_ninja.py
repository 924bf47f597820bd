"""``ninja -n`` and ``ninja -t`` run nothing, checked against the real ninja: a manifest whose
every command leaves a file (its generator rule too, made out of date on purpose) is dry-run
and queried, and no file appears; the classifier allows exactly those, and asks for a build."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

MANIFEST = """rule touch
  command = touch $out ran_$out
rule regen
  command = touch ran_regen && touch build.ninja
  generator = 1
build build.ninja: regen dep.txt
build out.txt: touch
"""

@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "build").mkdir(parents=True)
    (root / "build" / "build.ninja").write_text(MANIFEST)
    (root / "build" / "dep.txt").write_text("x")
    old = os.stat(root / "build" / "dep.txt").st_mtime_ns - 10**10
    os.utime(root / "build" / "build.ninja", ns=(old, old))  # out of date: the generator is due
    return root


def ran(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "build").iterdir() if p.name.startswith("ran_"))


@pytest.mark.parametrize("command", [
    "ninja -C build -n", "ninja -C build -n out.txt", "ninja -C build -t targets",
    "ninja -C build -t commands", "ninja -C build -t query out.txt",
    "ninja -C build -t compdb", "ninja -C build -t deps", "ninja -C build -t rules",
])
def test_a_dry_run_or_a_query_runs_nothing_and_is_allowed(command: str, ws: Path) -> None:
    assert check_shell_json(command, ws, ENV)["decision"] == "allow"
    subprocess.run(["bash", "-c", command], cwd=ws, check=True, capture_output=True)
    assert ran(ws) == []


def test_a_build_runs_the_manifest_and_asks(ws: Path) -> None:
    assert check_shell_json("ninja -C build", ws, ENV)["decision"] == "ask"
    subprocess.run(["ninja", "-C", "build"], cwd=ws, check=True, capture_output=True)
    assert ran(ws) == ["ran_out.txt", "ran_regen"]


@pytest.mark.parametrize("command", ["ninja -C build -t clean", "ninja -C build -t browse",
                                     "ninja -C build -t recompact", "ninja -C build -t frob"])
def test_other_tools_are_not_allowed(command: str, ws: Path) -> None:
    assert check_shell_json(command, ws, ENV)["decision"] != "allow"


def test_a_folder_outside_the_workspace_is_judged_as_a_read_there(ws: Path) -> None:
    assert check_shell_json("ninja -C /home/agent/x -t targets", ws, ENV)["decision"] == "ask"
