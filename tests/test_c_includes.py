"""C preprocessing reads what the sources include: ``gcc -E``, ``cpp`` and ``-fsyntax-only``.

Each dangerous case is run for real first: ``gcc -E`` prints a file outside the workspace that
only the sources name (a marker reaches its output), so the command must ask. The harmless
cases, system headers and workspace headers found through ``-I``, are reads.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from engine.permissions.c_includes import Directive, directives
from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

MARKER = "MARKER_7f3a_OUTSIDE"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A small C project: sources, a header found through ``-I``, nothing that leaves."""
    root = tmp_path / "ws"
    (root / "native" / "include").mkdir(parents=True)
    (root / "native" / "include" / "config.h").write_text("#define LIMIT 42\n")
    (root / "native" / "parser.c").write_text(
        '#include <stdio.h>\n#include "config.h"\nint limit = LIMIT;\n')
    (root / "native" / "lexer.c").write_text('#include <string.h>\n#include <config.h>\n')
    (root / "a.c").write_text('#include <stdio.h>\nint main(void) { return 0; }\n')
    return root


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the workspace holding the marker."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.txt"
    path.write_text(f"{MARKER}\n")
    return path


def verdict(command: str, ws: Path) -> dict[str, Any]:
    out: dict[str, Any] = check_shell_json(command, ws, ENV)
    return out


def decision(command: str, ws: Path) -> str:
    return str(verdict(command, ws)["decision"])


def run(command: str, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash for real in ``cwd``."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False,
                          env={**os.environ, **(env or {})})


# ---------------------------------------------------------------- harmless: reads


@pytest.mark.parametrize("command", [
    "gcc -fsyntax-only a.c", "gcc -E -P a.c", "clang -E a.c", "gcc -E a.c -o /dev/null",
    "gcc -dM -E - </dev/null", "gcc -E -P - <<< '#include <stdio.h>'",
])
def test_a_system_header_alone_is_a_read(ws: Path, command: str) -> None:
    if command.startswith("gcc"):
        assert run(command, ws).returncode == 0
    assert decision(command, ws) == "allow", verdict(command, ws)["reason"]


@pytest.mark.parametrize("command", [
    "gcc -E -P -Inative/include native/parser.c",
    "gcc -fsyntax-only -Wall -Wextra -std=c11 -O2 -Inative/include native/*.c",
    "cpp -Inative/include native/parser.c",
    "gcc -E -P -iquote native/include -DX=1 -x c native/parser.c",
])
def test_workspace_headers_found_through_dash_i_are_read(ws: Path, command: str) -> None:
    done = run(command, ws)
    assert done.returncode == 0, done.stderr
    if "-E" in command or command.startswith("cpp"):
        assert "int limit = 42;" in done.stdout  # config.h was read through -I
    assert decision(command, ws) == "allow", verdict(command, ws)["reason"]


def test_headers_are_read_in_turn_and_a_clean_chain_is_a_read(ws: Path) -> None:
    (ws / "native" / "include" / "config.h").write_text('#include "limits_local.h"\n')
    (ws / "native" / "include" / "limits_local.h").write_text("#include <limits.h>\n")
    assert decision("gcc -E -Inative/include native/parser.c", ws) == "allow"


# ---------------------------------------------------------------- what the sources name: ask


def test_a_workspace_header_that_includes_an_absolute_path_asks(ws: Path,
                                                                secret: Path) -> None:
    (ws / "native" / "include" / "config.h").write_text(f'#include "{secret}"\n')
    command = "gcc -E -P -Inative/include native/parser.c"
    assert MARKER in run(command, ws).stdout
    v = verdict(command, ws)
    assert v["decision"] == "ask"
    assert str(secret) in v["reason"] and "config.h" in v["reason"]


def test_dot_dot_leaving_the_workspace_asks(ws: Path, secret: Path) -> None:
    (ws / "b.c").write_text('#include "../outside/secret.txt"\n')
    assert MARKER in run("gcc -E -P b.c", ws).stdout
    assert decision("gcc -E -P b.c", ws) == "ask"
    assert decision("gcc -fsyntax-only b.c", ws) == "ask"


def test_dot_dot_to_a_header_of_the_workspace_is_read_in_turn(ws: Path, secret: Path) -> None:
    (ws / "native" / "sub").mkdir()
    (ws / "native" / "sub" / "d.c").write_text('#include "../include/up.h"\n')
    (ws / "native" / "include" / "up.h").write_text("int from_up = 1;\n")
    command = "gcc -E -P native/sub/d.c"
    assert "int from_up = 1;" in run(command, ws).stdout
    assert decision(command, ws) == "allow", verdict(command, ws)["reason"]
    (ws / "native" / "include" / "up.h").write_text(f'#include "{secret}"\n')
    assert MARKER in run(command, ws).stdout
    assert decision(command, ws) == "ask"


def test_dot_dot_found_in_no_folder_of_the_workspace_asks(ws: Path) -> None:
    (ws / "c.c").write_text('#include "../../../../../../../../etc/passwd"\n')
    assert run("gcc -E -P c.c", ws).returncode == 0  # from /usr/include it climbs to /etc
    assert decision("gcc -E -P c.c", ws) == "ask"


def test_a_source_that_is_not_there_reads_nothing(ws: Path) -> None:
    done = run("gcc -E -P native/absent.c", ws)
    assert done.returncode != 0 and done.stdout == ""
    assert decision("gcc -E -P native/absent.c", ws) == "allow"
    assert decision("gcc -fsyntax-only native/none/*.c", ws) == "allow"


def test_a_name_a_macro_makes_asks(ws: Path, secret: Path) -> None:
    (ws / "m.c").write_text("#include SECRET\n")
    command = f"gcc -E -P -DSECRET='\"{secret}\"' m.c"
    assert MARKER in run(command, ws).stdout
    assert decision(command, ws) == "ask"
    assert "only known when it runs" in verdict(command, ws)["reason"]


@pytest.mark.parametrize("text", ['#embed "{secret}"\n', "#embed SECRET\n",
                                  '#if __has_embed("{secret}")\n#endif\n'])
def test_embed_of_a_path_outside_asks(ws: Path, secret: Path, text: str) -> None:
    """gcc 12 has no ``#embed`` (clang 19 and gcc 15 do): only the classifier is shown."""
    (ws / "e.c").write_text(text.format(secret=secret))
    assert decision("gcc -E e.c", ws) == "ask"


def test_embed_of_a_workspace_file_is_a_read(ws: Path) -> None:
    (ws / "logo.bin").write_bytes(b"\0\1\2")
    (ws / "e.c").write_text('const char logo[] = {\n#embed "logo.bin"\n};\n')
    assert decision("gcc -E e.c", ws) == "allow"


def test_pragma_dependency_asks(ws: Path, secret: Path) -> None:
    (ws / "p.c").write_text(f'#pragma GCC dependency "{secret}"\nint x;\n')
    later = time.time() + 86400
    os.utime(secret, (later, later))  # newer than p.c: gcc says so, naming the file
    assert str(secret) in run("gcc -E -P p.c", ws).stderr
    assert decision("gcc -E -P p.c", ws) == "ask"


@pytest.mark.parametrize("text", [
    '%:include "{secret}"\n',  # a digraph
    '??=include "{secret}"\n',  # a trigraph (-std=c11 reads them)
    '#inc\\\nlude "{secret}"\n',  # a continuation
    '/* a */ # /* b */ include "{secret}"\n',  # comments
    '/* a comment\n   that ends here */ #include "{secret}"\n',
    '#include /* a comment\n */ "{secret}"\n',
    '#define P(x) _Pragma(#x)\nP(GCC dependency "{secret}")\n',
])
def test_directives_written_unusually_are_found(ws: Path, secret: Path, text: str) -> None:
    (ws / "t.c").write_text(text.format(secret=secret))
    later = time.time() + 86400
    os.utime(secret, (later, later))
    done = run("gcc -E -P -std=c11 t.c", ws)
    assert MARKER in done.stdout or str(secret) in done.stderr, done.stderr
    assert decision("gcc -E -P -std=c11 t.c", ws) == "ask"


def test_a_glob_of_sources_is_judged_match_by_match(ws: Path, secret: Path) -> None:
    command = "gcc -fsyntax-only -Inative/include native/*.c"
    assert decision(command, ws) == "allow"
    (ws / "native" / "zz_evil.c").write_text(f'#include "{secret}"\n')
    assert MARKER in run("gcc -E -P -Inative/include native/*.c", ws).stdout
    v = verdict(command, ws)
    assert v["decision"] == "ask" and "native/zz_evil.c" in v["reason"]


def test_a_link_out_of_the_workspace_asks(ws: Path, secret: Path) -> None:
    (ws / "native" / "include" / "config.h").unlink()
    (ws / "native" / "include" / "config.h").symlink_to(secret)
    command = "gcc -E -P -Inative/include native/parser.c"
    assert MARKER in run(command, ws).stdout
    assert decision(command, ws) == "ask"


def test_a_folder_outside_named_by_dash_i_or_cpath_asks(ws: Path, secret: Path) -> None:
    (ws / "s.c").write_text("#include <secret.txt>\n")
    assert MARKER in run(f"gcc -E -P -I{secret.parent} s.c", ws).stdout
    assert MARKER in run("gcc -E -P s.c", ws, {"CPATH": str(secret.parent)}).stdout
    assert decision(f"gcc -E -P -I{secret.parent} s.c", ws) == "ask"
    assert decision(f"CPATH={secret.parent} gcc -E -P s.c", ws) == "ask"
    assert decision(f"export CPATH={secret.parent}; gcc -E -P s.c", ws) == "ask"
    assert decision("gcc -E -P s.c", ws) == "allow"  # no such system header: gcc fails


def test_a_header_this_command_writes_first_asks(ws: Path, secret: Path) -> None:
    (ws / "w.c").write_text('#include "h.h"\n')
    command = f"printf '#include \"{secret}\"\\n' > h.h && gcc -E -P w.c"
    assert MARKER in run(command, ws).stdout
    (ws / "h.h").unlink()
    v = verdict(command, ws)
    assert v["decision"] == "ask"
    gcc = next(c for c in v["commands"] if c["argv"][0] == "gcc")
    assert gcc["decision"] == "ask" and "wrote first" in gcc["reason"]


def test_source_text_on_its_input_is_judged_like_a_file(ws: Path, secret: Path) -> None:
    here = f"gcc -E -P - <<< '#include \"{secret}\"'"
    piped = f"printf '#include \"{secret}\"\\n' | gcc -E -P -"
    by_name = f"printf '#include \"{secret}\"\\n' | gcc -E -P -x c /dev/stdin"
    for command in (here, piped, by_name):
        assert MARKER in run(command, ws).stdout
        assert decision(command, ws) == "ask", command
    assert decision("cpp < a.c", ws) == decision("cpp a.c", ws) == "allow"  # shown: read
    (ws / "b.c").write_text(f'#include "{secret}"\n')
    assert decision("cpp < b.c", ws) == "ask"  # what it includes is outside
    assert decision("cpp < /tmp/elsewhere.c", ws) == "ask"  # outside: not shown


# ---------------------------------------------------------------- not modelled: ask as before


@pytest.mark.parametrize("command", [
    "gcc -c a.c", "gcc -E a.c -o a.i", "cpp a.c a.i", "gcc -fsyntax-only -fplugin=./x.so a.c",
    "gcc -E -Wp,-MD,deps.d a.c", "gcc -E -MD a.c", "gcc -E -include h.h a.c",
    "gcc -E -save-temps a.c", "gcc -E $FLAGS a.c", "gcc -E -B. a.c",
])
def test_compiling_writing_and_unmodelled_options_still_ask(ws: Path, command: str) -> None:
    assert decision(command, ws) == "ask", verdict(command, ws)["reason"]


def test_dash_wp_writes_a_file_for_real(ws: Path) -> None:
    """The control for ``-Wp,``: it hands the preprocessor options that write."""
    run("gcc -E -Wp,-MD,deps.d a.c", ws)
    assert (ws / "deps.d").is_file()


def test_a_response_file_named_like_a_source_asks(ws: Path) -> None:
    """``@opts.c`` gives gcc the options in ``opts.c`` (never reads a file ``@opts.c``)."""
    (ws / "opts.c").write_text("-Wp,-MD,deps.d\n")
    (ws / "@opts.c").write_text("int harmless;\n")
    run("gcc -E @opts.c a.c", ws)
    assert (ws / "deps.d").is_file()
    assert decision("gcc -E @opts.c a.c", ws) == "ask"
    assert decision("gcc -E *.c", ws) == "ask"  # bash passes the match @opts.c


def test_a_source_the_compiler_cannot_read_as_text_asks(ws: Path) -> None:
    (ws / "bin.c").write_bytes(b'#inc\0lude "x"\n')
    assert decision("gcc -E bin.c", ws) == "ask"


# ---------------------------------------------------------------- the scanner


@pytest.mark.parametrize(("text", "expected"), [
    ("#include <stdio.h>\n", {Directive("include", "stdio.h")}),
    ('  #  include_next "a.h" // see ../b\n', {Directive("include", "a.h", True)}),
    ('#import "o.h"\n', {Directive("include", "o.h", True)}),
    ('import "unit.h";\n', {Directive("include", "unit.h", True)}),
    ("#if __has_include(<g.h>)\n#endif\n", {Directive("has", "g.h")}),
    ("#ifdef __has_include\n#endif\n", set()),
    ('_Pragma("GCC diagnostic push")\n#pragma once\n#pragma GCC poison x\n', set()),
    ("#define X 1 /* #include \"no\" on this line */\n", set()),
])
def test_directives(text: str, expected: set[Directive]) -> None:
    assert directives(text) == expected


def test_a_long_line_of_comments_is_read_quickly() -> None:
    text = "/**/ " * 200_000 + "\n" + "*/" * 100_000 + "\n"
    assert directives(text) == set()
