"""Model specs, configuration errors (one line, exit 2) and the preflight check before a run."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from sse_server import PATHS, Reply, SSEServer, provider_env, sse_server_fixture  # noqa: F401

from engine.models.base import ModelParams, collect_turn
from engine.providers.anthropic import AnthropicClient
from engine.providers.factory import (
    make_model,
    ollama_base_url,
    parse_model_spec,
    preflight,
    resolve_model_spec,
)
from engine.providers.openai_compat import OpenAICompatClient
from engine.providers.scripted import ScriptedModel
from engine.vocabulary.errors import EXIT_BAD_INPUT, ModelConfigError
from engine.vocabulary.state import Message

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def turns(tmp_path: Path) -> Path:
    path = tmp_path / "turns.yaml"
    path.write_text('- text: "All done."\n', encoding="utf-8")
    return path


def config_error(spec: str | None, **kw: object) -> str:
    with pytest.raises(ModelConfigError) as info:
        make_model(spec, **kw)  # type: ignore[arg-type]
    assert info.value.exit_code == EXIT_BAD_INPUT
    message = str(info.value)
    assert "\n" not in message
    return message


def test_resolve_precedence_flag_then_env_then_machine() -> None:
    env = {"ENGINE_MODEL": "anthropic:claude-haiku-4-5"}
    assert resolve_model_spec("openai:gpt-4.1", "ollama:q", env) == "openai:gpt-4.1"
    assert resolve_model_spec(None, "ollama:q", env) == "anthropic:claude-haiku-4-5"
    assert resolve_model_spec("", "ollama:q", {}) == "ollama:q"
    assert resolve_model_spec(None, None, {"ENGINE_MODEL": "  "}) is None


def test_spec_keeps_colons_in_the_model_name() -> None:
    spec = parse_model_spec("ollama:qwen2.5-coder:7b")
    assert (spec.provider, spec.model) == ("ollama", "qwen2.5-coder:7b")
    assert str(spec) == "ollama:qwen2.5-coder:7b"


def test_unknown_provider_lists_the_valid_ones() -> None:
    message = config_error("gpt-4.1", env={})
    assert message == ("unknown model provider 'gpt-4.1' in 'gpt-4.1': use one of openai:<model>, "
                       "anthropic:<model>, ollama:<model>, scripted[:PATH]")
    assert "did you mean 'openai'?" in config_error("opneai:gpt-4.1", env={})


@pytest.mark.parametrize("spec", ["openai", "anthropic:", "ollama:  "])
def test_empty_model_name(spec: str) -> None:
    assert "names no model: write " in config_error(spec, env={"OPENAI_API_KEY": "k"})


@pytest.mark.parametrize(("spec", "var"), [("openai:gpt-4.1-mini", "OPENAI_API_KEY"),
                                           ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY")])
def test_missing_api_key_names_the_variable(spec: str, var: str) -> None:
    message = config_error(spec, env={var: " "})
    assert message.startswith(f"{spec} needs an API key: set {var}")


def test_base_url_must_be_a_url() -> None:
    message = config_error("openai:m", env={"OPENAI_API_KEY": "k",
                                            "OPENAI_BASE_URL": "localhost:8000/v1"})
    assert message == ("OPENAI_BASE_URL='localhost:8000/v1' is not a URL: it must start with "
                       "http:// or https://")


def test_clients_and_their_base_urls() -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "a"}
    openai = make_model("openai:gpt-4.1-mini", env=env)
    assert isinstance(openai, OpenAICompatClient)
    assert (openai.provider, openai.model) == ("openai", "gpt-4.1-mini")
    assert openai.http.base_url == "https://api.openai.com/v1"
    anthropic = make_model("anthropic:claude-sonnet-4-5", env=env)
    assert isinstance(anthropic, AnthropicClient)
    assert anthropic.http.base_url == "https://api.anthropic.com"
    custom = make_model("anthropic:m", env={**env, "ANTHROPIC_BASE_URL": "http://h:9/v1/"})
    assert isinstance(custom, AnthropicClient) and custom.http.base_url == "http://h:9"
    ollama = make_model("ollama:qwen2.5-coder", env={})
    assert isinstance(ollama, OpenAICompatClient)
    assert ollama.provider == "ollama" and ollama.http.base_url == "http://127.0.0.1:11434/v1"


@pytest.mark.parametrize(("host", "url"), [
    ("", "http://127.0.0.1:11434/v1"),
    ("0.0.0.0", "http://127.0.0.1:11434/v1"),
    ("gpu-box", "http://gpu-box:11434/v1"),
    ("gpu-box:8080", "http://gpu-box:8080/v1"),
    ("http://10.0.0.5:11434/", "http://10.0.0.5:11434/v1"),
    ("https://ollama.example.com", "https://ollama.example.com/v1"),
    ("[::1]:11500", "http://[::1]:11500/v1"),
])
def test_ollama_host(host: str, url: str) -> None:
    assert ollama_base_url({"OLLAMA_HOST": host}) == url


def test_scripted_from_spec_path_or_task_turns(turns: Path) -> None:
    assert isinstance(make_model(f"scripted:{turns}", env={}), ScriptedModel)
    assert isinstance(make_model("scripted", turns_path=turns, env={}), ScriptedModel)
    assert isinstance(make_model(None, turns_path=turns, env={}), ScriptedModel)


def test_no_model_at_all_lists_every_way_to_configure_one() -> None:
    message = config_error(None, env={})
    for way in ("--model", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ollama:", "`model:`",
                "ENGINE_MODEL"):
        assert way in message


async def test_ollama_speaks_openai_without_a_key(sse_server: SSEServer) -> None:
    host = sse_server.base_url.removeprefix("http://")
    sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
    model = make_model("ollama:qwen2.5-coder", env={"OLLAMA_HOST": host})
    turn = await collect_turn(model.stream([Message("user", "hi")], [], ModelParams(100)))
    await model.aclose()
    assert turn.message.content
    request = sse_server.requests[0]
    assert "authorization" not in request.headers
    assert request.json["max_tokens"] == 100 and "max_completion_tokens" not in request.json


# --- preflight -------------------------------------------------------------------------------

async def test_preflight_unreachable_base_url_is_a_config_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = make_model("openai:gpt-4.1", env={"OPENAI_API_KEY": "k",
                                              "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    with pytest.raises(ModelConfigError, match=rf"^openai: cannot reach http://127.0.0.1:{port}/v1"):
        await preflight(model)
    await model.aclose()


@pytest.mark.parametrize(("provider", "listed", "wanted"), [
    ("openai", ["gpt-4.1", "gpt-4.1-mini"], "gpt-4.1-mini"),
    ("anthropic", ["claude-sonnet-4-5-20250929"], "claude-sonnet-4-5"),
])
async def test_preflight_accepts_a_listed_model(
    sse_server: SSEServer, provider: str, listed: list[str], wanted: str
) -> None:
    sse_server.enqueue("/v1/models", Reply.json({"data": [{"id": i} for i in listed]}))
    model = make_model(f"{provider}:{wanted}", env=provider_env(sse_server))
    await preflight(model)
    await model.aclose()
    request = sse_server.requests[0]
    assert request.method == "GET" and request.path == "/v1/models"


async def test_preflight_refuses_an_unknown_model_with_the_closest_name(
    sse_server: SSEServer,
) -> None:
    sse_server.enqueue("/v1/models", Reply.json({"data": [{"id": "gpt-4.1"}, {"id": "gpt-4o"}]}))
    model = make_model("openai:gpt-4.2", env=provider_env(sse_server))
    with pytest.raises(ModelConfigError, match=r"^openai: unknown model 'gpt-4.2' at .*did you "
                                               r"mean 'gpt-4.1'\? available: gpt-4.1, gpt-4o$"):
        await preflight(model)
    await model.aclose()


async def test_preflight_ollama_tag_and_pull_hint(sse_server: SSEServer) -> None:
    host = sse_server.base_url.removeprefix("http://")
    listing = Reply.json({"data": [{"id": "qwen2.5-coder:latest"}]})
    sse_server.enqueue("/v1/models", listing, listing)
    good = make_model("ollama:qwen2.5-coder", env={"OLLAMA_HOST": host})
    await preflight(good)
    await good.aclose()
    bad = make_model("ollama:llama3", env={"OLLAMA_HOST": host})
    with pytest.raises(ModelConfigError, match="pull it with `ollama pull`"):
        await preflight(bad)
    await bad.aclose()


async def test_preflight_rejected_key(sse_server: SSEServer) -> None:
    sse_server.enqueue("/v1/models", Reply.error(401, "invalid x-api-key"))
    model = make_model("anthropic:claude-sonnet-4-5", env=provider_env(sse_server))
    with pytest.raises(ModelConfigError, match=r"rejected .*set ANTHROPIC_API_KEY to a valid key"):
        await preflight(model)
    await model.aclose()


async def test_preflight_tolerates_servers_without_a_model_list(sse_server: SSEServer) -> None:
    model = make_model("openai:local-model", env=provider_env(sse_server))
    await preflight(model)  # nothing queued: the server answers 404, which still proves it is up
    await model.aclose()
    assert sse_server.requests[0].path == "/v1/models"


async def test_preflight_of_the_scripted_model_does_nothing(turns: Path) -> None:
    await preflight(make_model(None, turns_path=turns, env={}))


@pytest.mark.anyio
async def test_a_closed_provider_client_is_rebuilt_for_the_next_step(
        sse_server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker keeps a run's parts between steps and each step closes the model client: the
    next step must get a new client that answers, not the closed one."""
    from engine.actions.registry import ACTIONS
    from engine.session.compose import build_services
    from engine.store.sqlite import SqliteStore
    from engine.validation import load_machine

    for key, value in provider_env(sse_server).items():
        monkeypatch.setenv(key, value)
    machine = load_machine(Path(__file__).resolve().parent.parent / "machines" /
                           "coding_agent.yaml", ACTIONS)
    store = SqliteStore(tmp_path / "e.db")
    try:
        parts = build_services({"model": "openai:gpt-test"}, machine, store, tmp_path,
                               lambda kind, payload: None, None)
        first = parts.models.get()
        await first.aclose()
        parts.models.forget()
        second = parts.models.get()
        assert second is not first and second.model == "gpt-test"
        sse_server.enqueue(PATHS["openai"], Reply.stream("openai_text"))
        turn = await collect_turn(second.stream([Message("user", "hi")], [], ModelParams()))
        assert turn.message.content
        await second.aclose()
    finally:
        store.close()
