"""``turnstile acp``: the agent served over stdio, for an editor to start.

Nothing but protocol messages reaches stdout: the protocol gets its own copy of the stdout
descriptor and descriptor 1 becomes stderr, so a stray print (or a library's) cannot corrupt
the stream. Input is checked line by line before the SDK reads it: a line that is not JSON
gets a parse error response, one that is not a JSON-RPC message an invalid-request response;
neither ends the agent. The module uses ``asyncio`` itself (an adapter, as the architecture
test lists): the SDK's streams are asyncio's.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from typing import Any, cast

import anyio

from engine.runs.service import Runs
from engine.spec.bundled import machine_path
from engine.vocabulary.errors import UsageError

EXTRA_HINT = ("error: turnstile acp needs the Agent Client Protocol SDK: "
              "pip install turnstile-fsm[acp]")
LINE_LIMIT = 50 * 1024 * 1024
"""The longest message read (a prompt with embedded files can be large)."""


def available() -> bool:
    """Whether the SDK (the ``acp`` extra) is installed."""
    try:
        import acp  # noqa: F401
    except ImportError:
        return False
    return True


def serve(runs: Runs, machine: str) -> int:
    """Serve ACP on stdin/stdout until the editor closes stdin."""
    machine_path(machine)  # an unknown machine is bad input before anything is served
    for fd, name in ((0, "stdin"), (1, "stdout")):
        if not _streamable(fd):
            raise UsageError(f"acp speaks JSON-RPC over pipes: its {name} is not a pipe; an "
                             "editor starts it with pipes (see the README's Editors section)")
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    anyio.run(_serve, runs, machine, protocol_out)
    return 0


def _streamable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop can wait on."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _serve(runs: Runs, machine: str, protocol_out: int) -> None:
    from acp import run_agent
    from acp.interfaces import Agent

    from engine.ide.agent import TurnstileAgent

    raw, checked, writer = await _streams(protocol_out)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_check_lines, raw, checked, writer)
        agent = TurnstileAgent(runs, machine, tg)
        # The SDK's Agent protocol lists every method; it answers "method not found" for the
        # ones an agent leaves out (session/list, fork, resume, close).
        await run_agent(cast(Agent, agent), writer, checked)
        tg.cancel_scope.cancel()


async def _streams(protocol_out: int) -> tuple[asyncio.StreamReader, asyncio.StreamReader,
                                               asyncio.StreamWriter]:
    """Stdin as read, the reader the SDK gets (checked lines only), and the protocol's
    writer."""
    loop = asyncio.get_running_loop()
    raw = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(raw), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(protocol_out, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return raw, asyncio.StreamReader(limit=LINE_LIMIT), writer


async def _check_lines(raw: asyncio.StreamReader, checked: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
    """Pass on the lines that are JSON-RPC messages; answer the others with an error."""
    try:
        while True:
            try:
                line = await raw.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
            except asyncio.LimitOverrunError:
                await raw.readexactly(LINE_LIMIT)  # the rest of the line is refused below
                line = b"\x00"
            if not line:
                break
            error = rejected(line)
            if error is None:
                checked.feed_data(line if line.endswith(b"\n") else line + b"\n")
            else:
                writer.write(json.dumps(error).encode() + b"\n")
    finally:
        checked.feed_eof()


def rejected(line: bytes) -> dict[str, Any] | None:
    """The error response a line gets, or None when it is a JSON-RPC message to handle."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, -32700, f"Parse error: {exc}")
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid Request: a message is a JSON object")
    ident = message.get("id")
    if (ident is not None and not isinstance(ident, (str, int))) or isinstance(ident, bool):
        return _error(None, -32600, "Invalid Request: id must be a string or a number")
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return _error(ident, -32600, "Invalid Request: method must be a string")
    if method is None and "id" not in message:
        return _error(None, -32600, "Invalid Request: neither a method nor an id")
    if method is None and "result" not in message and "error" not in message:
        return _error(ident, -32600, "Invalid Request: a response needs a result or an error")
    params = message.get("params")
    if "id" in message and params is not None and not isinstance(params, dict):
        return _error(ident, -32602, "Invalid params: params must be an object")
    return None


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
