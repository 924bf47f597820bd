"""Options that decide where a program writes though the command line seems to say it only
reports: git's ``--no-X`` (and its abbreviations) turning a ``--stat``, ``--check``,
``-n``/``--dry-run`` or ``--list`` off again; tee's ``--output-error``, whose value needs an
``=``; zstd's ``-o FILE``, which wins over ``-c``. Each has a control run in real git or bash
showing the change, and a twin that only reports."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("work\n")
    (ws / "data.csv").write_text("a,1\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)
    (ws / "untracked.txt").write_text("new\n")
    return ws


def _decision(ws: Path, command: str) -> str:
    return str(check_shell_json(command, ws, ENV)["decision"])


def _bash(ws: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False,
                   stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("command", "twin", "gone"), [
    ("git clean -n --no-dry-run -f", "git clean -n", "untracked.txt"),
    ("git clean -n --no-dry -f", "git clean -n -f", "untracked.txt"),
    ("git clean -nf --no-dry-run", "git clean -nf", "untracked.txt"),
    ("git rm -q -n --no-dry-run a.txt", "git rm -n a.txt", "a.txt"),
])
def test_a_dry_run_turned_off_again_runs(repo: Path, command: str, twin: str,
                                         gone: str) -> None:
    assert _decision(repo, twin) == "allow"
    assert _decision(repo, command) != "allow"
    _bash(repo, command)
    assert not (repo / gone).exists()  # the control: git did it


def test_a_listing_turned_off_makes_a_branch(repo: Path) -> None:
    assert _decision(repo, "git branch --list evil") == "allow"
    for command in ("git branch --list --no-list evil", "git branch -l --no-l evil"):
        assert _decision(repo, command) != "allow", command
    _bash(repo, "git branch --list --no-list evil")
    assert "evil" in subprocess.run(["git", "branch"], cwd=repo, capture_output=True,
                                    text=True).stdout


def test_a_report_turned_off_applies_the_patch(repo: Path) -> None:
    (repo / "a.txt").write_text("changed\n")
    (repo / "x.patch").write_text(subprocess.run(["git", "diff"], cwd=repo,
                                                 capture_output=True, text=True).stdout)
    subprocess.run(["git", "checkout", "--", "a.txt"], cwd=repo, check=True)
    assert _decision(repo, "git apply --stat x.patch") == "allow"
    assert _decision(repo, "git apply --stat --no-stat x.patch") != "allow"
    _bash(repo, "git apply --stat --no-stat x.patch")
    assert (repo / "a.txt").read_text() == "changed\n"


def test_tee_output_error_takes_its_mode_only_after_an_equals(repo: Path) -> None:
    command = "tee --output-error a.txt </dev/null"
    assert _decision(repo, command) == "deny"
    _bash(repo, command)
    assert (repo / "a.txt").read_text() == ""  # the control: a.txt emptied
    assert _decision(repo, "echo x | tee --output-error=warn") == "allow"


def test_zstd_writes_its_named_output_even_with_c(repo: Path) -> None:
    command = "zstd -q -f -c -o a.txt data.csv"
    assert _decision(repo, "zstd -q -c data.csv") == "allow"
    assert _decision(repo, command) == "deny"
    assert _decision(repo, "zstd -d -c x.zst -o -") == "allow"
    _bash(repo, command)
    assert (repo / "a.txt").read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # the control: a frame
