"""Secret-looking environment variables: the one list of their names, and the scrubbed environment.

A variable is a secret when a word of its name ends in one of ``SECRET_NAME_PARTS`` (``KEY``,
``TOKEN``, ``SECRET``, ``PASSWORD``, ...), it starts with a provider's prefix (``OPENAI_``,
``ANTHROPIC_``, ``AWS_``, ...), or it is one of ``SECRET_NAMES`` (agent sockets that hand out
keys). Matching is on the upper-cased name: a false positive costs a variable the command may
miss (pass it with ``sandbox: {env: [NAME]}``), a false negative leaks a credential. Whatever
its name, a variable whose value holds a credential (``holds_credential``: a token of a known
shape, a password in a URL, a private key) is not handed on either. Redaction reuses
``is_secret_name``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from engine.vocabulary.secrets import holds_credential

SECRET_NAME_PARTS: tuple[str, ...] = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH",
)
"""A name with a word (between ``_``) ending in one of these, plural or not, is a secret:
``API_KEY``, ``APIKEY``, ``GH_TOKEN``, ``DBPASSWORD``, ``CLIENT_SECRETS``; not ``KEYBOARD`` nor
``TOKENIZERS_PARALLELISM``."""
PROVIDER_PREFIXES: tuple[str, ...] = (
    "OPENAI_", "ANTHROPIC_", "AWS_", "AZURE_", "GEMINI_", "GOOGLE_API", "MISTRAL_", "COHERE_",
    "GROQ_", "DEEPSEEK_", "OPENROUTER_", "TOGETHER_", "VAULT_",
)
"""Model providers' and secret stores' variables: all of them are kept out, whatever the rest
of the name (``OPENAI_BASE_URL`` points the model client somewhere a command need not know)."""
SECRET_NAMES: frozenset[str] = frozenset({
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "NETRC", "DATABASE_URL", "PGPASSFILE",
})
"""Exact names that give access to credentials without naming one."""


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like credentials (remembered: every
    command of a run is handed the same names)."""
    upper = name.upper()
    if upper in SECRET_NAMES or upper.startswith(PROVIDER_PREFIXES):
        return True
    return any(word.endswith(SECRET_NAME_PARTS) or word.removesuffix("S").endswith(
        SECRET_NAME_PARTS) for word in upper.split("_") if word)


def scrub_env(base: Mapping[str, str], extra: Mapping[str, str] | None = None,
              passthrough: Iterable[str] = ()) -> dict[str, str]:
    """``base`` without secret-looking variables, by name or by value (except ``passthrough``
    names), then ``extra`` (values passed on purpose) on top."""
    keep = frozenset(passthrough)
    env = {k: v for k, v in base.items()
           if k in keep or not (is_secret_name(k) or holds_credential(v))}
    env.update(extra or {})
    return env
