"""Commands composed from bash constructs around payloads with an effect on a workspace.

A payload is a real program invocation (``rm -rf src``, ``git reset --hard``, ``ls``...). A
transformation is a small named function taken from a section of ``man bash`` (quoting,
parameter expansion, compound commands, builtins that run code...) or from an external program
that runs another program (``xargs``, ``find -exec``, ``awk``, ``make``...). A command is a
payload wrapped 1-3 times: at most one *word* transformation first (it rewrites the program
name, one argument or the whole argv), then *command* transformations (each wraps the whole
command string). The names of the transformations are kept with the command, so a command that
the classifier misjudges says which construct hid it. Generation is seeded and deterministic.
Payloads and word transformations are in ``tests/shell_constructs.py``, command
transformations in ``tests/shell_wrappers.py``.
"""

from __future__ import annotations

import itertools
import random
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tests.shell_constructs import DECOYS, PAYLOADS, VARIABLE_DECOYS, WORDS, Transform
from tests.shell_wrappers import WRAPPERS

WORD = WORDS
CMD = WRAPPERS
TRANSFORMS: list[Transform] = [*WORD, *CMD]
BY_NAME = {t.name: t for t in TRANSFORMS}
if len(BY_NAME) != len(TRANSFORMS):
    raise RuntimeError("two transformations share a name")


@dataclass(frozen=True, slots=True)
class Generated:
    """One composed command and how it was made."""

    command: str
    payload: str
    transforms: tuple[str, ...]


def compose(rng: random.Random) -> Generated | None:
    """A payload wrapped in 1-3 transformations (a word one at most, and first)."""
    payload = rng.choice(PAYLOADS)
    depth = rng.choice((1, 1, 2, 2, 2, 3))
    names = [rng.choice(WORD).name] if rng.random() < 0.5 else []
    names += [rng.choice(CMD).name for _ in range(depth - len(names))]
    return build(payload.name, names)


def build(payload: str, names: Sequence[str]) -> Generated | None:
    """The command made by applying ``names`` in order to ``payload`` (None when one of
    them does not apply, or a word transformation is not first)."""
    found = next(p for p in PAYLOADS if p.name == payload)
    command: str | None = found.render()
    for i, name in enumerate(names):
        t = BY_NAME[name]
        if t.kind == "word" and i:
            return None
        command = t.fn(found) if t.kind == "word" else t.fn(command)
        if command is None:
            return None
    return Generated(command, found.name, tuple(names))


def reductions(gen: Generated) -> list[Generated]:
    """The commands made with fewer of ``gen``'s transformations (same order), shortest
    first: to find the smallest composition that still shows a behaviour."""
    n = len(gen.transforms)
    out = []
    for size in range(n):
        for keep in itertools.combinations(gen.transforms, size):
            got = build(gen.payload, keep)
            if got is not None:
                out.append(got)
    return out


def generate(count: int, seed: int) -> Iterator[Generated]:
    """``count`` distinct commands, the same ones for the same seed."""
    rng = random.Random(seed)
    seen: set[str] = set()
    misses = 0
    while len(seen) < count and misses < count * 20:
        got = compose(rng)
        if got is None or got.command in seen:
            misses += 1
            continue
        seen.add(got.command)
        yield got


def plain(payload: str) -> Generated:
    """A payload alone (no transformation), e.g. to check the oracle on ``rm -rf src``."""
    found = next(p for p in PAYLOADS if p.name == payload)
    return Generated(found.render(), found.name, ())


def decoyed(payload: str = "rm a.txt") -> Iterator[Generated]:
    """Each decoy (``DECOYS``) of the payload's program before the payload alone, before each
    word transformation of it and before each command transformation of it; and each
    ``VARIABLE_DECOYS`` set-up before its call of the payload (``$c rm a.txt``), alone and in
    each command transformation. Whether the real program runs is bash's to say."""
    found = next(p for p in PAYLOADS if p.name == payload)
    command = found.render()
    for name, decoy in DECOYS.items():
        setup, tag = decoy(found.argv[0]), f"decoy_{name}"
        yield Generated(setup + command, found.name, (tag,))
        for word in WORD:
            got = build(payload, [word.name])
            if got is not None:
                yield Generated(setup + got.command, found.name, (tag, word.name))
        yield from _wrapped(setup, command, found.name, tag)
    for name, (setup, call) in VARIABLE_DECOYS.items():
        tag, args = f"decoy_{name}", " ".join(shlex.quote(a) for a in found.argv[1:])
        called = call.replace("PAYLOAD", command).replace("PROGRAM", found.argv[0]).replace(
            "ARGS", args)
        yield Generated(_placed(setup, called), found.name, (tag,))
        yield from _wrapped(setup, called, found.name, tag)


def _wrapped(setup: str, command: str, payload: str, tag: str) -> Iterator[Generated]:
    for wrapper in CMD:
        got = wrapper.fn(command)
        if got is not None:
            yield Generated(_placed(setup, got), payload, (tag, wrapper.name))


def _placed(setup: str, command: str) -> str:
    """``setup`` then ``command``, or ``command`` in the set-up's ``CMD`` (then ``f`` runs)."""
    return setup.replace("CMD", command) + "f" if "CMD" in setup else setup + command
