"""A run composed and ready to drive: what ``Runs.prepare`` hands a caller that drives it."""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.runner import Runner
from engine.session.compose import Prepared
from engine.spec.model import MachineSpec
from engine.store.base import Store
from engine.vocabulary.state import RunState


@dataclass
class PreparedRun:
    """A run composed and ready to drive (``Runs.prepare``/``prepare_resume``): nothing of a
    new run is stored before it is driven (or ``Runs.ready``). A backend that drives it its
    own way (one step per task) reads and moves its ``state`` and ``runner``."""

    session: Prepared
    """The engine's composed parts (``engine.session.compose``)."""
    store: Store
    """The store it is driven against (open until ``close``)."""
    owns_store: bool = True
    """The store was opened for this run (``close`` closes it)."""

    @property
    def run_id(self) -> str:
        return self.session.state.run_id

    @property
    def notes(self) -> tuple[str, ...]:
        """Lines for the user before the run starts (e.g. that the offline demo runs)."""
        return tuple(self.session.notes)

    @property
    def machine(self) -> MachineSpec:
        return self.session.machine

    @property
    def runner(self) -> Runner:
        return self.session.runner

    @property
    def state(self) -> RunState:
        """The run as of its last commit (moved on by a backend that drives it)."""
        return self.session.state

    @state.setter
    def state(self, value: RunState) -> None:
        self.session.state = value

    @property
    def resumed(self) -> bool:
        """Its next step was begun before (a resume settles what that step started)."""
        return self.session.resumed

    @resumed.setter
    def resumed(self, value: bool) -> None:
        self.session.resumed = value

    def close(self) -> None:
        """Close the store, if it was opened for this run."""
        if self.owns_store:
            self.owns_store = False
            self.store.close()
