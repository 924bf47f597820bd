"""Persistence: the ``Store`` contract, its SQLite and PostgreSQL implementations, and the store
URLs that choose one (``engine.store.url``)."""

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
