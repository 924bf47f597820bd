"""Live output when nobody is looking: plain lines to a pipe, ``run --quiet``.

The writer is checked on real streams (StringIO, a closed file, a pipe whose
reader is gone); the CLI through a real subprocess whose stdout is a pipe.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from conftest import PROGRAM

from engine.cli.plain_output import PlainObserver, strip_markup

ROOT = Path(__file__).resolve().parent.parent


def test_plain_observer_prints_the_events_in_plain_words() -> None:
    stream = io.StringIO()
    obs = PlainObserver(stream)
    obs("step_begin", {"step": 1, "state": "call_model", "action": "call_model"})
    for piece in ("Hello ", "there, ", "[bold]world[/]"):
        obs("text_delta", {"text": piece})
    obs("model_call", {"provider": "scripted", "model": "scripted", "input_tokens": 3,
                       "output_tokens": 4, "cost_usd": 0.0,
                       "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]})
    obs("step_commit", {"step": 1, "state": "call_model", "trigger": "tool_calls",
                        "dest": "await_approval", "note": ""})
    obs.line("[bold green]completed[/] run x: 3 steps \\[ok]")
    assert stream.getvalue().splitlines() == [
        "step 1 call_model (call_model)",
        "  model: Hello there, [bold]world[/]",
        "  scripted: 3 in / 4 out tokens, $0.0000",
        '  tool call: read_file {"path": "a.txt"}',
        "  ⇒ tool_calls → await_approval",
        "completed run x: 3 steps [ok]",
    ]


def test_quiet_observer_keeps_only_lines() -> None:
    stream = io.StringIO()
    obs = PlainObserver(stream, events=False)
    obs("step_begin", {"step": 0, "state": "plan", "action": "plan"})
    obs("text_delta", {"text": "hidden"})
    obs.line("summary")
    assert stream.getvalue() == "summary\n"


def test_a_closed_or_broken_stream_never_raises(tmp_path: Path) -> None:
    f = (tmp_path / "out.txt").open("w")
    f.close()
    obs = PlainObserver(f)
    obs("step_begin", {"step": 0, "state": "plan", "action": "plan"})
    obs("text_delta", {"text": "x\n"})
    obs.line("done")
    r, w = os.pipe()
    os.close(r)
    pipe = os.fdopen(w, "w")
    broken = PlainObserver(pipe)
    for i in range(2000):  # more than a pipe buffer: the writes fail with EPIPE
        broken("step_commit", {"step": i, "state": "s", "trigger": "t", "dest": "d"})
    assert broken._broken
    broken.line("after the reader is gone")
    with contextlib.suppress(BrokenPipeError):  # the stream itself raises on closing
        pipe.close()


def test_strip_markup_keeps_plain_brackets() -> None:
    assert strip_markup("[dim]note[/] [1, 2] \\[y]es") == "note [1, 2] [y]es"


def _run(*extra: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB", "FORCE_COLOR",
                        "ENGINE_STORE_URL")}
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml", "--golden",
         "golden_tasks/read_answer_question", "--approval", "auto", "--db",
         str(tmp_path / "engine.db"), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=100,
        stdin=subprocess.DEVNULL)


def test_piped_run_prints_plain_lines_with_whole_model_text(tmp_path: Path) -> None:
    proc = _run(tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0].startswith("model: scripted (replaying")
    assert "step 0 plan (plan)" in lines
    assert "  model: Let me look at the project layout first." in lines
    assert any(line.startswith("completed run ") for line in lines)
    assert f"  inspect:   {PROGRAM} show " in out  # the program as it was run


def test_run_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    proc = _run("--quiet", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line]
    assert lines[0].startswith("completed run ")
    assert not any(line.startswith(("step ", "  model:")) for line in lines)
    assert any(line.startswith("  workspace:") for line in lines)


def test_the_rich_console_and_the_plain_writer_say_the_same_words(tmp_path: Path) -> None:
    """Every event of a real sandboxed run, fed to both outputs: the rich console (colour off)
    prints exactly the plain writer's text, so neither can gain or lose a word alone."""
    import anyio
    from rich.console import Console

    from engine.cli.console import ConsoleObserver
    from engine.session.compose import RunRequest, execute, prepare_new
    from engine.store.sqlite import SqliteStore

    events: list[tuple[str, dict[str, object]]] = []
    store = SqliteStore(tmp_path / "engine.db")
    prepared = prepare_new(
        RunRequest(machine=ROOT / "machines" / "coding_agent.yaml",
                   golden=ROOT / "golden_tasks" / "demo_fix_test", approval="auto"),
        store, db_path=tmp_path / "engine.db",
        observer=lambda kind, payload: events.append((kind, dict(payload))), prompter=None)
    assert anyio.run(execute, prepared).status == "completed"
    store.close()
    kinds = {kind for kind, _ in events}
    assert {"step_begin", "text_delta", "tool_started", "tool_output", "tool_call",
            "approval", "step_commit", "model_call"} <= kinds

    plain_out = io.StringIO()
    plain = PlainObserver(plain_out)
    rich_out = io.StringIO()
    rich = ConsoleObserver(Console(file=rich_out, color_system=None, width=10_000,
                                   soft_wrap=True, highlight=False))
    for kind, payload in events:
        plain(kind, payload)
        rich(kind, payload)
    plain.close()
    rich.line("")
    plain.line("")
    expanded = "\n".join(line.expandtabs(8) for line in plain_out.getvalue().split("\n"))
    assert rich_out.getvalue() == expanded  # rich expands tabs; the words are the same
    assert "→ run_shell" in expanded and "✓ ok" in expanded


class CountingStream(io.StringIO):
    """A stream that counts its writes (an unbuffered pipe pays one system call for each)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_lines_are_gathered_and_written_before_the_run_may_wait() -> None:
    stream = CountingStream()
    obs = PlainObserver(stream)
    obs("step_begin", {"step": 1, "state": "call_model", "action": "call_model",
                       "waits": True})
    assert stream.getvalue() == "step 1 call_model (call_model)\n"  # shown before the model
    assert stream.writes == 1
    for piece in ("Hello ", "there"):  # coalesced at the source: each is written as it comes
        obs("text_delta", {"text": piece})
    assert stream.writes == 3 and stream.getvalue().endswith("  model: Hello there")
    obs("model_call", {"provider": "scripted", "model": "scripted", "input_tokens": 3,
                       "output_tokens": 4, "cost_usd": 0.0, "tool_calls": []})
    obs("step_commit", {"step": 1, "state": "call_model", "trigger": "tool_calls",
                        "dest": "exec_tool", "note": ""})
    assert stream.writes == 3  # the totals and the commit wait for what comes next
    obs("step_begin", {"step": 2, "state": "exec_tool", "action": "exec_tool",
                       "waits": False})
    assert stream.writes == 3  # a tool step shows what it waits for first
    obs("tool_started", {"call_id": "c1", "tool": "run_shell", "args": {"command": "sleep 60"}})
    assert "sleep 60" in stream.getvalue()  # a command that may run for minutes is shown now
    assert stream.writes == 4
    assert stream.getvalue().splitlines()[1:] == [
        "  model: Hello there", "  scripted: 3 in / 4 out tokens, $0.0000",
        "  ⇒ tool_calls → exec_tool", "step 2 exec_tool (exec_tool)",
        "  → run_shell {\"command\": \"sleep 60\"}"]
    obs("approval", {"decision": "allow", "tool": "run_shell", "risk": "exec",
                     "decided_by": "policy", "reason": "ok"})
    assert stream.writes == 4
    obs("step_begin", {"step": 3, "state": "call_model", "action": "call_model"})
    assert stream.writes == 5  # a step that does not say it is quick waits (fails safe)
    assert stream.getvalue().splitlines()[-2:] == [
        "  allow run_shell (risk exec, policy: ok)", "step 3 call_model (call_model)"]
    obs("run_end", {"status": "completed", "state": "done"})
    assert stream.writes == 5  # nothing was left to write



def test_inside_the_event_loop_lines_wait_a_moment_for_more() -> None:
    """In the run's event loop a run that does not wait (fifty quick steps) writes nothing
    until ``FLUSH_AFTER_S`` has passed, then everything in one write; a run that waits (on a
    command of minutes) is shown within that time; what is left when the loop ends is
    written by ``close`` (the CLI's call once the loop has ended)."""
    import anyio

    from engine.cli.plain_output import FLUSH_AFTER_S

    stream = CountingStream()
    obs = PlainObserver(stream)

    def quick_step(step: int) -> None:
        obs("step_begin", {"step": step, "state": "call_model", "action": "call_model",
                           "waits": True})
        obs("text_delta", {"text": f"turn {step}"})
        obs("step_commit", {"step": step, "state": "call_model", "trigger": "tool_calls",
                            "dest": "exec_tool", "note": ""})

    async def run() -> None:
        for step in range(50):
            quick_step(step)
        assert stream.writes == 0
        obs("tool_started", {"call_id": "c1", "tool": "run_shell",
                             "args": {"command": "sleep 60"}})
        await anyio.sleep(FLUSH_AFTER_S * 4)  # the run waits on the command
        assert stream.writes == 1
        assert "sleep 60" in stream.getvalue() and "  model: turn 49" in stream.getvalue()
        quick_step(50)  # its write is still pending when the loop ends

    anyio.run(run)
    assert stream.writes == 1 and "turn 50" not in stream.getvalue()
    obs.close()
    assert stream.writes == 2
    lines = stream.getvalue().splitlines()
    assert lines[:3] == ["step 0 call_model (call_model)", "  model: turn 0",
                         "  ⇒ tool_calls → exec_tool"]
    assert lines[-2:] == ["  model: turn 50", "  ⇒ tool_calls → exec_tool"]
