"""The tools a model is offered: listed in name order, current after every change to the
registry, each offered as its spec describes it (built once per spec, not per call)."""

from __future__ import annotations

from typing import Any

from engine.actions.agent import _schema
from engine.models.base import ToolSchema
from engine.tooling import ToolContext, ToolRegistry, ToolResult, ToolSpec


async def _handler(args: Any, ctx: ToolContext) -> ToolResult:
    return ToolResult("ok")


def _spec(name: str, description: str = "does things",
          schema: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(name, "1", description, None, _handler,
                    raw_input_schema=schema or {"type": "object", "properties": {}})


def test_the_listing_follows_every_add_remove_and_replace() -> None:
    registry = ToolRegistry([_spec("zeta"), _spec("alpha")])
    assert [s.name for s in registry] == ["alpha", "zeta"]
    assert [s.name for s in registry] == ["alpha", "zeta"]  # listed again: same order
    registry.add(_spec("mid"))
    assert [s.name for s in registry] == ["alpha", "mid", "zeta"]
    registry.remove("alpha")
    assert [s.name for s in registry] == ["mid", "zeta"]
    newer = _spec("mid", "does other things")
    registry.add(newer, replace=True)
    assert [s.description for s in registry] == ["does other things", "does things"]
    assert next(iter(registry)) is newer
    registry.remove_source("builtin")
    assert list(registry) == []


def test_a_tool_is_offered_as_its_spec_says_and_a_new_spec_is_offered_anew() -> None:
    first = _spec("probe", schema={"type": "object", "properties": {"x": {"type": "string"}}})
    offered = _schema(first)
    assert offered == ToolSchema("probe", "does things", first.input_schema)
    assert _schema(first) is offered  # the same spec: the same offer
    changed = _spec("probe", "probes better",
                    schema={"type": "object", "properties": {"y": {"type": "integer"}}})
    again = _schema(changed)
    assert again == ToolSchema("probe", "probes better", changed.input_schema)
    assert again.input_schema["properties"] == {"y": {"type": "integer"}}
