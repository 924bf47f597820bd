"""The session's config options an editor shows as pickers: the model and the machine.

A change applies from the next prompt's run on (a run keeps the model and machine it started
with). ``default`` leaves the model to the usual resolution: ``$ENGINE_MODEL``, else the
machine's ``model:``.
"""

from __future__ import annotations

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from engine.ide.sessions import Session
from engine.models.prices import load_prices
from engine.spec.bundled import bundled_machines

DEFAULT = "default"


def config_options(s: Session) -> list[SessionConfigOptionSelect]:
    """The model and machine pickers with the session's current values."""
    models = [SessionConfigSelectOption(value=DEFAULT, name="As configured",
                                        description="$ENGINE_MODEL, else the machine's model:")]
    models += [SessionConfigSelectOption(value=m, name=m) for m in _models(s.model)]
    machines = [SessionConfigSelectOption(value=m, name=m) for m in _machines(s.machine)]
    return [
        SessionConfigOptionSelect(type="select", id="model", name="Model", category="model",
                                  current_value=s.model or DEFAULT, options=models),
        SessionConfigOptionSelect(type="select", id="machine", name="Machine",
                                  current_value=s.machine, options=machines),
    ]


def set_option(s: Session, config_id: str, value: str) -> None:
    """Apply one picked value (only the values offered are accepted)."""
    if config_id == "model" and (value == DEFAULT or value in _models(s.model)):
        s.model = None if value == DEFAULT else value
    elif config_id == "machine" and value in _machines(s.machine):
        s.machine = value
    else:
        raise RequestError.invalid_params({config_id: f"{value!r} is not one of its options"})


def _models(current: str | None) -> list[str]:
    """Every model with a known price, as ``provider:model`` (and the current one)."""
    known = [f"{provider}:{model}" for provider, models in load_prices().items()
             for model in models if model != "*"]
    return ([current] if current and current not in known else []) + known


def _machines(current: str) -> list[str]:
    names = list(bundled_machines())
    return names if current in names else [current, *names]
