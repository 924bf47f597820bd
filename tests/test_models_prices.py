"""Cost estimates from the price table: per-million prices, cached input, overrides, unknowns."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models.base import Usage
from engine.models.prices import DEFAULT_PRICES, Price, estimate_cost, load_prices, price_for
from engine.vocabulary.errors import UsageError

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000)


def test_every_default_entry_parses_and_names_the_required_models() -> None:
    table = load_prices(env={})
    for provider, model in [("openai", "gpt-4.1"), ("openai", "gpt-4.1-mini"),
                            ("openai", "gpt-4o"), ("openai", "gpt-4o-mini"),
                            ("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-opus-4-1"),
                            ("anthropic", "claude-haiku-4-5")]:
        price = table[provider][model]
        assert 0 < price.cached <= price.input < price.output
    assert DEFAULT_PRICES.is_file()


def test_cost_splits_cached_from_uncached_input() -> None:
    usage = Usage(input_tokens=10_000, output_tokens=2_000, cached_tokens=4_000)
    # gpt-4.1-mini: input 0.40, cached 0.10, output 1.60 per million
    expected = (6_000 * 0.40 + 4_000 * 0.10 + 2_000 * 1.60) / 1_000_000
    assert estimate_cost("openai", "gpt-4.1-mini", usage, env={}) == pytest.approx(expected)


def test_dated_snapshots_and_latest_aliases_use_the_base_price() -> None:
    base = estimate_cost("anthropic", "claude-sonnet-4-5", MILLION, env={})
    assert base == 18.0
    assert estimate_cost("anthropic", "claude-sonnet-4-5-20250929", MILLION, env={}) == base
    assert estimate_cost("openai", "gpt-4.1-2025-04-14", MILLION, env={}) == 10.0
    assert estimate_cost("anthropic", "claude-3-5-haiku-latest", MILLION, env={}) == 4.8


def test_unknown_model_costs_none_but_local_and_scripted_cost_zero() -> None:
    assert estimate_cost("openai", "my-finetune", MILLION, env={}) is None
    assert estimate_cost("mistral", "large", MILLION, env={}) is None
    assert estimate_cost("ollama", "qwen2.5-coder:7b", MILLION, env={}) == 0.0
    assert estimate_cost("scripted", "scripted", MILLION, env={}) == 0.0


def test_override_file_by_env_or_path_extends_and_replaces(tmp_path: Path) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text("openai:\n  gpt-4.1: {input: 1, output: 2}\n  my-finetune: "
                        "{input: 3, output: 4, cached: 0.5}\n", encoding="utf-8")
    env = {"ENGINE_PRICES": str(override)}
    assert estimate_cost("openai", "gpt-4.1", MILLION, env=env) == 3.0
    assert estimate_cost("openai", "my-finetune", MILLION, env=env) == 7.0
    assert estimate_cost("openai", "gpt-4o", MILLION, env=env) == 12.5, "defaults still apply"
    assert estimate_cost("openai", "my-finetune", MILLION, prices_path=override, env={}) == 7.0
    assert price_for(load_prices(override), "openai", "gpt-4.1") == Price(1.0, 2.0, 1.0)


@pytest.mark.parametrize(("text", "problem"), [
    ("- 1\n", "a price file maps provider -> model -> prices"),
    ("openai: 3\n", "openai: expected a mapping of model -> prices"),
    ("openai:\n  m: {input: cheap, output: 1}\n", "openai.m: 'input' must be a number >= 0"),
    ("openai:\n  m: {input: 1, output: 1, cache: 1}\n", "openai.m: unknown field(s) ['cache']"),
    ("openai:\n  m: [1, 2\n", "invalid YAML"),
])
def test_bad_override_is_one_usage_error_naming_file_and_entry(
    tmp_path: Path, text: str, problem: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        estimate_cost("openai", "m", MILLION, prices_path=bad)
    assert str(info.value).startswith(str(bad))
    assert problem in str(info.value)
