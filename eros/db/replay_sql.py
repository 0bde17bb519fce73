"""SQL for replays (the demo and ``eros eval``): recorded conversations spanning months are
dreamt in seconds, so a memory's ``created_at`` would be "now" for all of them and recency
ranking and consolidation could not tell last year's fact from last week's. A replay dates each
memory by the session it was learnt from, as if it had been dreamt right after that session.
Never used on a production database."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, text

_DATE_BY_SESSION = text("""
UPDATE engine.companion_memories m
   SET created_at = s.last_active_at
  FROM engine.chat_sessions s
 WHERE m.session_id = s.id
   AND m.status = 'current'
   AND (CAST(:user_id AS uuid) IS NULL OR m.user_id = CAST(:user_id AS uuid))
""")


def date_memories_by_session(conn: Connection, user_id: uuid.UUID | None = None) -> int:
    """Set every current memory's ``created_at`` to its session's ``last_active_at`` (one
    user's, or everyone's); returns the number of rows dated."""
    result = conn.execute(_DATE_BY_SESSION, {"user_id": str(user_id) if user_id else None})
    return int(result.rowcount or 0)


_USAGE = text("""
SELECT count(*) FILTER (WHERE prompt_tokens > 0 OR completion_tokens > 0) AS llm_calls,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens,
       coalesce(sum(embedding_tokens), 0) AS embedding_tokens,
       coalesce(sum(cost_usd), 0) AS cost_usd
  FROM engine.classification_runs
""")


def classification_usage(conn: Connection) -> dict[str, float]:
    """LLM calls, tokens and cost of every classification attempt in the database."""
    row = conn.execute(_USAGE).one()
    return {k: float(v) for k, v in row._mapping.items()}
