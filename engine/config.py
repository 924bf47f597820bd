"""The YAML adapter for every file that is not a machine: turns, tasks, policies, prices.

Errors come out as ``UsageError("<file>:<line>: <problem>")``; documents that expand aliases
into huge trees, and mappings with a duplicate key, are refused, as for machine files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from engine.errors import UsageError

_MERGE = "tag:yaml.org,2002:merge"
MAX_ALIASES = 100
"""More alias expansions than this is refused (a "billion laughs" document)."""


class _CountingLoader(yaml.SafeLoader):
    """A safe loader that refuses documents with too many alias expansions."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(
                    f"line {mark.line + 1}: more than {MAX_ALIASES} YAML aliases; refused"
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """Refuse duplicate keys: yaml keeps the last silently, dropping a rule or a turn."""
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            line = key_node.start_mark.line + 1
            if key_node.value in first:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key_node.value}' (first at line "
                                f"{first[key_node.value]})", key_node.start_mark)
            first[key_node.value] = line
        return super().construct_mapping(node, deep)


def load_yaml(path: Path) -> Any:
    """Parse ``path`` safely; a missing file or bad YAML is one ``UsageError`` line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from exc
    return parse_yaml(text, str(path))


def parse_yaml(text: str, name: str = "<string>") -> Any:
    """Parse YAML text, naming ``name`` and the line in any error."""
    try:
        return yaml.load(text, Loader=_CountingLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise UsageError(f"{name}{line}: invalid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(f"{name}: invalid YAML: {exc}") from exc
    except RecursionError:  # the pure-Python composer recurses once per nesting level
        raise UsageError(f"{name}: invalid YAML: nested too deeply") from None


def dump_yaml(data: Any) -> str:
    """YAML text for ``data`` (block style, keys in insertion order)."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def item_lines(path: Path, key: str) -> list[int]:
    """1-based line of each item of the top-level sequence ``key`` in a YAML file ([] when the
    file has no such sequence), so a checker can name ``file:line`` for item N."""
    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    if not isinstance(node, yaml.MappingNode):
        return []
    for key_node, value in node.value:
        if getattr(key_node, "value", None) == key and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []
