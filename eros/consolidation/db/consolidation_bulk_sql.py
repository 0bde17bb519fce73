"""The statements of the bulk first pass: a clustered user's current vectors read
once (binary COPY) with what the cells search needs of each row, the centroids, and the
pgvector checks of what the matrix products leave uncertain — the predicate of
:data:`eros.recall.db.cells_sql.CELL_PAIRS`, decided in SQL wherever floating point could differ."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, text

from eros.consolidation.core.consolidation_search import Band
from eros.db.schema import SCHEMA

_SKETCHES = f"{SCHEMA}.memory_sketches"
_CELLS = f"{SCHEMA}.memory_cells"
_MEMORIES = f"{SCHEMA}.companion_memories"
_COPY_HEADER = 19  # PGCOPY signature (11), flags (4), header extension length (4)
#: candidate pairs checked exactly per statement (two arrays of this many uuids).
CHECK_BATCH = 20_000

# What the cells search reads of every row it may return: the mirror's current rows with a
# sketch (the search's own filter), their cell, layer and category, and the memory's model.
ROW_META = f"""
SELECT s.memory_id AS id, COALESCE(s.cell, -1) AS cell, s.instance_id, s.category,
       m.embedding_model
  FROM {_SKETCHES} s JOIN {_MEMORIES} m ON m.id = s.memory_id
 WHERE s.status = 'current' AND s.sketch IS NOT NULL AND m.embedding IS NOT NULL
"""
CURRENT_META = text(ROW_META + " AND s.user_id = :u")
META_BY_ID = text(ROW_META + " AND s.memory_id = ANY(CAST(:ids AS uuid[]))")

CENTROIDS = text(f"""
SELECT cell, CAST(centroid AS text) AS centroid FROM {_CELLS} WHERE user_id = :u ORDER BY cell
""")

# A change of the user's cells (a re-clustering) during a run: the bulk result is read again.
CELLS_VERSION = text(f"""
SELECT count(*) AS n, max(created_at) AS at FROM {_CELLS} WHERE user_id = :u
""")

# The probe of CELL_PAIRS for the memories whose nearest cells the product could not rank
# for certain (a tie within rounding): the same ORDER BY on the same vectors.
PROBES = text(f"""
SELECT a.id, ARRAY(SELECT mc.cell FROM {_CELLS} mc WHERE mc.user_id = a.user_id
                    ORDER BY mc.centroid <=> a.embedding LIMIT :probes) AS cells
  FROM {_MEMORIES} a WHERE a.id = ANY(CAST(:ids AS uuid[]))
""")

# pgvector's distances of given (memory, cell) pairs: the few cells a tie at a memory's probe
# cut leaves undecided (consolidation_search.probe_band), with PROBES' operands.
BAND_DISTANCES = text(f"""
SELECT x.id, x.cell, mc.centroid <=> a.embedding AS distance
  FROM unnest(CAST(:ids AS uuid[]), CAST(:cells AS integer[])) AS x(id, cell)
  JOIN {_MEMORIES} a ON a.id = x.id
  JOIN {_CELLS} mc ON mc.user_id = a.user_id AND mc.cell = x.cell
""")

# The exact check of CELL_PAIRS on given candidate pairs.
CHECK_PAIRS = text(f"""
SELECT x.a, x.b
  FROM unnest(CAST(:a AS uuid[]), CAST(:b AS uuid[])) AS x(a, b)
  JOIN {_MEMORIES} a ON a.id = x.a
  JOIN {_MEMORIES} c ON c.id = x.b
 WHERE c.embedding_model IS NOT DISTINCT FROM a.embedding_model
   AND (a.embedding <=> c.embedding) <= :max_distance
""")

# capped: "more than one chunk", never the exact backlog of a huge user.
BACKLOG_COUNT = text(f"""
SELECT count(*) FROM (SELECT 1 FROM {SCHEMA}.consolidation_backlog
                       WHERE user_id = :user_id LIMIT :cap) x
""")

# The user's backlog rows dated from :since on (an index range): memories written by others
# since the bulk read, which the searched memories must meet as today's search would.
RECENT_BACKLOG = text(f"""
SELECT memory_id FROM {SCHEMA}.consolidation_backlog
 WHERE user_id = :u AND created_at >= :since
""")

#: how far back "written since the bulk read" looks: a transaction that began (and dated its
#: rows) before the read's snapshot but committed after it is still caught.
RECENT = "1 hour"
READ_AT = text(f"SELECT now() - interval '{RECENT}'")

# What a chunk's read needs before its backlog, in one round trip (each was a statement of
# its own: ~8 a chunk): the transaction's statement timeout (0: none), the capped count and
# whether the user has cells (the choice of search), the cells' version (a re-clustering
# since the bulk read), the claim the pass runs under, the backlog rows dated from
# :since on (written by others since the bulk read), and the backlog's first :n rows in its
# index order (the chunk: which of them are current is read with their rows, one heap probe
# a row instead of two). One REPEATABLE READ snapshot: the same values the separate
# statements read.
CHUNK_STATE = text(f"""
SELECT CASE WHEN CAST(:ms AS integer) > 0
            THEN set_config('statement_timeout', CAST(:ms AS text), true) END AS timeout,
       (SELECT count(*) FROM (SELECT 1 FROM {_MEMORIES}
                               WHERE user_id = :u AND status = 'current' LIMIT :cap) x)
           AS current,
       EXISTS (SELECT 1 FROM {_CELLS} WHERE user_id = :u) AS has_cells,
       (SELECT count(*) FROM {_CELLS} WHERE user_id = :u) AS cells_n,
       (SELECT max(created_at) FROM {_CELLS} WHERE user_id = :u) AS cells_at,
       (SELECT claimed_at FROM {SCHEMA}.consolidation_state WHERE user_id = :u) AS claim,
       ARRAY(SELECT memory_id FROM {SCHEMA}.consolidation_backlog
              WHERE user_id = :u AND created_at >= :since) AS recent,
       ARRAY(SELECT memory_id FROM {SCHEMA}.consolidation_backlog
              WHERE user_id = :u ORDER BY created_at, memory_id LIMIT :n) AS backlog
""")

CURRENT_OF = text(f"""
SELECT id FROM {_MEMORIES} WHERE id = ANY(CAST(:ids AS uuid[])) AND status = 'current'
""")


@dataclass
class Vectors:
    """Row ids and their float32 vectors (rows × dim), in the same order."""

    ids: list[uuid.UUID]
    vectors: np.ndarray


def _row_type(dim: int) -> np.dtype[Any]:
    """One row of ``COPY (SELECT id, embedding …) TO STDOUT (FORMAT BINARY)``: fixed size."""
    return np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", "V16"), ("vec_len", ">i4"),
                     ("dim", ">i2"), ("unused", ">i2"), ("vec", ">f4", (dim,))])


def _copy_vectors(conn: Connection, where: str, dim: int) -> Vectors:
    raw = conn.connection.driver_connection
    assert raw is not None
    buf = bytearray()
    with raw.cursor() as cur, cur.copy(
            f"COPY (SELECT id, embedding FROM {_MEMORIES} WHERE {where}"
            " AND embedding IS NOT NULL) TO STDOUT (FORMAT BINARY)") as copy:
        for chunk in copy:
            buf += chunk
    row = _row_type(dim)
    count = max(0, len(buf) - _COPY_HEADER - 2) // row.itemsize
    if not count:
        return Vectors([], np.zeros((0, dim), dtype=np.float32))
    # read in place (no copy of the body), the vectors cut out as one contiguous block of
    # big-endian floats then byte-swapped: ~3x faster than converting the records' unaligned
    # field (a 50k user's 100 MB)
    rows = np.frombuffer(buf, dtype=row, count=count, offset=_COPY_HEADER)
    if int(rows["dim"][0]) != dim:
        raise ValueError(f"stored vectors have {int(rows['dim'][0])} dimensions, expected {dim}")
    records = np.frombuffer(buf, dtype=np.uint8, count=count * row.itemsize,
                            offset=_COPY_HEADER).reshape(count, row.itemsize)
    # the vector is each record's last field
    vectors = records[:, row.itemsize - 4 * dim:].copy().view(">f4").astype(np.float32)
    return Vectors([uuid.UUID(bytes=b) for b in rows["id"].tolist()], vectors)


def current_vectors(conn: Connection, user_id: uuid.UUID, dim: int) -> Vectors:
    """Every current memory vector of one user, by binary COPY (~10× faster than text)."""
    return _copy_vectors(conn, f"user_id = '{uuid.UUID(str(user_id))}' AND status = 'current'",
                         dim)


def vectors_by_id(conn: Connection, ids: Sequence[uuid.UUID], dim: int) -> Vectors:
    """The given rows' vectors (a pass's canonical rows: a few dozen)."""
    if not ids:
        return Vectors([], np.zeros((0, dim), dtype=np.float32))
    listed = ",".join(f"'{uuid.UUID(str(i))}'" for i in ids)
    return _copy_vectors(conn, f"id IN ({listed})", dim)


def current_meta(conn: Connection, user_id: uuid.UUID) -> list[Any]:
    """(id, cell, instance_id, category, embedding_model) of every row the search may find."""
    return list(conn.execute(CURRENT_META, {"u": user_id}))


def meta_by_id(conn: Connection, ids: Sequence[uuid.UUID]) -> list[Any]:
    return list(conn.execute(META_BY_ID, {"ids": list(ids)})) if ids else []


def centroids(conn: Connection, user_id: uuid.UUID) -> tuple[list[int], np.ndarray]:
    """The user's cells and their centroids (cells × dim), in cell order."""
    rows = conn.execute(CENTROIDS, {"u": user_id}).all()
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    return [r.cell for r in rows], np.array(
        [np.array(r.centroid.strip("[]").split(","), dtype=np.float32) for r in rows])


def cells_version(conn: Connection, user_id: uuid.UUID) -> tuple[Any, ...]:
    return tuple(conn.execute(CELLS_VERSION, {"u": user_id}).one())


def probes_of(conn: Connection, ids: Sequence[uuid.UUID], probes: int
              ) -> dict[uuid.UUID, list[int]]:
    """The ``probes`` nearest cells of each given memory, ranked by pgvector."""
    if not ids:
        return {}
    return {r.id: list(r.cells) for r in conn.execute(PROBES, {"ids": list(ids),
                                                               "probes": max(probes, 1)})}


def probes_by_band(conn: Connection, ids: Sequence[uuid.UUID], band: Band,
                   cells: Sequence[int], probes: int) -> dict[uuid.UUID, list[int]]:
    """:func:`probes_of` for the memories of ``band`` (``ids`` by position, ``cells`` the
    cell of each centroid position): their sure cells and the best ``slots`` of their
    undecided ones by pgvector, which measures only those; a memory whose choice is still an
    exact tie (or not a number) is ranked whole by :data:`PROBES`, as before."""
    pairs = [(ids[int(r)], int(cells[int(c)])) for r, got in zip(band.rows, band.band,
                                                                 strict=True) for c in got]
    measured: dict[uuid.UUID, list[tuple[float, int]]] = {}
    for start in range(0, len(pairs), CHECK_BATCH):
        part = pairs[start:start + CHECK_BATCH]
        for r in conn.execute(BAND_DISTANCES, {"ids": [i for i, _ in part],
                                               "cells": [c for _, c in part]}):
            measured.setdefault(r.id, []).append((float(r.distance), r.cell))
    out: dict[uuid.UUID, list[int]] = {}
    whole: list[uuid.UUID] = []
    for r, sure, got, slots in zip(band.rows, band.sure, band.band, band.slots.tolist(),
                                   strict=True):
        memory = ids[int(r)]
        found = sorted(measured.get(memory, []))
        if len(found) != len(got) or any(math.isnan(d) for d, _ in found) or (
                0 < slots < len(found) and found[slots - 1][0] == found[slots][0]):
            whole.append(memory)
            continue
        out[memory] = [int(cells[int(c)]) for c in sure] + [c for _, c in found[:max(slots, 0)]]
    out.update(probes_of(conn, whole, probes))
    return out


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


def read_at(conn: Connection) -> Any:
    """The date from which rows count as possibly written since this snapshot."""
    return conn.execute(READ_AT).scalar_one()


def recent_backlog(conn: Connection, user_id: uuid.UUID, since: Any) -> list[uuid.UUID]:
    return list(conn.execute(RECENT_BACKLOG, {"u": user_id, "since": since}).scalars())


def backlog_count(conn: Connection, user_id: uuid.UUID, *, cap: int) -> int:
    return int(conn.execute(BACKLOG_COUNT, {"user_id": user_id, "cap": cap}).scalar_one())


@dataclass
class ChunkState:
    """:data:`CHUNK_STATE`'s row."""

    current: int
    has_cells: bool
    cells: tuple[Any, ...]
    claim: Any
    recent: list[uuid.UUID]
    #: the backlog's first ``size`` rows, current or not (oldest first, as the pages read it)
    backlog: list[uuid.UUID]


def chunk_state(conn: Connection, user_id: uuid.UUID, *, timeout_ms: int, cap: int,
                since: Any, size: int) -> ChunkState:
    """Sets the transaction's statement timeout (``timeout_ms`` > 0) and reads what a chunk's
    read needs before its rows (:data:`CHUNK_STATE`)."""
    r = conn.execute(CHUNK_STATE, {"u": user_id, "ms": int(timeout_ms), "cap": cap,
                                   "since": since, "n": int(size)}).one()
    return ChunkState(int(r.current), bool(r.has_cells), (r.cells_n, r.cells_at), r.claim,
                      list(r.recent), list(r.backlog))
