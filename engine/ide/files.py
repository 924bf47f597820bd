"""Files a run changed, handed to the editor (``fs/write_text_file``) where it offers that.

The tools write on disk themselves: the base-hash checks, the dry run's planned post-image and
the side-effect ledger all hold for the file on disk, so a call is never half in the editor.
Once a file changed (a write, an edit, or a command the watcher caught), its new content goes
to the editor too, so its open buffer shows the edit and the edit lands in its review. Reads
stay on disk: an unsaved buffer is not what the agent sees.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp import Client, RequestError

from engine import held_files

logger = logging.getLogger(__name__)

LARGEST = 1_000_000
"""A changed file larger than this (in bytes) is left to the editor's own reload."""


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
