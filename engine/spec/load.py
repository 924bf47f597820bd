"""YAML -> values and machine specs: the one YAML adapter, with a file:line for every problem.

Every YAML file the engine reads (machines, policies, golden tasks, turns, prices) goes through
``read_document``: the file's size is checked before it is read, libyaml's C parser (when
installed) produces the events, and one pass builds plain values plus a table of the line of
every key. The pass refuses what yaml silently accepts or expands: aliases (so an alias bomb
never grows), duplicate keys, merge keys, non-name keys, exotic tags, and nesting past
``MAX_DEPTH``. ``parse_machine`` then validates a machine with one pydantic build.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

from engine.spec.model import (
    ContextSpec,
    Limits,
    MachineSpec,
    McpServerSpec,
    ModelOptions,
    SandboxSpec,
)
from engine.vocabulary.errors import SpecError, SpecProblem

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 4_000_000
"""Larger YAML files are refused before they are read: no machine, policy, task or script
needs more, and a runaway file would cost minutes and hundreds of MB per run."""
MAX_NODES = 10_000
"""Machines with more values are refused: no machine needs them, and they cost every CLI start."""
MAX_DEPTH = 64
"""Deeper nesting is refused: no file needs it."""

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
C_PARSER = _Loader is not yaml.SafeLoader
"""True when libyaml's C parser is in use."""
_CONSTRUCTOR = SafeConstructor()
_TAG = "tag:yaml.org,2002:"
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"
_SCALARS: dict[str, Any] = {
    _TAG + "str": lambda node: node.value,
    _TAG + "null": lambda node: None,
    _TAG + "bool": _CONSTRUCTOR.construct_yaml_bool,
    _TAG + "int": _CONSTRUCTOR.construct_yaml_int,
    _TAG + "float": _CONSTRUCTOR.construct_yaml_float,
    _TAG + "timestamp": _CONSTRUCTOR.construct_yaml_timestamp,
}

Path_ = tuple[str | int, ...]
"""A key path in the document: ``("states", "plan", "on", "ready")``."""

_DERIVED = {"path", "source_hash", "key_lines"}
_MACHINE_FIELDS = tuple(f for f in MachineSpec.model_fields if f not in _DERIVED)
_STATE_FIELDS = ("action", "with", "on", "final", "description")
_SECTION_MODELS: dict[str, type[BaseModel]] = {"limits": Limits, "context": ContextSpec,
                                               "model_options": ModelOptions,
                                               "sandbox": SandboxSpec}


@dataclass(frozen=True)
class Document:
    """A parsed YAML file: plain values, and where each key and list item starts."""

    value: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    """The line of every mapping key, by key path."""
    items: dict[Path_, int] = field(default_factory=dict)
    """The line where every list item starts, by path."""
    problems: list[SpecProblem] = field(default_factory=list)
    """What the pass refused but could step over (duplicate keys, tags), for one report."""

    def line(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest parent that has one."""
        while path:
            found = self.lines.get(path) or self.items.get(path)
            if found:
                return found
            path = path[:-1]
        return None


def read_document(path: Path | str, *, kind: str = "", max_nodes: int | None = None,
                  max_bytes: int = MAX_FILE_BYTES) -> Document:
    """Read, size-check, decode and parse one YAML file; raise ``SpecError`` on a fatal problem.

    ``kind`` names the file in messages (``"machine files"``); stepped-over problems are left
    in ``Document.problems`` for the caller to report.
    """
    shown = str(path)
    data = read_limited(Path(path), shown, max_bytes)
    return parse_document(decode(data, shown), shown, kind=kind, max_nodes=max_nodes)


def read_limited(path: Path, shown: str, max_bytes: int = MAX_FILE_BYTES,
                 what: str = "file") -> bytes:
    """The bytes of ``path``, refused with one line when over ``max_bytes`` (checked first)."""
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise _fail(shown, None, "no such file") from None
    except IsADirectoryError:
        raise _fail(shown, None, f"is a directory, not a {what}") from None
    except OSError as exc:
        raise _fail(shown, None, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        raise _fail(shown, None, f"file too large (over {_megabytes(max_bytes)}; the limit "
                                 "keeps a runaway file from costing minutes and memory)")
    return data


def decode(data: bytes, shown: str) -> str:
    """UTF-8 text (a BOM allowed); a bad byte is named with its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start]
        raise _fail(shown, line, f"not UTF-8 text (byte 0x{bad:02x})") from None


def parse_document(text: str, shown: str, *, kind: str = "",
                   max_nodes: int | None = None) -> Document:
    """Build plain values from ``text`` in one pass over the parser's events."""
    loader = _Loader(text)
    builder = _EventBuilder(shown, kind, max_nodes, loader)
    try:
        return builder.build()
    except yaml.MarkedYAMLError as exc:
        message = _yaml_message(exc)
        if _char_at(text, exc.problem_mark) == "\t":
            message += "; indent with spaces, not tabs"
        raise _fail(shown, _line(exc.problem_mark), message) from None
    except yaml.YAMLError as exc:
        raise _fail(shown, None, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def dump_yaml(data: Any) -> str:
    """YAML text for ``data`` (block style, keys in insertion order)."""
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return text


def parse_machine(path: Path | str) -> MachineSpec:
    """Read one machine file into a spec; raise ``SpecError`` listing every structural problem.

    Only structure and types are checked here; ``check_machine`` checks meaning.
    """
    shown = str(path)
    data = read_limited(Path(path), shown, what="machine file")
    doc = parse_document(decode(data, shown), shown, kind="machine files", max_nodes=MAX_NODES)
    if doc.problems:
        raise SpecError(doc.problems)
    if doc.value is None:
        raise _fail(shown, None, "the file is empty (a machine needs name, initial and states)")
    spec = _build(doc.value, doc.lines, shown, hashlib.sha256(data).hexdigest())
    logger.debug("parsed %s: %d states", shown, len(spec.states))
    return spec


def build_machine(definition: Mapping[str, Any], shown: str) -> MachineSpec:
    """A spec from a definition given as Python values, checked exactly as a file's body is
    (the same fields, messages and types; lists may be lists). ``shown`` names it in errors."""
    raw = json.loads(json.dumps(definition))  # a private, plain copy: dicts, lists, scalars
    digest = hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()
    return _build(raw, {}, shown, digest)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "bool_type": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "missing": "field required",
}


def pydantic_message(error: Any) -> str:
    """A short, YAML-minded message for one pydantic error (with the bad value if scalar)."""
    kind = error["type"]
    message = _EXPECTED.get(kind) or _lower(error["msg"].removeprefix("Value error, "))
    value = error.get("input")
    if kind != "missing" and isinstance(value, str | int | float | bool | None):
        message += f" (got {value!r})"
    return message


def _fail(file: str, line: int | None, message: str) -> SpecError:
    return SpecError(SpecProblem(file, line, message))


def _megabytes(n: int) -> str:
    return f"{n / 1_000_000:g} MB"


def _char_at(text: str, mark: Any) -> str:
    if mark is None:
        return ""
    lines = text.splitlines()
    row = lines[mark.line] if mark.line < len(lines) else ""
    return row[mark.column : mark.column + 1]


def _line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    problem, context = exc.problem or "", exc.context
    if context and problem.startswith("but "):
        return f"invalid YAML: {context}, {problem}"
    message = f"invalid YAML: {problem}"
    if context and exc.context_mark is not None:
        message += f" ({context} at line {exc.context_mark.line + 1})"
    return message


_SKIP = object()
_MERGE_KEY = object()
"""A plain ``<<`` (yaml's merge key): refused as a key, the text ``<<`` as a value."""
"""A value whose key was refused (duplicate, merge, not a name): built, then dropped."""


class _Open:
    """A mapping or list being built: its value, path, first line, and the key awaiting a value."""

    __slots__ = ("key", "line", "path", "value")

    def __init__(self, value: dict[str, Any] | list[Any], path: Path_, line: int) -> None:
        self.value = value
        self.path = path
        self.line = line
        self.key: Any = None


class _EventBuilder:
    """Parser events -> plain values, a line table and the problems stepped over."""

    def __init__(self, file: str, kind: str, max_nodes: int | None, loader: Any) -> None:
        self.file = file
        self.where = f" in {kind}" if kind else ""
        self.max_nodes = max_nodes
        self.loader = loader
        self.doc = Document(None)
        self.stack: list[_Open] = []
        self.count = 0

    def build(self) -> Document:
        loader = self.loader
        loader.get_event()  # StreamStart
        if loader.check_event(yaml.StreamEndEvent):
            return self.doc
        loader.get_event()  # DocumentStart
        root = self.node(loader.get_event())
        while self.stack:
            root = self.node(loader.get_event())
        loader.get_event()  # DocumentEnd
        if not loader.check_event(yaml.StreamEndEvent):
            event = loader.get_event()
            raise yaml.composer.ComposerError(
                "expected a single document in the stream", None,
                "but found another document", event.start_mark)
        root = "<<" if root is _MERGE_KEY else root
        return Document(root, self.doc.lines, self.doc.items, self.doc.problems)

    def node(self, event: Any) -> Any:
        """Handle one event; return the root's value once it is complete."""
        if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            done = self.stack.pop()
            return self.attach(done.value, done.line, None)
        line = event.start_mark.line + 1
        parent = self.stack[-1] if self.stack else None
        if isinstance(event, yaml.AliasEvent):
            if parent is not None and parent.key is _SKIP:  # the refused key is reported
                return self.attach(None, line, None)
            raise _fail(self.file, line, f"YAML alias '*{event.anchor}' is not allowed"
                                         f"{self.where}; write the value out")
        if parent is None or isinstance(parent.value, list) or parent.key is not None:
            self.count_value(line)
        if isinstance(event, yaml.ScalarEvent):
            value = self.scalar(event, line)
            return self.attach(value, line, _MERGE if value is _MERGE_KEY else event.value)
        if len(self.stack) >= MAX_DEPTH:
            raise _fail(self.file, line, f"document nested too deeply (more than {MAX_DEPTH} "
                                         "levels)")
        is_map = isinstance(event, yaml.MappingStartEvent)
        self.check_tag(event, _MAP if is_map else _SEQ, line)
        self.stack.append(_Open({} if is_map else [], self.child_path(parent), line))
        return None

    def count_value(self, line: int) -> None:
        self.count += 1
        if self.max_nodes is not None and self.count > self.max_nodes:
            raise _fail(self.file, line, f"document too large (more than {self.max_nodes} YAML "
                                         "nodes)")

    @staticmethod
    def child_path(parent: _Open | None) -> Path_:
        if parent is None:
            return ()
        if isinstance(parent.value, list):
            return (*parent.path, len(parent.value))
        return (*parent.path, parent.key) if isinstance(parent.key, str) else parent.path

    def attach(self, value: Any, line: int, name: str | None) -> Any:
        """Put a finished value into its parent, as a key or a value; return the root."""
        if not self.stack:
            return value
        parent = self.stack[-1]
        if isinstance(parent.value, list):
            self.doc.items[(*parent.path, len(parent.value))] = line
            parent.value.append("<<" if value is _MERGE_KEY else value)
        elif parent.key is None:
            parent.key = self.key(parent, value, line, name)
        else:
            if parent.key is not _SKIP:
                parent.value[parent.key] = "<<" if value is _MERGE_KEY else value
            parent.key = None
        return None

    def key(self, parent: _Open, value: Any, line: int, name: str | None) -> Any:
        """The key for the next value, or ``_SKIP`` (reported) when it cannot be one."""
        if name == _MERGE:
            self.problem(line, f"merge keys ('<<') are not allowed{self.where}; "
                               "write the fields out")
            return _SKIP
        if name is None:
            self.problem(line, "keys must be plain names, not lists or mappings")
            return _SKIP
        path = (*parent.path, name)
        if name in parent.value:
            self.problem(line, f"duplicate key '{name}' (first at line {self.doc.lines[path]})")
            return _SKIP
        self.doc.lines[path] = line
        return name

    def scalar(self, event: Any, line: int) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
        if tag == _TAG + "str":
            return event.value
        if tag == _MERGE:
            return _MERGE_KEY
        make = _SCALARS.get(tag)
        if make is None:
            self.problem(line, f"unsupported YAML tag '{_short_tag(tag)}'")
            return None
        try:
            return make(ScalarNode(tag, event.value, event.start_mark, event.end_mark))
        except (ValueError, yaml.YAMLError) as exc:
            self.problem(line, f"bad {tag.removeprefix(_TAG)} value {event.value!r}: {exc}")
            return None

    def check_tag(self, event: Any, default: str, line: int) -> None:
        if event.tag not in (None, "!", default):
            self.problem(line, f"unsupported YAML tag '{_short_tag(event.tag)}'")

    def problem(self, line: int, message: str) -> None:
        self.doc.problems.append(SpecProblem(self.file, line, message))


class _Builder:
    """Checks field names against the spec models, then builds the spec in one validation."""

    def __init__(self, file: str, lines: dict[Path_, int]) -> None:
        self.file = file
        self.lines = lines
        self.problems: list[SpecProblem] = []
        self.state_lines: dict[str, dict[str, int]] = {}
        for p, ln in lines.items():
            if len(p) > 2 and p[0] == "states":
                self.state_lines.setdefault(str(p[1]), {})[_dotted(p[2:])] = ln

    def line(self, path: Path_) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def add(self, path: Path_, message: str) -> None:
        self.problems.append(SpecProblem(self.file, self.line(path), message))

    def known(self, data: dict[str, Any], valid: Iterable[str], path: Path_,
              where: str) -> dict[str, Any]:
        """``data`` without its unknown keys, each reported with the valid ones."""
        valid = tuple(valid)
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in valid:
                out[key] = value
                continue
            hint = did_you_mean(key, valid)
            self.add((*path, key), f"{where}unknown field '{key}'{hint}; "
                                   f"valid fields: {', '.join(valid)}")
        return out

    def machine(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            message = "expected a mapping at the top level (name, initial, states, ...)"
            raise SpecError(SpecProblem(self.file, 1, message))
        data = self.known(raw, _MACHINE_FIELDS, (), "")
        for section, model in _SECTION_MODELS.items():
            if isinstance(data.get(section), dict):
                data[section] = self.known(data[section], model.model_fields, (section,),
                                           f"{section}: ")
        if isinstance(data.get("mcp_servers"), dict):
            data["mcp_servers"] = self.servers(data["mcp_servers"])
        for listed in ("tools", "children"):
            if isinstance(data.get(listed), list):
                data[listed] = tuple(data[listed])
        if isinstance(data.get("sandbox"), dict):
            data["sandbox"] = _tuples(data["sandbox"])
        if "states" in data:
            data["states"] = self.states(data["states"])
        return data

    def servers(self, servers: dict[str, Any]) -> dict[str, Any]:
        fields = McpServerSpec.model_fields
        out = {name: self.known(s, fields, ("mcp_servers", name), f"mcp_servers.{name}: ")
               if isinstance(s, dict) else s for name, s in servers.items()}
        for name, s in out.items():
            if isinstance(s, dict) and isinstance(s.get("sandbox"), dict):
                where = f"mcp_servers.{name}.sandbox: "
                s["sandbox"] = _tuples(self.known(s["sandbox"], SandboxSpec.model_fields,
                                                  ("mcp_servers", name, "sandbox"), where))
            elif isinstance(s, dict) and s.get("sandbox") is True:
                s["sandbox"] = {}
        return out

    def states(self, states: Any) -> Any:
        if not isinstance(states, dict) or not states:
            self.add(("states",), "states: expected a mapping of state name -> "
                                  "{action: NAME, on: {TRIGGER: STATE}} or {final: true}")
            return {}
        return {name: self.state(name, body) for name, body in states.items()}

    def state(self, name: str, body: Any) -> Any:
        path: Path_ = ("states", name)
        if not isinstance(body, dict):
            self.add(path, f"state '{name}': expected a mapping such as "
                           "{action: NAME, on: {TRIGGER: STATE}} or {final: true}")
            return {"name": name}
        body = self.known(body, _STATE_FIELDS, path, f"state '{name}': ")
        out = {key: body[key] for key in ("action", "final", "description") if key in body}
        out["params"] = {} if body.get("with") is None else body["with"]
        out["on"] = {} if body.get("on") is None else body["on"]
        out["name"] = name
        out["line"] = self.lines.get(path, 0)
        out["key_lines"] = self.state_lines.get(name, {})
        if isinstance(out["on"], dict):
            out["on_lines"] = {t: self.lines.get((*path, "on", t), 0) for t in out["on"]}
        return out

    def validate(self, data: dict[str, Any]) -> MachineSpec | None:
        try:
            return MachineSpec.model_validate(data, strict=True)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                self.pydantic_problem(error)
            return None

    def pydantic_problem(self, error: Any) -> None:
        loc = tuple(error["loc"])
        if loc[:1] == ("states",) and loc[2:3] == ("params",):
            loc = (*loc[:2], "with", *loc[3:])
        where = _where(loc[:-1] if error["type"] == "missing" else loc)
        if error["type"] == "missing":
            message = f"{where}missing required field '{loc[-1]}'"
        else:
            message = where + pydantic_message(error)
        self.add(loc, message)


def _build(raw: Any, lines: dict[Path_, int], file: str, digest: str) -> MachineSpec:
    builder = _Builder(file, lines)
    data = builder.machine(raw)
    data.update(path=file, source_hash=digest,
                key_lines={str(p[0]): ln for p, ln in lines.items() if len(p) == 1})
    spec = builder.validate(data)
    if builder.problems or spec is None:
        raise SpecError(sorted(builder.problems, key=lambda p: p.line or 0))
    return spec


def _tuples(section: dict[str, Any]) -> dict[str, Any]:
    """Lists in a section become tuples (the frozen spec's type; strict validation), and
    YAML 1.1's ``mode: off`` (read as false) becomes ``"off"``."""
    out = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
    if out.get("mode") is False:
        out["mode"] = "off"
    return out


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path)


def _where(loc: Path_) -> str:
    """``state 'plan': with.tool: `` or ``limits.max_steps: `` for an error location."""
    if loc[:1] == ("states",) and len(loc) >= 2:
        rest = _dotted(loc[2:])
        return f"state '{loc[1]}': " + (f"{rest}: " if rest else "")
    return f"{_dotted(loc)}: " if loc else ""


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]
