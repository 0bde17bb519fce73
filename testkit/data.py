"""Builders for sessions and messages, written the way the chat product writes them: plain SQL
INSERTs of the contract columns only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, text

Message = tuple[str, str]  # (role, content)


def ago(**delta: float) -> datetime:
    return datetime.now(UTC) - timedelta(**delta)


def add_session(conn: Connection, messages: Sequence[Message] = (), *,
                user_id: uuid.UUID | None = None, instance_id: uuid.UUID | None = None,
                idle_for: timedelta = timedelta(hours=2),
                session_id: uuid.UUID | None = None) -> uuid.UUID:
    """Insert a session whose last turn was ``idle_for`` ago, one minute between turns."""
    sid = session_id or uuid.uuid4()
    last = datetime.now(UTC) - idle_for
    conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, instance_id, last_active_at)"
                      " VALUES (:id, :user_id, :instance_id, :last)"),
                 {"id": sid, "user_id": user_id or uuid.uuid4(), "instance_id": instance_id,
                  "last": last})
    add_messages(conn, sid, messages, last=last)
    return sid


def add_messages(conn: Connection, session_id: uuid.UUID, messages: Sequence[Message], *,
                 last: datetime) -> None:
    if not messages:
        return
    start = last - timedelta(minutes=len(messages) - 1)
    conn.execute(
        text("INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
             " VALUES (:sid, :role, :content, :sent_at)"),
        [{"sid": session_id, "role": role, "content": content,
          "sent_at": start + timedelta(minutes=i)} for i, (role, content) in enumerate(messages)])


def bulk_idle_sessions(conn: Connection, count: int, *, idle_secs: int = 7200,
                       user_id: uuid.UUID | None = None) -> list[uuid.UUID]:
    """``count`` idle sessions with no messages, in one statement (server-side generation)."""
    rows = conn.execute(text(
        "INSERT INTO engine.chat_sessions (user_id, last_active_at)"
        " SELECT COALESCE(:uid, gen_random_uuid()),"
        "        now() - make_interval(secs => :idle + g)"
        " FROM generate_series(1, :n) AS g RETURNING id"),
        {"uid": user_id, "idle": idle_secs, "n": count}).all()
    return [r.id for r in rows]


def mem_line(category: str, importance: float, content: str) -> Message:
    """A user turn the fake LLM's default responder turns into exactly one memory."""
    return ("user", f"MEM {category} {importance} {content}")
