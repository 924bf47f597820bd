"""The shell classifier over the command corpus, plus symlinks, environments and result shape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.permissions.shell import ShellVerdict, check_shell_json, classify_command
from tests.shell_corpus import CORPUS

ENV = {"HOME": "/home/agent", "PATH": "/usr/bin:/bin"}
READONLY = [c for c in CORPUS if c[3] == "readonly"]
DESTRUCTIVE = [c for c in CORPUS if c[3] == "destructive"]


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    for name in ("README.md", "src/app.py", "data.csv", "package.json"):
        (ws / name).write_text("x\n")
    return ws


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("corpus"))


@pytest.mark.parametrize(("command", "decision", "risk", "tag"), CORPUS,
                         ids=[f"{i}-{c[3]}" for i, c in enumerate(CORPUS)])
def test_corpus(workspace: Path, command: str, decision: str, risk: str, tag: str) -> None:
    v = classify_command(command, workspace, ENV)
    assert v.decision == decision, (command, v.reason, v.commands)
    if risk:
        assert v.risk == risk, (command, v.reason)


def test_corpus_is_large_and_covers_every_construct() -> None:
    assert len(CORPUS) >= 200
    text = "\n".join(c[0] for c in CORPUS)
    for construct in ("|", ";", "&&", "||", " & ", "\n", "(", "$(", "`", "<(", ">(", ">>", ">|",
                      "&>", "<<EOF", "<<<", "bash -c", "sh -c", "eval", "xargs", "-exec",
                      "-execdir", "-ok", "-delete", "-fprint", "env ", "command ", "builtin ",
                      "exec ", "nice ", "nohup ", "timeout ", "stdbuf ", "time ", "sudo ",
                      "doas ", "chroot ", "ionice ", "setsid ", "git -c", "core.pager",
                      "core.fsmonitor", "alias.", "--output", "sed -i", "'w ", "'e ",
                      "system(", "sort -o", "--to-command", "--pre", "less ", "vim ",
                      "python -c", "node -e", "perl -e", "pip install", "npm install",
                      "apt-get install", "curl", "wget", "ssh ", "scp ", "nc ", "rm -rf",
                      "mkfs", "dd ", "chmod -R 777 /", "shutdown", "git push --force",
                      "git reset --hard", "git clean -fdx", "$'\\x72m'", "${IFS}",
                      "base64 -d | bash", "| sh", "| bash", "$X", "# ;"):
        assert construct in text, construct


def test_over_blocking_of_read_only_commands_is_under_five_percent(workspace: Path) -> None:
    assert len(READONLY) >= 100
    blocked = [c for c, *_ in READONLY if classify_command(c, workspace, ENV).decision != "allow"]
    rate = len(blocked) / len(READONLY)
    assert rate < 0.05, blocked


def test_no_destructive_command_is_allowed(workspace: Path) -> None:
    assert len(DESTRUCTIVE) >= 60
    for command, *_ in CORPUS:
        v = classify_command(command, workspace, ENV)
        if v.risk == "destructive":
            assert v.decision == "deny", command
    for command, *_ in DESTRUCTIVE:
        assert classify_command(command, workspace, ENV).decision == "deny", command


def test_a_comment_is_not_a_command(workspace: Path) -> None:
    v = classify_command("echo hi # ; rm -rf /", workspace, ENV)
    assert [c["argv"] for c in v.commands] == [["echo", "hi"]]


def test_every_simple_command_is_listed_with_its_risk(workspace: Path) -> None:
    v = classify_command("git status && timeout 5 rm -rf build | cat", workspace, ENV)
    assert [(c["argv"], c["risk"], c["decision"]) for c in v.commands] == [
        (["git", "status"], "read", "allow"),
        (["rm", "-rf", "build"], "destructive", "deny"),
        (["cat"], "read", "allow"),
    ]
    assert v.commands[1]["wrappers"] == ["timeout"]
    assert v.commands[1]["capability"] == "run_shell:rm"
    assert all(c["reason"] for c in v.commands)


def test_nested_code_is_reported_with_how_it_runs(workspace: Path) -> None:
    v = classify_command("bash -c 'curl -s x.org'", workspace, ENV)
    nested = [c for c in v.commands if c.get("via") == "bash -c"]
    assert nested and nested[0]["argv"] == ["curl", "-s", "x.org"]
    assert (v.decision, v.risk) == ("ask", "network")


def test_check_shell_json_has_exactly_the_documented_keys(workspace: Path) -> None:
    out = check_shell_json("ls -la src", workspace, ENV)
    assert set(out) == {"decision", "risk", "reason", "commands"}
    assert (out["decision"], out["risk"]) == ("allow", "read")
    assert out["commands"][0]["argv"] == ["ls", "-la", "src"]


def test_parse_errors_are_never_allowed(workspace: Path) -> None:
    for command in ("ls ((", "echo 'x", "for", "a |", "ls && ", "cat <<< "):
        v = classify_command(command, workspace, ENV)
        assert v.decision != "allow", command
        assert v.parsed is False or v.decision == "ask", command


def test_empty_command_runs_nothing(workspace: Path) -> None:
    v = classify_command("", workspace, ENV)
    assert (v.decision, v.risk, v.commands) == ("allow", "read", [])


def test_symlinked_directory_escape_is_seen(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret").write_text("s")
    os.symlink(outside, ws / "link")
    assert classify_command("cat link/secret", ws, ENV).decision == "ask"
    assert classify_command("echo x > link/new.txt", ws, ENV).decision == "deny"
    assert classify_command("cat link/sub/../secret", ws, ENV).decision == "ask"
    assert classify_command("cd link && cat secret", ws, ENV).decision == "ask"


def test_cd_into_a_directory_changes_how_later_paths_resolve(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    os.symlink(tmp_path / "outside" / "secret", ws / "src" / "x")
    assert classify_command("cat x", ws, ENV).decision == "allow"  # ws/x does not exist
    assert classify_command("cd src && cat x", ws, ENV).decision == "ask"
    assert classify_command("cd $SOMEWHERE && cat x", ws, ENV).decision == "ask"


def test_globs_are_expanded_before_judging(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    (ws / "sub").mkdir()
    os.symlink(tmp_path / "outside", ws / "sub" / "evil")
    assert classify_command("cat sub/*/secret", ws, ENV).decision == "ask"
    assert classify_command("cat src/*.py", ws, ENV).decision == "allow"


def test_sibling_directory_sharing_the_prefix_is_outside(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    evil = tmp_path / "ws-evil"
    evil.mkdir()
    assert classify_command(f"cat {evil}/x", ws, ENV).decision == "ask"
    assert classify_command(f"echo x > {evil}/x", ws, ENV).decision == "deny"
    assert classify_command(f"cat {ws}/README.md", ws, ENV).decision == "allow"


def test_environment_variables_expand_from_the_given_env(workspace: Path) -> None:
    env = {**ENV, "OUT": str(workspace / "out.txt"), "HOME": str(workspace)}
    assert classify_command("cat ~/README.md", workspace, env).decision == "allow"
    assert classify_command("cat $HOME/README.md", workspace, env).decision == "allow"
    assert classify_command("echo x > $OUT", workspace, env).decision == "ask"
    assert classify_command("echo x > $NOPE", workspace, env).decision == "deny"
    # a variable assigned in the command is not taken from the environment
    assert classify_command("HOME=/etc; cat $HOME/passwd", workspace, env).decision == "ask"


def test_verdict_is_a_frozen_value(workspace: Path) -> None:
    v = classify_command("ls", workspace, ENV)
    assert isinstance(v, ShellVerdict)
    with pytest.raises(AttributeError):
        v.decision = "deny"  # type: ignore[misc]


def test_nothing_is_executed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    marker = tmp_path / "pwned"
    for command in (f"touch {marker}", f"echo $(touch {marker})", f"bash -c 'touch {marker}'",
                    f"`touch {marker}`", f"cat <(touch {marker})"):
        classify_command(command, ws, ENV)
    assert not marker.exists()
