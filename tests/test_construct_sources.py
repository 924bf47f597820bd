"""Where a command's code or a value comes from, followed to what the command shows.

- a file this command wrote with shown text, read back (``$(<f)``, ``$(cat f)``);
- the file a static printer fills, given to a program as its script (``awk -f <(echo ..)``);
- a makefile's own recipe prefix (``.RECIPEPREFIX = >``);
- a loop over a glob in command position (``for t in /usr/bin/[s]hred; do "$t" ..``);
- the variables in a default word (``${BACKUP_ROOT:-$HOME/backups}``);
- the working tree's diff fed back through a process substitution (``patch -R < <(git
  diff)``), and the path ``git rev-parse --git-path hooks`` prints.

Each is judged as what it is; control runs show bash (and make) doing what is judged.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.judged_workspace import decisions


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "init"], check=True)
    (tmp_path / "src" / "app.py").write_text("x = 2\n")
    return tmp_path


def _bash(folder: Path, command: str) -> str:
    return subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True,
                          text=True, check=False).stdout


@pytest.mark.parametrize("command", [
    "printf 'rm -rf src' > .c; $(<.c)",
    "printf 'rm -rf src' > .c; x=$(cat .c); $x",
    "printf '%s\\n' 'x[$(git reset -q --hard)]' > .n; n=$(<.n); echo $(( n + 1 ))",
    "awk -f <(echo 'BEGIN { system(\"rm -rf src\") }')",
    "make -f - <<'EOF'\n.RECIPEPREFIX = >\nall:\n> rm -rf src\nEOF",
    "make --eval $'.RECIPEPREFIX := >\\nall:\\n> rm -rf src'",
    "for t in /usr/bin/[s]hred; do \"$t\" -u a.txt; done",
    "t=/usr/bin/[s]hred; $t -u a.txt",
    "rc=${ZDOTDIR_UNSET_HERE:-$HOME}/.bashrc; echo 'alias ls=\"rm -rf\"' >> \"$rc\"",
    "patch -R -p1 < <(git diff)",
    "git apply -R < <(git diff)",
    "hook=$(git rev-parse --git-path hooks)/post-merge; printf 'rm -rf src\\n' > \"$hook\"",
    "cp a.txt \"$(git rev-parse --git-path hooks)/pre-commit\"",
])
def test_the_source_followed_is_refused(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("deny", "deny")


@pytest.mark.parametrize("command", [
    "awk -f <(echo '{ print $1 }') a.txt",
    "sed -f <(echo 's/a/b/') a.txt",
    "for t in /usr/bin/[w]c; do :; done; ls src",
    "ls -la \"$(git rev-parse --git-path hooks)\"",
    "cat \"$(git rev-parse --git-path info/exclude)\" 2>/dev/null || true",
    "d=${OUT_UNSET_HERE:-src}; ls \"$d\"",
])
def test_the_source_followed_reads(workspace: Path, command: str) -> None:
    assert decisions(workspace, command) == ("allow", "allow")


@pytest.mark.parametrize("command", [
    "cat x.sql | sqlite3 app.db",
    "git show HEAD:a.txt | sqlite3 app.db",
    "coproc SQL { sqlite3 app.db; }; echo 'DROP TABLE t;' >&\"${SQL[1]}\"",
])
def test_what_a_program_acts_on_from_a_pipe_is_not_run_under_auto(workspace: Path,
                                                                  command: str) -> None:
    assert decisions(workspace, command) == ("ask", "deny")


def test_control_a_file_read_back_runs_what_was_written(tmp_path: Path) -> None:
    (tmp_path / "victim").mkdir()
    _bash(tmp_path, "printf 'rm -rf victim' > .c; $(<.c)")
    assert not (tmp_path / "victim").exists()


def test_control_a_loop_over_a_glob_runs_the_program_it_matched(tmp_path: Path) -> None:
    assert _bash(tmp_path, "for t in /usr/bin/[w]c; do echo hi | \"$t\" -c; done").strip() \
        == "3"


def test_control_awk_runs_a_program_from_a_process_substitution(tmp_path: Path) -> None:
    _bash(tmp_path, "awk -f <(echo 'BEGIN { system(\"touch ran\") }')")
    assert (tmp_path / "ran").exists()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed here")
def test_control_a_recipe_prefix_makes_lines_recipes(tmp_path: Path) -> None:
    _bash(tmp_path, "make -f - <<'EOF'\n.RECIPEPREFIX = >\nall:\n> touch ran\nEOF")
    assert (tmp_path / "ran").exists()


def test_control_patch_back_from_the_diff_loses_the_edit(workspace: Path) -> None:
    if shutil.which("patch") is None:
        _bash(workspace, "git apply -R < <(git diff)")
    else:
        _bash(workspace, "patch -R -p1 < <(git diff)")
    assert (workspace / "src" / "app.py").read_text() == "x = 1\n"


def test_control_git_path_hooks_is_the_hooks_folder(workspace: Path) -> None:
    assert _bash(workspace, "git rev-parse --git-path hooks").strip() == ".git/hooks"


@pytest.mark.parametrize("command", [
    "python3 -m unittest -q 2>&1 | tee out.log", "git log --oneline | tee -a notes.txt",
])
def test_what_tee_stores_from_a_pipe_is_data_it_runs_nothing(workspace: Path,
                                                             command: str) -> None:
    """tee writes what it reads to a new file: nothing runs, so --approval auto goes on."""
    assert decisions(workspace, command)[1] != "deny"
