"""VS Code's ``envFile``: a server's environment read from a dotenv file.

``KEY=VALUE`` lines (``export`` allowed before the name, ``#`` comments, blank lines, a value
in single or double quotes taken as written); the entry's own ``env`` wins over the file. A
relative path is relative to the project (the folder above ``.vscode/``), as VS Code reads it.
A missing file or a line that is no assignment is one error naming the server and the line.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.vocabulary.errors import UsageError

_LINE = re.compile(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)\Z")


def read_env_file(value: object, where: str, folder: Path | None) -> dict[str, str]:
    """The variables of the dotenv file ``value`` names (``where`` is the entry's key)."""
    if not isinstance(value, str) or not value:
        raise UsageError(f"{where}: expected the path of a dotenv file")
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (folder or Path.cwd()) / path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = "no such file" if isinstance(exc, FileNotFoundError) else str(exc)
        raise UsageError(f"{where}: cannot read {path}: {reason}") from None
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise UsageError(f"{path}:{number}: expected NAME=VALUE ({where})")
        out[m.group(1)] = _unquote(m.group(2).strip())
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value.split(" #", 1)[0].rstrip()
