"""The sandbox as a wall: what a command may change is allowed by construction, what it may
consume is bounded. Every attempt runs as a ``python3 -c`` payload in a real run under
``--approval auto`` (the policy lets it through: only the sandbox stands in the way), and each
has a control run with the sandbox off that shows the attempt works there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from engine.sandbox import probe
from engine.sandbox.cgroups import enforceable
from tests.conftest import ROOT, engine_env

MACHINE = ROOT / "machines" / "coding_agent.yaml"


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    """Confinement tests need bubblewrap (scripts/test installs it): fail, never skip."""
    found = probe()
    assert found.ok, f"bubblewrap must work for the sandbox tests: {found.reason}"


def _py(code: str) -> str:
    return f"python3 -c {shlex.quote(code)}"


def _run(tmp: Path, workspace: Path, commands: list[str], *, policy: str | None = None,
         db: Path | None = None, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """A real run of the coding agent whose one model turn runs ``commands``."""
    turns = tmp / f"turns-{uuid.uuid4().hex[:6]}.json"
    calls = [{"name": "run_shell", "args": {"command": c}} for c in commands]
    turns.write_text(json.dumps([{"text": "trying", "tool_calls": calls}, {"text": "done"}]))
    db = db or tmp / f"engine-{uuid.uuid4().hex[:6]}.db"
    cmd = [python, "-m", "engine", "run", str(MACHINE), "--task", "try", "--model",
           f"scripted:{turns}", "--workspace", str(workspace), "--approval", "auto",
           "--db", str(db)]
    if policy is not None:
        path = tmp / f"policy-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(policy)
        cmd += ["--policy", str(path)]
    proc = subprocess.run(cmd, cwd=ROOT, env=engine_env(), capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "deny" not in _decisions(db), proc.stdout  # every payload ran
    return proc


def _decisions(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'approval'").fetchall()
    return [json.loads(r[0])["decision"] for r in rows]


OFF = "sandbox: {mode: off}\n"


def _results(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'tool_call' "
                            "ORDER BY seq").fetchall()
    return [json.loads(r[0]) for r in rows]


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for key, value in (("user.email", "t@example.com"), ("user.name", "T")):
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True)
    return path


# ---------------------------------------------------------------- .git


def _commondir_attack(marker: Path) -> str:
    """Copy ``.git`` aside with ``core.fsmonitor`` set, point ``.git/commondir`` at it."""
    return _py(
        "import shutil\n"
        "shutil.copytree('.git', 'evil')\n"
        f"open('evil/config', 'a').write('[core]\\n\\tfsmonitor = touch {marker}\\n')\n"
        "open('.git/commondir', 'w').write('../evil\\n')\n"
        "open('.git/config.worktree', 'w').write('[core]\\n\\tfsmonitor = true\\n')\n")


@pytest.mark.parametrize("vcs", ["read", "write"])
def test_git_commondir_does_not_reach_the_host(tmp_path: Path, vcs: str) -> None:
    ws = _repo(tmp_path / "ws")
    marker = tmp_path / "fsmonitor-ran"
    db = tmp_path / "e.db"
    proc = _run(tmp_path, ws, [_commondir_attack(marker)], policy=f"sandbox: {{vcs: {vcs}}}\n",
                db=db)
    assert not (ws / ".git" / "commondir").exists()
    assert not (ws / ".git" / "config.worktree").exists()
    subprocess.run(["git", "-C", str(ws), "status", "--short"], capture_output=True, check=True)
    assert not marker.exists()
    (result,) = _results(db)
    if vcs == "write":  # the folder is writable: the entries were made, then removed
        assert ".git/commondir" in result["content"], result["content"]
        assert "[sandbox] removed .git/config.worktree, .git/commondir" in proc.stdout
    else:
        assert "Read-only file system" in result["content"], result["content"]


def test_git_commondir_control_without_the_sandbox(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    marker = tmp_path / "fsmonitor-ran"
    _run(tmp_path, ws, [_commondir_attack(marker)], policy=OFF)
    assert (ws / ".git" / "commondir").exists()
    subprocess.run(["git", "-C", str(ws), "status", "--short"], capture_output=True)
    assert marker.exists()


COMMIT = "echo b > b.txt && git add b.txt && git commit -qm second && echo committed"


def test_git_commit_needs_the_opt_in(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    head = (ws / ".git" / "HEAD").read_text()
    before = subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout
    db = tmp_path / "read.db"
    _run(tmp_path, ws, [COMMIT], policy="sandbox: {vcs: read}\n", db=db)
    (result,) = _results(db)
    assert result["is_error"] and "committed" not in result["content"]
    assert subprocess.run(["git", "-C", str(ws), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout == before
    db = tmp_path / "write.db"
    proc = _run(tmp_path, ws, [COMMIT + " && echo x >> .git/config"], db=db)  # opted in
    (result,) = _results(db)
    assert "committed" in result["content"], result["content"]
    branch = head.strip().removeprefix("ref: ")
    with sqlite3.connect(db) as conn:
        changed = {json.loads(r[0])["path"] for r in conn.execute(
            "SELECT payload FROM events WHERE kind = 'file_changed'")}
    assert {f".git/{branch}", ".git/index", ".git/COMMIT_EDITMSG"} <= changed, changed
    assert f"± repository .git/{branch} changed" in proc.stdout, proc.stdout
    log = subprocess.run(["git", "-C", str(ws), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout
    assert log.split() == ["second", "first"]
    assert "x" not in (ws / ".git" / "config").read_text().split()
    assert (ws / ".git" / "HEAD").read_text() == head


# ---------------------------------------------------------------- the engine's installation


def _venv_in(ws: Path) -> tuple[Path, Path]:
    """A venv inside the workspace that runs this engine (a ``.pth`` adds its packages)."""
    venv = ws / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, check=True).stdout.strip())
    ours = [p for p in sys.path if p.endswith("site-packages")]
    (site / "engine-deps.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours) + f"{ROOT}\n")
    return venv, site


@pytest.mark.parametrize("sandboxed", [True, False])
def test_pth_in_the_engines_venv_inside_the_workspace(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    venv, site = _venv_in(ws)
    marker = tmp_path / "pth-ran"
    line = f"import os; open({str(marker)!r}, 'w')\n"
    payload = _py("import glob\n"
                  "site = glob.glob('venv/lib/python*/site-packages')[0]\n"
                  "open(site + '/sitecustomize.py', 'w').write('pass')\n"
                  f"open(site + '/evil.pth', 'w').write({line!r})\n")
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [payload], policy=None if sandboxed else OFF,
         python=str(venv / "bin" / "python"), db=db)
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], check=True)
    if sandboxed:
        assert "Read-only file system" in _results(db)[0]["content"]
        assert not (site / "evil.pth").exists() and not marker.exists()
        assert not (site / "sitecustomize.py").exists()
    else:
        assert (site / "evil.pth").exists() and marker.exists()


# ---------------------------------------------------------------- hard links and .engine


@pytest.mark.parametrize("sandboxed", [True, False])
def test_hard_link_to_an_outside_file(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    os.link(outside, ws / "linked.txt")
    (ws / "own.txt").write_text("own\n")
    db = tmp_path / "e.db"
    # the name is built when the code runs, as a payload hiding from the classifier would (a
    # literal open('linked.txt', 'w') is refused first: the file has a link outside)
    _run(tmp_path, ws, [_py("open('own.txt', 'w').write('changed')\n"
                            "open('linked' + '.txt', 'w').write('changed')\n")],
         policy=None if sandboxed else OFF, db=db)
    assert (ws / "own.txt").read_text() == "changed"
    assert ("Read-only file system" in _results(db)[0]["content"]) is sandboxed
    assert outside.read_text() == ("original\n" if sandboxed else "changed")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_engine_folder_is_not_visible(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    (ws / ".engine").mkdir(parents=True)
    db = ws / ".engine" / "engine.db"
    _run(tmp_path, ws, ["true"], db=db)  # another run's history
    _run(tmp_path, ws, [_py("import os, shutil\n"
                            "print('listing', os.listdir('.engine'))\n"
                            "shutil.copy('.engine/engine.db', 'copy.db')\n")],
         db=db, policy=None if sandboxed else OFF)
    assert (ws / "copy.db").exists() is not sandboxed
    with sqlite3.connect(db) as conn:
        (content,) = conn.execute("SELECT json_extract(payload, '$.content') FROM events "
                                  "WHERE kind = 'tool_call' ORDER BY seq DESC").fetchone()
    assert ("listing []" in content) is sandboxed, content
    assert db.exists()


# ---------------------------------------------------------------- bounded resources

FORKS = _py("import os, sys, time\n"
            "n = 0\n"
            "try:\n"
            "    for _ in range(300):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(3)\n"
            "            os._exit(0)\n"
            "        n += 1\n"
            "except OSError:\n"
            "    pass\n"
            "open('forks.txt', 'w').write(str(n))\n")


def test_fork_loop_stops_at_the_process_limit(tmp_path: Path) -> None:
    if not enforceable()["pids"]:
        pytest.skip("no pids cgroup can be created here: the process limit is not enforced")
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = _run(tmp_path, ws, [FORKS], policy="sandbox: {limits: {processes: 200}}\n")
    assert "not enforced" not in proc.stdout
    assert int((ws / "forks.txt").read_text()) < 200


def test_fork_loop_control_without_the_sandbox(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(tmp_path, ws, [FORKS], policy=OFF)
    assert int((ws / "forks.txt").read_text()) == 300


FILL = _py("import sys\n"
           "path = sys.argv[1]\n"
           "n = 0\n"
           "try:\n"
           "    with open(path, 'wb') as f:\n"
           "        for _ in range(128):\n"
           "            f.write(b'x' * (1 << 20))\n"
           "            f.flush()\n"
           "            n += 1\n"
           "except OSError:\n"
           "    pass\n"
           "open('mb.txt', 'w').write(str(n))\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_tmp_fill_stops_at_the_tmp_limit(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "e.db"
    fill = Path(f"/tmp/turnstile-fill-{uuid.uuid4().hex[:8]}")
    try:
        _run(tmp_path, ws, [f"{FILL} {fill}"], db=db,
             policy="sandbox: {limits: {tmp: 64M}}\n" if sandboxed else OFF)
    finally:
        fill.unlink(missing_ok=True)
    assert (ws / "mb.txt").exists(), _results(db)
    written = int((ws / "mb.txt").read_text())
    assert written <= 64 if sandboxed else written == 128


def test_sandbox_check_reports_every_limit() -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check", "--json"],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    limits = json.loads(proc.stdout)["limits"]
    assert set(limits) == {"processes", "tmp", "memory", "cpu", "file_size"}
    assert all(isinstance(v, bool) for v in limits.values())
    assert limits["processes"] == enforceable()["pids"]
    assert limits["tmp"] and limits["cpu"] and limits["file_size"]


def test_limits_are_validated_in_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("sandbox: {limits: {processes: 2}}\n")
    proc = subprocess.run([sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "x",
                           "--model", "scripted:none", "--policy", str(policy), "--workspace",
                           str(tmp_path), "--db", str(tmp_path / "e.db")], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "sandbox.limits.processes" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    assert shutil.which("bwrap")


FILE_2M = _py("n = 0\n"
              "try:\n"
              "    with open('big.bin', 'wb') as f:\n"
              "        for _ in range(32):\n"
              "            f.write(b'x' * 65536)\n"
              "            f.flush()\n"
              "            n += 1\n"
              "except OSError:\n"
              "    pass\n"
              "open('chunks.txt', 'w').write(str(n))\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_file_size_limit(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(tmp_path, ws, [FILE_2M], policy="sandbox: {limits: {file_size: 1M}}\n" if sandboxed
         else OFF)
    assert int((ws / "chunks.txt").read_text()) == (16 if sandboxed else 32)
    assert (ws / "big.bin").stat().st_size == (1 if sandboxed else 2) * 1024 * 1024


MEMORY = _py("held = []\n"
             "for i in range(16):\n"
             "    held.append(bytearray(16 << 20))\n"
             "    open('held.txt', 'w').write(str(i + 1))\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_memory_limit_ends_the_command(tmp_path: Path, sandboxed: bool) -> None:
    if sandboxed and not enforceable()["memory"]:
        pytest.skip("no memory cgroup can be created here: the memory limit is not enforced")
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [MEMORY], db=db,
         policy="sandbox: {limits: {memory: 128M}}\n" if sandboxed else OFF)
    held = int((ws / "held.txt").read_text())
    assert held < 8 if sandboxed else held == 16
    assert _results(db)[0]["is_error"] is sandboxed


CPU = _py("import time\n"
          "while time.process_time() < 3:\n"
          "    pass\n"
          "open('done.txt', 'w').write('done')\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_cpu_limit_ends_the_command(tmp_path: Path, sandboxed: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [CPU], db=db, policy="sandbox: {limits: {cpu_s: 1}}\n" if sandboxed
         else OFF)
    assert (ws / "done.txt").exists() is not sandboxed
    assert _results(db)[0]["is_error"] is sandboxed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_commands_cgroups_are_removed_with_what_it_left(tmp_path: Path) -> None:
    """A background process that outlives the command's shell is ended and the command's
    cgroups are removed (their memory given back) when the command ends."""
    from engine.sandbox import confinement, protected_paths
    from engine.sandbox.cgroups import hierarchy
    from engine.spec.model import SandboxSpec
    from engine.tooling.spec import ToolContext
    from turnstile_tools.shell import RunShellArgs, run_shell

    held = [c for c, ok in enforceable().items() if ok]
    if not held:
        pytest.skip("no cgroup can be created here: processes and memory are not bounded")
    jail = confinement(SandboxSpec(), tmp_path, protected_paths(tmp_path))
    marker = f"{90 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    result = await run_shell(RunShellArgs(command=f"setsid sleep {marker} & echo started"),
                             ToolContext(workspace=tmp_path, confinement=jail))
    assert "started" in result.content
    mine = f"turnstile-{os.getpid()}-"
    for controller in held:
        where = hierarchy(controller)
        assert where is not None
        assert [d for d in os.listdir(where.parent) if d.startswith(mine)] == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) ==
                f"sleep {marker}"]


LEAVE_A_GROUP = ("import os, signal; from engine.sandbox.cgroups import create; "
                 "g = create({'pids': 100}); print(g.folders[0], flush=True); "
                 "os.kill(os.getpid(), signal.SIGKILL)")
"""An engine killed between making a command's group and removing it."""


def test_groups_left_by_killed_engines_are_swept_and_no_other(tmp_path: Path) -> None:
    """Only an empty group whose engine is gone and that is old enough goes: a live engine's
    group, one with a process in it, and a fresh one stay."""
    from engine.sandbox.cgroups import create, hierarchy, sweep_orphans

    if not enforceable()["pids"]:
        pytest.skip("no pids cgroup can be created here")
    where = hierarchy("pids")
    assert where is not None
    left = [_leave_a_group() for _ in range(2)]
    mine = create({"pids": 100})
    assert mine is not None
    busy = left[1].rsplit("-", 1)[0] + "-999"  # a killed engine's name, a process inside
    os.mkdir(busy)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        Path(busy, "cgroup.procs").write_text(str(sleeper.pid))
        assert sweep_orphans(where.parent, min_age_s=3600) == []  # all too fresh
        removed = sweep_orphans(where.parent, min_age_s=0)
        assert left[0] in removed and left[1] in removed
        assert not os.path.exists(left[0]) and os.path.isdir(busy) and os.path.isdir(
            mine.folders[0])
    finally:
        sleeper.kill()
        sleeper.wait()
        mine.remove()
        with contextlib.suppress(OSError):
            os.rmdir(busy)


def _leave_a_group() -> str:
    proc = subprocess.run([sys.executable, "-c", LEAVE_A_GROUP], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    folder = proc.stdout.strip()
    assert os.path.isdir(folder)
    return folder


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace").strip()
    except OSError:
        return ""


def test_an_unenforced_limit_is_said_on_the_run_start_line(tmp_path: Path) -> None:
    import dataclasses

    from engine.sandbox import confinement

    jail = confinement(None, tmp_path)
    assert ("not enforced" in jail.summary()) is not all(jail.limits.values())
    loose = dataclasses.replace(jail, limits={**jail.limits, "processes": False})
    assert "not enforced here: processes limit" in loose.summary()
    assert loose.describe()["limits"]["processes"] is False


@pytest.mark.anyio
async def test_many_hard_links_make_their_folders_read_only(tmp_path: Path) -> None:
    """Beyond ``MAX_LINK_BINDS`` hard-linked files (a pnpm or uv store), their folders are
    bound read-only rather than each file; the rest of the workspace stays writable."""
    from engine.sandbox import confinement, protected_paths
    from engine.sandbox.survey import MAX_LINK_BINDS
    from engine.spec.model import SandboxSpec
    from engine.tooling.spec import ToolContext
    from turnstile_tools.shell import RunShellArgs, run_shell

    store, ws = tmp_path / "store", tmp_path / "ws"
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    store.mkdir()
    for i in range(MAX_LINK_BINDS + 10):
        (store / f"f{i}.js").write_text("original\n")
        os.link(store / f"f{i}.js", ws / "node_modules" / "pkg" / f"f{i}.js")
    jail = confinement(SandboxSpec(), ws, protected_paths(ws))
    write = _py("import sys\nopen(sys.argv[1], 'w').write('changed')\n")
    ctx = ToolContext(workspace=ws, confinement=jail)
    linked = await run_shell(RunShellArgs(command=f"{write} node_modules/pkg/f3.js"), ctx)
    beside = await run_shell(RunShellArgs(command=f"{write} node_modules/pkg/new.js"), ctx)
    own = await run_shell(RunShellArgs(command=f"{write} own.txt"), ctx)
    assert linked.is_error and beside.is_error and not own.is_error, own.content
    assert (store / "f3.js").read_text() == "original\n"
    assert (ws / "own.txt").read_text() == "changed"


# ---------------------------------------------------------------- the store beside the work


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_store_folder_used_before_stays_masked(tmp_path: Path, sandboxed: bool) -> None:
    """A store in a workspace folder an earlier run used (its ``traces/`` there, another store
    beside, the database's ``-wal`` made once the run writes): a command can neither read the
    history nor change a stored run (its policy, which a resume loads again)."""
    ws = _repo(tmp_path / "ws")
    _run(tmp_path, ws, ["true"], db=ws / "data" / "runs.db")  # another store, its traces/
    db = ws / "data" / "new.db"
    _run(tmp_path, ws, ["true"], db=db)
    probe = _py("import os\n"
                "for name in ('runs.db', 'new.db', 'new.db-wal', 'traces'):\n"
                "    path = os.path.join('data', name)\n"
                "    try:\n"
                "        n = len(os.listdir(path) if os.path.isdir(path) else\n"
                "                open(path, 'rb').read())\n"
                "    except OSError as exc:\n"
                "        n = type(exc).__name__\n"
                "    print('seen', name, n)\n")
    _run(tmp_path, ws, [probe], db=db, policy=None if sandboxed else OFF)
    with sqlite3.connect(db) as conn:
        (content,) = conn.execute("SELECT json_extract(payload, '$.content') FROM events "
                                  "WHERE kind = 'tool_call' ORDER BY seq DESC").fetchone()
    seen = dict(line.split()[1:] for line in content.splitlines() if line.startswith("seen"))
    if sandboxed:  # masked: nothing to read, an empty folder
        assert set(seen) == {"runs.db", "new.db", "new.db-wal", "traces"}, content
        assert all(v in ("0", "PermissionError") for v in seen.values()), content
    else:
        assert int(seen["runs.db"]) > 0 and int(seen["new.db"]) > 0, content
        assert int(seen["traces"]) > 0, content


def test_a_planted_engine_link_is_not_taken_for_the_store(tmp_path: Path) -> None:
    """``.engine`` made a link by a command: the default store would be written (and read)
    wherever it points. The engine refuses it in one line."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".engine").symlink_to(tmp_path / "elsewhere")
    proc = subprocess.run([sys.executable, "-m", "engine", "runs"], cwd=ws, env=engine_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: .engine is a symbolic link"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "elsewhere").exists()


# ---------------------------------------------------------------- what runs later


REBASE_EXEC = ("import os, subprocess\n"
               "editor = 'printf \"break\\\\nexec touch {marker}\\\\n\" >'\n"
               "env = dict(os.environ, GIT_SEQUENCE_EDITOR=editor)\n"
               "subprocess.run(['git', 'rebase', '-i', 'HEAD'], env=env)\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_exec_lines_added_to_a_rebase_todo_are_removed(tmp_path: Path, sandboxed: bool) -> None:
    """A rebase left stopped with ``exec`` lines runs them at the host's ``git rebase
    --continue``: the lines a command added are removed (the rest of the rebase stays)."""
    ws = _repo(tmp_path / "ws")
    marker = tmp_path / "rebase-exec-ran"
    _run(tmp_path, ws, [_py(REBASE_EXEC.format(marker=marker))],
         policy=None if sandboxed else OFF)
    todo = ws / ".git" / "rebase-merge" / "git-rebase-todo"
    assert todo.exists()  # the rebase is still in progress
    assert ("exec" in todo.read_text()) is not sandboxed, todo.read_text()
    subprocess.run(["git", "-C", str(ws), "rebase", "--continue"], capture_output=True,
                   env={**os.environ, "GIT_EDITOR": "true"}, check=False)
    assert marker.exists() is not sandboxed


@pytest.mark.parametrize("sandboxed", [True, False])
def test_start_up_modules_and_binary_standard_packages_are_removed(
        tmp_path: Path, sandboxed: bool) -> None:
    """``sitecustomize.py`` runs at every start of an interpreter whose path holds its folder
    (an editable install's ``.pth`` puts ``src/`` there); a folder named like a standard
    module with a binary ``__init__`` is imported instead of it. Neither shows what it does."""
    ws = _repo(tmp_path / "ws")
    # the names are built when the code runs, as a payload hiding from the classifier would
    payload = _py("import os\n"
                  "os.makedirs('src', exist_ok=True)\n"
                  "open('src/site' + 'customize.py', 'w').write('print(1)')\n"
                  "os.makedirs('js' + 'on', exist_ok=True)\n"
                  "open('js' + 'on/__init__.abi3.so', 'wb').write(b'\\x7fELF')\n"
                  "open('src/app.py', 'w').write('kept')\n")
    proc = _run(tmp_path, ws, [payload], policy=None if sandboxed else OFF)
    assert (ws / "src" / "app.py").read_text() == "kept"
    assert (ws / "src" / "sitecustomize.py").exists() is not sandboxed
    assert (ws / "json" / "__init__.abi3.so").exists() is not sandboxed
    if sandboxed:
        assert "src/sitecustomize.py" in proc.stdout, proc.stdout


def test_a_file_name_that_is_not_utf8_is_recorded_with_the_rest(tmp_path: Path) -> None:
    """A name no database can hold as text (``z\\xff``) stopped the run and hid every change
    of the command from ``files_changed``; it is stored as ``z\\\\xff`` beside the others."""
    ws = _repo(tmp_path / "ws")
    db = tmp_path / "e.db"
    proc = _run(tmp_path, ws, [_py("open('a.txt', 'w').write('changed')\n"
                                   "open(b'z\\xff', 'wb').write(b'')\n")], db=db)
    assert "completed run" in proc.stdout, proc.stdout + proc.stderr
    (run_id,) = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "runs", "--db", str(db), "--json"], cwd=ROOT,
        env=engine_env(), capture_output=True, text=True, check=True).stdout)[0:1]
    shown = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "show", run_id["run_id"], "--db", str(db), "--json"],
        cwd=ROOT, env=engine_env(), capture_output=True, text=True, check=True).stdout)
    assert set(shown["files_changed"]) == {"a.txt", "z\\xff"}, shown["files_changed"]


def _files_changed(db: Path) -> dict[str, Any]:
    (run,) = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "runs", "--db", str(db), "--json"], cwd=ROOT,
        env=engine_env(), capture_output=True, text=True, check=True).stdout)[0:1]
    shown = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "show", run["run_id"], "--db", str(db), "--json"],
        cwd=ROOT, env=engine_env(), capture_output=True, text=True, check=True).stdout)
    return dict(shown["files_changed"])


def test_links_pipes_and_modes_a_command_makes_are_reported(tmp_path: Path) -> None:
    """A new link (to a file outside), a pipe and a file made executable change what runs or
    is read later, though no file's content changed: each is in ``files_changed``."""
    ws = _repo(tmp_path / "ws")
    (ws / "run.sh").write_text("echo hi\n")
    subprocess.run(["git", "-C", str(ws), "add", "run.sh"], check=True)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "script"], check=True)
    db = tmp_path / "e.db"
    _run(tmp_path, ws, [_py("import os\n"
                            "os.symlink('/etc/hostname', 'host')\n"
                            "os.mkfifo('pipe')\n"
                            "os.chmod('run.sh', 0o755)\n")], db=db)
    changed = _files_changed(db)
    assert changed["host"]["created"] is True, changed
    assert changed["pipe"]["created"] is True, changed
    assert set(changed) == {"host", "pipe", "run.sh"}, changed
    with sqlite3.connect(db) as conn:
        kinds = {json.loads(p)["path"]: json.loads(p) for (p,) in conn.execute(
            "SELECT payload FROM events WHERE kind = 'file_changed'")}
    assert kinds["host"]["kind"] == "link" and kinds["pipe"]["kind"] == "fifo", kinds
    assert kinds["run.sh"]["executable"] is True, kinds


STRATEGY = ("import os, subprocess\n"
            "env = dict(os.environ, GIT_SEQUENCE_EDITOR='printf \"break\\\\n\" >')\n"
            "subprocess.run(['git', 'rebase', '-i', 'HEAD'], env=env)\n"
            "open('.git/rebase-merge/strat' + 'egy', 'w').write('evil\\n')\n"
            "head = subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True,\n"
            "                      text=True).stdout.strip()\n"
            "os.makedirs('.git/refs/repl' + 'ace', exist_ok=True)\n"
            "open('.git/refs/repl' + 'ace/' + head, 'w').write(head + '\\n')\n")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_strategy_and_replacement_refs_a_command_adds_are_removed(
        tmp_path: Path, sandboxed: bool) -> None:
    """A stopped rebase's strategy names ``git-merge-NAME``, which the host's ``git rebase
    --continue`` runs from PATH; a replacement ref makes host git show another object in a
    commit's place. Neither a command added stays; a built-in strategy does."""
    ws = _repo(tmp_path / "ws")
    _run(tmp_path, ws, [_py(STRATEGY)], policy=None if sandboxed else OFF)
    assert (ws / ".git" / "rebase-merge").is_dir()  # the rebase itself goes on
    assert (ws / ".git" / "rebase-merge" / "strategy").exists() is not sandboxed
    assert any((ws / ".git" / "refs" / "replace").glob("*")) is not sandboxed


def test_a_store_holding_a_trigger_is_refused(tmp_path: Path) -> None:
    """A database planted where the next run looks, with a trigger that rewrites each new
    run's policy: the engine makes no triggers, so it refuses the file in one line."""
    db = tmp_path / "planted.db"
    subprocess.run([sys.executable, "-m", "engine", "runs", "--db", str(db)], cwd=ROOT,
                   env=engine_env(), capture_output=True, check=True)
    from engine.store.sqlite import SqliteStore
    SqliteStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER t AFTER INSERT ON runs BEGIN "
                     "UPDATE runs SET config = '{}'; END")
    proc = subprocess.run([sys.executable, "-m", "engine", "runs", "--db", str(db)],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 2 and "holds a trigger (t)" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
