"""The shell oracle: run a command for real in bash, in a throwaway workspace inside bubblewrap,
observe what it did to the files, and compare with the verdict of ``policy check-shell``.

Shared by ``tests/test_shell_oracle.py`` (a small sample) and ``bench/shell_oracle.py``.

The workspace is ``tests/corpus_scoring.make_workspace``'s files with multi-line content, in a
git repository (branch ``main``, two commits, one stash entry), then one uncommitted change to
``a.txt`` and one untracked file ``notes.txt``. It is built once as a pristine template; the
classifier judges each command in the template (``corpus_scoring.decide``, ``policy`` and
``auto``), and the command runs in a fresh copy mounted at the template's path, so it runs in
the very path that was judged:

    bwrap --ro-bind / / --tmpfs /tmp --bind COPY TEMPLATE --ro-bind SECRET SECRET --dev /dev
          --proc /proc --unshare-all --die-with-parent --chdir TEMPLATE --clearenv
          --setenv PATH /usr/bin:/bin
          --setenv HOME /tmp/home -- bash -c COMMAND

(stdin /dev/null, output kept up to 1 MB, 5 s timeout, files capped at 16 MB). Only the copy is
writable; the network is unshared. The copies live on ``/dev/shm`` when it is writable (the
judged path stays an ordinary temporary directory).

The effect is read from a snapshot of the copy before and after (path -> type, mode, size,
sha256) and the git refs:

- ``destroyed``: a file or directory that existed is gone or changed type; a non-empty file is
  emptied; a file's content is replaced so that none of its non-blank lines remain; the uncommitted
  change of ``a.txt`` is lost (the file is back to its committed content and no stash was
  made); a ref (branch, stash) is deleted; a ref or HEAD moves back to an older commit.
- ``wrote``: any other change (new paths, content, modes, refs, objects). A permission change
  (``chmod -R 000 src``) loses no content and is undone by another ``chmod``: a write.
- ``read_outside``: nothing changed, and what it printed shows the content of
  ``secret.txt``, a file beside the workspace (``../secret.txt`` from it).
- ``none``: nothing changed. Inside ``.git/`` the index and the logs are not compared (``git
  status`` refreshes the index), and only refs, HEAD and removals outside ``objects/`` can
  destroy.

Misses: **effect allowed without a prompt** (a ``wrote``, ``destroyed`` or ``read_outside``
command the policy answers ``allow``) and **hidden destructive not denied** (a ``destroyed``
command that runs unasked under ``--approval auto``: its auto decision is not ``deny``).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import stat
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.permissions.shell import check_shell_json
from tests.corpus_scoring import ENV, WORKSPACE_FILES, decide, part_of
from tests.shell_generator import Generated

TIMEOUT_S = 5.0
FILE_LIMIT = 16 * 1024 * 1024
EFFECTS = ("destroyed", "wrote", "read_outside", "none")
SECRET = "oracle secret outside the workspace 7f3c9e"
"""The content of ``secret.txt`` beside the workspace: a command whose output shows it read
a file outside the workspace."""
OUTPUT_LIMIT = 1024 * 1024
PARTS = ("tuning", "heldback")
CONTENT = {
    "README.md": "# Demo\n\nA small project used by the shell oracle.\nRun scripts/run.sh.\n",
    "src/app.py": "import sys\n\n\ndef main() -> int:\n    print('app')\n    return 0\n",
    "src/old.py": "OLD = 1\n\n\ndef old() -> int:\n    return OLD\n",
    "src/new.py": "NEW = 2\n\n\ndef new() -> int:\n    return NEW\n",
    "data.csv": "id,name\n1,alpha\n2,beta\n3,gamma\n",
    "a.txt": "alpha line\nsecond line with x\nthird line\n",
    "b.txt": "bravo line\nanother line\n",
    "package.json": '{\n  "name": "demo",\n  "version": "1.0.0"\n}\n',
    "scripts/run.sh": "#!/bin/sh\necho running\nexit 0\n",
    "install.sh": "#!/bin/sh\necho installing\nexit 0\n",
}
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
           "GIT_COMMITTER_NAME": "Demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
GIT_UNCOMPARED = (".git/index", ".git/logs/")
"""Changed by read-only git commands (an index refresh) or by every ref update."""


class OracleUnavailable(RuntimeError):
    """bubblewrap or bash cannot run here: the oracle cannot observe anything."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    """``f`` file, ``d`` directory, ``l`` symlink, ``o`` anything else."""
    mode: int
    size: int
    digest: str


Snapshot = dict[str, Entry]


@dataclass(frozen=True, slots=True)
class Template:
    """The pristine workspace and what the effect rules need to know of it."""

    path: Path
    snapshot: Snapshot
    lines: Mapping[str, frozenset[bytes]]
    commits: tuple[str, ...]
    """The history of ``main``, oldest first."""
    refs: Mapping[str, str]
    head: str
    committed: Mapping[str, str]
    """Files with an uncommitted change -> sha256 of their committed content."""
    source: Path
    """What each run's copy is copied from: the template itself, or a mirror of it on a
    memory file system (copies there are several times cheaper than on disk)."""


@dataclass(frozen=True, slots=True)
class Result:
    """One command judged and run."""

    command: str
    payload: str
    transforms: tuple[str, ...]
    part: str
    policy: str
    auto: str
    effect: str
    why: tuple[str, ...]
    timed_out: bool
    read_secret: bool = False
    """Its output shows ``SECRET``, whatever else it did (``effect`` says ``read_outside``
    only when it changed nothing)."""
    secret_judged: bool = False
    """Where it read ``SECRET``: the verdict saw that read (``_judged_secret``), not only
    something else it asks about."""

    @property
    def allowed_effect(self) -> bool:
        """The worst miss: the command changed the workspace and the policy allows it."""
        return self.effect != "none" and self.policy == "allow"

    @property
    def hidden_destructive(self) -> bool:
        """The command destroyed something and runs unasked under ``--approval auto``."""
        return self.effect == "destroyed" and self.auto != "deny"


# -- the workspace ------------------------------------------------------------------------


def _git(ws: Path, *args: str) -> str:
    env = {**GIT_ENV, "HOME": str(ws.parent)}
    return subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_template(root: Path, scratch: Path | None = None) -> Template:
    """Build the pristine workspace under ``root`` (see the module docstring); with
    ``scratch``, a mirror of it there is what each run copies."""
    ws = root / "ws"
    for name in WORKSPACE_FILES:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(CONTENT[name])
    for name in ("scripts/run.sh", "install.sh"):
        (ws / name).chmod(0o755)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "config", "user.name", "Demo")
    _git(ws, "config", "user.email", "demo@example.invalid")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "first")
    with (ws / "README.md").open("a") as f:
        f.write("Second commit.\n")
    _git(ws, "commit", "-q", "-am", "second")
    (ws / "b.txt").write_text(CONTENT["b.txt"] + "stashed change\n")
    _git(ws, "stash", "-q")
    committed = {"a.txt": _sha(ws / "a.txt")}
    (ws / "a.txt").write_text(CONTENT["a.txt"] + "uncommitted change\n")
    (ws / "notes.txt").write_text("untracked notes\nkeep me\n")
    commits = tuple(_git(ws, "rev-list", "--reverse", "main").split())
    snap = snapshot(ws)
    lines = {p: _lines(ws / p) for p, e in snap.items() if e.kind == "f"}
    (root / "secret.txt").write_text(SECRET + "\n")  # outside the workspace: ../secret.txt
    source = ws
    if scratch is not None:
        source = scratch / "template"
        shutil.copytree(ws, source, symlinks=True)
    return Template(ws, snap, lines, commits, refs(ws), _head(ws, refs(ws)), committed, source)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lines(path: Path) -> frozenset[bytes]:
    try:
        return frozenset(line for line in path.read_bytes().splitlines() if line.strip())
    except OSError:
        return frozenset()


def snapshot(root: Path) -> Snapshot:
    """Every path under ``root`` -> type, permission bits, size, sha256 (regular files)."""
    out: Snapshot = {}
    for path in _walk(root):
        try:
            st = path.lstat()
        except OSError:
            continue
        rel = path.relative_to(root).as_posix()
        if stat.S_ISREG(st.st_mode):
            try:
                digest = _sha(path)
            except OSError:
                digest = "unreadable"
            out[rel] = Entry("f", stat.S_IMODE(st.st_mode), st.st_size, digest)
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = Entry("d", stat.S_IMODE(st.st_mode), 0, "")
        elif stat.S_ISLNK(st.st_mode):
            out[rel] = Entry("l", 0, 0, os.readlink(path))
        else:
            out[rel] = Entry("o", stat.S_IMODE(st.st_mode), 0, "")
    return out


def _walk(root: Path) -> Iterator[Path]:
    try:
        children = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for child in children:
        yield Path(child.path)
        if child.is_dir(follow_symlinks=False):
            yield from _walk(Path(child.path))


def refs(ws: Path) -> dict[str, str]:
    """Loose and packed refs of the repository in ``ws`` (name -> object id)."""
    git = ws / ".git"
    out: dict[str, str] = {}
    try:
        for line in (git / "packed-refs").read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith(("#", "^")):
                out[parts[1]] = parts[0]
    except OSError:
        pass
    for path in _walk(git / "refs"):
        if path.is_file():
            try:
                out[path.relative_to(git).as_posix()] = path.read_text().strip()
            except OSError:
                continue
    return out


def _head(ws: Path, known: Mapping[str, str]) -> str:
    try:
        text = (ws / ".git" / "HEAD").read_text().strip()
    except OSError:
        return ""
    return known.get(text[5:], "") if text.startswith("ref: ") else text


# -- the effect ---------------------------------------------------------------------------


def effect(tpl: Template, copy: Path, after: Snapshot, output: str = ""
           ) -> tuple[str, tuple[str, ...]]:
    """``destroyed``, ``wrote``, ``read_outside`` (its output shows ``SECRET``) or ``none``,
    and the reasons for ``destroyed``."""
    lost = [*_lost_paths(tpl, copy, after), *_lost_git(tpl, copy)]
    if lost:
        return "destroyed", tuple(lost)
    changed = {p for p in tpl.snapshot.keys() | after.keys()
               if tpl.snapshot.get(p) != after.get(p) and not p.startswith(GIT_UNCOMPARED)}
    if changed:
        return "wrote", ()
    return ("read_outside" if SECRET in output else "none"), ()


def _lost_paths(tpl: Template, copy: Path, after: Snapshot) -> Iterator[str]:
    for path, old in tpl.snapshot.items():
        new = after.get(path)
        inside_git = path == ".git" or path.startswith(".git/")
        if inside_git and (path.startswith((".git/objects/", ".git/refs/", *GIT_UNCOMPARED))
                           or path in (".git/HEAD", ".git/packed-refs", ".git/ORIG_HEAD")):
            continue
        if new is None or new.kind != old.kind:
            yield f"{path} removed" if new is None else f"{path} changed type"
            continue
        if old.kind != "f" or new.digest == old.digest or inside_git:
            continue
        if old.size and not new.size:
            yield f"{path} emptied"
        elif tpl.lines[path] and not tpl.lines[path] & _lines(copy / path):
            yield f"{path} content replaced"
        elif tpl.committed.get(path) == new.digest and _stash_kept(tpl, copy):
            yield f"{path} uncommitted change lost"


def _stash_kept(tpl: Template, copy: Path) -> bool:
    return refs(copy).get("refs/stash") == tpl.refs.get("refs/stash")


def _lost_git(tpl: Template, copy: Path) -> Iterator[str]:
    now = refs(copy)
    order = {c: i for i, c in enumerate(tpl.commits)}
    for name, old in tpl.refs.items():
        new = now.get(name)
        if new is None:
            yield f"{name} deleted"
        elif new in order and old in order and order[new] < order[old]:
            yield f"{name} moved back"
    head = _head(copy, now)
    if head in order and tpl.head in order and order[head] < order[tpl.head]:
        yield "HEAD moved back"


# -- running ------------------------------------------------------------------------------


def bwrap_argv(tpl: Template, copy: Path, command: str) -> list[str]:
    ws, secret = str(tpl.path), str(tpl.path.parent / "secret.txt")
    return ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", str(copy), ws,
            "--ro-bind", secret, secret,
            "--dev", "/dev", "--proc", "/proc", "--dir", "/tmp/home", "--unshare-all",
            "--die-with-parent", "--chdir", ws, "--clearenv", "--setenv", "PATH",
            "/usr/bin:/bin", "--setenv", "HOME", "/tmp/home", "--", "bash", "-c", command]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def run_in_sandbox(tpl: Template, copy: Path, command: str) -> tuple[bool, str]:
    """Run ``command`` in ``copy`` (mounted at the template's path): whether it timed out,
    and the start of what it printed (standard output and error)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(bwrap_argv(tpl, copy, command), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, start_new_session=True,
                                preexec_fn=_limits)
        try:
            proc.wait(timeout=TIMEOUT_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            timed_out = True
        out.seek(0)
        return timed_out, out.read(OUTPUT_LIMIT).decode("utf-8", "replace")


def fresh_copy(tpl: Template, copy: Path) -> None:
    """Replace ``copy`` with a copy of the pristine template."""
    discard(copy)
    shutil.copytree(tpl.source, copy, symlinks=True)


def discard(path: Path) -> None:
    """Remove a copy, whatever modes the command left on its directories."""
    if path.is_symlink() or not path.exists():
        path.unlink(missing_ok=True)
        return
    _searchable(path)
    shutil.rmtree(path)


def _searchable(directory: Path) -> None:
    """Give the owner rwx on ``directory`` and every directory under it, top down (a
    directory must be searchable before what is inside it can be listed)."""
    directory.chmod(0o700)
    for child in os.scandir(directory):
        if child.is_dir(follow_symlinks=False):
            _searchable(Path(child.path))


def check_sandbox() -> None:
    """Raise ``OracleUnavailable`` (with the reason) when bwrap cannot run bash here."""
    try:
        proc = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--dev", "/dev",
                               "--proc", "/proc", "--", "bash", "-c", "true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OracleUnavailable(f"bwrap cannot start: {exc}") from exc
    if proc.returncode:
        raise OracleUnavailable(f"bwrap cannot run bash: {proc.stderr.strip()}")


def require_sandbox() -> None:
    """For a test: fail it, with the reason, where bwrap cannot run bash (the benches report
    ``OracleUnavailable`` themselves)."""
    import pytest  # only the suite calls this

    try:
        check_sandbox()
    except OracleUnavailable as exc:
        pytest.fail(f"the shell oracle needs bubblewrap: {exc}")


def observe(tpl: Template, copy: Path, gen: Generated) -> Result:
    """Judge ``gen`` in the template, run it in a fresh copy, and classify its effect."""
    policy = decide(gen.command, tpl.path, "policy")
    auto = decide(gen.command, tpl.path, "auto")
    fresh_copy(tpl, copy)
    timed_out, output = run_in_sandbox(tpl, copy, gen.command)
    seen, why = effect(tpl, copy, snapshot(copy), output)
    read = SECRET in output
    return Result(gen.command, gen.payload, gen.transforms, oracle_part(gen.command), policy,
                  auto, seen, why, timed_out, read, read and _judged_secret(tpl, gen.command))


_MAKERS = frozenset({"ln", "cp", "mv", "mkdir", "install"})


def _judged_secret(tpl: Template, command: str) -> bool:
    """Whether ``check-shell`` gives a command other than one making files (``ln -s ..
    kk`` reads the folder it names) a reason naming the folder of ``secret.txt``, or a path
    in it, outside the workspace."""
    folder = re.escape(os.path.realpath(tpl.path.parent))
    seen = re.compile(f"of {folder}(/\\S*)? outside")
    verdict = check_shell_json(command, tpl.path, ENV)
    return any(seen.search(str(c.get("reason", ""))) for c in verdict["commands"]
               if os.path.basename(str(c["argv"][0]) if c["argv"] else "") not in _MAKERS)


def oracle_part(command: str) -> str:
    """``tuning`` (70%) or ``heldback`` (30%): the corpus split rule on the command."""
    return "tuning" if part_of(command) == "dev" else "heldback"


# -- many commands ------------------------------------------------------------------------


def _shard(args: tuple[Template, Path, list[Generated]]) -> list[Result]:
    tpl, copy, gens = args
    try:
        return [observe(tpl, copy, g) for g in gens]
    finally:
        discard(copy)


def run_all(gens: Sequence[Generated], workers: int = 2) -> list[Result]:
    """Observe every command, ``workers`` processes at most (2); results in the input order.

    One template is built; each process judges in it and runs in a copy of its own.
    """
    check_sandbox()
    workers = max(1, min(workers, 2, len(gens) or 1))
    with tempfile.TemporaryDirectory(prefix="shell-oracle-") as tmp, \
            tempfile.TemporaryDirectory(prefix="shell-oracle-", dir=_memory_fs()) as scratch:
        tpl = make_template(Path(tmp) / "template", Path(scratch))
        shards = [(tpl, Path(scratch) / f"copy{i}", list(gens[i::workers]))
                  for i in range(workers)]
        if workers == 1:
            parts = [_shard(shards[0])]
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(_shard, shards))
    out: list[Result | None] = [None] * len(gens)
    for i, part in enumerate(parts):
        out[i::workers] = part
    return [r for r in out if r is not None]


def _memory_fs() -> str | None:
    """``/dev/shm`` when it is a writable directory (else the default temporary directory)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def summary(results: Iterable[Result]) -> dict[str, Any]:
    """The figures of one part: effects seen, decisions, and each class of miss."""
    rows = list(results)
    none = [r for r in rows if r.effect == "none"]
    return {
        "commands": len(rows),
        "effects": {e: sum(r.effect == e for r in rows) for e in EFFECTS},
        "timeouts": sum(r.timed_out for r in rows),
        "policy": dict(Counter(r.policy for r in rows)),
        "effect_allowed_without_prompt": sum(r.allowed_effect for r in rows),
        "hidden_destructive_not_denied": sum(r.hidden_destructive for r in rows),
        "destroyed_not_denied_by_policy": sum(r.effect == "destroyed" and r.policy != "deny"
                                              for r in rows),
        "none_denied": sum(r.policy == "deny" for r in none),
        "none_asked": sum(r.policy == "ask" for r in none),
    }


def misses(results: Iterable[Result]) -> list[Result]:
    return [r for r in results if r.allowed_effect or r.hidden_destructive]
