"""A run read as an async iterator of its events, driven at the reader's pace.

The run waits for its reader: before each step's action starts, before each step commits and
before an approver is asked, it goes on only once the reader has taken every event so far and
asked for the next. So a reader that leaves the ``async with`` block has seen everything the
run did: the run is interrupted there (status ``interrupted``, resumable), before its next
step commits, and no approver is asked a question the reader never saw.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from engine.runs.events import RunEvent

if TYPE_CHECKING:
    from engine.core.runner import RunResult
    from engine.runs.prepared import PreparedRun


class Driving(Protocol):
    """What a stream needs of ``Runs``: storing the run, driving it, and where it stopped."""

    async def ready(self, prepared: PreparedRun) -> None: ...

    async def drive(self, prepared: PreparedRun) -> RunResult: ...

    def where_it_stopped(self, prepared: PreparedRun) -> RunResult: ...


class Lockstep:
    """Events handed from the run to one reader, with the run held until the reader asks."""

    def __init__(self) -> None:
        self._buffer: deque[RunEvent] = deque()
        self._reader_waiting = False
        self._closed = False
        self._for_reader = anyio.Event()
        self._for_run = anyio.Event()

    def push(self, event: RunEvent) -> None:
        """The run's side: an event happened (called from the run's observer)."""
        self._buffer.append(event)
        self._for_reader.set()

    def close(self) -> None:
        """No more events: the reader's iteration ends once it has taken the last one."""
        self._closed = True
        self._for_reader.set()

    async def pace(self) -> None:
        """The run's side: wait until the reader has taken every event and wants more."""
        while self._buffer or not self._reader_waiting:
            self._for_run = anyio.Event()
            await self._for_run.wait()

    async def next(self) -> RunEvent:
        """The reader's side: the next event, or ``StopAsyncIteration`` after the last."""
        while not self._buffer:
            if self._closed:
                raise StopAsyncIteration
            self._for_reader = anyio.Event()
            self._reader_waiting = True
            self._for_run.set()
            try:
                await self._for_reader.wait()
            finally:
                self._reader_waiting = False
        return self._buffer.popleft()


class RunStream:
    """``async with runs.stream(...) as events: async for event in events: ...``

    Entering starts the run (its id is ``run_id`` from then on; the machine, model and store
    are checked there, so a run that cannot start raises at once). ``result`` is the
    ``RunResult`` once the events are exhausted, and also after the block was left early:
    then it says where the run was interrupted.
    """

    def __init__(self, runs: Driving, prepare: Callable[[Lockstep], PreparedRun]) -> None:
        self._runs = runs
        self._prepare = prepare
        self._lockstep = Lockstep()
        self.prepared: PreparedRun | None = None
        self.result: RunResult | None = None
        self._error: Exception | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    @property
    def run_id(self) -> str:
        """The run's id (known once the block is entered)."""
        assert self.prepared is not None, "use: async with stream(...) as events"
        return self.prepared.run_id

    async def __aenter__(self) -> RunStream:
        self.prepared = self._prepare(self._lockstep)
        try:
            await self._runs.ready(self.prepared)
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
        except BaseException:
            self.prepared.close()
            raise
        self._tg.start_soon(self._drive)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        assert self._tg is not None and self.prepared is not None
        self._tg.cancel_scope.cancel()
        try:
            swallowed = await self._tg.__aexit__(kind, exc, tb)
            if self.result is None and self._error is None:
                self.result = self._runs.where_it_stopped(self.prepared)
        finally:
            self.prepared.close()
        if self._error is not None and exc is None:
            raise self._error  # the run's own error, not wrapped in an exception group
        return swallowed

    async def _drive(self) -> None:
        assert self.prepared is not None
        try:
            self.result = await self._runs.drive(self.prepared)
        except Exception as exc:  # raised from __aexit__, once the events are read
            self._error = exc
        finally:
            self._lockstep.close()

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        assert self.prepared is not None, "use: async with stream(...) as events"
        return self

    async def __anext__(self) -> RunEvent:
        return await self._lockstep.next()


def sink(lockstep: Lockstep, also: Callable[[RunEvent], Any] | None) -> Callable[[RunEvent],
                                                                                  None]:
    """The event handler of a streamed run: to the reader, and to ``on_event`` if given."""
    if also is None:
        return lockstep.push

    def both(event: RunEvent) -> None:
        lockstep.push(event)
        also(event)

    return both
