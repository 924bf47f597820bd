"""The tool registry: the tools a run can call right now, by name, in namespaces.

Built-ins use plain names; MCP tools are ``mcp__<server>__<tool>``. Tools can be added and
removed during a run; ``version`` counts changes so the next model call sees the current list.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from engine.tooling.spec import ToolSpec
from engine.vocabulary.errors import ToolError

logger = logging.getLogger(__name__)


class ToolRegistry:
    """A mutable set of ``ToolSpec`` keyed by name; the only place tools are looked up."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self.version = 0
        """Incremented on every add or remove."""
        self._listed: tuple[ToolSpec, ...] = ()
        self._listed_at = -1
        """The tools sorted by name, as of ``version`` ``_listed_at`` (every model call lists
        them: sorted once per change, not per call)."""
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec, *, replace: bool = False) -> None:
        if spec.name in self._tools and not replace:
            raise ToolError(f"tool {spec.name!r} is already registered")
        self._tools[spec.name] = spec
        self.version += 1

    def remove(self, name: str) -> ToolSpec | None:
        spec = self._tools.pop(name, None)
        if spec is not None:
            self.version += 1
        return spec

    def remove_source(self, source: str) -> list[str]:
        """Remove every tool from ``source`` (e.g. ``mcp:git``); returns the removed names."""
        names = [n for n, s in self._tools.items() if s.source == source]
        for name in names:
            self.remove(name)
        return names

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolSpec]:
        if self._listed_at != self.version:
            self._listed = tuple(sorted(self._tools.values(), key=_name))
            self._listed_at = self.version
        return iter(self._listed)

    def __len__(self) -> int:
        return len(self._tools)


def _name(spec: ToolSpec) -> str:
    return spec.name
