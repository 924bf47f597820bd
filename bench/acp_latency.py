"""Benchmark of ``turnstile acp``: the delay from a tool call's recorded result to the editor.

An editor written on the ACP SDK's client side starts ``python -m engine acp`` over real stdio;
one prompt makes the scripted model call a read tool ``--calls`` times. For every call we take
the time the engine recorded its result (the ``tool_call`` event's ``at`` in the store) and the
time the editor received the matching ``tool_call_update`` (same clock, same machine), and
report the median and p95 of the difference; beside it, the same against the commit of the
step holding the call (negative: the editor has the result before the step commits, since a
streamed run waits for its reader before each commit). ``--load K`` runs K busy processes
meanwhile.

    .venv/bin/python bench/acp_latency.py [--calls 200] [--load 2] [--json FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    del sys.path[0]  # run as a script: bench/concurrent.py must not shadow the stdlib's
sys.path[:0] = [str(ROOT)]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from acp import spawn_agent_process, text_block  # noqa: E402
from acp.schema import ClientCapabilities, RequestPermissionResponse  # noqa: E402

from engine.runs.service import Runs  # noqa: E402


class Editor:
    """Receives updates and notes when each call's result arrived."""

    def __init__(self) -> None:
        self.received: dict[str, float] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        now = time.time()
        if getattr(update, "session_update", "") == "tool_call_update" and \
                update.status in ("completed", "failed"):
            self.received.setdefault(update.tool_call_id, now)

    async def request_permission(self, **kwargs: Any) -> RequestPermissionResponse:
        raise RuntimeError("the benchmark's calls need no permission")

    def on_connect(self, conn: Any) -> None:
        pass


def _busy() -> None:
    while True:
        pass


def _machine(folder: Path, calls: int) -> Path:
    """The coding agent with room for ``calls`` tool calls in one run."""
    text = (ROOT / "machines" / "coding_agent.yaml").read_text()
    path = folder / "agent.yaml"
    text = text.replace("max_steps: 60", f"max_steps: {calls * 5 + 20}")
    path.write_text(text.replace("max_tokens: 400000", "max_tokens: 1000000000"))
    return path


async def _measure(folder: Path, calls: int) -> dict[str, list[float]]:
    ws = folder / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a line\n")
    turns = [{"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]}] * calls
    (folder / "turns.json").write_text(json.dumps([*turns, {"text": "done"}]))
    env = {**os.environ, "ENGINE_MODEL": f"scripted:{folder / 'turns.json'}"}
    env.pop("ENGINE_DB", None)
    env.pop("ENGINE_STORE_URL", None)
    store = folder / "engine.db"
    editor = Editor()
    async with spawn_agent_process(editor, sys.executable, "-m", "engine", "acp", "--store",
                                   str(store), "--machine", str(_machine(folder, calls)),
                                   env=env, cwd=ROOT) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        s = await conn.new_session(cwd=str(ws), mcp_servers=[])
        stop = await conn.prompt(session_id=s.session_id, prompt=[text_block("read")])
        assert stop.stop_reason == "end_turn", stop
    with Runs(store).reader() as reader:
        (run,) = reader.runs()
        ended = {st.seq: st.ended_at for st in reader.steps(run.run_id)}
        events = reader.events(run.run_id, ["tool_call"])
    from_event, from_commit = [], []
    for e in events:
        got = editor.received.get(e.payload["call_id"])
        if got is None:
            continue
        from_event.append((got - e.at) * 1000)
        commit = ended.get(e.step)
        if commit is not None:
            from_commit.append((got - commit) * 1000)
    return {"from_event_ms": from_event, "from_commit_ms": from_commit}


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "median": statistics.median(ordered), "p95": p95,
            "max": ordered[-1], "min": ordered[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for p in busy:
        p.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(_measure(Path(tmp), args.calls))
    finally:
        for p in busy:
            p.terminate()
    out = {k: _summary(v) for k, v in figures.items()}
    load = os.getloadavg()[0]
    print(f"acp latency, {args.calls} read_file calls, {args.load} busy processes, "
          f"load average {load:.2f}")
    for name, s in out.items():
        print(f"  {name:15s} median {s['median']:7.2f} ms   p95 {s['p95']:7.2f} ms   "
              f"min {s['min']:7.2f}   max {s['max']:7.2f}   (n={s['n']:.0f})")
    if args.json:
        Path(args.json).write_text(json.dumps({"calls": args.calls, "load": args.load,
                                               **out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
