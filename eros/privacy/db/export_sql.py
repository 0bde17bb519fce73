"""Export (GDPR art. 15/20): the statements that read everything kept about
a user, streamed through a server-side cursor so 100k memories never sit in memory at once.

``eros-export/2`` reads every column of the user's rows except vectors and sketches (the
embedding, its binary sketch, cell centroids): what a table gains later is exported without a
change here."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from pgvector.sqlalchemy import HALFVEC, Vector
from sqlalchemy import Column, Connection, Select, Table, select, text
from sqlalchemy.dialects.postgresql import BIT

from eros.db.records_schema import erasure_log, sensitivity_withheld
from eros.db.schema import chat_sessions, classification_runs, consolidation_state, memory_history
from eros.db.turns_schema import memory_turns

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
       m.replaced_at, m.replaced_by, m.session_id, m.metadata, m.model, m.sensitivity,
       m.embedding_model, m.source_seqs, m.source_fallback, m.consolidation_seen_at,
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
SELECT m.session_id, m.id, m.role, m.channel, m.content, m.sent_at, m.seq
  FROM engine.chat_messages m JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE s.user_id = :user_id
 ORDER BY m.session_id, m.sent_at, m.seq
""")


def _stream(conn: Connection, stmt: Any, user_id: uuid.UUID) -> Iterator[Any]:
    # per statement, not on the connection: Connection.execution_options changes it in place
    params = {} if isinstance(stmt, Select) else {"user_id": user_id}  # a Select binds it
    yield from conn.execute(stmt, params,
                            execution_options={"stream_results": True, "yield_per": BATCH})


def memories(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    return _stream(conn, MEMORIES, user_id)


def sessions(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    return _stream(conn, SESSIONS, user_id)


def messages(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """All the user's turns ordered by session, so they can be grouped while streaming."""
    return _stream(conn, MESSAGES, user_id)


def _plain(table: Table) -> list[Column[Any]]:
    """Every column but vectors and bit sketches."""
    return [c for c in table.c if not isinstance(c.type, Vector | HALFVEC | BIT)]


def _user_rows(table: Table, user_id: uuid.UUID, *order: Column[Any]) -> Select[Any]:
    return select(*_plain(table)).where(table.c.user_id == user_id).order_by(*order)


def sessions_v2(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """Every column of the user's sessions: outcomes, attempts, errors (codes), watermarks."""
    t = chat_sessions
    return _stream(conn, _user_rows(t, user_id, t.c.created_at, t.c.id), user_id)


def history(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """The user's consolidation history, with its details (which hold canonical texts)."""
    t = memory_history
    return _stream(conn, _user_rows(t, user_id, t.c.id), user_id)


def runs(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """Every classification attempt of the user's sessions."""
    t = classification_runs
    return _stream(conn, _user_rows(t, user_id, t.c.id), user_id)


def state(conn: Connection, user_id: uuid.UUID) -> Any | None:
    """The user's consolidation state row, if any."""
    return conn.execute(_user_rows(consolidation_state, user_id)).first()


def erasures(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """The user's erasure_log rows (ids, counts and codes)."""
    t = erasure_log
    return _stream(conn, _user_rows(t, user_id, t.c.requested_at, t.c.id), user_id)



def indexed_turns(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """Which of the user's turns the turns recall layer indexed (0025): seq,
    session, persona, date, label, status and embedding model — the vector is not exported
    and the text is the message's (``--with-messages``)."""
    t = memory_turns
    return _stream(conn, _user_rows(t, user_id, t.c.seq), user_id)


def withheld(conn: Connection, user_id: uuid.UUID) -> Iterator[Any]:
    """The special-category labels the user withdrew consent for."""
    t = sensitivity_withheld
    return _stream(conn, _user_rows(t, user_id, t.c.label), user_id)
