"""SQL for replays (the demo and ``eros eval``): recorded conversations spanning months are
dreamt in seconds, so a memory's ``created_at`` would be "now" for all of them and recency
ranking and consolidation could not tell last year's fact from last week's. A replay dates each
memory by the session it was learnt from, as if it had been dreamt right after that session.
Never used on a production database."""

from __future__ import annotations

import uuid
from typing import Any

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


_SESSION_SEQS = text("""
SELECT c.session_id, c.seq FROM engine.chat_messages c
  JOIN engine.chat_sessions s ON s.id = c.session_id
 WHERE s.user_id = :user_id
 ORDER BY c.session_id, c.seq
""")


def session_seqs(conn: Connection, user_id: uuid.UUID) -> dict[uuid.UUID, list[int]]:
    """Each of the user's sessions' message seqs, in order (a replay maps them back to the
    suite's turns by position)."""
    out: dict[uuid.UUID, list[int]] = {}
    for row in conn.execute(_SESSION_SEQS, {"user_id": user_id}):
        out.setdefault(row.session_id, []).append(int(row.seq))
    return out


# A memory's sources (0016); a row from before provenance has none (NULL) and counts as
# covering the extraction window it was written from (metadata.source_seq = [first, last]).
_SOURCES = text("""
SELECT m.id,
       COALESCE(m.source_seqs, ARRAY(
           SELECT c.seq FROM engine.chat_messages c
            WHERE c.session_id = m.session_id
              AND c.seq BETWEEN CAST(m.metadata->'source_seq'->>0 AS bigint)
                            AND CAST(m.metadata->'source_seq'->>1 AS bigint))) AS seqs
  FROM engine.companion_memories m
 WHERE m.user_id = :user_id
""")


def memory_sources(conn: Connection, user_id: uuid.UUID) -> dict[uuid.UUID, list[int]]:
    """Every memory of the user (any status) with the message seqs it came from."""
    return {row.id: [int(s) for s in row.seqs or []]
            for row in conn.execute(_SOURCES, {"user_id": user_id})}


_VECTORS = text("""
SELECT DISTINCT ON (content) content, CAST(embedding AS text) AS embedding
  FROM engine.companion_memories
 WHERE user_id = :user_id AND embedding IS NOT NULL
""")


def memory_vectors(conn: Connection, user_id: uuid.UUID) -> list[tuple[str, list[float]]]:
    """Each distinct memory text of the user with its stored vector (the embedding judge
    reuses them instead of embedding every recalled memory again)."""
    return [(row.content, [float(x) for x in row.embedding.strip("[]").split(",")])
            for row in conn.execute(_VECTORS, {"user_id": user_id})]


_USER_TURNS = text("""
SELECT c.seq, c.session_id, s.instance_id, c.sent_at,
       EXISTS (SELECT 1 FROM engine.memory_turns t WHERE t.seq = c.seq) AS indexed
  FROM engine.chat_messages c JOIN engine.chat_sessions s ON s.id = c.session_id
 WHERE s.user_id = :user_id AND c.role = 'user'
 ORDER BY c.seq
""")


def user_turns(conn: Connection, user_id: uuid.UUID) -> list[Any]:
    """The user's own turns (seq, session, persona, when, already indexed?), in order: what
    the eval indexes for ``fused`` when the replay's classification did not."""
    return list(conn.execute(_USER_TURNS, {"user_id": user_id}))
