"""People's home folders inside the sandbox: hidden whole, not masked by a list.

Each payload is a ``python3 -c`` command (asked, so ``--approval auto`` runs it: only the
sandbox stands in the way) that builds its path at run time, in a real run; the control runs
the same payloads with the sandbox off and shows they read the files there. The home lies in
``/var/tmp``, outside the private ``/tmp`` that would hide it anyway.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.sandbox import confinement, probe
from engine.sandbox import home as home_view
from engine.sandbox.home import (
    HOME_FOLDERS,
    account_homes,
    hidden_homes,
    installation_of,
    shown,
)
from tests.conftest import ROOT, engine_env

MACHINE = ROOT / "machines" / "coding_agent.yaml"
TOKEN = "tok-" + uuid.uuid4().hex
HISTORY = "export DEPLOY_PASSWORD=" + uuid.uuid4().hex
CARGO = "cargo-registry-" + uuid.uuid4().hex
OWNER = "Pat Example"


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    """Confinement tests need bubblewrap (scripts/test installs it): fail, never skip."""
    found = probe()
    assert found.ok, f"bubblewrap must work for the sandbox tests: {found.reason}"


@pytest.fixture
def home() -> Iterator[Path]:
    """A home outside ``/tmp``: a token nobody listed, shell history, a toolchain holding a
    credential, git's identity, and a program on PATH linked into a virtual environment."""
    path = Path(tempfile.mkdtemp(prefix="turnstile-home-", dir="/var/tmp"))
    (path / ".config" / "some-app").mkdir(parents=True)
    (path / ".config" / "some-app" / "token").write_text(TOKEN)
    (path / ".bash_history").write_text(HISTORY + "\n")
    (path / ".cargo" / "bin").mkdir(parents=True)
    (path / ".cargo" / "credentials.toml").write_text(f'[registry]\ntoken = "{CARGO}"\n')
    (path / ".ssh").mkdir()
    (path / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MATERIAL")
    (path / ".gitconfig").write_text(f"[user]\n\tname = {OWNER}\n\temail = pat@example.com\n")
    venv_bin = path / ".local" / "share" / "pipx" / "venvs" / "hello" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "hello").write_text("#!/bin/sh\necho hello from the venv\n")
    (venv_bin / "hello").chmod(0o755)
    (path / ".local" / "bin").mkdir(parents=True)
    (path / ".local" / "bin" / "hello").symlink_to(venv_bin / "hello")
    (path / "proj").mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _read(*parts: str, out: str) -> str:
    """A payload printing a file below ``$HOME`` (its name split, so no command names it)
    or ``HIDDEN`` when it cannot be read."""
    names = ", ".join(repr(p[:2]) + " + " + repr(p[2:]) for p in parts)
    code = (f"import os; p = os.path.join(os.environ['HOME'], {names})\n"
            "try:\n    print(open(p).read().strip())\nexcept OSError:\n    print('HIDDEN')")
    return f"python3 -c {shlex.quote(code)} > {out}"


PAYLOADS = [
    _read(".config", "some-app", "token", out="token.txt"),
    _read(".bash_history", out="history.txt"),
    _read(".cargo", "credentials.toml", out="cargo.txt"),
    _read(".ssh", "id_rsa", out="ssh.txt"),
    "git config --global user.name > identity.txt",
    "hello > hello.txt",
    "python3 -c \"import os; open(os.path.join(os.environ['HOME'], 'planted'), 'w')\"; "
    "echo written > inside.txt",
]


def _run(tmp: Path, home: Path, commands: list[str], policy: str | None = None,
         more_env: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A real run of the coding agent, with ``home`` as ``$HOME`` and its ``~/.local/bin`` on
    PATH, in the workspace ``~/proj``; returns the process and its database."""
    turns = tmp / f"turns-{uuid.uuid4().hex[:6]}.json"
    calls = [{"name": "run_shell", "args": {"command": c}} for c in commands]
    turns.write_text(json.dumps([{"text": "trying", "tool_calls": calls}, {"text": "done"}]))
    db = tmp / f"engine-{uuid.uuid4().hex[:6]}.db"
    cmd = [sys.executable, "-m", "engine", "run", str(MACHINE), "--task", "try", "--model",
           f"scripted:{turns}", "--workspace", str(home / "proj"), "--approval", "auto",
           "--db", str(db)]
    if policy is not None:
        path = tmp / f"policy-{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(policy)
        cmd += ["--policy", str(path)]
    env = engine_env({"HOME": str(home),
                      "PATH": f"{home / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}",
                      **(more_env or {})})
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "deny" not in _decisions(db), proc.stdout  # every payload ran
    return proc, db


def _decisions(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'approval'").fetchall()
    return [json.loads(r[0])["decision"] for r in rows]


def _results(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'tool_call' "
                            "ORDER BY seq").fetchall()
    return [json.loads(r[0]) for r in rows]


def _outputs(workspace: Path) -> dict[str, str]:
    return {p.stem: p.read_text().strip() for p in workspace.glob("*.txt")}


def test_a_command_reads_no_home_file_nobody_listed(tmp_path: Path, home: Path) -> None:
    proc, _ = _run(tmp_path, home, PAYLOADS)
    assert "sandboxed" in proc.stdout
    seen = _outputs(home / "proj")
    assert seen["token"] == "HIDDEN"  # listed nowhere: hidden because it is in a home
    assert seen["history"] == "HIDDEN"
    assert seen["cargo"] == "HIDDEN"  # inside a toolchain that is shown: masked
    assert seen["ssh"] == "HIDDEN"
    assert seen["identity"] == OWNER  # git's identity, from the copy of its configuration
    assert seen["hello"] == "hello from the venv"  # PATH, and the venv it links into
    assert seen["inside"] == "written"  # the workspace below the home stays writable
    assert not (home / "planted").exists()


def test_the_same_payloads_read_the_home_without_the_sandbox(tmp_path: Path,
                                                             home: Path) -> None:
    """The control: unconfined, every payload reads what the test above says is hidden."""
    proc, _ = _run(tmp_path, home, PAYLOADS, policy="sandbox: {mode: off}\n")
    assert "sandbox: off" in proc.stdout
    seen = _outputs(home / "proj")
    assert (seen["token"], seen["history"], seen["ssh"]) == (TOKEN, HISTORY,
                                                              "PRIVATE-KEY-MATERIAL")
    assert CARGO in seen["cargo"]
    assert (home / "planted").exists()


def test_readable_home_shows_it_with_its_credentials_still_masked(tmp_path: Path,
                                                                  home: Path) -> None:
    _run(tmp_path, home, PAYLOADS[:4], policy="sandbox: {readable: ['~']}\n")
    seen = _outputs(home / "proj")
    assert (seen["token"], seen["history"]) == (TOKEN, HISTORY)
    assert (seen["cargo"], seen["ssh"]) == ("HIDDEN", "HIDDEN")


def test_a_missing_home_file_says_the_sandbox_hides_it(tmp_path: Path, home: Path) -> None:
    target = home / ".config" / "some-app" / "token"
    # the path is an argument: a literal one in the code is a read outside the workspace,
    # which the classifier refuses under auto before the sandbox is reached
    _, db = _run(tmp_path, home, [f"python3 -c 'import sys; open(sys.argv[1])' {target}"])
    content = _results(db)[0]["content"]
    assert "No such file or directory" in content, content
    assert f"{target} is in a home folder, which the sandbox hides" in content, content
    assert "sandbox.readable" in content


_READ_ARGUMENT = ("import sys\ntry:\n    print(open(sys.argv[1]).read())\n"
                  "except OSError:\n    print('HIDDEN')")


def _planted_is_hidden(tmp: Path, home: Path, inside: str, prefix: str) -> None:
    """A file planted in a folder below ``inside`` is not read by a sandboxed run, and is
    read by the same command with the sandbox off (the control)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=inside))
    try:
        (folder / "notes").write_text(TOKEN)
        command = f"python3 -c {shlex.quote(_READ_ARGUMENT)} {folder / 'notes'} > planted.txt"
        _run(tmp, home, [command])
        assert _outputs(home / "proj")["planted"] == "HIDDEN"
        (home / "proj" / "planted.txt").unlink()
        _run(tmp, home, [command], policy="sandbox: {mode: off}\n")
        assert _outputs(home / "proj")["planted"] == TOKEN
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_other_peoples_homes_are_hidden_too(tmp_path: Path, home: Path) -> None:
    """A file in ``/home`` or ``/root`` (not this run's ``$HOME``) is as hidden."""
    writable = [h for h in HOME_FOLDERS if os.path.isdir(h) and os.access(h, os.W_OK)]
    if not writable:
        pytest.skip("no home folder here is writable, so no file can be planted in one")
    _planted_is_hidden(tmp_path, home, writable[0], "turnstile-other-")


def test_an_accounts_home_outside_the_home_folders_is_hidden(tmp_path: Path,
                                                             home: Path) -> None:
    """A service's home one can log in as (``postgres``'s ``/var/lib/postgresql`` here): a
    file planted there is read with the sandbox off and not with it on."""
    outside = [h for h in map(os.path.realpath, account_homes()) if os.path.isdir(h)
               and os.access(h, os.W_OK) and h in hidden_homes(None)
               and not any(h == f or h.startswith(f + "/") for f in HOME_FOLDERS)]
    if not outside:
        pytest.skip("no account here has a writable home outside /root, /home and /Users")
    _planted_is_hidden(tmp_path, home, outside[0], "turnstile-account-")


def test_which_folders_are_hidden(tmp_path: Path) -> None:
    """System folders are never stood in for, a home under the private ``/tmp`` is (so it
    exists inside, empty); a home below another hidden one adds nothing."""
    existing = {os.path.realpath(h) for h in HOME_FOLDERS if os.path.isdir(h)}
    existing |= {h for h in map(os.path.realpath, account_homes()) if os.path.isdir(h)
                 and not any(h == x or h.startswith(x + "/") for x in ("/", *existing))}
    assert set(hidden_homes("/")) == existing
    assert set(hidden_homes("/var")) == existing
    assert set(hidden_homes("/tmp")) == existing
    assert set(hidden_homes(str(tmp_path))) == existing | {os.path.realpath(tmp_path)}
    if "/root" in existing:
        assert set(hidden_homes("/root/x")) == existing
    assert installation_of("/h/.local/share/pipx/venvs/black/bin/black") == (
        "/h/.local/share/pipx/venvs/black")
    assert installation_of("/h/tools/run") == "/h/tools"


def test_a_home_under_tmp_is_an_empty_read_only_folder(tmp_path: Path) -> None:
    """``$HOME`` in ``/tmp`` (as in CI) exists inside, empty and read-only, with what is
    shown below it bound back."""
    home = tmp_path / "home"
    (home / ".gitconfig").parent.mkdir()
    (home / ".gitconfig").write_text(f"[user]\n\tname = {OWNER}\n")
    (home / "notes").write_text(TOKEN)
    (tmp_path / "ws").mkdir()
    jail = confinement(None, tmp_path / "ws", env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    script = ("cd ~ && ls -A; git config --global user.name; cat notes; touch x; "
              "echo exit=$?")
    argv = jail.command(["bash", "-c", script], tmp_path / "ws", False)
    out = subprocess.run(argv, env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n") == [".gitconfig", OWNER, "exit=1", ""], out
    assert "Read-only file system" in out.stderr


def test_a_script_on_path_finds_the_interpreter_its_shebang_names(home: Path) -> None:
    """``pip install --user`` writes ``~/.local/bin/tool`` with ``#!`` naming a Python that
    may live in an unlisted folder of the home: that installation is shown, not its
    neighbours."""
    interp = home / "tools" / "interp" / "bin"
    interp.mkdir(parents=True)
    (interp / "sh").symlink_to("/bin/sh")
    (home / "tools" / "notes").write_text(TOKEN)
    tool = home / ".local" / "bin" / "tool"
    tool.write_text(f"#!{interp / 'sh'}\necho tool ran\n")
    tool.chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{home / '.local' / 'bin'}:/usr/bin:/bin"}
    jail = confinement(None, home / "proj", env=env)
    argv = jail.command(["bash", "-c", f"tool; cat {home / 'tools' / 'notes'}"], home / "proj",
                        False)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout == "tool ran\n", out
    assert "No such file or directory" in out.stderr and TOKEN not in out.stdout


def test_git_inside_reads_the_files_its_configuration_names(home: Path) -> None:
    """``core.excludesFile`` and an included file with the identity are read inside as git
    reads them outside; a linter's own settings are seen; the home's other files are not."""
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/.gitignore_global\n"
                                     "[include]\n\tpath = .gitconfig.local\n")
    (home / ".gitconfig.local").write_text(f"[user]\n\tname = {OWNER}\n")
    (home / ".gitignore_global").write_text("*.log\n")
    (home / ".config" / "ruff").mkdir(parents=True)
    (home / ".config" / "ruff" / "ruff.toml").write_text("line-length = 99\n")
    workspace = home / "proj"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "junk.log").write_text("x")
    (workspace / "a.txt").write_text("a")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    jail = confinement(None, workspace, env=env)
    script = ("git config user.name; git status --porcelain; "
              "cat ~/.config/ruff/ruff.toml; cat ~/.config/some-app/token")
    out = subprocess.run(jail.command(["bash", "-c", script], workspace, False), env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == [OWNER, "?? a.txt", "line-length = 99"], out
    assert "No such file or directory" in out.stderr


def test_links_within_path_show_nothing_more(home: Path) -> None:
    """``rustup``'s proxies link to ``rustup`` in the same folder: ``~/.cargo`` (its
    credentials, its configuration) is not shown for them; pipx's link shows its venv."""
    cargo = home / ".cargo" / "bin"
    (cargo / "rustup").write_text("#!/bin/sh\n")
    (cargo / "cargo").symlink_to(cargo / "rustup")
    found = shown(None, [str(cargo), str(home / ".local" / "bin")], [str(home)])
    assert found == [str(home / ".local" / "share" / "pipx" / "venvs" / "hello")]


def test_a_link_into_a_bin_of_the_home_shows_that_bin_not_the_home(home: Path) -> None:
    """``~/bin/x`` is a common place to link from ``~/.local/bin`` or ``/usr/local/bin``:
    the folder above that ``bin`` is the whole home, so only ``~/bin`` is shown."""
    (home / "bin").mkdir()
    (home / "bin" / "x").write_text("#!/bin/sh\n")
    (home / ".local" / "bin" / "x").symlink_to(home / "bin" / "x")
    found = shown(str(home), [str(home / ".local" / "bin")], [str(home)])
    assert str(home / "bin") in found and str(home) not in found, found


def test_the_hidden_homes_are_in_every_command(tmp_path: Path, home: Path) -> None:
    jail = confinement(None, home / "proj", env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    argv = jail.command(["true"], home / "proj", False)
    assert str(home) in jail.homes
    assert ["--tmpfs", str(home)] == argv[argv.index(str(home)) - 1:argv.index(str(home)) + 1]
    assert argv[argv.index("--chdir") - 2:argv.index("--chdir")] == ["--remount-ro",
                                                                      jail.homes[-1]]


def test_sandbox_check_says_what_of_the_homes_a_command_sees(home: Path) -> None:
    env = engine_env({"HOME": str(home),
                      "PATH": f"{home / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    out = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check", "--json"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)["home"]
    assert str(home) in seen["hidden"]
    mine = [p for p in seen["shown"] if p.startswith(f"{home}/")]
    assert mine == sorted(str(home / p) for p in (
        ".cargo/bin", ".gitconfig", ".local/bin", ".local/share/pipx")), mine
    text = subprocess.run([sys.executable, "-m", "engine", "sandbox", "check"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60).stdout
    assert "home folders hidden: " in text and f"{home}/.gitconfig" in text, text


def test_links_a_command_could_plant_show_nothing(home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``bin/`` of the workspace on PATH (a repository's own, or one a command wrote) may
    link anywhere: its links choose nothing; nor does a relative PATH entry (``.`` in the
    home, where the engine was started), and the home itself on PATH shows nothing."""
    monkeypatch.chdir(home)
    workspace = home / "proj"
    (workspace / "bin").mkdir()
    (workspace / "bin" / "tool").symlink_to(home / ".config" / "some-app" / "token")
    (home / ".local" / "bin" / "app").symlink_to(home / ".config" / "some-app" / "token")
    env = {"HOME": str(home), "PATH": f"{workspace / 'bin'}:.:{home}:/usr/bin:/bin"}
    jail = confinement(None, workspace, env=env)
    assert str(home / ".config" / "some-app") not in jail.readable
    assert str(home) not in jail.readable
    # the same link in a PATH folder outside the workspace is the user's own installation
    env["PATH"] = f"{home / '.local' / 'bin'}:/usr/bin:/bin"
    assert str(home / ".config" / "some-app") in confinement(None, workspace, env=env).readable


def test_folders_the_xdg_variables_name_are_hidden_as_the_home_is(tmp_path: Path,
                                                                   home: Path) -> None:
    """``XDG_CONFIG_HOME``, ``XDG_DATA_HOME`` and ``XDG_CACHE_HOME`` outside the home hold
    the user's settings, tokens and sessions as ``~/.config`` does: hidden alike, with git's
    configuration there (a commit keeps its author) and pip's cache shown. The control reads
    the token with the sandbox off."""
    xdg = Path(tempfile.mkdtemp(prefix="turnstile-xdg-", dir="/var/tmp"))
    try:
        (xdg / "cfg" / "some-app").mkdir(parents=True)
        (xdg / "cfg" / "some-app" / "token").write_text(TOKEN)
        (xdg / "cfg" / "git").mkdir()
        (xdg / "cfg" / "git" / "config").write_text("[user]\n\tname = Xdg Person\n")
        (xdg / "data" / "keyrings").mkdir(parents=True)
        (xdg / "data" / "keyrings" / "login").write_text(HISTORY)
        (xdg / "cache" / "some-app").mkdir(parents=True)
        (xdg / "cache" / "some-app" / "session").write_text(CARGO)
        (xdg / "cache" / "pip").mkdir()
        (xdg / "cache" / "pip" / "index").write_text("wheels")
        (home / ".gitconfig").unlink()
        code = ("import sys\nfor p in sys.argv[1:]:\n    try:\n        print(open(p).read())\n"
                "    except OSError:\n        print('HIDDEN')")
        names = [str(xdg / "cfg" / "some-app" / "token"), str(xdg / "data" / "keyrings" / "login"),
                 str(xdg / "cache" / "some-app" / "session"), str(xdg / "cache" / "pip" / "index")]
        commands = [f"python3 -c {shlex.quote(code)} {shlex.join(names)} > xdg.txt",
                    "git config --global user.name > identity.txt"]
        more = {"XDG_CONFIG_HOME": str(xdg / "cfg"), "XDG_DATA_HOME": str(xdg / "data"),
                "XDG_CACHE_HOME": str(xdg / "cache")}
        _run(tmp_path, home, commands, more_env=more)
        seen = _outputs(home / "proj")
        assert seen["xdg"].split() == ["HIDDEN", "HIDDEN", "HIDDEN", "wheels"]
        assert seen["identity"] == "Xdg Person"
        for out in (home / "proj").glob("*.txt"):
            out.unlink()
        _run(tmp_path, home, commands, policy="sandbox: {mode: off}\n", more_env=more)
        assert _outputs(home / "proj")["xdg"].split() == [TOKEN, *HISTORY.split(), CARGO,
                                                          "wheels"]
    finally:
        shutil.rmtree(xdg, ignore_errors=True)


def test_homes_of_accounts_one_can_log_in_as_are_hidden(monkeypatch: pytest.MonkeyPatch,
                                                        home: Path) -> None:
    """A service one can log in as (``postgres`` in ``/var/lib/postgresql``) keeps its data
    in its home: hidden. A daemon's (``nologin``) state folder and a home that is a system or
    shared folder are not."""
    folders = {name: home / name for name in ("service", "daemon", "person")}
    for folder in folders.values():
        folder.mkdir()
    entries = [
        pwd.struct_passwd(("postgres", "x", 120, 120, "", str(folders["service"]), "/bin/bash")),
        pwd.struct_passwd(("sssd", "x", 121, 121, "", str(folders["daemon"]),
                           "/usr/sbin/nologin")),
        pwd.struct_passwd(("pat", "x", 1001, 1001, "", str(folders["person"]), "/bin/false")),
        pwd.struct_passwd(("bin", "x", 2, 2, "", "/bin", "/bin/sh")),
        pwd.struct_passwd(("shared", "x", 300, 300, "", "/var/lib", "/bin/sh")),
    ]
    monkeypatch.setattr(home_view.pwd, "getpwall", lambda: entries)
    hidden = set(hidden_homes(None))  # the fixture's home is no account's: not hidden
    assert {str(folders["service"]), str(folders["person"])} <= hidden
    assert str(folders["daemon"]) not in hidden
    assert not hidden & {"/bin", "/var/lib", "/", "/usr"}
