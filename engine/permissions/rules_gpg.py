"""Rules for GnuPG (``gpg``, ``gpg2``): the key and signature tool of the user's keyring.

What ``gpg`` does is chosen by one command option. Some only parse the files they are given
and print (``--list-packets``, ``--show-keys``, ``--print-md``): reads of those files. Most
use the keyring in the user's home (``~/.gnupg``): listing keys or checking a signature reads
it (outside the workspace: a person sees it first), decrypting uses a secret key and prints
what it protects, deleting keys destroys what may exist nowhere else. Signing, encrypting,
importing, fetching and editing write files or the keyring: asked.
"""

from __future__ import annotations

from engine.permissions.effect import Effect, Rule, prog
from engine.permissions.words import Word

_F = frozenset
_FILES_ONLY = _F({"--list-packets", "--show-keys", "--print-md", "--print-mds",
                  "--dump-options", "--version", "--help", "-h", "--list-config"})
"""Commands that parse the files given (or print about gpg itself): no key is used."""
_KEYRING_READS = _F({"--list-keys", "-k", "--list-public-keys", "--fingerprint",
                     "--list-sigs", "--check-sigs", "--verify", "--verify-files",
                     "--list-secret-keys", "-K", "--export", "--armor-export"})
_SECRETS = _F({"--decrypt", "-d", "--decrypt-files", "--export-secret-keys",
               "--export-secret-subkeys", "--export-ssh-key"})
_DELETES = _F({"--delete-keys", "--delete-key", "--delete-secret-keys", "--delete-secret-key",
               "--delete-secret-and-public-key", "--delete-secret-and-public-keys"})
_QUIET = _F({"--batch", "--yes", "--quiet", "-q", "-v", "--verbose", "--no-tty",
             "--with-fingerprint", "--with-colons", "--with-subkey-fingerprint",
             "--with-keygrip", "--keyid-format", "--import-options", "--list-options",
             "--verify-options", "--armor", "-a", "--status-fd", "--logger-fd"})
_VALUES = _F({"--keyid-format", "--import-options", "--list-options", "--verify-options",
              "--status-fd", "--logger-fd", "--print-md"})
"""Options whose value is the next word (a format, a descriptor, a digest's name)."""
KEYRING = "~/.gnupg"


def _gpg(e: Effect, args: list[Word]) -> None:
    words = [w.value for w in args]
    commands = [w for w in words if w is not None and (w in _FILES_ONLY | _KEYRING_READS |
                                                      _SECRETS | _DELETES)]
    if any(w in _DELETES for w in commands):
        e.add("destructive", f"{prog(e)} deletes keys from the user's keyring (a secret key "
                             "may exist nowhere else)")
        return
    if any(w in _SECRETS for w in commands):
        e.add("exec", f"{prog(e)} uses a secret key of the user's")
        e.secret = f"{prog(e)} decrypts or exports what the user's secret keys protect"
        return
    if None in words or not commands or not _only_known(words):
        e.add("exec", f"{prog(e)} signs, encrypts, imports, fetches or changes the keyring")
        return
    files = [a for i, a in enumerate(args) if not (a.value or "-").startswith("-") and not (
        i and args[i - 1].value in _VALUES)]
    e.reads.extend(files)
    if any(w in _KEYRING_READS for w in commands):
        e.reads.append(Word.of(KEYRING))  # the user's keys: outside the workspace


def _only_known(words: list[str | None]) -> bool:
    """Every option is a command or a setting that changes only what is printed; one that
    writes (``--output``), reaches a key server or loads a module is not among them."""
    known = _FILES_ONLY | _KEYRING_READS | _QUIET
    return all(w is not None and (not w.startswith("-") or w in known or
                                  w.split("=")[0] in known) for w in words)


RULES: dict[str, Rule] = {"gpg": _gpg, "gpg2": _gpg}
