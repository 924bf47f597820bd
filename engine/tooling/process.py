"""A supervised subprocess: its own process group, output streamed line by line, memory bounded.

``run_process`` starts ``argv`` in a new session (so the child and everything it spawns share one
process group), reads stdout and stderr concurrently in chunks, hands complete lines to a sink as
they arrive, and keeps only the head and tail of each stream (the rest is counted, not stored).
On timeout or cancellation the whole group gets SIGTERM, then SIGKILL after a grace period; a
cancellation is re-raised after the cleanup, which runs shielded. Background processes still in
the group when the command's shell exits are terminated the same way: nothing is left behind.
Processes that leave the group (``setsid``, double forks) are the sandbox's job: ``run_shell``
spawns its command through ``engine.sandbox.Confinement.command`` (bubblewrap's pid namespace,
killed with the engine), and this module supervises whatever argument vector it is given.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from engine.sandbox.env import is_secret_name, scrub_env

logger = logging.getLogger(__name__)

__all__ = ["LineSink", "OutputBuffer", "ProcessResult", "end_leftover_group", "group_alive",
           "is_secret_name", "run_process", "scrub_env", "start_ticks", "terminate_group"]

GRACE_S = 2.0
"""Time between SIGTERM and SIGKILL."""
POLL_S = 0.02
PR_SET_CHILD_SUBREAPER = 36
_SPAWNED: set[int] = set()
"""The commands this process started and has not reaped yet (never taken for orphans)."""
DRAIN_S = 2.0
"""After the command's shell exits, how long to keep reading pipes that are still open."""
HEAD_BYTES = 20_000
TAIL_BYTES = 20_000
"""Kept per stream: the first and last bytes; what lies between is only counted."""
STREAM_MAX_LINES = 10_000
STREAM_MAX_BYTES = 1_000_000
"""Per stream and call, lines beyond these budgets are not streamed (the result keeps them)."""
MAX_LINE_BYTES = 16_384
"""A line longer than this is streamed in pieces (keeps the pending buffer bounded)."""

LineSink = Callable[[str, str], None]
"""Called with (stream name, line without its newline) for every streamed line."""


class OutputBuffer:
    """The head and tail of a byte stream plus a count of the bytes dropped between them."""

    def __init__(self, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> None:
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        room = self.head_bytes - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self.tail_bytes
            if excess > 0:
                del self._tail[:excess]

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - len(self._head) - len(self._tail)

    def text(self) -> str:
        """Head and tail decoded, joined by a marker stating the omitted byte count."""
        head = self._head.decode("utf-8", "replace")
        tail = self._tail.decode("utf-8", "replace")
        if not self.omitted_bytes:
            return head + tail
        return f"{head}\n[... {self.omitted_bytes} bytes omitted ...]\n{tail}"


class LineStreamer:
    """Splits one stream's chunks into lines for the sink, within a per-call budget."""

    def __init__(self, stream: str, sink: LineSink | None) -> None:
        self.stream = stream
        self.sink = sink
        self._pending = b""
        self._lines = 0
        self._bytes = 0
        self.exhausted = sink is None

    def feed(self, chunk: bytes) -> None:
        if self.exhausted:
            return
        parts = (self._pending + chunk).split(b"\n")
        self._pending = parts.pop()
        for raw in parts:
            self._send(raw)
        while len(self._pending) > MAX_LINE_BYTES and not self.exhausted:
            self._send(self._pending[:MAX_LINE_BYTES])
            self._pending = self._pending[MAX_LINE_BYTES:]

    def close(self) -> None:
        if self._pending and not self.exhausted:
            self._send(self._pending)
        self._pending = b""

    def _send(self, raw: bytes) -> None:
        if self.exhausted or self.sink is None:
            return
        if self._lines >= STREAM_MAX_LINES or self._bytes >= STREAM_MAX_BYTES:
            self.exhausted = True
            self._pending = b""
            self.sink(self.stream, f"[{self.stream}: further output not streamed; "
                      "the result keeps its head and tail]")
            return
        self._lines += 1
        self._bytes += len(raw) + 1
        self.sink(self.stream, raw.decode("utf-8", "replace").rstrip("\r"))


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """How a supervised process ended and what it printed (head + tail per stream)."""

    exit_code: int
    """The return code; negative (``-signal``) when a signal ended it."""
    duration_s: float
    timed_out: bool
    stdout: str
    stderr: str
    omitted_bytes: int
    """Bytes of stdout and stderr dropped between head and tail."""
    total_bytes: int
    pid: int
    leftovers_killed: bool
    """Processes of the group outlived the command's shell and were terminated."""
    pipes_abandoned: bool = False
    """A process outside the group (``setsid``, a daemon) kept the output pipes open after the
    command ended; reading stopped ``DRAIN_S`` later."""


@dataclass
class _Ending:
    """How the end of a command went, filled in while supervising it."""

    leftovers_killed: bool = False
    pipes_abandoned: bool = False


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    on_line: LineSink | None = None,
    on_start: Callable[[int], None] | None = None,
    grace_s: float = GRACE_S,
) -> ProcessResult:
    """Run ``argv`` to completion, timeout or cancellation; never leaves its group running."""
    started = time.monotonic()
    _become_subreaper()
    with anyio.CancelScope(shield=True):
        # Shielded: a cancellation here would kill only the shell (asyncio closes the half-made
        # transport), orphaning whatever it had already started. It arrives at the next await,
        # where the whole group is stopped.
        process = await anyio.open_process(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=cwd, env=dict(env), start_new_session=True,
        )
    _SPAWNED.add(process.pid)
    out, err = OutputBuffer(), OutputBuffer()
    ending = _Ending()
    try:
        if on_start is not None:
            on_start(process.pid)
        with anyio.move_on_after(timeout_s) as deadline:
            await _supervise(process, out, err, on_line, grace_s, ending)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _stop(process, grace_s)
        _SPAWNED.discard(process.pid)
        raise
    with anyio.CancelScope(shield=True):
        if deadline.cancelled_caught:
            await _stop(process, grace_s)
        else:
            await process.aclose()
    _SPAWNED.discard(process.pid)
    return ProcessResult(
        exit_code=process.returncode if process.returncode is not None else -signal.SIGKILL,
        duration_s=time.monotonic() - started,
        timed_out=deadline.cancelled_caught,
        stdout=out.text(),
        stderr=err.text(),
        omitted_bytes=out.omitted_bytes + err.omitted_bytes,
        total_bytes=out.total_bytes + err.total_bytes,
        pid=process.pid,
        leftovers_killed=ending.leftovers_killed,
        pipes_abandoned=ending.pipes_abandoned,
    )


async def _supervise(
    process: Process, out: OutputBuffer, err: OutputBuffer, on_line: LineSink | None,
    grace_s: float, ending: _Ending,
) -> None:
    """Pump both streams until EOF and the shell's exit; end leftovers of the group."""
    assert process.stdout is not None and process.stderr is not None
    drained = (anyio.Event(), anyio.Event())
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, process.stdout, out, LineStreamer("stdout", on_line), drained[0])
        tg.start_soon(_pump, process.stderr, err, LineStreamer("stderr", on_line), drained[1])
        await process.wait()
        if group_alive(process.pid):
            logger.info("process group %d outlived its shell; terminating it", process.pid)
            ending.leftovers_killed = True
            await terminate_group(process.pid, grace_s)
        with anyio.move_on_after(DRAIN_S) as drain:
            for event in drained:
                await event.wait()
        if drain.cancelled_caught:
            logger.info("output pipes of %d held open outside its group", process.pid)
            ending.pipes_abandoned = True
            tg.cancel_scope.cancel()


async def _pump(stream: ByteReceiveStream, buffer: OutputBuffer, lines: LineStreamer,
                drained: anyio.Event) -> None:
    async for chunk in stream:
        buffer.feed(chunk)
        lines.feed(chunk)
    lines.close()
    drained.set()


async def _stop(process: Process, grace_s: float) -> None:
    """Terminate the group, reap the shell and close the pipes (called shielded)."""
    await terminate_group(process.pid, grace_s)
    await process.aclose()


async def terminate_group(pgid: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM to the group and to the groups its members' descendants started (a sandboxed
    command runs in a session of its own), SIGKILL after ``grace_s`` to what is still alive.

    The tree is frozen first (SIGSTOP, group by group, until no new group appears): a command
    still starting (bubblewrap forking its sandboxed child) cannot start a group after the
    list was read, which would outlive the signals."""
    exe, since = _exe(pgid), start_ticks(pgid)
    groups = _frozen_tree(pgid)
    signalled = [g for g in groups if _signal_group(g, signal.SIGTERM)]
    for group in groups:
        _signal_group(group, signal.SIGCONT)
    if not signalled:
        return
    if not await _wait_groups_gone(groups, grace_s):
        logger.warning("process group %d ignored SIGTERM for %.1fs; sending SIGKILL", pgid,
                       grace_s)
        for group in groups:
            _signal_group(group, signal.SIGKILL)
        await _wait_groups_gone(groups, 1.0)
    for orphan in _orphans_of(exe, since):
        logger.info("process %d forked by group %d outlived it; terminating it", orphan, pgid)
        await terminate_group(orphan, grace_s)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(orphan, os.WNOHANG)  # it is this process's child now: reap it


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


@functools.cache
def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux): a process a command
    forked just as its parent was stopped (bubblewrap creating its sandboxed child) then
    shows up as this process's child instead of disappearing under init."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _orphans_of(exe: str | None, since: int | None) -> list[int]:
    """Live children of this process that a stopped command left behind: re-parented here
    (``_become_subreaper``), running the command's own program, started after it, and not
    spawned by this process itself."""
    if exe is None or since is None:
        return []
    me = os.getpid()
    found = []
    for pid, ppid, _group, state in _proc_table():
        if ppid != me or state in ("Z", "X") or pid in _SPAWNED:
            continue
        ticks = start_ticks(pid)
        if ticks is not None and ticks >= since and _exe(pid) == exe:
            found.append(pid)
    return found


def _frozen_tree(pgid: int, rounds: int = 50) -> set[int]:
    """``_groups_below(pgid)``, every group of it stopped, read again until it is stable.

    A stop takes effect when its target next runs, so each round waits until the groups'
    processes show as stopped (a fork in progress has then returned) before reading again."""
    groups: set[int] = set()
    found = _groups_below(pgid)
    for _ in range(rounds):
        for group in found - groups:
            _signal_group(group, signal.SIGSTOP)
        groups |= found
        _wait_stopped(groups)
        found = set().union(*(_groups_below(g) for g in groups))
        if found <= groups:
            break
    return groups


def _wait_stopped(groups: set[int], within_s: float = 1.0) -> None:
    """Until no process of ``groups`` is still running (stopped, dead or a zombie), or
    ``within_s`` passed (a process in uninterruptible sleep stops later)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(group in groups and state not in ("T", "t", "Z", "X")
                   for _pid, _ppid, group, state in _proc_table()):
            return
        time.sleep(0.002)


def _groups_below(pgid: int) -> set[int]:
    """``pgid`` and the process groups of every descendant of its members, read from ``/proc``
    before anything is signalled: once a parent dies its children are re-parented and can no
    longer be told apart (bubblewrap's ``--new-session`` child, a ``setsid`` daemon)."""
    children: dict[int, list[int]] = {}
    group_of: dict[int, int] = {}
    members: list[int] = []
    for pid, ppid, group, _state in _proc_table():
        children.setdefault(ppid, []).append(pid)
        group_of[pid] = group
        if group == pgid:
            members.append(pid)
    groups, seen, frontier = {pgid}, set(members), list(members)
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in seen:
                seen.add(child)
                groups.add(group_of[child])
                frontier.append(child)
    return groups


def _proc_table() -> list[tuple[int, int, int, str]]:
    """``(pid, ppid, pgid, state letter)`` of every process (Linux ``/proc``; empty
    elsewhere)."""
    table: list[tuple[int, int, int, str]] = []
    if not os.path.isdir("/proc"):
        return table
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2:
            table.append((int(name), int(fields[1]), int(fields[2]), fields[0].decode()))
    return table


async def _wait_groups_gone(groups: set[int], within_s: float) -> bool:
    with anyio.move_on_after(within_s):
        while any(group_alive(g) for g in groups):
            await anyio.sleep(POLL_S)
        return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    """True while a process of group ``pgid`` runs (zombies, already dead, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    return any(state != "Z" for state in _group_states(pgid))


def _group_states(pgid: int) -> list[str]:
    """The ``/proc`` state letter of every process in group ``pgid`` (Linux)."""
    return [state for _pid, _ppid, group, state in _proc_table() if group == pgid]


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc``); None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


async def end_leftover_group(pgid: int, ticks: int | None, grace_s: float = GRACE_S) -> bool:
    """Terminate what is left of a command's process group after its engine died.

    The group is the command's own when its leader still runs with the recorded start time, or
    when the leader is gone but members remain (the kernel does not reuse a pid while a group
    of that id exists). True when something was terminated."""
    if not group_alive(pgid):
        return False
    now = start_ticks(pgid)
    if now is not None and ticks is not None and now != ticks:
        return False  # the pid was reused by an unrelated process
    await terminate_group(pgid, grace_s)
    return True
