"""Inline interpreter code that opens a file named by a literal for writing from its start,
run by bash: an existing file that holds work is replaced, which is refused as ``cp`` over it
is; a new file is a write, asked.

Each command is judged by ``policy check-shell`` and run in the shell oracle's sandbox (a
throwaway copy of the corpus workspace, a git repository). Only the interpreters every
machine here has run (python3, perl); the other languages' forms are read by the same
patterns and checked on their words below.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace
from tests.shell_generator import Generated
from tests.shell_oracle import Result, require_sandbox, run_all

pytestmark = [pytest.mark.xdist_group("inline_writes"), pytest.mark.timeout(600)]

WRITES = (
    ("python3", "open({p!r}, 'w').close()"),
    ("python3", "f = open({p!r}, 'w'); f.write('x'); f.close()"),
    ("python3", "open(r{p!r}, mode='wb').write(b'x')"),
    ("python3", "open({p!r}, 'w+').close()"),
    ("python3", "import pathlib; pathlib.Path({p!r}).write_text('')"),
    ("python3", "from pathlib import Path; Path({p!r}).write_bytes(b'')"),
    ("perl", "open(F, '>{p}'); close F"),
    ("perl", "open(my $f, '>', '{p}'); close $f"),
)
"""Ways to open a file for writing from its start, ``{p}`` its path."""
EXISTING = ("a.txt", "src/app.py", "data.csv")
NEW = ("fresh.txt",)


def grid() -> Iterator[Generated]:
    for (lang, code), path in ((w, p) for w in WRITES for p in (*EXISTING, *NEW)):
        flag = "-c" if lang == "python3" else "-e"
        command = f"{lang} {flag} {shlex.quote(code.format(p=path))}"
        yield Generated(command, command, (lang, path))


@pytest.fixture(scope="module")
def results() -> list[Result]:
    require_sandbox()
    return run_all(list(grid()))


def test_a_file_holding_work_opened_for_writing_is_refused(results: list[Result]) -> None:
    replaced = [r for r in results if r.transforms[1] in EXISTING]
    assert len(replaced) == len(WRITES) * len(EXISTING)
    assert {r.effect for r in replaced} == {"destroyed"}  # each form does replace the file
    assert [(r.command, r.policy, r.auto) for r in replaced
            if (r.policy, r.auto) != ("deny", "deny")] == []


def test_a_new_file_opened_for_writing_is_asked(results: list[Result]) -> None:
    fresh = [r for r in results if r.transforms[1] in NEW]
    assert {r.effect for r in fresh} == {"wrote"}
    assert [(r.command, r.policy) for r in fresh if r.policy != "ask"] == []


@pytest.mark.parametrize("command", [
    "node -e \"require('fs').writeFileSync('package.json', '')\"",
    "node -e \"require('fs').createWriteStream('a.txt').end('x')\"",
    "ruby -e 'File.write(\"README.md\", \"x\")'",
    "ruby -e 'File.open(\"a.txt\", \"w\") { |f| f << 1 }'",
    "php -r 'file_put_contents(\"data.csv\", \"\");'",
    "lua -e 'io.open(\"a.txt\", \"w\"):close()'",
    "deno eval \"Deno.writeTextFileSync('a.txt', '')\"",
])
def test_other_languages_forms_are_read_alike(tmp_path: Path, command: str) -> None:
    ws = make_workspace(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] == "deny", command


@pytest.mark.parametrize("command", [
    "python3 -c \"print(open('a.txt').read())\"", "python3 -c \"open('a.txt', 'a').write('x')\"",
    "perl -e 'open(F, \">>a.txt\")'", "perl -ne 'print' a.txt",
    "python3 -c \"open(f'{x}.csv', 'w')\"",
])
def test_reads_appends_and_paths_not_shown_stay_asked(tmp_path: Path, command: str) -> None:
    """Inline code stays ``ask``: only a literal path opened to be replaced is refused."""
    ws = make_workspace(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] == "ask", command
