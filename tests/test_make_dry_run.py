"""``make -n`` and ``make -q`` are reads when the makefile runs nothing as make reads it.

Each makefile is run by the real make first, as the control: those said to run something
do (a file ``ran`` appears, or make writes a makefile), and those allowed leave the folder
as it was.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

NEWER = "x.in"
"""A file made after the makefile: a rule that remakes the makefile from it runs."""

RUNS = [
    ("X := $(shell touch ran)\nall:\n\techo hi\n", "make -n"),
    ("X != touch ran\nall:\n\t@echo $(X)\n", "make -n"),
    ("all:\n\t+touch ran\n", "make -n"),
    ("all: ; +touch ran\n", "make -n"),
    ("X := +touch ran\nall:\n\t$(X)\n", "make -n"),
    ("Z = $(X)\nX = +touch ran\nall:\n\t@$(Z)\n", "make -q"),
    ("define Y\nfoo\n+touch ran\nendef\nall:\n\techo $(Y)\n", "make -n"),
    ("all:\n\t$(MAKE) --version >/dev/null; touch ran\n", "make -n"),
    ("X := $(call shell,touch ran)\nall:\n\techo\n", "make -n"),
    ("-include x.d\nall:\n\techo\nx.d:\n\ttouch ran; : > x.d\n", "make -n"),
    ("all:\n\techo\nMakefile: x.in\n\ttouch ran\n", "make -n"),
    ("all:\n\techo\nMake%: x.in\n\ttouch ran\n", "make -n"),
    ("all:\n\techo\n%: x.in\n\ttouch ran\n", "make -n all"),
    ("T = Makefile\nall:\n\techo\n$(T): x.in\n\ttouch ran\n", "make -n"),
    ("all:\n\techo\n$(T): x.in\n\ttouch ran\n", "make -n T=Makefile"),
    ("all:\n\t$(CC) a.c\n", "make -n 'CC=+touch ran'"),
    (".RECIPEPREFIX = >\nall:\n>+touch ran\n", "make -n"),
    ("all:\n\techo\n", "make -n -f sub.mk"),  # sub.mk.sh beside it: cat'ed into sub.mk
]
"""A makefile and a dry run of it that runs a command (or remakes a makefile)."""

PRINTS = [
    ("CC := gcc\nall: build/app\nbuild/app: a.c\n\t$(CC) -o $@ $<\n", "make -n"),
    ("BIN := app\nOBJ = a.o\n$(BIN): $(OBJ)\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -c $<\n",
     "make -q app"),
    ("clean:\n\t@-rm -rf build src\n", "make -n clean"),
    (".PHONY: help Makefile\nhelp:\n\t@echo help\n%: Makefile\n\t@touch ran-$@\n",
     "make -n html"),  # Sphinx's catch-all: circular for the makefile, never remade by it
    ("install:\n\tcp app $(PREFIX)/bin\n", "make -n install PREFIX=/usr/local"),
    ("all:\n\t$(CC) -c a.c # comment\n", "make -nB"),
]


def _folder(tmp: Path, makefile: str) -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text(makefile)
    (ws / "a.c").write_text("int main(void) { return 0; }\n")
    (ws / "sub.mk.sh").write_text("all:\n\techo sub\n")
    os.utime(ws / "Makefile", (1_000_000_000, 1_000_000_000))
    (ws / NEWER).write_text("newer\n")
    return ws


def _snapshot(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file()}


def _make(ws: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, check=False)


@pytest.mark.parametrize(("makefile", "command"), RUNS)
def test_a_dry_run_that_runs_something_is_not_a_read(tmp_path: Path, makefile: str,
                                                     command: str) -> None:
    ws = _folder(tmp_path, makefile)
    got = check_shell_json(command, ws, ENV)
    before = _snapshot(ws)
    _make(ws, command)
    assert _snapshot(ws) != before, "the control: make ran nothing"
    assert got["decision"] != "allow", got


@pytest.mark.parametrize(("makefile", "command"), PRINTS)
def test_a_dry_run_of_a_makefile_that_runs_nothing_is_a_read(
        tmp_path: Path, makefile: str, command: str) -> None:
    ws = _folder(tmp_path, makefile)
    got = check_shell_json(command, ws, ENV)
    before = _snapshot(ws)
    _make(ws, command)
    assert _snapshot(ws) == before, "the control: make changed the folder"
    assert got["decision"] == "allow", got


@pytest.mark.parametrize(("command", "expected"), [
    ("make -t", "ask"),  # touches the targets
    ("make -n --eval 'x:=1'", "ask"),  # more makefile code
    ("make -n X='$(shell rm -f a.c)'", "deny"),  # make expands it
    ("X='$(shell rm -f a.c)' make -n", "deny"),
    ("printf 'all:\\n\\techo\\n' > new.mk; make -n -f new.mk", "ask"),  # written, then read
    ("printf 'all:\\n\\techo\\n' > Makefile; make -n", "deny"),  # its work lost
    ("make -n -f /etc/passwd", "ask"),  # a read outside
    ("make -n -C sub", "allow"), ("make -q; echo $?", "allow"),
    # no makefile there now: the one make reads is written first, unseen (cmake -B b)
    ("make -n -f nope.mk", "ask"), ("make -C src -n", "ask"),
    ("cmake -B src . && make -C src -n", "ask"),
])
def test_what_a_dry_run_is_handed(tmp_path: Path, command: str, expected: str) -> None:
    ws = _folder(tmp_path, PRINTS[0][0])
    (ws / "src").mkdir()
    (ws / "sub").mkdir()
    (ws / "sub" / "Makefile").write_text(PRINTS[0][0])
    assert check_shell_json(command, ws, ENV)["decision"] == expected, command


def test_the_reason_names_the_line(tmp_path: Path) -> None:
    ws = _folder(tmp_path, "# build\nall:\n\techo \\\n\t  hi\nX := \\\n  $(shell id)\n")
    got = check_shell_json("make -n", ws, ENV)
    assert "Makefile, line 5: $(shell... runs as the makefile is read" in got["reason"], got


def test_a_makefile_written_by_the_command_is_never_run_unseen(tmp_path: Path) -> None:
    ws = _folder(tmp_path, PRINTS[0][0])
    got = check_shell_json("cp a.c Makefile && make -n", ws, ENV, approval="auto")
    assert got["decision"] == "deny", got


def test_a_makefile_shown_by_a_printer_is_judged_as_makefile_code(tmp_path: Path) -> None:
    """``make -f <(printf ..)``: the recipe it shows runs (the control deletes a.c)."""
    ws = _folder(tmp_path, PRINTS[0][0])
    command = "make -f <(printf 'all:\\n\\trm -f a.c\\n')"
    assert check_shell_json(command, ws, ENV)["decision"] == "deny"
    _make(ws, command)
    assert not (ws / "a.c").exists()
    shown = "make -f <(printf 'all:\\n\\techo hi\\n')"
    assert check_shell_json(shown, ws, ENV)["decision"] == "ask"  # a build, as make is
