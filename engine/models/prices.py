"""The price table: estimated US dollars per million tokens, per provider and model.

Defaults ship in ``prices.yaml`` next to this module; a user file of the same shape
(``ENGINE_PRICES`` or an explicit path) overrides or extends them. A model with no price costs
``None``, never 0, so an unknown cost is never mistaken for a free one.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.spec.documents import load_yaml
from engine.vocabulary.errors import UsageError

logger = logging.getLogger(__name__)

DEFAULT_PRICES = Path(__file__).with_name("prices.yaml")
PRICES_ENV = "ENGINE_PRICES"
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
"""A dated snapshot or ``-latest`` alias is priced as its base model."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cached: float
    """Input tokens read from the prompt cache."""
    cache_write: float | None = None
    """Input tokens written to the prompt cache; None: the ``input`` price."""


class TokenCounts(Protocol):
    """The token counts a price applies to (``engine.models.base.Usage``)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


PriceTable = Mapping[str, Mapping[str, Price]]
"""provider -> model (or ``*``) -> price."""


def estimate_cost(
    provider: str,
    model: str,
    usage: TokenCounts,
    *,
    prices_path: Path | None = None,
    env: Mapping[str, str] = os.environ,
) -> float | None:
    """Estimated dollars for one call, or None when the model has no known price."""
    price = price_for(load_prices(prices_path, env), provider, model)
    if price is None:
        return None
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    write_price = price.input if price.cache_write is None else price.cache_write
    dollars = ((usage.input_tokens - cached - written) * price.input + cached * price.cached
               + written * write_price + usage.output_tokens * price.output) / 1_000_000
    return round(dollars, 8)


def price_for(table: PriceTable, provider: str, model: str) -> Price | None:
    """The price of ``model``: exact name, then its base name without a date, then ``*``."""
    models = table.get(provider) or {}
    base = _SNAPSHOT.sub("", model)
    return models.get(model) or models.get(base) or models.get("*")


def load_prices(path: Path | None = None, env: Mapping[str, str] = os.environ) -> PriceTable:
    """The default table, overridden by ``path`` or else the file named by ``ENGINE_PRICES``."""
    override = path if path is not None else env.get(PRICES_ENV) or None
    return _load(str(override) if override else None)


@functools.lru_cache(maxsize=8)
def _load(override: str | None) -> PriceTable:
    table = {p: dict(models) for p, models in _parse(DEFAULT_PRICES).items()}
    if override:
        for provider, models in _parse(Path(override)).items():
            table.setdefault(provider, {}).update(models)
        logger.debug("prices overridden from %s", override)
    return table


def _parse(path: Path) -> dict[str, dict[str, Price]]:
    data = load_yaml(path) or {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a price file maps provider -> model -> prices")
    return {str(provider): _parse_models(path, str(provider), models)
            for provider, models in data.items()}


def _parse_models(path: Path, provider: str, models: Any) -> dict[str, Price]:
    if not isinstance(models, dict):
        raise UsageError(f"{path}: {provider}: expected a mapping of model -> prices")
    return {str(name): _parse_price(path, f"{provider}.{name}", raw)
            for name, raw in models.items()}


def _parse_price(path: Path, where: str, raw: Any) -> Price:
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: {where}: expected {{input: N, output: N, cached: N}}")
    unknown = set(raw) - {"input", "output", "cached", "cache_write"}
    if unknown:
        raise UsageError(f"{path}: {where}: unknown field(s) {sorted(unknown)}; "
                         "use input, output, cached, cache_write")
    values: dict[str, float] = {}
    for key in ("input", "output"):
        values[key] = _number(path, where, key, raw.get(key))
    cached = raw.get("cached")
    values["cached"] = values["input"] if cached is None else _number(path, where, "cached", cached)
    write = raw.get("cache_write")
    return Price(**values, cache_write=None if write is None else _number(path, where,
                                                                          "cache_write", write))


def _number(path: Path, where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UsageError(f"{path}: {where}: {key!r} must be a number >= 0 (dollars per million "
                         f"tokens), got {value!r}")
    return float(value)
