"""Cut heavy users' memories into cells, so their recall reads only the nearest cells.

Why a background pass: a recall of a user with 50,000 memories that reads every sketch costs
~15 ms on two cores, most of a 20 ms budget. Clustering the user's vectors once (k-means, a
second or two for 50,000 rows) lets every later recall probe the fifth of the cells nearest
the query. New memories join their nearest cell as they are written (a trigger), and a user is
clustered again once their memories have grown by a quarter, as the cells drift from the data.
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine

from eros.recall.core.cells import Matrix, assign, cell_count, normalise, train_centroids
from eros.recall.db import cells_sql
from eros.recall.db.cells_sql import CellState
from eros.settings import Settings

log = logging.getLogger("eros.cells")

#: re-cluster a user whose memories grew to this multiple of what was clustered.
REGROW_FACTOR = 1.25
#: k-means trains on this many rows a cell (the usual IVF training size) …
TRAIN_ROWS_PER_CELL = 64
#: … and on at most this many (256 MB of 512-dim vectors): a larger user's centroids are
#: trained on a sample, and every row is then assigned chunk by chunk.
MAX_TRAIN_ROWS = 131_072
CHUNK_ROWS = 8_192
#: how long a write of cells may wait for a row lock (an insert holding a cell) before it
#: fails (and the task retries).
_LOCK_TIMEOUT = "10s"

Outcome = Literal["clustered", "dropped"]


@dataclass(frozen=True)
class ClusterReport:
    """One user's pass: rows read, cells written, rows assigned late, milliseconds per step."""

    user_id: uuid.UUID
    outcome: Outcome
    rows: int
    cells: int
    late: int
    read_ms: float
    cluster_ms: float
    write_ms: float

    def to_dict(self) -> dict[str, object]:
        return {"user_id": str(self.user_id), "outcome": self.outcome, "rows": self.rows,
                "cells": self.cells, "late": self.late, "read_ms": round(self.read_ms, 1),
                "cluster_ms": round(self.cluster_ms, 1), "write_ms": round(self.write_ms, 1)}


def cluster_user(engine: Engine, settings: Settings, user_id: uuid.UUID, *,
                 max_train_rows: int = MAX_TRAIN_ROWS, chunk_rows: int = CHUNK_ROWS
                 ) -> ClusterReport:
    """Cluster one user's memories now (every layer and status: a status change must not move
    a row between cells). A user with no memories has their cells dropped.

    Worker memory is bounded whatever the user's size: k-means trains on at most
    ``max_train_rows`` vectors (a deterministic sample beyond that), and every row is then
    assigned ``chunk_rows`` at a time, keeping 20 bytes a memory (id and cell), not its 2 KB
    vector."""
    started = time.perf_counter()
    seed = zlib.crc32(user_id.bytes)
    dim = settings.embedding_dim
    with engine.connect() as conn:
        rows = cells_sql.vector_count(conn, user_id)
        cells = cell_count(rows)
        train_rows = min(max_train_rows, TRAIN_ROWS_PER_CELL * cells)
        sampled = rows > train_rows
        train = cells_sql.user_vectors(conn, user_id, dim, sample_seed=seed if sampled else None,
                                       limit=train_rows if sampled else None)
    read_ms = _ms(started)
    if not train.ids:
        return replace(drop_cells(engine, user_id), read_ms=read_ms)
    t = time.perf_counter()
    centroids = train_centroids(train.vectors, cells, sample=TRAIN_ROWS_PER_CELL, seed=seed)
    if sampled:
        del train
        ids, assignment = _assign_streamed(engine, user_id, dim, centroids, chunk_rows)
    else:
        ids = np.array([i.bytes for i in train.ids], dtype="V16")
        assignment = assign(normalise(train.vectors), centroids)
    sizes = np.bincount(assignment, minlength=len(centroids))
    cluster_ms = _ms(t)
    t = time.perf_counter()
    with engine.begin() as conn:
        cells_sql.lock_user(conn, user_id, _LOCK_TIMEOUT)
        cells_sql.stage_assignment(conn, ids, assignment)
        if cells_sql.count_existing(conn) < len(ids):
            # a forget removed rows since the read: centroids of forgotten vectors
            # must not be written; recall reads every sketch until the next pass
            cells_sql.drop_cells(conn, user_id)
            return ClusterReport(user_id, "dropped", 0, 0, 0, read_ms, cluster_ms, _ms(t))
        late = cells_sql.replace_cells(conn, user_id, centroids, sizes.tolist())
    report = ClusterReport(user_id, "clustered", len(ids), len(centroids), late, read_ms,
                           cluster_ms, _ms(t))
    log.info("user %s: %d memories in %d cells (%d assigned late); read %.0f ms, "
             "k-means %.0f ms, write %.0f ms", user_id, report.rows, report.cells, late,
             read_ms, cluster_ms, report.write_ms)
    return report


def _assign_streamed(engine: Engine, user_id: uuid.UUID, dim: int, centroids: Matrix,
                     chunk_rows: int) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int64]]:
    """Every row's nearest centroid, reading the vectors ``chunk_rows`` at a time."""
    ids: list[npt.NDArray[np.void]] = []
    cells: list[npt.NDArray[np.int64]] = []
    with engine.connect() as conn:
        for part in cells_sql.vector_chunks(conn, user_id, dim, chunk_rows=chunk_rows):
            ids.append(np.array([i.bytes for i in part.ids], dtype="V16"))
            cells.append(assign(normalise(part.vectors), centroids))
    return np.concatenate(ids), np.concatenate(cells)


def drop_cells(engine: Engine, user_id: uuid.UUID, rows: int = 0) -> ClusterReport:
    """Forget a user's cells (their recall reads every sketch again); ``rows`` is only
    reported."""
    started = time.perf_counter()
    with engine.begin() as conn:
        cells_sql.lock_user(conn, user_id, _LOCK_TIMEOUT)
        cells_sql.drop_cells(conn, user_id)
    return ClusterReport(user_id, "dropped", rows, 0, 0, 0.0, 0.0, _ms(started))


def due(engine: Engine, settings: Settings, limit: int) -> list[CellState]:
    """Users to (re)cluster now, largest first (see :func:`eros.recall.db.cells_sql.due_users`)."""
    with engine.connect() as conn:
        return cells_sql.due_users(conn, min_rows=settings.recall_cell_min_rows,
                                   growth=REGROW_FACTOR, limit=limit)


def refresh_user(engine: Engine, settings: Settings, user_id: uuid.UUID) -> ClusterReport:
    """:func:`refresh` for one user, due or not (the task with a user id)."""
    with engine.connect() as conn:
        state = cells_sql.user_state(conn, user_id)
    return refresh(engine, settings, state)


def refresh(engine: Engine, settings: Settings, state: CellState) -> ClusterReport:
    """One due user: cluster it, or drop the cells of one that shrank below half the
    threshold (merges and deletions), where a full scan is cheap again."""
    if state.cells and state.rows < settings.recall_cell_min_rows / 2:
        return drop_cells(engine, state.user_id, state.rows)
    return cluster_user(engine, settings, state.user_id)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
