"""Loading sessions from a session file (``eros seed`` / ``eros ingest``).

Idempotent by session id: a session already present is left exactly as it is (its messages are
not touched, so a re-load never duplicates turns), which makes re-seeding safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, insert
from sqlalchemy.dialects.postgresql import insert as pg_insert

from eros.db.schema import chat_messages, chat_sessions
from eros.dreaming.core.session_file import SessionIn


@dataclass(frozen=True)
class Loaded:
    sessions: int
    messages: int
    skipped: int


def insert_sessions(conn: Connection, sessions: Sequence[SessionIn]) -> Loaded:
    """Insert the sessions not yet present and, for those only, their messages in file order
    (``seq`` then breaks ties between turns that share a ``sent_at``)."""
    if not sessions:
        return Loaded(0, 0, 0)
    stmt = pg_insert(chat_sessions).values([{
        "id": s.session_id, "user_id": s.user_id, "instance_id": s.instance_id,
        "last_active_at": s.active_at, "created_at": s.started_at,
    } for s in sessions]).on_conflict_do_nothing(index_elements=["id"])
    new = {row.id for row in conn.execute(stmt.returning(chat_sessions.c.id))}
    messages = [{"session_id": s.session_id, "role": m.role, "content": m.content,
                 "sent_at": m.sent_at}
                for s in sessions if s.session_id in new for m in s.messages]
    if messages:
        conn.execute(insert(chat_messages), messages)
    return Loaded(len(new), len(messages), len(sessions) - len(new))
