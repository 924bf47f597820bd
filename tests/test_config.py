"""The YAML adapter for non-machine files: values, file:line errors, refusals, size limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.spec.documents import MAX_FILE_BYTES, dump_yaml, load_document, load_yaml, parse_yaml
from engine.spec.load import C_PARSER
from engine.vocabulary.errors import UsageError


def test_load_values_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("prompt: fix it\nlimits: {max_steps: 5}\nflags: [true, null, 2.5, '3']\n")
    data = load_yaml(path)
    assert data == {"prompt": "fix it", "limits": {"max_steps": 5},
                    "flags": [True, None, 2.5, "3"]}
    assert parse_yaml(dump_yaml(data)) == data


def test_lines_of_keys_and_items(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text("- text: a\n\n- tool_calls:\n    - {name: x}\n  expect: {}\n")
    doc = load_document(path)
    assert doc.items[(1,)] == 3 and doc.lines[(1, "expect")] == 5
    assert doc.line((1, "tool_calls", 0, "name")) == 4


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^nowhere\.yaml: no such file$"):
        load_yaml(Path("nowhere.yaml"))
    with pytest.raises(UsageError, match=r"^t\.yaml:2: invalid YAML: mapping values"):
        parse_yaml("a: 1\nb: c: d\n", "t.yaml")


def test_duplicate_and_merge_keys_are_refused_with_their_lines() -> None:
    text = "rules:\n  - allow: read\nmode: ask\nrules:\n  - allow: write\n"
    with pytest.raises(UsageError) as info:
        parse_yaml(text, "policy.yaml")
    assert str(info.value) == "policy.yaml:4: duplicate key 'rules' (first at line 1)"
    with pytest.raises(UsageError, match=r"^p\.yaml:2: merge keys \('<<'\) are not allowed"):
        parse_yaml("base: {x: 1}\nnew: {<<: {x: 2}, y: 2}\n", "p.yaml")
    assert parse_yaml("a: '<<'\nb: [<<]\n") == {"a": "<<", "b": ["<<"]}


def test_any_alias_is_refused_at_its_line() -> None:
    with pytest.raises(UsageError) as info:
        parse_yaml("base: &b {x: 1}\nother: *b\n", "task.yaml")
    assert str(info.value) == "task.yaml:2: YAML alias '*b' is not allowed; write the value out"


def test_alias_bomb_is_refused_without_expanding() -> None:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(UsageError, match=r"^bomb\.yaml:2: YAML alias '\*a0' is not allowed"):
        parse_yaml("\n".join(rows), "bomb.yaml")


def test_deep_nesting_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^deep\.yaml:1: document nested too deeply"):
        parse_yaml("a: " + "[" * 900 + "]" * 900, "deep.yaml")


def test_a_file_over_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_bytes(b"- text: '" + b"x" * MAX_FILE_BYTES + b"'\n")
    with pytest.raises(UsageError) as info:
        load_yaml(path)
    assert str(info.value).startswith(f"{path}: file too large (over 4 MB")
    assert "\n" not in str(info.value)


def test_the_c_parser_is_used_when_libyaml_is_installed() -> None:
    import yaml

    assert hasattr(yaml, "CSafeLoader") == C_PARSER
