"""The ``sandbox:`` section outside machine files (policy file, MCP config) and how sections merge.

Machine files are checked by ``engine.spec.load`` (file:line errors); a policy file's or an MCP
server's ``sandbox:`` comes here as plain data and is checked against the same ``SandboxSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from engine.spec.model import SandboxSpec
from engine.vocabulary.errors import UsageError

FIELDS: tuple[str, ...] = tuple(SandboxSpec.model_fields)


def sandbox_from_data(value: Any, where: str) -> SandboxSpec:
    """A ``SandboxSpec`` from parsed YAML/JSON (``true`` means the defaults); problems are one
    ``UsageError`` naming ``where`` and the key."""
    if value is True:
        return SandboxSpec()
    if value is False:
        return SandboxSpec(mode="off")
    if not isinstance(value, Mapping):
        raise UsageError(f"{where}: expected a mapping with keys {', '.join(FIELDS)}")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(FIELDS)}")
    data = yaml_friendly(value)
    try:
        return SandboxSpec.model_validate(data, strict=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in error["loc"])
        raise UsageError(f"{where}.{key}: {error['msg']} (got {error.get('input')!r})") from exc


def yaml_friendly(section: Mapping[str, Any]) -> dict[str, Any]:
    """Lists as tuples (the frozen spec's type) and YAML 1.1's ``off`` (read as false) as
    ``"off"``, so ``mode: off`` means what it says."""
    data = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
    if data.get("mode") is False:
        data["mode"] = "off"
    return data


def merge(base: SandboxSpec | None, over: SandboxSpec | None) -> SandboxSpec:
    """``over``'s explicitly set keys on top of ``base`` (the policy file over the machine)."""
    if over is None:
        return base or SandboxSpec()
    if base is None:
        return over
    return base.model_copy(update={k: getattr(over, k) for k in over.model_fields_set})
