"""Programs that run code or write files through a slot the command line barely shows.

Each is run for real where the program is here: sqlite3 calling a function by a quoted
name, extracting its archive over the files here, strace setting a variable for the
program it traces, find running each file it finds. The decision is never allow, and
under ``--approval auto`` what cannot be shown is refused.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions, git, work_changed


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("work\n")
    (tmp_path / "x.sh").write_text("touch RAN\n")
    return tmp_path


@pytest.mark.parametrize("call", ['"writefile"', "[writefile]", "`writefile`"])
def test_sqlite_functions_called_by_a_quoted_name(ws: Path, call: str) -> None:
    command = f"sqlite3 t.db \"select {call}('a.txt', 'x')\"".replace("`", "\\`")
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=True)
    assert (ws / "a.txt").read_text() == "x"  # control: the file was replaced
    assert decisions(ws, command) == ("deny", "deny")


def test_sqlite_archive_extraction_writes_over_files(ws: Path) -> None:
    subprocess.run(["sqlite3", "ar.db", "-Ac", "a.txt"], cwd=ws, capture_output=True,
                   check=True)
    (ws / "a.txt").write_text("new work\n")
    subprocess.run(["sqlite3", "ar.db", "-Ax"], cwd=ws, capture_output=True, check=True)
    assert (ws / "a.txt").read_text() == "work\n"  # control: the work was overwritten
    assert decisions(ws, "sqlite3 ar.db -Ax") == ("ask", "deny")
    assert decisions(ws, "sqlite3 ar.db -Atv") == ("allow", "allow")


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed here")
def test_a_variable_strace_sets_for_the_traced_program(ws: Path) -> None:
    command = "strace -qq -o /dev/null -E BASH_ENV=./x.sh bash -c true"
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False)
    assert (ws / "RAN").exists()  # control: the file BASH_ENV names ran
    assert decisions(ws, command)[0] == "deny"
    for preload in ("strace -qq -E LD_PRELOAD=./e.so ls", "LD_PRELOAD=./e.so ls",
                    "env LD_PRELOAD=./e.so ls"):  # a library nobody sees loads into ls
        assert decisions(ws, preload) == ("ask", "deny")
    assert decisions(ws, "strace -qq -E TERM=xterm ls") == ("allow", "allow")


def test_find_running_each_file_it_finds(ws: Path) -> None:
    command = "find . -maxdepth 1 -name '*.sh' -exec {} \\;"
    (ws / "x.sh").chmod(0o755)
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, check=False)
    assert (ws / "RAN").exists()  # control: the file found ran
    assert decisions(ws, command) == ("ask", "deny")
    assert decisions(ws, "find . -name '*.sh' -exec wc -l {} +") == ("allow", "allow")


@pytest.mark.parametrize(("command", "expected"), [
    ("flock --command 'rm -rf src' /tmp/l", ("deny", "deny")),
    ("flock --command ls /tmp/l", ("allow", "allow")),
    ("gawk 'BEGIN { f = \"system\"; @f(\"rm -rf src\") }'", ("ask", "deny")),
    ("awk '@include \"lib.awk\"; { print }' a.txt", ("ask", "deny")),
    ("docker --host tcp://203.0.113.7:2375 ps", ("ask", "ask")),
    ("docker -H unix:///var/run/docker.sock ps", ("allow", "allow")),
])
def test_slots_decided_without_running(ws: Path, command: str,
                                       expected: tuple[str, str]) -> None:
    assert decisions(ws, command) == expected


def test_split_filter_feeds_each_piece_to_its_command(ws: Path) -> None:
    """``split --filter=CMD`` runs ``CMD < piece``: a shell there runs the file's lines, a
    reader there reads them and split writes no piece itself; ``-n l/K/N`` prints."""
    (ws / "lines.txt").write_text("touch RAN\n")
    subprocess.run(["split", "-l", "1", "--filter=sh", "lines.txt"], cwd=ws, check=True)
    assert (ws / "RAN").exists()  # control: the line ran as shell code
    assert decisions(ws, "split -l 1 --filter=sh lines.txt") == ("deny", "deny")
    assert decisions(ws, "cat lines.txt | split -l 1 --filter=bash") == ("deny", "deny")
    before = sorted(p.name for p in ws.iterdir())
    for reader in ("split -l 1 --filter='wc -l' a.txt", "split -n l/1/2 a.txt"):
        subprocess.run(["bash", "-c", reader], cwd=ws, capture_output=True, check=True)
        assert sorted(p.name for p in ws.iterdir()) == before  # no piece written
        assert decisions(ws, reader) == ("allow", "allow")
    assert decisions(ws, "split -l 1 a.txt")[0] == "ask"  # writes xaa
    assert decisions(ws, "split -l 1 --filter='cat > $FILE.bak' a.txt")[0] == "ask"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A git workspace whose a.txt and src/ hold work."""
    return committed(tmp_path / "repo", {"src/app.py": "work\n", "a.txt": "hello\n"})


@pytest.mark.parametrize(("command", "decided"), [
    ("awk -W exec /dev/stdin <<< 'BEGIN{system(\"rm a.txt\")}'", ("deny", "deny")),  # mawk
    ("awk -We <(echo 'BEGIN{system(\"rm a.txt\")}')", ("deny", "deny")),
    ("zip -r - src --logfile-path=a.txt >/dev/null", ("deny", "deny")),
    ("ZIPOPT=-m zip -r - src > /dev/null", ("deny", "deny")),  # -m from the environment
    ("kubectl version --client --profile=heap --profile-output=a.txt", ("deny", "deny")),
    ("git grep -Ouniq -e hello -e work", ("ask", "deny")),  # uniq a.txt src/app.py
    ("sqlite3 :memory: '.import \"\\174rm a.txt\" t'", ("deny", "deny")),  # \174 is |
    ("uniq --group src/app.py a.txt", ("deny", "deny")),  # --group takes no next word
    ("git ls-files src | xargs sh -c 'cp a.txt \"$@\"' _", ("ask", "deny")),
    ("git diff 4b825dc642cb6eb9a060e54bf8d69288fbee4904 HEAD | git apply --stat "
     "--build-fake-ancestor=a.txt", ("deny", "deny")),
])
def test_options_that_run_code_or_write_a_file(repo: Path, command: str,
                                               decided: tuple[str, str]) -> None:
    home = {"PATH": "/usr/bin:/bin", "HOME": str(repo)}
    assert work_changed(repo, command, home), command  # the control: the work was changed
    assert decisions(repo, command) == decided, command


def test_git_apply_stat_with_apply_applies(repo: Path) -> None:
    patch = subprocess.run(["git", "diff", "--binary", "--no-color"], cwd=repo, check=True,
                           capture_output=True, text=True).stdout
    (repo / "a.txt").write_text("edited\n")
    (repo / "undo.patch").write_text(subprocess.run(
        ["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout)
    assert patch == ""
    command = "git apply --stat --appl -R undo.patch"
    subprocess.run(["bash", "-c", command], cwd=repo, check=True, capture_output=True)
    assert (repo / "a.txt").read_text() == "hello\n"  # the control: the edit was undone
    assert decisions(repo, command)[0] == "ask"
    assert decisions(repo, "git apply --stat undo.patch") == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "less --lesskey-src=/dev/stdin a.txt <<< 'x'", "MANROFFOPT=-U man -l a.txt",
    "PYENV_HOOK_PATH=hooks python3 --version", "kubectl --kubeconfig=kc.yaml get pods",
    "docker --config cfg help", "pip --python=./x.sh list", "pip list --log a.txt",
    "python3 -m pip --python=./x.sh list",
])
def test_settings_that_load_programs_are_asked(repo: Path, command: str) -> None:
    assert decisions(repo, command)[0] == "ask", command


LIBRARY = ('#include <unistd.h>\n'
           'void __attribute__((constructor)) run(void) { unlink("a.txt"); }\n'
           'void C_GetFunctionList(void) {}\n')
"""A shared library whose constructor removes a.txt (ssh-keygen looks for the PKCS#11 entry)."""


@pytest.fixture()
def planted(repo: Path) -> Path:
    """The repository with a library, a RubyGems plugin and a ``bin/java`` in it."""
    gcc = shutil.which("gcc")
    assert gcc is not None, "gcc builds the library the control runs load"
    (repo / "x.c").write_text(LIBRARY)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", "x.so", "x.c"], cwd=repo, check=True)
    (repo / "src" / "plugins").mkdir()
    (repo / "src" / "plugins" / "evil_plugin.rb").write_text('File.delete("a.txt")\n')
    (repo / "src" / "bin").mkdir()
    (repo / "src" / "bin" / "java").write_text("#!/bin/sh\nrm -f a.txt\n")
    (repo / "src" / "bin" / "java").chmod(0o755)
    return repo


@pytest.mark.parametrize(("command", "decided"), [
    ("vim -es -W a.txt -c 'q!' src/app.py", ("deny", "deny")),  # the typed keys: none
    ("vim -es -V1a.txt -c 'q!' src/app.py", ("ask", "ask")),  # appends its messages
    ("vim -es --startuptime a.txt -c 'q!' src/app.py", ("ask", "ask")),
    ("vim -es --log a.txt -c 'q!' src/app.py", ("ask", "ask")),
    ("patch --dry-run -o a.txt src/app.py x.patch", ("deny", "deny")),
    ("nm --plugin ./x.so src/app.py", ("ask", "ask")),  # the library's code runs
    ("ssh-keygen -D ./x.so -e", ("ask", "ask")),
    ("GEM_PATH=src gem list", ("ask", "ask")),  # src/plugins/*_plugin.rb is loaded
    ("JAVA_HOME=src mvn -v", ("ask", "ask")),  # src/bin/java runs
    ("MAVEN_OPTS=-Xlog:all:file=a.txt mvn -v", ("ask", "ask")),
])
def test_options_and_settings_that_write_or_load_code(planted: Path, command: str,
                                                      decided: tuple[str, str]) -> None:
    (planted / "x.patch").write_text("--- src/app.py\n+++ src/app.py\n@@ -1 +1 @@\n-work\n+less\n")
    home = {"PATH": "/usr/bin:/bin", "HOME": str(planted)}
    assert work_changed(planted, command, home), command  # the control
    assert decisions(planted, command) == decided, command


@pytest.mark.parametrize("command", [
    "vim -es -c '%p' -c 'q!' src/app.py", "vim -Es -N -i NONE -V1 -c '%p' -c 'q!' a.txt",
    "nm -C x.so", "objdump -h x.so", "ssh-keygen -l -f x.pub", "patch --dry-run -p0 < x.patch",
])
def test_their_reading_twins(planted: Path, command: str) -> None:
    assert decisions(planted, command) == ("allow", "allow"), command


@pytest.mark.parametrize(("command", "decided"), [
    ("npm ls --logs-dir=/tmp/npm-logs", ("deny", "deny")),  # its debug log, outside
    ("npm ls --logs-dir logs", ("ask", "ask")), ("npm ls --depth=0", ("allow", "allow")),
])
def test_npm_folders_it_writes_into(ws: Path, command: str, decided: tuple[str, str]) -> None:
    assert decisions(ws, command) == decided, command


def test_a_repository_made_of_the_workspaces_files(repo: Path) -> None:
    """A bare clone committed as ``sub/`` (a cloned project can carry one) is a repository
    git finds from ``sub``: its config's ``core.fsmonitor`` runs on ``git -C sub status``.
    The workspace's own repository, a folder inside its ``.git`` and a submodule (its git
    folder kept in ``.git/modules``) are git's own."""
    git(repo, "clone", "-q", "--bare", ".", "sub")
    with (repo / "sub" / "config").open("a") as f:
        f.write('[core]\n\tbare = false\n\tworktree = ..\n'
                '\tfsmonitor = "rm -f a.txt; false"\n')
    git(repo, "add", "sub")
    git(repo, "commit", "-qm", "sub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "./sub", "mod")
    git(repo, "commit", "-qm", "mod")
    home = {"PATH": "/usr/bin:/bin", "HOME": str(repo)}
    for command in ("git -C sub status", "cd sub/refs && git status",
                    "git --git-dir=sub status"):
        assert decisions(repo, command) == ("ask", "ask"), command
    for command in ("git status", "git -C .git log -1", "git -C mod status",
                    "cd src && git log -1"):
        assert decisions(repo, command) == ("allow", "allow"), command
    assert not work_changed(repo, "git -C mod status", home)
    assert work_changed(repo, "git -C sub status", home)  # the control: a.txt is gone


def test_a_cargo_alias_stands_for_an_external_subcommand(ws: Path) -> None:
    """``fmt`` and ``clippy`` are programs of their own, not cargo's commands, so an alias of
    that name in a ``.cargo/config.toml`` here or above wins (``fmt = "run --"`` builds and
    runs the crate, build.rs first); an alias of a built-in command is ignored."""
    (ws / "crate" / "src").mkdir(parents=True)
    (ws / "crate" / "Cargo.toml").write_text('[package]\nname = "c"\nversion = "0.1.0"\n')
    assert decisions(ws, "cd crate && cargo fmt --check") == ("allow", "allow")
    (ws / ".cargo").mkdir()
    (ws / ".cargo" / "config.toml").write_text('[alias]\nfmt = "run --"\n')
    for command in ("cargo fmt --check", "cargo fmt -- --check", "cargo clippy --version"):
        assert decisions(ws, f"cd crate && {command}") == ("ask", "ask"), command
    assert decisions(ws, "CARGO_ALIAS_FMT='run --' cargo fmt --check") == ("ask", "ask")


@pytest.mark.parametrize("command", [
    "script -q /dev/null <<< 'rm a.txt'", "unshare <<< 'rm a.txt'", "sg root 'rm a.txt'",
    "chroot / <<< 'rm a.txt'",
])
def test_a_shell_a_program_starts_runs_its_input(repo: Path, command: str) -> None:
    """``script`` without ``-c``, ``unshare``/``chroot`` without a command start a shell
    that reads the here-string; ``sg GROUP CMD`` runs CMD with ``sh -c``."""
    assert decisions(repo, command) == ("deny", "deny"), command
    reads = command.replace("rm a.txt", "ls")
    assert decisions(repo, reads)[0] == "ask", reads  # a shell, still: asked
    if command.startswith("script"):
        home = {"PATH": "/usr/bin:/bin", "HOME": str(repo), "SHELL": "/bin/sh"}
        assert work_changed(repo, command, home)  # the control: a.txt is gone


def test_a_glob_hands_the_program_each_name(repo: Path) -> None:
    """Bash gives ``uniq src/*`` the two names (``uniq IN OUT`` writes the second) and ``cc
    -M *.c`` a name ``@z.c`` (options read from z.c: ``-Bevil/`` runs the repository's own
    evil/cc1): each command is judged again on the names its globs match."""
    (repo / "src" / "old.py").write_text("old\n")
    (repo / "main.c").write_text("int main(void) { return 0; }\n")
    (repo / "@z.c").write_text("")
    (repo / "z.c").write_text("-Bevil/\n")
    (repo / "evil").mkdir()
    (repo / "evil" / "cc1").write_text("#!/bin/sh\nrm -f a.txt\nexit 1\n")
    (repo / "evil" / "cc1").chmod(0o755)
    (repo / "@o").write_text("")
    (repo / "o").write_text("--plugin ./x.so\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "planted")
    home = {"PATH": "/usr/bin:/bin", "HOME": str(repo)}
    for command, decided in (("uniq src/*", ("deny", "deny")), ("xxd src/*", ("deny", "deny")),
                             ("cc -M *.c", ("ask", "ask")), ("nm *", ("ask", "ask")),
                             ("echo *.c | xargs cc -fsyntax-only", ("ask", "ask"))):
        assert decisions(repo, command) == decided, command
    for command in ("wc -l src/*", "head -n 3 src/*", "grep -n work src/*"):
        assert decisions(repo, command) == ("allow", "allow"), command
    assert work_changed(repo, "cc -M *.c", home)  # the control: evil/cc1 removed a.txt
    git(repo, "checkout", "--", "a.txt")
    assert work_changed(repo, "uniq src/*", home)  # and uniq wrote src/old.py


def test_help_and_version_that_load_the_project(repo: Path) -> None:
    """``pytest --help`` loads conftest.py and the plugins its configuration names, ``flask
    --help`` imports the application, ``mvn -v`` applies ``.mvn/maven.config``, ``python -m
    http.server --help`` imports from the folder first, and ``tsc --noEmit`` writes a build
    info file a tsconfig.json names: each is asked where the project holds such a file."""
    for command in ("pytest --help", "flask --help", "mvn -v", "tsc --noEmit",
                    "python3 -m http.server --help"):
        assert decisions(repo, command) == ("allow", "allow"), command
    (repo / "conftest.py").write_text("import os\nos.remove('a.txt')\n")
    subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=repo, capture_output=True,
                   check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(repo)})
    assert not (repo / "a.txt").exists()  # the control: conftest.py ran for --help
    git(repo, "checkout", "--", "a.txt")
    (repo / "app.py").write_text("")
    (repo / ".mvn").mkdir()
    (repo / ".mvn" / "maven.config").write_text("-l a.txt\n")
    (repo / "tsconfig.json").write_text('{"compilerOptions": {"incremental": true, '
                                        '"tsBuildInfoFile": "a.txt"}}\n')
    (repo / "email.py").write_text("")
    for command in ("pytest --help", "py.test --version", "flask --help", "mvn -v",
                    "tsc --noEmit", "python3 -m http.server --help"):
        assert decisions(repo, command) == ("ask", "ask"), command


@pytest.mark.parametrize("command", [
    "sed -n ':a w a.txt' src/app.py", "sed ':x e rm a.txt' src/app.py",
    "sed -n 'bx w a.txt' src/app.py", "sed -n 't x w a.txt' src/app.py",
    "sed -n 'v4.2 w a.txt' src/app.py", "sed -n ':a;:b w a.txt' src/app.py",
    "sed ':x s/.*/rm a.txt/e' src/app.py",
])
def test_a_sed_label_ends_at_a_blank(repo: Path, command: str) -> None:
    """GNU sed ends a label (``:a``, ``b x``) and ``v``'s version at a blank or ``;``: what
    follows on the line is the next command, which opens a file or runs a program."""
    assert work_changed(repo, command), command  # the control: a.txt emptied or removed
    assert decisions(repo, command)[1] == "deny", command


@pytest.mark.parametrize("command", [
    "sed -n ':a;N;$!ba;s/\\n/ /g;p' src/app.py", "sed ':a;s/x/y/;ta' src/app.py",
    "sed -n '/w/{:a;n;p;ba}' src/app.py", "sed -e :a -e '$!N;$!ba' -e 's/o/0/g' src/app.py",
])
def test_sed_loops_over_labels_still_read(repo: Path, command: str) -> None:
    assert not work_changed(repo, command), command
    assert decisions(repo, command) == ("allow", "allow"), command


@pytest.mark.parametrize("command", [
    "awk 'BEGIN{printf \"rm a.txt\" | \"s\" \"h\"}'",
    "awk 'BEGIN{print \"rm a.txt\" | \"exec sh\"}'",
    "awk 'BEGIN{x=\"sh\"; print \"rm a.txt\" | x}'", "awk 'BEGIN{system(\"sh\")}' <<< 'rm a.txt'",
    "awk 'BEGIN{\"sh\" | getline}' <<< 'rm a.txt'",
])
def test_awk_hands_text_to_a_shell(repo: Path, command: str) -> None:
    """A command awk pipes to or starts, built from pieces or behind ``exec``, that is a
    shell: what awk prints (or its own input) is the shell's code."""
    assert work_changed(repo, command), command
    assert decisions(repo, command) == ("deny", "deny"), command


@pytest.mark.parametrize("command", [
    "awk '{ if ($1 || $2) print | \"sort\" }' src/app.py",
    "awk '{print $1 | \"sort -u\"} END {close(\"sort -u\")}' src/app.py",
])
def test_awk_piping_to_a_reader_still_reads(repo: Path, command: str) -> None:
    assert not work_changed(repo, command), command
    assert decisions(repo, command) == ("allow", "allow"), command


def test_an_unfinished_database_log_is_written_back(tmp_path: Path) -> None:
    """A repository can carry a database in WAL mode with its log: any read finishes the
    log into the database and deletes it (``-readonly`` does not)."""
    made = sqlite3.connect(tmp_path / "orig.db")
    made.execute("pragma journal_mode=wal")
    made.execute("pragma wal_autocheckpoint=0")
    made.execute("create table t(a)")
    made.execute("insert into t values(1)")
    made.commit()
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(tmp_path / "orig.db", ws / "w.db")
    shutil.copy(tmp_path / "orig.db-wal", ws / "w.db-wal")
    made.close()
    committed(ws, {})
    command = "sqlite3 w.db 'select count(*) from t'"
    assert decisions(ws, command) == ("ask", "ask")
    assert decisions(ws, "sqlite3 -readonly w.db 'select count(*) from t'") == ("allow",
                                                                                "allow")
    assert work_changed(ws, command)  # the control: w.db rewritten, w.db-wal deleted
    assert decisions(ws, command) == ("allow", "allow")  # no log now: a read
