"""The Python API, driven as an embedding program drives it: real SQLite files, real tools,
the scripted model or a model object, runs resumed in new processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import engine
from engine import (
    Done,
    Message,
    ModelParams,
    ModelUsage,
    RunEvent,
    TextDelta,
    ToolCallDelta,
    ToolContext,
    ToolImportError,
    ToolSchema,
    build_machine,
    load_machine,
    open_store,
    resume,
    run,
    stream,
    tool,
)
from engine.vocabulary.errors import SpecError

ROOT = Path(__file__).resolve().parent.parent

PUBLIC = (
    "Answer", "ApprovalRequest", "Approver", "AsyncApprover", "Done", "EventHandler", "Machine",
    "Message", "ModelClient", "ModelConfigError", "ModelParams", "ModelUsage", "Outcome",
    "RunEvent", "RunInfo", "RunResult", "RunState", "RunStore", "RunStream", "SpecError",
    "StepRecord", "StreamEvent", "TextDelta", "ToolCall", "ToolCallDelta", "ToolContext",
    "ToolImportError", "ToolResult", "ToolSchema", "ToolSpec", "TurnstileError", "Usage",
    "build_machine", "load_machine", "open_store", "render", "resume", "run", "run_sync",
    "stream", "stream_resume", "tool", "FunctionModel", "function_model", "tool_call",
)

STATES = {
    "start": {"action": "plan", "on": {"ready": "think"}},
    "think": {"action": "call_model", "on": {"tool_calls": "approve", "final": "done"}},
    "approve": {"action": "await_approval", "on": {"decided": "act", "all_denied": "think"}},
    "act": {"action": "exec_tool", "on": {"done": "think"}},
    "done": {"final": True},
}


@tool(risk="read", idempotent=True)
def word_count(text: str, unique: bool = False) -> int:
    """Count the words of a text.

    Args:
        text: The text whose words are counted.
        unique: Count each distinct word once.
    """
    words = text.split()
    return len(set(words)) if unique else len(words)


@tool(risk="write")
async def append_note(note: str, ctx: ToolContext) -> str:
    """Append a line to notes.txt in the workspace."""
    with (ctx.workspace / "notes.txt").open("a", encoding="utf-8") as f:
        f.write(note + "\n")
    return "noted"


SLOW = {"gate": True}


@tool(risk="read", idempotent=True)
async def wait_a_while() -> str:
    """Wait (long while ``SLOW['gate']`` is set), then say done."""
    if SLOW["gate"]:
        await anyio.sleep(60)
    return "waited"


class CallThenAnswer:
    """A model object: calls ``tool`` with ``args`` once, then answers with the result."""

    provider, model, server = "custom", "call-then-answer", None

    def __init__(self, tool_name: str, args: dict[str, Any]) -> None:
        self.tool_name, self.args, self.closed = tool_name, args, False

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema],
                     params: ModelParams) -> AsyncIterator[Any]:
        if messages[-1].role == "tool":
            yield TextDelta(f"result: {messages[-1].content}")
        else:
            yield ToolCallDelta(0, id="call-1", name=self.tool_name,
                                arguments=json.dumps(self.args))
        yield ModelUsage(input_tokens=12, output_tokens=3)
        yield Done("stop")

    async def aclose(self) -> None:
        self.closed = True


def machine(*tools: Any) -> engine.Machine:
    return build_machine(name="helper", initial="start", tools=list(tools), states=STATES)


# -- the public vocabulary --------------------------------------------------------------


def test_every_public_name_is_still_exported() -> None:
    missing = [n for n in PUBLIC if n not in engine.__all__ or getattr(engine, n, None) is None]
    assert missing == []
    assert engine.__all__ == sorted(engine.__all__)


def test_tool_schema_comes_from_signature_and_docstring() -> None:
    spec = word_count.tool_spec  # type: ignore[attr-defined]
    schema = spec.input_schema
    assert spec.description == "Count the words of a text."
    assert schema["required"] == ["text"]
    assert schema["properties"]["unique"]["default"] is False
    assert schema["properties"]["text"]["description"] == "The text whose words are counted."
    assert (spec.risk, spec.idempotent) == ("read", True)
    assert word_count("a b a", unique=True) == 2  # the function is still a function
    assert "ctx" not in append_note.tool_spec.input_schema["properties"]  # type: ignore[attr-defined]


def test_python_machine_and_yaml_machine_share_validation(tmp_path: Path) -> None:
    bad = {**STATES, "start": {"action": "plan", "on": {"redy": "think"}}}
    with pytest.raises(SpecError) as from_python:
        build_machine(name="helper", initial="start", states=bad)
    yaml_file = tmp_path / "helper.yaml"
    yaml_file.write_text("name: helper\ninitial: start\nstates:\n" + "".join(
        f"  {k}: {json.dumps(v)}\n" for k, v in bad.items()))
    with pytest.raises(SpecError) as from_yaml:
        load_machine(yaml_file)
    strip = lambda e: sorted(p.message for p in e.value.problems)  # noqa: E731
    assert strip(from_python) == strip(from_yaml)
    assert "did you mean 'ready'" in str(from_python.value)
    assert "think --> approve: tool_calls" in machine().render()


# -- runs in process --------------------------------------------------------------------


def test_custom_tool_and_model_run_in_process(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    model = CallThenAnswer("word_count", {"text": "one two three two"})
    seen: list[RunEvent] = []
    result = anyio.run(lambda: run(machine(word_count), task="count", model=model, db=db,
                                   workspace=tmp_path, on_event=seen.append))
    assert (result.status, result.error) == ("completed", None)
    assert model.closed
    kinds = {e.kind for e in seen}
    assert {"step_begin", "step_commit", "text_delta", "tool_call", "run_end"} <= kinds
    with open_store(db) as runs:
        (info,) = runs.runs()
        assert info.run_id == result.run_id and info.status == "completed"
        contents = [m.content for m in runs.messages(result.run_id)]
        assert contents[-2:] == ["4", "result: 4"]
        assert [s.state for s in runs.steps(result.run_id)][:3] == ["start", "think", "approve"]
        assert runs.trace(result.run_id)["spans"]


def test_a_function_model_calls_tools_in_parallel_and_answers(tmp_path: Path) -> None:
    """An async reply function: two calls in one turn, then text from their results."""
    from engine import function_model, tool_call

    @function_model(name="twice")
    async def twice(messages: Sequence[Message]) -> Any:
        results = [m.content for m in messages if m.role == "tool"]
        if results:
            return "counts: " + ", ".join(results)
        return [tool_call("word_count", text="a b c"), tool_call("word_count", text="d e")]

    db = tmp_path / "runs.db"
    result = anyio.run(lambda: run(machine(word_count), task="count", model=twice, db=db,
                                   workspace=tmp_path))
    assert (result.status, result.error) == ("completed", None)
    assert result.state.messages[-1].content == "counts: 3, 2"
    with open_store(db) as runs:
        calls = [m for m in runs.messages(result.run_id) if m.role == "tool"]
        assert len(calls) == 2 and len({m.tool_call_id for m in calls}) == 2


@pytest.mark.parametrize(("reply", "message"), [
    (lambda: engine.tool_call("rm_rf", path="/"), "asked for tool 'rm_rf', which the state "
                                                  "does not offer"),
    (lambda: 42, "a reply is text, tool_call(...) or a list of them, not int"),
])
def test_a_function_model_that_answers_wrongly_fails_the_run_with_its_reason(
        tmp_path: Path, reply: Any, message: str) -> None:
    model = engine.function_model(lambda messages: reply(), name="wrong")
    result = anyio.run(lambda: run(machine(word_count), task="count", model=model,
                                   db=tmp_path / "runs.db", workspace=tmp_path))
    assert result.status == "failed"
    assert result.error is not None and message in result.error, result.error


def test_approval_callback_and_async_approver_object(tmp_path: Path) -> None:
    asked: list[str] = []

    def deny(request: engine.ApprovalRequest) -> bool:
        asked.append(f"{request.tool}:{request.risk}")
        return False

    model = CallThenAnswer("append_note", {"note": "hello"})
    denied = anyio.run(lambda: run(machine(append_note), task="note", model=model,
                                   db=tmp_path / "a.db", workspace=tmp_path, approver=deny))
    assert denied.status == "completed" and asked == ["append_note:write"]
    assert not (tmp_path / "notes.txt").exists()

    class Yes:
        async def approve(self, request: engine.ApprovalRequest) -> str:
            await anyio.sleep(0)
            return "yes"

    model = CallThenAnswer("append_note", {"note": "hello"})
    allowed = anyio.run(lambda: run(machine(append_note), task="note", model=model,
                                    db=tmp_path / "b.db", workspace=tmp_path, approver=Yes()))
    assert allowed.status == "completed"
    assert (tmp_path / "notes.txt").read_text() == "hello\n"


def test_events_stream_as_an_async_iterator(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], Any]:
        model = CallThenAnswer("word_count", {"text": "a b"})
        kinds: list[str] = []
        async with stream(machine(word_count), task="count", model=model,
                          db=tmp_path / "s.db", workspace=tmp_path) as events:
            async for event in events:
                kinds.append(event.kind)
        return kinds, events.result

    kinds, result = anyio.run(main)
    assert result.status == "completed"
    assert kinds[0] == "step_begin" and kinds[-1] == "run_end"
    assert {"text_delta", "tool_call", "step_commit"} <= set(kinds)


def test_a_stream_that_cannot_start_raises_the_engine_error(tmp_path: Path) -> None:
    async def main() -> list[RunEvent]:
        seen: list[RunEvent] = []
        async with stream(machine(word_count), task="count", model=CallThenAnswer("x", {}),
                          db=tmp_path / "e.db", workspace=tmp_path / "missing") as events:
            async for event in events:
                seen.append(event)
        return seen

    with pytest.raises(engine.TurnstileError, match="no such directory"):
        anyio.run(main)


# -- embedding: threads, event loops, signals, cancellation -----------------------------


def _run_once(db: Path, workspace: Path) -> Any:
    return run(machine(word_count), task="count", db=db, workspace=workspace,
               model=CallThenAnswer("word_count", {"text": "x y z"}))


def test_run_awaited_in_a_thread_and_in_existing_loops_leaves_signals_alone(
        tmp_path: Path) -> None:
    def host_handler(signum: int, frame: Any) -> None:
        return None

    previous = signal.signal(signal.SIGTERM, host_handler)
    host_sigint = signal.getsignal(signal.SIGINT)  # SIG_IGN under a background job
    try:
        results: list[str] = []
        thread = threading.Thread(target=lambda: results.append(
            asyncio.run(_run_once(tmp_path / "t.db", tmp_path)).status))
        thread.start()
        thread.join(60)
        results.append(asyncio.run(_run_once(tmp_path / "a.db", tmp_path)).status)
        results.append(anyio.run(_run_once, tmp_path / "b.db", tmp_path))  # type: ignore[arg-type]
        results[-1] = results[-1].status  # type: ignore[attr-defined]
        assert results == ["completed", "completed", "completed"]
        assert signal.getsignal(signal.SIGTERM) is host_handler
        assert signal.getsignal(signal.SIGINT) is host_sigint
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_cancelling_the_awaiting_task_interrupts_and_resume_completes(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    SLOW["gate"] = True

    async def start_and_cancel() -> None:
        async with anyio.create_task_group() as tg:
            def cancel_when_waiting(event: RunEvent) -> None:
                if event.kind == "tool_started":
                    tg.cancel_scope.cancel()

            tg.start_soon(lambda: run(machine(wait_a_while), task="wait", db=db,
                                      workspace=tmp_path, on_event=cancel_when_waiting,
                                      model=CallThenAnswer("wait_a_while", {})))

    anyio.run(start_and_cancel)
    with open_store(db) as runs:
        (info,) = runs.runs()
    assert info.status == "interrupted"
    SLOW["gate"] = False
    model = CallThenAnswer("wait_a_while", {})
    result = asyncio.run(resume(info.run_id, db=db, tools=[wait_a_while], model=model))
    assert result.status == "completed"
    with open_store(db) as runs:
        assert runs.messages(info.run_id)[-1].content == "result: waited"


# -- resume in a new process, by import path --------------------------------------------


TOOLS_MODULE = '''
import os
import anyio
from engine import tool

@tool(risk="read", idempotent=True)
async def shout(text: str) -> str:
    """Upper-case a text (slowly while SHOUT_SLOW is set)."""
    if os.environ.get("SHOUT_SLOW"):
        await anyio.sleep(60)
    return text.upper()
'''

MACHINE_YAML = """\
name: shouter
initial: start
tools: [shout_tools:shout]
states:
  start: {action: plan, on: {ready: think}}
  think: {action: call_model, on: {tool_calls: approve, final: done}}
  approve: {action: await_approval, on: {decided: act, all_denied: think}}
  act: {action: exec_tool, on: {done: think}}
  done: {final: true}
"""

TURNS = """\
- text: "Shouting."
  tool_calls:
    - {name: shout, args: {text: hello}}
- expect: {tool_result_contains: HELLO}
  text: "It says HELLO."
"""

START = '''
import sys, anyio, engine
db, ws = sys.argv[1], sys.argv[2]

async def main():
    async with anyio.create_task_group() as tg:
        def stop(event):
            if event.kind == "tool_started":
                tg.cancel_scope.cancel()
        tg.start_soon(lambda: engine.run("shouter.yaml", task="shout", db=db, workspace=ws,
                                         model="scripted:turns.yaml", on_event=stop))

anyio.run(main)
print(engine.open_store(db).runs()[0].run_id)
'''

RESUME = '''
import sys, anyio, engine
result = anyio.run(lambda: engine.resume(sys.argv[1], db=sys.argv[2]))
print(result.status, engine.open_store(sys.argv[2]).messages(sys.argv[1])[-1].content)
'''


def _project(tmp_path: Path) -> Path:
    (tmp_path / "shout_tools.py").write_text(TOOLS_MODULE)
    (tmp_path / "shouter.yaml").write_text(MACHINE_YAML)
    (tmp_path / "turns.yaml").write_text(TURNS)
    (tmp_path / "ws").mkdir()
    return tmp_path


def _python(cwd: Path, code: str, *args: str,
            slow: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)])}
    if slow:
        env["SHOUT_SLOW"] = "1"
    env.pop("ENGINE_MODEL", None)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def test_run_with_python_tools_resumes_in_a_new_process(tmp_path: Path) -> None:
    project = _project(tmp_path)
    db = str(project / "runs.db")
    started = _python(project, START, db, str(project / "ws"), slow=True)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[-1]
    with open_store(db) as runs:
        assert runs.run(run_id).status == "interrupted"
    resumed = _python(project, RESUME, run_id, db)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["completed", "It", "says", "HELLO."]


def test_cli_resume_imports_the_python_tools_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    db = str(project / "runs.db")
    started = _python(project, START, db, str(project / "ws"), slow=True)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[-1]
    cli = subprocess.run([sys.executable, "-m", "engine", "resume", run_id, "--db", db,
                          "--json"], cwd=project, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         text=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["status"] == "completed"
    with open_store(db) as runs:
        assert runs.messages(run_id)[-1].content == "It says HELLO."


def test_a_tool_that_can_no_longer_be_imported_is_one_clear_error(tmp_path: Path) -> None:
    project = _project(tmp_path)
    db = str(project / "runs.db")
    started = _python(project, START, db, str(project / "ws"), slow=True)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[-1]
    (project / "shout_tools.py").unlink()
    sys.path.insert(0, str(project))
    try:
        with pytest.raises(ToolImportError, match="shout_tools:shout cannot be imported"):
            anyio.run(lambda: resume(run_id, db=db))
    finally:
        sys.path.remove(str(project))
    cli = subprocess.run([sys.executable, "-m", "engine", "resume", run_id, "--db", db],
                         cwd=project, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                         capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert cli.returncode == 2
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and "shout_tools:shout cannot be imported" in lines[0], cli.stderr
    assert "Traceback" not in cli.stderr
    with open_store(db) as runs:
        assert runs.run(run_id).status == "interrupted"  # nothing changed


@pytest.mark.parametrize("how", ["in the machine", "beside it"])
def test_resume_without_the_tools_given_in_code_names_the_fix(tmp_path: Path, how: str) -> None:
    """A tool defined where no other process can import it (here: inside this function):
    resuming without it, from Python or the command line, says to give it again
    (``tools=[...]``) or to name it by import path; given again, the run completes."""

    @tool(risk="write")
    def stamp(text: str) -> str:
        """Stamp a text."""
        return f"[{text}]"

    db = str(tmp_path / "runs.db")
    built = machine(stamp) if how == "in the machine" else "coding_agent"
    extra = [] if how == "in the machine" else [stamp]
    parked = anyio.run(lambda: run(built, task="stamp", tools=extra, db=db, workspace=tmp_path,
                                   model=CallThenAnswer("stamp", {"text": "a"}),
                                   approval="park"))
    assert parked.status == "waiting_approval"
    engine.approve(parked.run_id, "call-1", db=db)
    fix = ("give them again to resume: engine.resume(RUN_ID, tools=[stamp]), or, to resume "
           "from the command line, define them in an importable module and name them in the "
           "machine's tools by import path (module:function)")
    with pytest.raises(ToolImportError) as caught:
        anyio.run(lambda: resume(parked.run_id, db=db, model=CallThenAnswer("stamp", {})))
    assert str(caught.value) == f"the run was started with tool(s) given in code: stamp; {fix}"
    cli = subprocess.run([sys.executable, "-m", "engine", "resume", parked.run_id, "--db", db],
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                         capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert cli.returncode == 2 and cli.stderr.strip().splitlines() == [f"error: {caught.value}"]
    done = anyio.run(lambda: resume(parked.run_id, db=db, tools=[stamp],
                                    model=CallThenAnswer("stamp", {})))
    assert done.status == "completed" and done.state.messages[-1].content == "result: [a]"
