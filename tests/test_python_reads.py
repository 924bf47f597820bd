"""Python one-liners that only read are read; everything outside the modelled subset stays
asked (``engine/permissions/python_reads.py``).

Each read runs for real under bash in a committed workspace as its control: nothing in the
workspace changes. Each way out of the subset (a write, a shell-out, a module reached through
another, a builtin rebound, a private attribute) stays asked; where python can show the
effect, a control run does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions, work_changed

FILES = {"package.json": '{"name": "app", "version": "1.2.3", "scripts": {"t": "x"}}\n',
         "src/app.py": "def main():\n    pass\n\n\ndef helper():\n    pass\n",
         "a.txt": "one two\nthree one\n"}


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", FILES)


@pytest.mark.parametrize("command", [
    "python3 -c \"import json; print(json.load(open('package.json')).get('version'))\"",
    "python3 -c \"print('rm -rf /')\"",
    "python3 -c 'import ast; print([n.name for n in ast.parse(open(\"src/app.py\").read())"
    ".body if isinstance(n, ast.FunctionDef)])'",
    "cat package.json | python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)))'",
    "python3 -c \"import collections,re; print(collections.Counter(re.findall(r'\\w+', "
    "open('a.txt').read())).most_common(2))\"",
    "python3 -c \"import glob; print(len(glob.glob('src/*.py')))\"",
    "python3 -c \"import sys; sys.stdout.write(open('a.txt').read().upper())\"",
    "python3 -I -c \"import os.path; print(os.path.getsize('a.txt'))\"",
    "python3 -c \"with open('a.txt') as f: print(sum(1 for _ in f))\"",
])
def test_a_one_liner_that_only_reads_is_read(ws: Path, command: str) -> None:
    done = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr  # the control
    assert not work_changed(ws, command)
    assert decisions(ws, command) == ("allow", "allow"), command


@pytest.mark.parametrize(("code", "made"), [
    ("open('out.txt', 'w').write('x')", "out.txt"),
    ("import os.path; o = os; o.replace('a.txt', 'b.txt')", "b.txt"),
    ("import glob; glob.os.rename('a.txt', 'c.txt')", "c.txt"),
    ("f = open; f('d.txt', 'w')", "d.txt"),
    ("print = open; print('e.txt', 'w')", "e.txt"),
    ("import sys; sys.modules['os'].rename('a.txt', 'g.txt')", "g.txt"),
])
def test_a_way_out_of_the_subset_is_asked(ws: Path, code: str, made: str) -> None:
    command = f'python3 -c "{code}"'
    assert decisions(ws, command)[0] == "ask", command
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False)
    assert (ws / made).exists(), "the control: python changed the workspace"


@pytest.mark.parametrize("code", [
    "import os; os.system('id')", "import subprocess; subprocess.run(['id'])",
    "().__class__.__bases__[0].__subclasses__()", "eval('1+1')", "exec('x=1')",
    "__import__('os').system('id')", "getattr(__builtins__, 'open')('x', 'w')",
    "import operator; operator.methodcaller('system', 'id')", "import pathlib",
    "import os.path as p; p.os.system('id')", "open('a.txt', 'r+').read()",
    "import json; json.dump({}, open('a.txt'))", "list(map(open, ['a.txt']))",
    "import glob; print(glob.glob(input()))", "def f(): pass",
])
def test_code_the_subset_does_not_model_stays_asked(ws: Path, code: str) -> None:
    assert decisions(ws, f'python3 -c "{code}"')[0] == "ask", code


def test_a_module_file_in_the_folder_runs_instead_of_the_library_s(ws: Path) -> None:
    """``python -c`` puts its folder first on the import path: ``json.py`` there runs (the
    control prints its mark), unless ``-I`` keeps the folder off the path."""
    command = "python3 -c \"import json; print(json.dumps(1))\""
    (ws / "json.py").write_text("print('PLANTED')\ndef dumps(x):\n    return x\n")
    done = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True,
                          check=False)
    assert "PLANTED" in done.stdout
    assert decisions(ws, command)[0] == "ask"
    assert decisions(ws, command.replace("python3 -c", "python3 -I -c")) == ("allow", "allow")
    (ws / "json.py").unlink()
    planted = "echo 'print(1)' > enum.py; " + command  # a standard module it imports later
    assert decisions(ws, planted)[1] == "deny"


def test_a_secrets_file_printed_by_python_is_asked(ws: Path) -> None:
    (ws / ".env").write_text("API_KEY=k\n")
    assert decisions(ws, "python3 -c \"print(open('.env').read())\"") == ("ask", "deny")
