"""Folder changes against bash: seeded chains of ``cd``/``pushd``/``popd``/``OLDPWD``/links,
then a relative read or write. A file beside the workspace holds a secret; when bash prints
it, the command read outside the workspace, and the classifier must not have allowed it.
When bash writes ``note.txt`` beside the workspace or in the home folder, the command must be
refused under ``--approval auto`` (a write outside the workspace is ``deny``); the writes run in
bubblewrap with only the test's folder writable, so a chain that climbs past it changes
nothing of the machine.

Chains are split by the corpus hash rule: the test asserts the tuning part; the held-back
part is measured by ``python -m tests.test_shell_folders [COUNT [SEED]]``, which prints its
counts only.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, make_workspace, part_of

SECRET = "folder oracle secret 5d1a"
MOVES = (
    "cd ..", "cd src", "cd -", "cd", "cd ~", "cd \"$OLDPWD\"", "pushd .. >/dev/null",
    "pushd src >/dev/null", "popd >/dev/null", "cd ./src/..", "cd src/../..", "(cd ..)",
    "{ cd ..; }", "f() { cd ..; }; f", "f() { local d=..; cd $d; }; f", "CDPATH=..; cd ws",
    "cd $(dirname $PWD)", "cd ${PWD%/*}", "d=..; cd $d", "cd .. && cd -", "cd .. || cd src",
    "false && cd ..", "cd nosuch 2>/dev/null || cd ..", "for d in .. src; do cd $d; done",
    "if [ -d src ]; then cd ..; fi", "cd -P .", "cd -L ..", "set -- ..; cd \"$1\"",
    "a=(.. src); cd ${a[0]}", "read d <<< ..; cd $d", "printf -v d %s ..; cd $d",
    "pushd .. >/dev/null; pushd ws >/dev/null; popd >/dev/null", "dirs -c", "cd ../ws",
    "x=$(cd ..; pwd); cd $x", "eval cd ..", "command cd ..", "builtin cd ..", "cd -- ..",
    "OLDPWD=..; cd -", "PWD=/; cd .", "cd up", "cd -P up", "cd ~-", "cd ~+/..",
    "pushd +1 >/dev/null 2>&1", "cd src/up2", "x=up; cd $x", "cd \"$(readlink up)\"",
    "set -P", "shopt -s cdable_vars; v=..; cd v", "cd $OLDPWD", "cd -L up/..",
)
"""Moves: the workspace holds ``up -> ..`` and ``src/up2 -> ../..``."""
READS = ("cat secret.txt", "cat ./secret.txt", "head -1 secret.txt", "cat ../secret.txt",
         "cat up/secret.txt", "cat src/up2/secret.txt", "cat ~-/secret.txt")
WRITES = ("echo hi > note.txt", "touch note.txt", "echo hi >> note.txt", "mkdir note.txt",
          "tee note.txt < /dev/null", "printf x > ./note.txt", "echo x > up/note.txt",
          "touch src/up2/note.txt")
SAMPLE = 2000
SEED = 5


def chains(count: int, seed: int, last: tuple[str, ...] = READS) -> Iterator[str]:
    rng = random.Random(seed)
    seen: set[str] = set()
    while len(seen) < count:
        moves = [rng.choice(MOVES) for _ in range(rng.randint(1, 4))]
        command = "; ".join([*moves, rng.choice(last)])
        if command not in seen:
            seen.add(command)
            yield command


def _workspace(root: Path) -> tuple[Path, dict[str, str]]:
    ws = make_workspace(root)
    (root / "secret.txt").write_text(SECRET + "\n")
    (root / "home").mkdir()
    (ws / "up").symlink_to("..")
    (ws / "src" / "up2").symlink_to("../..")
    return ws, {**ENV, "HOME": str(root / "home")}


def misses(root: Path, commands: list[str]) -> tuple[list[str], int]:
    """The commands bash reads the secret with that the policy allows, and how many read it."""
    ws, env = _workspace(root)
    found, read = [], 0
    for command in commands:
        out = subprocess.run(["bash", "-c", command], cwd=ws, env=env, capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL).stdout
        if SECRET in out:
            read += 1
            if check_shell_json(command, ws, env)["decision"] == "allow":
                found.append(command)
    return found, read


def write_misses(root: Path, commands: list[str]) -> tuple[list[str], int]:
    """The commands bash writes ``note.txt`` outside the workspace with (beside it, or in the
    home folder) that ``--approval auto`` does not refuse, and how many wrote there."""
    ws, env = _workspace(root)
    outside = (root / "note.txt", root / "home" / "note.txt")
    found, wrote = [], 0
    for command in commands:  # in bubblewrap: only ``root`` is writable, / stays as it is
        subprocess.run(["bwrap", "--ro-bind", "/", "/", "--bind", str(root), str(root),
                        "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                        "--die-with-parent", "--chdir", str(ws), "--", "bash", "-c", command],
                       env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        if any(p.exists() for p in outside):
            wrote += 1
            if check_shell_json(command, ws, env, approval="auto")["decision"] != "deny":
                found.append(command)
        for folder in (root, root / "home", ws, ws / "src"):  # the next chain starts clean
            note = folder / "note.txt"
            if note.is_dir():
                note.rmdir()
            note.unlink(missing_ok=True)
    return found, wrote


def test_no_read_outside_through_folder_changes_is_allowed(tmp_path: Path) -> None:
    tuning = [c for c in chains(SAMPLE, SEED) if part_of(c) == "dev"]
    allowed, read = misses(tmp_path, tuning)
    assert read > len(tuning) // 10  # many chains do reach the secret
    assert allowed == []


def test_no_write_outside_through_folder_changes_runs_unasked(tmp_path: Path) -> None:
    tuning = [c for c in chains(600, SEED, WRITES) if part_of(c) == "dev"]
    missed, wrote = write_misses(tmp_path, tuning)
    assert wrote > 50  # the moves do lead out of the workspace
    assert missed == []


if __name__ == "__main__":
    import tempfile

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with tempfile.TemporaryDirectory() as tmp:  # held back: counts only, never the commands
        reads = [c for c in chains(count, seed) if part_of(c) == "heldback"]
        allowed, read = misses(Path(tmp) / "reads", reads)
        writes = [c for c in chains(count, seed, WRITES) if part_of(c) == "heldback"]
        unrefused, wrote = write_misses(Path(tmp) / "writes", writes)
        print(f"held back, seed {seed}: {len(reads)} read chains, {read} read the secret, "
              f"{len(allowed)} allowed; {len(writes)} write chains, {wrote} wrote outside, "
              f"{len(unrefused)} run under --approval auto")
