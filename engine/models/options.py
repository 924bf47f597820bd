"""Model settings, in the model protocol's words: the layers (machine, ``call_model`` state,
command line) merged into the ``ModelParams`` of one call, and the ``--model-option KEY=VALUE``
parser.

A later layer overrides only the settings it gives. Nothing here knows a provider: what one
cannot honour is refused before the run starts by ``engine.providers.factory.check_options``,
never dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from engine.models.base import ModelParams
from engine.spec.model import ModelOptions
from engine.vocabulary.errors import UsageError

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 4096
OPTION_KEYS = tuple(ModelOptions.model_fields)

_INTS = frozenset({"max_tokens", "seed"})
_FLOATS = frozenset({"temperature", "top_p"})


def merge_options(*layers: ModelOptions | Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings in force: each layer's given values override the earlier layers'."""
    out: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        given = layer.set_values() if isinstance(layer, ModelOptions) else {
            k: v for k, v in layer.items() if v is not None}
        out.update(given)
    return out


def to_params(options: Mapping[str, Any], max_tokens: int = DEFAULT_MAX_TOKENS) -> ModelParams:
    """One call's ``ModelParams``; ``max_tokens`` applies when no layer set one."""
    stop = options.get("stop") or ()
    return ModelParams(
        max_tokens=int(options.get("max_tokens") or max_tokens),
        temperature=options.get("temperature"), top_p=options.get("top_p"),
        seed=options.get("seed"), stop=tuple(stop),
        reasoning_effort=options.get("reasoning_effort"))


def request_attributes(params: ModelParams) -> dict[str, Any]:
    """The settings of a call as recorded with it (``gen_ai.request.*`` in the trace)."""
    return {"max_tokens": params.max_tokens, "temperature": params.temperature,
            "top_p": params.top_p, "seed": params.seed,
            "stop_sequences": list(params.stop) or None,
            "reasoning_effort": params.reasoning_effort}


def parse_cli_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--model-option KEY=VALUE`` flags as validated settings; ``stop`` may repeat.

    A bad flag is one ``UsageError`` naming it and what was expected.
    """
    raw: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in OPTION_KEYS:
            raise UsageError(f"--model-option {pair!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(OPTION_KEYS)}")
        if key == "stop":
            raw["stop"] = [*raw.get("stop", ()), value]
        else:
            raw[key] = _typed(pair, key, value.strip())
    try:
        return ModelOptions.model_validate(raw).set_values()
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        message = error["msg"].removeprefix("Value error, ")
        raise UsageError(f"--model-option {key}: {message[:1].lower()}{message[1:]}") from exc


def _typed(pair: str, key: str, value: str) -> Any:
    try:
        if key in _INTS:
            return int(value)
        if key in _FLOATS:
            return float(value)
    except ValueError:
        kind = "an integer" if key in _INTS else "a number"
        raise UsageError(f"--model-option {pair!r}: expected {kind}") from None
    return value

