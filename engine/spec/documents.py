"""Every YAML file that is not a machine (turns, tasks, policies, prices) as plain values.

A thin layer over the one YAML adapter (``engine.spec.load``): the same size limit, C parser
and refusals as machine files (aliases, duplicate and merge keys, exotic tags, deep nesting),
with the first problem as one ``UsageError("<file>:<line>: <problem>")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.spec.load import (
    MAX_FILE_BYTES,
    Document,
    decode,
    dump_yaml,
    parse_document,
    read_limited,
)
from engine.vocabulary.errors import SpecError, UsageError

__all__ = ["MAX_FILE_BYTES", "Document", "dump_yaml", "item_lines", "load_document", "load_yaml",
           "parse_yaml", "read_limited_text"]


def load_yaml(path: Path) -> Any:
    """Parse ``path`` safely; a missing, oversized or bad file is one ``UsageError`` line."""
    return load_document(path).value


def load_document(path: Path) -> Document:
    """``load_yaml`` with the line of every key and list item, for errors found later."""
    shown = str(path)
    return _checked(lambda: parse_document(_text(Path(path), shown), shown))


def parse_yaml(text: str, name: str = "<string>") -> Any:
    """Parse YAML text, naming ``name`` and the line in any error."""
    return _checked(lambda: parse_document(text, name)).value


def read_limited_text(path: Path, what: str = "file") -> str:
    """A UTF-8 file within the YAML size limit (JSON files use the same bound)."""
    shown = str(path)
    try:
        return decode(read_limited(Path(path), shown, what=what), shown)
    except SpecError as exc:
        raise UsageError(str(exc.problems[0])) from exc


def _text(path: Path, shown: str) -> str:
    return decode(read_limited(path, shown), shown)


def _checked(parse: Any) -> Document:
    try:
        doc: Document = parse()
    except SpecError as exc:
        raise UsageError(str(exc.problems[0])) from exc
    if doc.problems:
        raise UsageError(str(doc.problems[0]))
    return doc


def item_lines(doc: Document, key: str) -> list[int]:
    """1-based line of each item of the top-level sequence ``key`` ([] when there is none), so
    a checker can name ``file:line`` for item N."""
    value = doc.value.get(key) if isinstance(doc.value, dict) else None
    if not isinstance(value, list):
        return []
    return [doc.items.get((key, i)) or 0 for i in range(len(value))]
