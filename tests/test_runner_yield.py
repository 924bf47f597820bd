"""Steps that await nothing still share the event loop: other tasks of the process (a signal
watcher, the lease, other runs, an embedding program) run while such a run goes on, and a
cancellation they request ends it promptly, resumable."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio

from engine import build_machine, open_store, run

ROUNDS = 20_000


def _spinner() -> Any:
    """A workflow of steps that never await anything: count, count, count, ..."""
    return build_machine(
        name="spinner", initial="count", limits={"max_steps": ROUNDS + 10},
        states={"count": {"action": "count_rounds", "with": {"counter": "n", "max": ROUNDS},
                          "on": {"again": "count", "exhausted": "done"}},
                "done": {"final": True}})


def test_other_tasks_run_and_cancel_a_run_whose_steps_await_nothing(tmp_path: Path) -> None:
    ticks: list[float] = []
    started: list[float] = []
    turns = tmp_path / "turns.yaml"  # never called: the workflow has no model step
    turns.write_text('- text: "unused"\n')

    async def main() -> Any:
        async with anyio.create_task_group() as tg:
            async def ticker() -> None:
                while True:
                    ticks.append(time.monotonic())
                    await anyio.sleep(0)

            async def cancel_soon() -> None:
                await anyio.sleep(0.2)
                tg.cancel_scope.cancel()

            tg.start_soon(ticker)
            tg.start_soon(cancel_soon)
            started.append(time.monotonic())
            await run(_spinner(), task="spin", db=tmp_path / "r.db", workspace=tmp_path,
                      model=f"scripted:{turns}")

    anyio.run(main)
    with open_store(tmp_path / "r.db") as store:
        (info,) = store.runs()
    assert info.status == "interrupted"  # cancelled long before its 20,000 steps
    assert 0 < info.steps < ROUNDS
    during = [t for t in ticks if t > started[0]]
    assert len(during) >= 5  # the ticker kept running beside the steps
