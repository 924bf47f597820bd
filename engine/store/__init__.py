"""Persistence: the ``Store`` contract and its SQLite implementation."""

from engine.store.base import (
    AuditRecord,
    Checkpoint,
    EffectRecord,
    Event,
    LeaseOwner,
    StepBegin,
    StepCommit,
    Store,
)

__all__ = [
    "AuditRecord",
    "Checkpoint",
    "EffectRecord",
    "Event",
    "LeaseOwner",
    "StepBegin",
    "StepCommit",
    "Store",
]
