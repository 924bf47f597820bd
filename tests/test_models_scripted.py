"""The scripted model's extras: synthetic usage and divergence detection from ``expect``."""

from __future__ import annotations

import pytest

from engine.models.base import ModelParams, collect_turn
from engine.providers.scripted import CHARS_PER_TOKEN, ScriptedModel
from engine.vocabulary.errors import ScriptDivergedError
from engine.vocabulary.state import Message, ToolCall

pytestmark = pytest.mark.anyio
TURNS = [
    {"text": "Reading both.", "tool_calls": [{"name": "read_file", "args": {"path": "a.py"}},
                                             {"name": "read_file", "args": {"path": "b.py"}}]},
    {"text": "Fixed.", "expect": {"tool_result_contains": "def b"}},
]
ASKED = [Message("user", "x" * 400)]
ANSWERED = Message("assistant", "Reading both.", (
    ToolCall("call_0_0", "read_file", {"path": "a.py"}),
    ToolCall("call_0_1", "read_file", {"path": "b.py"}),
))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_synthetic_usage_is_about_four_characters_a_token() -> None:
    turn = await collect_turn(ScriptedModel(TURNS).stream(ASKED, [], ModelParams()))
    assert turn.usage.input_tokens == 400 // CHARS_PER_TOKEN
    assert 5 <= turn.usage.output_tokens <= 40


async def test_expectation_matches_any_result_of_parallel_calls() -> None:
    history = [*ASKED, ANSWERED,
               Message("tool", "def a(): ...", tool_call_id="call_0_0", name="read_file"),
               Message("tool", "def b(): ...", tool_call_id="call_0_1", name="read_file")]
    turn = await collect_turn(ScriptedModel(TURNS).stream(history, [], ModelParams()))
    assert turn.message.content == "Fixed."


@pytest.mark.parametrize(("results", "got"), [
    (["def a(): ...", "no such file"], "'def a(): ... | no such file'"),
    ([], "'no tool result'"),
])
async def test_divergence_names_the_turn_the_expectation_and_what_came(
    results: list[str], got: str
) -> None:
    history = [*ASKED, ANSWERED, *(Message("tool", r, tool_call_id=f"call_0_{i}")
                                   for i, r in enumerate(results))]
    with pytest.raises(ScriptDivergedError) as info:
        await collect_turn(ScriptedModel(TURNS).stream(history, [], ModelParams()))
    assert str(info.value) == (
        f"script diverged at turn 2: expected tool result containing 'def b', got {got}")


async def test_an_older_result_does_not_satisfy_a_newer_expectation() -> None:
    turns = [{"tool_calls": [{"name": "t"}]}, {"tool_calls": [{"name": "t"}]},
             {"text": "done", "expect": {"tool_result_contains": "OK"}}]
    history = [Message("user", "go"),
               Message("assistant", "", (ToolCall("c0", "t", {}),)),
               Message("tool", "OK", tool_call_id="c0"),
               Message("assistant", "", (ToolCall("c1", "t", {}),)),
               Message("tool", "FAILED", tool_call_id="c1")]
    with pytest.raises(ScriptDivergedError, match=r"^script diverged at turn 3: "):
        await collect_turn(ScriptedModel(turns).stream(history, [], ModelParams()))


async def test_usage_counted_incrementally_equals_a_fresh_count() -> None:
    """One model object across conversations that grow, shrink (compression), change a past
    message, or come as a list: its synthetic usage equals that of a fresh model every time."""
    turns = [{"text": f"turn {i}"} for i in range(8)]

    def tool_turn(i: int) -> tuple[Message, Message]:
        return (Message("assistant", f"turn {i}", (ToolCall(f"c{i}", "read_file",
                                                            {"path": f"{i}.py"}),)),
                Message("tool", "x" * (10 * i + 3), tool_call_id=f"c{i}", name="read_file"))

    base = (Message("system", "s" * 120), Message("user", "u" * 44))
    grown = (*base, *tool_turn(0), *tool_turn(1))
    compressed = (base[0], Message("user", "summary " * 9, meta={"summary": True, "calls": 2}),
                  *tool_turn(2))
    edited = (base[0], Message("user", "v" * 400), *grown[2:])
    same_again = tuple(Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name)
                       for m in grown)  # equal messages, not the same objects
    kept = ScriptedModel(turns)
    for messages in (base, grown, edited, (*grown, *tool_turn(2)), compressed, same_again,
                     list(grown), base):
        fresh = await collect_turn(ScriptedModel(turns).stream(messages, [], ModelParams()))
        again = await collect_turn(kept.stream(messages, [], ModelParams()))
        assert again.usage == fresh.usage and again.message == fresh.message
    assert (await collect_turn(kept.stream(edited, [], ModelParams()))).usage.input_tokens > (
        await collect_turn(kept.stream(grown, [], ModelParams()))).usage.input_tokens
