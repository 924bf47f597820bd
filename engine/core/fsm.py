"""The transition table: where each (state, trigger) leads, as declared by a machine.

The only ``transitions`` importer. The plain synchronous ``Machine`` (``auto_transitions=False``,
string states, no callbacks, no model) is the declared source of truth; at build time its events
are flattened into a dict so ``fire`` is one lookup on the runner's hot path. Nothing here has
side effects: all awaiting and state changes happen in actions and the runner.
"""

from __future__ import annotations

import logging

from transitions import Machine

from engine.spec.model import MachineSpec
from engine.vocabulary.errors import SpecError, SpecProblem, TransitionError

logger = logging.getLogger(__name__)


class TransitionTable:
    """A checked machine's transitions as a pure lookup: ``fire(state, trigger) -> dest``."""

    __slots__ = ("_final", "_next", "_triggers", "machine", "name")

    def __init__(self, spec: MachineSpec) -> None:
        _require_known_dests(spec)
        self.name = spec.name
        # The ``transitions`` machine the lookup dict is built from; it is never driven itself.
        self.machine = Machine(
            model=None,
            states=[{"name": n, "final": s.final} for n, s in spec.states.items()],
            transitions=[{"trigger": t, "source": src, "dest": dest}
                         for src, t, dest in spec.transitions()],
            initial=spec.initial if spec.initial in spec.states else None,
            auto_transitions=False,
            send_event=False,
        )
        self._next: dict[str, dict[str, str]] = {name: {} for name in self.machine.states}
        for trigger, event in self.machine.events.items():
            for source, options in event.transitions.items():
                dest = options[0].dest  # None only for internal transitions, never declared here
                if dest is not None:
                    self._next[source][trigger] = dest
        self._triggers = {name: sorted(nexts) for name, nexts in self._next.items()}
        self._final = frozenset(n for n, st in self.machine.states.items() if st.final)

    def fire(self, state: str, trigger: str) -> str:
        """The destination of ``trigger`` in ``state``; ``TransitionError`` if undeclared."""
        try:
            return self._next[state][trigger]
        except KeyError:
            raise self._error(state, trigger) from None

    def triggers(self, state: str) -> list[str]:
        """Triggers ``state`` declares, sorted (empty for final states)."""
        if state not in self._triggers:
            raise TransitionError(f"machine '{self.name}' has no state '{state}'")
        return list(self._triggers[state])

    def is_final(self, state: str) -> bool:
        """Whether reaching ``state`` ends the run."""
        return state in self._final

    def _error(self, state: str, trigger: str) -> TransitionError:
        if state not in self._next:
            return TransitionError(f"machine '{self.name}' has no state '{state}'")
        declared = ", ".join(self._triggers[state]) or "none"
        return TransitionError(
            f"state '{state}' has no transition for trigger '{trigger}' (declared: {declared})")


def _require_known_dests(spec: MachineSpec) -> None:
    """``transitions`` accepts unknown destinations silently; an unchecked spec must not pass."""
    problems = [SpecProblem(spec.path, spec.states[src].on_lines.get(t) or None,
                            f"'{dest}' is not a state")
                for src, t, dest in spec.transitions() if dest not in spec.states]
    if problems:
        raise SpecError(problems)
