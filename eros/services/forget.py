"""Forget a user, one relationship or one memory (GDPR art. 17, PIPL art. 47).

One transaction each (see :mod:`eros.db.forget_sql` for why the statement order makes it
race-free against classification and consolidation in flight). Idempotent: forgetting again
removes nothing more and reports zeros. Results carry ids and counts, never text.
"""

from __future__ import annotations

import logging
import uuid

from sqlalchemy import Engine

from eros.db import forget_sql, provenance_sql

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


def forget_message(engine: Engine, message_id: uuid.UUID) -> dict[str, int]:
    """One chat message and every memory derived from it (issue 24): the memories whose
    ``source_seqs`` hold its seq — each erased as ``forget_memory`` erases one, with its
    lineage — and a classification in flight that may have read it commits nothing. One
    transaction; idempotent (an unknown or already erased message removes nothing)."""
    counts = {"messages": 0, "memories": 0, "history": 0, "claims_released": 0}
    with engine.begin() as conn:
        message = provenance_sql.find_message(conn, message_id)
        if message is None:
            return counts
        # the user's consolidation/cells lock first (as every forget), then the session row
        forget_sql.lock_user(conn, message.user_id)
        counts["claims_released"] = int(provenance_sql.release_if_reading(
            conn, message.session_id, message.seq))
        counts["messages"] = provenance_sql.delete_message(conn, message_id)
        for memory_id in provenance_sql.derived_from(conn, message.user_id,
                                                     message.session_id, message.seq):
            erased = forget_sql.forget_memory(conn, memory_id)
            counts["memories"] += erased["memories"]
            counts["history"] += erased["history"]
    log.info("forgot message %s: memories=%d history=%d claims_released=%d", message_id,
             counts["memories"], counts["history"], counts["claims_released"])
    return counts
