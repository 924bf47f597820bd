"""Narrowing: a child run's policy under its parents', so a child can only do less.

Every call of a child run is decided by its own policy and by each parent's (``Policy.parents``;
``decide`` keeps the strictest and names the policy that decided). What ``ask`` becomes without
a person is ``deny`` if any of them says so, and a parent's ``sandbox:`` keys win over the
child's, so a child cannot turn off or widen what a parent confines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from engine.permissions.policy import Policy
from engine.sandbox import merge


def narrowed(child: Policy, parents: Sequence[Policy]) -> Policy:
    """``child`` as it applies below ``parents`` (outermost first)."""
    if not parents:
        return child
    chain = (*parents, child)
    strict = any(p.when_asked == "deny" for p in chain)
    when_asked: Literal["deny", "allow"] = "deny" if strict else "allow"
    sandbox = child.sandbox
    for parent in reversed(parents):  # the outermost parent's keys go last: they win
        if parent.sandbox is not None:
            sandbox = merge(sandbox, parent.sandbox)
    return replace(child, parents=tuple(parents), when_asked=when_asked, sandbox=sandbox)
