"""gpg's commands by what they touch: files given (read), the user's keyring (outside the
workspace: a person first), a secret key (what it protects is printed: a person first), or
keys deleted (refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judged_workspace import committed, decisions

KEY = ("-----BEGIN PGP SIGNATURE-----\n\niHUEABYKAB0WIQQ=\n=abcd\n"
       "-----END PGP SIGNATURE-----\n")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return committed(tmp_path / "ws", {"dist/app.tar.gz.asc": KEY, "KEYS.asc": KEY,
                                        "package.json": "{}\n"})


@pytest.mark.parametrize(("command", "expected"), [
    ("gpg --list-packets dist/app.tar.gz.asc", ("allow", "allow")),
    ("gpg --show-keys --with-fingerprint KEYS.asc", ("allow", "allow")),
    ("gpg --print-md SHA256 package.json", ("allow", "allow")),
    ("gpg --verify dist/app.tar.gz.asc package.json", ("ask", "deny")),  # the keyring
    ("gpg --list-keys", ("ask", "deny")),
    ("gpg --decrypt config/secrets.env.gpg", ("ask", "deny")),  # a secret key's use
    ("gpg --batch --yes --delete-secret-and-public-key 0xDEADBEEF", ("deny", "deny")),
    ("gpg --dearmor KEYS.asc", ("ask", "ask")),  # writes KEYS.asc.gpg
    ("gpg --list-packets -o out.txt KEYS.asc", ("ask", "ask")),
    ("gpg --recv-keys 0xDEADBEEF", ("ask", "ask")), ("gpg --detach-sign package.json",
                                                     ("ask", "ask")),
])
def test_gpg_by_what_it_touches(ws: Path, command: str, expected: tuple[str, str]) -> None:
    assert decisions(ws, command) == expected, command
