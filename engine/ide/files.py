"""Files through the editor: read from its buffers (``fs/read_text_file``) and changed
files handed to it (``fs/write_text_file``), where it offers each.

Reads: ``read_file`` checks the path as always (inside the workspace, a regular text file, not
the engine's database), then asks the editor for the file's text, so an unsaved buffer is what
the model sees. When the buffer holds what the disk holds, the result is the disk's (its hash
is the base the writes check); when it differs, the result is the buffer's text with its own
hash, marked unsaved, and a write or edit of the file is refused (its base is not the disk's)
until the buffer is saved: the edit would otherwise land on the disk's text and replace the
unsaved one. An editor that refuses or does not answer leaves the read on disk.

Writes: the tools write on disk themselves: the base-hash checks, the dry run's planned
post-image and the side-effect ledger all hold for the file on disk, so a call is never half in
the editor. Once a file changed (a write, an edit, or a command the watcher caught), its new
content goes to the editor too, so its open buffer shows the edit and the edit lands in its
review.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from acp import Client, RequestError

from engine.vocabulary import held_files

logger = logging.getLogger(__name__)

LARGEST = 1_000_000
"""A changed file larger than this (in bytes) is left to the editor's own reload."""
READ_WAIT_S = 10.0
"""How long a read waits for the editor's answer before it reads the disk instead."""


class EditorReads:
    """Reads a file's text through the editor (the run's ``read_text``)."""

    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    async def __call__(self, path: Path) -> str | None:
        """The editor's text of ``path`` (absolute), or None to read it on disk: the editor
        refused, failed or did not answer in time."""
        with anyio.move_on_after(READ_WAIT_S):
            try:
                answer = await self.client.read_text_file(session_id=self.session_id,
                                                          path=str(path))
            except RequestError as exc:
                logger.warning("%s: the editor did not read it (%s); read on disk", path, exc)
                return None
            return answer.content
        logger.warning("%s: the editor did not answer in %gs; read on disk", path, READ_WAIT_S)
        return None


class EditorFiles:
    """Writes each changed file's new content through the editor."""

    def __init__(self, client: Client, session_id: str, workspace: Path) -> None:
        self.client = client
        self.session_id = session_id
        self.workspace = workspace

    async def changed(self, payload: Mapping[str, Any]) -> None:
        """A ``file_changed`` event: hand the file's content to the editor (a deleted,
        binary or very large file is not)."""
        name = payload.get("path")
        if not isinstance(name, str) or payload.get("deleted"):
            return
        path = self.workspace / name
        if held_files.held_path(path):  # reading it would drop the store's locks
            return
        try:
            data = path.read_bytes()
            if len(data) > LARGEST:
                return
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return
        try:
            await self.client.write_text_file(session_id=self.session_id, path=str(path),
                                              content=text)
        except RequestError as exc:  # the file is written on disk either way
            logger.warning("%s: the editor refused the new content: %s", path, exc)
