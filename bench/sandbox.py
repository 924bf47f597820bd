"""Sandbox benchmark: what bubblewrap adds to one shell call, and bwrap's own start-up cost.

    .venv/bin/python bench/sandbox.py [--calls 200] [--tree 100000] [--json FILE]

1. run_shell (the real tool, ``true``) N times sandboxed (the run's ``Confinement`` with bwrap)
   and N times unconfined (``mode: off``: ``setpriv --pdeathsig`` only), in a plain folder and
   in a git repository with ``vcs: write`` (as the bundled machines run: ``.git`` pinned, its
   sensitive entries read-only, its top level listed before and swept after each command),
   interleaved so load drift hits all alike. Overhead = median sandboxed - median unconfined
   (target < 15 ms).
2. bwrap's start-up: ``subprocess.run`` of ``bwrap <the flags every command gets> true`` vs of
   plain ``true``, N times each.
3. What the limits add to each command: creating and removing its cgroups, and the ``sh`` that
   joins them and sets the resource limits before ``bwrap`` (``sh ... true`` vs ``true``).
4. With ``--tree FILES``, in a generated repository of that many files (two thirds in an
   ignored ``node_modules/``, ``bench/workspace_tree.py``): the run-start survey (the walk that
   finds hard-linked files and other repositories and watches every folder) and what
   ``Confinement.before`` and ``after`` cost per command, for ``true`` and for a command that
   makes 50 folders (which ``after`` walks).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import machine_info, machine_line, summary, table, write_json  # noqa: E402
from engine.sandbox import cgroups, confinement, probe, protected_paths  # noqa: E402
from engine.sandbox.bwrap import MountPlan, bwrap_argv  # noqa: E402
from engine.spec.model import SandboxSpec  # noqa: E402
from engine.tooling.spec import ToolContext  # noqa: E402
from turnstile_tools.shell import RunShellArgs, run_shell  # noqa: E402

TARGET_MS = 15.0


async def shell_calls(workspace: Path, repo: Path, calls: int) -> dict[str, list[float]]:
    """Seconds per run_shell call, sandboxed and unconfined, in a folder and a repository,
    interleaved."""
    ctxs = {}
    for suffix, where, spec in (("", workspace, SandboxSpec()),
                                (" (repository)", repo, SandboxSpec(vcs="write"))):
        jail = confinement(spec, where, protected_paths(where))
        assert jail.active, jail.reason
        ctxs[f"sandboxed{suffix}"] = ToolContext(workspace=where, confinement=jail)
        ctxs[f"unconfined{suffix}"] = ToolContext(
            workspace=where, confinement=confinement(SandboxSpec(mode="off"), where))
    times: dict[str, list[float]] = {name: [] for name in ctxs}
    args = RunShellArgs(command="true")
    for _ in range(calls):
        for name, ctx in ctxs.items():
            started = time.perf_counter()
            result = await run_shell(args, ctx)
            times[name].append(time.perf_counter() - started)
            assert not result.is_error, result.content
    return times


def git_repository(path: Path) -> Path:
    """A repository with one commit, as a run's workspace usually is."""
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.email=bench@example.com", "-c", "user.name=b"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    return path


def startup(workspace: Path, calls: int) -> dict[str, list[float]]:
    """Seconds per ``subprocess.run``: bwrap with the standard flags vs the bare command."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    true = shutil.which("true") or "/bin/true"
    argv = bwrap_argv(bwrap, [true], MountPlan(str(workspace)), str(workspace))
    times: dict[str, list[float]] = {"bwrap true": [], "true": []}
    for _ in range(calls):
        for name, cmd in (("bwrap true", argv), ("true", [true])):
            started = time.perf_counter()
            subprocess.run(cmd, check=True, env={"PATH": os.environ.get("PATH", "")})
            times[name].append(time.perf_counter() - started)
    return times


def limits_cost(calls: int) -> dict[str, list[float]]:
    """Seconds per cgroup pair created and removed, and per wrapped ``true`` (the ``sh`` that
    joins the groups, where they can be made, and sets the limits) vs bare ``true``."""
    true = shutil.which("true") or "/bin/true"
    times: dict[str, list[float]] = {"cgroups create+remove": [], "limits sh + true": []}
    for _ in range(calls):
        started = time.perf_counter()
        group = cgroups.create({"pids": 1024, "memory": 4 << 30})
        created = time.perf_counter() - started
        wrapper = cgroups.join_script(group.join_files if group else (), 3600, 4 << 30)
        started = time.perf_counter()
        subprocess.run([*wrapper, true], check=True, env={"PATH": os.environ.get("PATH", "")})
        times["limits sh + true"].append(time.perf_counter() - started)
        if group is not None:
            started = time.perf_counter()
            group.remove()
            times["cgroups create+remove"].append(created + time.perf_counter() - started)
    return {k: v for k, v in times.items() if v}


def survey_cost(files: int, calls: int) -> dict[str, Any]:
    """The survey's first walk (s) and ``before``/``after`` per command (ms, median) in a
    generated repository of ``files`` files."""
    from bench.workspace_tree import build
    from engine.sandbox.survey import Survey

    root = Path(tempfile.gettempdir()) / f"bench-sandbox-tree-{files}"
    build(root, files, "mixed")
    started = time.perf_counter()
    survey = Survey(str(root), (str(root / ".git"),))
    survey.repositories()
    walk = time.perf_counter() - started
    jail = confinement(SandboxSpec(vcs="write"), root)
    out: dict[str, Any] = {"files": files, "first_walk_s": walk, "watches": len(survey._by_wd)}
    for name, command in (("true", "true"), ("mkdir 50", "mkdir -p made/$RANDOM/{1..50}")):
        before, after = [], []
        for _ in range(calls):
            started = time.perf_counter()
            prepared = jail.before()
            before.append(time.perf_counter() - started)
            subprocess.run(jail.command(["bash", "-c", command], root, False, prepared),
                           cwd=root, env=jail.env(os.environ), check=True)
            started = time.perf_counter()
            jail.after(prepared)
            after.append(time.perf_counter() - started)
        out[name] = {"before_ms": summary(before)["median"] * 1000,
                     "after_ms": summary(after)["median"] * 1000}
    shutil.rmtree(root / "made", ignore_errors=True)
    return out


def measure(calls: int) -> dict[str, Any]:
    found = probe()
    if not found.ok:
        return {"available": False, "reason": found.reason}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        workspace = Path(tmp) / "folder"
        workspace.mkdir()
        repo = git_repository(Path(tmp) / "repo")
        shell = anyio.run(shell_calls, workspace, repo, calls)
        boot = startup(workspace, calls)
        bounds = limits_cost(calls)
    stats = {k: summary(v) for k, v in {**shell, **boot, **bounds}.items()}
    overhead = stats["sandboxed"]["median"] - stats["unconfined"]["median"]
    in_repo = (stats["sandboxed (repository)"]["median"]
               - stats["unconfined (repository)"]["median"])
    bwrap_cost = stats["bwrap true"]["median"] - stats["true"]["median"]
    return {"available": True, "bwrap": found.bwrap, "version": found.version, "calls": calls,
            "stats": stats, "overhead_s": overhead, "overhead_repository_s": in_repo,
            "bwrap_startup_s": bwrap_cost, "load_average": os.getloadavg(),
            "target_s": TARGET_MS / 1000,
            "pass": max(overhead, in_repo) * 1000 < TARGET_MS}


def render(r: dict[str, Any]) -> str:
    if not r.get("available"):
        return f"sandbox: not measured: {r.get('reason')}"
    rows = [[name, f"{s['median'] * 1000:.2f}", f"{s['min'] * 1000:.2f}",
             f"{s['max'] * 1000:.2f}"] for name, s in r["stats"].items()]
    lines = [table([f"{r['calls']} calls each", "median ms", "min ms", "max ms"], rows),
             f"run_shell overhead sandboxed vs unconfined: {r['overhead_s'] * 1000:.2f} ms "
             f"median in a folder, {r['overhead_repository_s'] * 1000:.2f} ms in a repository "
             f"(target < {TARGET_MS:g} ms): {'PASS' if r['pass'] else 'FAIL'}",
             "load average: " + " ".join(f"{x:.2f}" for x in r["load_average"]),
             f"bwrap start-up (bwrap true - true): {r['bwrap_startup_s'] * 1000:.2f} ms "
             f"({r['bwrap']} {r['version']})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tree", type=int, default=0,
                        help="also measure the survey in a repository of this many files")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    info = machine_info()
    result = measure(args.calls)
    print(machine_line(info))
    print(render(result))
    if args.tree and result.get("available"):
        tree = result["survey"] = survey_cost(args.tree, min(args.calls, 50))
        print(f"survey at {tree['files']:,} files: first walk {tree['first_walk_s']:.2f} s "
              f"({tree['watches']:,} folders watched); per command before/after: "
              + "; ".join(f"{k} {tree[k]['before_ms']:.2f}/{tree[k]['after_ms']:.2f} ms"
                          for k in ("true", "mkdir 50")))
    write_json(args.json, {"machine": info, **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
