"""MCP server configuration: the mcpServers JSON file and the machine YAML form."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from engine.mcp import ServerConfig, from_machine, load_mcp_config
from engine.vocabulary.errors import UsageError


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_stdio_and_http_entries(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {
        "fs": {"command": "node", "args": ["index.js", "/data"], "env": {"A": "1"},
               "cwd": "sub", "trust": "internal"},
        "remote": {"url": "http://127.0.0.1:8123/mcp", "headers": {"Authorization": "Bearer x"},
                   "type": "http", "timeout_s": 5, "max_restarts": 0, "start_timeout_s": 9,
                   "protocol": "legacy"},
        "off": {"command": "nope", "disabled": True},
    }})
    servers = load_mcp_config(path)
    assert sorted(servers) == ["fs", "remote"]
    fs, remote = servers["fs"], servers["remote"]
    assert fs == ServerConfig("fs", command="node", args=("index.js", "/data"), env={"A": "1"},
                              cwd=str(tmp_path.resolve() / "sub"), trust="internal")
    assert fs.transport == "stdio"
    assert remote.transport == "http" and remote.trust == "untrusted"
    assert remote.headers == {"Authorization": "Bearer x"}
    assert (remote.timeout_s, remote.max_restarts, remote.start_timeout_s) == (5.0, 0, 9.0)
    assert remote.protocol == "legacy" and fs.protocol == "auto"
    assert "Bearer" not in json.dumps(remote.describe())


@pytest.mark.parametrize(("data", "message"), [
    ("{not json", "mcp.json:1:2: invalid JSON"),
    ({"srvs": {}}, '"mcpServers" (Claude, Cursor, Gemini) or "servers" (VS Code)'),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}, "mcpServers.a: set exactly"),
    ({"mcpServers": {"a": {}}}, "set exactly one of 'command' (stdio) or 'url' (HTTP)"),
    ({"mcpServers": {"a": {"command": "x", "argz": []}}}, "unknown key 'argz'; valid keys"),
    ({"mcpServers": {"a": {"command": "x", "trust": "yes"}}},
     "mcpServers.a.trust: expected one of trusted, internal, untrusted"),
    ({"mcpServers": {"a": {"command": "x", "args": "one two"}}}, "a.args: expected a list"),
    ({"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}, "a.env: expected an object"),
    ({"mcpServers": {"a": {"url": "ftp://h"}}}, "a.url: expected an http:// or https:// URL"),
    ({"mcpServers": {"a": {"command": "x", "timeout_s": 0}}}, "a.timeout_s: expected a number > 0"),
    ({"mcpServers": {"a": "node x"}}, "mcpServers.a: expected an object"),
    ({"mcpServers": {"a": {"command": "x", "protocol": "2026"}}},
     "a.protocol: expected one of auto, legacy"),
    ({"mcpServers": {"a": {"command": "x", "max_restarts": -1}}},
     "a.max_restarts: expected a number >= 0"),
])
def test_errors_name_file_and_problem(tmp_path: Path, data: object, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(UsageError) as err:
        load_mcp_config(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read MCP config"):
        load_mcp_config(tmp_path / "absent.json")


class Spec(BaseModel):
    """Stands in for the machine spec's pydantic model (same field names)."""

    command: str | None = None
    args: list[str] = []
    url: str | None = None
    trust: str = "untrusted"
    timeout_s: float = 60


def test_from_machine_accepts_models_objects_and_dicts() -> None:
    servers = from_machine({
        "git": Spec(command="mcp-server-git", args=["--repository", "."], trust="trusted"),
        "web": SimpleNamespace(url="https://example.invalid/mcp", trust="untrusted",
                               timeout_s=3.0),
        "plain": {"command": "x", "cwd": "work"},
    }, base=Path("/machines"))
    assert servers["git"].args == ("--repository", ".") and servers["git"].trust == "trusted"
    assert servers["web"].url == "https://example.invalid/mcp"
    assert servers["web"].timeout_s == 3.0
    assert servers["plain"] == ServerConfig("plain", command="x", cwd="/machines/work")
    with pytest.raises(UsageError, match=r"mcp_servers\.bad\.trust"):
        from_machine({"bad": {"command": "x", "trust": "maybe"}})
