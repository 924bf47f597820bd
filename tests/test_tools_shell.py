"""run_shell and the supervised process: streaming, caps, timeouts, cancellation, environment."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.sandbox import Swept
from engine.tooling import UNCONFINED, CommandConfinement, ToolContext, ToolRegistry
from engine.tooling.invoke import invoke
from engine.tooling.process import OutputBuffer, group_alive, is_secret_name, scrub_env
from engine.vocabulary.state import ToolCall
from turnstile_tools import builtin_specs

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recorder:
    """An event sink keeping every event with the time it arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any], float]] = []

    def __call__(self, kind: str, payload: Mapping[str, Any]) -> None:
        self.events.append((kind, dict(payload), time.monotonic()))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [p for k, p, _ in self.events if k == kind]


def ctx_for(workspace: Path, rec: Recorder | None = None, **kw: Any) -> ToolContext:
    return ToolContext(workspace=workspace, emit=rec or Recorder(), call_id="c1", **kw)


async def shell(workspace: Path, rec: Recorder | None = None, ctx_kw: Any = None, **args: Any):
    registry = ToolRegistry(builtin_specs())
    ctx = ctx_for(workspace, rec, **(ctx_kw or {}))
    return await invoke(registry, ToolCall("c1", "run_shell", args), ctx)


def group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every live (non-zombie) process of group ``pgid``, read from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append((int(name), fields[0].decode()))
    return found


async def test_exit_code_output_and_data(tmp_path: Path) -> None:
    r = await shell(tmp_path, command="echo out; echo err >&2; exit 3")
    assert r.is_error
    assert "exit code 3" in r.content
    assert "stdout:\nout" in r.content and "stderr:\nerr" in r.content
    assert r.data is not None and r.data["exit_code"] == 3 and r.data["timed_out"] is False
    ok = await shell(tmp_path, command="printf hello")
    assert not ok.is_error and ok.content.startswith("exit code 0") and "hello" in ok.content


async def test_command_not_found_is_127_error(tmp_path: Path) -> None:
    r = await shell(tmp_path, command="definitely-not-a-command-xyz --flag")
    assert r.is_error and r.data is not None and r.data["exit_code"] == 127
    assert "command not found" in r.content


async def test_cwd_is_confined_to_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    r = await shell(tmp_path, command="pwd", cwd="sub")
    assert str((tmp_path / "sub").resolve()) in r.content
    outside = await shell(tmp_path, command="pwd", cwd="../")
    assert outside.is_error and "outside the workspace" in outside.content
    missing = await shell(tmp_path, command="pwd", cwd="nope")
    assert missing.is_error and "not a directory" in missing.content


async def test_lines_stream_as_they_arrive(tmp_path: Path) -> None:
    rec = Recorder()
    started = time.monotonic()
    r = await shell(tmp_path, rec, command="for i in 1 2 3 4 5 6; do echo line$i; sleep 0.1; done")
    finished = time.monotonic()
    lines = [(p["line"], p["t"], at) for k, p, at in rec.events if k == "tool_output"]
    assert [x[0] for x in lines] == [f"line{i}" for i in range(1, 7)]
    stamps = [x[1] for x in lines]
    assert stamps == sorted(stamps) and len(set(stamps)) == 6
    # The sleeps guarantee at least 0.5 s between the first and last line: if lines were
    # delivered at the end they would all arrive together after the command finished.
    assert stamps[-1] - stamps[0] >= 0.4
    assert lines[0][2] - started < finished - started - 0.4
    assert "line6" in r.content


async def test_stderr_streams_separately(tmp_path: Path) -> None:
    rec = Recorder()
    await shell(tmp_path, rec, command="echo a; echo b >&2")
    streams = {(p["stream"], p["line"]) for p in rec.of("tool_output")}
    assert streams == {("stdout", "a"), ("stderr", "b")}
    assert rec.of("tool_process")[0]["pid"] > 0


async def test_timeout_kills_group_and_keeps_output(tmp_path: Path) -> None:
    rec = Recorder()
    r = await shell(tmp_path, rec, command="echo before; sleep 30 | cat; echo never",
                    timeout_s=0.5)
    pgid = rec.of("tool_process")[0]["pgid"]
    assert r.is_error and r.data is not None and r.data["timed_out"] is True
    assert "timed out after 0.5 s" in r.content and "before" in r.content
    assert "never" not in r.content
    assert group_members(pgid) == []


async def test_a_stopped_command_takes_what_it_started_in_new_sessions_along(
        tmp_path: Path) -> None:
    """A process the command started in a session of its own (as the sandbox's
    ``--new-session`` child is) is stopped with the command, not left re-parented."""
    marker = f"sleep 37.{os.getpid()}"
    rec = Recorder()
    r = await shell(tmp_path, rec, command=f"setsid sh -c 'exec {marker}' & wait", timeout_s=0.5)
    assert r.is_error and r.data is not None and r.data["timed_out"] is True

    def alive() -> list[str]:
        found = []
        for name in filter(str.isdigit, os.listdir("/proc")):
            try:
                command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
                state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in command and state != b"Z":
                found.append(name)
        return found

    assert alive() == [], "the command's own-session child outlived it"


async def test_context_timeout_applies_when_call_has_none(tmp_path: Path) -> None:
    r = await shell(tmp_path, ctx_kw={"timeout_s": 0.3}, command="sleep 20")
    assert r.is_error and r.data is not None and r.data["timed_out"] is True


async def test_cancellation_kills_pipeline_with_children(tmp_path: Path) -> None:
    rec = Recorder()
    pgid: int | None = None
    cancelled_at = 0.0
    gone_after = None
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: shell(tmp_path, rec, command="sleep 1000 | cat & sleep 1000"))
            while not rec.of("tool_process"):
                await anyio.sleep(0.01)
            pgid = rec.of("tool_process")[0]["pgid"]
            with anyio.fail_after(60):  # a hang guard
                while len(group_members(pgid)) < 4:  # bash, sleep, cat, sleep
                    await anyio.sleep(0.01)
            cancelled_at = time.monotonic()
            scope.cancel()
    assert scope.cancelled_caught
    assert pgid is not None
    deadline = cancelled_at + 60  # a hang guard: a loaded machine is slow to reap them
    while time.monotonic() < deadline:
        if not group_members(pgid):
            gone_after = time.monotonic() - cancelled_at
            break
        time.sleep(0.01)
    assert gone_after is not None, f"still alive: {group_members(pgid)}"
    assert not group_alive(pgid)


def processes_with_cmdline(prefix: bytes) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and Path(f"/proc/{name}/cmdline").read_bytes().startswith(prefix):
                found.append(int(name))
        except OSError:
            continue
    return found


async def test_cancellation_while_starting_leaves_no_process(tmp_path: Path) -> None:
    rec = Recorder()
    with anyio.CancelScope() as scope:
        scope.cancel()  # already cancelled when the tool starts its process
        await shell(tmp_path, rec, command="sleep 987654 & sleep 987655")
    assert scope.cancelled_caught
    (started,) = rec.of("tool_process")  # the start completed (shielded), then was undone
    assert group_members(started["pgid"]) == []
    assert processes_with_cmdline(b"sleep\x0098765") == []


async def test_sigterm_ignored_escalates_to_sigkill(tmp_path: Path) -> None:
    rec = Recorder()
    r = await shell(tmp_path, rec, command="trap '' TERM; sleep 1000 & sleep 1000; wait",
                    timeout_s=0.3)
    pgid = rec.of("tool_process")[0]["pgid"]
    assert r.data is not None and r.data["timed_out"] is True
    assert r.data["exit_code"] == -9
    assert group_members(pgid) == []


async def test_background_leftovers_are_terminated(tmp_path: Path) -> None:
    rec = Recorder()
    r = await shell(tmp_path, rec, command="sleep 1000 & echo started", timeout_s=20)
    pgid = rec.of("tool_process")[0]["pgid"]
    assert not r.is_error and "started" in r.content
    assert "background processes" in r.content
    assert group_members(pgid) == []


async def test_detached_process_holding_the_pipes_does_not_hang(tmp_path: Path) -> None:
    r = await shell(tmp_path, timeout_s=30, command=(
        "setsid sh -c 'touch ready; exec sleep 60' & "
        "while [ ! -e ready ]; do sleep 0.01; done; echo pid=$!"))
    pid = int(r.content.split("pid=")[1].split()[0])
    try:
        assert r.data is not None and r.data["timed_out"] is False
        assert "detached process kept the output open" in r.content
    finally:
        os.kill(pid, 9)


def _rss_peak_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def test_huge_output_is_capped_and_memory_bounded(tmp_path: Path) -> None:
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS counter
    before = _rss_peak_kb()
    rec = Recorder()
    r = await shell(tmp_path, rec, command="yes | head -c 200000000", timeout_s=120)
    growth_mb = (_rss_peak_kb() - before) / 1024
    assert not r.is_error
    assert r.data is not None and r.data["output_bytes"] == 200_000_000
    assert r.data["omitted_bytes"] > 199_000_000
    assert r.truncated and r.omitted_bytes == r.data["omitted_bytes"]
    assert len(r.content) < 60_000
    assert f"[... {r.data['omitted_bytes']} bytes omitted ...]" in r.content
    assert growth_mb < 50, f"peak RSS grew by {growth_mb:.1f} MB"
    streamed = rec.of("tool_output")
    assert len(streamed) <= 10_001 and "not streamed" in streamed[-1]["line"]


def test_output_buffer_keeps_head_and_tail() -> None:
    buf = OutputBuffer(head_bytes=4, tail_bytes=3)
    for chunk in (b"ab", b"cdef", b"ghij"):
        buf.feed(chunk)
    assert buf.total_bytes == 10 and buf.omitted_bytes == 3
    assert buf.text() == "abcd\n[... 3 bytes omitted ...]\nhij"


def test_secret_names() -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "GITHUB_TOKEN", "AWS_REGION",
                 "DB_PASSWORD", "MY_SECRET", "CLIENT_SECRET_VALUE", "api_key"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "LANG", "TOKENIZERS_PARALLELISM", "KEYBOARD"):
        assert not is_secret_name(name), name
    assert scrub_env({"PATH": "/bin", "X_API_KEY": "s"}, {"X_API_KEY": "given"}) == {
        "PATH": "/bin", "X_API_KEY": "given"}


async def test_environment_is_scrubbed_unless_passed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("SERVICE_TOKEN", "tok-leak")
    monkeypatch.setenv("HARMLESS_VALUE", "visible")
    r = await shell(tmp_path, command="env")
    assert "visible" in r.content
    assert "sk-leak" not in r.content and "tok-leak" not in r.content
    passed = await shell(tmp_path, ctx_kw={"env": {"SERVICE_TOKEN": "given"}}, command="env")
    assert "SERVICE_TOKEN=given" in passed.content and "sk-leak" not in passed.content


async def test_no_stdin(tmp_path: Path) -> None:
    r = await shell(tmp_path, command="cat; echo done", timeout_s=10)
    assert not r.is_error and "done" in r.content


class MarkingConfinement:
    """A confinement of the tool contract's own protocol, not the sandbox's: it runs each
    command under ``env CONFINED_BY=...``, sets the environment itself, and removes a file the
    command leaves behind."""

    def __init__(self, leftover: Path) -> None:
        self.leftover = leftover
        self.asked_risk: list[str | None] = []

    def network_for(self, approved_risk: str | None) -> bool:
        self.asked_risk.append(approved_risk)
        return False

    def command(self, argv: Sequence[str], cwd: Path | str, network: bool,
                prepared: Any = None) -> list[str]:
        assert prepared == (str(self.leftover),)
        return ["env", f"CONFINED_BY=marker-network-{network}", *argv]

    def env(self, base: Mapping[str, str], extra: Mapping[str, str] | None = None
            ) -> dict[str, str]:
        return {"PATH": base.get("PATH", "/usr/bin:/bin"), **(extra or {})}

    def before(self, approved_risk: str | None = None) -> tuple[str, ...]:
        self.asked_risk.append(approved_risk)
        return (str(self.leftover),)

    def after(self, was_absent: Sequence[str]) -> Swept:
        gone = [p for p in was_absent if Path(p).exists()]
        for p in gone:
            Path(p).unlink()
        return Swept(removed=gone)

    active = True

    def read_only_note(self) -> str:
        return "marker note"

    def hidden_note(self, text: str) -> str:
        return ""

    def describe(self, network: bool | None = None) -> dict[str, Any]:
        return {"sandboxed": "marker", "network": network}


async def test_the_command_runs_under_the_confinement_the_contract_hands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARMLESS_VALUE", "visible")
    jail = MarkingConfinement(tmp_path / ".envrc")
    confinement: CommandConfinement = jail
    rec = Recorder()
    r = await shell(tmp_path, rec, ctx_kw={"confinement": confinement,
                                           "approved_risk": "network"},
                    command="env; touch .envrc")
    assert "CONFINED_BY=marker-network-False" in r.content
    assert "HARMLESS_VALUE" not in r.content  # the environment is the confinement's
    assert jail.asked_risk == ["network", "network"]  # network_for, then before
    assert r.is_error and "removed .envrc" in r.content and not (tmp_path / ".envrc").exists()
    assert r.data is not None and r.data["sandbox"] == {"sandboxed": "marker", "network": False}
    assert rec.of("tool_process")[0]["sandbox"] == {"sandboxed": "marker", "network": False}


async def test_a_context_without_confinement_runs_unconfined(tmp_path: Path) -> None:
    assert ToolContext(workspace=tmp_path).confinement is UNCONFINED
    r = await shell(tmp_path, command="true")
    assert r.data is not None and r.data["sandbox"] == {
        "sandboxed": False, "mode": "auto", "reason": "no sandbox given to the tool"}
