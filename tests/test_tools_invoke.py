"""invoke (lookup, validation, timeouts, caps, broken tools, describe_call) and update_plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict

from engine.tooling import ToolContext, ToolRegistry, ToolResult, ToolSpec
from engine.tooling.invoke import (
    HANDLER_GRACE_S,
    MAX_RESULT_CHARS,
    cap_result,
    describe_call,
    effective_timeout,
    invoke,
)
from engine.vocabulary.state import ToolCall
from turnstile_tools import BUILTIN_NAMES, builtin_specs

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TimedArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float | None = None


def spec(name: str, handler: Any, model: type[BaseModel] = NoArgs, timeout_s: float = 5.0,
         ) -> ToolSpec:
    return ToolSpec(name=name, version="0.1.0", description=name, input_model=model,
                    handler=handler, timeout_s=timeout_s, changelog=("0.1.0: test",))


def run(registry: ToolRegistry, name: str, args: Any = None, grace_s: float = HANDLER_GRACE_S,
        **ctx_kw: Any) -> Any:
    ctx = ToolContext(workspace=Path("."), call_id="i1", **ctx_kw)
    return invoke(registry, ToolCall("i1", name, args or {}), ctx, grace_s=grace_s)


async def test_unknown_tool_lists_available_ones() -> None:
    r = await run(ToolRegistry(builtin_specs()), "read_fil")
    assert r.is_error and "unknown tool 'read_fil'" in r.content and "read_file" in r.content


async def test_invalid_json_and_invalid_arguments_are_results() -> None:
    registry = ToolRegistry(builtin_specs())
    ctx = ToolContext(workspace=Path("."))
    bad_json = await invoke(registry, ToolCall("x", "read_file", {}, "Expecting value"), ctx)
    assert bad_json.is_error and "invalid JSON arguments" in bad_json.content
    missing = await run(registry, "read_file", {"limit": "many"})
    assert missing.is_error and "path: Field required" in missing.content
    assert "limit:" in missing.content


async def test_handler_exception_and_wrong_return_become_errors() -> None:
    async def boom(args: Any, ctx: ToolContext) -> ToolResult:
        raise RuntimeError("disk on fire")

    async def wrong(args: Any, ctx: ToolContext) -> Any:
        return "just a string"

    registry = ToolRegistry([spec("boom", boom), spec("wrong", wrong)])
    r = await run(registry, "boom")
    assert r.is_error and "RuntimeError: disk on fire" in r.content
    w = await run(registry, "wrong")
    assert w.is_error and "not a ToolResult" in w.content


async def test_timeout_from_spec_context_and_call() -> None:
    seen: list[float | None] = []

    async def slow(args: Any, ctx: ToolContext) -> ToolResult:
        seen.append(ctx.timeout_s)
        await anyio.sleep(100)
        return ToolResult("never")

    registry = ToolRegistry([spec("slow", slow, TimedArgs, timeout_s=0.05)])
    r = await run(registry, "slow", grace_s=0)
    assert r.is_error and "timed out after 0.05s" in r.content
    assert r.data == {"timed_out": True, "timeout_s": 0.05}
    by_call = await run(registry, "slow", {"timeout_s": 0.02}, grace_s=0.01)
    assert by_call.data == {"timed_out": True, "timeout_s": 0.02}
    s = registry.get("slow")
    assert s is not None
    assert effective_timeout(s, TimedArgs(timeout_s=9), ToolContext(Path("."), timeout_s=3)) == 9
    assert effective_timeout(s, TimedArgs(), ToolContext(Path("."), timeout_s=3)) == 3
    assert effective_timeout(s, TimedArgs(), ToolContext(Path("."))) == s.timeout_s
    assert seen == [0.05, 0.02]


async def test_cancellation_propagates() -> None:
    async def slow(args: Any, ctx: ToolContext) -> ToolResult:
        await anyio.sleep(100)
        return ToolResult("never")

    registry = ToolRegistry([spec("slow", slow)])
    with anyio.move_on_after(0.05) as scope:
        await run(registry, "slow")
    assert scope.cancelled_caught


async def test_long_results_are_capped() -> None:
    async def chatty(args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult("é" * 100_000, data={"k": 1})

    r = await run(ToolRegistry([spec("chatty", chatty)]), "chatty")
    assert r.truncated and len(r.content) < MAX_RESULT_CHARS + 100
    assert r.omitted_bytes == (100_000 - MAX_RESULT_CHARS) * 2
    assert f"[{r.omitted_bytes} bytes omitted]" in r.content and r.data == {"k": 1}
    short = ToolResult("ok")
    assert cap_result(short) is short


def test_describe_call_for_file_and_shell_results() -> None:
    specs = {s.name: s for s in builtin_specs()}
    call = ToolCall("c", "write_file", {"path": "a", "content": "x"})
    result = ToolResult("created a", data={"path": "a", "base_hash": None, "result_hash": "h",
                                           "created": True, "patch": "+x"})
    d = describe_call(specs["write_file"], call, result, 0.25)
    assert d | {} == {
        "call_id": "c", "tool": "write_file", "version": "1.0.0", "args": call.args,
        "duration_s": 0.25, "outcome": "ok", "is_error": False, "risk": "write",
        "idempotent": False, "side_effects": True, "source": "builtin", "path": "a",
        "base_hash": None, "result_hash": "h", "created": True, "patch": "+x",
        "truncated": False, "content_chars": 9}
    shell = describe_call(specs["run_shell"], ToolCall("d", "run_shell", {"command": "x"}),
                          ToolResult("...", True, {"exit_code": 2, "duration_s": 9.0,
                                                   "timed_out": False, "omitted_bytes": 0}), 1.5)
    assert shell["exit_code"] == 2 and shell["duration_s"] == 1.5 and shell["outcome"] == "error"
    cancelled = describe_call(None, ToolCall("e", "gone", {}), None, 0.1)
    assert cancelled["outcome"] == "cancelled" and cancelled["version"] is None


def test_builtins_declare_risk_idempotency_and_changelog() -> None:
    specs = builtin_specs()
    assert tuple(s.name for s in specs) == BUILTIN_NAMES
    table = {s.name: (s.risk, s.idempotent, s.side_effects) for s in specs}
    assert table == {
        "read_file": ("read", True, False), "list_files": ("read", True, False),
        "search_text": ("read", True, False), "write_file": ("write", False, True),
        "edit_file": ("write", False, True), "run_shell": ("exec", False, True),
        "update_plan": ("read", True, False)}
    for s in specs:
        assert s.changelog and s.changelog[-1].startswith(f"{s.version}:"), s.name
        assert s.source == "builtin"
        assert s.input_model is not None
        assert s.input_model.model_config.get("extra") == "forbid", s.name
        schema = s.input_schema
        for field_name, prop in schema["properties"].items():
            assert prop.get("description"), f"{s.name}.{field_name} has no description"


# ---------------------------------------------------------------- update_plan

async def test_update_plan_renders_and_returns_plan() -> None:
    steps = [{"step": "read code", "status": "done"},
             {"step": "fix bug", "status": "in_progress"},
             {"step": "run tests", "status": "pending"}]
    r = await run(ToolRegistry(builtin_specs()), "update_plan",
                  {"steps": steps, "explanation": "found the bug"})
    assert not r.is_error
    assert r.content.splitlines() == ["Plan updated (1/3 done):", "[x] read code",
                                      "[~] fix bug", "[ ] run tests", "Why: found the bug"]
    assert r.data == {"plan": steps, "explanation": "found the bug"}


async def test_update_plan_rejects_bad_plans() -> None:
    registry = ToolRegistry(builtin_specs())
    two = await run(registry, "update_plan", {"steps": [
        {"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]})
    assert two.is_error and "at most one step may be in_progress" in two.content
    bad = await run(registry, "update_plan", {"steps": [{"step": "a", "status": "started"}]})
    assert bad.is_error and "steps.0.status" in bad.content
    empty = await run(registry, "update_plan", {"steps": []})
    assert empty.is_error


class ExtraArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


class PropertyArgs(BaseModel):
    @property
    def timeout_s(self) -> float:
        return 7.0


def test_effective_timeout_finds_the_argument_wherever_a_model_keeps_it() -> None:
    ctx = ToolContext(workspace=Path("."))
    s = spec("t", None, timeout_s=5.0)
    assert effective_timeout(s, NoArgs(), ctx) == 5.0
    assert effective_timeout(s, TimedArgs(timeout_s=2), ctx) == 2.0
    assert effective_timeout(s, ExtraArgs(timeout_s=3), ctx) == 3.0
    assert effective_timeout(s, ExtraArgs(other=3), ctx) == 5.0
    assert effective_timeout(s, PropertyArgs(), ctx) == 7.0
    assert effective_timeout(s, {"timeout_s": 9}, ctx) == 5.0  # a dict has no attribute
