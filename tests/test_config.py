"""The YAML adapter for non-machine files: values, file:line errors, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import MAX_ALIASES, dump_yaml, load_yaml, parse_yaml
from engine.errors import UsageError


def test_load_values_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("prompt: fix it\nlimits: {max_steps: 5}\nbase: &b {x: 1}\nother: *b\n")
    data = load_yaml(path)
    assert data == {"prompt": "fix it", "limits": {"max_steps": 5}, "base": {"x": 1},
                    "other": {"x": 1}}
    assert parse_yaml(dump_yaml(data)) == data


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^nowhere\.yaml: no such file$"):
        load_yaml(Path("nowhere.yaml"))
    with pytest.raises(UsageError, match=r"^t\.yaml:2: invalid YAML: mapping values"):
        parse_yaml("a: 1\nb: c: d\n", "t.yaml")


def test_duplicate_keys_are_refused_with_both_lines() -> None:
    text = "rules:\n  - allow: read\nmode: ask\nrules:\n  - allow: write\n"
    with pytest.raises(UsageError) as info:
        parse_yaml(text, "policy.yaml")
    assert str(info.value) == "policy.yaml:4: invalid YAML: duplicate key 'rules' (first at line 1)"
    assert parse_yaml("base: &b {x: 1}\nnew: {<<: *b, y: 2}\n")["new"] == {"x": 1, "y": 2}


def test_alias_bomb_is_refused() -> None:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 20)]
    with pytest.raises(UsageError, match=f"more than {MAX_ALIASES} YAML aliases"):
        parse_yaml("\n".join(rows), "bomb.yaml")


def test_deep_nesting_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"^deep\.yaml: invalid YAML: nested too deeply$"):
        parse_yaml("a: " + "[" * 900 + "]" * 900, "deep.yaml")
