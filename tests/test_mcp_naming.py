"""Namespaced MCP tool names: valid everywhere, deterministic, never colliding."""

from __future__ import annotations

import re

from engine.mcp import tool_name

VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_plain_names_stay_readable() -> None:
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert tool_name("everything", "get-sum") == "mcp__everything__get-sum"


def test_invalid_characters_are_sanitised_with_a_stable_suffix() -> None:
    name = tool_name("my.server", "read file")
    assert VALID.fullmatch(name)
    assert name.startswith("mcp__my_server__read_file_")
    assert name == tool_name("my.server", "read file")


def test_long_names_fit_in_64() -> None:
    a = tool_name("s" * 40, "t" * 40)
    b = tool_name("s" * 40, "t" * 41)
    assert len(a) == len(b) == 64 and a != b
    assert VALID.fullmatch(a) and VALID.fullmatch(b)


def test_names_that_sanitise_alike_do_not_collide() -> None:
    names = {
        tool_name("a.b", "c"), tool_name("a_b", "c"), tool_name("a", "b__c"),
        tool_name("a__b", "c"), tool_name("a_", "_b"), tool_name("a", "__b"),
        tool_name("x", "read.file"), tool_name("x", "read_file"),
    }
    assert len(names) == 8
    assert all(VALID.fullmatch(n) for n in names)


def test_taken_names_are_avoided() -> None:
    plain = tool_name("fs", "read")
    other = tool_name("fs", "read", taken={plain})
    assert other != plain and other.startswith("mcp__fs__read_")
    third = tool_name("fs", "read", taken={plain, other})
    assert third not in {plain, other} and VALID.fullmatch(third)
