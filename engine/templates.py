"""Prompt and argument templates for workflow states: sandboxed Jinja2, strict about names.

A template sees ``task`` (the run's task text), ``results`` (each earlier state's result by
state name, e.g. ``results.run_tests.output``), ``data`` (the run's data) and ``workspace``.
An undefined name is an error, not an empty string. The only module importing ``jinja2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from engine.errors import UsageError

_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def render(template: str, context: Mapping[str, Any], *, where: str = "template") -> str:
    """Render one template string; errors name ``where`` (e.g. ``state review, with.prompt``)."""
    if "{{" not in template and "{%" not in template:
        return template
    try:
        return _ENV.from_string(template).render(**context)
    except TemplateError as exc:
        raise UsageError(f"{where}: {exc}") from exc


def render_value(value: Any, context: Mapping[str, Any], *, where: str = "template") -> Any:
    """Render every string inside a nested structure of dicts and lists."""
    if isinstance(value, str):
        return render(value, context, where=where)
    if isinstance(value, Mapping):
        return {k: render_value(v, context, where=f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render_value(v, context, where=where) for v in value]
    return value
