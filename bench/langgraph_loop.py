"""The same ReAct-shaped loop written idiomatically in LangGraph, persisted by ``SqliteSaver``.

    .venv/bin/python bench/langgraph_loop.py [--n 25 100 400 1600] [--repeats 3] [--json FILE]

``StateGraph`` with a ``messages`` channel reduced by ``add_messages``, an agent node (returns
the scripted turn: ~500 bytes of text and one tool call, the final answer at turn N), the
prebuilt ``ToolNode`` running a ``@tool`` returning ~1 KB, ``tools_condition`` routing, compiled
with ``SqliteSaver`` on a file and invoked with ``durability="sync"`` (each checkpoint written
before the next step starts, as Turnstile does). Time inside the agent node and the tool
function is subtracted, like the model and tool time on Turnstile's side.

Durability settings: ``default`` leaves the connection as ``SqliteSaver`` sets it up (WAL, and
SQLite's compiled-in ``synchronous=FULL``); ``normal`` and ``full`` set the pragma explicitly.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

_HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _HERE:
    sys.path[0] = str(_HERE.parent)  # run as a script: bench/concurrent.py must not shadow
elif str(_HERE.parent) not in sys.path:  # the stdlib's concurrent package
    sys.path.insert(0, str(_HERE.parent))

from bench.common import (  # noqa: E402
    FINAL_TEXT,
    SYSTEM_PROMPT,
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

SYNC = {"default": None, "normal": "NORMAL", "full": "FULL"}


@dataclass
class Meter:
    """Time inside the agent node and the tool function, and when each agent call began."""

    model_s: float = 0.0
    tool_s: float = 0.0
    model_cpu_s: float = 0.0
    """CPU time of the running thread inside the node and the tool."""
    tool_cpu_s: float = 0.0
    call_starts: list[float] = field(default_factory=list)
    call_busy: list[float] = field(default_factory=list)


def build_graph(turns: int, checkpointer: Any, meter: Meter | None = None) -> Any:
    """Agent node + tool node over a ``messages`` channel, compiled with ``checkpointer``."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    meter = meter or Meter()

    # functional form: the annotation must be a real object, not a string (future annotations)
    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013

    @tool
    def lookup(query: str) -> str:
        """Look up one item by name."""
        t, c = time.perf_counter(), time.thread_time()
        out = tool_result(query)
        meter.tool_s += time.perf_counter() - t
        meter.tool_cpu_s += time.thread_time() - c
        return out

    def agent(state: Any) -> dict[str, Any]:
        t, c = time.perf_counter(), time.thread_time()
        meter.call_starts.append(t)
        i = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        if i < turns - 1:
            msg = AIMessage(content=turn_text(i), tool_calls=[
                {"name": "lookup", "args": tool_args(i), "id": f"call_{i}_0"}])
        else:
            msg = AIMessage(content=FINAL_TEXT)
        busy = time.perf_counter() - t
        meter.model_s += busy
        meter.model_cpu_s += time.thread_time() - c
        meter.call_busy.append(busy)
        return {"messages": [msg]}

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def open_saver(db: Path, durability: str) -> tuple[sqlite3.Connection, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(db), check_same_thread=False)
    if SYNC[durability]:
        conn.execute(f"PRAGMA synchronous={SYNC[durability]}")
    saver = SqliteSaver(conn)
    saver.setup()
    return conn, saver


def first_messages() -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    return [SystemMessage(content=SYSTEM_PROMPT), HumanMessage(content=TASK)]


def drive_once(folder: Path, turns: int, durability: str = "default") -> dict[str, Any]:
    """One invocation of ``turns`` turns on a fresh database; returns its figures."""
    db = folder / f"langgraph-{durability}-{turns}-{uuid.uuid4().hex[:6]}.db"
    conn, saver = open_saver(db, durability)
    meter = Meter()
    graph = build_graph(turns, saver, meter)
    thread = f"bench-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 2 * turns + 10}
    t0, c0 = time.perf_counter(), time.process_time()
    out = graph.invoke({"messages": first_messages()}, config, durability="sync")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if out["messages"][-1].content != FINAL_TEXT:
        raise RuntimeError("LangGraph run did not end with the final answer")
    checkpoints = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    conn.close()
    net = wall - meter.model_s - meter.tool_s
    return {"turns": turns, "durability": durability, "wall_s": wall,
            "net_per_turn_s": net / turns, "tail_per_turn_s": _tail(meter),
            "cpu_per_turn_s": (cpu - meter.model_cpu_s - meter.tool_cpu_s) / turns,
            "checkpoints": checkpoints, "db": str(db), "thread": thread, "db_bytes": db_bytes(db)}


def _tail(meter: Meter) -> float:
    starts, busy = meter.call_starts, meter.call_busy
    k = max(1, min(25, (len(starts) - 1) // 4))
    if len(starts) <= k:
        return 0.0
    return (starts[-1] - starts[-1 - k] - sum(busy[-1 - k:-1])) / k


def empty_db_bytes(folder: Path) -> int:
    path = folder / "empty-langgraph.db"
    conn, _ = open_saver(path, "default")
    conn.close()
    return db_bytes(path)


def fresh_load(db: str, thread: str) -> dict[str, Any]:
    """In this (fresh) process: open the saver and ``get_state`` the latest checkpoint."""
    t0 = time.perf_counter()
    import langgraph.checkpoint.sqlite
    import langgraph.graph
    import langgraph.prebuilt  # noqa: F401

    t1 = time.perf_counter()
    conn, saver = open_saver(Path(db), "default")
    graph = build_graph(1, saver)
    t2 = time.perf_counter()
    state = graph.get_state({"configurable": {"thread_id": thread}})
    t3 = time.perf_counter()
    conn.close()
    return {"import_s": t1 - t0, "open_s": t2 - t1, "load_s": t3 - t2, "total_s": t3 - t1,
            "messages": len(state.values["messages"])}


def measure_fresh_load(db: str, thread: str, repeats: int) -> dict[str, Any]:
    runs = [run_child([__file__, "--load", db, thread]) for _ in range(repeats)]
    return {"total_s": summary([r["total_s"] for r in runs]),
            "load_s": summary([r["load_s"] for r in runs]),
            "import_s": summary([r["import_s"] for r in runs]),
            "messages": runs[0]["messages"]}


def run(ns: Sequence[int], repeats: Sequence[int] | int,
        durabilities: Sequence[str] = ("default", "normal", "full"), load_repeats: int = 5,
        folder: Path | None = None) -> dict[str, Any]:
    """Every N at every durability; ``repeats`` may give one count per N (the big N are slow)."""
    counts = [repeats] * len(ns) if isinstance(repeats, int) else list(repeats)
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-", dir=folder) as tmp:
        base = Path(tmp)
        empty = empty_db_bytes(base)
        out: dict[str, Any] = {"empty_db_bytes": empty, "results": {}}
        for durability in durabilities:
            for n, reps in zip(ns, counts, strict=True):
                out["results"][f"{durability}:{n}"] = _measure_n(
                    base, n, durability, reps, load_repeats, empty)
        return out


def _measure_n(base: Path, n: int, durability: str, repeats: int, load_repeats: int,
               empty: int) -> dict[str, Any]:
    runs = []
    for _ in range(repeats):
        runs.append(drive_once(base, n, durability))
        if len(runs) > 1:  # keep one database for the load test; the big ones are GBs
            Path(runs[-2]["db"]).unlink(missing_ok=True)
    last = runs[-1]
    entry = {
        "turns": n, "durability": durability, "repeats": repeats,
        "net_per_turn_s": summary([r["net_per_turn_s"] for r in runs]),
        "tail_per_turn_s": summary([r["tail_per_turn_s"] for r in runs]),
        "cpu_per_turn_s": summary([r["cpu_per_turn_s"] for r in runs]),
        "wall_per_turn_s": summary([r["wall_s"] / n for r in runs]),
        "checkpoints": last["checkpoints"], "db_bytes": last["db_bytes"],
        "bytes_per_turn": (last["db_bytes"] - empty) / n,
    }
    if load_repeats and durability == "default":
        entry["fresh_load"] = measure_fresh_load(last["db"], last["thread"], load_repeats)
    Path(last["db"]).unlink(missing_ok=True)
    return entry


def report(data: dict[str, Any]) -> str:
    rows = []
    for key, e in data["results"].items():
        load = e.get("fresh_load", {}).get("total_s")
        rows.append([key, e["checkpoints"], fmt_stat(e["net_per_turn_s"]),
                     fmt_stat(e["tail_per_turn_s"]), fmt_stat(e["cpu_per_turn_s"]),
                     f"{e['bytes_per_turn']:.0f}",
                     fmt_stat(load)])
    return table(["durability:N", "checkpoints", "net ms/turn", "ms/turn at N",
                  "cpu ms/turn", "bytes/turn", "fresh load ms"], rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[25, 100, 400, 1600])
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 3, 2, 1])
    parser.add_argument("--durability", nargs="+", default=["default", "normal", "full"])
    parser.add_argument("--load-repeats", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--load", nargs=2, metavar=("DB", "THREAD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        emit_last_line(fresh_load(*args.load))
        return
    repeats = args.repeats if len(args.repeats) == len(args.n) else args.repeats[0]
    info = machine_info()
    data = run(args.n, repeats, args.durability, args.load_repeats)
    print(machine_line(info))
    print(report(data))
    write_json(args.json, {"machine": info, **data})


if __name__ == "__main__":
    main()
