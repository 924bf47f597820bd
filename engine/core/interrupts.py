"""Ctrl-C, SIGTERM and SIGHUP for the command line: the only place the engine touches signals.

A program that embeds the engine owns its process's signals; the library (``engine.api``,
``engine.session.compose.execute``) never installs a handler. The commands of ``python -m engine``
(``run``, ``resume``, and the runs ``eval`` and ``replay`` drive) pass
``drive_until_interrupted`` instead, so a signal cancels the drive and the run ends
``interrupted`` (exit 3), resumable.
"""

from __future__ import annotations

import anyio
import anyio.abc

from engine.core.runner import Runner, RunResult
from engine.vocabulary.errors import InterruptedRun, TurnstileError
from engine.vocabulary.state import RunState


async def drive_until_interrupted(runner: Runner, state: RunState,
                                  resumed: bool = False) -> RunResult:
    """Drive ``state`` and turn SIGINT/SIGTERM/SIGHUP (a closed terminal) into a clean
    ``interrupted`` run (exit 3).

    The first signal cancels the drive; more signals while it shuts down (a command's process
    group being stopped, the step being recorded) are ignored, and SIGINT stays ignored after
    an interruption, so an impatient second Ctrl-C cannot cut the shutdown short.
    """
    result: RunResult | None = None
    drive_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(_watch_signals, drive_scope)
            with drive_scope:
                result = await runner.drive(state, resumed=resumed)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _sole_error(group) from group
    if result is None:
        raise InterruptedRun(f"run {state.run_id} interrupted")
    return result


async def _watch_signals(drive_scope: anyio.CancelScope, *,
                         task_status: anyio.abc.TaskStatus[None]) -> None:
    """Cancel ``drive_scope`` on the first SIGINT, SIGTERM or SIGHUP; swallow the ones after
    it."""
    import signal

    interrupted = False
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM,
                                        signal.SIGHUP) as signals:
            task_status.started()
            async for _ in signals:
                if not interrupted:
                    interrupted = True
                    drive_scope.cancel()
    except KeyboardInterrupt:
        # A Ctrl-C that lands while the receiver is putting the default handlers back (after
        # SIGINT's, before the others') raises here: after an interruption it is one more of
        # the signals to swallow.
        if not interrupted:
            raise
    finally:
        if interrupted:  # the receiver put the default handler back; keep Ctrl-C quiet
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _sole_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one engine error inside a task group's exception group (anyio always wraps)."""
    leaves: list[BaseException] = []

    def walk(g: BaseExceptionGroup[BaseException]) -> None:
        for exc in g.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            else:
                leaves.append(exc)

    walk(group)
    ours = [e for e in leaves if isinstance(e, TurnstileError)]
    return ours[0] if len(ours) == 1 else group
