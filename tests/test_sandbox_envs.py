"""Python environments in the workspace (a folder holding ``pyvenv.cfg``, found by
``engine.sandbox.survey``): python runs their start-up files (``*.pth`` import lines,
``sitecustomize``) at every start, an editor's included, so a confined command may neither
change the ones there nor add one, unless it was approved as an install. Each attack runs
under bubblewrap, then the environment's python starts on the host; its control runs the same
command unconfined and shows the payload does run."""

from __future__ import annotations

import errno
import glob
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from engine.sandbox import Swept, confinement, survey
from engine.spec.model import SandboxSpec
from tests.test_sandbox_wall import _py, _repo, _results, _run

PAYLOAD = "import os; open({marker!r}, 'w').close()"
ATTACKS = {
    # name: (the environment, made before the run or by the command, and what the command adds)
    "a .pth in an environment there before": (".venv", False, "zz.pth", PAYLOAD),
    "a .pth in an ignored environment deep down": ("tools/.tox/py311", False, "a.pth", PAYLOAD),
    "a .pth in an environment the command makes": ("made-env", True, "b.pth", PAYLOAD),
}


def _venv(path: Path) -> str:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   timeout=120)
    return _site(path)


def _site(env: Path) -> str:
    (site,) = glob.glob(str(env / "lib" / "python*" / "site-packages"))
    return site


def _workspace(tmp: Path) -> Path:
    ws = _repo(tmp / "ws")
    (ws / ".gitignore").write_text(".venv/\n.tox/\n")
    return ws


def _command(ws: Path, name: str, marker: Path) -> str:
    env, made, file, text = ATTACKS[name]
    make = f"{sys.executable} -m venv --without-pip {env} && " if made else ""
    if not made:
        _venv(ws / env)
    write = (f"import glob; site = glob.glob('{env}/lib/python*/site-packages')[0]; "
             f"open(site + '/{file}', 'w').write({text.format(marker=str(marker))!r})")
    return make + _py(write)


def _confined(ws: Path, command: str, risk: str | None = None) -> Swept:
    jail = confinement(SandboxSpec(), ws)
    assert jail.active, jail.reason
    prepared = jail.before(risk)
    subprocess.run(jail.command(["bash", "-c", command], ws, False, prepared), cwd=ws,
                   env=jail.env(os.environ), capture_output=True, check=False, timeout=120)
    return jail.after(prepared)


def _start(ws: Path, env: str) -> None:
    subprocess.run([str(ws / env / "bin" / "python"), "-c", "pass"], capture_output=True,
                   check=False, timeout=60)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_command_cannot_add_a_start_up_file_to_an_environment(tmp_path: Path,
                                                                 name: str) -> None:
    marker = tmp_path / "ran"
    ws = _workspace(tmp_path)
    swept = _confined(ws, _command(ws, name, marker))
    env, _made, file, _text = ATTACKS[name]
    assert swept.removed == [os.path.join(os.path.realpath(_site(ws / env)), file)]
    _start(ws, env)
    assert not marker.exists()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_control_the_same_commands_unconfined_run_the_payload(tmp_path: Path,
                                                              name: str) -> None:
    marker = tmp_path / "ran"
    ws = _workspace(tmp_path)
    subprocess.run(["bash", "-c", _command(ws, name, marker)], cwd=ws, check=True,
                   capture_output=True, timeout=120)
    _start(ws, ATTACKS[name][0])
    assert marker.exists()


@pytest.mark.parametrize("where", ["site-packages", "a folder a .pth adds", "the workspace"])
def test_a_new_sitecustomize_is_removed(tmp_path: Path, where: str) -> None:
    """``sitecustomize`` is imported from the first folder on ``sys.path`` that has one: the
    environment's ``site-packages``, or a folder a ``.pth`` line adds (an editable install's
    ``src/``, or the project itself). Whether it runs there depends on the interpreter (a
    Debian python has its own, found first), so only its removal is checked."""
    ws = _workspace(tmp_path)
    site = Path(_venv(ws / ".venv"))
    (ws / "src").mkdir()
    (site / "_editable.pth").write_text(f"{ws / 'src'}\n{ws}\n")
    folder = {"site-packages": site, "a folder a .pth adds": ws / "src",
              "the workspace": ws}[where]
    swept = _confined(ws, f"echo 'import os' > {folder}/sitecustomize.py")
    assert swept.removed == [os.path.join(os.path.realpath(folder), "sitecustomize.py")]
    assert not (folder / "sitecustomize.py").exists()


def test_a_conda_environment_is_an_environment(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    site = ws / "env" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (ws / "env" / "conda-meta").mkdir()
    swept = _confined(ws, f"echo 'import os' > {site}/x.pth")
    assert swept.removed == [str(site / "x.pth")]


def test_a_start_up_file_there_before_is_read_only(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    site = Path(_venv(ws / ".venv"))
    (site / "keep.pth").write_text("/somewhere\n")
    marker = tmp_path / "ran"
    _confined(ws, f"echo {PAYLOAD.format(marker=str(marker))!r} >> {site}/keep.pth; "
                  f"rm -f {site}/keep.pth")
    assert (site / "keep.pth").read_text() == "/somewhere\n"
    _start(ws, ".venv")
    assert not marker.exists()


@pytest.mark.parametrize(("lines", "kept"), [
    ("{ws}/src\n", True),
    ("# uv\n{ws}/src\n\n../../../../src\n", True),
    ("/tmp/elsewhere\n", False),
    ("{ws}/src\nimport os\n", False),
])
def test_a_pth_that_only_adds_workspace_folders_stays(tmp_path: Path, lines: str,
                                                      kept: bool) -> None:
    """``uv run`` installs the project into the environment as a ``.pth`` naming ``src/``;
    a line python runs, or a folder outside the workspace, is refused."""
    ws = _workspace(tmp_path)
    site = Path(_venv(ws / ".venv"))
    (ws / "src").mkdir()
    text = lines.format(ws=os.path.realpath(ws))
    swept = _confined(ws, _py(f"open('{site}/_project.pth', 'w').write({text!r})"))
    assert (site / "_project.pth").exists() is kept
    assert swept.removed == ([] if kept else [os.path.join(os.path.realpath(site),
                                                             "_project.pth")])


def test_an_install_may_add_and_replace_start_up_files(tmp_path: Path) -> None:
    """``pip install -e .`` writes an editable install's ``.pth`` (and rewrites it when
    reinstalling): under an approval as an install it stays."""
    ws = _workspace(tmp_path)
    site = Path(_venv(ws / ".venv"))
    (site / "__editable__.old.pth").write_text("/old\n")
    swept = _confined(ws, f"echo /src > {site}/__editable__.new.pth && "
                          f"echo /new > {site}/__editable__.old.pth", risk="install")
    assert swept.removed == []
    assert (site / "__editable__.new.pth").read_text() == "/src\n"
    assert (site / "__editable__.old.pth").read_text() == "/new\n"


def test_a_run_reports_the_start_up_file_it_removed(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _venv(ws / ".venv")
    marker = tmp_path / "ran"
    db = tmp_path / "e.db"
    write = _py("import glob; site = glob.glob('.venv/lib/python*/site-packages')[0]; "
                f"open(site + '/zz.pth', 'w').write({PAYLOAD.format(marker=str(marker))!r}); "
                "print('written')")
    _run(tmp_path, ws, [write], db=db)
    content = _results(db)[0]["content"]
    assert "written" in content, content
    assert "(removed .venv/lib/python" in content and "zz.pth: " in content, content
    _start(ws, ".venv")
    assert not marker.exists()


# -- bytecode ------------------------------------------------------------------------------

POISON = (
    "import importlib._bootstrap_external as b, os, sys\n"
    "st = os.stat('app.py')\n"
    "code = compile({payload!r}, os.path.abspath('app.py'), 'exec')\n"
    "os.makedirs('__pycache__', exist_ok=True)\n"
    "path = f'__pycache__/app.{{sys.implementation.cache_tag}}.pyc'\n"
    "open(path, 'wb').write(b._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))\n")
"""Bytecode for ``app.py`` that python takes for the source's (same modification time and
size recorded) but that runs something else."""


def _module(ws: Path) -> None:
    (ws / "app.py").write_text("VALUE = 1\n")


def _poison(marker: Path) -> str:
    return f"{sys.executable} -c " + shlex.quote(POISON.format(
        payload=f"open({str(marker)!r}, 'w').close()\nVALUE = 1\n"))


def _import_on_host(ws: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    subprocess.run([sys.executable, "-c", "import app"], cwd=ws, capture_output=True,
                   check=False, timeout=60, env={**env, "PYTHONPATH": str(ws)})


@pytest.mark.parametrize("first", ["no bytecode yet", "bytecode there before"])
def test_a_command_cannot_leave_bytecode_that_runs_in_place_of_the_source(
        tmp_path: Path, first: str) -> None:
    ws = _workspace(tmp_path)
    _module(ws)
    if first == "bytecode there before":  # written in place: only the file's write is seen
        _import_on_host(ws)
        assert list((ws / "__pycache__").glob("app.*.pyc"))
    marker = tmp_path / "ran"
    swept = _confined(ws, _poison(marker))
    (pyc,) = [p for p in swept.removed if p.endswith(".pyc")]
    assert pyc.startswith(os.path.realpath(ws / "__pycache__"))
    _import_on_host(ws)
    assert not marker.exists()


def test_control_poisoned_bytecode_runs_unconfined(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _module(ws)
    marker = tmp_path / "ran"
    subprocess.run(["bash", "-c", _poison(marker)], cwd=ws, check=True, capture_output=True,
                   timeout=60)
    _import_on_host(ws)
    assert marker.exists()


def test_commands_python_keeps_its_bytecode_outside_the_workspace(tmp_path: Path) -> None:
    """Python run by a command writes its bytecode to a folder of the run's outside the
    workspace (``PYTHONPYCACHEPREFIX``): nothing is removed, and the next command reuses
    it."""
    ws = _workspace(tmp_path)
    _module(ws)
    jail = confinement(SandboxSpec(), ws)
    writes = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(2):
        prepared = jail.before()
        subprocess.run(jail.command(["bash", "-c", f"{sys.executable} -c 'import app'"], ws,
                                    False, prepared), cwd=ws, env=jail.env(writes),
                       check=True, capture_output=True, timeout=60)
        assert jail.after(prepared).removed == []
    assert not (ws / "__pycache__").exists()
    assert jail.survey is not None
    assert list(Path(jail.survey.pycache).rglob("app.*.pyc"))


def test_an_install_may_write_bytecode(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _module(ws)
    write = shlex.quote("import py_compile, sys\n"
                   "py_compile.compile('app.py', "
                   "cfile=f'__pycache__/app.{sys.implementation.cache_tag}.pyc')\n")
    swept = _confined(ws, f"{sys.executable} -c {write}", risk="install")
    assert swept.removed == [] and list((ws / "__pycache__").glob("app.*.pyc"))


@pytest.mark.parametrize(("name", "removed"), [
    ("json.cpython-311-x86_64-linux-gnu.so", True), ("subprocess.abi3.so", True),
    ("_speedups.cpython-311-x86_64-linux-gnu.so", False), ("libfoo.so", False),
])
def test_an_extension_module_named_like_the_standard_librarys_is_removed(
        tmp_path: Path, name: str, removed: bool) -> None:
    """From the folder of the script run, ``json.cpython-311-...so`` is imported instead of
    the standard library's ``json`` (not loaded here: only its removal is checked); a
    project's own extension modules are left alone (builds make them)."""
    ws = _workspace(tmp_path)
    (ws / "tools").mkdir()
    swept = _confined(ws, f"printf 'ELF' > tools/{name}")
    assert (swept.removed == [os.path.join(os.path.realpath(ws), "tools", name)]) is removed
    assert (ws / "tools" / name).exists() is not removed


def test_bytecode_is_found_by_the_walk_when_there_is_no_inotify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(survey.inotify, "Inotify", refused)
    ws = _workspace(tmp_path)
    _module(ws)
    marker = tmp_path / "ran"
    swept = _confined(ws, _poison(marker))
    assert [p for p in swept.removed if p.endswith(".pyc")]
    _import_on_host(ws)
    assert not marker.exists()
