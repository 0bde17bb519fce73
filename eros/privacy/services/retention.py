"""Retention: delete chat messages MESSAGE_RETENTION_DAYS after the watermark
passed them (with their turn vectors), and merged/superseded memories HISTORY_RETENTION_DAYS
after they were replaced (with their history; quarantined turn vectors as long after they
were indexed). Both default to 0 = off. Counted in ``eros_retention_deleted_total``
by table; the counts, never text, are logged. See :mod:`eros.privacy.db.retention_sql` for the
rules.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from eros.ops import metrics
from eros.privacy.db import retention_sql
from eros.settings import Settings

log = logging.getLogger(__name__)

#: replaced memories per transaction; messages go BATCH // 10 sessions per transaction.
BATCH = 5000


def apply(engine: Engine, settings: Settings, *, batch: int = BATCH) -> dict[str, int]:
    """Run both retentions to completion, one batch per transaction; rows deleted by table."""
    deleted = {"chat_messages": 0, "companion_memories": 0, "memory_history": 0,
               "memory_turns": 0}
    if settings.message_retention_days:
        after: str | None = retention_sql.FIRST
        while after is not None:
            with engine.begin() as conn:
                after, n, vectors = retention_sql.delete_messages(
                    conn, days=settings.message_retention_days, after=after,
                    sessions=max(1, batch // 10))
            deleted["chat_messages"] += n
            deleted["memory_turns"] += vectors
    if settings.history_retention_days:
        while True:
            with engine.begin() as conn:
                memories, history = retention_sql.delete_replaced(
                    conn, days=settings.history_retention_days, batch=batch)
            deleted["companion_memories"] += memories
            deleted["memory_history"] += history
            if memories < batch:
                break
        while True:  # quarantined turn vectors
            with engine.begin() as conn:
                turns = retention_sql.delete_quarantined_turns(
                    conn, days=settings.history_retention_days, batch=batch)
            deleted["memory_turns"] += turns
            if turns < batch:
                break
    metrics.record_retention(deleted)
    log.info("retention: %s", " ".join(f"{k}={v}" for k, v in sorted(deleted.items())))
    return deleted
