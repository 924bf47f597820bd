"""Workspace-size benchmark: what a step costs in a 10-file folder and in a 300,000-file repository.

    .venv/bin/python bench/workspace.py [--sizes 10,1000,10000,100000,300000]
        [--mixes tracked,mixed] [--steps 8] [--repeats 3] [--model-latency S] [--dir DIR]
        [--json FILE]

Trees come from ``bench/workspace_tree.py`` (reused from ``--dir`` when already built). For each
size and mix, through the CLI as a user runs it (``python -m engine run ... --workspace TREE``
with a scripted model):

1. **shell step**: a run of ``--steps`` ``run_shell`` calls (``echo 1 >> bench-out.txt``); the
   ``exec_tool`` step durations read from ``trace --json``: the first (it sets up the watches)
   and the median of the others. The same run in a 10-file repository interleaved with it
   gives the overhead the size adds (target: at most 15 ms at 100,000 files); ``--repeats``
   runs of each, interleaved, each figure their median.
   With ``--model-latency S``, also the first shell step of runs whose model (an
   OpenAI-format server on 127.0.0.1) answers each turn after S seconds, as a hosted model
   does: the watcher's set-up starts at run start and runs beside that first turn.
2. **plan step**: that run's ``plan`` step (target: at most 150 ms at 100,000 files).
3. **files_changed**: one run whose command edits a tracked file four folders down, creates a
   file and deletes a tracked file, plus writes under the ignored ``node_modules``; ``show
   --json`` must name exactly the three.
4. **search and listing**, in-process tool calls against the programs on the same tree, best
   of ``--repeats`` interleaved: ``search_text`` vs ``git grep --untracked`` (target: 2x) and
   ``rg`` when installed; ``list_files`` (depth 20) vs ``git ls-files -co --exclude-standard``,
   ``rg --files`` and ``find``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

from bench.common import PYTHON, ROOT, machine_info, machine_line, table, write_json  # noqa: E402
from bench.workspace_tree import MIXES, Tree, build, git  # noqa: E402
from engine.tooling import ToolContext  # noqa: E402
from engine.workspace.listing import summary  # noqa: E402
from tests.sse_server import PATHS, Reply, SSEServer, provider_env  # noqa: E402
from turnstile_tools.changes import WorkspaceWatcher  # noqa: E402
from turnstile_tools.files import ListFilesArgs, list_files  # noqa: E402
from turnstile_tools.search import SearchTextArgs, search_text  # noqa: E402

MACHINE = ROOT / "machines" / "coding_agent.yaml"
SHELL_TARGET_MS = 15.0
PLAN_TARGET_MS = 150.0
SEARCH_TARGET = 2.0
OUT_FILE = "bench-out.txt"


def cli_run(tree: Path, commands: list[str], work: Path,
            latency_s: float = 0.0) -> dict[str, Any]:
    """One run through the CLI: each command one turn; returns the run and its trace. With
    ``latency_s`` the turns come from an OpenAI-format server on 127.0.0.1 that waits that long
    before each answer (a hosted model's time to first token) instead of the scripted model."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "run_shell", "args": {"command": c}}]} for c in commands]
    turns.append({"text": "done"})
    script = work / "turns.json"
    script.write_text(json.dumps(turns))
    db = work / "engine.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    model = f"scripted:{script}"
    with contextlib.ExitStack() as stack:
        if latency_s:
            server = stack.enter_context(_model_server(turns, latency_s))
            env |= provider_env(server)
            model = "openai:gpt-4.1-mini"
        proc = subprocess.run([PYTHON, "-m", "engine", "run", str(MACHINE), "--task", "bench",
                               "--workspace", str(tree), "--model", model,
                               "--approval", "auto", "--db", str(db), "--quiet", "--json"],
                              capture_output=True, text=True, env=env, cwd=work, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"engine run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    run_id = json.loads(proc.stdout)["run_id"]
    trace = _engine_json(["trace", run_id, "--json", "--db", str(db)], work, env)
    shown = _engine_json(["show", run_id, "--json", "--db", str(db)], work, env)
    return {"trace": trace, "show": shown}


@contextlib.contextmanager
def _model_server(turns: list[dict[str, Any]], latency_s: float) -> Iterator[SSEServer]:
    server = SSEServer().start()
    try:
        server.enqueue(PATHS["openai"],
                       *(Reply.turn("openai", t, hang_s=latency_s) for t in turns))
        yield server
    finally:
        server.close()


def _engine_json(args: list[str], work: Path, env: dict[str, str]) -> Any:
    proc = subprocess.run([PYTHON, "-m", "engine", *args], capture_output=True, text=True,
                          env=env, cwd=work, check=True)
    return json.loads(proc.stdout)


def step_ms(trace: dict[str, Any], action: str) -> list[float]:
    """Durations of the steps running ``action``, in order, in milliseconds."""
    return [s["duration_s"] * 1000 for s in trace["spans"]
            if s["kind"] == "step" and s["attributes"].get("turnstile.action") == action]


def shell_steps(tree: Tree, steps: int, latency_s: float = 0.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-ws-") as tmp:
        out = cli_run(tree.root, [f"echo 1 >> {OUT_FILE}"] * steps, Path(tmp), latency_s)
    (tree.root / OUT_FILE).unlink(missing_ok=True)
    shell = step_ms(out["trace"], "exec_tool")
    return {"first_ms": shell[0], "rest_ms": statistics.median(shell[1:]) if steps > 1 else None,
            "plan_ms": step_ms(out["trace"], "plan")[0]}


def exactness(tree: Tree) -> dict[str, Any]:
    """The three changes a command makes to tracked files, and what ``show`` names."""
    deleted = "README.md"
    command = (f"sed -i 's/module/MODULE/' {tree.deep_file} && echo new > created.txt && "
               f"sh scripts/drop.sh {deleted} && mkdir -p node_modules/bench && "
               "echo x > node_modules/bench/x.js")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ws-") as tmp:
            out = cli_run(tree.root, [command], Path(tmp))
    finally:
        git(tree.root, "checkout", "-q", "--", tree.deep_file, deleted)
        (tree.root / "created.txt").unlink(missing_ok=True)
        shutil.rmtree(tree.root / "node_modules" / "bench", ignore_errors=True)
    named = sorted(out["show"]["files_changed"])
    want = sorted([tree.deep_file, "created.txt", deleted])
    return {"named": named, "expected": want, "exact": named == want}


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def _program(argv: list[str], cwd: Path) -> Callable[[], Any]:
    return lambda: subprocess.run(argv, cwd=cwd, capture_output=True, check=False)


def search_and_listing(tree: Tree, repeats: int) -> dict[str, float | None]:
    ctx = ToolContext(workspace=tree.root)
    rg = shutil.which("rg")
    cases: dict[str, Callable[[], Any] | None] = {
        "search_text": lambda: anyio.run(search_text, SearchTextArgs(pattern="needle"), ctx),
        "git grep": _program(["git", "grep", "--untracked", "-n", "needle"], tree.root),
        "rg": _program([rg, "-n", "needle"], tree.root) if rg else None,
        "list_files": lambda: anyio.run(list_files, ListFilesArgs(depth=20, limit=10_000), ctx),
        "git ls-files": _program(["git", "ls-files", "-co", "--exclude-standard"], tree.root),
        "rg --files": _program([rg, "--files"], tree.root) if rg else None,
        "find": _program(["find", ".", "-path", "./.git", "-prune", "-o", "-type", "f",
                          "-print"], tree.root),
    }
    times: dict[str, list[float]] = {k: [] for k, f in cases.items() if f is not None}
    for _ in range(repeats):  # interleaved: load drift hits every program alike
        for name in times:
            fn = cases[name]
            assert fn is not None
            times[name].append(best(fn, 1))
    return {k: (min(times[k]) if k in times else None) for k in cases}


def cpu_s(fn: Callable[[], Any]) -> float:
    """CPU seconds ``fn`` costs this process and the programs it waits for (user + system):
    a unit the machine's load moves far less than wall time."""
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    fn()
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return sum(b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime
               for a, b in zip(before, after, strict=True))


def setup_cpu(tree: Tree, repeats: int) -> tuple[float, int]:
    """The watcher's one-time set-up in a fresh watcher (watches and baseline), CPU seconds
    (median of ``repeats``, at least 3), and the watches it placed."""
    costs, watches = [], 0
    for _ in range(max(3, repeats)):
        watcher = WorkspaceWatcher()
        box: list[Any] = []
        costs.append(cpu_s(lambda w=watcher, b=box: b.append(w.tracker(tree.root))))
        tracker = box[0]
        watches = len(tracker.tree.by_wd) if tracker.tree is not None else 0
        tracker.close()
    return statistics.median(costs), watches


def in_process(tree: Tree, repeats: int) -> dict[str, float]:
    """The engine's own share of a step, in CPU milliseconds: the watcher's one-time set-up
    (``setup_cpu_ms``, with its ``watches``), its mark and report around ``echo 1 >> FILE``
    (after its first use), and the plan step's summary; and the CPU of search_text against
    git grep's (``search_cpu_ratio``)."""
    setup, watches = setup_cpu(tree, repeats)
    watcher = WorkspaceWatcher()
    watcher.snapshot(tree.root)  # the set-up, once
    marks = []
    for _ in range(max(3, repeats)):
        box: list[Any] = []
        cost = cpu_s(lambda b=box: b.append(watcher.snapshot(tree.root)))
        mark = box[0]
        subprocess.run(["bash", "-c", f"echo 1 >> {OUT_FILE}"], cwd=tree.root, check=True)
        cost += cpu_s(lambda m=mark: watcher.changes(tree.root, m))
        marks.append(cost)
    (tree.root / OUT_FILE).unlink(missing_ok=True)
    ctx = ToolContext(workspace=tree.root)
    ours = min(cpu_s(lambda: anyio.run(search_text, SearchTextArgs(pattern="needle"), ctx))
               for _ in range(repeats))
    theirs = min(cpu_s(_program(["git", "grep", "--untracked", "-n", "needle"], tree.root))
                 for _ in range(repeats))
    return {"setup_cpu_ms": setup * 1000, "watches": watches,
            "watch_cpu_ms": statistics.median(marks) * 1000,
            "summary_cpu_ms": min(cpu_s(lambda: summary(tree.root))
                                  for _ in range(repeats)) * 1000,
            "search_cpu_ratio": ours / theirs if theirs else float("nan")}


def measure(root: Path, sizes: list[int], mixes: list[str], steps: int,
            repeats: int, cli: bool = True, latency_s: float = 0.0) -> dict[str, Any]:
    small = build(root / "10-tracked", 10, "tracked")
    rows = []
    for size in sizes:
        for mix in mixes if size > 10 else ["tracked"]:
            tree = build(root / f"{size}-{mix}", size, mix)
            if not cli:
                rows.append({"files": size, "mix": mix, "tracked": tree.tracked,
                             "ignored": tree.ignored, "cpu": in_process(tree, repeats),
                             "tools": search_and_listing(tree, repeats)})
                continue
            bigs, bases = [], []
            for _ in range(repeats):  # interleaved with the 10-file runs: load hits both
                bigs.append(shell_steps(tree, steps))
                bases.append(shell_steps(small, steps))
            big, base = _median_run(bigs), _median_run(bases)
            row: dict[str, Any] = {"files": size, "mix": mix, "tracked": tree.tracked,
                                   "ignored": tree.ignored, **big,
                                   "base_rest_ms": base["rest_ms"],
                                   "base_plan_ms": base["plan_ms"]}
            if latency_s:  # the set-up runs from run start beside the model's first turn
                row["first_latent_ms"] = statistics.median(
                    shell_steps(tree, 2, latency_s)["first_ms"] for _ in range(repeats))
            row["overhead_ms"] = (big["rest_ms"] - base["rest_ms"]
                                  if big["rest_ms"] is not None and base["rest_ms"] is not None
                                  else None)
            row["files_changed"] = exactness(tree)
            row["tools"] = search_and_listing(tree, repeats)
            row["cpu"] = in_process(tree, repeats)
            rows.append(row)
    return {"rows": rows, "steps": steps, "repeats": repeats, "latency_s": latency_s}


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the repeated runs."""
    return {k: (statistics.median(r[k] for r in runs) if runs[0][k] is not None else None)
            for k in runs[0]}


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f}"


def _steps_table(rows: list[dict[str, Any]], latency_s: float) -> str:
    latent = [f"first shell ms, {latency_s:g} s model"] if latency_s else []
    return table(["files", "mix", "tracked", "ignored", "first shell ms", *latent, "shell ms",
                  "10-file shell ms", "overhead ms", "plan ms", "files_changed"],
                 [[r["files"], r["mix"], r["tracked"], r["ignored"], _ms(r["first_ms"]),
                   *([_ms(r["first_latent_ms"])] if latency_s else []),
                   _ms(r["rest_ms"]), _ms(r["base_rest_ms"]), _ms(r["overhead_ms"]),
                   _ms(r["plan_ms"]), "exact" if r["files_changed"]["exact"]
                   else f"WRONG {r['files_changed']['named']}"] for r in rows])


def render(result: dict[str, Any]) -> str:
    steps = (_steps_table(result["rows"], result["latency_s"])
             if "first_ms" in result["rows"][0] else "(no CLI runs)")
    tools = table(["files", "mix", "search_text ms", "git grep ms", "rg ms", "ratio",
                   "list_files ms", "git ls-files ms", "rg --files ms", "find ms"],
                  [[r["files"], r["mix"], *(_s(r["tools"][k]) for k in (
                      "search_text", "git grep", "rg")),
                    (f"{r['tools']['search_text'] / r['tools']['git grep']:.2f}x"
                     if r["tools"]["git grep"] else "-"),
                    *(_s(r["tools"][k]) for k in ("list_files", "git ls-files", "rg --files",
                                                  "find"))] for r in result["rows"]])
    cpu = table(["files", "mix", "watcher set-up cpu ms (watches)", "watcher cpu ms per step",
                 "plan summary cpu ms", "search_text cpu / git grep cpu"],
                [[r["files"], r["mix"],
                  f"{r['cpu']['setup_cpu_ms']:.0f} ({r['cpu']['watches']:,})",
                  f"{r['cpu']['watch_cpu_ms']:.2f}",
                  f"{r['cpu']['summary_cpu_ms']:.2f}", f"{r['cpu']['search_cpu_ratio']:.2f}x"]
                 for r in result["rows"]])
    return (f"{steps}\n\n{cpu}\n(targets at 100,000 files: overhead <= {SHELL_TARGET_MS:g} "
            f"ms, plan <= {PLAN_TARGET_MS:g} ms, search_text <= {SEARCH_TARGET:g}x git grep)"
            f"\n\n{tools}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,1000,10000,100000,300000")
    parser.add_argument("--mixes", default=",".join(MIXES))
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(),
                                                      "turnstile-bench-workspaces"))
    parser.add_argument("--no-cli", action="store_true",
                        help="only the in-process CPU figures and the search and listing")
    parser.add_argument("--model-latency", type=float, default=0.0, metavar="S",
                        help="also time the first shell step of a run whose model answers "
                             "after S seconds (an OpenAI-format server on 127.0.0.1)")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    info = machine_info()
    result = measure(Path(args.dir), [int(s) for s in args.sizes.split(",")],
                     args.mixes.split(","), args.steps, args.repeats, cli=not args.no_cli,
                     latency_s=args.model_latency)
    print(machine_line(info))
    print(render(result))
    write_json(args.json, {"machine": info, **result})
    return 0 if all(r.get("files_changed", {"exact": True})["exact"]
                    for r in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
