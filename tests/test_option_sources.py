"""Where a program takes its options, files and code from besides its command line: a
variable (``BZIP2`` holds bzip2's file names, ``PYTHONUSERBASE`` a folder whose ``.pth``
files run), the folder a wrapper starts it in (``env -C src python3 -m calendar`` imports
``src/calendar.py``), the order Go reads flags in (``terraform fmt main.tf -check`` rewrites
main.tf), and a request's file (``rustc --print cfg=PATH``). Each has a control run in real
bash showing the effect, and a near twin that only reads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("work\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _decision(ws: Path, command: str) -> str:
    return str(check_shell_json(command, ws, ENV)["decision"])


def _bash(ws: Path, command: str) -> None:
    env = {**os.environ, "HOME": str(ws.parent)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, env=env, timeout=60,
                   check=False)


def test_bzip2_takes_file_names_from_its_variable(workspace: Path) -> None:
    _bash(workspace, "tar -cjf x.tar.bz2 a.txt")
    command = "BZIP2=x.tar.bz2 tar tf x.tar.bz2"
    assert _decision(workspace, "tar tf x.tar.bz2") == "allow"  # the twin reads
    assert _decision(workspace, command) != "allow"
    _bash(workspace, command)
    assert not (workspace / "x.tar.bz2").exists()  # the control: bzip2 -d removed it


SYSTEM_PYTHON = "/usr/bin/python3"  # a venv's python has no user site


def test_a_user_base_in_the_workspace_runs_its_pth_files(workspace: Path) -> None:
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print('%d.%d' % "
                              "sys.version_info[:2])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    site = workspace / "src" / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "zz.pth").write_text("import os; open('ran', 'w')\n")
    command = f"PYTHONUSERBASE=src {SYSTEM_PYTHON} -m calendar 2026 1"
    assert _decision(workspace, f"{SYSTEM_PYTHON} -m calendar 2026 1") == "allow"
    assert _decision(workspace, command) != "allow"
    _bash(workspace, command)
    assert (workspace / "ran").exists()  # the control: the .pth line ran


@pytest.mark.parametrize("command", [
    "env -C src python3 -m calendar", "env --chdir src python3 -m calendar",
    "timeout 5 env -C src python3 -m calendar",
])
def test_a_module_is_imported_from_where_a_wrapper_starts_python(workspace: Path,
                                                                 command: str) -> None:
    (workspace / "src" / "calendar.py").write_text("open('../ran', 'w')\n")
    assert _decision(workspace, "python3 -m calendar") == "allow"  # nothing shadows at the top
    assert _decision(workspace, command) == "ask"
    _bash(workspace, command)
    assert (workspace / "ran").exists()  # the control: src/calendar.py ran


def test_go_reads_flags_before_the_first_file_only(workspace: Path) -> None:
    (workspace / "main.tf").write_text('variable "x" {\ndefault="a"\n}\n')
    assert _decision(workspace, "terraform fmt -check main.tf") == "allow"
    assert _decision(workspace, "terraform fmt main.tf -check") == "ask"
    assert _decision(workspace, "TF_CLI_ARGS_fmt=. terraform fmt -check") != "allow"


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
def test_go_reads_flags_before_the_first_file_only_control(workspace: Path) -> None:
    main = workspace / "main.tf"
    main.write_text('variable "x" {\ndefault="a"\n}\n')
    _bash(workspace, "terraform fmt main.tf -check")
    assert main.read_text() != 'variable "x" {\ndefault="a"\n}\n'  # the control: rewritten


@pytest.mark.parametrize(("command", "expected"), [
    ("rustc --print sysroot", "allow"), ("rustc --print cfg=a.txt", "deny"),
    ("rustc --print=target-libdir=new.txt", "ask"), ("rustc --print cfg=/tmp/x", "deny"),
])
def test_a_print_request_with_a_path_writes_it(workspace: Path, command: str,
                                               expected: str) -> None:
    subprocess.run(["git", "-C", str(workspace), "add", "a.txt"], check=True)
    assert _decision(workspace, command) == expected


@pytest.mark.parametrize("program", ["rustdoc", "cargo-clippy", "rust-analyzer", "rust-gdb"])
def test_every_rustup_proxy_follows_the_toolchain_file(workspace: Path, program: str) -> None:
    assert _decision(workspace, f"{program} --version") == "allow"
    (workspace / "rust-toolchain.toml").write_text(
        '[toolchain]\npath = "/proc/self/cwd/tools/tc"\n')
    assert _decision(workspace, f"{program} --version") == "ask"


@pytest.mark.parametrize(("command", "expected"), [
    ("python3 -m timeit -s 'import os' 'os.remove(\"a.txt\")'", "deny"),
    ("python3 -m timeit 'sum(range(100))'", "ask"),
    ("python3 -m zipfile -c a.txt src", "deny"), ("python3 -m tarfile -c a.txt src", "deny"),
    ("python3 -m zipfile -c new.zip src", "ask"), ("python3 -m cProfile -o a.txt x.py", "deny"),
])
def test_modules_that_run_shown_code_or_write_a_named_file(workspace: Path, command: str,
                                                          expected: str) -> None:
    subprocess.run(["git", "-C", str(workspace), "add", "a.txt"], check=True)
    assert _decision(workspace, command) == expected
