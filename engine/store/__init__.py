"""Persistence: the ``Store`` contract and its narrow parts (``RunReader``, ``StepWriter``,
``Approvals``, ``Leases``); its implementations sit in sub-folders: the SQL both databases share
(``engine.store.sql``), SQLite (``engine.store.sqlite``), PostgreSQL
(``engine.store.postgres``), and the store URLs that choose one (``engine.store.url``)."""

from engine.store.base import (
    Approvals,
    AuditRecord,
    Checkpoint,
    EffectRecord,
    Event,
    LeaseOwner,
    Leases,
    RunReader,
    StepBegin,
    StepCommit,
    StepWriter,
    Store,
)

__all__ = [
    "Approvals",
    "AuditRecord",
    "Checkpoint",
    "EffectRecord",
    "Event",
    "LeaseOwner",
    "Leases",
    "RunReader",
    "StepBegin",
    "StepCommit",
    "StepWriter",
    "Store",
]
