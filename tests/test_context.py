"""Context budget and compression: token estimates, the view, the policy, and runs that need it."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.actions.context_window import (
    BYTES_PER_TOKEN,
    UNKNOWN_WINDOW,
    Budget,
    ContextState,
    budget_for,
    build_view,
    default_window,
    estimate_messages,
    estimate_text,
    model_calls,
    prepare_view,
    stub_message,
    view_and_tokens,
)
from engine.models.base import ModelParams, collect_turn
from engine.providers.scripted import ScriptedModel, turn_index
from engine.spec.documents import load_yaml
from engine.spec.model import ContextSpec
from engine.store.sqlite import SqliteStore
from engine.vocabulary.errors import ContextOverflowError, ScriptDivergedError
from engine.vocabulary.state import Message, ToolCall

SYSTEM = Message("system", "You are a coding agent.")
TASK = Message("user", "Fix the failing test in calc.py.")


def _turn(n: int, size: int, *, error: bool = False) -> tuple[Message, Message]:
    call = ToolCall(f"call_{n}", "read_file", {"path": f"big{n}.py"})
    out = "\n".join(f"line {i} of big{n}.py: {'x' * 40}" for i in range(size // 60 + 1))
    return (Message("assistant", f"reading big{n}.py", (call,)),
            Message("tool", out[:size], tool_call_id=call.id, name="read_file", is_error=error))


def _history(turns: int, size: int) -> tuple[Message, ...]:
    msgs: list[Message] = [SYSTEM, TASK]
    for n in range(turns):
        msgs.extend(_turn(n, size))
    return tuple(msgs)


def _pairing_ok(view: Sequence[Message]) -> None:
    """Every tool result answers a call shown earlier, every call shown has its result."""
    asked: dict[str, int] = {}
    answered: set[str] = set()
    for i, m in enumerate(view):
        for c in m.tool_calls:
            asked[c.id] = i
        if m.role == "tool":
            assert m.tool_call_id in asked, f"tool result {m.tool_call_id} without its call"
            answered.add(m.tool_call_id or "")
    assert set(asked) == answered, f"calls without results: {set(asked) - answered}"


class Summaries:
    """A summariser that records its requests and answers with a fixed text."""

    def __init__(self, text: str = "Read big files; the bug is in calc.add.") -> None:
        self.text = text
        self.requests: list[tuple[tuple[Message, ...], int]] = []

    async def __call__(self, request: tuple[Message, ...], max_tokens: int) -> str:
        self.requests.append((request, max_tokens))
        return self.text


def _prepare(history: Sequence[Message], data: dict[str, Any], budget: Budget,
             summarize: Summaries, tools_tokens: int = 0) -> Any:
    return anyio.run(lambda: prepare_view(history, data, budget, tools_tokens=tools_tokens,
                                          summarize=summarize))


# -- counting -------------------------------------------------------------------------------


def test_estimate_errs_high_on_text_and_counts_utf8_bytes() -> None:
    assert estimate_text("a" * 300) == 300 // BYTES_PER_TOKEN
    assert estimate_text("a" * 301) == 301 // BYTES_PER_TOKEN + 1  # rounded up
    assert estimate_text("é" * 30) == 20  # 2 bytes each
    # English prose is about 4 bytes a token for real tokenizers: the estimate is above that
    prose = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_text(prose) > len(prose) / 4


def test_tool_calls_and_framing_count() -> None:
    plain = Message("assistant", "hi")
    with_call = Message("assistant", "hi", (ToolCall("c1", "write_file",
                                                     {"path": "a.py", "text": "y" * 300}),))
    assert estimate_messages([with_call]) > estimate_messages([plain]) + 100


def test_observe_learns_the_ratio_from_reported_usage() -> None:
    s = ContextState()
    assert s.observe(1000, 0) == ContextState(tokens=1000)  # no report: estimate, ratio kept
    learnt = s.observe(1000, 750)
    assert (learnt.ratio, learnt.tokens) == (0.75, 750)
    assert s.observe(1000, 10).ratio == 0.6  # clamped: one odd report cannot zero the budget
    assert ContextState.from_data({"context": learnt.to_dict()}) == learnt


def test_budget_defaults_per_model_and_from_the_machine() -> None:
    assert budget_for(None, "anthropic", "claude-sonnet-4-5") == Budget(200_000, 0.8, 6)
    assert default_window("openai", "gpt-4o-mini") == 128_000
    assert default_window("openai", "gpt-5-mini") == 400_000
    assert default_window("openai", "some-new-model") == UNKNOWN_WINDOW
    assert budget_for(None, "scripted", "scripted").window >= 1_000_000
    spec = ContextSpec(window_tokens=4000, compress_at=0.5, keep_recent_turns=2)
    b = budget_for(spec, "scripted", "scripted")
    assert (b.window, b.limit, b.keep_recent_turns) == (4000, 2000, 2)
    assert budget_for(ContextSpec(), "openai", "gpt-4o").window == 128_000


# -- the view -------------------------------------------------------------------------------


def test_view_without_compression_is_the_history_itself() -> None:
    history = _history(3, 2000)
    view = build_view(history, ContextState())
    assert view == history
    assert all(a is b for a, b in zip(view, history, strict=True))  # shared, not copied


def test_the_view_sent_each_turn_is_the_history_tuple_until_something_is_left_out() -> None:
    """Turn after turn the view is the run's own history tuple (no copy of the conversation
    per call); once outputs are stubbed it is a new tuple, equal to a full rebuild."""
    history = _history(1, 2000)
    for n in range(2, 6):
        history = (*history, *_turn(n, 2000))
        view, tokens = view_and_tokens(history, ContextState())
        assert view is history
        assert tokens == estimate_messages(history)
    stubbed = ContextState(stubbed_before=len(history) - 2)
    view, tokens = view_and_tokens(history, stubbed)
    assert view is not history and view == build_view(history, stubbed)
    assert tokens == estimate_messages(view) < estimate_messages(history)
    more = (*history, *_turn(7, 2000))
    view, tokens = view_and_tokens(more, stubbed)  # extended under the same stubs
    assert view == build_view(more, stubbed) and tokens == estimate_messages(view)
    listed = list(more)  # a list is never handed back as the view
    assert view_and_tokens(listed, ContextState())[0] == tuple(listed)


def test_stub_keeps_tool_args_outcome_size_and_pointer() -> None:
    call, out = _turn(4, 3000, error=True)
    stub = stub_message(out, call.tool_calls[0], 9)
    assert stub.role == "tool" and stub.tool_call_id == "call_4" and stub.is_error
    for part in ("read_file", '"path": "big4.py"', "error", f"{len(out.content)} bytes",
                 "message #9", "line 0 of big4.py"):
        assert part in stub.content
    assert len(stub.content) < 400
    assert stub.meta == {"stub_of": 9}


def test_stubs_apply_before_the_mark_and_only_to_large_outputs() -> None:
    history = (*_history(3, 2000), *_turn(9, 100))
    view = build_view(history, ContextState(stubbed_before=len(history)))
    tools = [m for m in view if m.role == "tool"]
    assert [t.meta.get("stub_of") for t in tools] == [3, 5, 7, None]  # 100 bytes: kept
    assert view[:2] == history[:2]


# -- the policy -----------------------------------------------------------------------------


def test_under_budget_nothing_changes_and_no_model_call() -> None:
    history = _history(3, 1000)
    summarize = Summaries()
    prepared = _prepare(history, {}, Budget(100_000), summarize)
    assert prepared.view == history and prepared.event is None and not prepared.appended
    assert summarize.requests == []


def test_stubs_first_keep_the_recent_turns_whole() -> None:
    history = _history(8, 3000)  # ~8 * 1000 tokens
    budget = Budget(window=6000, compress_at=0.8, keep_recent_turns=3)
    summarize = Summaries()
    prepared = _prepare(history, {}, budget, summarize)
    assert summarize.requests == []
    event = prepared.event
    assert event["strategy"] == "stub" and event["summarized"] is None
    assert event["tokens_before"] > budget.limit >= event["tokens_after"] == prepared.tokens
    # the three latest turns are whole, everything older is a stub
    assert prepared.view[-6:] == history[-6:]
    assert event["stubbed"] == [3, 5, 7, 9, 11]
    assert prepared.state.stubbed_before == 12
    _pairing_ok(prepared.view)
    # the view is a pure function of the history and the persisted state
    again = build_view(history, ContextState.from_data({"context": prepared.state.to_dict()}))
    assert again == prepared.view


def test_summary_when_stubs_are_not_enough() -> None:
    history = _history(40, 3000)  # 40 stubs alone are ~3000 tokens
    data = {"task": TASK.content, "plan": [{"step": "find the bug", "status": "done"},
                                           {"step": "fix calc.add", "status": "in_progress"}],
            "files_changed": {"calc.py": {}}}
    budget = Budget(window=6000, compress_at=0.8, keep_recent_turns=2)
    summarize = Summaries()
    prepared = _prepare(history, data, budget, summarize)
    event = prepared.event
    assert event["strategy"] == "summary"
    assert event["summarized"] == [2, len(history) - 4]
    assert event["tokens_after"] <= budget.limit < event["tokens_before"]
    # one summarising call, tools off (the caller's job), with the dedicated prompt
    ((request, max_tokens),) = summarize.requests
    assert request[0].role == "system" and "summary" in request[0].content.lower()
    assert request[-1].meta["summary_request"] is True
    assert request[-1].meta["calls"] == 40  # the scripted model's turn index for this call
    assert "#2 [assistant]" in request[-1].content and "Fix the failing test" in request[-1].content
    assert max_tokens == budget.summary_tokens
    assert estimate_messages(request) <= budget.limit
    # the summary is appended to the history; the view: system, task, summary, latest turns
    (summary,) = prepared.appended
    assert summary.meta["summary"] is True and summary.meta["replaces"] == [2, len(history) - 4]
    assert summarize.text in summary.content and event["summary_text"] == summarize.text
    assert "[in_progress] fix calc.add" in summary.content and "calc.py" in summary.content
    assert prepared.view == (SYSTEM, TASK, summary, *history[-4:])
    _pairing_ok(prepared.view)
    full = (*history, summary)
    assert build_view(full, ContextState.from_data({"context": prepared.state.to_dict()})) \
        == prepared.view
    # the scripted model's count: the summary stands for the calls it replaced plus its own
    assert turn_index(prepared.view) == model_calls(full) == 41


def test_a_second_summary_folds_in_the_first() -> None:
    budget = Budget(window=6000, compress_at=0.8, keep_recent_turns=2)
    first = Summaries("FIRST SUMMARY: the bug is in calc.add")
    history = _history(40, 3000)
    p1 = _prepare(history, {"task": TASK.content}, budget, first)
    history = (*history, *p1.appended, *_history(30, 3000)[2:])
    # new turns reuse ids; give them fresh ones so pairing stays meaningful
    history = tuple(_renumber(history, len(history) - 60))
    second = Summaries("SECOND SUMMARY")
    p2 = _prepare(history, {"task": TASK.content, "context": p1.state.to_dict()}, budget,
                  second)
    assert p2.event["strategy"] in ("summary", "stub+summary")
    ((request, _),) = second.requests
    assert "FIRST SUMMARY" in request[-1].content  # the earlier summary is part of the input
    (summary,) = p2.appended
    assert [m for m in p2.view if m.meta.get("summary")] == [summary]  # the old one is gone
    assert p2.view[:3] == (SYSTEM, TASK, summary)
    _pairing_ok(p2.view)
    assert turn_index(p2.view) == model_calls((*history, summary))


def _renumber(history: Sequence[Message], start: int) -> list[Message]:
    out = list(history[:start])
    for i, m in enumerate(history[start:], start):
        if m.tool_calls:
            out.append(Message(m.role, m.content, tuple(ToolCall(f"{c.id}_b{i}", c.name, c.args)
                                                        for c in m.tool_calls)))
        elif m.role == "tool":
            out.append(Message("tool", m.content, tool_call_id=f"{m.tool_call_id}_b{i - 1}",
                               name=m.name))
        else:
            out.append(m)
    return out


def test_fewer_recent_turns_are_kept_only_when_the_configured_number_cannot_fit() -> None:
    history = _history(10, 3000)
    budget = Budget(window=3000, compress_at=0.8, keep_recent_turns=6)  # 6 turns ~6000 tokens
    prepared = _prepare(history, {}, budget, Summaries())
    assert prepared.event["kept_turns"] < 6
    assert prepared.view[-2:] == history[-2:]  # the latest turn is always whole
    assert prepared.tokens <= budget.limit
    _pairing_ok(prepared.view)


def test_over_the_limit_but_inside_the_window_with_nothing_to_compress_goes_on() -> None:
    history = (SYSTEM, Message("user", "t" * 9000))  # 3000+ tokens, no turns to compress
    prepared = _prepare(history, {}, Budget(window=4000, compress_at=0.5), Summaries())
    assert prepared.view == history and prepared.event is None


def test_overflow_when_even_the_minimal_context_does_not_fit() -> None:
    history = (*_history(2, 300), *_turn(7, 60_000))  # the latest tool output alone is ~20k
    with pytest.raises(ContextOverflowError) as info:
        _prepare(history, {}, Budget(window=8000), Summaries())
    text = str(info.value)
    assert "window of 8000 tokens" in text and "latest turn" in text and "window_tokens" in text


def test_corrected_estimate_uses_the_learnt_ratio() -> None:
    history = _history(8, 3000)
    budget = Budget(window=10_000, compress_at=0.8, keep_recent_turns=3)
    raw = _prepare(history, {}, budget, Summaries())
    assert raw.event is not None and raw.event["tokens_before"] > budget.limit
    learnt = {"context": ContextState(ratio=0.6).to_dict()}
    corrected = _prepare(history, learnt, budget, Summaries())
    assert corrected.event is None and corrected.tokens == math.ceil(corrected.estimated * 0.6)


# -- the scripted model in a compressing loop ----------------------------------------------


def _script(reads: int, summary_at: set[int]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [
        {"text": f"read {n}", "tool_calls": [{"name": "read_file", "args": {"path": f"f{n}.py"}}]}
        for n in range(reads)] + [{"text": "done"}]
    for at in sorted(summary_at):
        turns.insert(at, {"summary": f"summary at call {at}"})
    return turns


async def _drive(turns: list[dict[str, Any]], budget: Budget, output_bytes: int,
                 fail_after: int | None = None,
                 start: tuple[tuple[Message, ...], dict[str, Any]] | None = None) -> Any:
    """A loop shaped like call_model + exec_tool, recording what the model received."""
    model = ScriptedModel(turns)
    history, data = start or ((SYSTEM, TASK), {"task": TASK.content})
    seen: list[tuple[Message, ...]] = []
    calls = 0
    while True:
        async def summarize(request: tuple[Message, ...], max_tokens: int) -> str:
            done = await collect_turn(model.stream(request, [], ModelParams(max_tokens)))
            return done.message.content

        prepared = await prepare_view(history, data, budget, tools_tokens=0,
                                      summarize=summarize)
        turn = await collect_turn(model.stream(prepared.view, [], ModelParams()))
        seen.append(prepared.view)
        assert turn.usage.input_tokens <= budget.limit  # the provider's own count
        data = {**data, "context": prepared.state.observe(prepared.estimated,
                                                          turn.usage.input_tokens).to_dict()}
        history = (*history, *prepared.appended, turn.message)
        for c in turn.message.tool_calls:
            body = f"contents of {c.args['path']}\n" + "y" * output_bytes
            history = (*history, Message("tool", body, tool_call_id=c.id, name=c.name))
        calls += 1
        if not turn.message.tool_calls or calls == fail_after:
            return history, data, seen


def test_scripted_loop_over_many_windows_stays_under_budget() -> None:
    budget = Budget(window=3000, compress_at=0.8, keep_recent_turns=2)
    # 30 reads of ~1000 tokens each: ten times the window. Find where summaries happen by
    # running once with an oversized script, then check the script replays exactly.
    turns = _script(30, set())
    with pytest.raises(ScriptDivergedError) as info:
        anyio.run(_drive, turns, budget, 3000)
    assert "asked for a summary" in str(info.value)
    summary_at = _find_summary_calls(budget, 30, 3000)
    assert summary_at, "the loop never needed a summary"
    history, _, seen = anyio.run(_drive, _script(30, summary_at), budget, 3000)
    assert history[-1].content == "done"
    assert sum(estimate_messages([m]) for m in history) > 10 * budget.window
    summaries = [m for m in history if m.meta.get("summary")]
    assert len(summaries) == len(summary_at)
    for view in seen:
        assert view[:2] == (SYSTEM, TASK)
        _pairing_ok(view if view[-1].role != "assistant" else view[:-1])


def _find_summary_calls(budget: Budget, reads: int, size: int) -> set[int]:
    """Model-call positions of summaries, found by growing the script until it replays."""
    summary_at: set[int] = set()
    for _ in range(2 * reads):
        try:
            anyio.run(_drive, _script(reads, summary_at), budget, size)
            return summary_at
        except ScriptDivergedError as exc:
            text = str(exc)
            if "asked for a summary" not in text:
                raise
            summary_at.add(int(text.split("turn ")[1].split(":")[0]) - 1)
    raise AssertionError("no stable script found")


def test_resume_rebuilds_the_same_view_from_history_and_data() -> None:
    budget = Budget(window=3000, compress_at=0.8, keep_recent_turns=2)
    summary_at = _find_summary_calls(budget, 24, 3000)
    turns = _script(24, summary_at)
    first = min(summary_at) + 1  # main calls up to the one the first summary precedes
    # stop right after the call that compressed (as a crash after its step committed) ...
    history, data, seen = anyio.run(lambda: _drive(turns, budget, 3000, fail_after=first))
    last_view = seen[-1]
    assert any(m.meta.get("summary") for m in last_view)
    # ... then the persisted history and data["context"] rebuild that exact view
    state = ContextState.from_data(data)
    answer_at = max(i for i, m in enumerate(history) if m.role == "assistant")
    rebuilt = build_view(history[:answer_at], state)
    assert rebuilt == last_view
    # and continuing from the stored rows gives the same calls as an uninterrupted run
    _, _, resumed_seen = anyio.run(lambda: _drive(turns, budget, 3000,
                                                  start=(history, data)))
    _, _, straight_seen = anyio.run(lambda: _drive(turns, budget, 3000))
    assert seen + resumed_seen == straight_seen


# -- end to end: the golden task, a crash right after a compression, resume ----------------

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden_tasks" / "context_compression"
MACHINE = "machines/coding_agent.yaml"

DRIVER = r'''
"""Drive the golden task like `engine run --golden` / `engine resume`, recording every view."""
import json
import os
import sys
from pathlib import Path

import anyio

from engine.actions.context import ModelSource
from engine.tasks.golden import load_task
from engine.providers.scripted import ScriptedModel, load_turns
from engine.session.compose import RunRequest, execute, prepare_new, prepare_resume
from engine.store.sqlite import SqliteStore


class Recording(ScriptedModel):
    """The scripted model, appending every list of messages it receives to a JSON-lines log."""

    def __init__(self, turns, log):
        super().__init__(turns)
        self.log = log

    async def stream(self, messages, tools, params):
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps([m.to_dict() for m in messages]) + "\n")
        async for event in super().stream(messages, tools, params):
            yield event


mode, task_dir, db, log, machine = sys.argv[1:6]
store = SqliteStore(Path(db))
quiet = lambda kind, payload: None  # noqa: E731
if mode == "new":
    task = load_task(Path(task_dir))
    context = {**task.context, **json.loads(os.environ.get("TEST_CONTEXT") or "{}")}
    req = RunRequest(machine=Path(machine), golden=Path(task_dir), context=context,
                     limits=task.limits)
    prepared = prepare_new(req, store, db_path=Path(db), observer=quiet, prompter=None,
                           json_output=True)
else:
    prepared = prepare_resume(sys.argv[6], store, observer=quiet, prompter=None, overrides={})
print(prepared.state.run_id, flush=True)
turns = load_turns(Path(task_dir) / "turns.yaml")
prepared.runner.parts.models = ModelSource(lambda: Recording(turns, log))
result = anyio.run(execute, prepared)
print(result.status, result.error, flush=True)
'''


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ENGINE_MODEL", "ENGINE_FAULTS", "ENGINE_DB")}
    return {**env, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **extra}


def _drive_golden(tmp: Path, db: Path, log: Path, *args: str,
                  **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    return subprocess.run([sys.executable, str(script), *args[:1], str(GOLDEN), str(db),
                           str(log), MACHINE, *args[1:]], cwd=ROOT, env=_env(**env),
                          capture_output=True, text=True, timeout=120)


def _views(log: Path) -> list[tuple[Message, ...]]:
    return [tuple(Message.from_dict(d) for d in json.loads(line))
            for line in log.read_text(encoding="utf-8").splitlines()]


_VARYING = re.compile(
    r"after \d+\.\d+ s|in \d+\.\d+s|workspaces/\d{8}-\d{6}-[0-9a-f]{6}|run-[ab]\d+")


def _same_run(views: list[tuple[Message, ...]]) -> list[list[dict[str, Any]]]:
    """Views with what differs between two runs of the same task blanked out: timings
    and the run's workspace path (kept at the same length, so sizes and tokens still match)."""
    return [[json.loads(_VARYING.sub(lambda m: "#" * len(m.group()), json.dumps(m.to_dict())))
             for m in view] for view in views]


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("run-a")  # same path length as the crashed run's
    proc = _drive_golden(tmp, tmp / "e.db", tmp / "views.jsonl", "new")
    assert proc.returncode == 0, proc.stderr
    run_id, status = proc.stdout.split()[:2]
    return {"run_id": run_id, "status": status, "db": tmp / "e.db",
            "views": _views(tmp / "views.jsonl")}


def _budget() -> Budget:
    spec = ContextSpec(**load_yaml(GOLDEN / "task.yaml")["context"])
    return budget_for(spec, "scripted", "scripted")


def test_golden_run_outgrows_its_window_and_completes(straight: dict[str, Any]) -> None:
    assert straight["status"] == "completed"
    store = SqliteStore(straight["db"])
    messages = store.messages(straight["run_id"])
    budget = _budget()
    tool_bytes = sum(len(m.content.encode()) for m in messages if m.role == "tool")
    assert tool_bytes / BYTES_PER_TOKEN > 4 * budget.window  # several windows of tool output
    events = store.events(straight["run_id"], ("context_compressed",))
    strategies = [e.payload["strategy"] for e in events]
    assert "stub" in strategies and "summary" in strategies
    summaries = [m for m in messages if m.meta.get("summary")]
    assert len(summaries) == strategies.count("summary") == 1
    assert "apply_tax" in summaries[0].content and "Plan:" in summaries[0].content
    e = events[strategies.index("summary")].payload
    assert e["tokens_before"] > budget.limit >= e["tokens_after"]
    assert e["summary_text"] in summaries[0].content and e["summarized"][0] == 2
    store.close()


def test_every_view_sent_stays_under_budget(straight: dict[str, Any]) -> None:
    budget = _budget()
    store = SqliteStore(straight["db"])
    calls = store.events(straight["run_id"], ("model_call",))
    turns = [c.payload for c in calls if c.payload["purpose"] == "turn"]
    assert len(turns) == sum(1 for v in straight["views"]
                             if not v[-1].meta.get("summary_request"))
    for payload in turns:
        assert payload["context_tokens"] <= budget.limit  # what the engine budgeted
        assert payload["input_tokens"] <= budget.limit  # what the (scripted) provider counted
    for view in straight["views"]:
        if view[-1].meta.get("summary_request"):  # the summariser sees the task too
            assert view[-1].content.startswith("Task:\nThe tests fail")
        else:  # system prompt and task always first, calls and results always paired
            assert view[0].role == "system" and view[1].content.startswith("The tests fail")
            _pairing_ok(view)
        assert estimate_messages(view) <= budget.window  # even the raw estimate fits
    store.close()


def test_resume_after_a_crash_right_after_compressing_sends_the_same_views(
        straight: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp_path = tmp_path_factory.mktemp("run-b")
    store = SqliteStore(straight["db"])
    events = store.events(straight["run_id"], ("context_compressed",))
    summary_step = next(e.step for e in events if e.payload["strategy"] == "summary")
    # which call_model visit of the run compressed with a summary
    visits = [s.seq for s in store.steps(straight["run_id"]) if s.state == "call_model"]
    nth = visits.index(summary_step) + 1
    store.close()
    db, log = tmp_path / "e.db", tmp_path / "views.jsonl"
    crashed = _drive_golden(tmp_path, db, log, "new",
                            ENGINE_FAULTS=f"crash_after:call_model:{nth}")
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    run_id = crashed.stdout.split()[0]
    before = _views(log)
    # the rows rebuild the view the model last saw: history up to the answer, data["context"]
    store = SqliteStore(db)
    state = store.load_state(run_id)
    assert state.messages[-2].meta.get("summary") and state.messages[-1].role == "assistant"
    rebuilt = build_view(state.messages[:-1], ContextState.from_data(state.data))
    assert rebuilt == before[-1]
    assert any(m.meta.get("summary") for m in rebuilt)
    store.close()
    resumed = _drive_golden(tmp_path, db, log, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split()[1] == "completed"
    got, want = _same_run(_views(log)), _same_run(straight["views"])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"view {i} differs: {[(a, b) for a, b in zip(g, w, strict=False) if a != b]}"


def test_a_window_too_small_for_the_minimal_context_fails_the_run_clearly(
        tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    proc = _drive_golden(tmp_path, db, tmp_path / "views.jsonl", "new",
                         TEST_CONTEXT=json.dumps({"window_tokens": 1000}))
    assert proc.returncode == 0, proc.stderr
    run_id, status = proc.stdout.split()[:2]
    assert status == "failed"
    store = SqliteStore(db)
    info = store.get_run(run_id)
    store.close()
    assert info.status == "failed" and info.state == "call_model"
    assert info.error is not None
    for part in ("context overflow", "window of 1000 tokens", "tool definitions",
                 "context.window_tokens"):
        assert part in info.error
    assert not (tmp_path / "views.jsonl").exists()  # the model was never called


def test_golden_task_passes_through_the_cli(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", MACHINE, "--golden", str(GOLDEN),
         "--db", str(tmp_path / "e.db"), "--json"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == "completed"
    store = SqliteStore(tmp_path / "e.db")
    assert store.events(run["run_id"], ("context_compressed",)), \
        "no compression: was task.yaml's context applied to the machine?"
    store.close()
