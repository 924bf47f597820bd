"""Options a program takes from its environment.

``GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=CMD git status`` is ``git -c
core.fsmonitor=CMD status``; ``LESS='+!CMD' less f`` is ``less '+!CMD' f``; ``PERL5OPT``
holds perl switches, ``TAR_OPTIONS`` tar's, ``MAKEFLAGS`` make's (``--eval``), and
``npm_config_script_shell=CMD`` is npm's ``--script-shell=CMD``. A
prefix assignment (or an earlier ``export``) of such a variable is judged as the options it
becomes, where the program's rule reads them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from engine.permissions.rules_git import config_from_environment
from engine.permissions.words import Word

Environment = Mapping[str, list[str] | None]
"""Variables handed to a command: each one's possible values (None: only known at run
time)."""

_SPLIT_OPTIONS = {"less": ("LESS", True), "perl": ("PERL5OPT", False),
                  "tar": ("TAR_OPTIONS", True), "make": ("MAKEFLAGS", False),
                  "parallel": ("PARALLEL", True), "gzip": ("GZIP", False),
                  "xz": ("XZ_OPT", False), "zip": ("ZIPOPT", False)}
"""Programs that read options from one variable: its name, and whether its words are split
as the shell splits them (quotes, backslashes) rather than at blanks only."""
_OPTION_VARIABLES = frozenset(v for v, _ in _SPLIT_OPTIONS.values())
_NPM = frozenset({"npm", "pnpm", "npx"})


def watched(name: str) -> bool:
    """Whether a variable can become options of some program here."""
    return name.startswith(("GIT_CONFIG", "npm_config_", "NPM_CONFIG_")) or \
        name in _OPTION_VARIABLES


def options_from_environment(program: str, env: Environment) -> list[Word]:
    """The words ``program`` reads from ``env`` as if given before its arguments."""
    if program == "git":
        return [w for pair in config_from_environment(env) for w in (Word.of("-c"), pair)]
    name, quoted = _SPLIT_OPTIONS.get(program, ("", False))
    if program == "make":  # X='$(shell CMD)' make -n: a makefile's $(X) expands the value
        expanded = [f"{k}={' '.join(v or ['$(unknown)'])}" for k, v in env.items()
                    if k != name and (v is None or any("$" in x for x in v))]
        words = _variable_options(program, env, name, quoted) if name in env else []
        return [*words, Word.of(f"--eval={' '.join(expanded)}")] if expanded else words
    if name in env:
        return _variable_options(program, env, name, quoted)
    if program in _NPM:
        return [_npm_option(k, env[k]) for k in env
                if k.lower().startswith("npm_config_")]
    return []


def _variable_options(program: str, env: Environment, name: str, quoted: bool) -> list[Word]:
    """The options one variable holds (``LESS``, ``MAKEFLAGS``...)."""
    words = _split(env[name], f"${name}", quoted)
    if program == "make" and words and (words[0].value or "-")[:1] != "-":
        words[0] = Word.of("-" + (words[0].value or ""))  # MAKEFLAGS=k: make -k
    values = env[name] or []
    if program == "make" and any("$" in v for v in values):  # make expands the value
        words.append(Word.of(f"--eval={' '.join(values)}"))  # as its own: $(shell CMD)
    return words


def _split(values: list[str] | None, text: str, quoted: bool) -> list[Word]:
    """The words of a variable's value: at blanks (perl), or as the shell splits them
    (less takes quotes and backslashes)."""
    if values is None or len(values) != 1:
        return [Word(None, text, "var")]
    try:
        words = shlex.split(values[0]) if quoted else values[0].split()
    except ValueError:
        return [Word(None, text, "var")]
    return [Word.of(w) for w in words]


def _npm_option(name: str, values: list[str] | None) -> Word:
    key = name[len("npm_config_"):].lower().replace("_", "-")
    if values is None or len(values) != 1:
        return Word(None, f"--{key}=${name}", "var")
    return Word.of(f"--{key}={values[0]}")
