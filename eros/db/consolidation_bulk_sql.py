"""The statements of the bulk first pass (issue 34): one read of a clustered user's current
sketches with each memory's probed cells, and the exact check of the candidate pairs found
from them — the same predicate as :data:`eros.db.cells_sql.CELL_PAIRS`, evaluated for all the
user's memories at once instead of one index probe per memory."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, text

from eros.db.schema import SCHEMA

_SKETCHES = f"{SCHEMA}.memory_sketches"
_CELLS = f"{SCHEMA}.memory_cells"
#: candidate pairs checked exactly per statement (two arrays of this many uuids).
CHECK_BATCH = 20_000

# Every current memory of the user with a sketch: its cell (-1: none), layer, category,
# sketch (as '0101…') and the ``:probes`` cells whose centroids are nearest its embedding —
# the probe of CELL_PAIRS, ranked by the same ``<=>`` on the same vectors. The centroids are
# read once (a materialised CTE), not once per memory.
CURRENT_SKETCHES = text(f"""
WITH cc AS MATERIALIZED (SELECT cell, centroid FROM {_CELLS} WHERE user_id = :u)
SELECT s.memory_id AS id, COALESCE(s.cell, -1) AS cell, s.instance_id, s.category,
       CAST(s.sketch AS text) AS sketch,
       ARRAY(SELECT cc.cell FROM cc ORDER BY cc.centroid <=> m.embedding LIMIT :probes) AS probes
  FROM {_SKETCHES} s
  JOIN {SCHEMA}.companion_memories m ON m.id = s.memory_id
 WHERE s.user_id = :u AND s.status = 'current' AND s.sketch IS NOT NULL
   AND m.embedding IS NOT NULL
""")

# The given rows as the mirror has them now (rows written since the bulk read: a pass's
# canonical rows), in the same shape, without probes (they are never searched from).
SKETCHES_BY_ID = text(f"""
SELECT s.memory_id AS id, COALESCE(s.cell, -1) AS cell, s.instance_id, s.category,
       CAST(s.sketch AS text) AS sketch
  FROM {_SKETCHES} s
 WHERE s.memory_id = ANY(CAST(:ids AS uuid[])) AND s.status = 'current'
   AND s.sketch IS NOT NULL
""")

# The exact check of CELL_PAIRS on given candidate pairs.
CHECK_PAIRS = text(f"""
SELECT x.a, x.b
  FROM unnest(CAST(:a AS uuid[]), CAST(:b AS uuid[])) AS x(a, b)
  JOIN {SCHEMA}.companion_memories a ON a.id = x.a
  JOIN {SCHEMA}.companion_memories c ON c.id = x.b
 WHERE c.embedding_model IS NOT DISTINCT FROM a.embedding_model
   AND (a.embedding <=> c.embedding) <= :max_distance
""")

# capped: "more than one chunk", never the exact backlog of a huge user.
BACKLOG_COUNT = text("""
SELECT count(*) FROM (SELECT 1 FROM engine.consolidation_backlog
                       WHERE user_id = :user_id LIMIT :cap) x
""")

CURRENT_OF = text("""
SELECT id FROM engine.companion_memories
 WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'current'
""")


@dataclass
class Sketches:
    """Rows of the mirror, position-aligned: ids, cell (-1 none), scope key (layer and
    category), packed sketches (rows × words, uint64) and, for searched rows, probed cells
    (rows × probes, -2 padding)."""

    ids: list[uuid.UUID]
    cells: np.ndarray
    scopes: list[tuple[uuid.UUID | None, str]]
    words: np.ndarray
    probes: np.ndarray | None


def _pack(sketches: Sequence[str]) -> np.ndarray:
    if not sketches:
        return np.zeros((0, 1), dtype=np.uint64)
    bits = np.frombuffer("".join(sketches).encode("ascii"), dtype=np.uint8).reshape(
        len(sketches), -1) - ord("0")
    packed = np.packbits(bits, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _sketches(rows: Sequence[object], probes: int | None) -> Sketches:
    ids = [r.id for r in rows]  # type: ignore[attr-defined]
    cells = np.array([r.cell for r in rows], dtype=np.int64)  # type: ignore[attr-defined]
    scopes = [(r.instance_id, r.category) for r in rows]  # type: ignore[attr-defined]
    words = _pack([r.sketch for r in rows])  # type: ignore[attr-defined]
    probed = None
    if probes is not None:
        probed = np.full((len(rows), max(probes, 1)), -2, dtype=np.int64)
        for i, r in enumerate(rows):
            got = r.probes  # type: ignore[attr-defined]
            probed[i, :len(got)] = got
    return Sketches(ids, cells, scopes, words, probed)


def current_sketches(conn: Connection, user_id: uuid.UUID, *, probes: int) -> Sketches:
    """Every current memory of a clustered user with its sketch, cell and probed cells."""
    rows = conn.execute(CURRENT_SKETCHES, {"u": user_id, "probes": max(probes, 1)}).all()
    return _sketches(rows, probes)


def sketches_by_id(conn: Connection, ids: Sequence[uuid.UUID]) -> Sketches:
    rows = conn.execute(SKETCHES_BY_ID, {"ids": list(ids)}).all() if ids else []
    return _sketches(rows, None)


def check_pairs(conn: Connection, a: Sequence[uuid.UUID], b: Sequence[uuid.UUID], *,
                max_distance: float) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """The candidates (a[i], b[i]) of one embedding model within ``max_distance``."""
    out: list[tuple[uuid.UUID, uuid.UUID]] = []
    for start in range(0, len(a), CHECK_BATCH):
        out.extend((r.a, r.b) for r in conn.execute(CHECK_PAIRS, {
            "a": list(a[start:start + CHECK_BATCH]), "b": list(b[start:start + CHECK_BATCH]),
            "max_distance": max_distance}))
    return out


def current_of(conn: Connection, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of ``ids`` are current now (no lock: a read)."""
    if not ids:
        return set()
    return {r.id for r in conn.execute(CURRENT_OF, {"ids": list(ids)})}


def backlog_count(conn: Connection, user_id: uuid.UUID, *, cap: int) -> int:
    return int(conn.execute(BACKLOG_COUNT, {"user_id": user_id, "cap": cap}).scalar_one())
