"""Cells of a heavy user's memories, pure: spherical k-means and the probe arithmetic.

Why cells: a recall over a user's whole scope is linear in their rows (docs/recall.md). Cutting
the user's vectors into cells of similar vectors (k-means on the unit sphere, so cosine
similarity is the dot product) lets a recall read only the cells whose centroids are nearest
the query — an IVF index per user, with the index's cost paid by a background pass rather than
by every recall. Nothing here touches the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]

#: a cell holds about √rows memories: as many cells as rows per cell, the usual IVF balance
#: between ranking centroids (cells) and reading probed rows (rows per cell).
MIN_CELLS = 4
MAX_CELLS = 4096


def cell_count(rows: int) -> int:
    """How many cells to cut ``rows`` memories into (≈ √rows, within bounds)."""
    return max(MIN_CELLS, min(MAX_CELLS, round(math.sqrt(max(rows, 1)))))


def probe_count(cells: int, share: float) -> int:
    """Cells a recall reads: the nearest ``share`` of them, at least one."""
    return max(1, min(cells, math.ceil(cells * share)))


@dataclass(frozen=True)
class Clustering:
    """Unit centroids (cells × dim), each row's cell, and the rows per cell."""

    centroids: Matrix
    assignment: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]


def normalise(vectors: npt.ArrayLike) -> Matrix:
    """Rows scaled to unit length (a zero row stays zero)."""
    m = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out: Matrix = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
    return out


def assign(vectors: Matrix, centroids: Matrix, chunk: int = 8192) -> npt.NDArray[np.int64]:
    """Each unit vector's nearest centroid by cosine (chunked: bounded memory)."""
    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), chunk):
        block = vectors[start:start + chunk] @ centroids.T
        out[start:start + chunk] = np.argmax(block, axis=1)
    return out


def spherical_kmeans(vectors: npt.ArrayLike, cells: int, *, iterations: int = 12,
                     sample: int = 64, seed: int = 0) -> Clustering:
    """Cut unit ``vectors`` into ``cells`` cells of similar direction: :func:`train_centroids`,
    then every row assigned. Deterministic for a given ``seed``."""
    data = normalise(vectors)
    centroids = train_centroids(data, cells, iterations=iterations, sample=sample, seed=seed)
    assignment = assign(data, centroids)
    return Clustering(centroids, assignment, np.bincount(assignment, minlength=len(centroids)))


def train_centroids(vectors: npt.ArrayLike, cells: int, *, iterations: int = 12,
                    sample: int = 64, seed: int = 0) -> Matrix:
    """The unit centroids of ``cells`` cells of similar direction.

    Trained on at most ``sample × cells`` rows (the usual IVF training size; the centroids
    hardly move with more). Starts from distinct random rows; a cell that empties takes the
    training row farthest from its centroid, so every cell is used. Deterministic for a given
    ``seed``.
    """
    data = normalise(vectors)
    n = len(data)
    if n == 0:
        raise ValueError("cannot cluster zero vectors")
    k = max(1, min(cells, n))
    rng = np.random.default_rng(seed)
    train = data[rng.choice(n, size=min(n, sample * k), replace=False)]
    centroids = train[rng.choice(len(train), size=k, replace=False)].copy()
    for _ in range(iterations):
        nearest = assign(train, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, train)
        counts = np.bincount(nearest, minlength=k)
        empty = np.flatnonzero(counts == 0)
        if len(empty):
            fit = np.einsum("ij,ij->i", train, centroids[nearest])
            sums[empty] = train[np.argsort(fit)[:len(empty)]]
        centroids = normalise(sums)
    return centroids
