"""Throughput through the CLI, as a user or an eval suite runs it, beside LangGraph and Burr.

    .venv/bin/python bench/cli.py [--n 25 100 400 1600] [--repeats 7 5 6 3]
                                  [--turnstile-repeats 15 11 11 5] [--instructions] [--json FILE]

Turnstile: ``python -m engine run machines/coding_agent.yaml --golden TASK --approval auto`` in a
fresh process, on a generated scripted golden task of N turns (each turn ~500 bytes of text and
one ``read_file`` of a 1 KB file, the final answer at turn N), with stdout piped (read by this
process), sent to ``/dev/null``, and with ``--quiet`` (when the CLI has it). LangGraph +
``SqliteSaver`` (``durability="sync"``) and Burr + ``SQLitePersister`` run the same loop shape
(an agent node returning the same scripted turns, a tool node reading the same files) in a fresh
process of their own, started by this script in the same invocation.

Before the timed repeats every system runs once, untimed, on a 3-turn task (``warm_up``):
each child then starts as a user's process does after the first run, with its modules' compiled
bytecode cached (children do not inherit ``PYTHONDONTWRITEBYTECODE``) and its files in the page
cache. Every figure is the minimum over repeats (the machine may be shared), each with the
1-minute load average when it was taken. A whole process is timed, so start-up is in every figure;
"ms per turn" is therefore the marginal cost between two sizes, e.g. (T(400) - T(25)) / 375, and
growth is the marginal cost per turn from 100 to 400 over the one from 25 to 100 (1.0 = flat).
Bytes per turn: the database (WAL folded in) beyond an empty one, per turn. Peak RSS: the
child's ``ru_maxrss``.

``--instructions`` also counts, under valgrind's callgrind, the user-space instructions of one
run of each system at each size (Turnstile piped and ``--quiet``): the same figures, ratios and
growths in a unit the machine's load does not move (``count_instructions``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    FINAL_TEXT,
    PYTHON,
    ROOT,
    db_bytes,
    filler,
    fmt_ratio,
    machine_info,
    machine_line,
    table,
    turn_text,
    verdict,
    write_json,
)

FILES = 8
"""The fixture's 1 KB files, read in turn (a run reads each many times)."""
FILE_BYTES = 1000
MACHINE = ROOT / "machines" / "coding_agent.yaml"
SYSTEMS = ("turnstile", "langgraph", "burr")
MODES = ("pipe", "devnull", "quiet")
SPEEDUP_TARGET = 10.0
GROWTH_LIMIT = 1.2
QUIET_LIMIT = 1.10
OTHERS_MAX = 400
"""LangGraph's and Burr's checkpoints hold the whole conversation: 1,600 turns write GBs."""


def file_name(i: int) -> str:
    return f"notes/item_{i % FILES}.txt"


def file_text(k: int) -> str:
    head = f"item {k}: "
    return head + filler(FILE_BYTES - len(head), k * 13 + 1)


# -- the golden task ------------------------------------------------------------------------


def write_task(folder: Path, turns: int) -> Path:
    """A golden task folder of ``turns`` scripted turns; the fixture holds the files read."""
    task = folder / f"cli_bench_{turns}"
    notes = task / "fixture" / "notes"
    notes.mkdir(parents=True)
    for k in range(FILES):
        (notes / f"item_{k}.txt").write_text(file_text(k))
    spec = {
        "description": f"Benchmark: {turns} turns of text and one read_file each.",
        "category": "benchmark", "prompt": "Read the notes one by one, then report.",
        "machine": "machines/coding_agent.yaml", "approval": "auto", "policy": None,
        # never compress (the same conversation as the other systems); no limit is reached
        "limits": {"max_steps": 5 * turns + 10, "max_tokens": 10**13, "max_cost_usd": 10**6,
                   "timeout_s": 3600},
        "context": {"window_tokens": 10**9},
        "checks": [{"run_status": "completed"}],
    }
    (task / "task.yaml").write_text(json.dumps(spec, indent=1) + "\n")  # JSON is YAML
    lines = []
    for i in range(turns - 1):
        lines.append(f"- text: {json.dumps(turn_text(i))}\n"
                     f"  tool_calls:\n    - {{name: read_file, args: {{path: {file_name(i)}}}}}")
    lines.append(f"- text: {json.dumps(FINAL_TEXT)}")
    (task / "turns.yaml").write_text("\n".join(lines) + "\n")
    return task


# -- one timed process ----------------------------------------------------------------------


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError):
        return -1.0


SETTLE_S = 0.3

REPEATS = (7, 5, 6, 3)
"""Repeats of 25, 100, 400 and 1,600 turns for LangGraph, Burr and ``--baseline``. N = 400
carries every target (the ratios to LangGraph and Burr, ``--quiet`` vs piped, both growths):
on a shared machine the fastest of 3 runs of it still moved by a tenth from one invocation to
the next, so it has 6."""

TURNSTILE_REPEATS = (15, 11, 11, 5)
"""Repeats of Turnstile's own runs (each output mode). They are cheap (a second or two), and
the growth and ``--quiet`` targets are differences of a few tens of milliseconds between
whole processes: on a machine whose speed varies by half from one run to the next (seen here:
the same 400-turn run took 0.73-1.16 s of CPU within one invocation), the fastest of 5-7 runs
of each size still left those targets to chance (1.34x growth measured where the instruction
counts, ``--instructions``, grow 1.01x)."""


def settle() -> None:
    """Let the previous child's writes reach the disk before the next child is timed: LangGraph
    leaves tens of MB for the kernel to write back, which otherwise slows the start of the
    process timed after it (by about a fifth of a short Turnstile run)."""
    os.sync()
    time.sleep(SETTLE_S)


def timed_process(cmd: Sequence[str], *, mode: str, env: Mapping[str, str],
                  cwd: Path) -> dict[str, Any]:
    """Run ``cmd``; wall time, peak RSS, bytes written to stdout, exit code, load average."""
    settle()
    load = loadavg()
    out = subprocess.DEVNULL if mode == "devnull" else subprocess.PIPE
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE,
                            cwd=cwd, env=dict(env))
    got = 0
    if proc.stdout is not None:
        while chunk := proc.stdout.read(65536):
            got += len(chunk)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                           f"{err.decode(errors='replace')[-3000:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "user_s": usage.ru_utime, "sys_s": usage.ru_stime,
            "peak_rss_bytes": usage.ru_maxrss * 1024, "stdout_bytes": got,
            "load": load, "stderr": err.decode(errors="replace")[-2000:]}


NOT_INHERITED = ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB", "ENGINE_STORE_URL",
                 "OTEL_EXPORTER_OTLP_ENDPOINT", "FORCE_COLOR", "PYTHONDONTWRITEBYTECODE")
"""Variables a child does not inherit. ``PYTHONDONTWRITEBYTECODE`` (set in some containers)
would make every Turnstile process compile its modules from source, about a quarter of a
second of start-up that varies by tens of milliseconds from run to run, while LangGraph and
Burr, installed by pip, start from compiled files: a user's checkout (and CI) caches bytecode
after its first run, so the children do too (``warm_up`` makes it)."""


def child_env(root: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    return {**env, "PYTHONPATH": str(root)}


def quiet_supported() -> bool:
    proc = subprocess.run([PYTHON, "-m", "engine", "run", "--help"], capture_output=True,
                          text=True, cwd=ROOT, env=child_env())
    return "--quiet" in proc.stdout


def turnstile_command(task: Path, db: Path, mode: str, root: Path = ROOT) -> list[str]:
    """``python -m engine run`` of the checkout at ``root`` on ``task``, in output ``mode``."""
    return [PYTHON, "-m", "engine", "run", str(root / "machines" / "coding_agent.yaml"),
            "--golden", str(task), "--approval", "auto", "--db", str(db),
            *(["--quiet"] if mode == "quiet" else [])]


def run_turnstile(folder: Path, task: Path, turns: int, mode: str,
                  root: Path = ROOT) -> dict[str, Any]:
    """``python -m engine run`` of the checkout at ``root`` (another one: ``--baseline``)."""
    db = folder / f"ts-{mode}-{turns}-{time.monotonic_ns()}" / "engine.db"
    cmd = turnstile_command(task, db, mode, root)
    got = timed_process(cmd, mode="pipe" if mode == "quiet" else mode, env=child_env(root),
                        cwd=root)
    got["db_bytes"] = db_bytes(db)
    traces = list((db.parent / "traces").glob("*.json"))
    got["trace_bytes"] = sum(p.stat().st_size for p in traces)
    conn = sqlite3.connect(str(db))
    try:
        got["steps"] = conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
        got["status"] = conn.execute("SELECT status FROM runs").fetchone()[0]
    finally:
        conn.close()
    if got["status"] != "completed":
        raise RuntimeError(f"Turnstile run of {turns} turns ended {got['status']}")
    shutil.rmtree(db.parent, ignore_errors=True)
    return got


def other_command(system: str, task: Path, turns: int, db: Path) -> list[str]:
    """LangGraph's or Burr's loop on ``task``, in a child process of this script."""
    return [PYTHON, str(Path(__file__).resolve()), "--child", system, str(turns),
            str(task / "fixture"), str(db)]


def run_other(system: str, folder: Path, task: Path, turns: int) -> dict[str, Any]:
    db = folder / f"{system}-{turns}-{time.monotonic_ns()}.db"
    cmd = other_command(system, task, turns, db)
    got = timed_process(cmd, mode="pipe", env=child_env(), cwd=ROOT)
    got["db_bytes"] = db_bytes(db)
    db.unlink(missing_ok=True)
    return got


# -- the other systems' loops (run in the child) ----------------------------------------------


def scripted_turn(i: int, turns: int) -> tuple[str, str | None]:
    """Turn ``i``'s text and the file it reads (``None``: the final answer)."""
    return (turn_text(i), file_name(i)) if i < turns - 1 else (FINAL_TEXT, None)


def langgraph_child(turns: int, fixture: Path, db: Path) -> str:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013

    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return (fixture / path).read_text()

    def agent(state: Any) -> dict[str, Any]:
        i = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        text, path = scripted_turn(i, turns)
        calls = [{"name": "read_file", "args": {"path": path}, "id": f"call_{i}"}] if path else []
        return {"messages": [AIMessage(content=text, tool_calls=calls)]}

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([read_file]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    conn = sqlite3.connect(str(db), check_same_thread=False)
    saver = SqliteSaver(conn)
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * turns + 10}
    out = app.invoke({"messages": [SystemMessage(content="You are a coding agent."),
                                   HumanMessage(content="Read the notes one by one.")]},
                     config, durability="sync")
    conn.close()
    return str(out["messages"][-1].content)


def burr_child(turns: int, fixture: Path, db: Path) -> str:
    from burr.core import ApplicationBuilder, State, action, expr
    from burr.core.persistence import SQLitePersister

    @action(reads=["messages"], writes=["messages", "pending"])
    def agent(state: State) -> State:
        i = sum(1 for m in state["messages"] if m["role"] == "assistant")
        text, path = scripted_turn(i, turns)
        calls = [{"name": "read_file", "args": {"path": path}, "id": f"call_{i}"}] if path else []
        return state.append(messages={"role": "assistant", "content": text,
                                      "tool_calls": calls}).update(pending=bool(calls))

    @action(reads=["messages"], writes=["messages"])
    def tools(state: State) -> State:
        call = state["messages"][-1]["tool_calls"][0]
        content = (fixture / call["args"]["path"]).read_text()
        return state.append(messages={"role": "tool", "tool_call_id": call["id"],
                                      "content": content})

    @action(reads=["messages"], writes=[])
    def done(state: State) -> State:
        return state

    persister = SQLitePersister(db_path=str(db), table_name="burr_state")
    persister.initialize()
    app = (ApplicationBuilder()
           .with_actions(agent=agent, tools=tools, done=done)
           .with_transitions(("agent", "tools", expr("pending")), ("tools", "agent"),
                             ("agent", "done"))
           .with_state(messages=[{"role": "system", "content": "You are a coding agent."},
                                 {"role": "user", "content": "Read the notes one by one."}],
                       pending=False)
           .with_entrypoint("agent")
           .with_identifiers(app_id="bench")
           .with_state_persister(persister)
           .build())
    _, _, state = app.run(halt_after=["done"])
    persister.connection.close()
    return str(state["messages"][-1]["content"])


CHILDREN: dict[str, Callable[[int, Path, Path], str]] = {
    "langgraph": langgraph_child, "burr": burr_child}


def child_main(system: str, turns: int, fixture: Path, db: Path) -> None:
    answer = CHILDREN[system](turns, fixture, db)
    if answer != FINAL_TEXT:
        raise SystemExit(f"{system}: the run did not end with the final answer")
    print(answer)


# -- measurement -------------------------------------------------------------------------------


def empty_bytes(folder: Path) -> dict[str, int]:
    """The database bytes of each system before any turn (subtracted from bytes per turn)."""
    from engine.store.sqlite import SqliteStore

    out = {}
    path = folder / "empty-ts.db"
    SqliteStore(path).close()
    out["turnstile"] = db_bytes(path)
    out["langgraph"] = out["burr"] = 0
    if _has("langgraph"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(str(folder / "empty-lg.db"))
        SqliteSaver(conn).setup()
        conn.close()
        out["langgraph"] = db_bytes(folder / "empty-lg.db")
    if _has("burr"):
        from burr.core.persistence import SQLitePersister

        p = SQLitePersister(db_path=str(folder / "empty-burr.db"), table_name="burr_state")
        p.initialize()
        p.connection.close()
        out["burr"] = db_bytes(folder / "empty-burr.db")
    return out


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def best(runs: Sequence[Mapping[str, Any]], turns: int, empty: int) -> dict[str, Any]:
    """The fastest of the repeats, with the spread and the load average of each repeat."""
    top = min(runs, key=lambda r: r["wall_s"])
    cpu = min(runs, key=lambda r: r["cpu_s"])
    return {"turns": turns, "wall_s": top["wall_s"], "load": top["load"],
            "cpu_s": cpu["cpu_s"], "user_s": cpu.get("user_s"), "sys_s": cpu.get("sys_s"),
            "walls_s": [r["wall_s"] for r in runs], "cpus_s": [r["cpu_s"] for r in runs],
            "loads": [r["load"] for r in runs],
            "ms_per_turn_whole": top["wall_s"] / turns * 1000,
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs),
            "bytes_per_turn": (top["db_bytes"] - empty) / turns,
            "stdout_bytes": top["stdout_bytes"], "steps": top.get("steps"),
            "trace_bytes": top.get("trace_bytes")}


def measure(ns: Sequence[int], repeats: Sequence[int], systems: Sequence[str],
            modes: Sequence[str], folder: Path, others_max: int = OTHERS_MAX,
            baseline: Path | None = None,
            turnstile_repeats: Sequence[int] | None = None) -> dict[str, Any]:
    """Every system (and Turnstile output mode) at every N. The repeats are interleaved across
    systems and sizes (round 1 runs every system at every size, then round 2, ...), so a machine
    whose speed drifts over minutes shifts every figure alike, not the small sizes measured
    first. ``baseline``: also the CLI of that checkout, piped (``baseline:pipe``).
    ``turnstile_repeats``: the repeats of Turnstile's own modes (default: ``repeats``)."""
    own = list(turnstile_repeats or repeats)
    empty = empty_bytes(folder)
    empty["baseline"] = empty["turnstile"]
    names = [f"turnstile:{m}" for m in modes if "turnstile" in systems]
    names += ["baseline:pipe"] if baseline else []
    names += [s for s in systems if s != "turnstile"]
    results: dict[str, dict[str, Any]] = {name: {} for name in names}
    warm_up(names, folder, baseline)
    tasks = {n: write_task(folder, n) for n in ns}
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for round_ in range(max([*repeats, *own], default=0)):
        for n, reps, own_reps in zip(ns, repeats, own, strict=True):
            for name in names:
                if name in CHILDREN and n > others_max:
                    continue
                if round_ >= (own_reps if name.startswith("turnstile:") else reps):
                    continue
                print(f"   {name} N={n} (load {loadavg():.2f})", file=sys.stderr, flush=True)
                runs.setdefault((name, n), []).append(_run(name, folder, tasks[n], n, baseline))
    for (name, n), got in runs.items():
        results[name][str(n)] = best(got, n, empty[name.split(":")[0]])
    for task in tasks.values():
        shutil.rmtree(task, ignore_errors=True)
    return {"results": results, "empty_db_bytes": empty}


def _run(name: str, folder: Path, task: Path, n: int, baseline: Path | None) -> dict[str, Any]:
    """One timed run of ``name`` (a system, or Turnstile in an output mode) on ``task``."""
    if name == "baseline:pipe" and baseline:
        return run_turnstile(folder, task, n, "pipe", baseline)
    if name.startswith("turnstile:"):
        return run_turnstile(folder, task, n, name.split(":")[1])
    return run_other(name, folder, task, n)


def warm_up(names: Sequence[str], folder: Path, baseline: Path | None) -> None:
    """One untimed run of each system and mode on a small task, so that every timed run starts
    as a user's does after the first: modules compiled and cached, files in the page cache."""
    task = write_task(folder / "warm-up", 3)
    for name in names:
        print(f"   {name} warm-up", file=sys.stderr, flush=True)
        _run(name, folder, task, 3, baseline)
    shutil.rmtree(folder / "warm-up", ignore_errors=True)


# -- instruction counts (--instructions) ---------------------------------------------------


COUNTED_MODES = ("pipe", "quiet")
"""Turnstile's output modes whose instructions are counted (``/dev/null`` differs from the
pipe only in the kernel, which callgrind does not count)."""


def count_instructions(cmd: Sequence[str], env: Mapping[str, str], cwd: Path) -> int:
    """The user-space instructions one run of ``cmd`` executes (valgrind's callgrind; child
    processes are not followed). The count does not depend on the machine's load, so it
    settles what times on a shared machine cannot: whether the cost per turn grows, and by how
    much ``--quiet`` saves. Under callgrind a run is ~50x slower, so paths that depend on time
    run more often than natively (the runner yields to the event loop every 5 ms: at every
    step here): the count is an upper bound of a native run's, by a few percent."""
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as tmp:
        proc = subprocess.run(["valgrind", "--tool=callgrind",
                               f"--callgrind-out-file={tmp}/callgrind.out", *cmd],
                              stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd,
                              env=dict(env), check=False)
    err = proc.stderr.decode(errors="replace")
    found = re.search(r"Collected : (\d+)", err)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind {' '.join(cmd)} exited {proc.returncode}:\n{err[-3000:]}")
    return int(found[1])


def _counted(name: str, folder: Path, task: Path, n: int) -> int:
    """``count_instructions`` of one run of ``name`` on ``task``, in a database of its own."""
    db_dir = folder / f"cg-{name.replace(':', '-')}-{n}-{time.monotonic_ns()}"
    db_dir.mkdir()
    try:
        if name.startswith("turnstile:"):
            cmd = turnstile_command(task, db_dir / "engine.db", name.split(":")[1])
            return count_instructions(cmd, child_env(), ROOT)
        return count_instructions(other_command(name, task, n, db_dir / "other.db"),
                                  child_env(), ROOT)
    finally:
        shutil.rmtree(db_dir, ignore_errors=True)


def instructions(ns: Sequence[int], systems: Sequence[str], modes: Sequence[str],
                 folder: Path, others_max: int = OTHERS_MAX) -> dict[str, dict[str, Any]]:
    """Instructions of one run of each system (Turnstile piped and ``--quiet``) at each N, as
    ``{name: {N: {"instructions": count}}}``. The counts do not depend on the load, so the
    runs go side by side, one per core."""
    from concurrent.futures import ThreadPoolExecutor  # after the path is set (top of file)
    names = [f"turnstile:{m}" for m in modes if m in COUNTED_MODES and "turnstile" in systems]
    names += [s for s in systems if s != "turnstile"]
    tasks = {n: write_task(folder / "counted", n) for n in ns}
    jobs = [(name, n) for n in ns for name in names if name not in CHILDREN or n <= others_max]
    out: dict[str, dict[str, Any]] = {name: {} for name in names}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counted = {job: pool.submit(_counted, job[0], folder, tasks[job[1]], job[1])
                   for job in jobs}
        for (name, n), future in counted.items():
            out[name][str(n)] = {"instructions": future.result()}
            print(f"   {name} N={n}: {out[name][str(n)]['instructions'] / 1e6:.0f} M "
                  "instructions", file=sys.stderr, flush=True)
    shutil.rmtree(folder / "counted", ignore_errors=True)
    return out


def instruction_table(data: Mapping[str, Any], ns: Sequence[int]) -> str:
    """Millions of instructions per run and per turn (``--instructions``)."""
    counts = data.get("instructions") or {}
    s = summarize(data, ns)
    ref = 400 if 400 in ns else max(ns)
    rows = []
    for name, entry in counts.items():
        e = s.get(name, {})
        rows.append([name, *(f"{entry[str(n)]['instructions'] / 1e6:.0f}" if str(n) in entry
                             else "-" for n in ns),
                     _ms(e.get("instr_per_turn")), _ms(e.get("instr_per_turn_to_max")),
                     fmt_ratio(e.get("instr_growth"))])
    return table(["system (instructions, millions)", *(f"N={n}" for n in ns),
                  f"per turn {min(ns)}->{ref}", f"per turn {ref}->{max(ns)}",
                  "growth (100->400 vs 25->100)"], rows)


def marginal(entry: Mapping[str, Any], a: int, b: int, key: str = "wall_s",
             scale: float = 1000) -> float | None:
    """Milliseconds per turn between ``a`` and ``b`` turns (start-up cancels out); ``key``
    ``cpu_s``: the child's CPU time (user + system), which a busy machine disturbs far less;
    ``instructions`` (with ``scale`` 1e-6): millions of instructions per turn."""
    ea, eb = entry.get(str(a)), entry.get(str(b))
    if not ea or not eb or b <= a:
        return None
    return (eb[key] - ea[key]) / (b - a) * scale


def growth(entry: Mapping[str, Any], ns: Sequence[int], key: str = "wall_s") -> float | None:
    """Marginal cost per turn 100->400 over 25->100 (or the same shape over other sizes)."""
    if len(ns) < 3:
        return None
    lo, mid, hi = ns[0], ns[1], ns[2]
    early, late = marginal(entry, lo, mid, key), marginal(entry, mid, hi, key)
    return _ratio(late, early)


def _instruction_summary(entry: Mapping[str, Any], have: Sequence[int],
                         ref: int) -> dict[str, Any]:
    """Millions of instructions per turn (smallest size to ``ref``, ``ref`` to the largest)
    and their growth, from the counts of ``--instructions``."""
    if not entry:
        return {}
    sizes = [n for n in have if str(n) in entry]
    if len(sizes) < 2:
        return {}
    low, top = min(sizes), max(sizes)
    return {"instr_per_turn": marginal(entry, low, ref, "instructions", 1e-6),
            "instr_per_turn_to_max": (marginal(entry, ref, top, "instructions", 1e-6)
                                      if top > ref else None),
            "instr_growth": growth(entry, sizes, "instructions")}


def summarize(data: Mapping[str, Any], ns: Sequence[int]) -> dict[str, Any]:
    """Per system: ms per turn (marginal, smallest to the reference size), growth, at 1600."""
    ref = 400 if 400 in ns else max(ns)
    out = {}
    for name, entry in data["results"].items():
        have = [n for n in ns if str(n) in entry]
        if not have:
            continue
        top, low = max(have), min(have)
        out[name] = {
            "ms_per_turn": marginal(entry, low, ref), "ref": ref,
            "ms_per_turn_to_max": marginal(entry, ref, top) if top > ref else None,
            "growth": growth(entry, have), "max_n": top,
            "cpu_ms_per_turn": marginal(entry, low, ref, "cpu_s"),
            "cpu_ms_per_turn_to_max": marginal(entry, ref, top, "cpu_s") if top > ref else None,
            "cpu_growth": growth(entry, have, "cpu_s"),
            "bytes_growth": (entry[str(top)]["bytes_per_turn"] / entry[str(low)]["bytes_per_turn"]
                             if entry[str(low)]["bytes_per_turn"] and top > low else None),
            **_instruction_summary(data.get("instructions", {}).get(name, {}), have, ref),
        }
    return out


def targets(data: Mapping[str, Any], ns: Sequence[int]) -> list[list[str]]:
    """PASS/FAIL rows of issue 19's targets (``-`` where a figure is missing), on wall time and
    on the children's CPU time (the cross-check a busy machine disturbs least)."""
    s = summarize(data, ns)
    ts = s.get("turnstile:pipe")
    rows: list[list[str]] = []
    if ts is None:
        return rows
    clocks = [("wall", "ms_per_turn", "growth", "ms_per_turn_to_max"),
              ("cpu", "cpu_ms_per_turn", "cpu_growth", "cpu_ms_per_turn_to_max")]
    if "instr_per_turn" in ts:
        clocks.append(("instructions", "instr_per_turn", "instr_growth",
                       "instr_per_turn_to_max"))
    for clock, per_turn, grow, to_max in clocks:
        for other in ("langgraph", "burr"):
            o = s.get(other)
            speed = _ratio(o and o.get(per_turn), ts[per_turn])
            if clock == "instructions":
                # the others' kernel work (their checkpoint writes) is not counted: the
                # cpu rows carry this target, this one says how much is computation
                rows.append([f"CLI (piped) vs {other} at N={ts['ref']}, user-space "
                             "instructions only (not a target)", fmt_ratio(speed), "-", "-"])
                continue
            rows.append([f"CLI (piped) >= 10x cheaper per turn than {other} at N={ts['ref']}"
                         f" ({clock})", fmt_ratio(speed), ">= 10x",
                         verdict(None if speed is None else speed >= SPEEDUP_TARGET)])
        g = ts[grow]
        rows.append([f"CLI (piped) cost per turn 100->400 vs 25->100 ({clock})", fmt_ratio(g),
                     "<= 1.2x", verdict(None if g is None else g <= GROWTH_LIMIT)])
        flat = _ratio(ts[to_max], ts[per_turn])
        rows.append([f"CLI (piped) cost per turn {ts['ref']}->{max(ns)} vs {min(ns)}->"
                     f"{ts['ref']} ({clock})",
                     fmt_ratio(flat), "<= 1.2x",
                     verdict(None if flat is None else flat <= GROWTH_LIMIT)])
        quiet = s.get("turnstile:quiet")
        q = _ratio(max(quiet.get(per_turn) or 0, ts[per_turn] or 0),
                   min(quiet.get(per_turn) or 0, ts[per_turn] or 0)) if quiet else None
        if quiet:
            rows.append([f"CLI --quiet vs piped, cost per turn ({clock})", fmt_ratio(q),
                         "<= 1.10x", verdict(None if q is None else q <= QUIET_LIMIT)])
    bg = ts["bytes_growth"]
    rows.append([f"CLI bytes/turn at N={max(ns)} vs N={min(ns)}", fmt_ratio(bg), "<= 1.2x",
                 verdict(None if bg is None else bg <= GROWTH_LIMIT)])
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and a > 0 and b > 0 else None


def report(data: Mapping[str, Any], ns: Sequence[int]) -> str:
    s = summarize(data, ns)
    rows = []
    for name, entry in data["results"].items():
        for n in ns:
            e = entry.get(str(n))
            if e:
                rows.append([name, n, f"{e['wall_s']:.2f}", f"{e['cpu_s']:.2f}",
                             f"{e['load']:.1f}",
                             f"{e['ms_per_turn_whole']:.2f}", f"{e['bytes_per_turn']:.0f}",
                             f"{e['peak_rss_bytes'] / 2**20:.0f}",
                             f"{e['stdout_bytes'] / n:.0f}"])
    per_run = table(["system", "N", "wall s (min)", "cpu s (min)", "load", "ms/turn (whole)",
                     "db bytes/turn", "peak RSS MB", "stdout B/turn"], rows)
    summary_rows = []
    for name, e in s.items():
        mpt = e["ms_per_turn"]
        summary_rows.append([name, _ms(mpt), _ms(e["ms_per_turn_to_max"]),
                             fmt_ratio(e["growth"]), _ms(e["cpu_ms_per_turn"]),
                             _ms(e["cpu_ms_per_turn_to_max"]), fmt_ratio(e["cpu_growth"]),
                             fmt_ratio(e["bytes_growth"])])
    ref = 400 if 400 in ns else max(ns)
    head = table(["system", f"ms/turn {min(ns)}->{ref}", f"ms/turn {ref}->{max(ns)}",
                  "growth (100->400 vs 25->100)", f"cpu ms/turn {min(ns)}->{ref}",
                  f"cpu {ref}->{max(ns)}", "cpu growth", f"bytes/turn {max(ns)} vs {min(ns)}"],
                 summary_rows)
    counted = [instruction_table(data, ns)] if data.get("instructions") else []
    return "\n\n".join([per_run, head, *counted,
                        table(["target", "measured", "limit", "result"], targets(data, ns))])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[25, 100, 400, 1600])
    parser.add_argument("--repeats", type=int, nargs="+",
                        help=f"repeats per N of every system (default: {list(REPEATS)}, and "
                        f"{list(TURNSTILE_REPEATS)} for Turnstile's own runs): the small sizes "
                        "are cheap, and their start-up noise weighs most on a marginal cost")
    parser.add_argument("--turnstile-repeats", type=int, nargs="+",
                        help="repeats per N of Turnstile's own runs (default: --repeats if "
                        f"given, else {list(TURNSTILE_REPEATS)})")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each run's instructions under valgrind (one run per "
                        "system and N, side by side: a figure the load does not move)")
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--others-max", type=int, default=OTHERS_MAX,
                        help="largest N for LangGraph and Burr (default %(default)s)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also time the CLI of another checkout (e.g. `git archive` of an "
                        "older commit), piped, in the same invocation")
    parser.add_argument("--json")
    parser.add_argument("--child", nargs=4, metavar=("SYSTEM", "N", "FIXTURE", "DB"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        system, n, fixture, db = args.child
        child_main(system, int(n), Path(fixture), Path(db))
        return 0
    ns = sorted(args.n)
    repeats = _per_size(args.repeats or REPEATS, ns)
    own = _per_size(args.turnstile_repeats or args.repeats or TURNSTILE_REPEATS, ns)
    if args.instructions and shutil.which("valgrind") is None:
        print("bench/cli.py: --instructions needs valgrind (apt-get install valgrind)",
              file=sys.stderr)
        return 2
    systems = [s for s in args.systems if s == "turnstile" or _has(s)]
    modes = [m for m in args.modes if m != "quiet" or quiet_supported()]
    info = {**machine_info(), "burr": _burr_version(), "loadavg_start": loadavg(),
            "interpreter": PYTHON}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        data = measure(ns, repeats, systems, modes, Path(tmp), args.others_max,
                       args.baseline.resolve() if args.baseline else None, own)
        if args.instructions:
            data["instructions"] = instructions(ns, systems, modes, Path(tmp), args.others_max)
    data = {**data, "ns": ns, "summary": summarize(data, ns), "targets": targets(data, ns)}
    print(machine_line(info) + f", Burr {info['burr']}; every system runs on {PYTHON}")
    print(f"load average (1 min) at start: {info['loadavg_start']:.2f}; at end: {loadavg():.2f}"
          "; figures: minimum over repeats, whole process (start-up included)")
    print(report(data, ns))
    write_json(args.json, {"machine": info, **data})
    return 0


def _per_size(repeats: Sequence[int], ns: Sequence[int]) -> list[int]:
    """Repeats given per N, or one figure for every N."""
    return list(repeats) if len(repeats) == len(ns) else [repeats[0]] * len(ns)


def _burr_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("burr")
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
