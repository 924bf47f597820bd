"""Stored stream events: streamed model text and tool output, kept so another process (the web
console) can follow a run live.

The runner's observer sees every text delta and output line; ``StreamRecorder`` stores them as
``stream`` events, masks secrets with ``engine.tracing.redact`` before anything is written,
caps what one step stores (``max_chars``, then a single ``truncated`` marker). Model text comes
coalesced at its source (``engine.models.base.collect_turn``: a few deltas a turn); what the
recorder adds is the pace of the store: at most one event and one commit per ``window_s`` of a
burst. A command's first output line is committed at once and model text once its burst
outlives the window, so a reader sees both live; a short burst rides with the step's own
transaction (no extra commit). A trailing word is held back until the burst goes on or ends,
so a secret split across two deltas is still seen whole by the redactor.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from engine.store.base import StepWriter
from engine.tracing.redact import Redactor, secret_env_values
from engine.vocabulary.errors import StoreError
from engine.vocabulary.events import EventKind

logger = logging.getLogger(__name__)

STREAM_EVENT = EventKind.STREAM
WINDOW_S = 0.1
"""Deltas closer together than this are stored as one event."""
MAX_CHARS_PER_STEP = 64_000
"""What one step may store of streamed text and output; the rest is dropped with a marker."""

Observer = Callable[[str, Mapping[str, Any]], None]


class StreamRecorder:
    """An observer wrapper that persists streamed text and tool output as ``stream`` events."""

    def __init__(self, store: StepWriter, run_id: str, inner: Observer, *,
                 clock: Callable[[], float] = time.time, window_s: float = WINDOW_S,
                 max_chars: int = MAX_CHARS_PER_STEP,
                 environ: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.inner = inner
        self.clock = clock
        self.window_s = window_s
        self.max_chars = max_chars
        self._secrets = secret_env_values(dict(os.environ) if environ is None else environ)
        self._red: Redactor | None = None
        """Made when the step first stores something; its cache lives as long as one step."""
        self.step = 0
        self._used = 0
        self._truncated = False
        self._key: tuple[str, str | None] | None = None
        self._parts: list[str] = []
        """The burst's pieces not stored yet (joined when written: no string grows per delta)."""
        self._since = 0.0
        self._handlers: dict[str, Callable[[Mapping[str, Any]], None]] = {
            EventKind.TEXT_DELTA: self._on_text,
            EventKind.TOOL_OUTPUT: self._on_output,
            EventKind.STEP_BEGIN: self._on_step,
            EventKind.RUN_END: lambda payload: self.flush(),
            EventKind.TOOL_CALL: self._end_burst,
            EventKind.MODEL_CALL: self._end_burst,
        }
        """What each kind does here; every other kind only passes through."""

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        self.inner(kind, payload)
        handle = self._handlers.get(kind)
        if handle is not None:
            handle(payload)

    def _on_text(self, payload: Mapping[str, Any]) -> None:
        self._add("text", None, str(payload.get("text") or ""))

    def _on_output(self, payload: Mapping[str, Any]) -> None:
        line = str(payload.get("line") or "")
        self._add("tool_output", str(payload.get("call_id") or ""), line + "\n")

    def _on_step(self, payload: Mapping[str, Any]) -> None:
        self._end_burst(payload)  # rides with this step's commit
        self.step = int(payload.get("step") or 0)
        self._used, self._truncated, self._red = 0, False, None

    def _end_burst(self, payload: Mapping[str, Any]) -> None:
        """The burst is over (the step's commit is moments away): store all of it."""
        if self._parts:
            self._write(final=True, commit=False)
        self._key = None

    def _add(self, channel: str, call_id: str | None, text: str) -> None:
        key = self._key
        if key is None or key[0] != channel or key[1] != call_id:  # a new burst
            if self._parts:
                self._write(final=True, commit=False)
            # A command's first line is committed at once (it may then be quiet for minutes);
            # model text when the burst outlives the window, else it rides with the step's
            # own commit, which also carries the steps deferred before it.
            self._key = (channel, call_id)
            self._since = 0.0 if channel == "tool_output" else time.monotonic()
        self._parts.append(text)
        if time.monotonic() - self._since >= self.window_s:  # at most one write per window
            self._write(final=False, commit=True)

    def flush(self) -> None:
        """Store and commit what is buffered, trailing word included (the burst is over)."""
        self._write(final=True, commit=True)
        self._key = None

    def _write(self, *, final: bool, commit: bool) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        if not final:  # hold back a partial word: it may be the start of a secret
            cut = max(text.rfind(" "), text.rfind("\n")) + 1
            if cut < len(text):
                self._parts.append(text[cut:])
            text = text[:cut]
        if not text or self._key is None or self._truncated:
            return
        if self._red is None:
            self._red = Redactor(self._secrets)
        room = self.max_chars - self._used
        payload: dict[str, Any] = {"channel": self._key[0], "text": self._red.text(text[:room])}
        if self._key[1]:
            payload["call_id"] = self._key[1]
        if len(text) > room:
            self._truncated = True
            payload["truncated"] = True
        self._used += min(len(text), room)
        self._since = time.monotonic()
        try:
            self.store.append_event(self.run_id, self.step, STREAM_EVENT, payload, self.clock())
        except StoreError as exc:  # a buffer flush that failed: the step commit reports it
            logger.debug("stream event not stored: %s", exc)
            return
        if commit:
            self._flush()

    def _flush(self) -> None:
        """Commit now, so another process follows the run live. Best effort: a storage fault
        here is the step commit's to report (one line, run left resumable), not the tool's."""
        try:
            self.store.flush()
        except StoreError as exc:
            logger.debug("stream events not committed yet: %s", exc)
