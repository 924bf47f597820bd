"""Turnstile's project MCP server: confined to its root, over stdio and streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp_servers.support import ROOT, Events, call, free_port, wait_port

from engine.mcp import McpHub, ServerConfig
from engine.tooling.registry import ToolRegistry
from turnstile_tools.project_server import glob_regex, inside, read_file, search_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("def alpha():\n    return 'needle'\n")
    (root / "README.md").write_text("# Demo\nneedle in the readme\n" + "line\n" * 30)
    (root / "blob.bin").write_bytes(b"needle\0\x01\x02")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle in git\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("needle outside\n")
    (root / "link_out.txt").symlink_to(secret)
    (root / "dir_out").symlink_to(tmp_path)
    return root.resolve()


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "link_out.txt",
                                  "dir_out/secret.txt", "src/../../secret.txt", "a\0b"])
def test_paths_outside_the_root_are_refused(project: Path, path: str) -> None:
    with pytest.raises(ToolError):
        inside(project, path)


def test_read_file_numbers_lines_and_pages(project: Path) -> None:
    text = read_file(project, "README.md", 1, 2)
    assert text.splitlines()[:2] == ["     2\tneedle in the readme", "     3\tline"]
    assert "continue with offset=3" in text
    assert read_file(project, str(project / "src/pkg/mod.py"), 0, 10).endswith("'needle'")
    with pytest.raises(ToolError, match="binary"):
        read_file(project, "blob.bin", 0, 10)
    with pytest.raises(ToolError, match="not a file"):
        read_file(project, "src", 0, 10)


def test_search_stays_inside_and_skips_binaries_and_vcs(project: Path) -> None:
    hits = search_text(project, "needle", "**/*", 50).splitlines()
    assert hits == ["README.md:2: needle in the readme", "src/pkg/mod.py:2:     return 'needle'"]
    assert search_text(project, "needle", "*.py", 50) == "src/pkg/mod.py:2:     return 'needle'"
    assert search_text(project, "needle", "src/**/*.md", 50) == "no matches"
    assert "stopped at max_results=1" in search_text(project, "needle", "**/*", 1)
    with pytest.raises(ToolError, match="invalid regular expression"):
        search_text(project, "(", "**/*", 5)
    with pytest.raises(ToolError, match=r"without '\.\.'"):
        search_text(project, "x", "../*", 5)


def test_glob_translation() -> None:
    assert glob_regex("*.py").match("a/b/c.py") and not glob_regex("src/*.py").match("src/a/b.py")
    assert glob_regex("src/**/*.py").match("src/b.py") and glob_regex("src/**").match("src/x/y")


async def exercise(registry: ToolRegistry, server: str) -> None:
    """The same checks over any transport."""
    read = registry.get(f"mcp__{server}__read_project_file")
    search = registry.get(f"mcp__{server}__search_project_text")
    assert read is not None and search is not None
    assert read.risk == "read" and search.risk == "read"  # internal server, read names
    assert read.annotations == {"readOnlyHint": True, "destructiveHint": False,
                                "idempotentHint": True, "openWorldHint": False}
    got = await call(registry, read.name, {"path": "src/pkg/mod.py"})
    assert not got.is_error and "return 'needle'" in got.content
    out = await call(registry, read.name, {"path": "../secret.txt"})
    assert out.is_error and "outside the project root" in out.content
    link = await call(registry, read.name, {"path": "link_out.txt"})
    assert link.is_error and "outside the project root" in link.content
    found = await call(registry, search.name, {"pattern": "needle", "glob": "*.md"})
    assert found.content == "README.md:2: needle in the readme"
    bad = await call(registry, search.name, {"pattern": "needle", "max_results": "many"})
    assert bad.is_error and "max_results" in bad.content


async def test_over_stdio(project: Path) -> None:
    registry, events = ToolRegistry(), Events()
    cfg = ServerConfig("project", command=sys.executable, trust="internal", cwd=str(ROOT),
                       args=("-m", "turnstile_tools.project_server", "--root", str(project)))
    async with McpHub({"project": cfg}, registry, events) as hub:
        assert hub.status()["project"]["server_name"] == "turnstile-project"
        await exercise(registry, "project")
    assert events.of("mcp_server_started")[0]["transport"] == "stdio"


@pytest.fixture
def http_server(project: Path) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnstile_tools.project_server", "--root", str(project), "--http",
         str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


async def test_over_streamable_http(http_server: int) -> None:
    await wait_port(http_server)
    registry, events = ToolRegistry(), Events()
    cfg = ServerConfig("project", url=f"http://127.0.0.1:{http_server}/mcp", trust="internal",
                       headers={"X-Test": "1"}, timeout_s=20)
    async with McpHub({"project": cfg}, registry, events) as hub:
        status = hub.status()["project"]
        assert status["state"] == "ready", status
        await exercise(registry, "project")
    started = events.of("mcp_server_started")[0]
    assert started["transport"] == "http" and started["protocol_version"]


def test_main_refuses_a_missing_root(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "turnstile_tools.project_server", "--root",
                           str(tmp_path / "nope")], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "is not a directory" in proc.stderr


async def test_untrusted_project_server_is_asked_about(project: Path) -> None:
    registry = ToolRegistry()
    cfg = ServerConfig("p", command=sys.executable, cwd=str(ROOT),
                       args=("-m", "turnstile_tools.project_server", "--root", str(project)))
    async with McpHub({"p": cfg}, registry):
        spec = registry.get("mcp__p__read_project_file")
        assert spec is not None and spec.risk == "write"  # its own read-only claim is not enough
