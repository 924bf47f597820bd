"""The action contract: what a state runs, the triggers it may emit, and the typed params it takes.

An action computes; the runner commits. An action never writes run state itself: it returns an
``Outcome`` whose trigger must be one of ``emits`` (checked statically by ``validate``) and whose
updates touch only the run-data keys it declares in ``writes`` (checked by the runner against
``engine.vocabulary.run_data``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from engine.vocabulary.state import Outcome

if TYPE_CHECKING:
    from engine.actions.context import ActionContext


class NoParams(BaseModel):
    """Params of an action that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


ActionFn = Callable[["ActionContext", Any], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """An action as the registry knows it."""

    name: str
    emits: frozenset[str]
    """Every trigger this action can return; each needs a transition in the machine."""
    params: type[BaseModel]
    """Validates the state's ``with:`` mapping at load time."""
    fn: ActionFn
    doc: str = ""
    side_effects: bool = False
    """True for actions that run tools; their step row carries the planned calls."""
    snapshot: bool = False
    """True for actions after which the runner writes a compact checkpoint snapshot."""
    rides_along: bool = False
    """True for actions with no side effects that read nothing outside the run: their step's
    commit rides in the next step's transaction (a crash before it runs them again, to the same
    result; ``engine.store.deferred``)."""
    rides_along_if: Callable[[Outcome], bool] | None = None
    """For an action whose step may ride along depending on how it went: true of an outcome
    that the same inputs give again on a rerun (``await_approval`` decided by the policy
    alone, no person and no parked decision)."""
    templated: tuple[str, ...] = ()
    """``with:`` keys rendered as templates (strings nested in them too); ``validate`` parses
    them."""
    emits_for: Callable[[Any], frozenset[str]] | None = None
    """The triggers a state can actually emit given its validated params (a subset of
    ``emits``), so ``validate`` demands no transition the state can never take."""
    reads: frozenset[str] = frozenset()
    """The run-data keys (``engine.vocabulary.run_data``) the action reads."""
    writes: frozenset[str] = frozenset()
    """The run-data keys its outcome may update; the runner refuses any other."""
    calls_model: bool = False
    """The action asks the model (``ctx.model()``) whatever its params say."""
    calls_model_if: Callable[[Any], bool] | None = None
    """For an action that asks the model only with some params: true of the validated params
    that make it ask (``plan`` with ``ask_model: true``)."""
    waits: bool = True
    """The step may wait on something outside the process (a model) before it shows anything:
    output gathered so far is written when it begins. False for actions that return at once
    and for those that show what they wait for first (a tool call's ``tool_started``, the
    question put to a person): their step's first line waits for the next write."""

    def emitted(self, params: BaseModel) -> frozenset[str]:
        """``emits`` narrowed by the state's params."""
        return self.emits if self.emits_for is None else self.emits_for(params) & self.emits
