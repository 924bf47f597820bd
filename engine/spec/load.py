"""Machine YAML -> ``MachineSpec``: structure only, with a file:line for every problem.

The only ``yaml`` importer besides ``engine.config``. The file is composed into yaml's node tree
(which keeps the line of every key), walked once into plain values plus a line table, then
validated by one pydantic build. The walk refuses what yaml silently accepts: duplicate keys,
aliases (so an alias bomb never expands), non-name keys and exotic tags.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.errors import SpecError, SpecProblem
from engine.spec.model import ContextSpec, Limits, MachineSpec, McpServerSpec, SandboxSpec

logger = logging.getLogger(__name__)

MAX_NODES = 10_000
"""Larger documents are refused: no machine needs them, and they cost every CLI start."""
MAX_DEPTH = 64
"""Deeper nesting is refused before the walk could exhaust Python's recursion limit."""

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR = SafeConstructor()
_TAG = "tag:yaml.org,2002:"
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
_SECTION_MODELS: dict[str, type[BaseModel]] = {
    "limits": Limits, "context": ContextSpec, "sandbox": SandboxSpec}


def parse_machine(path: Path | str) -> MachineSpec:
    """Read one machine file into a spec; raise ``SpecError`` listing every structural problem.

    Only structure and types are checked here; ``check_machine`` checks meaning.
    """
    shown = str(path)
    data = _read(Path(path), shown)
    text = _decode(data, shown)
    root = _compose(text, shown)
    raw, lines = _Walker(shown, text).walk(root)
    spec = _build(raw, lines, shown, hashlib.sha256(data).hexdigest())
    logger.debug("parsed %s: %d states", shown, len(spec.states))
    return spec


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


def _read(path: Path, shown: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise _fail(shown, None, "no such file") from None
    except IsADirectoryError:
        raise _fail(shown, None, "is a directory, not a machine file") from None
    except OSError as exc:
        raise _fail(shown, None, f"cannot read: {exc.strerror or exc}") from exc


def _decode(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start]
        raise _fail(shown, line, f"not UTF-8 text (byte 0x{bad:02x})") from None


def _compose(text: str, shown: str) -> Node:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        message = _yaml_message(exc)
        if _char_at(text, exc.problem_mark) == "\t":
            message += "; indent with spaces, not tabs"
        raise _fail(shown, _line(exc.problem_mark), message) from None
    except yaml.YAMLError as exc:
        raise _fail(shown, None, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        raise _fail(shown, None, "the file is empty (a machine needs name, initial and states)")
    return node


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


class _TooLarge(Exception):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        self.message = message


class _AliasFound(Exception):
    pass


class _Walker:
    """Turns a node tree into plain values and a table of the line of every key."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.lines: dict[Path_, int] = {}
        self.problems: list[SpecProblem] = []
        self.count = 0
        self.seen: set[int] = set()

    def walk(self, root: Node) -> tuple[Any, dict[Path_, int]]:
        try:
            value = self.value(root, ())
        except _AliasFound:
            raise SpecError(self._alias_problem()) from None
        except _TooLarge as exc:
            raise _fail(self.file, exc.line, exc.message) from None
        if self.problems:
            raise SpecError(self.problems)
        return value, self.lines

    def value(self, node: Node, path: Path_) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            message = f"document too large (more than {MAX_NODES} YAML nodes)"
            raise _TooLarge(node.start_mark.line + 1, message)
        if len(path) > MAX_DEPTH:
            message = f"document nested too deeply (more than {MAX_DEPTH} levels)"
            raise _TooLarge(node.start_mark.line + 1, message)
        if id(node) in self.seen:
            raise _AliasFound
        self.seen.add(id(node))
        if isinstance(node, MappingNode) and node.tag == _TAG + "map":
            return self.mapping(node, path)
        if isinstance(node, SequenceNode) and node.tag == _TAG + "seq":
            return [self.value(item, (*path, i)) for i, item in enumerate(node.value)]
        if isinstance(node, ScalarNode) and node.tag in _SCALARS:
            return self.scalar(node)
        self.problem(node, f"unsupported YAML tag '{_short_tag(node.tag)}'")
        return None

    def mapping(self, node: MappingNode, path: Path_) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == _TAG + "merge":
                self.problem(key_node, "merge keys ('<<') are not allowed in machine files; "
                                       "write the fields out")
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag not in _SCALARS:
                self.problem(key_node, "keys must be plain names, not lists or mappings")
                continue
            key = key_node.value
            if key in out:
                first = self.lines[(*path, key)]
                self.problem(key_node, f"duplicate key '{key}' (first at line {first})")
                continue
            self.lines[(*path, key)] = line
            out[key] = self.value(value_node, (*path, key))
        return out

    def scalar(self, node: ScalarNode) -> Any:
        try:
            return _SCALARS[node.tag](node)
        except (ValueError, yaml.YAMLError) as exc:
            self.problem(node, f"bad {node.tag.removeprefix(_TAG)} value {node.value!r}: {exc}")
            return None

    def problem(self, node: Node, message: str) -> None:
        self.problems.append(SpecProblem(self.file, node.start_mark.line + 1, message))

    def _alias_problem(self) -> SpecProblem:
        message = "YAML aliases are not allowed in machine files; write the value out"
        # The node tree shares aliased nodes; only the event stream knows where the alias is.
        loader = _Loader(self.text)
        try:
            while (event := loader.get_event()) is not None:
                if isinstance(event, yaml.AliasEvent):
                    message = f"YAML alias '*{event.anchor}' is not allowed in machine files; " \
                              "write the value out"
                    return SpecProblem(self.file, event.start_mark.line + 1, message)
        finally:
            loader.dispose()
        return SpecProblem(self.file, None, message)


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
        if isinstance(data.get("tools"), list):
            data["tools"] = tuple(data["tools"])
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
            out["on_lines"] = {t: self.lines[(*path, "on", t)] for t in out["on"]}
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
