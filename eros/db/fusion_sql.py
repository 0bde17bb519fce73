"""What the ``fused`` strategy reads besides the two searches (issue 31): which of the found
turns only superseded memories cite, and the turns a memory cites read by seq (its quotes).

Both go through ``ix_companion_memories_source_seqs`` (GIN) or the primary key of
``engine.memory_turns``: a handful of index probes per recall, never a scan of the user.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import Connection, text

from eros.core.fusion import TurnCandidate

# A turn is stale when a superseded memory cites it and no current one does. Fallback
# provenance (the whole extraction window) cites nothing in particular, on either side.
_STALE = text("""
SELECT s.seq FROM unnest(CAST(:seqs AS bigint[])) AS s(seq)
 WHERE EXISTS (SELECT 1 FROM engine.companion_memories m
                WHERE m.source_seqs @> ARRAY[s.seq] AND m.user_id = :user_id
                  AND m.status = 'superseded' AND NOT m.source_fallback)
   AND NOT EXISTS (SELECT 1 FROM engine.companion_memories m
                    WHERE m.source_seqs @> ARRAY[s.seq] AND m.user_id = :user_id
                      AND m.status = 'current' AND NOT m.source_fallback)
""")

_BY_SEQ = """
SELECT t.seq, t.session_id, t.said_at, c.content, t.sensitivity
  FROM engine.memory_turns t JOIN engine.chat_messages c ON c.seq = t.seq
 WHERE t.seq = ANY(CAST(:seqs AS bigint[])) AND t.user_id = :user_id AND t.status = 'current'
"""


def stale_seqs(conn: Connection, user_id: uuid.UUID, seqs: Iterable[int]) -> set[int]:
    """The ``seqs`` that only superseded memories of ``user_id`` cite."""
    wanted = sorted(set(seqs))
    if not wanted:
        return set()
    return {int(r.seq) for r in conn.execute(_STALE, {"seqs": wanted, "user_id": user_id})}


def turns_by_seq(conn: Connection, user_id: uuid.UUID, seqs: Iterable[int], *,
                 include_sensitive: bool) -> list[TurnCandidate]:
    """``user_id``'s recallable turns among ``seqs`` (distance unknown: 2, the farthest)."""
    wanted = sorted(set(seqs))
    if not wanted:
        return []
    sql = _BY_SEQ + ("" if include_sensitive else " AND t.sensitivity IS NULL")
    rows = conn.execute(text(sql), {"seqs": wanted, "user_id": user_id})
    return [TurnCandidate(int(r.seq), str(r.session_id), r.said_at, r.content, 2.0,
                          r.sensitivity) for r in rows]
