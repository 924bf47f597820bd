"""Editors given Ex commands on their command line (``vim -es -c '%d' -c wq f``, ``ex -sc
'%d|x' f``): deleting every line and writing the buffer back empties the file, run for real
with vim here; other edits stay asked (a person sees the commands)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

TEXT = "one\ntwo\n"


@pytest.mark.parametrize(("command", "emptied", "expected"), [
    ("ex -sc '%d|x' notes.txt", True, "deny"),
    ("vim -es -c '%d' -c wq notes.txt", True, "deny"),
    ("vim -es '+g/^/d' +wq notes.txt", True, "deny"),
    ("ex -sc '1,$delete|x' notes.txt", True, "deny"),
    ("vim -es -c '%s/one/1/' -c wq notes.txt", False, "ask"),
    ("vim -es -c '%d' -c 'q!' notes.txt", False, "ask"),  # deleted, never written
])
def test_deleting_every_line_then_writing_empties_the_file(
        tmp_path: Path, command: str, emptied: bool, expected: str) -> None:
    (tmp_path / "notes.txt").write_text(TEXT)
    assert check_shell_json(command, tmp_path, ENV)["decision"] == expected
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert ((tmp_path / "notes.txt").read_text() == "") is emptied
