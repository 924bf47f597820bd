"""Retrying a model stream: exponential backoff with full jitter, ``Retry-After``, and caps.

The transport raises ``TransientError`` for failures worth another attempt (connect errors, read
timeouts, 408/409/429/5xx, a connection lost mid-stream); ``retrying`` turns each into a ``Retry``
event, waits, and starts the stream again, until the attempt or total-wait budget runs out. A
stream that ended early is retried the same way even after text or tool call fragments: nothing
of the answer has taken effect (its calls run only after the step commits), and the consumer
discards the partial answer when the ``Retry`` event comes (``models.base.collect_turn``).
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import anyio

from engine.models.base import Retry, StreamEvent
from engine.vocabulary.errors import ModelError

logger = logging.getLogger(__name__)


class TransientError(Exception):
    """A failure worth retrying; never leaves the models package (becomes ``ModelError``)."""

    def __init__(self, reason: str, retry_after: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        """The server's ``Retry-After`` header, as sent (seconds or an HTTP date)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry; ``random``, ``sleep`` and ``clock`` are injectable."""

    max_attempts: int = 5
    """Attempts in total, the first one included."""
    max_total_wait_s: float = 60.0
    """Give up rather than wait longer than this, summed over all retries of one call."""
    base_s: float = 0.5
    """The first backoff ceiling; it doubles with each attempt."""
    cap_s: float = 20.0
    """The largest backoff ceiling."""
    random: Callable[[], float] = field(default=random.random)
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep)
    clock: Callable[[], float] = field(default=time.time)
    """Wall clock, used only to turn an HTTP-date ``Retry-After`` into seconds."""

    def backoff(self, attempt: int) -> float:
        """Full jitter: a uniform wait between 0 and the exponential ceiling for ``attempt``."""
        ceiling = min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))
        return self.random() * ceiling


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


async def retrying(
    provider: str,
    attempt: Callable[[], AsyncGenerator[StreamEvent, None]],
    policy: RetryPolicy,
) -> AsyncIterator[StreamEvent]:
    """Run ``attempt()`` until it completes, yielding a ``Retry`` event before each new try."""
    waited = 0.0
    for number in range(1, policy.max_attempts + 1):
        try:
            async with aclosing(attempt()) as events:
                async for event in events:
                    yield event
            return
        except TransientError as exc:
            wait = _next_wait(provider, exc, number, waited, policy)
            reason = exc.reason
        waited += wait
        logger.info("%s: retry %d in %.2fs: %s", provider, number, wait, reason)
        yield Retry(number, reason, wait)
        await policy.sleep(wait)
    raise AssertionError("unreachable: the last attempt either returns or raises")


def _next_wait(
    provider: str, exc: TransientError, number: int, waited: float, policy: RetryPolicy
) -> float:
    """The wait before attempt ``number + 1``, or ``ModelError`` when the budget is spent."""
    if number >= policy.max_attempts:
        raise ModelError(
            f"{provider}: gave up after {number} attempts: {exc.reason}"
        ) from exc
    hinted = parse_retry_after(exc.retry_after, policy.clock())
    wait = hinted if hinted is not None else policy.backoff(number)
    if waited + wait > policy.max_total_wait_s:
        raise ModelError(
            f"{provider}: gave up after {number} attempts: {exc.reason} (waiting {wait:.1f}s "
            f"more would exceed the {policy.max_total_wait_s:.0f}s retry budget)"
        ) from exc
    return wait
