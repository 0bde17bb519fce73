"""The reads of consolidation (real dreaming): a pass's snapshot, its near pairs by every
search, its backlog (the writes are :mod:`eros.consolidation.db.consolidation_write_sql`).

Every function takes a ``Connection``: the service decides the transactions (a read snapshot,
then one write transaction per pass under a per-user advisory lock). The near-duplicate
predicate — same user, layer, category and embedding model, both current, cosine distance
≤ 1 − θ — is written once here (``_NEAR``) for the pass's pair queries; the finder's share
(:mod:`eros.consolidation.db.finder_sql`) spells the same predicate row by row: change both
together, so the finder never triggers on a different notion of "near" than the pass acts on.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, text

from eros.consolidation.core.consolidation import Memory, Pair
from eros.db.schema import EMBEDDING_DIM

_NIL = "'00000000-0000-0000-0000-000000000000'::uuid"
#: near = close vectors of one embedding model: two models' vectors are never compared (0012)
_NEAR = ("a.embedding_model IS NOT DISTINCT FROM b.embedding_model"
         " AND (a.embedding <=> b.embedding) <= :max_distance")

SNAPSHOT = text("""
SELECT id, content, category, created_at, importance, instance_id,
       consolidation_seen_at IS NOT NULL AS seen
  FROM engine.companion_memories
 WHERE user_id = :user_id AND status = 'current'
 ORDER BY created_at, id
""")

# One scan of the user's current rows, then a hash join on (layer, category) in memory: the
# user's rows are compared with each other only, never with anyone else's.
NEAR_PAIRS = text(f"""
WITH mine AS MATERIALIZED (
    SELECT id, COALESCE(instance_id, {_NIL}) AS layer, category, embedding, embedding_model
      FROM engine.companion_memories
     WHERE user_id = :user_id AND status = 'current' AND embedding IS NOT NULL)
SELECT a.id AS a, b.id AS b
  FROM mine a JOIN mine b ON a.layer = b.layer AND a.category = b.category AND a.id < b.id
 WHERE {_NEAR}
""")

# --- the incremental comparison ----------------------------------------------------
# A pass compares only memories not yet compared (their rows in ``consolidation_backlog``,
# 0013) with their neighbours, oldest first, one keyset page of the backlog's index at a
# time: O(new × k), never the user's all pairs.
# The next :n backlog rows in the index's order (ix_consolidation_backlog_user), each with
# whether its memory is still current (a correlated scalar subquery: a primary-key lookup
# per row of the page, never a join or hashed scan of the memories). Joined to the memories
# before the LIMIT, the planner (which expects a backlog of a few rows: it fills and empties
# between autovacuum's analyses) read the user's whole backlog and looked every row up, then
# sorted: ~30 ms a page at 50k, the largest statement of a profiled first pass.
UNCOMPARED_PAGE = text("""
SELECT q.memory_id AS id, q.created_at,
       coalesce((SELECT m.status = 'current' FROM engine.companion_memories m
                  WHERE m.id = q.memory_id), false) AS current
  FROM (SELECT memory_id, created_at FROM engine.consolidation_backlog
         WHERE user_id = :user_id
           AND (created_at, memory_id) > (CAST(:after_at AS timestamptz),
                                          CAST(:after_id AS uuid))
         ORDER BY created_at, memory_id
         LIMIT :n) q
 ORDER BY q.created_at, q.memory_id
""")

# capped: the plan choice needs "more than N", never the exact count of a huge user.
CURRENT_COUNT = text("""
SELECT count(*) FROM (SELECT 1 FROM engine.companion_memories
                       WHERE user_id = :user_id AND status = 'current' LIMIT :cap) x
""")

#: b is a candidate twin of a: same user, layer, category and embedding model, current.
_SCOPE = ("b.user_id = a.user_id AND b.status = 'current' AND b.category = a.category"
          " AND b.instance_id IS NOT DISTINCT FROM a.instance_id"
          " AND b.embedding_model IS NOT DISTINCT FROM a.embedding_model AND b.id <> a.id")

# Near pairs of each given memory through its binary sketch (``embedding_bq``, as recall's
# quantised plan): an index-only scan of the sketches of its user, layer and category
# (ix_companion_memories_recall_bq) keeps those within :max_hamming bits — the angle of θ
# plus four standard deviations (:func:`max_hamming`) — and only those are checked exactly.
# Linear in the layer/category's rows at ~0.2 µs a row, never reading another user's rows;
# the two branches keep the layer an index condition (``IS NOT DISTINCT FROM`` is not one).
#: the sketch prefilter over the alias ``a`` (its candidates' ids), shared with the finder.
SKETCH_CANDIDATES = """
       SELECT b.id FROM engine.companion_memories b
        WHERE a.instance_id IS NULL AND b.user_id = a.user_id AND b.instance_id IS NULL
          AND b.category = a.category AND b.status = 'current'
          AND (b.embedding_bq <~> a.embedding_bq) <= :max_hamming
       UNION ALL
       SELECT b.id FROM engine.companion_memories b
        WHERE a.instance_id IS NOT NULL AND b.user_id = a.user_id
          AND b.instance_id = a.instance_id AND b.category = a.category
          AND b.status = 'current'
          AND (b.embedding_bq <~> a.embedding_bq) <= :max_hamming"""

# The candidates are a materialised CTE: left to itself, the planner (which expects a row or
# two from the lateral search) may join the exact check first — a scan of every memory.
QUANTISED_PAIRS = text(f"""
WITH candidates AS MATERIALIZED (
    SELECT a.id AS a, n.id AS b
      FROM engine.companion_memories a
     CROSS JOIN LATERAL ({SKETCH_CANDIDATES}) n
     WHERE a.id = ANY(CAST(:ids AS uuid[])) AND a.embedding IS NOT NULL AND n.id <> a.id)
SELECT x.a, x.b
  FROM candidates x
  JOIN engine.companion_memories a ON a.id = x.a
  JOIN engine.companion_memories c ON c.id = x.b
 WHERE c.embedding_model IS NOT DISTINCT FROM a.embedding_model
   AND (a.embedding <=> c.embedding) <= :max_distance
""")


# The k nearest same-scope rows of each given memory through HNSW (pgvector 0.8 iterative
# scan, set per transaction by recall_hnsw_sql.configure_hnsw), kept when within θ: one index
# search per memory, O(log n) each — a very large user's plan.
KNN_PAIRS = text(f"""
SELECT a.id AS a, n.id AS b
  FROM engine.companion_memories a
 CROSS JOIN LATERAL (
       SELECT b.id, b.embedding <=> a.embedding AS distance
         FROM engine.companion_memories b
        WHERE {_SCOPE}
        ORDER BY b.embedding <=> a.embedding
        LIMIT :k) n
 WHERE a.id = ANY(CAST(:ids AS uuid[])) AND a.embedding IS NOT NULL
   AND n.distance <= :max_distance
""")

# The exact comparison of the given memories with every same-scope row of the user: a small
# user's plan (no graph to walk), and the exact answer the HNSW plan is measured against.
EXACT_PAIRS = text(f"""
WITH mine AS MATERIALIZED (
    SELECT id, COALESCE(instance_id, {_NIL}) AS layer, category, embedding, embedding_model,
           id = ANY(CAST(:ids AS uuid[])) AS fresh
      FROM engine.companion_memories
     WHERE user_id = :user_id AND status = 'current' AND embedding IS NOT NULL)
SELECT a.id AS a, b.id AS b
  FROM mine a JOIN mine b ON a.layer = b.layer AND a.category = b.category AND a.id <> b.id
 WHERE a.fresh AND (NOT b.fresh OR a.id < b.id) AND {_NEAR}
""")

# Near pairs between two given sets of rows (a pass's canonical rows and the memories it
# looked at): the after-share without reading the rest of the user.
PAIRS_BETWEEN = text(f"""
SELECT a.id AS a, b.id AS b
  FROM engine.companion_memories a
  JOIN engine.companion_memories b ON {_SCOPE}
 WHERE a.id = ANY(CAST(:left AS uuid[])) AND b.id = ANY(CAST(:right AS uuid[]))
   AND {_NEAR}
""")

ROWS_BY_ID = text("""
SELECT id, content, category, created_at, importance, instance_id,
       consolidation_seen_at IS NOT NULL AS seen
  FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'current'
 ORDER BY created_at, id
""")

# Compared: out of the backlog (a narrow delete; the memory row is not rewritten).
STAMP_COMPARED = text("""
DELETE FROM engine.consolidation_backlog WHERE memory_id = ANY(CAST(:ids AS uuid[]))
""")

# Members of clusters that did not fit this call: compared again next pass, so they are found.
UNCOMPARE = text("""
INSERT INTO engine.consolidation_backlog (memory_id, user_id, created_at)
SELECT id, user_id, created_at FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'current'
ON CONFLICT (memory_id) DO NOTHING
""")



def read_snapshot(conn: Connection, user_id: uuid.UUID) -> list[Memory]:
    return [Memory(r.id, r.content, r.category, r.created_at, r.importance, r.instance_id,
                   r.seen) for r in conn.execute(SNAPSHOT, {"user_id": user_id})]


def near_pairs(conn: Connection, user_id: uuid.UUID, *, similarity: float) -> list[Pair]:
    rows = conn.execute(NEAR_PAIRS, {"user_id": user_id, "max_distance": 1.0 - similarity})
    return [(r.a, r.b) for r in rows]


def uncompared_page(conn: Connection, user_id: uuid.UUID, n: int,
                    after: tuple[datetime, uuid.UUID] | None) -> list[tuple[uuid.UUID, datetime]]:
    """The next ``n`` not-yet-compared memories still current, oldest first, after the keyset
    ``after``: backlog pages in index order until ``n`` are current or the backlog ends (a
    row no longer current — rare: a pass removes its members from the backlog — is stepped
    over, as the join did)."""
    at, last = after or (datetime(1, 1, 1, tzinfo=UTC), uuid.UUID(int=0))
    found: list[tuple[uuid.UUID, datetime]] = []
    while len(found) < n:
        want = n - len(found)
        rows = conn.execute(UNCOMPARED_PAGE, {"user_id": user_id, "n": want, "after_at": at,
                                              "after_id": last}).all()
        found += [(r.id, r.created_at) for r in rows if r.current]
        if len(rows) < want:
            break
        at, last = rows[-1].created_at, rows[-1].id
    return found


def current_count(conn: Connection, user_id: uuid.UUID, *, cap: int) -> int:
    return int(conn.execute(CURRENT_COUNT, {"user_id": user_id, "cap": cap}).scalar_one())


def max_hamming(similarity: float, dim: int) -> int:
    """Sketch bits two vectors at cosine ``similarity`` differ in, plus four standard
    deviations: a sign bit differs with probability angle/π (a random-hyperplane sketch), so
    a pair at θ passes the prefilter with probability > 0.9999 and one nearer still more so."""
    p = math.acos(max(-1.0, min(1.0, similarity))) / math.pi
    return min(dim, math.ceil(dim * p + 4 * math.sqrt(dim * p * (1 - p))))


def quantised_pairs(conn: Connection, ids: Sequence[uuid.UUID], *, similarity: float,
                    dim: int = EMBEDDING_DIM) -> list[Pair]:
    """Near pairs of ``ids`` through the sketch prefilter, checked exactly."""
    if not ids:
        return []
    rows = conn.execute(QUANTISED_PAIRS, {"ids": list(ids), "max_distance": 1.0 - similarity,
                                          "max_hamming": max_hamming(similarity, dim)})
    return unique_pairs(rows)


def knn_pairs(conn: Connection, ids: Sequence[uuid.UUID], *, similarity: float,
              k: int) -> list[Pair]:
    """Near pairs of ``ids`` among their ``k`` nearest through HNSW (the caller has set the
    iterative scan for its transaction)."""
    if not ids:
        return []
    rows = conn.execute(KNN_PAIRS, {"ids": list(ids), "k": k,
                                    "max_distance": 1.0 - similarity})
    return unique_pairs(rows)


def exact_pairs(conn: Connection, user_id: uuid.UUID, ids: Sequence[uuid.UUID], *,
                similarity: float) -> list[Pair]:
    """Every near pair with at least one end in ``ids``, exactly."""
    if not ids:
        return []
    rows = conn.execute(EXACT_PAIRS, {"user_id": user_id, "ids": list(ids),
                                      "max_distance": 1.0 - similarity})
    return unique_pairs(rows)


def pairs_between(conn: Connection, left: Sequence[uuid.UUID], right: Sequence[uuid.UUID], *,
                  similarity: float) -> list[Pair]:
    if not left or not right:
        return []
    rows = conn.execute(PAIRS_BETWEEN, {"left": list(left), "right": list(right),
                                        "max_distance": 1.0 - similarity})
    return unique_pairs(rows)


def unique_pairs(rows: Any) -> list[Pair]:
    """Each unordered pair once (a search from both ends finds it twice), in text order: a
    UUID compares by its 128 bits, which is the order of its text (fixed-width lowercase
    hex), so the ids are compared as numbers, not as ``str()`` (~1 µs each)."""
    seen: set[Pair] = set()
    for a, b in rows:
        seen.add((a, b) if a < b else (b, a))
    return sorted(seen, key=pair_order)


def pair_order(pair: Pair) -> tuple[int, int]:
    """A pair's place in text order, as two numbers (compared in C, not by ``UUID.__lt__``)."""
    return pair[0].int, pair[1].int


def rows_by_id(conn: Connection, ids: Sequence[uuid.UUID]) -> list[Memory]:
    """The current ones of ``ids``, as a pass reads them."""
    if not ids:
        return []
    return [Memory(r.id, r.content, r.category, r.created_at, r.importance, r.instance_id,
                   r.seen) for r in conn.execute(ROWS_BY_ID, {"ids": list(ids)})]


def stamp_compared(conn: Connection, ids: Sequence[uuid.UUID]) -> None:
    if ids:
        conn.execute(STAMP_COMPARED, {"ids": list(ids)})


def uncompare(conn: Connection, ids: Sequence[uuid.UUID]) -> None:
    if ids:
        conn.execute(UNCOMPARE, {"ids": list(ids)})
