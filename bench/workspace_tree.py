"""Generated git repositories of a given size, for the workspace benchmark and its test.

``build(root, files, mix)`` writes a repository of ``files`` files: ``tracked`` makes every file
tracked; ``mixed`` tracks a third of them and puts the rest in a git-ignored ``node_modules/``
(the shape of a JavaScript project), with a few untracked files beside. Files are ~300 bytes of
code-like text, 20 to a directory, so 100,000 files make ~5,000 directories; one file in 500
holds the word ``needle``. A built tree is reused when its stamp says it was built for the
same size and mix (building 300,000 files and committing them takes minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PER_DIR = 20
"""Files per directory."""
NEEDLE_EVERY = 500
STAMP = ".bench-tree.json"
"""Inside ``.git``: what the tree was built as (never seen by the engine's tools)."""
MIXES = ("tracked", "mixed")
DROP_SCRIPT = b'rm -- "$1"\n'
"""``scripts/drop.sh FILE``: a deletion the policy lets a run make (``rm`` itself is always
refused as destructive; a script it cannot see into is judged as code to run)."""
_WORDS = ("alpha", "beta", "gamma", "delta", "value", "result", "config", "handler", "request",
          "response", "buffer", "index", "parse", "render", "update", "client", "server")
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


@dataclass(frozen=True, slots=True)
class Tree:
    """A built repository and where its files are."""

    root: Path
    files: int
    mix: str
    tracked: int
    ignored: int
    untracked: int
    deep_file: str
    """A tracked file four directories down (the benchmark edits it)."""


def split(files: int, mix: str) -> tuple[int, int, int]:
    """(tracked, ignored, untracked) counts of a tree of ``files`` files."""
    if mix == "tracked":
        return files, 0, 0
    untracked = min(10, files // 100)
    tracked = max(1, (files - untracked) // 3)
    return tracked, files - untracked - tracked, untracked


def text(i: int) -> bytes:
    """The content of file ``i``: a small module, a needle in one of ``NEEDLE_EVERY``."""
    a, b, c = (_WORDS[(i * k + 3) % len(_WORDS)] for k in (7, 11, 13))
    lines = [f"# module {i}", f"def {a}_{i}(x):", f"    {b} = compute_{c}(x, {i})",
             f"    return {b} + {i % 97}", "", f"def {b}_{i}({c}):",
             f"    return render_{a}({c}) or {i}"]
    if i % NEEDLE_EVERY == 0:
        lines.append(f"NEEDLE = 'needle {i}'")
    return ("\n".join(lines) + "\n").encode()


def tracked_path(i: int) -> str:
    return f"src/a{i // (PER_DIR * PER_DIR):03}/b{(i // PER_DIR) % PER_DIR:02}/f{i % PER_DIR:02}.py"


def ignored_path(i: int) -> str:
    return f"node_modules/pkg{i // (PER_DIR * 5):04}/lib/m{(i // PER_DIR) % 5}/f{i % PER_DIR:02}.js"


def build(root: Path, files: int, mix: str) -> Tree:
    """The repository at ``root`` with ``files`` files of ``mix``; rebuilt unless its stamp
    matches."""
    tracked, ignored, untracked = split(files, mix)
    tree = Tree(root, files, mix, tracked, ignored, untracked, tracked_path(tracked - 1))
    stamp = root / ".git" / STAMP
    want = {"files": files, "mix": mix, "version": 3}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return tree
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    _write(root, [tracked_path(i) for i in range(tracked)], 0)
    (root / ".gitignore").write_bytes(b"node_modules/\n*.log\n")
    (root / "README.md").write_bytes(b"# bench\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "drop.sh").write_bytes(DROP_SCRIPT)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tree")
    _write(root, [ignored_path(i) for i in range(ignored)], tracked)
    _write(root, [f"notes/u{i:02}.txt" for i in range(untracked)], tracked + ignored)
    stamp.write_text(json.dumps(want))
    return tree


def _write(root: Path, paths: list[str], first: int) -> None:
    made: set[str] = set()
    for n, rel in enumerate(paths):
        folder = rel.rpartition("/")[0]
        if folder not in made:
            os.makedirs(root / folder, exist_ok=True)
            made.add(folder)
        fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text(first + n))
        finally:
            os.close(fd)


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity and no system config; its stdout."""
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=root, env=env,
                          check=True, capture_output=True, text=True).stdout
