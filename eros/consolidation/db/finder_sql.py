"""The consolidation finder's SQL: which users have enough near-duplicates to be worth a pass,
and the disjoint claims concurrent finders take on them (services/consolidation_finder.py).

Kept apart from :mod:`eros.consolidation.db.consolidation_sql` (a pass's reads and writes): the
finder runs
on its own schedule and touches only ``consolidation_state`` and the memories not yet compared
(plus one nearest-neighbour probe per sampled memory).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, text

from eros.consolidation.db.consolidation_sql import SKETCH_CANDIDATES, max_hamming
from eros.db.schema import EMBEDDING_DIM


@dataclass(frozen=True)
class CandidateUser:
    user_id: uuid.UUID
    newest: datetime
    #: memories not yet compared (the finder's memory of what it measured).
    backlog: int
    total: int
    near: int

    @property
    def share(self) -> float:
        return self.near / self.total if self.total else 0.0


# Users with memories not yet compared (``consolidation_backlog``, 0013: O(backlog), however
# many memories were compared before) whose count differs from the one
# the finder last measured (``measured_backlog``; a pass clears it), not claimed, not parked;
# the longest-waiting first. The share is measured on at most :sample of each user's
# uncompared memories, oldest first: whether each has a same-scope row within θ among those
# its binary sketch passes (the pass's prefilter, consolidation_sql.max_hamming) — a per-user
# cost of sample × rows of one category through the sketch index, never all pairs.
# A count, not a created_at watermark: a classify committing late with an older created_at
# changes the count, so it is measured at the next run (a watermark let it slip under).
FIND_CANDIDATES = text(f"""
WITH fresh AS (
    SELECT user_id, max(created_at) AS newest, count(*) AS backlog
      FROM engine.consolidation_backlog
     GROUP BY user_id),
candidates AS (
    SELECT f.user_id, f.newest, f.backlog
      FROM fresh f LEFT JOIN engine.consolidation_state s ON s.user_id = f.user_id
     WHERE s.measured_backlog IS DISTINCT FROM f.backlog
       AND (s.claimed_at IS NULL OR s.claimed_at < now() - make_interval(secs => :stale_secs))
       AND COALESCE(s.attempts, 0) < :max_attempts
     ORDER BY s.seen_until NULLS FIRST, f.newest
     LIMIT :scan_limit)
SELECT c.user_id, c.newest, c.backlog, sh.total, sh.near
  FROM candidates c
  CROSS JOIN LATERAL (
      SELECT count(*) AS total, count(*) FILTER (WHERE nn.distance <= :max_distance) AS near
        FROM (SELECT a.id, a.user_id, a.category, a.instance_id, a.embedding_model,
                     a.embedding, a.embedding_bq
                FROM engine.consolidation_backlog q
                JOIN engine.companion_memories a ON a.id = q.memory_id
               WHERE q.user_id = c.user_id AND a.status = 'current'
               ORDER BY q.created_at, q.memory_id
               LIMIT :sample) a
        LEFT JOIN LATERAL (
            SELECT min(c.embedding <=> a.embedding) AS distance
              FROM ({SKETCH_CANDIDATES}) n
              JOIN engine.companion_memories c ON c.id = n.id
             WHERE c.id <> a.id
               AND c.embedding_model IS NOT DISTINCT FROM a.embedding_model) nn ON true) sh
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

# Below the threshold: remember what was measured, so the user is measured again only when
# their uncompared memories change.
MARK_CHECKED = text("""
INSERT INTO engine.consolidation_state AS s (user_id, seen_until, measured_backlog)
SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:newest AS timestamptz[]),
                     CAST(:backlog AS integer[]))
ON CONFLICT (user_id) DO UPDATE
   SET seen_until = GREATEST(s.seen_until, EXCLUDED.seen_until),
       measured_backlog = EXCLUDED.measured_backlog
""")


def find_candidates(conn: Connection, *, similarity: float, stale_secs: float,
                    max_attempts: int, scan_limit: int, sample: int) -> list[CandidateUser]:
    rows = conn.execute(FIND_CANDIDATES, {
        "max_distance": 1.0 - similarity, "stale_secs": stale_secs,
        "max_attempts": max_attempts, "scan_limit": scan_limit, "sample": sample,
        "max_hamming": max_hamming(similarity, EMBEDDING_DIM)})
    return [CandidateUser(r.user_id, r.newest, int(r.backlog), int(r.total), int(r.near))
            for r in rows]


def claim_users(conn: Connection, user_ids: Sequence[uuid.UUID], *,
                stale_secs: float) -> list[uuid.UUID]:
    if not user_ids:
        return []
    rows = conn.execute(CLAIM_USERS, {"ids": list(user_ids), "stale_secs": stale_secs})
    return [r.user_id for r in rows]


def mark_checked(conn: Connection, users: Sequence[CandidateUser]) -> None:
    if users:
        conn.execute(MARK_CHECKED, {"ids": [u.user_id for u in users],
                                    "newest": [u.newest for u in users],
                                    "backlog": [u.backlog for u in users]})
