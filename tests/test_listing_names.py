"""A listing's names are paths inside the workspace only while its consumer keeps them whole.

``git ls-files | xargs cat`` reads inside the workspace, unless a folder there is named
``x `` and holds ``etc/passwd``: git lists ``x /etc/passwd``, xargs cuts it at the blank, and
cat reads the host's ``/etc/passwd``. The control run below shows bash doing exactly that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.permissions import listings
from engine.permissions.listings import TOO_MANY, split_name
from engine.permissions.shell import check_shell_json
from tests.judged_workspace import committed

GIT = shutil.which("git")


def _decision(workspace: Path, command: str) -> str:
    return str(check_shell_json(command, workspace, {})["decision"])


@pytest.fixture()
def trap(tmp_path: Path) -> Path:
    """A git workspace with a folder whose name ends in a blank, holding ``etc/passwd``."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "x " / "etc").mkdir(parents=True)
    (tmp_path / "x " / "etc" / "passwd").write_text("not the host's\n")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    return tmp_path


def test_the_control_run_reads_the_hosts_file(trap: Path) -> None:
    host = Path("/etc/passwd").read_text().splitlines()[0]
    out = subprocess.run(["bash", "-c", "git ls-files | xargs cat"], cwd=trap,
                         capture_output=True, text=True).stdout
    assert host in out  # the piece after the blank is the absolute path /etc/passwd


@pytest.mark.parametrize("command", [
    "git ls-files | xargs cat", "find . -type f | xargs cat", "find . | head | xargs cat",
    "cat $(git ls-files)", "while read -r f; do cat \"$f\"; done < <(find .)",
    "git ls-files | while read -r a b; do cat \"$b\"; done",
    "find . -print0 | xargs -P0 cat",  # -P0 is a process count, not -0: cut at blanks
    "git ls-files -z | xargs cat", "for f in $(git ls-files); do cat \"$f\"; done",
    "for f in $(find . -type f 2>/dev/null); do wc -l \"$f\"; done",
    "find . -type f -print0 | while read -r -d '' f; do cat \"$f\"; done",  # trims blanks
    "find . -type f | while IFS= read -r f; do cat \"$f\"; done",  # a newline ends a name
])
def test_a_consumer_that_splits_names_is_asked(trap: Path, command: str) -> None:
    assert _decision(trap, command) == "ask", command


@pytest.mark.parametrize("command", [
    "git ls-files -z | xargs -0 cat", "find . -print0 | xargs -0r cat",
    "find . -print0 | xargs --null wc -l", "find src | xargs cat",  # nothing odd under src
    # NUL-ended records through filters that keep them whole (-z)
    "find . -type f -print0 | sort -z | xargs -0 sha256sum",
    "find . -print0 | sort -zu | head -z -n 5 | xargs -0 wc -c",
    "find . -type f -print0 | while IFS= read -r -d '' f; do cat \"$f\"; done",
])
def test_a_consumer_that_keeps_names_whole_reads_inside(trap: Path, command: str) -> None:
    assert _decision(trap, command) == "allow", command


def test_a_plain_workspace_keeps_its_listings(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    assert _decision(tmp_path, "find . -name '*.py' | xargs wc -l") == "allow"
    assert _decision(tmp_path, "mkdir -p 'x /etc' && find . | xargs wc -l") == "ask"


def test_a_loop_over_a_listing_gives_paths_under_its_folders(tmp_path: Path) -> None:
    """``for f in $(git ls-files)``: each word is a path the listing printed, cut at blanks
    as xargs cuts it (above, the trap asks). Read, it stays inside; written, the files may
    hold work; run, it is any program; assigned again, the variable holds what it is given.
    The control: bash really runs the loop over the repository's files."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    read = "for f in $(git ls-files '*.py'); do wc -l \"$f\"; done"
    out = subprocess.run(["bash", "-c", read], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "src/app.py"]
    assert _decision(tmp_path, read) == "allow"
    assert _decision(tmp_path, "for j in $(find src -name '*.py' 2>/dev/null); do "
                               "echo \"$(wc -c < \"$j\")\"; done") == "allow"
    emptied = "for f in $(git ls-files); do > \"$f\"; done"
    assert _decision(tmp_path, emptied) == "deny"
    assert str(check_shell_json("for f in $(git ls-files); do sed -i s/x/y/ \"$f\"; done",
                                tmp_path, {}, approval="auto")["decision"]) == "deny"
    assert _decision(tmp_path, "for f in $(git ls-files); do $f; done") == "ask"
    assert _decision(tmp_path, "for f in $(git ls-files); do :; done; f=rm; $f -rf src") == \
        "deny"
    assert _decision(tmp_path, "for f in $(cat list.txt); do cat \"$f\"; done") == "ask"
    assert _decision(tmp_path, "for f in $(find /etc -name '*.conf'); do cat \"$f\"; done") \
        == "ask"


@pytest.mark.parametrize(("command", "expected"), [
    ("git ls-files -z | xargs -0 -I{} sh -c ': > \"$1\"' _ {}", "deny"),
    ("git ls-files -z | xargs -0 sh -c 'for f; do : > \"$f\"; done' _", "deny"),
    ("git ls-files -z | xargs -0 sh -c 'for f in \"$@\"; do wc -l \"$f\"; done' _", "allow"),
    ("git ls-files | xargs -I{} sh -c 'wc -l \"$1\"' _ {}", "allow"),
    ("printf '%s\\0' a.txt | xargs -0 -I{} sh -c 'wc -l \"$1\"' _ {}", "allow"),  # one name
    ("printf '%s\\0' *.txt | xargs -0 -I{} sh -c ': > \"$1\"' _ {}", "deny"),
    ("f() { : > \"$1\"; }; git ls-files | while read -r x; do f \"$x\"; done", "deny"),
])
def test_listed_paths_handed_to_a_shell_stay_listed(tmp_path: Path, command: str,
                                                    expected: str) -> None:
    """A path from a listing given to ``sh -c`` or a function as ``$1`` (or looped over
    as ``"$@"``) is still a file the listing printed: emptying it loses work (the control:
    bash empties the tracked file)."""
    (tmp_path / "a.txt").write_text("work\n")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    assert _decision(tmp_path, command) == expected, command
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=False)
    assert ((tmp_path / "a.txt").read_text() == "work\n") == (expected == "allow"), command


@pytest.mark.parametrize("command", [
    "find . | xargs cat", "find src | xargs head -n 1", "cat $(ls)/passwd",
    "ls | while read -r d; do cat \"$d/passwd\"; done",
    "for d in $(ls); do (cd \"$d\" && cat passwd); done",
])
def test_a_listing_beside_a_link_out_of_the_workspace_is_asked(tmp_path: Path,
                                                               command: str) -> None:
    """A listing prints a link's own name, inside; the program it feeds follows the link.
    The control: bash reads the host's file through it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    assert _decision(tmp_path, command) == "allow", command  # nothing leads out yet
    os.symlink("/etc/passwd", tmp_path / "src" / "leak")
    os.symlink("/etc", tmp_path / "up")
    host = Path("/etc/passwd").read_text().splitlines()[0]
    out = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True,
                         text=True).stdout
    assert host in out, command
    assert _decision(tmp_path, command) == "ask", command
    assert str(check_shell_json(command, tmp_path, {}, approval="auto")["decision"]) == "deny"


@pytest.mark.parametrize("command", [
    "find . -name '*.py' | xargs wc -l", "find . -type f | xargs cat", "git ls-files | xargs cat",
    "rg -l x | xargs cat", "grep -rl x . | xargs cat",
])
def test_a_listing_that_never_prints_the_link_keeps_its_answer(tmp_path: Path,
                                                               command: str) -> None:
    """An untracked ``.venv/bin/python -> /usr/bin/python3``: ``-name '*.py'`` does not
    match it, ``-type f`` and ``rg``/``grep -r`` skip links, git lists what it tracks."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, tmp_path / ".venv" / "bin" / "python")
    assert GIT is not None
    for args in (["init", "-q"], ["add", "src"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run([GIT, *args], cwd=tmp_path, check=True)
    assert _decision(tmp_path, command) == "allow", command
    assert _decision(tmp_path, "find . | xargs cat") == "ask"


def test_split_name_finds_made_paths_and_gives_up_past_its_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert split_name([str(tmp_path)], [str(tmp_path / "a'b")]) == str(tmp_path / "a'b")
    assert split_name([str(tmp_path)], ["/elsewhere/a b"]) is None
    for i in range(3):
        (tmp_path / f"f{i}").touch()
    assert split_name([str(tmp_path)], []) is None
    monkeypatch.setattr(listings, "MAX_LISTED_ENTRIES", 2)
    assert split_name([str(tmp_path)], []) == TOO_MANY


def test_a_folder_read_before_is_read_again_once_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names are kept per folder while its times stand still; a name added later, even
    with the modification time set back as it was (``touch -d``), is seen."""
    monkeypatch.setattr(listings, "RACY_NS", -1)  # keep every folder, however fresh
    folder = tmp_path / "deep" / "er"
    folder.mkdir(parents=True)
    (folder / "plain.py").touch()
    assert split_name([str(tmp_path)], []) is None
    assert str(folder) in listings._SEEN
    before = folder.stat()
    (folder / "x y").mkdir()
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert folder.stat().st_mtime_ns == before.st_mtime_ns
    assert split_name([str(tmp_path)], []) == str(folder / "x y")


def _repository(root: Path) -> Path:
    assert GIT is not None
    subprocess.run([GIT, "init", "-q", str(root)], check=True)
    return root


@pytest.mark.parametrize("command", [
    "git status --porcelain | cut -c4- | xargs -r wc -l",
    "git status --porcelain | awk '{print $2}' | xargs -r ls -la",
    "git status -s | grep '^??' | awk '{print $NF}' | xargs -r wc -c",
    "git status --short -uall | cut -c 4- | xargs -r head -n 3",
])
def test_the_paths_git_status_prints_are_a_listing(tmp_path: Path, command: str) -> None:
    """``XY PATH`` lines: each word is a status, ``->`` or a path git found in the work
    tree; the real run reads the changed files and nothing else."""
    ws = _repository(tmp_path)
    (ws / "new.txt").write_text("one\ntwo\n")
    ran = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True)
    assert ran.returncode == 0 and ("new.txt" in ran.stdout or "one" in ran.stdout)
    assert _decision(ws, command) == "allow"


def test_a_status_listing_that_escapes_or_may_is_asked(tmp_path: Path) -> None:
    """Control runs first: ``cut -c4-`` of what find prints is a path's tail (``./x../y``
    gives ``../y``); ``git status -s`` in a workspace below the repository's top prints
    ``../`` paths out of it; an untracked link is listed. Each is asked."""
    repo = _repository(tmp_path / "repo")
    ws = repo / "ws"
    (ws / "x..").mkdir(parents=True)
    (ws / "x.." / "y").write_text("")
    (repo / "outside.txt").write_text("secret\n")
    find = subprocess.run(["bash", "-c", "find . | cut -c4-"], cwd=ws, capture_output=True,
                          text=True).stdout.split()
    assert "../y" in find
    short = subprocess.run([str(GIT), "status", "-s", "-uall"], cwd=ws, capture_output=True,
                           text=True).stdout
    assert "../outside.txt" in short
    assert _decision(ws, "find . | cut -c4- | xargs -r cat") == "ask"
    assert _decision(ws, "git status -s | cut -c4- | xargs -r cat") == "ask"
    assert _decision(ws, "git status --porcelain | cut -c4- | xargs -r cat") == "allow"
    assert _decision(ws, "git status | cut -c4- | xargs -r cat") == "ask"  # the long format
    top = _repository(tmp_path / "top")
    os.symlink("/etc/passwd", top / "leak")
    for command in ("git status --porcelain | cut -c4- | xargs -r cat",
                    "git status --porcelain | cut -c4- | grep -v x | xargs -r cat"):
        host = subprocess.run(["bash", "-c", command], cwd=top, capture_output=True,
                              text=True).stdout
        assert "root:" in host  # the untracked link is read
        assert _decision(top, command) == "ask"
    assert _decision(top, "git status --porcelain -uno | cut -c4- | xargs -r cat") == "allow"


@pytest.fixture()
def tracked(tmp_path: Path) -> Path:
    """A git workspace of two tracked files that hold work."""
    return committed(tmp_path / "ws", {"src/app.py": "work\n", "README.md": "work\n"})


ARRAY_WRITES = [
    'mapfile -t f < <(git ls-files); for x in "${f[@]}"; do : > "$x"; done',
    'readarray -t f < <(git ls-files); : > "${f[0]}"',
    'mapfile -t f < <(git ls-files); for x in "${f[@]}"; do printf "" > "$x"; done',
    'f=( $(git ls-files) ); for x in "${f[@]}"; do : > "$x"; done',
]


@pytest.mark.parametrize("command", ARRAY_WRITES)
def test_an_array_filled_from_a_listing_holds_listed_paths(tracked: Path, command: str) -> None:
    """Each element of ``mapfile -t f < <(git ls-files)`` is a tracked file: emptying it
    is refused as emptying ``$f`` of ``for f in $(git ls-files)`` is, also unattended."""
    copy = tracked.parent / "copy"
    shutil.copytree(tracked, copy)
    subprocess.run(["bash", "-c", command], cwd=copy, check=True)
    emptied = [n for n in ("src/app.py", "README.md") if (copy / n).read_text() == ""]
    assert emptied  # the control run: tracked work is gone
    for mode in ("policy", "auto"):
        assert check_shell_json(command, tracked, {}, approval=mode)["decision"] == "deny"


@pytest.mark.parametrize("command", [
    'mapfile -t f < <(git ls-files); wc -l "${f[@]}"',
    'mapfile -t f < <(git ls-files); for x in "${f[@]}"; do head -1 "$x"; done',
    'mapfile -t f < <(git ls-files); f=(README.md); wc -c "${f[0]}"',
    'f=( $(git ls-files) ); echo "${#f[@]}"; for x in "${f[@]}"; do wc -l "$x"; done',
    'f=( $(git diff --name-only HEAD) ); wc -l "${f[@]}"',
    "readarray -d '' f < <(find src -type f -print0); for x in \"${f[@]}\"; do wc -l \"$x\"; done",
])
def test_reading_an_array_filled_from_a_listing_reads_inside(tracked: Path,
                                                             command: str) -> None:
    assert _decision(tracked, command) == "allow", command


@pytest.mark.parametrize("command", [
    'mapfile -t f < <(git ls-files); "${f[@]}"', 'f=( $(git ls-files) ); "${f[0]}" -x',
])
def test_an_element_of_a_listing_run_as_a_program_is_not_named(tracked: Path,
                                                               command: str) -> None:
    """A listed path in command position is any program: never run unattended."""
    assert check_shell_json(command, tracked, {}, approval="auto")["decision"] == "deny"


def test_cp_over_an_element_is_not_run_unattended(tracked: Path) -> None:
    command = 'mapfile -t f < <(git ls-files); cp README.md "${f[0]}"'
    assert check_shell_json(command, tracked, {}, approval="auto")["decision"] == "deny"


@pytest.mark.parametrize("command", [
    "git ls-files -z README.md src/app.py | xargs -0 uniq",  # uniq IN OUT
    "uniq $(git ls-files README.md src/app.py)",
    "find README.md src/app.py -exec uniq {} +",
])
def test_several_listed_files_handed_at_once(tracked: Path, command: str) -> None:
    """A listing hands a program several files at once: one of them may be an output
    (``uniq IN OUT`` writes the second), so the listing is judged as two of its paths."""
    copy = tracked.parent / "several"
    shutil.copytree(tracked, copy)
    (copy / "README.md").write_text("readme\n")
    subprocess.run(["bash", "-c", command], cwd=copy, capture_output=True, check=False)
    assert (copy / "src" / "app.py").read_text() == "readme\n"  # the control: written over
    assert check_shell_json(command, tracked, {}, approval="auto")["decision"] == "deny"


@pytest.mark.parametrize("command", [
    "git ls-files | xargs wc -l", "git ls-files -z | xargs -0 sed -n 1p",
    "git ls-files | xargs -n1 uniq", "cat $(git ls-files)", "find . -name '*.py' -exec wc -l {} +",
])
def test_several_listed_files_read(tracked: Path, command: str) -> None:
    assert _decision(tracked, command) == "allow", command



@pytest.mark.parametrize("command", [
    "ls -1 src | xargs -I{} sort {}", "ls src | while read -r f; do sort $f; done",
    "ls src/ | xargs -n1 sort", "sort $(ls src | grep output)",
])
def test_ls_of_a_folder_prints_its_names_bare(tracked: Path, command: str) -> None:
    """``ls src`` prints ``--output=README.md`` for ``src/--output=README.md``, not a path
    under src: the program it feeds reads it as an option (``find src`` prints
    ``src/--output=..``, a path)."""
    (tracked / "src" / "--output=README.md").write_text("")
    copy = tracked.parent / "bare"
    shutil.copytree(tracked, copy)
    subprocess.run(["bash", "-c", command], cwd=copy, capture_output=True, check=False,
                   stdin=subprocess.DEVNULL)
    assert (copy / "README.md").read_text() != "work\n"  # the control: sort wrote over it
    assert check_shell_json(command, tracked, {}, approval="auto")["decision"] == "deny"
    assert _decision(tracked, command) != "allow"
    for read in ("find src | xargs sort", "git ls-files src | xargs sort", "ls | xargs wc -l"):
        assert _decision(tracked, read) == "allow", read
