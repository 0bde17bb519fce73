"""The SQL of recall cells (migration 0008): read a user's vectors, write their cells, probe them.

``memory_sketches`` mirrors every memory's user, layer, status and sketch, plus its ``cell``;
``memory_cells`` holds a clustered user's centroids. Triggers on ``companion_memories`` keep the
mirror exact; this module only (re)writes cells and searches them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import BindParameter, Connection, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.types import Integer

from eros.db.schema import SCHEMA, memory_cells
from eros.recall.core.cells import Matrix
from eros.recall.core.ranking import Candidate
from eros.recall.db.recall_sql import (
    CELLS_TABLE,
    QUERY_SKETCH,
    ScopeFilter,
    configure_quantized,
    rerank_sql,
    search_statement,
    to_candidates,
)
from eros.recall.db.turn_cells_sql import place_user_turns, uncell_user_turns

_SKETCHES = f"{SCHEMA}.memory_sketches"
_COPY_HEADER = 19  # PGCOPY signature (11), flags (4), header extension length (4)


def _ids_param() -> BindParameter[Any]:
    return bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))


def _cells_param() -> BindParameter[Any]:
    return bindparam("cells", type_=ARRAY(Integer))


@dataclass(frozen=True)
class UserVectors:
    """A user's memory ids and unit-or-not vectors (rows × dim), in the same order."""

    ids: list[uuid.UUID]
    vectors: Matrix


def _tuple_type(dim: int) -> np.dtype[Any]:
    """One row of ``COPY (SELECT id, embedding …) TO STDOUT (FORMAT BINARY)``: fixed size."""
    return np.dtype([("fields", ">i2"), ("id_len", ">i4"), ("id", "V16"), ("vec_len", ">i4"),
                     ("dim", ">i2"), ("unused", ">i2"), ("vec", ">f4", (dim,))])


def _vector_copy(user_id: uuid.UUID, order_seed: int | None, limit: int | None) -> str:
    where = (f"SELECT id, embedding FROM {SCHEMA}.companion_memories"
             f" WHERE user_id = '{uuid.UUID(str(user_id))}' AND embedding IS NOT NULL")
    if order_seed is not None:  # a deterministic sample: the ids' hash order
        where += f" ORDER BY hashtextextended(CAST(id AS text), {int(order_seed)})"
    if limit is not None:
        where += f" LIMIT {int(limit)}"
    return f"COPY ({where}) TO STDOUT (FORMAT BINARY)"


def vector_count(conn: Connection, user_id: uuid.UUID) -> int:
    """How many memory vectors one user has (all layers and statuses), from the mirror."""
    return int(conn.execute(text(
        f"SELECT count(*) FROM {_SKETCHES} WHERE user_id = :u AND sketch IS NOT NULL"),
        {"u": user_id}).scalar_one())


def vector_chunks(conn: Connection, user_id: uuid.UUID, dim: int, *, chunk_rows: int = 8192,
                  sample_seed: int | None = None, limit: int | None = None
                  ) -> Iterator[UserVectors]:
    """One user's memory ids and vectors (all layers and statuses), ``chunk_rows`` at a time,
    by binary COPY (~10× faster than parsing the vectors' text form): the worker holds one
    chunk, not the user's 2 KB a memory. With ``sample_seed`` and ``limit``: a deterministic
    sample of ``limit`` rows (the k-means training set of a very large user)."""
    rows_type = _tuple_type(dim)
    size = rows_type.itemsize
    raw = conn.connection.driver_connection
    assert raw is not None
    buf = bytearray()
    header = True
    with raw.cursor() as cur, cur.copy(_vector_copy(user_id, sample_seed, limit)) as copy:
        for chunk in copy:
            buf += chunk
            if header and len(buf) >= _COPY_HEADER:
                del buf[:_COPY_HEADER]
                header = False
            if not header and len(buf) >= size * chunk_rows:
                whole = len(buf) // size * size
                yield _parse(bytes(buf[:whole]), rows_type, dim)
                del buf[:whole]
    if not header and len(buf) > 2:  # the trailer is int16 -1
        yield _parse(bytes(buf[:len(buf) - 2]), rows_type, dim)


def _parse(body: bytes, rows_type: np.dtype[Any], dim: int) -> UserVectors:
    rows = np.frombuffer(body, dtype=rows_type)
    if len(rows) and int(rows["dim"][0]) != dim:
        raise ValueError(f"stored vectors have {int(rows['dim'][0])} dimensions, expected {dim}")
    return UserVectors([uuid.UUID(bytes=bytes(b)) for b in rows["id"]],
                       rows["vec"].astype(np.float32))


def user_vectors(conn: Connection, user_id: uuid.UUID, dim: int, *,
                 sample_seed: int | None = None, limit: int | None = None) -> UserVectors:
    """Every memory vector of one user (or a sample, see :func:`vector_chunks`), at once."""
    parts = list(vector_chunks(conn, user_id, dim, chunk_rows=1 << 30, sample_seed=sample_seed,
                               limit=limit))
    if not parts:
        return UserVectors([], np.zeros((0, dim), dtype=np.float32))
    return UserVectors([i for p in parts for i in p.ids],
                       np.concatenate([p.vectors for p in parts]))


def lock_user(conn: Connection, user_id: uuid.UUID, lock_timeout: str) -> None:
    """One writer of a user's cells at a time (two passes would collide on the cell keys),
    and at most ``lock_timeout`` of waiting for the row locks of inserts in flight."""
    conn.execute(text("SELECT set_config('lock_timeout', :t, true),"
                      " pg_advisory_xact_lock(hashtextextended('eros.cells:' || :u, 0))"),
                 {"t": lock_timeout, "u": str(user_id)})


#: the assignment being written, staged in batches (a temporary table dropped at commit), so
#: no statement carries a very large user's million ids.
_STAGE = "eros_cell_assignment"
_STAGE_BATCH = 50_000
IdBlock = Sequence[uuid.UUID] | np.ndarray


def _uuids(block: IdBlock) -> list[uuid.UUID]:
    """A batch of ids as UUIDs: a list already, or raw 16-byte ids (``np.dtype('V16')``)."""
    if isinstance(block, np.ndarray):
        return [uuid.UUID(bytes=bytes(b)) for b in block]
    return list(block)


def stage_assignment(conn: Connection, ids: IdBlock, cells: Sequence[int] | np.ndarray) -> None:
    """Stage ``ids``' cells for :func:`replace_cells` in this transaction, in batches."""
    conn.execute(text(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_STAGE}"
                      " (memory_id uuid NOT NULL, cell integer NOT NULL) ON COMMIT DROP"))
    insert_batch = text(f"INSERT INTO {_STAGE} SELECT * FROM unnest(:ids, :cells)").bindparams(
        _ids_param(), _cells_param())
    for start in range(0, len(ids), _STAGE_BATCH):
        conn.execute(insert_batch, {
            "ids": _uuids(ids[start:start + _STAGE_BATCH]),
            "cells": [int(c) for c in cells[start:start + _STAGE_BATCH]]})
    conn.execute(text(f"ANALYZE {_STAGE}"))


def count_existing(conn: Connection) -> int:
    """How many staged ids are still memories (a forget deletes rows; nothing else does)."""
    return int(conn.execute(text(
        f"SELECT count(*) FROM {_STAGE} a JOIN {SCHEMA}.companion_memories m"
        " ON m.id = a.memory_id")).scalar_one())


def replace_cells(conn: Connection, user_id: uuid.UUID, centroids: Matrix,
                  sizes: Sequence[int], ids: IdBlock | None = None,
                  cells: Sequence[int] | np.ndarray | None = None) -> int:
    """Replace one user's cells and put every memory of theirs in one (one transaction).

    The assignment of the rows that were clustered is ``ids``/``cells``, or what
    :func:`stage_assignment` staged; a row written since (not among them) goes to its nearest
    new centroid. Deleting the old cells first waits for any insert that locked one
    (``FOR SHARE`` in the mirror's insert trigger, 0032), so that row is visible here and
    re-assigned; an insert that starts later finds no cell and stays ``NULL`` (always
    scanned). Returns the mirror rows assigned by nearest centroid here."""
    if ids is not None:
        stage_assignment(conn, ids, cells if cells is not None else [])
    conn.execute(text(f"DELETE FROM {CELLS_TABLE} WHERE user_id = :u"), {"u": user_id})
    conn.execute(memory_cells.insert(), [
        {"user_id": user_id, "cell": i, "centroid": centroids[i].tolist(), "size": int(sizes[i])}
        for i in range(len(centroids))])
    conn.execute(text(
        f"UPDATE {_SKETCHES} s SET cell = a.cell FROM {_STAGE} a"
        " WHERE s.memory_id = a.memory_id AND s.cell IS DISTINCT FROM a.cell"))
    late = conn.execute(text(
        f"UPDATE {_SKETCHES} s SET cell = {SCHEMA}.nearest_memory_cell(m.user_id, m.embedding)"
        f" FROM {SCHEMA}.companion_memories m"
        " WHERE s.user_id = :u AND m.id = s.memory_id"
        f" AND NOT EXISTS (SELECT 1 FROM {_STAGE} a WHERE a.memory_id = s.memory_id)"),
        {"u": user_id})
    place_user_turns(conn, user_id)  # the user's turns in the new cells (0029)
    return late.rowcount


def drop_cells(conn: Connection, user_id: uuid.UUID) -> None:
    """Forget one user's cells: every memory of theirs is scanned again (``cell`` NULL)."""
    conn.execute(text(f"DELETE FROM {CELLS_TABLE} WHERE user_id = :u"), {"u": user_id})
    conn.execute(text(f"UPDATE {_SKETCHES} SET cell = NULL"
                      " WHERE user_id = :u AND cell IS NOT NULL"), {"u": user_id})
    uncell_user_turns(conn, user_id)


@dataclass(frozen=True)
class CellState:
    """What the clustering pass needs to know of a user."""

    user_id: uuid.UUID
    rows: int
    cells: int
    clustered_rows: int


def due_users(conn: Connection, *, min_rows: int, growth: float, limit: int) -> list[CellState]:
    """Users who need (re)clustering: at least ``min_rows`` memories, and no cells yet or
    ``rows ≥ growth × rows at the last clustering``; clustered users who fell below
    ``min_rows / 2`` come back with ``rows`` so the caller can drop their cells. Largest
    first. One pass over the mirror: 60-75 ms for a million memories (bench database)."""
    rows = conn.execute(text(
        f"WITH r AS (SELECT user_id, count(*) AS n FROM {_SKETCHES} GROUP BY user_id),"
        f" c AS (SELECT user_id, count(*) AS k, sum(size) AS clustered FROM {CELLS_TABLE}"
        " GROUP BY user_id)"
        " SELECT coalesce(r.user_id, c.user_id) AS user_id, coalesce(r.n, 0) AS n,"
        " coalesce(c.k, 0) AS k, coalesce(c.clustered, 0) AS clustered"
        " FROM r FULL JOIN c ON c.user_id = r.user_id"
        " WHERE (c.user_id IS NULL AND r.n >= :min_rows)"
        " OR (c.user_id IS NOT NULL AND (coalesce(r.n, 0) >= :growth * c.clustered"
        " OR coalesce(r.n, 0) < :min_rows / 2.0))"
        " ORDER BY n DESC LIMIT :limit"),
        {"min_rows": min_rows, "growth": growth, "limit": limit}).all()
    return [CellState(r.user_id, int(r.n), int(r.k), int(r.clustered)) for r in rows]


def user_state(conn: Connection, user_id: uuid.UUID) -> CellState:
    """One user's memories, cells and rows at the last clustering."""
    row = conn.execute(text(
        f"SELECT (SELECT count(*) FROM {_SKETCHES} WHERE user_id = :u) AS n,"
        f" count(*) AS k, coalesce(sum(size), 0) AS clustered FROM {CELLS_TABLE}"
        " WHERE user_id = :u"), {"u": user_id}).one()
    return CellState(user_id, int(row.n), int(row.k), int(row.clustered))


# --- the probe ------------------------------------------------------------------------------
#: the CTE ``probe`` read as an array (a scalar subquery: one InitPlan per branch, one CTE scan)
_IN_PROBED_CELLS = "s.cell = ANY(CAST((SELECT p.cells FROM probe p) AS integer[]))"


def _probe_top(flt: ScopeFilter, limit: str) -> str:
    """Ids of the ``limit`` rows nearest by sketch among the probed cells and the rows in no
    cell, per layer in scope: each branch is one or a few ranges of ``ix_memory_sketches_probe``
    (``cell = ANY(...)`` is a native multi-range btree scan), read index-only. The probed cells
    are ranked once (a materialised CTE), however many layers read them."""
    branches = [f"SELECT s.memory_id AS id, s.sketch <~> {QUERY_SKETCH} AS h FROM {_SKETCHES} s"
                f" WHERE {where} AND {cell} ORDER BY h LIMIT {limit}"
                for where in flt.layer_wheres("s")
                for cell in (_IN_PROBED_CELLS, "s.cell IS NULL")]
    union = " UNION ALL ".join(f"({b})" for b in branches)
    return (f"WITH probe AS MATERIALIZED (SELECT ARRAY(SELECT c.cell FROM {CELLS_TABLE} c"
            " WHERE c.user_id = :user_id ORDER BY c.centroid <=> :q LIMIT :probes) AS cells)"
            f" SELECT u.id, u.h FROM ({union}) u ORDER BY u.h LIMIT {limit}")


def probed_pool_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`probed_pool` (exposed so tests can EXPLAIN it)."""
    return rerank_sql(f"SELECT c.id FROM ({_probe_top(flt, ':m')}) c", ":n",
                      sources=flt.sources)


def probed_pool(conn: Connection, flt: ScopeFilter, query: Sequence[float], n: int,
                candidates: int, probes: int) -> list[Candidate]:
    """About the ``n`` nearest rows in scope: the ``candidates`` nearest by sketch within the
    ``probes`` cells whose centroids are nearest the query (plus rows in no cell), re-ranked
    by exact cosine."""
    configure_quantized(conn)
    rows = conn.execute(search_statement(probed_pool_sql(flt), len(query)),
                        {**flt.params(), "q": list(query), "n": n,
                         "m": max(candidates, n), "probes": max(probes, 1)})
    return to_candidates(rows.all())



def _walk_top(flt: ScopeFilter) -> str:
    """Ids of the ``:m`` rows of category ``cat.c`` nearest the query by sketch among: its rows
    in the ``:probes`` cells nearest the query (the cells the pool read), the first ``:m`` of
    its rows in the cells after those, nearest centroid first (a category the probed cells
    hold few or none of), and its rows in no cell.

    Every part is ranges of ``ix_memory_sketches_category`` (user, layer, category, status,
    cell), read index-only; ``OFFSET 0`` keeps the per-cell step a parameterised nested loop,
    so the walk runs in centroid order and stops at the limit. The work is the probed share
    of the category plus ``:m`` rows, not its whole range (migration 0015)."""
    wheres = [f"{where} AND s.category = cat.c" for where in flt.layer_wheres("s")]
    hamming = f"s.sketch <~> {QUERY_SKETCH}"
    probed = " UNION ALL ".join(
        f"(SELECT s.memory_id AS id, {hamming} AS h FROM {_SKETCHES} s WHERE {where}"
        " AND s.cell = ANY(CAST((SELECT o.cells[1:o.probes] FROM walk_order o) AS integer[]))"
        " ORDER BY h LIMIT :m)" for where in wheres)
    per_cell = " UNION ALL ".join(
        f"(SELECT s.memory_id AS id, {hamming} AS h FROM {_SKETCHES} s"
        f" WHERE {where} AND s.cell = p.cell)" for where in wheres)
    beyond = ("(SELECT w.id, w.h FROM unnest(CAST((SELECT o.cells[o.probes + 1:] FROM"
              " walk_order o) AS integer[])) WITH ORDINALITY AS p(cell, rank)"
              f" CROSS JOIN LATERAL ({per_cell} OFFSET 0) w LIMIT :m)")
    unclustered = " UNION ALL ".join(
        f"(SELECT s.memory_id AS id, {hamming} AS h FROM {_SKETCHES} s"
        f" WHERE {where} AND s.cell IS NULL)" for where in wheres)
    return (f"SELECT t.id FROM ({probed} UNION ALL {beyond} UNION ALL {unclustered}) t"
            " ORDER BY t.h LIMIT :m")


def probed_grouped_sql(flt: ScopeFilter) -> str:
    """The statement of :func:`probed_grouped` (exposed so tests can EXPLAIN it)."""
    return ("WITH walk_order AS MATERIALIZED (SELECT ARRAY(SELECT c.cell FROM"
            f" {CELLS_TABLE} c WHERE c.user_id = :user_id ORDER BY c.centroid <=> :q) AS cells,"
            " CAST(:probes AS integer) AS probes)"
            " SELECT x.* FROM unnest(:categories) AS cat(c) CROSS JOIN LATERAL"
            f" ({rerank_sql(f'SELECT c.id FROM ({_walk_top(flt)}) c', ':k', sources=flt.sources)})"
            " x")


def probed_grouped(conn: Connection, flt: ScopeFilter, query: Sequence[float],
                   categories: Sequence[str], k: int, candidates: int,
                   probes: int) -> list[Candidate]:
    """About the ``k`` nearest rows of each category of a clustered user, in bounded work:
    each category's rows in the ``probes`` cells nearest the query and the next
    ``candidates`` of them walking on, the ``candidates`` nearest of those by sketch re-ranked
    by exact cosine. It completes the categories the probed pool held fewer than ``k`` of,
    which used to scan the category's whole range for the user."""
    if not categories:
        return []
    configure_quantized(conn)
    rows = conn.execute(search_statement(probed_grouped_sql(flt), len(query), categories=True),
                        {**flt.params(), "q": list(query), "categories": list(categories),
                         "k": k, "m": max(candidates, k), "probes": max(probes, 1)})
    return to_candidates(rows.all())


# --- consolidation's neighbour search for a clustered user -------------------------
def _cell_branches(cells: str) -> str:
    """The mirror rows of ``a``'s user, layer and category within ``cells`` whose sketch is
    within ``:max_hamming`` bits of ``a``'s: one index range of ``ix_memory_sketches_category``
    per layer (``IS NOT DISTINCT FROM`` would not be an index condition)."""
    return " UNION ALL ".join(
        f"SELECT s.memory_id AS id FROM {_SKETCHES} s WHERE {layer} AND s.user_id = a.user_id"
        " AND s.category = a.category AND s.status = 'current' AND " + cells +
        " AND (s.sketch <~> a.embedding_bq) <= :max_hamming"
        for layer in ("a.instance_id IS NULL AND s.instance_id IS NULL",
                      "a.instance_id IS NOT NULL AND s.instance_id = a.instance_id"))


# Each memory's near twins among the rows of the ``:probes`` cells whose centroids are nearest
# to it (and the rows in no cell): the sketch prefilter of the quantised search, read from the
# mirror's cells instead of the user's whole layer and category, then the exact check. The
# candidates are a materialised CTE: left to itself, the planner (which expects a row or two
# from the lateral search) joined the exact check first — a scan of every memory.
CELL_PAIRS = text(f"""
WITH candidates AS MATERIALIZED (
    SELECT a.id AS a, n.id AS b
      FROM {SCHEMA}.companion_memories a
     CROSS JOIN LATERAL (SELECT ARRAY(SELECT mc.cell FROM {CELLS_TABLE} mc
                                       WHERE mc.user_id = a.user_id
                                       ORDER BY mc.centroid <=> a.embedding LIMIT :probes)
                         AS cells) p
     CROSS JOIN LATERAL ({_cell_branches("s.cell = ANY(p.cells)")}
                         UNION ALL {_cell_branches("s.cell IS NULL")}) n
     WHERE a.id = ANY(CAST(:ids AS uuid[])) AND a.embedding IS NOT NULL AND n.id <> a.id)
SELECT x.a, x.b
  FROM candidates x
  JOIN {SCHEMA}.companion_memories a ON a.id = x.a
  JOIN {SCHEMA}.companion_memories c ON c.id = x.b
 WHERE c.embedding_model IS NOT DISTINCT FROM a.embedding_model
   AND (a.embedding <=> c.embedding) <= :max_distance
""")


def cell_pairs(conn: Connection, ids: Sequence[uuid.UUID], *, max_distance: float,
               max_hamming: int, probes: int) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Near pairs (either order, maybe twice) of ``ids`` among the rows of each one's
    ``probes`` nearest cells: O(probes × rows a cell) a memory, whatever the user's size."""
    if not ids:
        return []
    return [(r.a, r.b) for r in conn.execute(CELL_PAIRS, {
        "ids": list(ids), "max_distance": max_distance, "max_hamming": max_hamming,
        "probes": max(probes, 1)})]


def has_cells(conn: Connection, user_id: uuid.UUID) -> bool:
    return bool(conn.execute(text(
        f"SELECT EXISTS (SELECT 1 FROM {CELLS_TABLE} WHERE user_id = :u)"), {"u": user_id})
        .scalar_one())
