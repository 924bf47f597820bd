"""One contract over every model client: the same turn streams into the same ``ModelTurn``.

The scripted model replays the turn from a script; the OpenAI and Anthropic clients read the
recorded stream of that turn from the local server, in their own wire formats.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from sse_server import PATHS, STREAMS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import (
    Done,
    ModelClient,
    ModelParams,
    StreamEvent,
    ToolCallDelta,
    Usage,
    collect_turn,
)
from engine.providers.factory import make_model
from engine.providers.scripted import ScriptedModel
from engine.vocabulary.state import Message

pytestmark = pytest.mark.anyio
CASES = json.loads((STREAMS / "cases.json").read_text(encoding="utf-8"))["cases"]
CLIENTS = ("scripted", "openai", "anthropic", "openai-rendered", "anthropic-rendered")
"""``*-rendered``: the turn rendered by ``sse_server.render_turn`` rather than recorded."""
HISTORY = [Message("system", "You fix bugs."), Message("user", "Fix calc.py, please.")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=CLIENTS)
async def model_for(request: pytest.FixtureRequest, sse_server: SSEServer) -> AsyncIterator:  # type: ignore[type-arg]
    """A factory: ``model_for(case)`` is a client whose next answer is that case's turn."""
    made: list[ModelClient] = []

    def build(case: str) -> ModelClient:
        kind = request.param
        if kind == "scripted":
            model: ModelClient = ScriptedModel([CASES[case]], chunk_chars=5)
        elif kind.endswith("-rendered"):
            provider = kind.removesuffix("-rendered")
            sse_server.enqueue(PATHS[provider], Reply.turn(provider, CASES[case]))
            model = make_model(f"{provider}:contract-model", env=provider_env(sse_server))
        else:
            sse_server.enqueue(PATHS[kind], Reply.stream(f"{kind}_{case}"))
            model = make_model(f"{kind}:contract-model", env=provider_env(sse_server))
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()


@pytest.mark.parametrize("case", sorted(CASES))
async def test_same_turn_same_model_turn(model_for, case: str) -> None:  # type: ignore[no-untyped-def]
    model = model_for(case)
    events: list[StreamEvent] = []
    turn = await collect_turn(model.stream(HISTORY, [], ModelParams()), on_event=events.append)
    expected = CASES[case]
    assert turn.message.role == "assistant"
    assert turn.message.content == expected.get("text", "")
    calls = [{"name": c.name, "args": dict(c.args)} for c in turn.message.tool_calls]
    assert calls == expected.get("tool_calls", [])
    assert all(c.id and c.args_error is None for c in turn.message.tool_calls)
    assert len({c.id for c in turn.message.tool_calls}) == len(calls)
    assert turn.finish_reason == ("tool_calls" if calls else "stop")
    assert turn.retries == 0
    assert turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0


@pytest.mark.parametrize("case", ["parallel_tools", "fragmented_args", "tool_call"])
async def test_stream_event_contract(model_for, case: str) -> None:  # type: ignore[no-untyped-def]
    """Fragments are numbered 0..n-1, the first of each names the call; Usage, then one Done."""
    model = model_for(case)
    assert isinstance(model.provider, str) and isinstance(model.model, str)
    events = [e async for e in model.stream(HISTORY, [], ModelParams())]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    names: dict[int, str] = {}
    for fragment in fragments:
        if fragment.index not in names:
            assert fragment.id and fragment.name, "the first fragment carries id and name"
            names[fragment.index] = fragment.name
        else:
            assert fragment.name in (None, names[fragment.index]), "a call never changes name"
    assert sorted(names) == list(range(len(CASES[case]["tool_calls"])))
    assert isinstance(events[-1], Done) and [type(e) for e in events].count(Done) == 1
    assert isinstance(events[-2], Usage)
