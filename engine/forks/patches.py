"""Undoing one recorded file change: from the content after it to the content before it.

A change (a ``file_changed`` event: path, base and result hashes, created/deleted, the unified
diff) is undone only when it can be proven: the content after it must hash to the recorded
result, and the content the reversed diff gives must hash to the recorded base. A change
without its diff (binary, or too large to keep) or with a cut one cannot be undone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from turnstile_tools.patch import apply_diff

_HUNK = re.compile(r"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")
_SIDES = {"+": "-", "-": "+"}


class NotUndone(Exception):
    """Why a change cannot be undone exactly (one line for the user)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def reverse_diff(diff: str) -> str:
    """The unified diff that takes the new side of ``diff`` back to its old side."""
    out: list[str] = []
    for line in diff.split("\n"):
        m = _HUNK.match(line)
        if m:
            out.append(f"@@ -{m.group(2)} +{m.group(1)} @@{m.group(3)}")
        elif line.startswith(("--- ", "+++ ")):
            continue
        elif line[:1] in _SIDES:
            out.append(_SIDES[line[0]] + line[1:])
        else:
            out.append(line)
    return "\n".join(out)


def undo(after: bytes | None, change: Mapping[str, Any]) -> bytes | None:
    """The file's content before ``change`` (None: it did not exist), given its content after
    it; ``NotUndone`` when that cannot be rebuilt exactly."""
    deleted = bool(change.get("deleted"))
    if deleted != (after is None) or (after is not None
                                       and sha256(after) != change.get("result_hash")):
        raise NotUndone("its content differs from what the run recorded (changed since)")
    if change.get("created"):
        return None
    patch = change.get("patch")
    if change.get("patch_truncated") or not isinstance(patch, str):
        raise NotUndone("its content was too large (or not text) to keep")
    try:
        text = "" if after is None else after.decode("utf-8")
        before = (apply_diff(text, reverse_diff(patch)).encode("utf-8") if patch
                  else after or b"")
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotUndone(f"the recorded diff does not undo it ({exc})") from exc
    for candidate in (before, before.replace(b"\n", b"\r\n")):
        # the applier takes line endings from the file it edits: undoing a deletion edits an
        # empty one, so CRLF lines come back as LF unless tried as CRLF (the hash decides)
        if sha256(candidate) == change.get("base_hash"):
            return candidate
    raise NotUndone("the recorded diff does not give the recorded earlier content")
