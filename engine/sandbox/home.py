"""People's home folders inside the sandbox: hidden whole, with what commands need shown.

Masking a list of secret folders leaves every file nobody listed readable: a token in
``~/.config/some-app``, the shell's history, another user's checkout. So each home folder
(``HOME_FOLDERS``, ``$HOME``, the homes of accounts one can log in as, and the folders the
``XDG_*_HOME`` variables move the user's own files to) is an empty read-only folder inside the
sandbox, and only what
commands need is bound back read-only: the workspace (writable), the folders on ``PATH`` and
the installations their programs link to, the engine's own installation, git's own
configuration, the toolchains and package caches of ``TOOLCHAINS`` that exist, and
``sandbox.readable``. What nobody named stays hidden; ``readable: ["~"]`` shows the home again
(its ``HOME_SECRETS`` still masked).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Mapping, Sequence

HOME_FOLDERS: tuple[str, ...] = ("/root", "/home", "/Users")
"""Where people's own folders are: what lies below them (and below ``$HOME``) is theirs."""
SYSTEM_FOLDERS = frozenset({"/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                            "/opt", "/var", "/srv", "/nix", "/proc", "/dev", "/sys", "/run"})
"""Never hidden, whatever ``$HOME`` says (a service account's home may be ``/`` or ``/var``)."""
SHARED_FOLDERS = frozenset({"/var/lib", "/var/cache", "/var/log", "/var/spool", "/var/tmp",
                            "/var/local", "/var/opt", "/var/empty", "/var/db", "/var/mail",
                            "/usr/local", "/mnt", "/media", "/data", "/home", "/Users"})
"""Folders every account shares (a home given as one of them is not hidden whole)."""
SYSTEM_TREES: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc",
                                 "/dev", "/proc", "/sys", "/run", "/var/run", "/var/lock",
                                 "/boot", "/nix", "/tmp")
"""Never hidden, nor anything below them, whichever account names them as its home."""
NO_LOGIN = frozenset({"nologin", "false", "sync", "halt", "shutdown", ""})
"""Login shells of accounts no one logs in as (a daemon's)."""
PEOPLE_UIDS = 1000
"""Accounts from this uid up are people's, whatever their shell."""
XDG_HIDDEN = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
"""Variables that move the user's own folders out of ``$HOME`` (a cache holds sessions and
tokens too; the package caches of ``TOOLCHAINS`` in it are shown: ``XDG_MOVES``)."""
TOOLCHAINS: tuple[str, ...] = (
    ".config/git/ignore", ".config/git/attributes", ".local/bin", ".local/lib", ".local/share/uv",
    ".local/share/pipx",
    ".local/pipx", ".local/share/pnpm", ".pyenv", ".rbenv", ".nvm", ".volta", ".asdf", ".bun",
    ".deno", ".cargo/bin", ".cargo/registry", ".cargo/git", ".rustup", "go/bin", "go/pkg/mod",
    ".sdkman", ".jdks", ".m2/repository", ".gradle/caches", ".gradle/wrapper", ".dotnet/tools",
    ".nuget/packages", ".gem", ".ghcup", ".cabal/bin", ".cabal/packages", ".cabal/store", ".opam",
    ".elan", ".julia", ".conda", "miniconda3", "anaconda3", "miniforge3", "mambaforge", ".pixi",
    ".npm/_cacache", ".npm/_npx", ".yarn/berry/cache", ".cache/pip", ".cache/uv", ".cache/go-build",
    ".cache/pre-commit", ".cache/ms-playwright", ".cache/yarn", ".cache/pnpm", ".cache/node-gyp",
    ".cache/bazel",
    ".editorconfig", ".config/ruff", ".config/black", ".config/flake8", ".config/pycodestyle",
    ".config/mypy", ".config/yapf", ".pylintrc", ".config/pylintrc", ".clang-format",
    ".config/rustfmt", ".rustfmt.toml", ".prettierrc", ".prettierrc.json", ".prettierrc.yaml",
)
"""Below ``$HOME``: shown read-only where they exist. Git's global ignore and attributes
files (its configuration is a filtered copy: ``usergit``), language toolchains, the
package caches an offline build reads, and linters' and formatters' own settings (so a check
gives the answer it gives outside); not the folders
that also keep credentials or keys (``.cabal/config``, ``.dotnet/corefx``' certificate
stores), and ``HOME_SECRETS`` masks those inside what is shown (``.gem/credentials``)."""
SHEBANG_BYTES = 256
"""How much of a script is read for its ``#!`` line."""


def hidden_homes(home: str | None, env: Mapping[str, str] | None = None
                 ) -> tuple[str, ...]:
    """The home folders to hide, resolved and existing, outermost only: ``HOME_FOLDERS``,
    ``$HOME``, the home of every account one can log in as (``account_homes``) and the
    user's own configuration, data and state folders where ``XDG_*_HOME`` moves them
    (``xdg_folders``), except system folders. A ``$HOME`` under ``/tmp`` is one too: the
    private ``/tmp`` would leave no folder there, and ``cd ~`` or a tool that looks for its
    configuration should find an empty one, as in ``/root``."""
    found: list[str] = []
    for path in (*HOME_FOLDERS, home or ""):
        if not path or not os.path.isabs(path):
            continue
        real = os.path.realpath(path)
        if real in SYSTEM_FOLDERS or real == "/tmp" or not os.path.isdir(real):
            continue
        found.append(real)
    for path in (*account_homes(), *xdg_folders(env or {})):
        real = os.path.realpath(path)
        if not _shared(real) and os.path.isdir(real):
            found.append(real)
    return tuple(outermost(found))


def account_homes() -> list[str]:
    """The homes ``/etc/passwd`` gives accounts one can log in as (a person's, or a service's
    such as ``postgres`` in ``/var/lib/postgresql``: its database files, its dumps). A
    daemon's (``nologin``) is its state folder, which programs here may need
    (``/var/lib/sss`` answers user lookups): not hidden."""
    try:
        entries = pwd.getpwall()
    except OSError:
        return []
    return [e.pw_dir for e in entries if e.pw_dir and os.path.isabs(e.pw_dir) and (
        e.pw_uid >= PEOPLE_UIDS or os.path.basename(e.pw_shell or "") not in NO_LOGIN)]


def xdg_folders(env: Mapping[str, str]) -> list[str]:
    """Where ``XDG_CONFIG_HOME``, ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` and ``XDG_CACHE_HOME``
    put the user's own settings, data, state and caches (tokens, keyrings, histories,
    sessions), when they name a folder."""
    return [v for k in XDG_HIDDEN if (v := env.get(k, "")) and os.path.isabs(v)]


def _shared(path: str) -> bool:
    """A folder of the system's, or one shared by every account: never hidden whole."""
    return path in SYSTEM_FOLDERS or path in SHARED_FOLDERS or any(
        under(path, f) for f in SYSTEM_TREES)


def shown(home: str | None, path_dirs: Sequence[str], homes: Sequence[str],
          env: Mapping[str, str] | None = None) -> list[str]:
    """What of the hidden homes commands see read-only besides ``sandbox.readable`` and ``PATH``
    itself: ``TOOLCHAINS`` below ``$HOME`` (or where ``XDG_*_HOME`` moves them), the
    installations programs on ``PATH`` link to, and those the ``#!`` lines of its scripts
    (and of those programs) name."""
    out: list[str] = []
    own = os.path.realpath(home) if home and os.path.isabs(home) else None
    if home and own:
        places = [p for p in toolchain_places(home, env or {}) if os.path.lexists(p[1])]
        found = [os.path.realpath(path) for _, path in places]
        out += [p for p in found if not is_whole_home(p, own)]  # ~/.pyenv -> ~ shows nothing
    hidden = (*homes, "/tmp")
    listing = _listing(path_dirs)
    programs = linked_programs(listing, hidden)
    for script in (*programs, *_scripts(listing, hidden)):
        given = interpreter(script)  # #!~/tools/py/bin/python: the path as written, resolved
        if given is not None:
            programs += [p for p in (given, os.path.realpath(given))
                         if any(under(p, h) for h in hidden) and os.path.exists(p)]
    for program in dict.fromkeys(programs):
        wide = installation_of(program)
        for folder in (wide, os.path.dirname(program)):  # ~/bin/x: ~/bin, never ~
            if not is_whole_home(folder, own):
                out.append(folder)
                break
    return list(dict.fromkeys(out))


XDG_MOVES = (("XDG_CONFIG_HOME", ".config/"), ("XDG_DATA_HOME", ".local/share/"),
             ("XDG_CACHE_HOME", ".cache/"))
"""Which part of ``TOOLCHAINS`` each variable moves out of ``$HOME`` (git reads
``$XDG_CONFIG_HOME/git``, uv keeps its tools in ``$XDG_DATA_HOME/uv``)."""


def toolchain_places(home: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Each ``TOOLCHAINS`` entry with the path it has here: below ``$HOME``, and also below the
    folder an ``XDG_*_HOME`` variable names for those it moves."""
    out = [(rel, os.path.join(home, rel)) for rel in TOOLCHAINS]
    for var, prefix in XDG_MOVES:
        base = env.get(var, "")
        if base and os.path.isabs(base):
            out += [(rel, os.path.join(base, rel[len(prefix):])) for rel in TOOLCHAINS
                    if rel.startswith(prefix)]
    return out
def interpreter(script: str) -> str | None:
    """The absolute interpreter a script's ``#!`` line names (not ``env``'s argument, which
    ``PATH`` finds), or None."""
    try:
        with open(script, "rb") as f:
            head = f.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return None
    return os.fsdecode(words[0])


def _listing(path_dirs: Sequence[str]) -> dict[str, list[os.DirEntry[str]]]:
    """Each ``PATH`` folder's entries, read once (a folder that cannot be read has none)."""
    out: dict[str, list[os.DirEntry[str]]] = {}
    for folder in dict.fromkeys(path_dirs):
        try:
            out[folder] = list(os.scandir(folder))
        except OSError:
            out[folder] = []
    return out


def _scripts(listing: Mapping[str, Sequence[os.DirEntry[str]]], hidden: Sequence[str]
             ) -> list[str]:
    """The files (not links) in ``PATH`` folders that lie in a hidden folder, whose ``#!``
    may name an interpreter there (``pip install --user`` writes ``~/.local/bin/tool``)."""
    return [e.path for folder, entries in listing.items()
            if any(under(folder, h) for h in hidden)
            for e in entries if not e.is_symlink() and e.is_file()]


def is_whole_home(path: str, home: str | None) -> bool:
    """Whether showing ``path`` would show someone's whole home: ``$HOME``, ``/root``, a
    folder of homes, one of the homes in it, or anything above them (a link to ``~/bin/x``
    must not show ``~``, the folder above that ``bin``)."""
    homes = [h for h in (home, *HOME_FOLDERS) if h]
    if any(under(h, path) for h in homes):
        return True
    return os.path.dirname(path) in HOME_FOLDERS[1:]


def linked_programs(listing: Mapping[str, Sequence[os.DirEntry[str]]],
                    hidden: Sequence[str]) -> list[str]:
    """The programs that links in ``PATH`` folders lead to in a hidden folder (``pipx`` and
    ``npm -g`` link ``~/.local/bin/black`` into a virtual environment), resolved. A link
    within the ``PATH`` folders (``rustup``'s proxies in ``~/.cargo/bin``) adds nothing."""
    out: list[str] = []
    for entries in listing.values():
        for entry in entries:
            if not entry.is_symlink() or not _may_lead_into(entry.path, hidden):
                continue
            target = os.path.realpath(entry.path)
            if any(under(target, h) for h in hidden) and os.path.exists(target) \
                    and not any(under(target, f) for f in listing):
                out.append(target)
    return list(dict.fromkeys(out))


def _may_lead_into(link: str, hidden: Sequence[str]) -> bool:
    """Whether a link's own text may lead into a hidden folder: through ``..``, straight
    there, or to another link (``/etc/alternatives/...``). ``python3 -> python3.11`` stays
    beside it; resolving every link of ``/usr/bin`` would cost each run's start for nothing."""
    try:
        text = os.readlink(link)
    except OSError:
        return False
    if not text.startswith("/"):
        return ".." in text
    return any(under(text, h) for h in hidden) or os.path.islink(text)


def installation_of(program: str) -> str:
    """The prefix a program belongs to: above the nearest ``bin`` within three levels
    (``venv/bin/black`` -> ``venv``), else the program's folder."""
    folder = os.path.dirname(program)
    probe = folder
    for _ in range(3):
        if os.path.basename(probe) == "bin":
            return os.path.dirname(probe)
        probe = os.path.dirname(probe)
    return folder


def is_shown(path: str, homes: Sequence[str], visible: Iterable[str]) -> bool:
    """Whether a resolved path is seen inside the sandbox: outside every hidden home, or at or
    below (or above, as a folder on the way) something bound back."""
    if not any(under(path, h) for h in homes):
        return True
    return any(under(path, v) or under(v, path) for v in visible)


def outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` once each, without those below another of them (a bind of ``~/.pyenv``
    covers ``~/.pyenv/shims``)."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(o != p and under(p, o) for o in unique)]


def under(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or lies below it (resolved absolute paths, compared as text)."""
    base = folder.rstrip("/")
    return path in (base, folder) or path.startswith(base + "/")
