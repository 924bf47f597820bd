"""Prompt and argument templates for workflow states: sandboxed Jinja2, strict about names.

A template sees ``task`` (the run's task text), ``results`` (each earlier state's result by
state name, e.g. ``results.run_tests.output``), ``data`` (the run's data) and ``workspace``.
An undefined name is an error, not an empty string. The only module importing ``jinja2``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, nodes
from jinja2.sandbox import SandboxedEnvironment

from engine.vocabulary.errors import UsageError

_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
NAMES = ("task", "results", "data", "workspace")
"""Every name a template can use."""


@dataclass(frozen=True, slots=True)
class TemplateIssue:
    """A problem found in a template before any run: its line inside the template, and why."""

    line: int
    message: str


def check(template: str, states: Collection[str]) -> list[TemplateIssue]:
    """Problems in ``template`` found without rendering it: syntax, unknown names, and
    ``results.X`` where ``X`` is not one of ``states``."""
    if "{{" not in template and "{%" not in template and "{#" not in template:
        return []
    try:
        tree = _ENV.parse(template)
    except TemplateSyntaxError as exc:
        return [TemplateIssue(exc.lineno or 1, f"template syntax: {exc.message}")]
    issues = [TemplateIssue(node.lineno, f"unknown name '{node.name}' in a template; "
                                         f"templates see {', '.join(NAMES)}")
              for node in _free_names(tree)
              if node.name not in NAMES and node.name not in _ENV.globals]
    for line, name in _result_refs(tree):
        if name not in states:
            issues.append(TemplateIssue(line, f"results.{name}: '{name}' is not a state "
                                              f"(states: {', '.join(states)})"))
    return issues


def _free_names(tree: nodes.Template) -> Iterator[nodes.Name]:
    """Names loaded but never set in the template (``{% set %}``/loop targets excluded)."""
    stored = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    seen: set[str] = set()
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name not in stored and node.name not in seen:
            seen.add(node.name)
            yield node


def _result_refs(tree: nodes.Template) -> Iterator[tuple[int, str]]:
    """``results.X`` and ``results['X']``: the line and the state name ``X``."""
    for node in tree.find_all(nodes.Getattr):
        if isinstance(node.node, nodes.Name) and node.node.name == "results":
            yield node.lineno, node.attr
    for item in tree.find_all(nodes.Getitem):
        if (isinstance(item.node, nodes.Name) and item.node.name == "results"
                and isinstance(item.arg, nodes.Const) and isinstance(item.arg.value, str)):
            yield item.lineno, item.arg.value


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
