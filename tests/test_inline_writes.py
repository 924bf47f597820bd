"""Inline interpreter code that reads, writes or replaces a file named by a literal path.

``python3 -c "open('data.csv', 'w').close()"`` empties data.csv; the classifier reads the
path off the code, so replacing a file that holds work with data the command line does not
show is refused, while an append, a new file, a read-modify-write edit, a write of data the
command line shows and a path the code computes stay asked. Each one-liner is also run for
real (where its interpreter is installed) to show what it does to the file.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.effect import Effect
from engine.permissions.inline import inline_code
from engine.permissions.shell import check_shell_json
from engine.permissions.words import Word
from tests.corpus_scoring import ENV

FLAGS = {"python3": "-c", "node": "-e", "perl": "-e", "ruby": "-e", "php": "-r"}
ORIGINAL = "id,name\n1,alice\n"


def _workspace(tmp: Path) -> Path:
    """Not a git repository: every existing file holds work."""
    ws = tmp / "ws"
    ws.mkdir()
    for name in ("data.csv", "notes.txt"):
        (ws / name).write_text(ORIGINAL)
    (ws / "package.json").write_text('{"name": "app"}\n')
    (ws / "a.json").write_text('{"v": 1}\n')
    return ws


def _command(program: str, code: str) -> str:
    return f"{program} {FLAGS[program]} {shlex.quote(code)}"


def _judge(command: str, ws: Path, approval: str = "policy") -> dict[str, object]:
    return check_shell_json(command, ws, ENV, approval=approval)


def _run(program: str, code: str, ws: Path) -> str | None:
    """Runs the one-liner in ``ws``; its output, or None when the interpreter is missing."""
    if shutil.which(program) is None:
        assert program in ("ruby", "php"), f"{program} must be installed for these tests"
        return None
    proc = subprocess.run([program, FLAGS[program], code], cwd=ws, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# (program, code, file, what the file holds after a real run)
EMPTIES = [
    ("python3", "open('data.csv', 'w').close()", "data.csv", ""),
    ("python3", "open('data.csv', mode='wb').close()", "data.csv", ""),
    ("python3", "import io; io.open('data.csv', 'w').close()", "data.csv", ""),
    ("python3", "import pathlib; pathlib.Path('data.csv').write_text('')", "data.csv", ""),
    ("python3", "from pathlib import Path; Path('data.csv').write_bytes(bytes(3))", "data.csv",
     "\0\0\0"),
    ("python3", "from pathlib import Path; Path('data.csv').open('w').close()", "data.csv", ""),
    ("python3", "open('notes.txt', 'w').write('')", "notes.txt", ""),
    ("python3", "with open('data.csv', 'w') as f: f.write(str(6 * 7))", "data.csv", "42"),
    ("node", "require('fs').writeFileSync('package.json', '')", "package.json", ""),
    ("node", "const {writeFileSync} = require('fs'); writeFileSync('data.csv', String(42))",
     "data.csv", "42"),
    ("node", "require('fs').promises.writeFile('data.csv', '')", "data.csv", ""),
    ("node", "require('fs').createWriteStream('data.csv').end()", "data.csv", ""),
    ("node", "require('fs').truncateSync('data.csv')", "data.csv", ""),
    ("node", "const fs = require('fs'); fs.closeSync(fs.openSync('data.csv', 'w'))",
     "data.csv", ""),
    ("perl", "open(my $f, '>', 'data.csv') or die; close $f", "data.csv", ""),
    ("perl", 'open(F, ">data.csv") or die; print F 6 * 7; close F', "data.csv", "42"),
    ("perl", "open my $f, '>', 'data.csv' or die; close $f", "data.csv", ""),
    ("ruby", "File.write('data.csv', '')", "data.csv", ""),
    ("ruby", "File.write 'data.csv', 6 * 7", "data.csv", "42"),
    ("ruby", "File.open('data.csv', 'w') { |f| f.write 6 * 7 }", "data.csv", "42"),
    ("php", "file_put_contents('data.csv', '');", "data.csv", ""),
    ("php", "$f = fopen('data.csv', 'w'); fclose($f);", "data.csv", ""),
]


@pytest.mark.parametrize(("program", "code", "name", "after"), EMPTIES)
def test_emptying_or_replacing_a_file_that_holds_work_is_refused(
        tmp_path: Path, program: str, code: str, name: str, after: str) -> None:
    ws = _workspace(tmp_path)
    verdict = _judge(_command(program, code), ws)
    assert verdict["decision"] == "deny", verdict
    assert f"replaces {name}, an existing file" in str(verdict["reason"]), verdict
    if _run(program, code, ws) is not None:
        assert (ws / name).read_text() == after


# (program, code, file, what the file holds after a real run)
KEPT = [
    # appends, edits in place, new files only
    ("python3", "open('data.csv', 'a').write(str(6 * 7))", "data.csv", ORIGINAL + "42"),
    ("python3", "f = open('data.csv', 'r+'); f.write('ID'); f.close()", "data.csv",
     "ID" + ORIGINAL[2:]),
    ("python3", "open('new.txt', 'x').write(str(6 * 7))", "new.txt", "42"),
    ("node", "require('fs').appendFileSync('data.csv', String(42))", "data.csv",
     ORIGINAL + "42"),
    ("node", "require('fs').writeFileSync('data.csv', String(42), {flag: 'a'})", "data.csv",
     ORIGINAL + "42"),
    ("node", "require('fs').createWriteStream('data.csv', {flags: 'a'}).end(String(42))",
     "data.csv", ORIGINAL + "42"),
    ("perl", "open(my $f, '>>', 'data.csv') or die; print $f 6 * 7", "data.csv",
     ORIGINAL + "42"),
    ("ruby", "File.open('data.csv', 'a') { |f| f.write 6 * 7 }", "data.csv", ORIGINAL + "42"),
    ("ruby", "File.write('data.csv', 6 * 7, mode: 'a')", "data.csv", ORIGINAL + "42"),
    ("php", "file_put_contents('data.csv', 6 * 7, FILE_APPEND);", "data.csv",
     ORIGINAL + "42"),
    # a new file
    ("python3", "open('new.txt', 'w').write(str(6 * 7))", "new.txt", "42"),
    ("node", "require('fs').writeFileSync('new.txt', String(42))", "new.txt", "42"),
    ("perl", "open(my $f, '>', 'new.txt') or die; print $f 6 * 7", "new.txt", "42"),
    # read, then written back: an edit
    ("python3", "d = open('a.json').read(); open('a.json', 'w').write(d.replace('1', '2'))",
     "a.json", '{"v": 2}\n'),
    ("python3", "from pathlib import Path; p = Path('a.json'); "
                "Path('a.json').write_text(Path('a.json').read_text().replace('1', '2'))",
     "a.json", '{"v": 2}\n'),
    ("node", "const fs = require('fs'); fs.writeFileSync('a.json', "
             "fs.readFileSync('a.json', 'utf8').replace('1', '2'))", "a.json", '{"v": 2}\n'),
    ("ruby", "File.write('a.json', File.read('a.json').sub('1', '2'))", "a.json",
     '{"v": 2}\n'),
    ("php", "file_put_contents('a.json', str_replace('1', '2', file_get_contents('a.json')));",
     "a.json", '{"v": 2}\n'),
    # data the command line shows, like echo hello > notes.txt
    ("python3", "open('notes.txt', 'w').write('hello')", "notes.txt", "hello"),
    ("python3", "import pathlib; pathlib.Path('notes.txt').write_text('hello')", "notes.txt",
     "hello"),
    ("node", "require('fs').writeFileSync('notes.txt', 'hello')", "notes.txt", "hello"),
    ("ruby", "File.write('notes.txt', 'hello')", "notes.txt", "hello"),
    # a path the code computes: not read off the code
    ("python3", "open('data' + '.csv', 'w').close()", "data.csv", ""),
    ("python3", "name = 'data.csv'; open(name, 'w').close()", "data.csv", ""),
    ("python3", "ext = 'csv'; open(f'data.{ext}', 'w').close()", "data.csv", ""),
    ("node", "require('fs').writeFileSync(require('path').join('.', 'data.csv'), '')",
     "data.csv", ""),
    ("node", "const ext = 'csv'; require('fs').writeFileSync(`data.${ext}`, '')", "data.csv",
     ""),
    ("perl", "my $n = 'data.csv'; open(my $f, '>', $n) or die; close $f", "data.csv", ""),
    ("perl", "my $ext = 'csv'; open(my $f, '>', \"data.$ext\") or die; close $f", "data.csv",
     ""),
    ("ruby", "ext = 'csv'; File.write(\"data.#{ext}\", '')", "data.csv", ""),
]


@pytest.mark.parametrize(("program", "code", "name", "after"), KEPT)
def test_appends_new_files_edits_shown_data_and_computed_paths_are_asked(
        tmp_path: Path, program: str, code: str, name: str, after: str) -> None:
    ws = _workspace(tmp_path)
    verdict = _judge(_command(program, code), ws)
    assert verdict["decision"] == "ask", verdict
    if _run(program, code, ws) is not None:
        assert (ws / name).read_text() == after


READS = [
    ("python3", "print(open('data.csv').read(), end='')"),
    ("python3", "print(open('data.csv', 'rb').read().decode(), end='')"),
    ("python3", "from pathlib import Path; print(Path('data.csv').read_text(), end='')"),
    ("node", "process.stdout.write(require('fs').readFileSync('data.csv', 'utf8'))"),
    ("perl", "open(my $f, '<', 'data.csv') or die; print <$f>"),
    ("ruby", "print File.read('data.csv')"),
    ("php", "echo file_get_contents('data.csv');"),
]


@pytest.mark.parametrize(("program", "code"), READS)
def test_reads_of_a_workspace_file_are_asked_and_read_it(tmp_path: Path, program: str,
                                                         code: str) -> None:
    ws = _workspace(tmp_path)
    assert _judge(_command(program, code), ws)["decision"] == "ask"
    assert _judge(_command(program, code), ws, "auto")["decision"] == "ask"
    out = _run(program, code, ws)
    if out is not None:
        assert out == ORIGINAL


def test_require_of_a_local_json_file_reads_it(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    code = "console.log(require('./a.json').v)"
    assert _judge(_command("node", code), ws)["decision"] == "ask"
    assert _run("node", code, ws) == "1\n"
    outside = tmp_path / "secret.json"
    outside.write_text('{"v": 7}\n')
    code = f"console.log(require({str(outside)!r}).v)"
    verdict = _judge(_command("node", code), ws)
    assert f"read of {outside} outside the workspace" in str(verdict["reason"]), verdict


@pytest.mark.parametrize(("program", "code"), [
    ("python3", "print(open('/home/agent/.ssh/id_rsa').read())"),
    ("python3", "from pathlib import Path; print(Path('/home/agent/.ssh/id_rsa').read_text())"),
    ("node", "console.log(require('fs').readFileSync('/home/agent/.ssh/id_rsa', 'utf8'))"),
    ("perl", "open(my $f, '<', '/home/agent/.ssh/id_rsa') or die; print <$f>"),
    ("ruby", "puts File.read('/home/agent/.ssh/id_rsa')"),
    ("php", "echo file_get_contents('/home/agent/.ssh/id_rsa');"),
])
def test_reading_a_private_key_is_judged_like_cat(tmp_path: Path, program: str,
                                                  code: str) -> None:
    """``cat ~/.ssh/id_rsa`` is asked of a person, and refused under ``--approval auto``."""
    ws = _workspace(tmp_path)
    cat = "cat ~/.ssh/id_rsa"
    assert [_judge(cat, ws)["decision"], _judge(cat, ws, "auto")["decision"]] == \
        ["ask", "deny"]
    command = _command(program, code)
    assert _judge(command, ws)["decision"] == "ask"
    verdict = _judge(command, ws, "auto")
    assert verdict["decision"] == "deny", verdict
    assert "/home/agent/.ssh/id_rsa" in str(verdict["reason"]), verdict


@pytest.mark.parametrize(("program", "code"), [
    ("python3", "open({path!r}, 'w').close()"),
    ("python3", "open({path!r}, 'a').write(str(1))"),
    ("node", "require('fs').writeFileSync({path!r}, '')"),
    ("perl", "open(my $f, '>', {path!r}) or die; close $f"),
    ("ruby", "File.write({path!r}, '')"),
    ("php", "file_put_contents({path!r}, '');"),
])
def test_a_write_outside_the_workspace_is_refused(tmp_path: Path, program: str,
                                                  code: str) -> None:
    ws = _workspace(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text(ORIGINAL)
    verdict = _judge(_command(program, code.format(path=str(outside))), ws)
    assert verdict["decision"] == "deny", verdict
    assert f"write to {outside} outside the workspace" in str(verdict["reason"]), verdict


def test_in_a_repository_only_a_tracked_file_holds_work(tmp_path: Path) -> None:
    """An untracked file in a git repository (a log, a build output) holds no work."""
    ws = _workspace(tmp_path)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", "data.csv"], check=True)
    tracked = _judge(_command("python3", "open('data.csv', 'w').close()"), ws)
    assert tracked["decision"] == "deny"
    assert "replaces data.csv, a file git tracks" in str(tracked["reason"]), tracked
    untracked = _judge(_command("python3", "open('notes.txt', 'w').close()"), ws)
    assert untracked["decision"] == "ask", untracked


def test_a_call_inside_a_string_is_not_made(tmp_path: Path) -> None:
    """Code the one-liner writes to a file (or prints) is not code it runs."""
    ws = _workspace(tmp_path)
    code = "open('script.py', 'w').write(\"open('data.csv', 'w').close()\")"
    assert _judge(_command("python3", code), ws)["decision"] == "ask"
    assert _run("python3", code, ws) == ""
    assert (ws / "data.csv").read_text() == ORIGINAL


N = 100_000


def _long(unit: str, head: str = "") -> str:
    """``head`` and ``unit`` repeated up to 100 KB."""
    return head + unit * (N // len(unit) + 1)


LONG = {
    "unclosed opens": _long("open("),
    "unclosed strings": _long("open('"),
    "escaped quotes": _long("\\'", "open('a', '"),
    "one long string": _long("a", "open('"),
    "nested brackets": _long("[(", "open("),
    "many arguments": _long("a, ", "open("),
    "chained writes": _long("x = open('a', 'w').write("),
    "node writes": _long("require('fs').writeFileSync('a', `"),
    "ruby writes": _long("File.write 'a', "),
    "perl opens": _long("open(F, '>', "),
    "php writes": _long("file_put_contents('a', ["),
    "path calls": _long("Path('a').open("),
}


@pytest.mark.parametrize("language", ["python", "node", "ruby", "perl", "php"])
@pytest.mark.parametrize("name", sorted(LONG))
def test_long_code_is_judged(language: str, name: str) -> None:
    """Bounded scanning: each one completes (a quadratic scan would take minutes)."""
    code = LONG[name]
    assert len(code) >= N
    e = Effect([Word.of(language)])
    inline_code(e, "-c", language, Word.of(code))
    assert all(len(w.value or "") <= 4096 for w in [*e.reads, *e.writes])


def test_a_replacement_after_100_kb_of_code_is_found(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    code = "x = 'a' + \"b\"\n" * (N // 14) + "open('data.csv', 'w').close()\n"
    assert len(code) > N
    verdict = _judge(_command("python3", code), ws)
    assert verdict["decision"] == "deny", verdict["reason"]
    assert _run("python3", code, ws) == ""
    assert (ws / "data.csv").read_text() == ""


@pytest.mark.parametrize(("command", "emptied", "expected"), [
    ("perl -ni -e '$n++' data.csv", True, "deny"),
    ("perl -i -ne 'next' data.csv notes.txt", True, "deny"),
    ("perl -i -ne 'print if /alice/' data.csv", False, "ask"),  # keeps the lines it prints
    ("perl -i.bak -ne '$n++' data.csv", True, "ask"),  # emptied, but data.csv.bak keeps it
    ("perl -pi -e 's/alice/bob/' data.csv", False, "ask"),  # -p prints every line
])
def test_a_perl_in_place_loop_that_prints_nothing_empties_its_files(
        tmp_path: Path, command: str, emptied: bool, expected: str) -> None:
    ws = _workspace(tmp_path)
    assert check_shell_json(command, ws, ENV)["decision"] == expected
    subprocess.run(["bash", "-c", command], cwd=ws, check=True, capture_output=True)
    assert ((ws / "data.csv").read_text() == "") is emptied
    if ".bak" in command:
        assert (ws / "data.csv.bak").read_text() == ORIGINAL
