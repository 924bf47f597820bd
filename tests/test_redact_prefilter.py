"""The redactor's pattern prefilters change what is scanned, never the result: on thousands of
generated texts (prose, code, JSON, search results, every credential shape, long tokens, secret
key names in any case, non-ASCII) it gives exactly what running every pattern gives."""

from __future__ import annotations

import random

from engine.tracing import redact as r


def every_pattern(text: str, env_secrets: list[str]) -> str:
    """The redaction with no prefilter: every pattern over every text."""
    for secret in env_secrets:
        if secret in text:
            text = text.replace(secret, r.MASK)
    text = r._SHAPES.sub(r.MASK, text)
    text = r._BEARER.sub(lambda m: f"{m[1]}{m[2]}{r.MASK}", text)
    if "=" not in text and ":" not in text:
        return text
    return r._mask_pairs(text)


PIECES = [
    "the", "runner", "checks", "a", "state", "Turn 12:", "file.py:12:", "x = 1", "é", "→", "日本",
    "sk-ant-abcdefgh12", "sk-proj-ABCDEFGHIJKLMNOPqrst", "ghp_" + "a1B2" * 6,
    "github_pat_" + "Z9" * 11, "AKIAABCDEFGHIJKLMNOP", "xoxb-1234567890ab", "AIza" + "q" * 35,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijkl", "Bearer abcdefghijklmnop",
    "basic QWxhZGRpbjpvcGVu", "BEARER", "api_key=hunter22", "API-KEY: s3cr3tvalue",
    '"token": "abc123xyz"', "password=pw", "Pwd: longenough", "auth=Zm9vYmFy", "Cookie: a=b",
    "x-api-key: 0123456789", "commit=" + "ab" * 20, "sha256: " + "0f" * 32,
    "value=" + "aB3dE6gH9jK2" * 3, "name=getHTTPResponseCodeFromServerNow",
    "id=" + "QwErTyZxCvBnMlKj" * 2, "=", ":", ",", ";", "}", "]", "'", '"', "&", "\n", "  ",
    "secret_key = 'topsecretvalue'", "private-key:abcd", "credentials=abcd", "tokenizer",
    "keyboard", "passage", "author", "a" * 31, "b" * 32, "c" * 13, "d" * 12,
    "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6", "ENV_SECRET_VALUE", "+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/",
    "İİ", "ẞ", "the password", "a token", "KEY",
]


def test_prefilters_never_change_the_result() -> None:
    rng = random.Random(19)
    env = ["ENV_SECRET_VALUE", "hunter22"]
    redactor = r.Redactor(env)
    for _ in range(4000):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 14))]
        text = rng.choice(["", " ", "\n", "=", ":", "_", "-"]).join(parts)
        if rng.random() < 0.2:
            text = text.upper() if rng.random() < 0.5 else text.lower()
        assert redactor._redact(text) == every_pattern(text, env), text


def test_prose_and_plain_files_are_left_as_they_are() -> None:
    redactor = r.Redactor([])
    prose = "Turn 3: the runner checks each state before moving on. " * 20
    assert redactor._redact(prose) == prose
    assert redactor._redact("token: " + "aB3dE6gH9jK2" * 3) == "token: " + r.MASK


def test_a_key_word_is_looked_for_only_where_a_key_can_be() -> None:
    """Secret words after the last separator name no key; before it they still do, also when
    lower-casing changes the length of the text before them."""
    redactor = r.Redactor([])
    after = "Turn 3: the runner then reads the password file and the api token"
    assert redactor._redact(after) == after == every_pattern(after, [])
    before = "İİ note: the api_key=hunter22 then stop"
    assert redactor._redact(before) == every_pattern(before, []) != before
    assert r.MASK in redactor._redact(before)
