"""What a credential looks like inside a value, whatever the name that holds it.

Two readers: the sandbox (a variable whose value holds one is not handed to commands, named
like a secret or not: ``REDIS_URL=redis://:pass@host``) and the traces (every such shape is
redacted). The shapes are those tokens are made to be found by (``ghp_``, ``sk-``, ``AKIA``,
...), a password written into a URL, and a private key's armour.
"""

from __future__ import annotations

import functools
import re

CREDENTIAL_SHAPES = re.compile("|".join([
    r"\bsk-ant-[A-Za-z0-9_\-]{8,}",                         # Anthropic
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",    # OpenAI and alikes
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",           # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",                        # AWS access key ids
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",                     # Slack
    r"\bAIza[0-9A-Za-z_\-]{35}\b",                           # Google API keys
    r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",  # JWT
]))
"""Tokens with a shape of their own (prefixes their issuers chose so they can be found)."""
URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]+@")
"""A URL with a password in it: ``postgres://app:pw@db/x``, ``redis://:pw@cache``."""
PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")


@functools.lru_cache(maxsize=4096)
def holds_credential(value: str) -> bool:
    """Whether ``value`` holds a token of a known shape, a URL's password or a private key.
    Remembered: every command of a run is handed the same environment."""
    return bool(CREDENTIAL_SHAPES.search(value) or URL_PASSWORD.search(value)
                or PRIVATE_KEY.search(value))
