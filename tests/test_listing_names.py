"""A listing's names are paths inside the workspace only while its consumer keeps them whole.

``git ls-files | xargs cat`` reads inside the workspace, unless a folder there is named
``x `` and holds ``etc/passwd``: git lists ``x /etc/passwd``, xargs cuts it at the blank, and
cat reads the host's ``/etc/passwd``. The control run below shows bash doing exactly that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions import listings
from engine.permissions.listings import TOO_MANY, split_name
from engine.permissions.shell import check_shell_json

GIT = shutil.which("git")


def _decision(workspace: Path, command: str) -> str:
    return str(check_shell_json(command, workspace, {})["decision"])


@pytest.fixture()
def trap(tmp_path: Path) -> Path:
    """A git workspace with a folder whose name ends in a blank, holding ``etc/passwd``."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "x " / "etc").mkdir(parents=True)
    (tmp_path / "x " / "etc" / "passwd").write_text("not the host's\n")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    return tmp_path


def test_the_control_run_reads_the_hosts_file(trap: Path) -> None:
    host = Path("/etc/passwd").read_text().splitlines()[0]
    out = subprocess.run(["bash", "-c", "git ls-files | xargs cat"], cwd=trap,
                         capture_output=True, text=True).stdout
    assert host in out  # the piece after the blank is the absolute path /etc/passwd


@pytest.mark.parametrize("command", [
    "git ls-files | xargs cat", "find . -type f | xargs cat", "find . | head | xargs cat",
    "cat $(git ls-files)", "while read -r f; do cat \"$f\"; done < <(find .)",
    "git ls-files | while read -r a b; do cat \"$b\"; done",
    "find . -print0 | xargs -P0 cat",  # -P0 is a process count, not -0: cut at blanks
    "git ls-files -z | xargs cat",
])
def test_a_consumer_that_splits_names_is_asked(trap: Path, command: str) -> None:
    assert _decision(trap, command) == "ask", command


@pytest.mark.parametrize("command", [
    "git ls-files -z | xargs -0 cat", "find . -print0 | xargs -0r cat",
    "find . -print0 | xargs --null wc -l", "find src | xargs cat",  # nothing odd under src
])
def test_a_consumer_that_keeps_names_whole_reads_inside(trap: Path, command: str) -> None:
    assert _decision(trap, command) == "allow", command


def test_a_plain_workspace_keeps_its_listings(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    assert _decision(tmp_path, "find . -name '*.py' | xargs wc -l") == "allow"
    assert _decision(tmp_path, "mkdir -p 'x /etc' && find . | xargs wc -l") == "ask"


def test_split_name_finds_made_paths_and_gives_up_past_its_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert split_name([str(tmp_path)], [str(tmp_path / "a'b")]) == str(tmp_path / "a'b")
    assert split_name([str(tmp_path)], ["/elsewhere/a b"]) is None
    for i in range(3):
        (tmp_path / f"f{i}").touch()
    assert split_name([str(tmp_path)], []) is None
    monkeypatch.setattr(listings, "MAX_LISTED_ENTRIES", 2)
    assert split_name([str(tmp_path)], []) == TOO_MANY


def test_a_folder_read_before_is_read_again_once_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names are kept per folder while its times stand still; a name added later, even
    with the modification time set back as it was (``touch -d``), is seen."""
    monkeypatch.setattr(listings, "RACY_NS", -1)  # keep every folder, however fresh
    folder = tmp_path / "deep" / "er"
    folder.mkdir(parents=True)
    (folder / "plain.py").touch()
    assert split_name([str(tmp_path)], []) is None
    assert str(folder) in listings._SEEN
    before = folder.stat()
    (folder / "x y").mkdir()
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert folder.stat().st_mtime_ns == before.st_mtime_ns
    assert split_name([str(tmp_path)], []) == str(folder / "x y")
