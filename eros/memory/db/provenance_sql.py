"""Provenance: reading and carrying ``companion_memories.source_seqs`` /
``source_fallback`` — consolidation's union of its members' sources, recall's and the CLI's
"where does this come from", and erasing what a chat message gave rise to."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from eros.memory.core.provenance import Provenance


def array_text(seqs: Sequence[int] | None) -> str | None:
    """A bigint[] as PostgreSQL's text form (``{3,5}``), so rows of different lengths travel
    in one text[] parameter (arrays of arrays must be rectangular)."""
    return None if seqs is None else "{" + ",".join(str(int(s)) for s in seqs) + "}"


def provenance_of(row: Any) -> Provenance | None:
    """A row's ``source_seqs``/``source_fallback`` as a Provenance; None = not recorded."""
    if row.source_seqs is None:
        return None
    return Provenance(tuple(int(s) for s in row.source_seqs), bool(row.source_fallback))


# The turns a user's memories came from, by seq (unique), only from that user's sessions.
TURNS = text("""
SELECT m.seq, m.session_id, m.role, m.content, m.sent_at
  FROM engine.chat_messages m JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE m.seq = ANY(CAST(:seqs AS bigint[])) AND s.user_id = :user_id
""")


def turns(conn: Connection, user_id: uuid.UUID, seqs: Sequence[int]) -> dict[int, Any]:
    """The user's stored turns among ``seqs`` (a forgotten message is simply absent)."""
    if not seqs:
        return {}
    return {int(r.seq): r for r in conn.execute(TURNS, {"seqs": sorted(set(seqs)),
                                                        "user_id": user_id})}


# --- erasing a message and what it gave rise to (eros forget --message) --------------------
MESSAGE = text("""
SELECT m.id, m.seq, m.session_id, s.user_id
  FROM engine.chat_messages m JOIN engine.chat_sessions s ON s.id = m.session_id
 WHERE m.id = :message_id
""")

# The session row, locked: a classify that is writing holds it until its commit, so this waits
# for it; afterwards its memories are committed and the next statement (a new snapshot under
# READ COMMITTED) sees them.
LOCK_SESSION = text("""
SELECT claim_token IS NOT NULL AS claimed, classified_through_seq
  FROM engine.chat_sessions WHERE id = :session_id FOR UPDATE
""")

# A classify in flight may have read the message and not written yet: its claim is dropped,
# so its late FINISH commits nothing, and the session is claimable again at once — the next
# extraction reads the same turns without the erased one.
RELEASE_CLAIM = text("""
UPDATE engine.chat_sessions
   SET claim_token = NULL, classification_claimed_at = NULL, next_attempt_at = NULL
 WHERE id = :session_id AND claim_token IS NOT NULL
""")

DELETE_MESSAGE = text("DELETE FROM engine.chat_messages WHERE id = :message_id RETURNING seq")

# The memories derived from the message: every memory whose sources hold its seq (the GIN
# index; canonical memories carry their members' sources), and — written before provenance —
# the memories of its session whose extraction window (metadata.source_seq) covered it.
DERIVED = text("""
SELECT id FROM engine.companion_memories
 WHERE source_seqs @> ARRAY[CAST(:seq AS bigint)] AND user_id = :user_id
UNION
SELECT id FROM engine.companion_memories
 WHERE session_id = :session_id AND source_seqs IS NULL
   AND jsonb_typeof(metadata -> 'source_seq') = 'array'
   AND CAST(:seq AS bigint) BETWEEN CAST(metadata -> 'source_seq' ->> 0 AS bigint)
                                AND CAST(metadata -> 'source_seq' ->> 1 AS bigint)
""")


def find_message(conn: Connection, message_id: uuid.UUID) -> Any:
    """The message's seq, session and user, or None."""
    return conn.execute(MESSAGE, {"message_id": message_id}).first()


def release_if_reading(conn: Connection, session_id: uuid.UUID, seq: int) -> bool:
    """Lock the session; drop a claim whose attempt may be reading ``seq`` (past the
    watermark). True if one was dropped."""
    row = conn.execute(LOCK_SESSION, {"session_id": session_id}).first()
    if row is None or not row.claimed or seq <= row.classified_through_seq:
        return False
    conn.execute(RELEASE_CLAIM, {"session_id": session_id})
    return True


def delete_message(conn: Connection, message_id: uuid.UUID) -> int:
    return len(conn.execute(DELETE_MESSAGE, {"message_id": message_id}).all())


def derived_from(conn: Connection, user_id: uuid.UUID, session_id: uuid.UUID,
                 seq: int) -> list[uuid.UUID]:
    """The memories that came from turn ``seq`` (sorted, for a stable erase order)."""
    rows = conn.execute(DERIVED, {"seq": seq, "user_id": user_id, "session_id": session_id})
    return sorted((r.id for r in rows), key=str)
