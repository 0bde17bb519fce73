"""What the memory ledger (``eros ledger``) reads, and its access log.

Read-only statements over a user's memories (a page at a time: a user with 10,000 memories
opens as fast as one with ten), the turns they came from, the guard's quarantine, a timeline
by category and month; and the ``ledger_access_log`` rows (ids only) that every view and
action writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.core.statuses import CURRENT

# --- users ----------------------------------------------------------------------------------
USERS = text("""
SELECT s.user_id, s.sessions, s.classified, COALESCE(m.memories, 0) AS memories, s.last_active_at
  FROM (SELECT user_id, count(*) AS sessions,
               count(*) FILTER (WHERE classified_at IS NOT NULL) AS classified,
               max(last_active_at) AS last_active_at
          FROM engine.chat_sessions
         WHERE CAST(user_id AS text) LIKE :prefix
         GROUP BY user_id) s
  LEFT JOIN (SELECT user_id, count(*) AS memories FROM engine.companion_memories
              WHERE status = 'current' AND CAST(user_id AS text) LIKE :prefix
              GROUP BY user_id) m USING (user_id)
 ORDER BY s.last_active_at DESC
 LIMIT :n
""")


def search_users(conn: Connection, prefix: str = "", limit: int = 50) -> list[dict[str, Any]]:
    """Users whose id starts with ``prefix`` (as ``eros users``: sessions, memories, last
    active), most recently active first. ``prefix`` holds only hex digits and dashes."""
    clean = "".join(ch for ch in prefix.lower() if ch in "0123456789abcdef-")
    return [dict(r._mapping) for r in conn.execute(USERS, {"prefix": clean + "%", "n": limit})]


# --- one user's ledger ----------------------------------------------------------------------
COUNTS = text("""
SELECT status, category, count(*) AS n FROM engine.companion_memories
 WHERE user_id = :user_id GROUP BY status, category
""")


def memory_counts(conn: Connection, user_id: uuid.UUID) -> dict[str, dict[str, int]]:
    """``{status: {category: count}}`` of the user's memories."""
    out: dict[str, dict[str, int]] = {}
    for r in conn.execute(COUNTS, {"user_id": user_id}):
        out.setdefault(r.status, {})[r.category] = int(r.n)
    return out


_MEMORY_COLUMNS = ("id, content, category, importance, created_at, instance_id, status,"
                   " session_id, replaced_by, replaced_at, source_seqs, source_fallback,"
                   " sensitivity, metadata -> 'guard_quarantine' AS quarantine")


def memories_page(conn: Connection, user_id: uuid.UUID, *, category: str | None,
                  status: str = CURRENT, limit: int, offset: int) -> list[dict[str, Any]]:
    """One page of the user's memories with ``status``, newest first (the partial index on
    (user_id, created_at) of current rows serves the first page of any size of user)."""
    where = "user_id = :user_id AND status = :status"
    if category:
        where += " AND category = :category"
    stmt = text(f"SELECT {_MEMORY_COLUMNS} FROM engine.companion_memories WHERE {where}"
                " ORDER BY created_at DESC, id LIMIT :limit OFFSET :offset")
    return [dict(r._mapping) for r in conn.execute(stmt, {
        "user_id": user_id, "status": status, "category": category, "limit": limit,
        "offset": offset})]


def held_back(conn: Connection, user_id: uuid.UUID, *, limit: int) -> list[dict[str, Any]]:
    """The user's memories that recall never returns although nothing replaced them —
    ``quarantined`` by the guard, and any status the guard adds later (awaiting a screening)
    — newest first."""
    return [dict(r._mapping) for r in conn.execute(text(
        f"SELECT {_MEMORY_COLUMNS} FROM engine.companion_memories WHERE user_id = :user_id"
        " AND status NOT IN ('current', 'merged', 'superseded')"
        " ORDER BY created_at DESC, id LIMIT :limit"), {"user_id": user_id, "limit": limit})]


def memory(conn: Connection, memory_id: uuid.UUID) -> dict[str, Any] | None:
    row = conn.execute(text(f"SELECT user_id, {_MEMORY_COLUMNS} FROM engine.companion_memories"
                            " WHERE id = :id"), {"id": memory_id}).first()
    return dict(row._mapping) if row is not None else None


TURNS = text("""
SELECT m.id, m.seq, m.session_id, m.role, m.content, m.sent_at, s.created_at AS session_at
  FROM engine.chat_messages m JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE m.seq = ANY(CAST(:seqs AS bigint[])) AND s.user_id = :user_id
""")


def turns(conn: Connection, user_id: uuid.UUID, seqs: Sequence[int]) -> dict[int, Any]:
    """The user's stored turns among ``seqs``, with the message id (to forget one) and the
    session's date; a forgotten message is simply absent."""
    if not seqs:
        return {}
    return {int(r.seq): r for r in conn.execute(TURNS, {"seqs": sorted({int(s) for s in seqs}),
                                                        "user_id": user_id})}


TIMELINE = text("""
SELECT date_trunc('month', created_at AT TIME ZONE 'UTC') AS month, category, count(*) AS n
  FROM engine.companion_memories
 WHERE user_id = :user_id AND status = 'current'
 GROUP BY 1, 2 ORDER BY 1
""")


def timeline(conn: Connection, user_id: uuid.UUID) -> list[tuple[datetime, str, int]]:
    """Current memories per month (UTC) and category, oldest month first."""
    return [(r.month, r.category, int(r.n)) for r in conn.execute(TIMELINE, {"user_id": user_id})]


def message_owner(conn: Connection, message_id: uuid.UUID) -> uuid.UUID | None:
    """The user a chat message belongs to (the ledger's page to return to after a forget)."""
    row = conn.execute(text(
        "SELECT s.user_id FROM engine.chat_messages m JOIN engine.chat_sessions s"
        " ON s.id = m.session_id WHERE m.id = :id"), {"id": message_id}).first()
    return row.user_id if row is not None else None


# --- the access log -------------------------------------------------------------------------
def log_access(conn: Connection, action: str, user_id: uuid.UUID | None,
               object_id: uuid.UUID | None = None) -> None:
    """One access-log row: the action, whose data, which memory or message — ids only."""
    conn.execute(text("INSERT INTO engine.ledger_access_log (action, user_id, object_id)"
                      " VALUES (:action, :user_id, :object_id)"),
                 {"action": action, "user_id": user_id, "object_id": object_id})


def access_log(conn: Connection, user_id: uuid.UUID | None = None, *,
               limit: int = 100) -> list[dict[str, Any]]:
    """Access-log rows, newest first: everyone's, or those about ``user_id``."""
    where = "WHERE user_id = :user_id" if user_id is not None else ""
    return [dict(r._mapping) for r in conn.execute(text(
        f"SELECT id, at, action, user_id, object_id FROM engine.ledger_access_log {where}"
        " ORDER BY at DESC, id DESC LIMIT :n"), {"user_id": user_id, "n": limit})]
