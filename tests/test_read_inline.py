"""read_file reads small regular files on the event loop and others in a worker thread, with
the same result either way."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from engine.tooling import ToolContext, ToolRegistry
from engine.tooling.invoke import invoke
from engine.vocabulary.state import ToolCall
from turnstile_tools import builtin_specs, files

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    """A fifo is never opened (that would block the event loop until a writer came); a
    directory and a missing file are errors too."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    registry = ToolRegistry(builtin_specs())
    ctx = ToolContext(workspace=tmp_path, emit=lambda k, p: None, run_data={}, call_id="c1")
    for name in ("fifo", "dir", "missing"):
        with anyio.fail_after(5):
            result = await invoke(registry, ToolCall("c1", "read_file", {"path": name}), ctx)
        assert result.is_error, (name, result.content)


async def test_same_result_inline_and_in_a_thread(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    lines = "".join(f"line {i} " + "z" * 60 + "\n" for i in range(1200))  # about 80 KB
    (tmp_path / "a.txt").write_text(lines)
    threads: list[str] = []
    real = files._read_file

    def spy(*args: object) -> object:
        threads.append(threading.current_thread().name)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "_read_file", spy)

    async def read() -> object:
        ctx = ToolContext(workspace=tmp_path, emit=lambda k, p: None, run_data={},
                          call_id="c1")
        return await invoke(ToolRegistry(builtin_specs()), ToolCall(
            "c1", "read_file", {"path": "a.txt", "limit": 5}), ctx)

    threaded = await read()
    monkeypatch.setattr(files, "INLINE_READ_BYTES", 10**6)
    inline = await read()
    assert threaded.content == inline.content and threaded.data == inline.data
    assert threads[0] != threading.main_thread().name
    assert threads[1] == threading.main_thread().name
