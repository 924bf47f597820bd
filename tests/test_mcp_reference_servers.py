"""The official reference MCP servers, over stdio, through the hub: required, never skipped.

``@modelcontextprotocol/server-filesystem`` and ``server-everything`` (npm, handshake era) come
from ``npm install`` (package.json); ``mcp-server-git`` (PyPI, 2026-07-28 era) from the [dev]
extra. The classification tables below are what Turnstile decides for their tools.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest
from mcp_servers.support import (
    WAIT_S,
    Events,
    call,
    git_server,
    node_executable,
    node_server,
)

from engine.mcp import McpHub, ServerConfig
from engine.tooling.registry import ToolRegistry

pytestmark = pytest.mark.anyio

FS_UNTRUSTED = {
    "create_directory": "write", "directory_tree": "write", "edit_file": "destructive",
    "get_file_info": "write", "list_allowed_directories": "write", "list_directory": "write",
    "list_directory_with_sizes": "write", "move_file": "destructive", "read_file": "write",
    "read_media_file": "write", "read_multiple_files": "write", "read_text_file": "write",
    "search_files": "write", "write_file": "destructive",
}
"""Untrusted: nothing is read (read-only claims are not believed); destructiveHint raises."""
FS_TRUSTED = {**{k: "read" for k, v in FS_UNTRUSTED.items() if v == "write"},
              "create_directory": "write", "edit_file": "destructive",
              "move_file": "destructive", "write_file": "destructive"}
GIT_INTERNAL = {
    "git_add": "write", "git_branch": "write", "git_checkout": "write", "git_commit": "write",
    "git_create_branch": "write", "git_diff": "read", "git_diff_staged": "read",
    "git_diff_unstaged": "read", "git_log": "read", "git_reset": "destructive",
    "git_show": "read", "git_status": "read",
}
"""Internal: name words decide (``git_branch`` names no verb, so it is asked about)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def risks(registry: ToolRegistry, server: str) -> dict[str, str]:
    prefix = f"mcp__{server}__"
    return {s.name[len(prefix):]: s.risk for s in registry if s.name.startswith(prefix)}


@pytest.mark.parametrize(("trust", "table"), [("untrusted", FS_UNTRUSTED),
                                              ("trusted", FS_TRUSTED)])
async def test_filesystem_server(tmp_path: Path, trust: str, table: dict[str, str]) -> None:
    script = node_server("server-filesystem")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "notes.txt").write_text("hello from the fixture\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    registry, events = ToolRegistry(), Events()
    cfg = ServerConfig("fs", command=node_executable(), args=(str(script), str(allowed)),
                       trust=trust)
    async with McpHub({"fs": cfg}, registry, events) as hub:
        status = hub.status()["fs"]
        assert (status["state"], status["protocol_version"]) == ("ready", "2025-11-25")
        assert risks(registry, "fs") == table
        read = await call(registry, "mcp__fs__read_text_file",
                          {"path": str(allowed / "notes.txt")})
        assert read.content == "hello from the fixture\n" and not read.is_error
        outside = await call(registry, "mcp__fs__read_text_file",
                             {"path": str(tmp_path / "outside.txt")})
        assert outside.is_error and "secret" not in outside.content
        missing_arg = await call(registry, "mcp__fs__read_text_file", {})
        assert missing_arg.is_error and "'path' is a required property" in missing_arg.content
    assert events.of("mcp_server_started")[0]["server_name"] == "secure-filesystem-server"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.email=t@example.invalid", "-c", "user.name=T"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (path / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    (path / "a.txt").write_text("two\n")
    return path


async def test_git_server(repo: Path) -> None:
    exe = git_server()
    registry, events = ToolRegistry(), Events()
    cfg = ServerConfig("git", command=exe, args=("--repository", str(repo)), trust="internal")
    async with McpHub({"git": cfg}, registry, events) as hub:
        status = hub.status()["git"]
        assert (status["state"], status["protocol_version"]) == ("ready", "2026-07-28")
        assert risks(registry, "git") == GIT_INTERNAL
        log = await call(registry, "mcp__git__git_log", {"repo_path": str(repo)})
        assert "first commit" in log.content and not log.is_error
        diff = await call(registry, "mcp__git__git_diff_unstaged", {"repo_path": str(repo)})
        assert "-one" in diff.content and "+two" in diff.content
    untrusted = ToolRegistry()
    async with McpHub({"git": ServerConfig("git", command=exe, args=("--repository", str(repo)))},
                      untrusted):
        table = risks(untrusted, "git")
        assert table["git_status"] == "write" and table["git_reset"] == "destructive"
        assert set(table.values()) == {"write", "destructive"}


async def test_everything_server_handshake_era_and_list_changed() -> None:
    """It sends ``notifications/tools/list_changed`` right after ``initialize``."""
    script = node_server("server-everything")
    registry, events = ToolRegistry(), Events()
    cfg = ServerConfig("every", command=node_executable(), args=(str(script), "stdio"),
                       trust="trusted")
    async with McpHub({"every": cfg}, registry, events) as hub:
        assert hub.status()["every"]["protocol_version"] == "2025-11-25"
        echo = await call(registry, "mcp__every__echo", {"message": "ping"})
        assert not echo.is_error and "ping" in echo.content
        total = await call(registry, "mcp__every__get-sum", {"a": 2, "b": 3})
        assert "5" in total.content
        table = risks(registry, "every")
        assert (table["get-sum"], table["gzip-file-as-resource"]) == ("read", "network")
        with anyio.fail_after(WAIT_S):
            while hub.status()["every"]["refreshes"] < 1:
                await anyio.sleep(0.01)
    # the re-list found the same tools: no change event, no registry churn
    assert not events.of("mcp_tools_changed")
