"""Forgetting one conversation (``eros forget --session``): the session's messages,
every memory learned from it alone, and its share of the sources of memories that other
sessions also support. One transaction (the caller's), in the order of every forget
(:mod:`eros.privacy.db.forget_sql`): the user's consolidation and cells lock, then the session row
(a classify writing it is waited for; its claim is dropped, so one that writes later commits
nothing), then the deletes, each a new statement under READ COMMITTED.

What goes and what stays — the rule (docs/operations.md, "Forgetting a conversation"):

- **goes**: every memory of the user whose text was extracted from the session
  (``session_id``), whatever its status; every memory whose sources all lie in the session
  (a canonical row consolidated from its memories alone); every row consolidation's model
  *rewrote* (metadata ``consolidated_from``) from sources that include the session — its text
  may blend the session's content in — and, up the ``replaced_by`` links, every such row
  rewritten from one that goes; each with every history row that names it;
- **comes back**: a memory of another session that was merged into or superseded by one that
  goes is ``current`` again and back in the consolidation backlog (it says what its own
  session said; the next pass consolidates it again without the forgotten conversation);
- **stays, trimmed**: a memory of another session whose ``source_seqs`` also cite the
  session (a kept member that absorbed the session's copy) keeps its text — its own session
  supports it — and loses the session's turns from ``source_seqs`` (the session's share);
- the session row stays, with ids and times only: read through its last turn, its erasure
  floor there (a turn the product writes later is learned as usual, nothing before it), its
  outcome ``forgotten``; its classification runs and messages are deleted. Other sessions'
  turns are not tombstoned: what they say was not forgotten.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, text

from eros.privacy.db import forget_sql
from eros.recall.db import turns_sql

FIND = text("SELECT user_id FROM engine.chat_sessions WHERE id = :session_id")

# "read through the last turn", as forget_user marks its sessions (forget_sql.MARK_READ_SET)
MARK_READ = text(forget_sql.MARK_READ_SET + """ WHERE s.id = :session_id
RETURNING s.id
""")

LOCK_SESSION = text("SELECT id FROM engine.chat_sessions WHERE id = :session_id FOR UPDATE")

SEQS = text("SELECT COALESCE(array_agg(seq), '{}') AS seqs FROM engine.chat_messages"
            " WHERE session_id = :session_id")

ERASED = text("""
WITH RECURSIVE e(id) AS (
    SELECT m.id FROM engine.companion_memories m
     WHERE m.user_id = :user_id
       AND (m.session_id = :session_id
            OR (m.source_seqs && CAST(:seqs AS bigint[])
                AND (m.source_seqs <@ CAST(:seqs AS bigint[])
                     OR m.metadata ? 'consolidated_from')))
    UNION
    SELECT t.id FROM e JOIN engine.companion_memories m ON m.id = e.id
      JOIN engine.companion_memories t ON t.id = m.replaced_by
     WHERE t.metadata ? 'consolidated_from')
SELECT id FROM e
""")

TRIM = text("""
UPDATE engine.companion_memories
   SET source_seqs = ARRAY(SELECT s FROM unnest(source_seqs) AS s
                            WHERE s <> ALL(CAST(:seqs AS bigint[])) ORDER BY s)
 WHERE user_id = :user_id AND source_seqs && CAST(:seqs AS bigint[])
   AND NOT (id = ANY(CAST(:ids AS uuid[])))
RETURNING id
""")

DELETE_RUNS = text("DELETE FROM engine.classification_runs WHERE session_id = :session_id"
                   " RETURNING id")
DELETE_MESSAGES = text("DELETE FROM engine.chat_messages WHERE session_id = :session_id"
                       " RETURNING id")

#: what :func:`forget_session` counts.
ZERO_COUNTS: dict[str, int] = {"messages": 0, "memories": 0, "history": 0, "restored": 0,
                               "trimmed": 0, "runs": 0, "cells": 0, "sessions_marked_read": 0,
                               "indexed_turns": 0}


def _n(conn: Connection, stmt: Any, params: dict[str, Any]) -> int:
    return len(conn.execute(stmt, params).all())


def forget_session(conn: Connection,
                   session_id: uuid.UUID) -> tuple[uuid.UUID | None, dict[str, int]]:
    """Forget one conversation (the rule above); call inside one transaction. The session's
    user (None when there is no such session) and the counts. Idempotent."""
    counts = dict(ZERO_COUNTS)
    row = conn.execute(FIND, {"session_id": session_id}).first()
    if row is None:
        return None, counts
    user_id: uuid.UUID = row.user_id
    forget_sql.lock_user(conn, user_id)
    conn.execute(LOCK_SESSION, {"session_id": session_id})
    counts["sessions_marked_read"] = _n(conn, MARK_READ, {"session_id": session_id})
    seqs = list(conn.execute(SEQS, {"session_id": session_id}).scalar_one())
    ids = [r.id for r in conn.execute(ERASED, {"user_id": user_id, "session_id": session_id,
                                               "seqs": seqs})]
    restored = conn.execute(forget_sql.RESTORE, {"derived": ids, "ids": ids}).all()
    if restored:
        conn.execute(forget_sql.REBACKLOG, {"ids": [r.id for r in restored],
                                            "users": [r.user_id for r in restored],
                                            "created": [r.created_at for r in restored]})
    counts["restored"] = len(restored)
    counts["trimmed"] = _n(conn, TRIM, {"user_id": user_id, "seqs": seqs, "ids": ids})
    counts["history"] = _n(conn, forget_sql.DELETE_HISTORY_OF, {"ids": ids})
    counts["memories"] = _n(conn, forget_sql.DELETE_MEMORIES, {"ids": ids})
    counts["cells"] = forget_sql.drop_cells(conn, user_id) if counts["memories"] else 0
    counts["runs"] = _n(conn, DELETE_RUNS, {"session_id": session_id})
    counts["indexed_turns"] = turns_sql.delete_turns_for_session(conn, session_id)
    counts["messages"] = _n(conn, DELETE_MESSAGES, {"session_id": session_id})
    return user_id, counts
