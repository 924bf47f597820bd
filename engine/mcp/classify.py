"""Local risk classification of an MCP tool: what Turnstile believes, not what the server claims.

The inputs are the tool's name, its input schema (field names and formats), the server's trust
level, and the annotations the server sent. Rules, in order:

1. **Name words** (``delete_file`` -> ``delete``, ``file``): the most dangerous class any word
   names wins; ``read`` words count only when nothing else matched.
2. **Schema fields** can only raise: ``command``/``cmd``/``script``/``code`` -> ``exec``;
   ``url``/``uri``/``href``/``endpoint`` or ``format: uri`` -> ``network``; ``sql`` ->
   ``write``; ``path``/``file``/``directory``... mark the tool path-bearing.
3. A name that says nothing known is ``write`` (fail closed).
4. **Annotations** from ``trusted`` servers are believed and may lower or raise (MCP's
   defaults apply to hints left out: not read-only, destructive, open world). From ``internal``
   and ``untrusted`` servers only explicit hints that *raise* count: ``destructiveHint: true``
   -> ``destructive``, ``openWorldHint: true`` -> at least ``network``, ``readOnlyHint: false``
   -> at least ``write``. ``readOnlyHint: true`` is ignored.
5. ``untrusted`` servers never get ``read`` (it becomes ``write``; ``exec`` and above stay) and
   are assumed open world: even a tool that looks like ``read_file`` is asked about.
   ``internal`` servers get rules 1-4 only.
6. ``idempotent`` only when a trusted server says so (``idempotentHint``, or read-only);
   a policy may declare it (``with_policy``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from engine.tooling.spec import Risk, max_risk

NAME_WORDS: dict[Risk, frozenset[str]] = {
    "destructive": frozenset({"delete", "remove", "drop", "destroy", "kill", "truncate", "wipe",
                              "reset", "purge", "erase", "rm", "rmdir", "unlink"}),
    "install": frozenset({"install", "uninstall", "upgrade"}),
    "network": frozenset({"fetch", "http", "https", "url", "request", "download", "browse",
                          "web", "curl", "wget", "scrape", "crawl", "webhook"}),
    "write": frozenset({"write", "create", "update", "edit", "move", "rename", "set", "put",
                        "post", "push", "commit", "apply", "insert", "add", "append", "save",
                        "upload", "modify", "patch", "replace", "mkdir", "copy", "merge",
                        "rebase", "checkout", "toggle", "send", "enable", "disable", "change"}),
    "exec": frozenset({"exec", "run", "shell", "command", "cmd", "eval", "execute", "spawn",
                       "bash", "script"}),
    "read": frozenset({"read", "get", "list", "search", "find", "show", "view", "describe",
                       "stat", "status", "log", "diff", "cat", "head", "tail", "grep", "info",
                       "tree", "count", "inspect", "lookup", "query"}),
}
"""Risk class -> name words; ``read`` applies only when no other class matched."""

PATH_FIELDS = frozenset({"path", "paths", "file", "files", "filename", "filepath", "directory",
                         "directories", "dir", "folder", "cwd", "root", "source", "destination"})
EXEC_FIELDS = frozenset({"command", "cmd", "script", "code", "shell", "program", "argv"})
NETWORK_FIELDS = frozenset({"url", "urls", "uri", "href", "endpoint", "host", "hostname"})
SQL_FIELDS = frozenset({"sql", "statement"})
URI_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference", "hostname"})

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@dataclass(frozen=True, slots=True)
class Classification:
    """What Turnstile decided about one tool, with the reasons in the order they applied."""

    risk: Risk
    idempotent: bool
    side_effects: bool
    open_world: bool
    path_bearing: bool
    reasons: tuple[str, ...]


def words(name: str) -> list[str]:
    """Lower-case words of an identifier: ``getFileInfo`` / ``get-file_info`` -> get, file, info."""
    return [w.lower() for w in _WORD.findall(name)]


def normalise_annotations(annotations: Mapping[str, Any] | None) -> dict[str, bool]:
    """Hints as ``{"readOnlyHint": bool, ...}``, accepting wire (camelCase) or snake_case keys."""
    out: dict[str, bool] = {}
    for key, value in (annotations or {}).items():
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        if camel.endswith("Hint") and isinstance(value, bool):
            out[camel] = value
    return out


def name_risk(tool_name: str) -> tuple[Risk | None, list[str]]:
    """The class the tool's name words point to (``None`` when no word is known)."""
    ws = words(tool_name)
    bigrams = {f"{a}_{b}" for a, b in pairwise(ws)}
    found: list[tuple[Risk, str]] = [
        (risk, w) for risk, vocab in NAME_WORDS.items() if risk != "read" for w in ws if w in vocab
    ]
    if bigrams & {"search_web", "web_search"}:
        found.append(("network", "search_web"))
    if found:
        risk = max_risk(*(r for r, _ in found))
        hits = sorted({w for r, w in found if r == risk})
        return risk, [f"name word {', '.join(hits)!s} -> {risk}"]
    reads = sorted({w for w in ws if w in NAME_WORDS["read"]})
    if reads:
        return "read", [f"name word {', '.join(reads)} -> read"]
    return None, []


def _fields(schema: Any, depth: int = 0) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every (field name, field schema) in ``schema``, nested objects and arrays included."""
    if not isinstance(schema, Mapping) or depth > 4:
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                yield str(name), sub
                yield from _fields(sub, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _fields(items, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            yield from _fields(sub, depth + 1)


def schema_risk(input_schema: Mapping[str, Any] | None) -> tuple[Risk, bool, list[str]]:
    """(lowest class the fields imply, whether any field is a path, reasons)."""
    risk: Risk = "read"
    path_bearing = False
    reasons: list[str] = []
    for name, sub in _fields(input_schema):
        ws = set(words(name)) | {name.lower()}
        fmt = sub.get("format")
        if ws & EXEC_FIELDS:
            risk = max_risk(risk, "exec")
            reasons.append(f"field {name!r} -> exec")
        if ws & NETWORK_FIELDS or (isinstance(fmt, str) and fmt in URI_FORMATS):
            risk = max_risk(risk, "network")
            reasons.append(f"field {name!r} -> network")
        if ws & SQL_FIELDS:
            risk = max_risk(risk, "write")
            reasons.append(f"field {name!r} (SQL) -> write")
        if ws & PATH_FIELDS and not path_bearing:
            path_bearing = True
            reasons.append(f"field {name!r} takes a path")
    return risk, path_bearing, reasons


def annotation_risk(hints: Mapping[str, bool]) -> Risk:
    """What the hints claim, with MCP's defaults for hints left out."""
    if hints.get("readOnlyHint", False):
        risk: Risk = "read"
    else:
        risk = "destructive" if hints.get("destructiveHint", True) else "write"
    return max_risk(risk, "network") if hints.get("openWorldHint", True) else risk


def _raise_only(risk: Risk, hints: Mapping[str, bool], trust: str) -> tuple[Risk, list[str]]:
    """Apply the hints that raise; note the ones ignored because the server is not trusted."""
    reasons: list[str] = []
    if hints.get("destructiveHint") is True:
        risk = max_risk(risk, "destructive")
        reasons.append("annotation destructiveHint -> destructive")
    if hints.get("openWorldHint") is True:
        risk = max_risk(risk, "network")
        reasons.append("annotation openWorldHint -> at least network")
    if hints.get("readOnlyHint") is False:
        risk = max_risk(risk, "write")
        reasons.append("annotation readOnlyHint=false -> at least write")
    if hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False:
        reasons.append(f"lowering annotations ignored: server is {trust}")
    return risk, reasons


def classify_tool(
    tool_name: str,
    input_schema: Mapping[str, Any] | None,
    annotations: Mapping[str, Any] | None,
    trust: str,
) -> Classification:
    """Classify one MCP tool by local rules; see the module docstring for the order."""
    hints = normalise_annotations(annotations)
    by_name, reasons = name_risk(tool_name)
    by_schema, path_bearing, schema_reasons = schema_risk(input_schema)
    reasons += schema_reasons
    if by_name is None:
        by_name = "write"
        reasons.append("name says nothing known -> write")
    risk = max_risk(by_name, by_schema)
    idempotent = False
    if trust == "trusted" and hints:
        risk = annotation_risk(hints)
        reasons.append(f"trusted server's annotations -> {risk}")
        idempotent = bool(hints.get("idempotentHint") or hints.get("readOnlyHint"))
        open_world = hints.get("openWorldHint", True)
    else:
        risk, hint_reasons = _raise_only(risk, hints, trust)
        reasons += hint_reasons
        open_world = risk == "network" or hints.get("openWorldHint") is True
    if trust == "untrusted":
        open_world = True
        if risk == "read":
            risk = "write"
            reasons.append("untrusted server: read is not believed -> write")
    return Classification(risk, idempotent, risk != "read", open_world, path_bearing,
                          tuple(reasons))


def with_policy(
    c: Classification, *, risk: Risk | None = None, idempotent: bool | None = None
) -> Classification:
    """A classification overridden by the local policy file (which is trusted, unlike servers)."""
    reasons = list(c.reasons)
    if risk is not None:
        reasons.append(f"policy -> {risk}")
    if idempotent is not None:
        reasons.append(f"policy -> idempotent={idempotent}")
    new_risk = risk or c.risk
    return replace(c, risk=new_risk, side_effects=new_risk != "read",
                   idempotent=c.idempotent if idempotent is None else idempotent,
                   reasons=tuple(reasons))
