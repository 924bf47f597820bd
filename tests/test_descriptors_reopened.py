"""A file opened for reading on a descriptor is opened again, for writing, by the stream's name.

``/dev/fd/N``, ``/dev/stdin`` and ``/proc/self/fd/N`` are not devices: Linux opens again the
file behind the descriptor, with the new open's flags. So ``3<a.txt`` followed by ``>>
/dev/fd/3`` appends to a.txt, and ``> /dev/fd/4`` after ``4<&3-`` (a move) empties it. Each
command here is run by bash in a throwaway repository (the control: tracked work changes)
and judged: never allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions, work_changed


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", {"a.txt": "important\n", "src/app.py": "print(1)\n",
                                       "data.csv": "b,2\na,1\n"})


@pytest.mark.parametrize("command", [
    # appended through the descriptor (>>, &>>, exec >>)
    "echo pwned 3<a.txt >> /dev/fd/3", "echo pwned <a.txt >>/dev/stdin",
    "echo pwned 3<a.txt >>/proc/self/fd/3", "echo pwned 3<a.txt &>>/dev/fd/3",
    'exec 3<src/app.py; printf "import os\\n" >> /dev/fd/3',
    "exec 3<a.txt; exec >>/dev/fd/3; echo pwned", "exec 3<a.txt; exec 4<&3; echo x >>/dev/fd/4",
    # a descriptor moved (N<&M-) holds what M held
    "exec 3<a.txt; exec 4<&3-; echo pwned > /dev/fd/4", "echo pwned 3<a.txt 4<&3- > /dev/fd/4",
    "exec 3<a.txt; exec 0<&3-; echo pwned > /dev/stdin", "{ echo x > /dev/fd/4; } 3<a.txt 4<&3-",
    # {var} takes the lowest free descriptor from 10
    "exec {fd}<a.txt; echo pwned >/dev/fd/10", "exec {fd}<a.txt; echo pwned >/proc/self/fd/10",
    # programs that open a file they are given by name: find -fprint, tar -cf, time -o
    "find src -fprint /dev/fd/4 4<a.txt", "find src -fprint /dev/stdin <a.txt",
    "exec 3<a.txt; exec 4<&3-; find src -fls /dev/fd/4", "tar -cf /dev/fd/3 src 3<a.txt",
    "tar -cf /dev/stdin src <a.txt",
])
def test_a_descriptor_opened_again_writes_its_file(ws: Path, command: str) -> None:
    assert work_changed(ws, command), command  # the control: a.txt or src/app.py changed
    assert "allow" not in decisions(ws, command), command


@pytest.mark.parametrize("command", [
    "cat /dev/stdin < a.txt", "echo x >> /dev/stdout",
    "find src -fprint /dev/stdout", "tar -cf /dev/stdout src | tar -t",
    "exec {fd}<a.txt; read -r line <&$fd; echo $line", "echo x 2>&1 >/dev/null",
])
def test_reading_a_descriptor_and_writing_the_output_still_read(ws: Path, command: str) -> None:
    assert not work_changed(ws, command), command
    assert decisions(ws, command) == ("allow", "allow"), command


def test_a_descriptor_the_command_never_opens_is_refused(ws: Path) -> None:
    """What ``/dev/fd/7`` holds is whatever the engine's process left there: not known."""
    assert decisions(ws, "echo x > /dev/fd/7") == ("deny", "deny")
