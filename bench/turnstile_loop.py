"""Turnstile's per-turn runtime overhead on a ReAct-shaped loop, with its real runner and store.

    .venv/bin/python bench/turnstile_loop.py [--n 25 100 400 1600] [--repeats 3] [--json FILE]

The machine has the coding agent's shape (plan -> call_model -> await_approval -> exec_tool ->
checkpoint -> evaluate_stop -> call_model ...: five persisted steps per turn), approval mode
``auto`` with the default policy, the scripted model (one tool call and ~500 bytes of text per
turn, final answer at turn N) and a registered tool returning ~1 KB. Time spent inside the model
client's stream and the tool handler is measured and subtracted, so what remains is the runtime:
actions, transition table, events, ledger, approvals and SQLite commits.

Figures per run: net time per turn over the whole run (mean) and over the last turns (the cost
of a turn at turn N), persisted steps, database bytes per turn (beyond an empty schema), and the
time to load the latest state in a fresh process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    FINAL_TEXT,
    TASK,
    db_bytes,
    emit_last_line,
    fmt_stat,
    machine_info,
    machine_line,
    run_child,
    summary,
    table,
    tool_args,
    tool_result,
    turn_text,
    write_json,
)

STEPS_PER_TURN = 5
"""call_model, await_approval, exec_tool, checkpoint, evaluate_stop."""

MACHINE_YAML = """\
# Benchmark machine: the coding agent's shape with one cheap, read-only tool.
name: bench_agent
kind: agent
initial: plan
limits: {max_steps: MAX_STEPS}
context: {window_tokens: 1000000000}  # never compress: the same conversation as LangGraph's
tools: [lookup]
system_prompt: "You are a benchmark agent. Look items up one at a time, then answer."
states:
  plan:           {action: plan, on: {ready: call_model}}
  call_model:     {action: call_model, on: {tool_calls: await_approval, final: evaluate_stop}}
  await_approval: {action: await_approval, on: {decided: exec_tool, all_denied: call_model}}
  exec_tool:      {action: exec_tool, on: {done: checkpoint}}
  checkpoint:     {action: checkpoint, on: {saved: evaluate_stop}}
  evaluate_stop:  {action: evaluate_stop, on: {continue: call_model, stop: done, exhausted: failed}}
  done:   {final: true}
  failed: {final: true}
"""


def write_machine(folder: Path, turns: int) -> Path:
    """The benchmark machine, with a step limit that a run of ``turns`` turns stays under."""
    path = folder / "bench_agent.yaml"
    path.write_text(MACHINE_YAML.replace("MAX_STEPS", str(STEPS_PER_TURN * turns + 20)))
    return path


def script(turns: int) -> list[dict[str, Any]]:
    """``turns`` scripted model turns: one tool call each, the final answer at the last."""
    out: list[dict[str, Any]] = [
        {"text": turn_text(i), "tool_calls": [{"name": "lookup", "args": tool_args(i)}]}
        for i in range(turns - 1)]
    out.append({"text": FINAL_TEXT})
    return out


@dataclass
class Meter:
    """Time spent in the model client and the tool handler, and when each model call began."""

    model_s: float = 0.0
    tool_s: float = 0.0
    model_cpu_s: float = 0.0
    """CPU time of this thread inside the model and the tool (robust to other processes)."""
    tool_cpu_s: float = 0.0
    call_starts: list[float] = field(default_factory=list)
    call_busy: list[float] = field(default_factory=list)


class LookupArgs(BaseModel):
    query: str


def lookup_spec(meter: Meter | None = None) -> Any:
    """A read-only, idempotent tool whose handler returns ~1 KB at once."""
    from engine.tooling.spec import ToolResult, ToolSpec

    async def handler(args: LookupArgs, ctx: Any) -> ToolResult:
        t, c = time.perf_counter(), time.thread_time()
        result = ToolResult(tool_result(args.query))
        if meter is not None:
            meter.tool_s += time.perf_counter() - t
            meter.tool_cpu_s += time.thread_time() - c
        return result

    return ToolSpec("lookup", "1", "Look up one item by name.", LookupArgs, handler,
                    risk="read", idempotent=True, side_effects=False)


class TimedModel:
    """Wraps a model client and accumulates the time spent inside its stream."""

    def __init__(self, inner: Any, meter: Meter) -> None:
        self.inner = inner
        self.meter = meter
        self.provider = inner.provider
        self.model = inner.model

    async def stream(self, messages: Sequence[Any], tools: Sequence[Any],
                     params: Any) -> AsyncIterator[Any]:
        m = self.meter
        m.call_starts.append(time.perf_counter())
        busy = cpu = 0.0
        it = self.inner.stream(messages, tools, params).__aiter__()
        while True:
            t, c = time.perf_counter(), time.thread_time()
            try:
                event = await it.__anext__()
            except StopAsyncIteration:
                busy += time.perf_counter() - t
                cpu += time.thread_time() - c
                break
            busy += time.perf_counter() - t
            cpu += time.thread_time() - c
            yield event
        m.model_s += busy
        m.model_cpu_s += cpu
        m.call_busy.append(busy)

    async def aclose(self) -> None:
        await self.inner.aclose()


def load_bench_machine(path: Path) -> Any:
    from engine.actions.registry import ACTIONS
    from engine.validation import load_machine

    return load_machine(path, ACTIONS)


def build_runner(machine: Any, store: Any, workspace: Path, turns: int | list[dict[str, Any]],
                 *, meter: Meter | None = None, delay_s: float = 0.0,
                 observer: Any = None) -> Any:
    """A real ``Runner`` wired like ``engine.session.compose`` does, with the bench tool and model.

    ``machine`` is a loaded ``MachineSpec`` or the path of a machine file; ``turns`` a turn
    count or a ready script (shared by many runs).
    """
    from engine.providers.scripted import ScriptedModel
    from engine.session.wiring import build_runner as wire

    if isinstance(machine, Path):
        machine = load_bench_machine(machine)
    turns_list = script(turns) if isinstance(turns, int) else turns

    def model_factory() -> Any:
        model = ScriptedModel(turns_list, delay_s=delay_s, chunk_chars=4096)
        return TimedModel(model, meter) if meter is not None else model

    return wire(machine, store=store, workspace=workspace, tools=[lookup_spec(meter)],
                model=model_factory, approval="auto",
                **({"observer": observer} if observer is not None else {}))


def empty_db_bytes(folder: Path) -> int:
    """Bytes of a Turnstile database with its schema and nothing else."""
    from engine.store.sqlite import SqliteStore

    path = folder / "empty.db"
    SqliteStore(path).close()
    return db_bytes(path)


async def drive_once(folder: Path, turns: int, durability: str = "normal") -> dict[str, Any]:
    """One run of ``turns`` turns on a fresh database; returns its figures."""
    from engine.store.sqlite import SqliteStore

    workspace = folder / "ws"
    workspace.mkdir(exist_ok=True)
    db = folder / f"turnstile-{durability}-{turns}-{uuid.uuid4().hex[:6]}.db"
    store = SqliteStore(db, durability=durability)  # type: ignore[arg-type]
    meter = Meter()
    runner = build_runner(write_machine(folder, turns), store, workspace, turns, meter=meter)
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    state = runner.create(run_id, workspace=str(workspace), config={}, data={"task": TASK})
    t0, c0 = time.perf_counter(), time.process_time()
    result = await runner.drive(state)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if result.status != "completed":
        raise RuntimeError(f"bench run ended {result.status}: {result.error}")
    counts = store.row_counts(run_id)
    store.close()
    net = wall - meter.model_s - meter.tool_s
    return {"turns": turns, "durability": durability, "wall_s": wall, "model_s": meter.model_s,
            "tool_s": meter.tool_s, "net_per_turn_s": net / turns,
            "tail_per_turn_s": tail_per_turn(meter, turns),
            "cpu_per_turn_s": (cpu - meter.model_cpu_s - meter.tool_cpu_s) / turns,
            "steps": result.state.step, "rows": counts, "db": str(db), "run_id": run_id,
            "db_bytes": db_bytes(db)}


def tail_per_turn(meter: Meter, turns: int) -> float:
    """Net time per turn over the last turns: the cost of a turn at turn N, not the average."""
    starts, busy = meter.call_starts, meter.call_busy
    k = max(1, min(25, (len(starts) - 1) // 4))
    if len(starts) <= k:
        return 0.0
    span = starts[-1] - starts[-1 - k]
    return (span - sum(busy[-1 - k:-1])) / k


def fresh_load(db: str, run_id: str) -> dict[str, Any]:
    """In this (fresh) process: open the store and load the latest state, timed."""
    t0 = time.perf_counter()
    from engine.store.sqlite import SqliteStore

    t1 = time.perf_counter()
    store = SqliteStore(db)
    t2 = time.perf_counter()
    state = store.load_state(run_id)
    t3 = time.perf_counter()
    return {"import_s": t1 - t0, "open_s": t2 - t1, "load_s": t3 - t2, "total_s": t3 - t1,
            "messages": len(state.messages), "step": state.step}


def measure_fresh_load(db: str, run_id: str, repeats: int) -> dict[str, Any]:
    runs = [run_child([__file__, "--load", db, run_id]) for _ in range(repeats)]
    return {"total_s": summary([r["total_s"] for r in runs]),
            "import_s": summary([r["import_s"] for r in runs]),
            "messages": runs[0]["messages"]}


def run(ns: Sequence[int], repeats: int, durabilities: Sequence[str] = ("normal", "full"),
        load_repeats: int = 5, folder: Path | None = None) -> dict[str, Any]:
    """Every N at every durability, ``repeats`` times each; the figures as one dict."""
    with tempfile.TemporaryDirectory(prefix="bench-turnstile-", dir=folder) as tmp:
        base = Path(tmp)
        empty = empty_db_bytes(base)
        out: dict[str, Any] = {"empty_db_bytes": empty, "steps_per_turn": STEPS_PER_TURN,
                               "results": {}}
        for durability in durabilities:
            for n in ns:
                out["results"][f"{durability}:{n}"] = _measure_n(base, n, durability, repeats,
                                                                 load_repeats, empty)
        return out


def _measure_n(base: Path, n: int, durability: str, repeats: int, load_repeats: int,
               empty: int) -> dict[str, Any]:
    runs = [anyio.run(drive_once, base, n, durability) for _ in range(repeats)]
    last = runs[-1]
    entry = {
        "turns": n, "durability": durability, "repeats": repeats,
        "net_per_turn_s": summary([r["net_per_turn_s"] for r in runs]),
        "tail_per_turn_s": summary([r["tail_per_turn_s"] for r in runs]),
        "cpu_per_turn_s": summary([r["cpu_per_turn_s"] for r in runs]),
        "wall_per_turn_s": summary([r["wall_s"] / n for r in runs]),
        "net_per_step_s": summary([r["net_per_turn_s"] * n / r["steps"] for r in runs]),
        "steps": last["steps"], "rows": last["rows"],
        "db_bytes": last["db_bytes"], "bytes_per_turn": (last["db_bytes"] - empty) / n,
    }
    if load_repeats and durability == "normal":
        entry["fresh_load"] = measure_fresh_load(last["db"], last["run_id"], load_repeats)
    for r in runs:
        Path(r["db"]).unlink(missing_ok=True)
    return entry


def report(data: dict[str, Any]) -> str:
    rows = []
    for key, e in data["results"].items():
        load = e.get("fresh_load", {}).get("total_s")
        rows.append([key, e["steps"], fmt_stat(e["net_per_turn_s"]),
                     fmt_stat(e["tail_per_turn_s"]), fmt_stat(e["cpu_per_turn_s"]),
                     fmt_stat(e["net_per_step_s"]),
                     f"{e['bytes_per_turn']:.0f}", fmt_stat(load)])
    return table(["durability:N", "steps", "net ms/turn", "ms/turn at N", "cpu ms/turn", "ms/step",
                  "bytes/turn", "fresh load ms"], rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[25, 100, 400, 1600])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--durability", nargs="+", default=["normal", "full"])
    parser.add_argument("--load-repeats", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--load", nargs=2, metavar=("DB", "RUN_ID"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        emit_last_line(fresh_load(*args.load))
        return
    info = machine_info()
    data = run(args.n, args.repeats, args.durability, args.load_repeats)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
