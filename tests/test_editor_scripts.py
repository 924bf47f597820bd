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


def test_a_forced_write_names_a_file_not_a_command(tmp_path: Path) -> None:
    """``:w! FILE`` forces a write to FILE; ``:w !CMD`` (a blank first) pipes the buffer
    into CMD. The control: vim writes the file, and runs nothing."""
    (tmp_path / "notes.txt").write_text(TEXT)
    out = tmp_path / "out" / "copy.txt"
    out.parent.mkdir()
    command = f"vim -es -c 'w! {out}' -c 'q!' notes.txt"
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.read_text() == TEXT
    for written, expected in (("/home/agent/.bash_aliases", "deny"), ("/tmp/x.txt", "deny"),
                              ("copy.txt", "ask")):
        line = f"ex -s +'w! {written}' +q notes.txt"
        assert check_shell_json(line, tmp_path, ENV)["decision"] == expected, line


@pytest.mark.parametrize(("command", "expected"), [
    ("vim -Es -c 'g/ERROR/p' -c 'q!' notes.txt", "allow"),  # batch Ex: prints, quits
    ("ex -s +'%p' +q notes.txt", "allow"),
    ("vim -es -c 'set nomore' -c '1,2p' -c 'qa!' notes.txt", "allow"),
    ("vim -c 'g/ERROR/p' -c 'q!' notes.txt", "ask"),  # not batch: the user's vimrc runs
    ("vim -es -u ./rc.vim -c '%p' -c 'q!' notes.txt", "ask"),  # a startup file named
    ("vim -es -c 'g/one/!rm -rf src' -c 'q!' notes.txt", "deny"),  # run on each match
])
def test_batch_ex_commands_that_only_print_read(tmp_path: Path, command: str,
                                                expected: str) -> None:
    (tmp_path / "notes.txt").write_text(TEXT)
    (tmp_path / "src").mkdir()
    assert check_shell_json(command, tmp_path, ENV)["decision"] == expected, command
    before = (tmp_path / "notes.txt").read_text()
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert (tmp_path / "notes.txt").read_text() == before  # the control: nothing written
    assert (tmp_path / "src").exists() is (expected != "deny")  # ..unless a command ran


@pytest.mark.parametrize("command", [
    "vim -es -c 'w !sh' -c 'q!' notes.txt", "vim -es -c '%!sh' -c 'q!' notes.txt",
    "vim -es -c '1,1w !bash' -c 'q!' notes.txt",
])
def test_the_buffer_piped_into_a_shell_is_refused(tmp_path: Path, command: str) -> None:
    """``:w !sh`` and a filter ``:%!sh`` hand the file's lines to sh as code (the control:
    a line of the file runs)."""
    (tmp_path / "notes.txt").write_text("touch ran.txt\n")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert (tmp_path / "ran.txt").exists()
    assert check_shell_json(command, tmp_path, ENV)["decision"] == "deny", command
