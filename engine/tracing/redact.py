"""Secret redaction: what a trace must never contain, removed from any JSON-like value.

Applied to every argument, output and model text that reaches a trace (JSON, text timeline,
OTLP). Three sources of secrets: well-known credential shapes (``sk-...``, ``sk-ant-...``,
``ghp_...``, ``AKIA...``, ``xoxb-...``, bearer tokens, a URL's password, a private key: shared
with the sandbox in ``engine.vocabulary.secrets``), ``key=value`` pairs whose key names a
secret or whose value looks like a long random token, and the current values of environment
variables named like secrets (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from engine.vocabulary.secrets import CREDENTIAL_SHAPES, URL_PASSWORD

MASK = "[REDACTED]"

SECRET_ENV_NAME = re.compile(
    r"(?i)(_API_KEY|_APIKEY|_ACCESS_KEY|_SECRET_KEY|_PRIVATE_KEY|_TOKEN|_SECRET|PASSWORD|PASSWD"
    r"|^API_KEY$|^TOKEN$|^SECRET$)")
"""Environment variable names whose values are secrets wherever they appear. Narrower on purpose
than ``engine.sandbox.env.is_secret_name`` (what a sandboxed command does not inherit, e.g. every
``OPENAI_*``): a value masked here is masked in every string of a trace, so ``OPENAI_MODEL=gpt-4.1``
must not turn the model's name into ``[REDACTED]``."""

MIN_ENV_SECRET_LEN = 6
"""Shorter values (``1``, ``true``) would redact ordinary text; they are not treated as secrets."""

_SECRET_WORD = (r"(?:api[_-]?key|apikey|access[_-]?key|secret|secret[_-]?key|token|passwd|password"
                r"|pwd|private[_-]?key|credentials?|auth)")
SECRET_KEY_NAME = re.compile(rf"(?i)(?:^|[_.\-]){_SECRET_WORD}$|^{_SECRET_WORD}$|^authorization$"
                             r"|^cookie$|^x-api-key$|password")
"""Mapping keys (tool arguments, headers) whose string values are redacted whole."""

_HASH_KEY = re.compile(r"(?i)(hash|sha|digest|checksum|commit|etag|integrity|^rev$)")

_SHAPES = CREDENTIAL_SHAPES
_KEY_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE "
                        r"KEY-----|\Z)", re.S)
"""A private key's armour and what it holds (to its end, or the text's)."""
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=\-]{12,})")
_KEY_VALUE = re.compile(
    r"""(?x)
    (?<![A-Za-z0-9_.\-])[0-9.\-]*+          # from the start of a run of key characters
    (?P<key>[A-Za-z_][A-Za-z0-9_.\-]*+)     # a key: its first letter to the end of the run
    (?P<sep>\s*[=:]\s*|["']\s*:\s*)        # = or : (also "key": in JSON, 'key': in Python)
    (?P<quote>["']?)
    (?P<value>(?!(?i:\[REDACTED\]))[^\s"'&,;}\]]+)
    """)
"""A ``key=value`` pair; the match begins at the first letter of a run of key characters.
Tried only where such a run starts and never backtracking into the key (every start inside one
run reaches the same separator, so the first letter is the only start that can match): the
same pairs as a plain search, found without the quadratic retries over long text."""
_TRAILING = ".:!?)"
"""Punctuation that ends a sentence after a value, not part of it."""
_HEX_TOKEN = re.compile(r"[0-9a-fA-F]{32,}")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_DIGIT_SWITCH = re.compile(r"(?<=[A-Za-z])[0-9]|(?<=[0-9])[A-Za-z]")
MIN_DIGIT_SWITCHES = 4
"""Letters and digits alternating this often make a long value a generated token
(``aB3dE6gH9...``); identifiers keep digits in one or two groups (``test_sha256_of_utf8``)."""
_CASE_SWITCH = re.compile(r"(?<=[a-z])[A-Z]")
MIN_CASE_SWITCHES = 4
MAX_VOWEL_SHARE = 0.25
"""A long value without such digits is a token when its case changes as often and this few of
its letters are vowels: names have about 40% (``getHTTPResponseCode``), random letters 20%."""


_ATOMS = frozenset({int, float, bool, type(None)})
"""Exact types that carry no text: returned as they are."""


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named environment variables, longest first (so overlaps mask fully)."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if SECRET_ENV_NAME.search(k) and
              len(v) >= MIN_ENV_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


class Redactor:
    """Redacts one value tree against a fixed set of environment secrets."""

    def __init__(self, env_secrets: list[str]) -> None:
        self.env_secrets = env_secrets
        self._seen: dict[str, str] = {}
        """Texts already redacted: a trace repeats arguments in several events."""
        self._secret_keys: dict[str, bool] = {}
        """Key names already judged: a trace repeats the same few keys in every span."""

    def value(self, value: Any, key: str | None = None) -> Any:
        """``value`` with secrets masked; mappings and lists are rebuilt, never mutated.

        Exact built-in types are dispatched on ``type()`` first (a trace is thousands of
        small dicts); anything else goes through the ``Mapping``/sequence checks."""
        kind = type(value)
        if kind is str:
            if key is not None and value and self.secret_key(key):
                return MASK
            return self.text(value)
        if kind is dict:
            return self._mapping(value)
        if kind is list or kind is tuple:
            return [self.value(v) for v in value]
        if kind in _ATOMS:
            return value
        if isinstance(value, str):
            return self.value(str(value), key)
        if isinstance(value, Mapping):
            return self._mapping(value)
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def _mapping(self, mapping: Mapping[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in mapping.items():
            kind = type(v)
            if kind in _ATOMS:
                out[k] = v
            elif kind is str:
                out[k] = MASK if v and self.secret_key(str(k)) else self.text(v)
            else:
                out[k] = self.value(v, str(k))
        return out

    def secret_key(self, key: str) -> bool:
        """Whether values under ``key`` are secrets whole (``SECRET_KEY_NAME``), memoised."""
        named = self._secret_keys.get(key)
        if named is None:
            named = self._secret_keys[key] = SECRET_KEY_NAME.search(key) is not None
        return named

    def text(self, text: str) -> str:
        """``text`` with every known secret shape and environment secret masked."""
        done = self._seen.get(text)
        if done is None:
            done = self._seen[text] = self._redact(text)
        return done

    def _redact(self, text: str) -> str:
        """Each pattern runs only where the text holds what a match of it must contain (a
        run of token characters long enough, a word): the same result, without scanning most
        text (a model's prose, a file) with every pattern."""
        for secret in self.env_secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        runs = _token_runs(text)
        shaped = _SHAPE_RUN in runs
        if shaped:
            text = _SHAPES.sub(MASK, text)
        if "://" in text:  # postgres://app:PASSWORD@db/x
            text = URL_PASSWORD.sub(lambda m: m[0][:m[0].rindex(":") + 1] + MASK + "@", text)
        if "PRIVATE KEY-----" in text:
            text = _KEY_BLOCK.sub(MASK, text)
        lowered = text.lower()
        if "bearer" in lowered or "basic" in lowered:
            text = _BEARER.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
        if "=" not in text and ":" not in text:
            return text
        # A random value is a longer run than any shape; a key comes before its separator,
        # so a key word is looked for only up to the last one (in prose, often a few words).
        keys = lowered[:max(lowered.rfind("="), lowered.rfind(":"))]
        if not (shaped and _RANDOM_RUN in runs) and not any(
                w in keys for w in _SECRET_KEY_WORDS):
            return text  # no key names a secret and no value can look random
        return _mask_pairs(text)


_TOKEN_BYTES = bytes(ord("a") if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/_-")
                     else ord(" ") for b in range(256))


def _token_runs(text: str) -> bytes:
    """``text`` with each token character (``_LONG_TOKEN``'s class) as ``a``, others blank."""
    return text.encode("utf-8", "surrogatepass").translate(_TOKEN_BYTES)


_SHAPE_RUN = b"a" * 13
"""Every credential shape in ``_SHAPES`` is at least 13 token characters in a row (a JWT's
first part: ``eyJ`` and 10 more)."""
_RANDOM_RUN = b"a" * 32
"""A value that ``looks_random`` is at least 32 token characters in a row."""
_SECRET_KEY_WORDS = ("key", "secret", "token", "pass", "pwd", "credential", "auth", "cookie")
"""What a key that ``SECRET_KEY_NAME`` matches contains (lower case)."""


def _mask_pairs(text: str) -> str:
    """Every secret ``key=value`` pair masked; a pair that is not a secret is searched again
    from its value, so prefixes such as ``file.py:12:`` (search results) hide nothing."""
    out: list[str] = []
    pos = last = 0
    while (m := _KEY_VALUE.search(text, pos)) is not None:
        masked = _mask_pair(m)
        if masked is None:
            pos = m.start("value")
            continue
        out += (text[last:m.start("key")], masked)
        pos = last = m.end()
    out.append(text[last:])
    return "".join(out)


def _mask_pair(m: re.Match[str]) -> str | None:
    key = m["key"]
    value = m["value"].rstrip(_TRAILING)  # "...SALT=abc: rotate it" ends the value at "abc"
    if value.lower() in ("bearer", "basic"):
        return None
    named = SECRET_KEY_NAME.search(key) is not None and len(value) >= 4
    if named or (looks_random(value) and not _HASH_KEY.search(key)):
        return f"{key}{m['sep']}{m['quote']}{MASK}{m['value'][len(value):]}"
    return None


def looks_random(value: str) -> bool:
    """Whether ``value`` looks like a generated token rather than a name: 32+ hex digits, or
    32+ token characters with letters and digits interleaved, or with case changes and few
    vowels."""
    if _HEX_TOKEN.fullmatch(value):
        return True
    if not _LONG_TOKEN.fullmatch(value):
        return False
    if len(_DIGIT_SWITCH.findall(value)) >= MIN_DIGIT_SWITCHES:
        return True
    if len(_CASE_SWITCH.findall(value)) < MIN_CASE_SWITCHES:
        return False
    letters = [c for c in value if c.isalpha()]
    return sum(c in "aeiouAEIOU" for c in letters) < MAX_VOWEL_SHARE * len(letters)


def redactor(environ: Mapping[str, str] | None = None) -> Redactor:
    """A redactor for the current environment (read once; reuse it for a whole trace)."""
    return Redactor(secret_env_values(environ))


def redact(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """``value`` (a string or a JSON-like tree) with API keys and secret env values masked."""
    return redactor(environ).value(value)
