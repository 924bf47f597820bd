"""A file replaced whole by a program's output is lost unless the program read it first,
checked against the real programs in bash: ``sponge`` at the end of a pipeline replaces its
file with what the pipeline printed (an edit in place when an earlier stage reads that file),
and a program whose output option names its own input empties it before reading it, except
the few that read all their input first (``sort -o``, ``shuf -o``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV

WORK = "line two\nline one\nprecious\n"


def workspace(tmp_path: Path) -> Path:
    """A repository where a.txt (lines of work) and b.txt are committed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(WORK)
    (ws / "b.txt").write_text("other\n")
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "work"], check=True)
    return ws


def kept(ws: Path, command: str) -> bool:
    """Whether a.txt still holds every line of its work after bash ran ``command``."""
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, check=False)
    a = ws / "a.txt"
    text = a.read_bytes().decode("utf-8", "replace") if a.exists() else ""
    return sorted(text.splitlines()) == sorted(WORK.splitlines())


def decision(ws: Path, command: str, approval: str = "policy") -> str:
    return str(check_shell_json(command, ws, ENV, approval=approval)["decision"])


@pytest.mark.parametrize("command", [
    "git log --oneline | sponge a.txt",
    "git log --oneline 2>/dev/null | sponge a.txt",
    "cat b.txt | sort | sponge a.txt",
    "openssl enc -aes-256-cbc -pbkdf2 -pass pass:k -in a.txt -out a.txt",
    "uniq a.txt a.txt",
    # the file read and the file emptied are one, named through a variable
    'f=a.txt; sort "$f" > "$f"', 'f=a.txt; sort < "$f" > "$f"',
    'dedupe() { local f=$1; { head -n 1 "$f"; tail -n +2 "$f" | sort -u; } > "$f"; }; '
    "dedupe a.txt",
    "cat b.txt && sort a.txt > a.txt",  # the grammar hangs > on the list; bash on sort
])
def test_a_file_replaced_with_output_not_shown_is_refused(tmp_path: Path, command: str) -> None:
    ws = workspace(tmp_path)
    assert decision(ws, command) == "deny", command
    assert decision(ws, command, "auto") == "deny", command
    assert not kept(ws, command), command  # the control: bash loses a.txt's work


@pytest.mark.parametrize("command", [
    "sort a.txt | sponge a.txt",
    "tac a.txt | sponge a.txt",
    "sed 's/line/LINE/' a.txt | sort | sponge a.txt",
    "sort -o a.txt a.txt",
    "shuf -o a.txt a.txt",
    "git log --oneline | sponge -a a.txt",
    "echo precious | sponge new.txt",
])
def test_an_edit_in_place_or_a_new_file_is_a_write(tmp_path: Path, command: str) -> None:
    """Each keeps a.txt's lines (rewritten from themselves, appended to, or left alone): a
    write, asked, like ``sed -i``."""
    ws = workspace(tmp_path)
    assert decision(ws, command) == "ask", command
    (ws / "a.txt").write_text(WORK)
    before = (ws / "a.txt").read_text()
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL, check=False)
    after = (ws / "a.txt").read_text()
    assert set(before.splitlines()) <= {line.replace("LINE", "line")
                                        for line in after.splitlines()}, command


def test_shown_output_through_sponge_replaces_like_a_redirection(tmp_path: Path) -> None:
    """``echo x | sponge f`` shows what f becomes, as ``echo x > f`` does, not what f held:
    refused where f holds work; a new file is a write."""
    ws = workspace(tmp_path)
    assert decision(ws, "echo replacement | sponge a.txt") == "deny"
    assert decision(ws, "echo replacement > a.txt") == "deny"
    assert decision(ws, "echo replacement | sponge fresh.txt") == "ask"
    assert decision(ws, "echo replacement > fresh.txt") == "ask"


@pytest.mark.parametrize("command", [
    'latest=$(ls -t b.txt | head -n 1)\nmv -- "$latest" a.txt',
    'src=$(git ls-files | grep b)\ncp -f "$src" a.txt',
])
def test_a_file_moved_over_from_a_path_known_at_run_time_is_refused(
        tmp_path: Path, command: str) -> None:
    """The source is only known at run time, the file replaced is known: its work is lost
    whatever the source holds."""
    ws = workspace(tmp_path)
    assert decision(ws, command) == "deny", command
    assert not kept(ws, command), command


@pytest.mark.parametrize("command", [
    'tmp=$(mktemp)\nsort a.txt > "$tmp" && mv "$tmp" a.txt',
    'tmp="$(mktemp)"; sort -o "${tmp}" a.txt; mv -f $tmp a.txt',
])
def test_a_temporary_file_written_just_before_and_moved_over_is_an_edit(
        tmp_path: Path, command: str) -> None:
    ws = workspace(tmp_path)
    assert decision(ws, command) == "ask", command
    assert kept(ws, command), command


def test_a_redirection_to_each_file_find_reaches_replaces_them(tmp_path: Path) -> None:
    """``find . -exec sh -c 'cmd > "$1"' _ {} ;``: ``{}`` stands for every file under the
    start, so the redirection replaces files git tracks; reading them is allowed."""
    ws = workspace(tmp_path)
    reads = "find . -name a.txt -exec sh -c 'wc -l \"$1\" > /dev/null' _ {} \\;"
    assert decision(ws, reads) == "allow"
    for command in ("find . -name a.txt -exec sh -c 'git log --oneline > \"$1\"' _ {} \\;",
                    "find . -name '*.txt' -exec sh -c 'for f; do date > \"$f\"; done' _ {} +"):
        assert decision(ws, command) == "deny", command
        assert decision(ws, command, "auto") == "deny", command
        assert not kept(ws, command), command


def test_a_dry_run_temporary_name_creates_nothing(tmp_path: Path) -> None:
    """``mktemp -u`` prints a name it does not create (the control lists no new file)."""
    ws = workspace(tmp_path)
    for command in ("mktemp -u", "mktemp -du", f"mktemp --dry-run {ws}/x.XXXX"):
        name = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True,
                              text=True, check=True).stdout.strip()
        assert name and not Path(name).exists(), command
    assert decision(ws, "mktemp -u") == "allow"
    assert decision(ws, "mktemp -du x.XXXX") == "allow"
    assert decision(ws, "mktemp -d") == "ask"


def test_a_redirection_after_and_is_the_last_command_s_alone(tmp_path: Path) -> None:
    """``cat a.txt && echo x > a.txt``: cat reads a.txt whole before echo's redirection
    opens it (the control keeps cat's output); the file's work is replaced by shown
    text, a write like ``echo x > a.txt``, not emptied unread."""
    ws = workspace(tmp_path)
    out = subprocess.run(["bash", "-c", "cat a.txt && echo x > a.txt"], cwd=ws,
                         capture_output=True, text=True, check=True).stdout
    assert out == WORK and (ws / "a.txt").read_text() == "x\n"
    (tmp_path / "again").mkdir()
    ws = workspace(tmp_path / "again")
    assert decision(ws, "cat a.txt && echo x > a.txt") == decision(ws, "echo x > a.txt")


FETCHES = ["scp host:/srv/{name} .", "rsync -a host:/srv/{name} ./",
           "docker cp web:/srv/{name} .", "kubectl cp -n prod pod:/srv/{name} ./",
           "aws s3 cp s3://bucket/{name} .", "gsutil cp gs://bucket/{name} ./",
           "aws --profile dev s3 cp s3://bucket/{name} ."]
"""Copies from another machine, a container or the cloud into this folder."""


def test_a_copy_into_a_folder_writes_the_file_of_the_source_s_name(tmp_path: Path) -> None:
    """Control: a copy into a folder replaces the file there named like its source, which
    is what each fetch below does with the name after its host or bucket."""
    ws = workspace(tmp_path)
    elsewhere = tmp_path / "srv"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("theirs\n")
    assert not kept(ws, f"cp {elsewhere}/a.txt .")


@pytest.mark.parametrize("fetch", FETCHES)
def test_a_fetch_into_a_folder_over_a_file_of_work_is_refused(tmp_path: Path,
                                                               fetch: str) -> None:
    ws = workspace(tmp_path)
    assert decision(ws, fetch.format(name="a.txt")) == "deny"
    assert decision(ws, fetch.format(name="new.txt")) == "ask"


@pytest.mark.parametrize("command", ["aws s3 cp a.txt s3://bucket/a.txt",
                                     "gsutil cp a.txt gs://bucket/",
                                     "kubectl cp a.txt pod:/srv/a.txt"])
def test_a_project_file_sent_to_the_cloud_is_never_sent_unseen(tmp_path: Path,
                                                                command: str) -> None:
    ws = workspace(tmp_path)
    assert (decision(ws, command), decision(ws, command, "auto")) == ("ask", "deny")
