"""MCP config files as other clients write them, run against real servers on 127.0.0.1.

The files follow each client's public documentation: Claude Code's ``.mcp.json`` (``type``,
``${VAR}`` and ``${VAR:-default}``), VS Code's ``.vscode/mcp.json`` (``servers``, ``type`` per
entry, ``inputs``), Cursor's ``.cursor/mcp.json`` (url-only entries) and Gemini CLI's
``settings.json`` (``httpUrl``, ``url`` for SSE, ``cwd``, ``timeout`` in ms, boolean ``trust``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_servers.support import ROOT, Events, call, free_port

from engine.actions.registry import ACTIONS
from engine.mcp import McpHub, ServerConfig, from_machine, load_mcp_config
from engine.tooling.registry import ToolRegistry
from engine.validation import load_machine
from engine.vocabulary.errors import UsageError
from tests.conftest import EngineCLI

OLD_SSE = ROOT / "tests" / "mcp_servers" / "old_sse.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _serve(cmd: list[str]) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen([*cmd, str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, proc)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    """Until the server answers on ``port``; its exit fails at once, ``timeout`` is a hang
    guard (a loaded machine takes its time to start a Python server)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the server exited with code {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="module")
def sse_port() -> Iterator[int]:
    """A real server on the older HTTP+SSE transport (``GET /sse``, ``POST /messages/``)."""
    yield from _serve([sys.executable, str(OLD_SSE)])


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """Turnstile's project server on streamable HTTP."""
    project = tmp_path_factory.mktemp("project")
    (project / "notes.md").write_text("hello\n")
    yield from _serve([sys.executable, "-m", "turnstile_tools.project_server", "--root",
                       str(project), "--http"])


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


async def started(servers: dict[str, ServerConfig]) -> tuple[dict[str, Any], Events,
                                                              list[str]]:
    """Start ``servers``, call ``add`` where offered; the status, events and offered tools."""
    registry, events = ToolRegistry(), Events()
    async with McpHub(servers, registry, events) as hub:
        status = hub.status()
        offered = sorted(s.name for s in registry)
        if all(s["state"] == "ready" for s in status.values()):
            for name in servers:
                tools = status[name]["tools"]
                if "add" in tools:
                    result = await call(registry, f"mcp__{name}__add", {"a": 2, "b": 40})
                    assert not result.is_error and "42" in result.content
    return status, events, offered


# -- the older HTTP+SSE transport ----------------------------------------------------------


@pytest.mark.anyio
async def test_type_sse_speaks_the_old_transport_with_expanded_headers(
        tmp_path: Path, sse_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's ``.mcp.json``: ``type: sse`` and ``${VAR}`` in url and headers."""
    monkeypatch.setenv("SSE_HOST", "127.0.0.1")
    monkeypatch.setenv("SSE_TOKEN", "s3cret")
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"old": {
        "type": "sse", "url": f"http://${{SSE_HOST}}:{sse_port}/sse",
        "headers": {"X-Test": "Bearer ${SSE_TOKEN}", "X-Other": "${UNSET_X:-fallback}"}}}})
    config = load_mcp_config(path)["old"]
    assert (config.transport, config.url) == ("sse", f"http://127.0.0.1:{sse_port}/sse")
    assert config.headers == {"X-Test": "Bearer s3cret", "X-Other": "fallback"}
    registry, events = ToolRegistry(), Events()
    async with McpHub({"old": config}, registry, events) as hub:
        assert hub.status()["old"]["state"] == "ready", hub.status()
        added = await call(registry, "mcp__old__add", {"a": 2, "b": 3})
        echoed = await call(registry, "mcp__old__header")
    assert not added.is_error and added.content.strip() == "5"
    assert echoed.content.strip() == "Bearer s3cret"  # the expanded header reached the server
    assert events.of("mcp_server_started")[0]["transport"] == "sse"


@pytest.mark.anyio
async def test_type_http_against_an_sse_server_fails_with_the_reason(sse_port: int) -> None:
    config = ServerConfig("old", url=f"http://127.0.0.1:{sse_port}/sse", url_transport="http",
                          start_timeout_s=20)
    status, events, registry = await started({"old": config})
    assert status["old"]["state"] == "failed" and status["old"]["error"]
    assert events.of("mcp_server_failed")[0]["server"] == "old"
    assert registry == []


# -- the other clients' files --------------------------------------------------------------


@pytest.mark.anyio
async def test_cursor_url_only_entry_finds_the_sse_server(tmp_path: Path, sse_port: int) -> None:
    """Cursor writes ``url`` alone: streamable HTTP is tried first, then HTTP+SSE."""
    path = write(tmp_path / ".cursor" / "mcp.json", {"mcpServers": {
        "remote": {"url": f"http://127.0.0.1:{sse_port}/sse"},
        "local": {"command": sys.executable, "args": [str(OLD_SSE), "--help-not-a-port"],
                  "env": {"MODE": "stdio"}, "disabled": True}}})
    servers = load_mcp_config(path)
    assert list(servers) == ["remote"] and servers["remote"].transport == "auto"
    status, events, _ = await started(servers)
    assert status["remote"]["state"] == "ready", status
    assert events.of("mcp_server_started")[0]["transport"] == "sse"


@pytest.mark.anyio
async def test_vscode_servers_with_types_and_inputs(tmp_path: Path, http_port: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """VS Code's ``.vscode/mcp.json``: ``servers``, ``type`` per entry, ``${workspaceFolder}``,
    ``${env:VAR}``; ``inputs`` declared but not used by these servers."""
    monkeypatch.setenv("PROJECT_PORT", str(http_port))
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    path = write(project / ".vscode" / "mcp.json", {
        "inputs": [{"type": "promptString", "id": "api-key", "description": "API key",
                    "password": True}],
        "servers": {
            "files": {"type": "stdio", "command": sys.executable,
                      "args": ["-m", "turnstile_tools.project_server", "--root",
                               "${workspaceFolder}/docs"],
                      "cwd": str(ROOT)},
            "web": {"type": "http", "url": "http://127.0.0.1:${env:PROJECT_PORT}/mcp"},
        }})
    servers = load_mcp_config(path)
    assert servers["files"].args[-1] == f"{project.resolve()}/docs"
    assert (servers["web"].transport, servers["files"].transport) == ("http", "stdio")
    status, events, _ = await started(servers)
    assert {n: s["state"] for n, s in status.items()} == {"files": "ready", "web": "ready"}
    assert "read_project_file" in status["web"]["tools"]
    assert sorted(e["transport"] for e in events.of("mcp_server_started")) == ["http", "stdio"]


def test_vscode_input_reference_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path / ".vscode" / "mcp.json", {
        "inputs": [{"type": "promptString", "id": "api-key", "password": True}],
        "servers": {"gh": {"type": "http", "url": "https://api.example.invalid/mcp",
                           "headers": {"Authorization": "Bearer ${input:api-key}"}}}})
    with pytest.raises(UsageError) as err:
        load_mcp_config(path)
    message = str(err.value)
    assert "servers.gh.headers.Authorization" in message and "${input:api-key}" in message
    assert "${env:NAME}" in message and "\n" not in message


@pytest.mark.anyio
async def test_gemini_settings_httpurl_url_cwd_timeout_trust(
        tmp_path: Path, http_port: int, sse_port: int) -> None:
    """Gemini CLI's ``settings.json``: other settings around ``mcpServers``; ``httpUrl`` is
    streamable HTTP, ``url`` is SSE, ``timeout`` is milliseconds, ``trust`` a boolean."""
    path = write(tmp_path / ".gemini" / "settings.json", {
        "theme": "Dracula", "selectedAuthType": "gemini-api-key",
        "mcp": {"allowed": ["project", "old", "tool"]},
        "mcpServers": {
            "project": {"httpUrl": f"http://127.0.0.1:{http_port}/mcp",
                        "headers": {"X-Test": "1"}, "timeout": 5000},
            "old": {"url": f"http://127.0.0.1:{sse_port}/sse", "trust": True,
                    "includeTools": ["add", "header"], "excludeTools": ["header"]},
            "tool": {"command": sys.executable, "args": ["-m", "turnstile_tools.project_server",
                                                         "--root", "."],
                     "cwd": "tools-dir", "timeout": 30000, "trust": False,
                     "description": "the project itself"},
        }})
    servers = load_mcp_config(path)
    project, old, tool = servers["project"], servers["old"], servers["tool"]
    assert (project.transport, project.timeout_s, project.trust) == ("http", 5.0, "untrusted")
    assert (old.transport, old.trust) == ("auto", "trusted")
    assert tool.cwd == str(tmp_path.resolve() / "tools-dir")  # from the project, not .gemini/
    assert (tool.timeout_s, tool.trust) == (30.0, "untrusted")
    servers["tool"] = ServerConfig("tool", command=tool.command, args=tool.args, cwd=str(ROOT))
    status, events, registry = await started(servers)
    assert {n: s["state"] for n, s in status.items()} == dict.fromkeys(servers, "ready"), status
    by_server = {e["server"]: e["transport"] for e in events.of("mcp_server_started")}
    assert by_server == {"project": "http", "old": "sse", "tool": "stdio"}
    assert old.include_tools == ("add", "header") and old.exclude_tools == ("header",)
    assert [n for n in registry if n.startswith("mcp__old__")] == ["mcp__old__add"]


@pytest.mark.parametrize(("entry", "message"), [
    ({"httpUrl": "http://h/mcp", "url": "http://h/sse"}, "set 'httpUrl' (streamable HTTP) or"),
    ({"url": "http://h/mcp", "timeout": "soon"}, "x.timeout: expected milliseconds > 0"),
    ({"url": "http://h/mcp", "type": "websocket"}, "x.type: expected one of stdio, http"),
    ({"command": "x", "type": "sse"}, "type 'sse' needs 'url'"),
    ({"url": "http://h/mcp", "type": "stdio"}, "type 'stdio' needs 'command'"),
])
def test_dialect_errors_are_one_line(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    path = write(tmp_path / "mcp.json", {"mcpServers": {"x": entry}})
    with pytest.raises(UsageError) as err:
        load_mcp_config(path)
    assert message in str(err.value) and "\n" not in str(err.value)


# -- variables ----------------------------------------------------------------------------


def test_variables_in_command_args_env_url_and_headers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLS_BIN", "/opt/tools")
    monkeypatch.setenv("EMPTY", "")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    path = write(tmp_path / ".mcp.json", {"mcpServers": {
        "local": {"command": "${TOOLS_BIN}/server",
                  "args": ["--level", "${LEVEL:-info}", "--empty=${EMPTY:-filled}", "$HOME"],
                  "env": {"KEY": "${TOOLS_BIN}", "KEPT": "${EMPTY}", "D": "${NOT_SET_ANYWHERE:-}"}},
        "remote": {"type": "http", "url": "https://${HOST:-api.example.invalid}/mcp",
                   "headers": {"Authorization": "Bearer ${TOOLS_BIN}"}}}})
    servers = load_mcp_config(path)
    local, remote = servers["local"], servers["remote"]
    assert local.command == "/opt/tools/server"
    assert local.args == ("--level", "info", "--empty=filled", "$HOME")  # bare $VAR is kept
    assert local.env == {"KEY": "/opt/tools", "KEPT": "", "D": ""}
    assert remote.url == "https://api.example.invalid/mcp"
    assert remote.headers == {"Authorization": "Bearer /opt/tools"}


def test_unset_variable_names_server_key_and_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_PAT_FOR_TEST", raising=False)
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"github": {
        "type": "http", "url": "https://api.example.invalid/mcp",
        "headers": {"Authorization": "Bearer ${GITHUB_PAT_FOR_TEST}"}}}})
    with pytest.raises(UsageError) as err:
        load_mcp_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}: mcpServers.github.headers.Authorization: ")
    assert "GITHUB_PAT_FOR_TEST is not set" in message and "\n" not in message


def test_unset_variable_is_one_line_exit_2_on_the_cli(cli: EngineCLI, tmp_path: Path) -> None:
    path = write(tmp_path / "mcp.json", {"mcpServers": {"srv": {
        "command": "${SERVER_BIN_NOT_SET}", "args": []}}})
    proc = cli("tools", "--mcp-config", str(path), "--json")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {path}: mcpServers.srv.command: environment "
                                   "variable SERVER_BIN_NOT_SET is not set (export it, or write "
                                   "${SERVER_BIN_NOT_SET:-default})")


# -- engine tools never hides a server that failed ----------------------------------------


def test_tools_json_carries_the_failed_server_and_exits_1(
        cli: EngineCLI, tmp_path: Path, sse_port: int) -> None:
    path = write(tmp_path / "mcp.json", {"mcpServers": {
        "old": {"type": "sse", "url": f"http://127.0.0.1:{sse_port}/sse"},
        "wrong": {"type": "http", "url": f"http://127.0.0.1:{sse_port}/sse",
                  "start_timeout_s": 20},
        "missing": {"command": str(tmp_path / "no-such-server")}}})
    proc = cli("tools", "--mcp-config", str(path), "--json", timeout=180)
    assert proc.returncode == 1, proc.stderr
    rows = json.loads(proc.stdout)
    failed = {r["server"]: r for r in rows if r.get("status") == "failed"}
    assert sorted(failed) == ["missing", "wrong"]
    assert failed["wrong"]["error"] and failed["wrong"]["transport"] == "http"
    assert failed["missing"]["source"] == "mcp:missing" and failed["missing"]["error"]
    assert any(r["name"] == "mcp__old__add" for r in rows)
    assert "MCP server wrong failed to start" in proc.stderr
    text = cli("tools", "--mcp-config", str(path), timeout=180)
    assert text.returncode == 1 and "mcp:missing" in text.stdout and "failed" in text.stdout


@pytest.mark.anyio
async def test_machine_yaml_type_sse(tmp_path: Path, sse_port: int) -> None:
    """A machine's ``mcp_servers:`` takes the same ``type`` and ``${VAR}`` forms."""
    machine = tmp_path / "m.yaml"
    machine.write_text(
        "name: m\ninitial: plan\n"
        "mcp_servers:\n"
        f"  old: {{type: sse, url: 'http://127.0.0.1:{sse_port}/sse',\n"
        "         headers: {X-Test: '${SSE_HEADER_FOR_TEST:-from-default}'}}\n"
        "states:\n  plan: {action: plan, on: {ready: done}}\n  done: {final: true}\n")
    spec = load_machine(machine, ACTIONS)
    servers = from_machine(spec.mcp_servers, tmp_path)
    assert servers["old"].transport == "sse"
    assert servers["old"].headers == {"X-Test": "from-default"}
    registry = ToolRegistry()
    async with McpHub(servers, registry) as hub:
        assert hub.status()["old"]["state"] == "ready"
        echoed = await call(registry, "mcp__old__header")
    assert echoed.content.strip() == "from-default"


@pytest.mark.anyio
async def test_vscode_env_file_reaches_the_server(tmp_path: Path) -> None:
    """VS Code's ``envFile`` (``${workspaceFolder}/.env`` or relative to the project): its
    variables reach the real server process, under the entry's own ``env``."""
    project = tmp_path / "proj"
    log = tmp_path / "effects.log"
    (project / ".vscode").mkdir(parents=True)
    (project / ".env").write_text(f"# for the payment server\nexport EFFECT_LOG='{log}'\n"
                                  "MODE=file\n\nOTHER=\"a b\"  \n", encoding="utf-8")
    keyed = str(ROOT / "tests" / "mcp_servers" / "keyed_server.py")
    path = write(project / ".vscode" / "mcp.json", {"servers": {
        "pay": {"type": "stdio", "command": sys.executable, "args": [keyed],
                "envFile": "${workspaceFolder}/.env", "env": {"MODE": "entry"}},
        "rel": {"type": "stdio", "command": sys.executable, "args": [keyed], "envFile": ".env"},
    }})
    servers = load_mcp_config(path)
    assert dict(servers["pay"].env) == {"EFFECT_LOG": str(log), "MODE": "entry",
                                        "OTHER": "a b"}
    assert servers["rel"].env["MODE"] == "file"
    registry, events = ToolRegistry(), Events()
    async with McpHub({"pay": servers["pay"]}, registry, events) as hub:
        assert hub.status()["pay"]["state"] == "ready"
        result = await call(registry, "mcp__pay__send_payment", {"amount": 7})
    assert not result.is_error, result.content
    assert log.read_text().startswith("paid 7 ")


@pytest.mark.parametrize(("env_file", "message"), [
    ("missing.env", "servers.s.envFile: cannot read {project}/missing.env: no such file"),
    ("bad.env", "{project}/bad.env:2: expected NAME=VALUE ({project}/.vscode/mcp.json: "
                "servers.s.envFile)"),
])
def test_a_bad_env_file_is_one_line(tmp_path: Path, env_file: str, message: str) -> None:
    project = tmp_path / "proj"
    (project / ".vscode").mkdir(parents=True)
    (project / "bad.env").write_text("A=1\nnot an assignment\n", encoding="utf-8")
    path = write(project / ".vscode" / "mcp.json", {"servers": {
        "s": {"command": "true", "envFile": env_file}}})
    with pytest.raises(UsageError) as err:
        load_mcp_config(path)
    assert str(err.value).endswith(message.format(project=project.resolve())), err.value
    assert "\n" not in str(err.value)
