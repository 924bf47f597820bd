"""The machines and the demo task shipped with the engine, and the bare names that find them.

``turnstile run coding_agent`` names a bundled machine, so the offline demo runs anywhere after
a plain ``pip install``; a path that exists always wins over a name. In a checkout the bundle is
the repository itself (``machines/``, ``golden_tasks/``); an installed wheel carries a copy of
the same layout under ``engine/_bundled/`` (pyproject.toml maps the folders there), so the demo
task finds its machine and ``session.find_demo`` finds the task beside the machines, as in the
repository.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.vocabulary.errors import UsageError

MACHINES_DIR = "machines"
INSTALLED = Path(__file__).resolve().parents[1] / "_bundled"
"""Where a wheel puts the bundle (see ``[tool.setuptools.package-dir]`` in pyproject.toml)."""
CHECKOUT = Path(__file__).resolve().parents[2]
"""The repository the engine runs from, when it does (it holds ``pyproject.toml``)."""
BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
"""A machine name: no folder and no suffix, so ``x.yaml`` or ``./x`` is always a path."""


def bundle_root() -> Path | None:
    """The folder holding the bundled ``machines/`` (and ``golden_tasks/``), if any."""
    if (INSTALLED / MACHINES_DIR).is_dir():
        return INSTALLED
    if (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / MACHINES_DIR).is_dir():
        return CHECKOUT
    return None


def bundled_machines() -> dict[str, Path]:
    """Each bundled machine by name (its file name without ``.yaml``), sorted."""
    root = bundle_root()
    if root is None:
        return {}
    return {p.stem: p for p in sorted((root / MACHINES_DIR).glob("*.yaml"))}


def machine_path(arg: str) -> Path:
    """The machine file ``arg`` means: a path, or else the name of a bundled machine.

    A path that exists wins; else a bundled machine it names (``bundled_as``); else anything
    that is not a bare name stays a path (loading it says what is wrong with it). An unknown
    bare name is bad input.
    """
    path = Path(arg)
    if path.exists():
        return path
    found = bundled_as(arg)
    if found is not None or not BARE_NAME.fullmatch(arg):
        return found or path
    names = ", ".join(bundled_machines()) or "none found"
    raise UsageError(f"{arg}: no such machine file, and not the name of a bundled machine "
                     f"(bundled: {names})")


def bundled_as(ref: str) -> Path | None:
    """The bundled machine ``ref`` names: a bare name (``coding_agent``), or the bundle's own
    layout (``machines/coding_agent.yaml``, as the README and the bundled tasks write it), so
    those run from an installed wheel in any folder where no such file is."""
    path = Path(ref)
    name = path.stem if path.parts == (MACHINES_DIR, path.name) and path.suffix == ".yaml" \
        else ref
    return bundled_machines().get(name) if BARE_NAME.fullmatch(name) else None


def child_machine_path(arg: str, parent: str) -> Path:
    """The machine a parent machine (the file ``parent``) names as a child: a file beside the
    parent first, then ``machine_path``'s (a path, or a bundled machine's name)."""
    path = Path(arg)
    if not path.is_absolute() and parent:
        beside = Path(parent).parent / path
        if beside.exists():
            return beside.resolve()
    return machine_path(arg)
