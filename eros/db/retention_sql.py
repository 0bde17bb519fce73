"""Retention (issue 26): the statements that delete what is kept past MESSAGE_RETENTION_DAYS
and HISTORY_RETENTION_DAYS, in bounded batches (one short transaction each, so a large first
run never holds locks for long).

- **messages**: the turns of a session at or below its watermark (``classified_through_seq``)
  when the session was stamped more than N days ago and not resumed since (``classified_at``
  set): the watermark then passed every one of them at least N days ago. A resumed session
  keeps its old turns until it is classified again and N more days pass (conservative: never
  early). The session row stays (its bookkeeping, its erasure floor).
- **history**: memory rows merged or superseded more than N days ago (``replaced_at``), with
  every ``memory_history`` row that names them (as result or source).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

MESSAGES = text("""
WITH doomed AS (
    SELECT m.id
      FROM engine.chat_sessions s
      JOIN engine.chat_messages m ON m.session_id = s.id AND m.seq <= s.classified_through_seq
     WHERE s.classified_at IS NOT NULL
       AND s.classified_at < now() - make_interval(days => :days)
     LIMIT :batch)
DELETE FROM engine.chat_messages m USING doomed d WHERE m.id = d.id
RETURNING m.id
""")

REPLACED = text("""
SELECT id FROM engine.companion_memories
 WHERE status IN ('merged', 'superseded')
   AND replaced_at < now() - make_interval(days => :days)
 LIMIT :batch
 FOR UPDATE SKIP LOCKED
""")
HISTORY = text("""
DELETE FROM engine.memory_history
 WHERE result_id = ANY(CAST(:ids AS uuid[])) OR source_ids && CAST(:ids AS uuid[])
RETURNING id
""")
MEMORIES = text("""
DELETE FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status IN ('merged', 'superseded')
RETURNING id
""")


def delete_messages(conn: Connection, *, days: int, batch: int) -> int:
    """One batch of messages past their retention; how many were deleted."""
    return len(conn.execute(MESSAGES, {"days": days, "batch": batch}).all())


def delete_replaced(conn: Connection, *, days: int, batch: int) -> tuple[int, int]:
    """One batch of replaced memories past their retention and their history; (memories,
    history rows) deleted."""
    ids = [r.id for r in conn.execute(REPLACED, {"days": days, "batch": batch})]
    if not ids:
        return 0, 0
    history = len(conn.execute(HISTORY, {"ids": ids}).all())
    return len(conn.execute(MEMORIES, {"ids": ids}).all()), history
