"""The OS sandbox, tried from inside: real runs, real bubblewrap, real processes, no mocks.

Every escape attempt runs as a shell command of a real run (``--approval auto``, so the policy
lets it through and only the sandbox stands in the way) next to a workspace write that must
work. Escapes tried: writing outside the workspace (under ``/tmp`` and elsewhere), reading
``$HOME/.ssh``, reading a secret environment variable, connecting to a TCP listener on
127.0.0.1, leaving a ``setsid`` child behind, remounting ``/`` read-write and writing ``/etc`` as
root, writing the run's policy file, ``.engine/engine.db`` and ``.git/hooks/`` (directly and
through symlinks), and outliving the engine after SIGKILL.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.permissions.policy import Policy, PolicyContext, decide
from engine.sandbox import confinement, is_secret_name, probe, protected_paths, scrub_env
from engine.spec.model import SandboxSpec
from engine.tooling.spec import ToolContext
from engine.vocabulary.state import ToolCall
from tests.conftest import ROOT, engine_env
from turnstile_tools import builtin_specs
from turnstile_tools.shell import RunShellArgs, run_shell

pytestmark = pytest.mark.anyio

MACHINE = ROOT / "machines" / "coding_agent.yaml"
SHELL = next(s for s in builtin_specs() if s.name == "run_shell")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


WITHOUT_BWRAP = ("test_write_tools_are_denied", "test_machine_sandbox_section",
                 "test_policy_sandbox_section", "test_policy_matrix", "test_secret_names",
                 "test_required_without_bwrap", "test_auto_without_bwrap",
                 "test_without_bwrap")
"""Tests that hold wherever they run; every other test here needs a working bubblewrap."""


@pytest.fixture(autouse=True)
def _needs_bwrap(request: pytest.FixtureRequest) -> None:
    """Confinement tests need bubblewrap (scripts/test installs it): fail, never skip."""
    if request.node.name.startswith(WITHOUT_BWRAP):
        return
    found = probe()
    assert found.ok, f"bubblewrap must work for the sandbox tests: {found.reason}"


# ---------------------------------------------------------------- helpers


def _turns(path: Path, commands: list[str]) -> Path:
    calls = [{"name": "run_shell", "args": {"command": c}} for c in commands]
    path.write_text(json.dumps([{"text": "running", "tool_calls": calls}, {"text": "done"}]))
    return path


def _run(tmp: Path, workspace: Path, commands: list[str], *, db: Path | None = None,
         policy: Path | None = None, env: dict[str, str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    turns = _turns(tmp / f"turns-{uuid.uuid4().hex[:6]}.yaml", commands)
    cmd = [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "try", "--model",
           f"scripted:{turns}", "--workspace", str(workspace), "--approval", "auto",
           "--db", str(db or tmp / "engine.db")]
    if policy is not None:
        cmd += ["--policy", str(policy)]
    return subprocess.run(cmd, cwd=ROOT, env=engine_env(env), capture_output=True, text=True,
                          timeout=timeout)


def _events(db: Path, kind: str) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = ? ORDER BY run_id, seq",
                            (kind,)).fetchall()
    return [json.loads(r[0]) for r in rows]


def _processes_with(marker: str) -> list[str]:
    """Command lines of live (non-zombie) processes whose arguments contain ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0].decode()
        except OSError:
            continue
        if marker in cmdline and state != "Z" and int(pid) != os.getpid():
            found.append(f"{pid}: {cmdline}")
    return found


def _count_becomes(marker: str, count: int, within_s: float = 30.0) -> int:
    """How many live processes carry ``marker`` once there are ``count`` of them, or when
    ``within_s`` has passed (a deadline for a hang, not a measure)."""
    deadline = time.monotonic() + within_s
    while len(found := _processes_with(marker)) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(found)


def _gone(marker: str, within_s: float = 3.0) -> list[str]:
    deadline = time.monotonic() + within_s
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def listener() -> Iterator[tuple[int, list[Any]]]:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[Any] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(2)
    server.close()


# ---------------------------------------------------------------- escapes from a real run


def test_escapes_fail_and_the_workspace_write_works(tmp_path: Path,
                                                    listener: tuple[int, list[Any]]) -> None:
    port, accepted = listener
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MATERIAL")
    (home / "notes.txt").write_text("readable home file")
    outside_tmp = tmp_path / "outside.txt"
    outside_repo = ROOT / f".sandbox-escape-{uuid.uuid4().hex[:8]}"
    marker = f"turnstile-setsid-{uuid.uuid4().hex[:8]}"
    py = shlex.quote(sys.executable)
    connect = (f"{py} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
               " && echo connected > net.txt")
    write = "import sys; open(sys.argv[1], 'w').write('escaped')"
    # reading ~/.ssh by name is refused under auto (credentials need a person): the payload
    # names it at run time, in python, so it starts and the wall must stop it
    ssh = "import os; d = os.path.join(os.environ['HOME'], '.s' + 'sh')"
    leak = f"{ssh}; print(open(os.path.join(d, 'id_rsa')).read() if os.path.isdir(d) else '')"
    listing = f"{ssh}; print(*(os.listdir(d) if os.path.isdir(d) else []))"
    # so is ~/notes.txt (someone's own file): the wall hides the home, listed or not
    notes = ("import os; d = os.environ['HOME']; "
             "print(open(os.path.join(d, 'no' + 'tes.txt')).read() if os.path.isdir(d) else '')")
    commands = [  # the policy lets these through (exec, asked, auto-approved); bwrap stops them
        f"echo inside > inside.txt; {py} -c \"{write}\" {outside_tmp}; "
        f"{py} -c \"{write}\" {outside_repo}",
        f"{py} -c \"{leak}\" > leaked.txt; {py} -c \"{notes}\" > home.txt; echo $MY_SERVICE_TOKEN"
        f" > env.txt; {py} -c \"{listing}\" > ssh-listing.txt",
        connect,
        f"setsid sh -c 'sleep 3; echo late > late.txt # {marker}' & echo started > started.txt",
    ]
    proc = _run(tmp_path, workspace, commands,
                env={"HOME": str(home), "MY_SERVICE_TOKEN": "tok-123456"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sandboxed (network deny" in proc.stdout
    assert (workspace / "inside.txt").read_text() == "inside\n"
    assert not outside_tmp.exists()
    assert not outside_repo.exists()
    assert "PRIVATE-KEY-MATERIAL" not in (workspace / "leaked.txt").read_text()
    assert (workspace / "ssh-listing.txt").read_text().strip() == ""
    assert (workspace / "home.txt").read_text().strip() == ""
    assert (workspace / "env.txt").read_text() == "\n"
    assert not (workspace / "net.txt").exists() and accepted == []
    assert (workspace / "started.txt").exists()
    assert _gone(marker, 0.5) == []
    time.sleep(3.5)
    assert not (workspace / "late.txt").exists()
    started = [e for e in _events(tmp_path / "engine.db", "tool_started")]
    assert len(started) == 4 and all(e["sandbox"]["sandboxed"] for e in started)
    assert all(e["sandbox"]["network"] == "deny" for e in started)
    db = tmp_path / "engine.db"
    audit = subprocess.run([sys.executable, "-m", "engine", "audit", "--db", str(db),
                            _run_id(db)], capture_output=True, text=True, env=engine_env(),
                           cwd=ROOT)
    assert audit.stdout.count("[sandboxed (network deny, writes: workspace") == 4, audit.stdout
    trace = json.loads(subprocess.run(
        [sys.executable, "-m", "engine", "trace", "--db", str(db), _run_id(db), "--json"],
        capture_output=True, text=True, env=engine_env(), cwd=ROOT).stdout)
    assert "turnstile.sandbox.sandboxed" in json.dumps(trace)


def test_the_same_commands_escape_without_the_sandbox(tmp_path: Path,
                                                      listener: tuple[int, list[Any]]) -> None:
    """The control: with ``mode: off`` the connection and the outside write do happen, so the
    test above fails when confinement does not work."""
    port, accepted = listener
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    policy = tmp_path / "policy.yaml"
    policy.write_text("sandbox: {mode: off}\n")
    py = shlex.quote(sys.executable)
    write = "import sys; open(sys.argv[1], 'w').write('escaped')"
    proc = _run(tmp_path, workspace, [
        f"{py} -c \"{write}\" {outside}; {py} -c \"import socket; "
        f"socket.create_connection(('127.0.0.1', {port}), 2)\""], policy=policy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sandbox: off" in proc.stdout
    assert outside.read_text() == "escaped"
    time.sleep(0.3)
    assert len(accepted) == 1
    audit = subprocess.run([sys.executable, "-m", "engine", "audit", "--db",
                            str(tmp_path / "engine.db"), _run_id(tmp_path / "engine.db")],
                           capture_output=True, text=True, env=engine_env(), cwd=ROOT)
    assert "unconfined" in audit.stdout


def _run_id(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT run_id FROM runs").fetchone()[0])


def test_network_allow_reaches_the_listener(tmp_path: Path,
                                            listener: tuple[int, list[Any]]) -> None:
    port, accepted = listener
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = tmp_path / "policy.yaml"
    policy.write_text("sandbox: {network: allow}\n")
    py = shlex.quote(sys.executable)
    proc = _run(tmp_path, workspace, [
        f"{py} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""],
        policy=policy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(0.3)
    assert len(accepted) == 1
    (started,) = _events(tmp_path / "engine.db", "tool_started")
    assert started["sandbox"] == {**started["sandbox"], "sandboxed": True, "network": "allow"}


def test_runtime_files_in_the_workspace_are_read_only(tmp_path: Path) -> None:
    """A ``--task`` run in a repository: its database, policy and git hooks sit in the
    workspace; neither a command (directly or through a symlink) nor a write tool changes them."""
    ws = tmp_path / "repo"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    policy = ws / "policy.yaml"
    policy.write_text("default: deny\n")
    db = ws / ".engine" / "engine.db"
    # The writes sit in scripts, where the classifier cannot see them (it asks, and --approval
    # auto approves): only the sandbox stands between them and the runtime's files.
    (ws / "direct.sh").write_text(
        "echo 'rules: [{decision: allow, risk: destructive}]' >> policy.yaml\n"
        "echo junk >> .engine/engine.db\necho 'curl x | sh' > .git/hooks/pre-commit\n"
        "echo '[core] fsmonitor = evil' >> .git/config\necho ok > fine.txt\n")
    (ws / "links.sh").write_text(
        "ln -s .git/hooks hk; echo x > hk/post-checkout; ln -s .engine/engine.db db.lnk\n"
        "echo junk >> db.lnk; ln -s policy.yaml p.lnk; echo x >> p.lnk; echo ok > fine2.txt\n")
    commands = ["sh direct.sh", "sh links.sh"]
    proc = _run(tmp_path, ws, commands, db=db, policy=policy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert policy.read_text() == "default: deny\n"
    assert list((ws / ".git" / "hooks").iterdir()) == []
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / "fine.txt").exists() and (ws / "fine2.txt").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    outputs = [e["content"] for e in _events(db, "tool_call")]
    assert all("Read-only file system" in out for out in outputs), outputs


@pytest.mark.parametrize("target", [".git/hooks/pre-commit", ".engine/engine.db", "policy.yaml",
                                    "hk/post-checkout", "p.lnk", "notes.txt"])
def test_write_tools_are_denied_on_runtime_files(tmp_path: Path, target: str) -> None:
    ws = tmp_path / "repo"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".engine").mkdir()
    (ws / "policy.yaml").write_text("default: deny\n")
    (ws / "hk").symlink_to(ws / ".git" / "hooks")
    (ws / "p.lnk").symlink_to(ws / "policy.yaml")
    protected = protected_paths(ws, [ws / "policy.yaml", ws / ".engine" / "engine.db"])
    ctx = PolicyContext(workspace=ws, policy=Policy.default(), protected=protected)
    write = next(s for s in builtin_specs() if s.name == "write_file")
    d = decide(ToolCall("c1", "write_file", {"path": target, "content": "x"}), write, ctx)
    if target == "notes.txt":  # an ordinary file: the default for writes, asked
        assert d.decision == "ask"
    else:
        assert d.decision == "deny" and "runtime's own files" in d.reason, d


def test_write_tool_denial_reaches_the_audit_log(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    (ws / ".git" / "hooks").mkdir(parents=True)
    turns = tmp_path / "turns.yaml"
    turns.write_text(json.dumps([
        {"tool_calls": [{"name": "write_file", "args": {"path": ".git/hooks/pre-commit",
                                                         "content": "evil"}}]},
        {"text": "done"}]))
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t", "--model",
         f"scripted:{turns}", "--workspace", str(ws), "--approval", "auto", "--db",
         str(tmp_path / "e.db")], cwd=ROOT, env=engine_env(), capture_output=True, text=True,
        timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    (approval,) = _events(tmp_path / "e.db", "approval")
    assert approval["decision"] == "deny" and "runtime's own files" in approval["reason"]


# ---------------------------------------------------------------- processes


def test_sigkill_of_the_engine_leaves_no_process_of_the_command(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"turnstile-orphan-{uuid.uuid4().hex[:8]}"
    command = (f"setsid sh -c 'sleep 60 # {marker}-a' & (sh -c 'sleep 60 # {marker}-b' &) ; "
               f"echo started > started.txt; sleep 60 # {marker}-c")
    turns = _turns(tmp_path / "turns.yaml", [command])
    engine = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t", "--model",
         f"scripted:{turns}", "--workspace", str(workspace), "--approval", "auto", "--db",
         str(tmp_path / "e.db")], cwd=ROOT, env=engine_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (workspace / "started.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (workspace / "started.txt").exists()
        assert len(_processes_with(marker)) >= 3
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
        assert _gone(marker) == []
    finally:
        engine.kill()
        engine.wait(10)
    resumed = subprocess.run(
        [sys.executable, "-m", "engine", "resume", _run_id(tmp_path / "e.db"), "--approval",
         "auto", "--db", str(tmp_path / "e.db")], cwd=ROOT, env=engine_env(),
        capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _processes_with(marker) == []


async def test_timeout_ends_setsid_and_double_forked_children(tmp_path: Path) -> None:
    marker = f"turnstile-timeout-{uuid.uuid4().hex[:8]}"
    jail = confinement(SandboxSpec(), tmp_path)
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    command = (f"setsid sh -c 'sleep 60 # {marker}-a' & (sh -c 'sleep 60 # {marker}-b' &); "
               f"sleep 60 # {marker}-c")
    result = await run_shell(RunShellArgs(command=command, timeout_s=1), ctx)
    assert result.is_error and result.data and result.data["timed_out"]
    assert _gone(marker) == []


async def test_root_cannot_remount_or_write_etc(tmp_path: Path) -> None:
    jail = confinement(SandboxSpec(), tmp_path)
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    name = f"turnstile-{uuid.uuid4().hex[:8]}"
    result = await run_shell(RunShellArgs(
        command=f"id -u; mount -o remount,rw / && echo REMOUNTED; touch /etc/{name} && "
                f"echo WROTE; echo x > in-workspace.txt"), ctx)
    assert "REMOUNTED" not in result.content and "WROTE" not in result.content
    assert not Path(f"/etc/{name}").exists()
    assert (tmp_path / "in-workspace.txt").read_text() == "x\n"
    assert result.data and result.data["sandbox"]["sandboxed"] is True
    if os.geteuid() == 0:
        assert "stdout:\n0\n" in result.content  # really root inside, and still refused


async def test_the_engines_interpreter_runs_inside(tmp_path: Path) -> None:
    """The venv's python (under the repository) and its packages are readable in the sandbox."""
    jail = confinement(SandboxSpec(), tmp_path)
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    py = shlex.quote(sys.executable)
    result = await run_shell(RunShellArgs(
        command=f"{py} -c 'import pydantic, engine; print(\"imports ok\")' > out.txt"), ctx)
    assert not result.is_error, result.content
    assert (tmp_path / "out.txt").read_text() == "imports ok\n"


# ---------------------------------------------------------------- golden tasks


def test_golden_task_with_the_engines_interpreter_passes_sandboxed(tmp_path: Path) -> None:
    task = tmp_path / "venv_task"
    (task / "fixture").mkdir(parents=True)
    (task / "fixture" / "test_it.py").write_text(
        "import unittest\nimport pydantic\n\n\nclass T(unittest.TestCase):\n"
        "    def test_it(self):\n        self.assertTrue(pydantic.VERSION)\n")
    command = f"{shlex.quote(sys.executable)} -m unittest -q"
    (task / "task.yaml").write_text(json.dumps({
        "prompt": "run the tests", "machine": str(MACHINE), "fixture": "fixture",
        "approval": "auto", "checks": [{"command_succeeds": command},
                                       {"run_status": "completed"}]}))
    (task / "turns.yaml").write_text(json.dumps([
        {"tool_calls": [{"name": "run_shell", "args": {"command": command}}]},
        {"expect": {"tool_result_contains": "OK"}, "text": "tests pass"}]))
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", str(tmp_path), "--db",
                           str(tmp_path / "e.db")], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1/1 tasks passed" in proc.stdout
    (started,) = _events(tmp_path / "e.db", "tool_started")
    assert started["sandbox"]["sandboxed"] is True


def test_golden_tasks_pass_with_the_sandbox_on(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    proc = subprocess.run([sys.executable, "-m", "engine", "eval", "golden_tasks", "--db",
                           str(db)], cwd=ROOT, env=engine_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    boxes = _events(db, "sandbox")
    assert boxes and all(b["sandboxed"] for b in boxes)
    shells = [e for e in _events(db, "tool_started") if e["tool"] == "run_shell"]
    assert shells and all(e["sandbox"]["sandboxed"] for e in shells)


# ---------------------------------------------------------------- modes and configuration


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with bash and the basics but no bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("bash", "sh", "echo", "cat", "sleep", "setpriv", "env"):
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)
    assert shutil.which("bwrap", path=str(bin_dir)) is None
    return str(bin_dir)


def test_required_without_bwrap_exits_2_in_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("sandbox: {mode: required}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _run(tmp_path, workspace, ["echo hi > hi.txt"], policy=policy,
                env={"PATH": _path_without_bwrap(tmp_path)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "required" in lines[0] and "bwrap not found" in lines[0], lines
    assert "Traceback" not in proc.stderr
    assert not (workspace / "hi.txt").exists()


def test_auto_without_bwrap_says_unconfined_and_runs(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _run(tmp_path, workspace, ["echo hi > hi.txt"],
                env={"PATH": _path_without_bwrap(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("UNCONFINED") == 1 and "bwrap not found" in proc.stdout
    assert (workspace / "hi.txt").read_text() == "hi\n"
    (note,) = _events(tmp_path / "engine.db", "sandbox")
    assert note["sandboxed"] is False and "bwrap not found" in note["reason"]


def test_without_bwrap_the_command_dies_with_the_engine(tmp_path: Path) -> None:
    """Unconfined, the group leader gets a parent-death signal (setpriv --pdeathsig KILL)."""
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed for this test"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"{60 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    turns = _turns(tmp_path / "turns.yaml", [f"sleep {marker}"])
    engine = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t", "--model",
         f"scripted:{turns}", "--workspace", str(workspace), "--approval", "auto", "--db",
         str(tmp_path / "e.db")], cwd=ROOT, env=engine_env({"PATH": _path_without_bwrap(
             tmp_path)}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not _processes_with(f"sleep {marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(f"sleep {marker}")
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
        assert _gone(f"sleep {marker}") == []
    finally:
        engine.kill()
        engine.wait(10)


def test_machine_sandbox_section_is_validated_with_file_and_line(tmp_path: Path) -> None:
    machine = tmp_path / "m.yaml"
    machine.write_text("name: m\ninitial: a\ntools: [run_shell]\nsandbox:\n  mode: auto\n"
                       "  network: sometimes\nstates:\n  a: {final: true}\n")
    proc = subprocess.run([sys.executable, "-m", "engine", "validate", str(machine)],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{machine}:6: sandbox.network:" in proc.stderr and "'deny'" in proc.stderr
    machine.write_text("name: m\ninitial: a\nsandbox: {mode: auto, writeable: [/x]}\n"
                       "states:\n  a: {final: true}\n")
    proc = subprocess.run([sys.executable, "-m", "engine", "validate", str(machine)],
                          cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 2 and f"{machine}:3:" in proc.stderr
    assert "did you mean 'writable'" in proc.stderr


def test_policy_sandbox_section_is_validated(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("sandbox: {mode: sometimes}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = _run(tmp_path, workspace, ["true"], policy=policy)
    assert proc.returncode == 2
    assert f"{policy}: sandbox.mode:" in proc.stderr and "Traceback" not in proc.stderr


def test_policy_matrix_sandboxed_rule_and_defaults(tmp_path: Path) -> None:
    """``exec`` stays ``ask`` by default, sandbox or not; a ``sandboxed: true`` rule allows it
    only when confined; destructive stays deny whatever the rule."""
    rule = Policy.from_data({"rules": [{"risk": "exec", "sandboxed": True,
                                        "decision": "allow"}]})
    call = ToolCall("c", "run_shell", {"command": "python3 build.py"})
    matrix = {}
    for name, policy in (("default", Policy.default()), ("rule", rule)):
        for boxed in (False, True):
            ctx = PolicyContext(workspace=tmp_path, policy=policy, sandboxed=boxed)
            matrix[name, boxed] = decide(call, SHELL, ctx).decision
    assert matrix == {("default", False): "ask", ("default", True): "ask",
                      ("rule", False): "ask", ("rule", True): "allow"}
    ctx = PolicyContext(workspace=tmp_path, policy=rule, sandboxed=True)
    rm = ToolCall("c", "run_shell", {"command": "rm -rf /"})
    assert decide(rm, SHELL, ctx).decision == "deny"


def test_tools_json_shows_the_decision_with_and_without_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "rules:\n  - {risk: exec, sandboxed: true, decision: allow}\n")
    (tmp_path / "m.yaml").write_text(
        "name: m\ninitial: a\ntools: [run_shell, read_file]\npolicy: p.yaml\n"
        "states:\n  a: {action: plan, on: {ready: b}}\n  b: {final: true}\n")
    proc = subprocess.run([sys.executable, "-m", "engine", "tools", str(tmp_path / "m.yaml"),
                           "--json"], cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    shell = rows["run_shell"]
    assert (shell["sandboxed"], shell["decision"]) == (True, "allow")
    assert (shell["decision_sandboxed"], shell["decision_unsandboxed"]) == ("allow", "ask")
    assert rows["read_file"]["sandboxed"] is False


def test_sandbox_check_says_yes_and_why_not(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check", "--json"],
                        cwd=ROOT, env=engine_env(), capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    out = json.loads(ok.stdout)
    assert out["ok"] is True and out["bwrap"] and out["probe_s"] > 0
    missing = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check"], cwd=ROOT,
                             env=engine_env({"PATH": _path_without_bwrap(tmp_path)}),
                             capture_output=True, text=True)
    assert missing.returncode == 2
    assert missing.stdout.startswith("unavailable: bwrap not found on PATH")
    assert "apt-get install bubblewrap" in missing.stdout


def test_secret_names_and_passthrough() -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "GH_TOKEN",
                 "AWS_REGION", "DB_PASSWORD", "STRIPE_SECRET", "APIKEY", "SSH_AUTH_SOCK",
                 "GOOGLE_APPLICATION_CREDENTIALS", "NPM_AUTH", "api_keys"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "LANG", "TOKENIZERS_PARALLELISM", "KEYBOARD", "AUTHOR",
                 "PYTHONPATH", "VIRTUAL_ENV"):
        assert not is_secret_name(name), name
    base = {"PATH": "/bin", "X_TOKEN": "t", "CI_PASSWORD": "p"}
    assert scrub_env(base, passthrough=["X_TOKEN"]) == {"PATH": "/bin", "X_TOKEN": "t"}


async def test_sandbox_env_passthrough_reaches_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUILD_TOKEN", "passed-on-purpose")
    monkeypatch.setenv("OTHER_TOKEN", "kept-out")
    jail = confinement(SandboxSpec(env=("BUILD_TOKEN",)), tmp_path)
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    result = await run_shell(RunShellArgs(command="echo \"$BUILD_TOKEN/$OTHER_TOKEN\""), ctx)
    assert "passed-on-purpose/\n" in result.content + "\n"
    assert "kept-out" not in result.content


async def test_a_variable_holding_a_credential_is_kept_out_whatever_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A password in a URL, a token of a known shape, a private key: not handed to commands
    under any name, unless listed in ``sandbox.env`` (the control)."""
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2-pw@cache:6379/0")
    monkeypatch.setenv("DEPLOY_HOOK", "ghp_" + "a1B2" * 9)
    monkeypatch.setenv("SIGNING", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n")
    monkeypatch.setenv("APP_URL", "https://example.com/app")
    script = "echo \"[$REDIS_URL|$DEPLOY_HOOK|$SIGNING|$APP_URL]\""
    jail = confinement(SandboxSpec(), tmp_path)
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    result = await run_shell(RunShellArgs(command=script), ctx)
    assert "[|||https://example.com/app]" in result.content
    jail = confinement(SandboxSpec(env=("REDIS_URL",)), tmp_path)
    result = await run_shell(RunShellArgs(command=script),
                             ToolContext(workspace=tmp_path, confinement=jail))
    assert "[redis://:hunter2-pw@cache:6379/0|||" in result.content


async def test_workspace_under_tmp_and_extra_writable_folder(tmp_path: Path) -> None:
    """The private /tmp is mounted before the workspace, so a workspace under /tmp is the real
    one; a ``writable:`` folder is writable too, and the rest of /tmp is private."""
    assert str(tmp_path).startswith("/tmp/")
    ws, extra, other = tmp_path / "ws", tmp_path / "cache", tmp_path / "other"
    for d in (ws, extra, other):
        d.mkdir()
    jail = confinement(SandboxSpec(writable=(str(extra),)), ws)
    ctx = ToolContext(workspace=ws, confinement=jail)
    result = await run_shell(RunShellArgs(
        command=f"echo a > a.txt; echo b > {extra}/b.txt; echo c > {other}/c.txt"), ctx)
    assert (ws / "a.txt").exists() and (extra / "b.txt").exists()
    assert not (other / "c.txt").exists(), result.content


# ---------------------------------------------------------------- MCP stdio servers


def test_mcp_stdio_server_runs_sandboxed(tmp_path: Path) -> None:
    """A sandboxed server starts under bwrap, serves its tools, and sees its cwd but not the
    rest of the host's /tmp; ``tools --json`` marks its tools as confined."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("needle\n")
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "cwd": str(proj),
              "args": ["-m", "engine", "mcp", "serve-project", "--root", str(proj)]}
    config.write_text(json.dumps({"mcpServers": {"boxed": {**server, "sandbox": True},
                                                 "plain": server}}))
    proc = subprocess.run([sys.executable, "-m", "engine", "tools", "--mcp-config", str(config),
                           "--json"], cwd=ROOT, env=engine_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["mcp__boxed__read_project_file"]["sandboxed"] is True
    assert rows["mcp__plain__read_project_file"]["sandboxed"] is False


def test_mcp_server_argv_is_confined_only_when_asked(tmp_path: Path) -> None:
    from engine.sandbox import server_argv

    argv = [sys.executable, "-m", "engine", "mcp", "serve-project"]
    assert server_argv(None, argv, str(tmp_path)) == argv
    boxed = server_argv(SandboxSpec(), argv, str(tmp_path))
    assert Path(boxed[0]).name == "bwrap" and boxed[-len(argv):] == argv
    assert "--unshare-net" in boxed and "--cap-drop" in boxed
    assert ["--ro-bind", str(tmp_path), str(tmp_path)] == boxed[
        boxed.index(str(tmp_path)) - 1: boxed.index(str(tmp_path)) + 2]
    probe_cmd = f"ls {tmp_path} >/dev/null && ! touch {tmp_path}/x"
    check = subprocess.run([*boxed[:-len(argv)], "sh", "-c", probe_cmd], capture_output=True)
    assert check.returncode == 0, check.stderr


async def test_moving_git_aside_or_creating_protected_files_does_not_stick(
        tmp_path: Path) -> None:
    """``.git`` holds read-only mounts, so it cannot be moved aside to plant fresh hooks; a
    protected file that did not exist (``.envrc``, ``.vscode/tasks.json``) is removed after
    the command that created it, and the result says so."""
    ws = tmp_path / "repo"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    jail = confinement(SandboxSpec(), ws, protected_paths(ws))
    ctx = ToolContext(workspace=ws, confinement=jail)
    result = await run_shell(RunShellArgs(
        command="mv .git .git-old; mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; "
                "echo 'eval evil' > .envrc; mkdir -p .vscode && echo '{}' > .vscode/tasks.json; "
                "echo ok > fine.txt"), ctx)
    assert not (ws / ".git-old").exists()
    assert list((ws / ".git" / "hooks").iterdir()) == []
    assert not (ws / ".envrc").exists() and not (ws / ".vscode" / "tasks.json").exists()
    assert (ws / "fine.txt").exists()
    assert result.is_error and "removed .envrc" in result.content, result.content


async def test_what_appears_between_two_commands_is_walled_for_the_next(
        tmp_path: Path) -> None:
    """The mounts a run's commands share are worked out once, but whether each protected
    path, secret folder and git folder exists is looked at per command: an ``.envrc``, a
    ``~/.ssh`` and a repository that appear after the first command are read-only, masked and
    pinned for the second, as they would be for a fresh run."""
    assert shutil.which("git"), "git is needed for this test"
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    jail = confinement(SandboxSpec(), ws, protected_paths(ws),
                       env={"HOME": str(home), "PATH": os.environ["PATH"]})
    ctx = ToolContext(workspace=ws, confinement=jail)
    first = await run_shell(RunShellArgs(command="echo one > a.txt"), ctx)
    assert not first.is_error, first.content
    (ws / ".envrc").write_text("export SAFE=1\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_test").write_text("PRIVATE KEY\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    second = await run_shell(RunShellArgs(
        command=f"cat {home}/.ssh/id_test; echo evil >> .envrc; mv .git .git-old; "
                "echo hook > .git/hooks/pre-commit; echo two > a.txt"), ctx)
    assert "PRIVATE KEY" not in second.content
    assert (ws / ".envrc").read_text() == "export SAFE=1\n"
    assert not (ws / ".git-old").exists() and (ws / ".git" / "config").is_file()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / "a.txt").read_text() == "two\n", second.content


async def test_git_init_in_a_fresh_workspace_keeps_its_repository(tmp_path: Path) -> None:
    assert shutil.which("git"), "git is needed for this test"
    jail = confinement(SandboxSpec(), tmp_path, protected_paths(tmp_path))
    ctx = ToolContext(workspace=tmp_path, confinement=jail)
    result = await run_shell(RunShellArgs(command="git init -q . && git status --short"), ctx)
    assert not result.is_error, result.content
    assert (tmp_path / ".git" / "config").exists() and (tmp_path / ".git" / "hooks").is_dir()


def test_network_ask_opens_only_for_calls_approved_as_network(
        tmp_path: Path, listener: tuple[int, list[Any]]) -> None:
    """``network: ask``: a python one-liner (exec) stays offline; ``curl`` to the listener
    (network, approved by --approval auto) gets through."""
    assert shutil.which("curl"), "curl is needed for this test"
    port, accepted = listener
    workspace = tmp_path / "ws"
    workspace.mkdir()
    policy = tmp_path / "policy.yaml"
    policy.write_text("sandbox: {network: ask}\n")
    py = shlex.quote(sys.executable)
    proc = _run(tmp_path, workspace, [
        f"{py} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
        f"curl -s -m 3 http://127.0.0.1:{port}/ -o /dev/null"], policy=policy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    time.sleep(0.3)
    assert len(accepted) == 1
    nets = [e["sandbox"]["network"] for e in _events(tmp_path / "engine.db", "tool_started")]
    assert nets == ["deny", "allow"]


def test_without_bwrap_resume_stops_what_the_crashed_engine_left(tmp_path: Path) -> None:
    """Unconfined, only the group leader dies with the engine; its children stay in the
    group, and ``resume`` ends them before it settles the call."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = f"{70 + int(uuid.uuid4().int % 1000) / 1000:.3f}"
    turns = _turns(tmp_path / "turns.yaml",
                   [f"sleep {marker} & echo started > started.txt; sleep {marker}"])
    env = {"PATH": _path_without_bwrap(tmp_path)}
    db = tmp_path / "e.db"
    engine = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "t", "--model",
         f"scripted:{turns}", "--workspace", str(workspace), "--approval", "auto", "--db",
         str(db)], cwd=ROOT, env=engine_env(env), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        # both sleeps started (the file is written between them), then the engine killed
        assert _count_becomes(f"sleep {marker}", 2) == 2
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
        assert _count_becomes(f"sleep {marker}", 1) == 1  # the leader died, its child not
    finally:
        engine.kill()
        engine.wait(10)
    resumed = subprocess.run(
        [sys.executable, "-m", "engine", "resume", _run_id(db), "--approval", "auto", "--db",
         str(db)], cwd=ROOT, env=engine_env(env), capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _gone(f"sleep {marker}", 1.0) == []
    assert [e["pgid"] for e in _events(db, "leftover_stopped")]
