"""Forget a user, one relationship or one memory (GDPR art. 17, PIPL art. 47).

One transaction each (see :mod:`eros.db.forget_sql` for why the statement order makes it
race-free against classification and consolidation in flight). Idempotent: forgetting again
removes nothing more and reports zeros. Results carry ids and counts, never text.
"""

from __future__ import annotations

import logging
import uuid

from sqlalchemy import Engine

from eros.db import forget_sql

log = logging.getLogger(__name__)


def forget_user(engine: Engine, user_id: uuid.UUID, *, instance_id: uuid.UUID | None = None,
                sessions: bool = False) -> dict[str, int]:
    """Every memory of the user (or, with ``instance_id``, that persona's relationship layer),
    its lineage and bookkeeping; sessions marked read, or deleted with ``sessions``."""
    with engine.begin() as conn:
        counts = forget_sql.forget_user(conn, user_id, instance_id=instance_id,
                                        sessions=sessions)
    log.info("forgot user %s%s: %s", user_id,
             f" persona {instance_id}" if instance_id else "",
             " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return counts


def forget_memory(engine: Engine, memory_id: uuid.UUID) -> dict[str, int]:
    """One memory and everything in its lineage; recall never returns them again."""
    with engine.begin() as conn:
        counts = forget_sql.forget_memory(conn, memory_id)
    log.info("forgot memory %s: memories=%d history=%d", memory_id, counts["memories"],
             counts["history"])
    return counts
