"""Benchmark of tracing: its cost per step, without and with OTLP export, beside a step's commit.

A run of N agent turns (five steps each: call_model, await_approval, exec_tool, checkpoint,
evaluate_stop, with the events a real turn writes: a model call, an approval, a tool call with
output lines) is written through ``SqliteStore``'s public methods, timing the per-step commits.
Then we time ``build_trace`` (the projection, redaction included), ``write_trace_file`` (what the
CLI does after every run), and ``export_otlp`` to the OTLP/HTTP receiver of the tests on
127.0.0.1. Everything is reported per step and as ratios.

    .venv/bin/python bench/trace.py [--turns 20 100 400] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# bench/ itself must not be on the path: its module names (trace, concurrent) shadow stdlib ones
sys.path[:] = [str(ROOT), str(ROOT / "tests"),
               *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from otlp_receiver import OtlpReceiver  # noqa: E402

from engine.store.base import StepBegin, StepCommit  # noqa: E402
from engine.store.sqlite import SqliteStore  # noqa: E402
from engine.tracing.otlp import export_otlp  # noqa: E402
from engine.tracing.trace import build_trace, write_trace_file  # noqa: E402
from engine.vocabulary.state import RunInfo, RunState, Usage  # noqa: E402

OUTPUT_LINES = 8
"""Tool output lines per call (each one an event row and a span event)."""


def write_run(store: SqliteStore, run_id: str, turns: int) -> tuple[int, float]:
    """Write a run of ``turns`` agent turns; returns (steps, seconds spent writing them)."""
    t = time.time()
    info = RunInfo(run_id, "coding_agent", str(ROOT / "machines" / "coding_agent.yaml"), "",
                   "running", "call_model", "/tmp", t, t, 0, 0, 0, 0.0, {})
    store.create_run(info, RunState(run_id, "coding_agent", "call_model"),
                     StepBegin(0, "call_model", "call_model", t))
    seq, usage = 0, Usage()
    started = time.perf_counter()
    for turn in range(turns):
        call_id = f"call_{turn}"
        args = {"command": f"python -m pytest -q tests/test_{turn}.py"}
        events: dict[str, list[tuple[str, dict[str, Any]]]] = {
            "call_model": [("model_call", {
                "provider": "openai", "model": "gpt-4.1-mini", "input_tokens": 1200 + turn,
                "output_tokens": 80, "cached_tokens": 0, "cost_usd": 0.0006, "duration_s": 0.4,
                "ttft_s": 0.2, "retries": 0, "finish_reason": "tool_calls", "messages": turn,
                "tool_calls": [{"id": call_id, "name": "run_shell", "args": args}],
                "text": "Running the tests again to check the change."})],
            "await_approval": [("approval", {
                "call_id": call_id, "tool": "run_shell", "decision": "allow", "risk": "exec",
                "reason": "allowed", "rule": "rule 1", "decided_by": "policy",
                "capability": "run_shell:python -m pytest", "args": args})],
            "exec_tool": [("tool_started", {"call_id": call_id, "tool": "run_shell",
                                            "version": "1.0.0", "args": args}),
                          *[("tool_output", {"call_id": call_id, "stream": "stdout",
                                             "line": f"tests/test_{turn}.py ... line {i}",
                                             "t": 0.0}) for i in range(OUTPUT_LINES)],
                          ("tool_call", {"call_id": call_id, "tool": "run_shell",
                                         "version": "1.0.0", "args": args, "duration_s": 0.3,
                                         "outcome": "ok", "is_error": False, "risk": "exec",
                                         "idempotent": False, "side_effects": True,
                                         "source": "builtin", "exit_code": 0,
                                         "content": "5 passed in 0.3s\n" * 20})],
            "checkpoint": [], "evaluate_stop": [],
        }
        states = list(events)
        for i, state in enumerate(states):
            now = time.time()
            for kind, payload in events[state]:
                store.append_event(run_id, seq, kind, payload, now)
                if kind == "model_call":
                    usage = usage + Usage(payload["input_tokens"], payload["output_tokens"], 0,
                                          payload["cost_usd"])
            dest = states[(i + 1) % len(states)]
            last = turn == turns - 1 and i == len(states) - 1
            store.commit_step(run_id, StepCommit(
                seq, state, "next", "done" if last else dest, time.time(), {"n": seq}, (), 0,
                usage, status="completed" if last else "running",
                next_step=None if last else StepBegin(seq + 1, dest, dest, time.time())))
            seq += 1
    return seq, time.perf_counter() - started


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The median of ``repeat`` timings of ``fn`` (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(turns: int, repeat: int, receiver: OtlpReceiver, tmp: Path) -> dict[str, float]:
    store = SqliteStore(tmp / f"bench-{turns}.db")
    run_id = f"bench-{turns}"
    steps, write_s = write_run(store, run_id, turns)
    build_s = best(lambda: build_trace(store, run_id), repeat)
    file_s = best(lambda: write_trace_file(store, run_id, tmp / "traces"), repeat)
    export_s = best(lambda: export_otlp(store, run_id, receiver.endpoint), repeat)
    spans = len(build_trace(store, run_id)["spans"])
    store.close()
    ms = 1000.0 / steps
    return {"turns": turns, "steps": steps, "spans": spans, "commit": write_s * ms,
            "build": build_s * ms, "file": file_s * ms, "export": export_s * ms}


def measure_demo(repeat: int, receiver: OtlpReceiver, tmp: Path) -> dict[str, float]:
    """The bundled demo run for real (CLI subprocess); its own time per step beside tracing's."""
    import json
    import os
    import subprocess

    db = tmp / "demo.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ENGINE_"))}
    proc = subprocess.run([sys.executable, "-m", "engine", "run",
                           str(ROOT / "machines" / "coding_agent.yaml"), "--db", str(db),
                           "--json"], cwd=tmp, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, check=True)
    run_id = json.loads(proc.stdout)["run_id"]
    store = SqliteStore(db)
    trace = build_trace(store, run_id)
    steps = trace["run"]["totals"]["steps"]
    build_s = best(lambda: build_trace(store, run_id), repeat)
    file_s = best(lambda: write_trace_file(store, run_id, tmp / "traces"), repeat)
    export_s = best(lambda: export_otlp(store, run_id, receiver.endpoint), repeat)
    store.close()
    ms = 1000.0 / steps
    return {"turns": 0, "steps": steps, "spans": len(trace["spans"]),
            "commit": trace["run"]["totals"]["duration_s"] * ms, "build": build_s * ms,
            "file": file_s * ms, "export": export_s * ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[20, 100, 400])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver() as receiver:
        for turns in args.turns:
            rows.append(measure(turns, args.repeat, receiver, Path(tmp)))
            receiver.clear()
        demo = measure_demo(args.repeat, receiver, Path(tmp))
    print("Tracing cost per step (ms), median of runs; commit = the step's own durable write")
    print(f"{'turns':>6} {'steps':>6} {'spans':>6} {'commit':>8} {'trace':>8} {'file':>8} "
          f"{'export':>8} {'trace/commit':>13} {'with OTLP/without':>18}")
    for r in rows:
        print(f"{r['turns']:>6} {r['steps']:>6} {r['spans']:>6} {r['commit']:>8.3f} "
              f"{r['build']:>8.3f} {r['file']:>8.3f} {r['export']:>8.3f} "
              f"{r['build'] / r['commit']:>13.2f} {r['export'] / r['build']:>18.2f}")
    d = demo
    print(f"demo run: {d['steps']} steps, {d['spans']} spans; the run itself "
          f"{d['commit']:.3f} ms/step (wall, incl. tool processes), trace {d['build']:.3f}, "
          f"file {d['file']:.3f}, export {d['export']:.3f} ms/step: tracing with OTLP is "
          f"{100 * d['export'] / d['commit']:.1f}% of the run, without "
          f"{100 * d['file'] / d['commit']:.1f}%")
    print("trace = build_trace (projection + redaction); file = build + atomic JSON write;")
    print("export = build + ReadableSpans + OTLP/HTTP protobuf POST to a receiver on 127.0.0.1.")
    print("All run once per run (at its end), not per step: the per-step figures are amortised.")


if __name__ == "__main__":
    main()
