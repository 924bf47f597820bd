"""Path confinement with real files and symlinks in a temporary workspace."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.permissions.paths import Root, check_path_json, judge_path


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A workspace, an outside directory, and a sibling sharing the workspace's prefix."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print(1)\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "outside"
    (outside / "a" / "b").mkdir(parents=True)
    (outside / "secret").write_text("s")
    evil = tmp_path / "ws-evil"
    evil.mkdir()
    (evil / "x").write_text("x")
    return {"ws": ws, "outside": outside, "evil": evil, "tmp": tmp_path}


def test_a_file_inside_is_allowed_to_read_and_write(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    v = judge_path("src/app.py", ws)
    assert (v.inside, v.decision, v.resolved) == (True, "allow", str(ws / "src" / "app.py"))
    assert judge_path("src/app.py", ws, for_write=True).decision == "allow"
    assert judge_path(str(ws / "src" / "app.py"), ws).decision == "allow"


def test_a_not_yet_existing_tail_is_judged_by_its_parent(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    v = judge_path("src/new/deeper/file.py", ws, for_write=True)
    assert (v.inside, v.decision) == (True, "allow")
    assert v.resolved == str(ws / "src" / "new" / "deeper" / "file.py")


def test_reads_outside_ask_and_writes_outside_deny(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    assert judge_path("../outside/secret", ws).decision == "ask"
    assert judge_path("../outside/secret", ws, for_write=True).decision == "deny"
    assert judge_path("/etc/passwd", ws).inside is False
    assert judge_path("/etc/passwd", ws, for_write=True).decision == "deny"


def test_escape_through_a_symlinked_directory(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink(tree["outside"], ws / "link")
    v = judge_path("link/secret", ws)
    assert (v.inside, v.decision) == (False, "ask")
    assert v.resolved == str(tree["outside"] / "secret")
    assert judge_path("link/new-file", ws, for_write=True).decision == "deny"


def test_dangling_symlink_is_judged_by_its_target(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink(tree["outside"] / "does-not-exist", ws / "dangling")
    v = judge_path("dangling", ws, for_write=True)
    assert (v.inside, v.decision) == (False, "deny")
    os.symlink(ws / "missing-inside", ws / "dangling-inside")
    assert judge_path("dangling-inside", ws, for_write=True).decision == "allow"


def test_sibling_directory_sharing_the_prefix_is_outside(tree: dict[str, Path]) -> None:
    ws, evil = tree["ws"], tree["evil"]
    assert str(evil).startswith(str(ws))  # a string-prefix check would call it inside
    for path in (str(evil / "x"), "../ws-evil/x"):
        v = judge_path(path, ws)
        assert (v.inside, v.decision) == (False, "ask"), path
        assert judge_path(path, ws, for_write=True).decision == "deny"


def test_dotdot_after_a_symlink_follows_the_link_first(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink(tree["outside"] / "a" / "b", ws / "deep")
    # textually ws/deep/../src is ws/src, but the shell goes to outside/a/src
    v = judge_path("deep/../src", ws)
    assert v.resolved == str(tree["outside"] / "a" / "src")
    assert (v.inside, v.decision) == (False, "ask")


def test_symlink_into_a_sensitive_file_is_sensitive(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink(ws / ".git" / "config", ws / "harmless.txt")
    v = judge_path("harmless.txt", ws, for_write=True)
    assert (v.inside, v.decision, v.sensitive) == (True, "ask", True)


@pytest.mark.parametrize("name", [".env", ".env.local", ".git/config", "id_rsa",
                                  "keys/id_ed25519.pub", "server.pem", "tls.key",
                                  ".ssh/authorized_keys", "sub/.netrc"])
def test_sensitive_files_ask_to_write_and_may_be_read(tree: dict[str, Path], name: str) -> None:
    ws = tree["ws"]
    w = judge_path(name, ws, for_write=True)
    assert (w.inside, w.decision, w.sensitive) == (True, "ask", True)
    r = judge_path(name, ws)
    assert (r.decision, r.sensitive) == ("allow", True)


def test_ordinary_files_are_not_sensitive(tree: dict[str, Path]) -> None:
    for name in ("src/app.py", "environment.md", "keys.txt", "gitignore"):
        assert judge_path(name, tree["ws"], for_write=True).sensitive is False, name


def test_home_and_variables_expand_from_env(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    env = {"HOME": str(ws), "SRC": "src", "OUT": str(tree["outside"])}
    assert judge_path("~/src/app.py", ws, env=env).decision == "allow"
    assert judge_path("$HOME/src/app.py", ws, env=env).decision == "allow"
    assert judge_path("${HOME}/$SRC/app.py", ws, env=env).resolved == str(ws / "src" / "app.py")
    assert judge_path("$OUT/secret", ws, env=env).decision == "ask"
    assert judge_path("~", ws, env={"HOME": str(tree["outside"])}).inside is False


@pytest.mark.parametrize("path", ["$UNSET/x", "${UNSET}", "~/x", "${HOME:-/}", "$1/x", "~root/x",
                                  "${#HOME}"])
def test_unexpandable_paths_fail_closed(tree: dict[str, Path], path: str) -> None:
    v = judge_path(path, tree["ws"], env={})
    assert (v.inside, v.decision, v.resolved) == (False, "deny", "")
    assert "cannot be expanded" in v.reason


def test_command_substitution_is_never_run(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    marker = tree["tmp"] / "pwned"
    for path in (f"$(touch {marker})", f"`touch {marker}`", f"src/$(touch {marker})"):
        v = judge_path(path, ws, env={})
        assert v.inside is True, path  # taken literally: a strange file name inside
    assert not marker.exists()


@pytest.mark.parametrize("path", ["a\x00b", "src/\nx", "\x1b[31m", "x\x7f", "tab\there"])
def test_control_characters_are_refused(tree: dict[str, Path], path: str) -> None:
    v = judge_path(path, tree["ws"])
    assert (v.inside, v.decision) == (False, "deny")
    assert "control character" in v.reason


def test_control_character_in_a_variable_is_refused(tree: dict[str, Path]) -> None:
    v = judge_path("$X", tree["ws"], env={"X": "a\nb"})
    assert v.decision == "deny"


def test_symlink_loop_is_refused(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink(ws / "loop-b", ws / "loop-a")
    os.symlink(ws / "loop-a", ws / "loop-b")
    v = judge_path("loop-a/x", ws)
    assert v.decision == "deny"


def test_workspace_given_through_a_symlink(tree: dict[str, Path]) -> None:
    alias = tree["tmp"] / "alias"
    os.symlink(tree["ws"], alias)
    assert judge_path("src/app.py", alias).decision == "allow"
    assert judge_path(str(tree["ws"] / "src" / "app.py"), alias).decision == "allow"


def test_extra_roots_read_only_and_writable(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    ro = Root(Path("../outside"))
    rw = Root(tree["evil"], writable=True)
    v = judge_path("../outside/secret", ws, roots=[ro, rw])
    assert (v.inside, v.decision) == (True, "allow")
    w = judge_path("../outside/secret", ws, roots=[ro, rw], for_write=True)
    assert (w.inside, w.decision) == (True, "deny")
    assert "read-only" in w.reason
    assert judge_path(str(tree["evil"] / "x"), ws, roots=[ro, rw], for_write=True).decision \
        == "allow"
    assert judge_path(str(tree["evil"] / ".env"), ws, roots=[rw], for_write=True).decision \
        == "ask"


def test_check_path_json_has_exactly_the_documented_keys(tree: dict[str, Path]) -> None:
    out = check_path_json("src/app.py", tree["ws"])
    assert out == {"inside": True, "resolved": str(tree["ws"] / "src" / "app.py"),
                   "decision": "allow", "reason": "read inside the workspace"}
    assert check_path_json("../outside/secret", tree["ws"], for_write=True)["decision"] == "deny"


# ------------------------------------------------------------ aliases, links, tildes (round 2)


@pytest.mark.parametrize("alias", ["/proc/self/root", "/proc/self/cwd", "/proc/thread-self/root",
                                   "/proc/1/cwd", "/proc/self/fd/3", "/dev/fd/0",
                                   "/proc/self/task/1/root"])
def test_per_process_aliases_are_refused_before_resolving(tree: dict[str, Path],
                                                          alias: str) -> None:
    ws = tree["ws"]
    for path in (alias, f"{alias}/x", f"{alias}{ws}/src/app.py"):
        v = judge_path(path, ws)
        assert (v.decision, v.inside) == ("deny", False), path
        assert "different file in each process" in v.reason


def test_a_symlink_to_a_per_process_alias_is_refused(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.symlink("/proc/self/cwd", ws / "here")
    assert judge_path("here/src/app.py", ws).decision == "deny"
    assert judge_path("here/new.txt", ws, for_write=True).decision == "deny"


def test_a_hard_link_to_a_file_outside_is_not_writable(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.link(tree["outside"] / "secret", ws / "innocent.txt")
    v = judge_path("innocent.txt", ws, for_write=True)
    assert (v.decision, v.inside) == ("deny", False)
    assert "hard links" in v.reason
    assert judge_path("innocent.txt", ws).decision == "allow"  # reading it is harmless


def test_hard_links_all_inside_the_workspace_stay_writable(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    os.link(ws / "src" / "app.py", ws / "copy.py")
    assert judge_path("copy.py", ws, for_write=True).decision == "allow"


def test_hard_links_that_cannot_be_counted_are_refused(tree: dict[str, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.permissions.paths as paths

    ws = tree["ws"]
    os.link(ws / "src" / "app.py", ws / "copy.py")
    monkeypatch.setattr(paths, "MAX_LINK_SCAN", 0)
    v = judge_path("copy.py", ws, for_write=True)
    assert v.decision == "deny" and "could not all be found" in v.reason


def test_tilde_plus_is_the_working_directory_and_tilde_minus_needs_oldpwd(
        tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    v = judge_path("~+/src/app.py", ws, env={"HOME": "/home/a"})
    assert (v.decision, v.resolved) == ("allow", str(ws / "src" / "app.py"))
    assert judge_path("~-/x", ws, env={"HOME": "/home/a"}).decision == "deny"
    v = judge_path("~-/secret", ws, env={"OLDPWD": str(tree["outside"])})
    assert (v.inside, v.decision) == (False, "ask")


@pytest.mark.parametrize("name", [".bashrc", ".profile", ".zshrc", ".bash_profile", ".envrc",
                                  ".bash_aliases", ".config/fish/config.fish",
                                  ".git/hooks/pre-commit", ".ssh/rc"])
def test_shell_startup_files_and_hooks_are_never_written(tree: dict[str, Path], name: str) -> None:
    ws = tree["ws"]
    assert judge_path(name, ws, for_write=True).decision == "deny"
    assert judge_path(name, ws).decision == "allow"


def test_check_path_reads_raw_bytes_from_stdin(tree: dict[str, Path]) -> None:
    ws = tree["ws"]
    root = Path(__file__).resolve().parent.parent
    for raw, decision in ((b"src/a\x00b", "deny"), (b"src/app.py", "allow"),
                          (b"src/\xff\xfe.py", "allow"), (b"/proc/self/root/etc", "deny")):
        proc = subprocess.run([sys.executable, "-m", "engine", "policy", "check-path",
                               "--stdin", "--workspace", str(ws), "--json"], input=raw,
                              capture_output=True, cwd=root, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["decision"] == decision, raw


def test_check_path_needs_exactly_one_of_path_and_stdin(tree: dict[str, Path]) -> None:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "engine", "policy", "check-path",
                           "--workspace", str(tree["ws"])], capture_output=True, text=True,
                          cwd=root, timeout=60)
    assert proc.returncode == 2 and "PATH or --stdin" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_check_path_never_raises_on_random_strings(tree: dict[str, Path]) -> None:
    rng = random.Random(11)
    for _ in range(800):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 30)))
        prefix = rng.choice([b"", b"~", b"~+/", b"~-", b"$HOME/", b"/proc/self/", b"${X}/"])
        out = check_path_json((prefix + raw).decode("utf-8", "surrogateescape"), tree["ws"],
                              env={"HOME": "/home/a"})
        assert out["decision"] in ("allow", "ask", "deny")
        json.dumps(out, ensure_ascii=False).encode("utf-8")
