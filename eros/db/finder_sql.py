"""The consolidation finder's SQL: which users have enough near-duplicates to be worth a pass,
and the disjoint claims concurrent finders take on them (services/consolidation_finder.py).

Kept apart from :mod:`eros.db.consolidation_sql` (a pass's reads and writes): the finder runs
on its own schedule and touches only ``consolidation_state`` and an index-only read of the
memories.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text


@dataclass(frozen=True)
class CandidateUser:
    user_id: uuid.UUID
    newest: datetime
    total: int
    near: int

    @property
    def share(self) -> float:
        return self.near / self.total if self.total else 0.0


# Users with current memories newer than what the finder or a pass last looked at (an
# index-only scan of ix_companion_memories_current), not claimed, not parked; the
# longest-waiting first. Only for those few is the share computed, each against its own rows
# (a semi-join per memory that stops at the first near twin). A classify committing late with
# an older created_at can slip under the watermark: it is then noticed with the user's next
# memory — a late trigger, never a wrong merge (the pass itself reads everything current).
FIND_CANDIDATES = text("""
WITH fresh AS (
    SELECT user_id, max(created_at) AS newest
      FROM engine.companion_memories
     WHERE status = 'current'
     GROUP BY user_id),
candidates AS (
    SELECT f.user_id, f.newest
      FROM fresh f LEFT JOIN engine.consolidation_state s ON s.user_id = f.user_id
     WHERE (s.seen_until IS NULL OR f.newest > s.seen_until)
       AND (s.claimed_at IS NULL OR s.claimed_at < now() - make_interval(secs => :stale_secs))
       AND COALESCE(s.attempts, 0) < :max_attempts
     ORDER BY s.seen_until NULLS FIRST, f.newest
     LIMIT :scan_limit)
SELECT c.user_id, c.newest, sh.total, sh.near
  FROM candidates c
  CROSS JOIN LATERAL (
      SELECT count(*) AS total,
             count(*) FILTER (WHERE EXISTS (
                 SELECT 1 FROM engine.companion_memories b
                  WHERE b.user_id = a.user_id AND b.status = 'current'
                    AND b.category = a.category
                    AND b.instance_id IS NOT DISTINCT FROM a.instance_id
                    AND b.embedding_model IS NOT DISTINCT FROM a.embedding_model
                    AND b.id <> a.id AND (a.embedding <=> b.embedding) <= :max_distance))
                 AS near
        FROM engine.companion_memories a
       WHERE a.user_id = c.user_id AND a.status = 'current') sh
""")

# Disjoint claims for concurrent finders: a row claimed (or being claimed) by another finder
# fails the WHERE after its lock is released, so it is neither updated nor returned.
CLAIM_USERS = text("""
INSERT INTO engine.consolidation_state AS s (user_id, claimed_at)
SELECT unnest(CAST(:ids AS uuid[])), now()
ON CONFLICT (user_id) DO UPDATE SET claimed_at = now()
 WHERE s.claimed_at IS NULL OR s.claimed_at < now() - make_interval(secs => :stale_secs)
RETURNING s.user_id
""")

# Below the threshold: remember what was looked at, so the user is measured again only when
# something newer arrives.
MARK_CHECKED = text("""
INSERT INTO engine.consolidation_state AS s (user_id, seen_until)
SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:newest AS timestamptz[]))
ON CONFLICT (user_id) DO UPDATE
   SET seen_until = GREATEST(s.seen_until, EXCLUDED.seen_until)
""")


def find_candidates(conn: Connection, *, similarity: float, stale_secs: float,
                    max_attempts: int, scan_limit: int) -> list[CandidateUser]:
    rows = conn.execute(FIND_CANDIDATES, {
        "max_distance": 1.0 - similarity, "stale_secs": stale_secs,
        "max_attempts": max_attempts, "scan_limit": scan_limit})
    return [CandidateUser(r.user_id, r.newest, int(r.total), int(r.near)) for r in rows]


def claim_users(conn: Connection, user_ids: Sequence[uuid.UUID], *,
                stale_secs: float) -> list[uuid.UUID]:
    if not user_ids:
        return []
    rows = conn.execute(CLAIM_USERS, {"ids": list(user_ids), "stale_secs": stale_secs})
    return [r.user_id for r in rows]


def mark_checked(conn: Connection, users: Sequence[CandidateUser]) -> None:
    if users:
        conn.execute(MARK_CHECKED, {"ids": [u.user_id for u in users],
                                    "newest": [u.newest for u in users]})
