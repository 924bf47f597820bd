"""The model factory: turns a spec such as ``openai:gpt-4.1-mini`` into a ready ``ModelClient``.

Every configuration mistake (unknown provider, missing key, empty model name, unreachable
server, unknown model) is one ``ModelConfigError`` line, raised before a run starts.
``resolve_model_spec`` decides which spec wins: the ``--model`` flag, then ``ENGINE_MODEL``,
then the machine YAML's ``model:``. ``check_options`` refuses model settings a provider cannot
honour, before a run starts.

The HTTP providers' modules are imported when a run uses one: with them comes ``httpx``, which
imports its command-line tool's rich, click and pygments, a tenth of a second of every start-up
that an offline run (the scripted model) never needs.
"""

from __future__ import annotations

import difflib
import ipaddress
import logging
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.models.base import ModelClient
from engine.models.options import to_params
from engine.providers.retry import RetryPolicy
from engine.providers.scripted import ScriptedModel, load_turns
from engine.vocabulary.errors import ModelConfigError

if TYPE_CHECKING:
    from engine.providers.http import Timeouts

logger = logging.getLogger(__name__)

PROVIDERS = ("openai", "anthropic", "ollama", "scripted")
MODEL_ENV = "ENGINE_MODEL"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
OLLAMA_DEFAULT_PORT = 11434
OPENAI_KEY, ANTHROPIC_KEY = "OPENAI_API_KEY", "ANTHROPIC_API_KEY"

HOW_TO_CONFIGURE = (
    "pass --model PROVIDER:MODEL (openai:gpt-4.1-mini with OPENAI_API_KEY, "
    "anthropic:claude-sonnet-4-5 with ANTHROPIC_API_KEY, or ollama:qwen2.5-coder for a local "
    "Ollama), set `model:` in the machine YAML, or set ENGINE_MODEL"
)
"""The ways to configure a model, quoted by every 'no model' error."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed ``provider:model`` spec (for ``scripted``, ``model`` is the turns file or '')."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider


def resolve_model_spec(
    cli: str | None, machine: str | None, env: Mapping[str, str] = os.environ
) -> str | None:
    """The spec in force: the flag, else ``ENGINE_MODEL``, else the machine's ``model:``."""
    for candidate in (cli, env.get(MODEL_ENV), machine):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


def parse_model_spec(spec: str) -> ModelSpec:
    """Split ``provider:model``; unknown providers and empty model names are refused."""
    provider, _, model = spec.strip().partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if provider not in PROVIDERS:
        raise ModelConfigError(f"unknown model provider {provider!r} in {spec!r}: "
                               f"{_closest(provider, PROVIDERS)}use one of "
                               + ", ".join(f"{p}:<model>" for p in PROVIDERS[:-1])
                               + ", scripted[:PATH]")
    if not model and provider != "scripted":
        raise ModelConfigError(f"model spec {spec!r} names no model: write {provider}:<model>, "
                               f"e.g. {_EXAMPLES[provider]}")
    return ModelSpec(provider, model)


_EXAMPLES = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-sonnet-4-5",
             "ollama": "ollama:qwen2.5-coder"}


def make_model(
    spec: str | None,
    *,
    turns_path: Path | None = None,
    env: Mapping[str, str] = os.environ,
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
) -> ModelClient:
    """A client for ``spec``; with no spec, the scripted model replaying ``turns_path``."""
    parsed = parse_model_spec(spec) if spec else ModelSpec("scripted", "")
    if parsed.provider == "scripted":
        return _scripted(parsed, turns_path)
    return _over_http(parsed, env, timeouts, retry)


def _over_http(parsed: ModelSpec, env: Mapping[str, str], timeouts: Timeouts | None,
               retry: RetryPolicy | None) -> ModelClient:
    """The client of a provider served over HTTP (its modules imported here, on first use)."""
    from engine.providers.anthropic import AnthropicClient, anthropic_headers
    from engine.providers.http import HttpStream
    from engine.providers.openai_compat import OpenAICompatClient

    if parsed.provider == "anthropic":
        token = _env(env, "ANTHROPIC_AUTH_TOKEN")
        key = _env(env, "ANTHROPIC_API_KEY") or (None if token else _key(env, ANTHROPIC_KEY,
                                                                          parsed))
        url = _strip_v1(_base_url(env, "ANTHROPIC_BASE_URL", ANTHROPIC_DEFAULT_URL))
        key_env = ANTHROPIC_KEY if key else "ANTHROPIC_AUTH_TOKEN"
        http = HttpStream("anthropic", url, anthropic_headers(key, token), key_env=key_env,
                          timeouts=timeouts)
        return AnthropicClient(parsed.model, http, retry=retry)
    if parsed.provider == "ollama":
        http = HttpStream("ollama", ollama_base_url(env), {}, timeouts=timeouts)
        return OpenAICompatClient(parsed.model, http, provider="ollama", retry=retry,
                                  max_tokens_field="max_tokens")
    url = _base_url(env, "OPENAI_BASE_URL", OPENAI_DEFAULT_URL)
    key = _env(env, OPENAI_KEY) or (None if is_local(url) else _key(env, OPENAI_KEY, parsed))
    http = HttpStream("openai", url, openai_headers(key, env), key_env=OPENAI_KEY,
                      timeouts=timeouts)
    return OpenAICompatClient(parsed.model, http, retry=retry)



def check_options(provider: str, layers: Iterable[Mapping[str, Any]]) -> None:
    """Refuse, before a run, settings ``provider`` cannot honour (``ModelConfigError``)."""
    if provider != "anthropic":
        return
    from engine.providers.anthropic import check_anthropic_options

    for options in layers:
        check_anthropic_options(to_params(options))

def openai_headers(key: str | None, env: Mapping[str, str]) -> dict[str, str]:
    """Bearer key (none for a keyless local server), plus ``OPENAI_ORG_ID`` and
    ``OPENAI_PROJECT_ID`` as the ``OpenAI-Organization`` and ``OpenAI-Project`` headers."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    for name, header in (("OPENAI_ORG_ID", "openai-organization"),
                         ("OPENAI_PROJECT_ID", "openai-project")):
        value = _env(env, name)
        if value:
            headers[header] = value
    return headers


def is_local(url: str) -> bool:
    """Whether ``url`` names this machine (vLLM, llama.cpp, LM Studio serve there keyless)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def preflight(client: ModelClient) -> None:
    """Check, before a run, that the server answers and (if it lists models) knows the model."""
    if client.provider == "scripted":
        return  # nothing to ask (and the HTTP clients' modules stay unimported)
    from engine.providers.anthropic import AnthropicClient
    from engine.providers.openai_compat import OpenAICompatClient

    if not isinstance(client, OpenAICompatClient | AnthropicClient):
        return
    status, body = await client.http.probe(client.models_path)
    if status == 401:
        env = client.http.key_env or "the API key"
        raise ModelConfigError(f"{client.provider}: the API key was rejected (HTTP 401): "
                               f"set {env} to a valid key")
    if status != 200:
        logger.debug("%s: model list not available (HTTP %s)", client.provider, status)
        return
    ids = _model_ids(body)
    if ids and not any(_same_model(client.model, i) for i in ids):
        hint = " (pull it with `ollama pull`)" if client.provider == "ollama" else ""
        raise ModelConfigError(
            f"{client.provider}: unknown model {client.model!r} at {client.http.base_url}{hint}; "
            f"{_closest(client.model, ids)}available: {', '.join(sorted(ids)[:12])}"
        )


def ollama_base_url(env: Mapping[str, str]) -> str:
    """The OpenAI-compatible URL of Ollama from ``OLLAMA_HOST`` (``host``, ``host:port``, URL)."""
    raw = (env.get("OLLAMA_HOST") or "").strip()
    if not raw:
        return f"http://127.0.0.1:{OLLAMA_DEFAULT_PORT}/v1"
    parts = urllib.parse.urlsplit(raw if "://" in raw else f"http://{raw}")
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::"):  # a bind-everything address: connect locally
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    port = parts.port or (OLLAMA_DEFAULT_PORT if parts.scheme == "http" else None)
    netloc = f"{host}:{port}" if port else host
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}/v1"


def _scripted(spec: ModelSpec, turns_path: Path | None) -> ModelClient:
    path = Path(spec.model) if spec.model else turns_path
    if path is None:
        raise ModelConfigError(f"no model configured: {HOW_TO_CONFIGURE} "
                               "(the scripted model needs a task with turns.yaml)")
    return ScriptedModel(load_turns(path))


def _env(env: Mapping[str, str], name: str) -> str | None:
    return (env.get(name) or "").strip() or None


def _key(env: Mapping[str, str], name: str, spec: ModelSpec) -> str:
    key = _env(env, name)
    if not key:
        also = " or ANTHROPIC_AUTH_TOKEN" if name == ANTHROPIC_KEY else ""
        raise ModelConfigError(f"{spec} needs an API key: set {name}{also} (a server on this "
                               "machine, e.g. OPENAI_BASE_URL=http://127.0.0.1:8000/v1, needs "
                               "none; or use --model ollama:<model> for a local model)")
    return key


def _base_url(env: Mapping[str, str], name: str, default: str) -> str:
    url = (env.get(name) or "").strip() or default
    if not url.startswith(("http://", "https://")):
        raise ModelConfigError(f"{name}={url!r} is not a URL: it must start with http:// or "
                               "https://")
    return url


def _strip_v1(url: str) -> str:
    """``ANTHROPIC_BASE_URL`` is the host (paths start with /v1); forgive a trailing ``/v1``."""
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def _model_ids(body: Any) -> list[str]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return []
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def _same_model(wanted: str, listed: str) -> bool:
    """Equal, equal but for Ollama's ``:latest`` tag, or ``listed`` is a dated snapshot."""
    wanted, listed = wanted.removesuffix(":latest"), listed.removesuffix(":latest")
    return listed == wanted or listed.startswith(wanted.removesuffix("-latest") + "-")


def _closest(word: str, options: Any) -> str:
    match = difflib.get_close_matches(word, list(options), n=1)
    return f"did you mean {match[0]!r}? " if match else ""
