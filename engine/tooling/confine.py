"""What a tool that spawns commands is handed to confine them (``ToolContext.confinement``).

A tool knows only this protocol; the engine decides the run's confinement once, from the
``sandbox:`` settings (``engine.sandbox.Confinement`` implements the protocol), and hands it to
every call. Where nothing was decided (a test, a dry run) commands run ``UNCONFINED``: without
bubblewrap, but still with the secrets scrubbed from their environment and a parent-death signal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from engine.sandbox import Confinement, Swept


class CommandConfinement(Protocol):
    """How one run's commands are confined: the same for every call of the run."""

    def network_for(self, approved_risk: str | None) -> bool:
        """Whether a call approved under ``approved_risk`` gets the network."""
        ...

    def command(self, argv: Sequence[str], cwd: Path | str, network: bool,
                prepared: Any = None) -> list[str]:
        """``argv`` as it is to be spawned, confined (``prepared``: what ``before`` gave)."""
        ...

    def env(self, base: Mapping[str, str], extra: Mapping[str, str] | None = None
            ) -> dict[str, str]:
        """The command's environment: ``base`` without its secrets, plus ``extra``."""
        ...

    def before(self, approved_risk: str | None = None) -> Any:
        """Set up one command approved under ``approved_risk`` (its limits) and remember what
        ``after`` needs."""
        ...

    def after(self, prepared: Any) -> Swept:
        """Release what ``before`` set up and undo what a command may not leave behind; the
        paths removed and restored, the configuration changes refused."""
        ...

    @property
    def active(self) -> bool:
        """Whether commands run confined."""
        ...

    def read_only_note(self) -> str:
        """Why a confined write failed with ``Read-only file system``."""
        ...

    def hidden_note(self, text: str) -> str:
        """Why a confined command found no file where ``text`` names one the sandbox hides
        (a home folder's); empty when it names none."""
        ...

    def describe(self, network: bool | None = None) -> dict[str, Any]:
        """How a command is confined, as events and the trace record it."""
        ...


UNCONFINED: CommandConfinement = Confinement(reason="no sandbox given to the tool")
"""No bubblewrap: the confinement of a context built without one (tests, dry runs)."""
