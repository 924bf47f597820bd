"""Packaging, as a user meets it: the distribution's name and license, its declared
dependencies, the ``turnstile`` command and ``--version``, bare machine names, and a CLI that a
project's own ``tools/`` or ``engine/`` package cannot shadow.

``test_the_wheel_runs_the_demo_outside_the_repository`` builds the real wheel, installs it
into a fresh venv and runs the demo from a folder holding its own ``tools/`` and ``engine/``.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, engine_env
from test_readme_api import assert_examples_ran, without_engine_variables, write_examples

import engine

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DIST = "turnstile-fsm"
FIRST_PARTY = {"engine", "turnstile_tools"}
DISTRIBUTIONS = {
    "yaml": "pyyaml",
    "acp": "agent-client-protocol",
    "opentelemetry.trace": "opentelemetry-api",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
}
"""Import name -> distribution where the two differ beyond ``_`` and ``-``; a namespace
package (``opentelemetry``) is named down to its distribution's part."""
SUPPORT_EXTRAS = ("dev", "bench")
"""Extras for working on Turnstile itself: what ships may not rely on them."""
SHIPPED = ("engine", "tools")
CONSOLE = Path(sys.executable).parent / "turnstile"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_norm(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r).group()) for r in requirements}


@functools.cache
def _imports(folder: str) -> dict[str, str]:
    """Every absolute import under ``folder`` (function bodies too): module -> first file:line."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0
                     and node.module else [])
            for name in names:
                found.setdefault(name, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _distribution(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in DISTRIBUTIONS:
            return DISTRIBUTIONS[".".join(parts[:n])]
    return _norm(parts[0])


def test_every_third_party_import_is_declared() -> None:
    project = PYPROJECT["project"]
    declared = _requirement_names(project["dependencies"])
    for extra, reqs in project["optional-dependencies"].items():
        if extra not in SUPPORT_EXTRAS:
            declared |= _requirement_names(reqs)
    imports = {m: where for folder in SHIPPED for m, where in _imports(folder).items()}
    third_party = {m: where for m, where in imports.items()
                   if m.split(".")[0] not in sys.stdlib_module_names | FIRST_PARTY | {"tools"}}
    assert "jsonschema" in third_party and "yaml" in third_party  # the collection works
    missing = sorted(f"{where}: {m} (distribution {_distribution(m)})"
                     for m, where in third_party.items() if _distribution(m) not in declared)
    assert not missing, ("imported but not declared in pyproject.toml dependencies or a "
                         "runtime extra:\n" + "\n".join(missing))


def test_shipped_code_never_imports_the_generic_name_tools() -> None:
    generic = sorted(f"{where}: import {m}" for folder in SHIPPED
                     for m, where in _imports(folder).items() if m.split(".")[0] == "tools")
    assert not generic, ("`tools` is any project's folder name and is not installed; import "
                         "the built-in tools as turnstile_tools:\n" + "\n".join(generic))


def test_pyproject_lists_every_package_and_maps_the_bundle() -> None:
    config = PYPROJECT["tool"]["setuptools"]
    listed, mapped = set(config["packages"]), config["package-dir"]
    folders = [ROOT / "engine", *(ROOT / "engine").rglob("*")]
    on_disk = {".".join(p.relative_to(ROOT).parts) for p in folders
               if p.is_dir() and any(p.glob("*.py")) and "__pycache__" not in p.parts}
    unlisted = sorted(on_disk - listed)
    assert not unlisted, f"add to [tool.setuptools] packages in pyproject.toml: {unlisted}"
    assert listed - on_disk == set(mapped), "listed packages that do not exist"
    assert all((ROOT / folder).is_dir() for folder in mapped.values())
    assert mapped["turnstile_tools"] == "tools"
    assert mapped["engine._bundled.machines"] == "machines"


def test_the_distribution_name_license_and_version_have_one_source() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == DIST
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "version" in project["dynamic"] and "version" not in project
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "engine.vocabulary.version.__version__"}
    assert project["scripts"] == {"turnstile": "engine.cli.main:main"}


def test_every_install_hint_names_the_distribution() -> None:
    """``pip install turnstile`` would install an unrelated project from PyPI."""
    files = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"),
             *(p for d in SHIPPED for p in (ROOT / d).rglob("*.py"))]
    wrong = re.compile(r"pip install\b[^\n`]*?\bturnstile(?![-\w])")
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text().splitlines(), 1) if wrong.search(line)]
    assert not found, f"the distribution is {DIST}:\n" + "\n".join(found)
    otlp = ROOT / "engine" / "tracing" / "otlp.py"
    assert "pip install 'turnstile-fsm[otel]'" in otlp.read_text()


def test_the_readme_shows_the_command_and_the_version_it_prints() -> None:
    readme = (ROOT / "README.md").read_text()
    for shown in ("turnstile run coding_agent", "turnstile --version",
                  f"prints: turnstile {engine.__version__}", "`turnstile-fsm`"):
        assert shown in readme, shown


# -- the command line, for real ---------------------------------------------------------


def _run(cmd: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in engine_env().items() if k != "PYTHONPATH"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _project_with_own_packages(folder: Path, *names: str) -> Path:
    """A user's project holding its own ``tools/`` (and ``engine/``): importing one leaves a
    mark, and fails, as a package with other contents would."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(
            "import pathlib\n"
            f"pathlib.Path(__file__).parent.parent.joinpath('imported-{name}').touch()\n"
            f"raise ImportError('the project\\'s own {name} package')\n")
    return folder


def _assert_demo_completed(proc: subprocess.CompletedProcess[str], project: Path) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    assert run["status"] == "completed" and run["machine"] == "coding_agent", run
    assert not [line for line in proc.stderr.splitlines() if line.startswith("Traceback")]
    assert sorted(p.name for p in project.glob("imported-*")) == []


def test_version_prints_the_name_and_the_one_version(tmp_path: Path) -> None:
    proc = _run([sys.executable, "-m", "engine", "--version"], tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"turnstile {engine.__version__}\n",
                                                           "")
    assert re.fullmatch(r"\d+\.\d+\.\d+", engine.__version__)


def test_python_m_engine_runs_the_demo_beside_a_projects_own_tools(tmp_path: Path) -> None:
    project = _project_with_own_packages(tmp_path / "project", "tools")
    proc = _run([sys.executable, "-m", "engine", "run", str(ROOT / "machines/coding_agent.yaml"),
                 "--db", str(tmp_path / "engine.db"), "--json"], project)
    _assert_demo_completed(proc, project)


def test_the_console_script_runs_the_demo_beside_its_own_tools_and_engine(tmp_path: Path) -> None:
    assert CONSOLE.exists(), f"{CONSOLE}: missing; reinstall: pip install -e '.[dev]'"
    project = _project_with_own_packages(tmp_path / "project", "tools", "engine")
    version = _run([str(CONSOLE), "--version"], project)
    assert version.stdout == f"turnstile {engine.__version__}\n", version.stderr
    usage = _run([str(CONSOLE)], project)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: turnstile [-h] [--version]")
    proc = _run([str(CONSOLE), "run", "coding_agent", "--db", str(tmp_path / "engine.db"),
                 "--json"], project)
    _assert_demo_completed(proc, project)


def test_a_bare_name_is_a_bundled_machine_and_a_path_wins(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "engine", "validate", "--json"]
    bundled = json.loads(_run([*cmd, "review_changes"], tmp_path).stdout)
    assert bundled[0]["ok"] and bundled[0]["machine"] == "review_changes"
    local = (ROOT / "machines" / "test_fix_loop.yaml").read_text()
    (tmp_path / "review_changes").write_text(local)  # a file by that name: the path wins
    (first,) = json.loads(_run([*cmd, "review_changes"], tmp_path).stdout)
    assert first["machine"] == "test_fix_loop"


def test_the_bundled_layout_names_a_bundled_machine_where_no_such_file_is(
        tmp_path: Path) -> None:
    """``machines/coding_agent.yaml`` as the README writes it, typed in a folder without
    one, is the bundled machine; where the file exists it wins, and a path of that layout
    naming no bundled machine is still a missing file."""
    cmd = [sys.executable, "-m", "engine", "validate", "--json"]
    (bundled,) = json.loads(_run([*cmd, "machines/review_changes.yaml"], tmp_path).stdout)
    assert bundled["ok"] and bundled["machine"] == "review_changes"
    (tmp_path / "machines").mkdir()
    local = (ROOT / "machines" / "test_fix_loop.yaml").read_text()
    (tmp_path / "machines" / "review_changes.yaml").write_text(local)
    (own,) = json.loads(_run([*cmd, "machines/review_changes.yaml"], tmp_path).stdout)
    assert own["machine"] == "test_fix_loop"
    missing = _run([sys.executable, "-m", "engine", "validate", "machines/nope.yaml"],
                   tmp_path)
    assert missing.returncode == 2 and "machines/nope.yaml: no such file" in missing.stderr


@pytest.mark.parametrize("name", ["coding_agnet", "machines"])
def test_an_unknown_bare_name_is_one_line_naming_the_bundled_machines(tmp_path: Path,
                                                                      name: str) -> None:
    proc = _run([sys.executable, "-m", "engine", "run", name, "--db",
                 str(tmp_path / "engine.db")], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line == (f"error: {name}: no such machine file, and not the name of a bundled machine "
                    "(bundled: coding_agent, review_changes, test_fix_loop)")
    assert not (tmp_path / "engine.db").exists()


# -- the wheel ----------------------------------------------------------------------------


def _build_wheel(tmp: Path) -> Path:
    """The wheel, built offline from a copy of what pyproject.toml names (no build isolation:
    the test environment's setuptools, see the dev extra)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    for folder in {"engine", *PYPROJECT["tool"]["setuptools"]["package-dir"].values()}:
        shutil.copytree(ROOT / folder, src / folder)
    stale = src / "golden_tasks" / "demo_fix_test" / "fixture" / "__pycache__"
    stale.mkdir(exist_ok=True)  # as a checkout that ran the fixture's tests has: not shipped
    (stale / "inventory.cpython-311.pyc").write_bytes(b"stale")
    out = tmp / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                           "--no-build-isolation", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    return wheel


def _fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A venv holding only the wheel; its dependencies come, read-only, from this test's
    environment (a ``.pth`` line: a plain folder on ``sys.path``, whose own ``.pth`` files, an
    editable install among them, are not run)."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=60)
    python = venv / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout
    Path(site.strip(), "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel, and a fresh venv holding it (built once for this module)."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(tmp)
    return wheel, _fresh_venv(tmp, wheel)


def test_the_wheel_runs_the_demo_outside_the_repository(tmp_path: Path,
                                                        installed: tuple[Path, Path]) -> None:
    wheel, venv = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel.name == f"turnstile_fsm-{engine.__version__}-py3-none-any.whl"
    assert {"engine/_bundled/machines/coding_agent.yaml",
            "engine/_bundled/golden_tasks/demo_fix_test/fixture/inventory.py",
            "turnstile_tools/files.py", "engine/web/templates/run.html",
            f"turnstile_fsm-{engine.__version__}.dist-info/licenses/LICENSE"} <= set(names)
    assert not [n for n in names if n.startswith(("tools/", "machines/", "golden_tasks/"))
                or "__pycache__" in n]
    meta = zipfile.ZipFile(wheel).read(
        f"turnstile_fsm-{engine.__version__}.dist-info/METADATA").decode().splitlines()
    assert {"Name: turnstile-fsm", f"Version: {engine.__version__}",
            "License-Expression: Apache-2.0", "Requires-Dist: jsonschema>=4.20"} <= set(meta)
    project = _project_with_own_packages(tmp_path / "project", "tools", "engine")
    where = _run([str(venv / "bin" / "python"), "-I", "-c",
                  "import engine, turnstile_tools; print(engine.__file__); "
                  "print(turnstile_tools.__file__)"], project)
    assert all(str(venv) in line for line in where.stdout.splitlines()), where
    turnstile = str(venv / "bin" / "turnstile")
    version = _run([turnstile, "--version"], project)
    assert version.stdout == f"turnstile {engine.__version__}\n", version.stderr
    proc = _run([turnstile, "run", "coding_agent", "--json"], project)
    _assert_demo_completed(proc, project)
    assert (project / ".engine" / "engine.db").is_file()
    (workspace,) = (project / ".engine" / "workspaces").iterdir()
    assert "item.price * item.quantity" in (workspace / "inventory.py").read_text()
    # The README's first command, typed in a folder with no machines/: the bundled machine.
    empty = tmp_path / "empty"
    empty.mkdir()
    readme = _run([str(venv / "bin" / "python"), "-m", "engine", "run",
                   "machines/coding_agent.yaml", "--json"], empty)
    assert json.loads(readme.stdout)["status"] == "completed", readme.stderr
    # A bundled task copied out: its machines/coding_agent.yaml is the bundled machine.
    shutil.copytree(ROOT / "golden_tasks" / "search_call_sites", project / "tasks" / "search")
    evals = _run([turnstile, "eval", "tasks"], project)
    assert "1/1 tasks passed" in evals.stdout, evals.stdout + evals.stderr


def test_the_readme_python_section_runs_with_only_the_wheel(tmp_path: Path,
                                                             installed: tuple[Path, Path]) -> None:
    """The README's Python section as one program, run from an empty folder by the venv that
    holds only the wheel (isolated mode: no checkout on the path), with no ``ENGINE_*``
    variable set and no model configured."""
    _, venv = installed
    script = write_examples(tmp_path / "examples.py")
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run([str(venv / "bin" / "python"), "-I", str(script)], cwd=empty,
                          env=without_engine_variables(), text=True, capture_output=True,
                          timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert_examples_ran(proc.stdout)
    assert sorted(p.name for p in empty.iterdir()) == [".engine", "notes.txt"]
