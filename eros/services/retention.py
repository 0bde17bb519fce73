"""Retention (issue 26): delete chat messages MESSAGE_RETENTION_DAYS after the watermark
passed them, and merged/superseded memories HISTORY_RETENTION_DAYS after they were replaced
(with their history). Both default to 0 = off. Counted in ``eros_retention_deleted_total``
by table; the counts, never text, are logged. See :mod:`eros.db.retention_sql` for the rules.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from eros.db import retention_sql
from eros.ops import metrics
from eros.settings import Settings

log = logging.getLogger(__name__)

#: replaced memories per transaction; messages go BATCH // 10 sessions per transaction.
BATCH = 5000


def apply(engine: Engine, settings: Settings, *, batch: int = BATCH) -> dict[str, int]:
    """Run both retentions to completion, one batch per transaction; rows deleted by table."""
    deleted = {"chat_messages": 0, "companion_memories": 0, "memory_history": 0}
    if settings.message_retention_days:
        after: str | None = retention_sql.FIRST
        while after is not None:
            with engine.begin() as conn:
                after, n = retention_sql.delete_messages(
                    conn, days=settings.message_retention_days, after=after,
                    sessions=max(1, batch // 10))
            deleted["chat_messages"] += n
    if settings.history_retention_days:
        while True:
            with engine.begin() as conn:
                memories, history = retention_sql.delete_replaced(
                    conn, days=settings.history_retention_days, batch=batch)
            deleted["companion_memories"] += memories
            deleted["memory_history"] += history
            if memories < batch:
                break
    metrics.record_retention(deleted)
    log.info("retention: %s", " ".join(f"{k}={v}" for k, v in sorted(deleted.items())))
    return deleted
