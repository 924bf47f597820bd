"""Local risk classification of MCP tools: annotations lower risk only for trusted servers."""

from __future__ import annotations

from typing import Any

import pytest

from engine.mcp import classify_tool, with_policy

PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
CMD = {"type": "object", "properties": {"cmd": {"type": "string"}}}
URL = {"type": "object", "properties": {"target": {"type": "string", "format": "uri"}}}
SQL = {"type": "object", "properties": {"sql": {"type": "string"}}}
NESTED = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "commandLine": {"type": "string"}}}}}
RO = {"readOnlyHint": True, "openWorldHint": False}
RO_SNAKE = {"read_only_hint": True, "open_world_hint": False, "idempotent_hint": True}


@pytest.mark.parametrize(("name", "schema", "ann", "trust", "risk"), [
    # name words
    ("delete_everything", {}, None, "internal", "destructive"),
    ("git_reset", {}, None, "internal", "destructive"),
    ("write_file", PATH, None, "internal", "write"),
    ("fetchPage", {}, None, "internal", "network"),
    ("search_web", {}, None, "internal", "network"),
    ("run_tests", {}, None, "internal", "exec"),
    ("install_package", {}, None, "internal", "install"),
    ("read_file", PATH, None, "internal", "read"),
    ("get-file-info", PATH, None, "internal", "read"),
    ("frobnicate", {}, None, "internal", "write"),           # unknown name: fail closed
    # schema fields raise
    ("read_thing", CMD, None, "internal", "exec"),
    ("get_status", URL, None, "internal", "network"),
    ("list_rows", SQL, None, "internal", "write"),
    ("show", NESTED, None, "internal", "exec"),
    # annotations from untrusted / internal servers: only raising counts
    ("delete_everything", {}, RO, "untrusted", "destructive"),
    ("read_file", PATH, RO, "untrusted", "write"),            # read is not believed
    ("read_file", PATH, RO, "internal", "read"),
    ("read_file", PATH, {"destructiveHint": True}, "internal", "destructive"),
    ("read_file", PATH, {"openWorldHint": True}, "internal", "network"),
    ("get_x", {}, {"readOnlyHint": False}, "internal", "write"),
    ("run_job", {}, None, "untrusted", "exec"),
    # trusted servers' annotations decide, with MCP's defaults for missing hints
    ("delete_everything", {}, RO, "trusted", "read"),
    ("read_file", PATH, RO_SNAKE, "trusted", "read"),
    ("edit_file", PATH, {"readOnlyHint": False, "destructiveHint": False,
                         "openWorldHint": False}, "trusted", "write"),
])
def test_risk_table(name: str, schema: dict[str, Any], ann: dict[str, Any] | None, trust: str,
                    risk: str) -> None:
    c = classify_tool(name, schema, ann, trust)
    assert c.risk == risk, c.reasons
    assert c.side_effects == (risk != "read")
    assert c.reasons


def test_trusted_missing_hints_use_spec_defaults() -> None:
    # readOnlyHint=false with destructiveHint and openWorldHint left out: MCP says destructive
    c = classify_tool("make", {}, {"readOnlyHint": False}, "trusted")
    assert c.risk == "destructive" and c.open_world


def test_untrusted_defaults_write_open_world_not_idempotent() -> None:
    c = classify_tool("echo", {"type": "object", "properties": {"text": {"type": "string"}}},
                      None, "untrusted")
    assert (c.risk, c.open_world, c.idempotent) == ("write", True, False)


def test_idempotent_only_when_trusted_says_so() -> None:
    assert classify_tool("read_file", PATH, RO_SNAKE, "trusted").idempotent
    assert not classify_tool("read_file", PATH, RO_SNAKE, "internal").idempotent
    assert not classify_tool("read_file", PATH, RO_SNAKE, "untrusted").idempotent


def test_path_fields_are_flagged() -> None:
    assert classify_tool("read_file", PATH, None, "internal").path_bearing
    assert classify_tool("git_status", {"properties": {"repo_path": {}}}, None,
                         "internal").path_bearing
    assert not classify_tool("echo", {}, None, "internal").path_bearing


def test_ignored_annotations_are_explained() -> None:
    c = classify_tool("delete_everything", {}, RO, "untrusted")
    assert any("ignored" in r and "untrusted" in r for r in c.reasons)


def test_policy_override_may_lower_and_declare_idempotent() -> None:
    c = with_policy(classify_tool("frobnicate", {}, None, "untrusted"), risk="read",
                    idempotent=True)
    assert (c.risk, c.idempotent, c.side_effects) == ("read", True, False)
    assert c.reasons[-2:] == ("policy -> read", "policy -> idempotent=True")
