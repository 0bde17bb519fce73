"""Export (issue 14, GDPR art. 15/20): the statements that read everything kept about a user,
streamed through a server-side cursor so 100k memories never sit in memory at once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, text

#: rows fetched per round trip from the server-side cursor.
BATCH = 500

# Every memory of the user, both layers, every status, with its lineage: what replaced it
# (replaced_by) and what it replaced (rows pointing at it, and memory_history's sources) —
# both aggregated once per user and hash-joined, not looked up per row.
MEMORIES = text("""
WITH rep AS (
    SELECT replaced_by AS id, array_agg(id) AS ids FROM engine.companion_memories
     WHERE user_id = :user_id AND replaced_by IS NOT NULL GROUP BY replaced_by),
src AS (
    SELECT h.result_id AS id, array_agg(s.id) AS ids
      FROM engine.memory_history h CROSS JOIN LATERAL unnest(h.source_ids) AS s(id)
     WHERE h.user_id = :user_id AND h.result_id IS NOT NULL GROUP BY h.result_id)
SELECT m.id, m.content, m.category, m.importance, m.instance_id, m.status, m.created_at,
       m.replaced_at, m.replaced_by, m.session_id, m.metadata, m.model,
       m.source_seqs, m.source_fallback,
       ARRAY(SELECT DISTINCT unnest(COALESCE(rep.ids, '{}') || COALESCE(src.ids, '{}')))
           AS replaced
  FROM engine.companion_memories m
  LEFT JOIN rep ON rep.id = m.id
  LEFT JOIN src ON src.id = m.id
 WHERE m.user_id = :user_id
 ORDER BY m.created_at, m.id
""")

SESSIONS = text("""
SELECT id, instance_id, created_at, last_active_at, classified_at, outcome, outcome_at,
       memory_count, dead_lettered_at
  FROM engine.chat_sessions WHERE user_id = :user_id
 ORDER BY created_at, id
""")

MESSAGES = text("""
SELECT m.session_id, m.role, m.content, m.sent_at, m.seq
  FROM engine.chat_messages m JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE s.user_id = :user_id
 ORDER BY m.session_id, m.sent_at, m.seq
""")


def _stream(conn: Connection, stmt: Any, user_id: uuid.UUID) -> Iterator[Any]:
    # per statement, not on the connection: Connection.execution_options changes it in place
    yield from conn.execute(stmt, {"user_id": user_id},
                            execution_options={"stream_results": True, "yield_per": BATCH})


def memories(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    return _stream(conn, MEMORIES, user_id)


def sessions(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    return _stream(conn, SESSIONS, user_id)


def messages(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """All the user's turns ordered by session, so they can be grouped while streaming."""
    return _stream(conn, MESSAGES, user_id)
