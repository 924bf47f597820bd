"""The rows as both stores write and read them: compact JSON text, a run's row, an approval
request, and the lease rules that decide whether a ``running`` row is really running."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.store.base import ApprovalRequest
from engine.vocabulary.errors import UsageError
from engine.vocabulary.events import EventKind
from engine.vocabulary.state import ForkOrigin, RunInfo, RunStatus

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
"""One encoder for every row (``json.dumps`` with options builds a new one per call)."""


def _row_encoder() -> Callable[[Any, int], Any]:
    """``_ENCODER``'s C encoder, made once: ``JSONEncoder.encode`` makes a new one on every
    call, which costs as much as encoding a step's small rows. The same text; no check for
    circular values (a row holds the engine's own JSON-like values: a cycle still fails)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder's own path
        return lambda value, _: [_ENCODER.encode(value)]
    encoder: Callable[[Any, int], Any] = make(None, str, json.encoder.encode_basestring, None,
                                              ":", ",", False, False, True)
    return encoder


_ENCODE = _row_encoder()
_join = "".join


def _storable(text: str) -> str:
    """``text`` as UTF-8 can hold it: a file name that is not UTF-8 reaches a row as lone
    surrogates (``os.listdir``'s ``surrogateescape``), which no database can store; each
    escaped byte is written ``\\xNN`` (``z\\xff``), any other lone surrogate ``\\uNNNN``."""
    if text.isascii():
        return text
    try:
        text.encode()
        return text
    except UnicodeEncodeError:
        return "".join(_SURROGATE.get(ord(c), c) for c in text)


_SURROGATE = {n: (f"\\\\x{n - 0xDC00:02x}" if n >= 0xDC80 else f"\\\\u{n:04x}")
              for n in range(0xD800, 0xE000)}
"""JSON text standing for each lone surrogate in a string (``\\xNN``: an escaped byte)."""


def dumps(value: Any) -> str:
    """``value`` as the compact JSON text a row holds."""
    return _storable(_join(_ENCODE(value, 0)))


def dumps_map(value: Mapping[str, Any]) -> str:
    """A mapping as JSON (a plain dict is encoded as it is, any other mapping as a dict)."""
    return _storable(_join(_ENCODE(value if type(value) is dict else dict(value), 0)))


_SCAN: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]


def loads(text: str) -> Any:
    """``json.loads`` of a stored value: the text a row holds is compact JSON (``dumps``'),
    read by the decoder's scanner at once; anything else through ``json.loads``."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


KINDS: dict[str, EventKind] = {k.value: k for k in EventKind}
"""``kind_of`` for the kinds this version knows, without an enum call per row."""

RUN_COLUMNS = (
    "run_id", "machine", "machine_path", "machine_hash", "status", "state", "workspace",
    "created_at", "updated_at", "steps", "input_tokens", "output_tokens", "cached_tokens",
    "cost_usd", "cost_known", "config", "error", "lease_host", "lease_pid", "lease_nonce",
    "lease_expires", "parent_run_id", "parent_step", "forked_from", "fork_step")
"""The columns of a run's row that ``run_info`` reads (each store has one or two more of its
own: SQLite's run number ``rid``, Postgres' arrival order ``ord``)."""


def run_info(row: Sequence[Any]) -> RunInfo:
    """A row of ``RUN_COLUMNS``; ``running`` with no live lease reads as ``crashed``."""
    r = dict(zip(RUN_COLUMNS, row, strict=True))
    status: RunStatus = r["status"]
    if status == "running" and not shown_running(r):
        status = "crashed"
    return RunInfo(
        run_id=r["run_id"], machine=r["machine"], machine_path=r["machine_path"] or "",
        machine_hash=r["machine_hash"] or "", status=status, state=r["state"],
        workspace=r["workspace"] or "", created_at=r["created_at"],
        updated_at=r["updated_at"], steps=r["steps"], input_tokens=r["input_tokens"],
        output_tokens=r["output_tokens"],
        cost_usd=r["cost_usd"] if r["cost_known"] else None,
        config=json.loads(r["config"] or "{}"), error=r["error"],
        parent_run_id=r["parent_run_id"], parent_step=r["parent_step"],
        forked_from=(ForkOrigin(r["forked_from"], r["fork_step"])
                     if r["forked_from"] else None))


APPROVAL_COLUMNS = (
    "run_id", "call_id", "step", "tool", "args", "args_hash", "policy_version", "preview",
    "risk", "rule", "reason", "capability", "requested_at", "status", "channel", "decided_by",
    "decided_at", "note", "always")
"""The columns of ``approval_requests`` that ``approval_row`` reads."""


def approval_row(row: Sequence[Any]) -> ApprovalRequest:
    """A row of ``APPROVAL_COLUMNS``; unreadable arguments read as a marker (never as {})."""
    r = dict(zip(APPROVAL_COLUMNS, row, strict=True))
    try:
        args = json.loads(r["args"] or "{}")
    except ValueError:
        args = {"<unreadable>": True}
    return ApprovalRequest(
        run_id=r["run_id"], call_id=r["call_id"], step=r["step"], tool=r["tool"], args=args,
        args_hash=r["args_hash"] or "", policy_version=r["policy_version"] or "",
        preview=r["preview"] or "", risk=r["risk"] or "", rule=r["rule"],
        reason=r["reason"] or "", capability=r["capability"] or "",
        requested_at=r["requested_at"] or 0.0, status=r["status"], channel=r["channel"],
        decided_by=r["decided_by"], decided_at=r["decided_at"], note=r["note"] or "",
        always=r["always"])


WORKERS_PREFIX = "temporal:"
"""The lease host of a run held by its Temporal workflow's workers (``temporal.step``)."""


def lease_alive(r: Mapping[str, Any]) -> bool:
    """A lease holds while unexpired; on this host, only while its process exists. A lease of
    a workflow's workers on this host holds by its expiry while the worker that last took a
    step lives: once that process is gone, a local ``resume`` takes over at once."""
    if not r.get("lease_nonce"):
        return False
    host = r.get("lease_host")
    if host == socket.gethostname():
        return _pid_alive(r.get("lease_pid"))
    unexpired = (r.get("lease_expires") or 0.0) > time.time()
    if host == WORKERS_PREFIX + socket.gethostname():
        return unexpired and _pid_alive(r.get("lease_pid"))
    return unexpired


def shown_running(r: Mapping[str, Any]) -> bool:
    """Whether ``runs``/``show`` call a ``running`` row running (else ``crashed``). A lease of
    a workflow's workers holds here by its expiry alone: when the worker that took the last
    step dies, another worker takes the next one (a local ``resume`` may still take over at
    once: ``lease_alive`` decides that)."""
    if str(r.get("lease_host") or "").startswith(WORKERS_PREFIX):
        return bool(r.get("lease_nonce")) and (r.get("lease_expires") or 0.0) > time.time()
    return lease_alive(r)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (killed, not yet reaped) holds nothing
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process's write lock before ``StoreLockedError``
(``ENGINE_BUSY_TIMEOUT`` overrides it, in seconds)."""


def busy_timeout(value: float | None = None) -> float:
    """``value``, else ``ENGINE_BUSY_TIMEOUT``, else ``BUSY_TIMEOUT_S``."""
    if value is not None:
        return value
    raw = os.environ.get("ENGINE_BUSY_TIMEOUT")
    if not raw:
        return BUSY_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UsageError(f"ENGINE_BUSY_TIMEOUT={raw!r}: expected a number of seconds")
    return seconds
