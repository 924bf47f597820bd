"""Variables in MCP server entries: Claude Code's ``${VAR}`` / ``${VAR:-default}`` and VS Code's
``${env:VAR}``, ``${workspaceFolder}`` and ``${userHome}``.

Expanded in ``command``, ``args``, ``env`` values, ``envFile``, ``cwd``, ``url`` and
``headers`` values, from the environment Turnstile runs in. An unset variable without a default
is an error naming the server, the key and the variable (a server started with an empty token
fails later and less clearly). VS Code's ``${input:ID}`` prompts in the editor; here it is
refused with the fix. A bare ``$VAR`` is left as it is: commands and arguments may contain
``$`` for other reasons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.vocabulary.errors import UsageError

EXPANDED = ("command", "args", "env", "envFile", "cwd", "url", "headers")
_REF = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def expand_entry(entry: Mapping[str, Any], where: str, environ: Mapping[str, str],
                 folder: Path | None = None) -> dict[str, Any]:
    """``entry`` with every variable in the keys of ``EXPANDED`` replaced.

    ``folder`` is ``${workspaceFolder}``; non-string values are left for validation to report.
    """
    out = dict(entry)
    for key in EXPANDED:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = expand(value, f"{where}.{key}", environ, folder)
        elif isinstance(value, list):
            out[key] = [expand(v, f"{where}.{key}[{i}]", environ, folder)
                        if isinstance(v, str) else v for i, v in enumerate(value)]
        elif isinstance(value, Mapping):
            out[key] = {k: expand(v, f"{where}.{key}.{k}", environ, folder)
                        if isinstance(v, str) else v for k, v in value.items()}
    return out


def expand(text: str, where: str, environ: Mapping[str, str], folder: Path | None) -> str:
    """One string with its ``${...}`` references replaced."""
    if "${" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        return _value(m.group(1), where, environ, folder)

    return _REF.sub(one, text)


def _value(ref: str, where: str, environ: Mapping[str, str], folder: Path | None) -> str:
    if ref == "workspaceFolder" and folder is not None:
        return str(folder)
    if ref == "userHome":
        return str(Path.home())
    if ref.startswith("input:"):
        raise UsageError(f"{where}: ${{{ref}}} is a VS Code prompt, which Turnstile cannot show; "
                         f"export the value and write ${{env:NAME}} instead")
    name, sep, default = ref.partition(":-")
    name = name.removeprefix("env:")
    if not _NAME.match(name):
        raise UsageError(f"{where}: cannot expand ${{{ref}}}: expected ${{VAR}}, "
                         "${VAR:-default}, ${env:VAR} or ${workspaceFolder}")
    value = environ.get(name)
    if value is not None and (value or not sep):
        return value
    if sep:
        return default
    raise UsageError(f"{where}: environment variable {name} is not set (export it, or write "
                     f"${{{name}:-default}})")
