"""Consolidation's cells search for all of a user's memories at once, pure.

Today's per-memory search (:data:`eros.recall.db.cells_sql.CELL_PAIRS`) finds, for one memory ``a``,
the rows ``b`` of its user, layer and category that are current, lie in one of the
CONSOLIDATION_CELL_PROBES cells whose centroids are nearest ``a`` (or in no cell), whose sketch
(the sign bits of the embedding) is within the Hamming bound of ``a``'s, and whose embedding is
of the same model and within cosine distance 1 − θ. A first pass asks this for every memory:
n index probes reading ~8·√n sketches each.

Here the same predicate is evaluated with matrix products: the rows are grouped by (cell,
scope), each group compared at once with the memories that probe its cell (one BLAS product
per group, ~8·√n·n/scopes multiply-adds in all, a few seconds less than the index probes at
50k), then the Hamming bound and the model are checked on the few candidates. Floating point
is not pgvector's (a different summation order), so a value within ``MARGIN`` of a boundary
— a pair's similarity within MARGIN of θ, or a memory whose probe-th and next nearest centroids
are within MARGIN — is reported as *uncertain*, and the caller decides it with pgvector's own
``<=>`` in SQL: the result is then exactly the per-memory search's, pair for pair.
Nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float32]
Words = npt.NDArray[np.uint64]

#: twice the rounding error a 512-term float32 dot product of unit vectors can have, with room:
#: values closer than this to a boundary are left to pgvector's own arithmetic.
MARGIN = 1e-4
#: "in no cell": every memory's search reads these rows too.
NO_CELL = -1
#: one group's product is cut into blocks of at most this many (memory, row) similarities.
_BLOCK = 1 << 20
#: rows whose nearest cells are ranked at once.
_ROWS_AT_ONCE = 8192


def lengths(vectors: Floats) -> Floats:
    """Each row's length, by one ``einsum`` (``np.linalg.norm(axis=1)`` squares the whole
    matrix into a temporary first: ~8x slower on a 50k × 512 snapshot)."""
    out: Floats = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    return out


def unit(vectors: Floats) -> Floats:
    """Rows scaled to length 1 (a zero row stays zero: it is near nothing)."""
    norms = lengths(vectors)[:, None]
    out: Floats = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return out


def sketches(vectors: Floats) -> Words:
    """pgvector's ``binary_quantize``: bit i is ``x[i] > 0``, packed into 64-bit words."""
    packed = np.packbits(vectors > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


#: leading dimensions of the first, bounding product (see :func:`near_pairs`).
HEAD = 128
#: what the bound may lose to rounding (a 128-term product and two norms): kept as candidates.
_SLACK = 1e-3


@dataclass
class Rows:
    """Memories, position-aligned: unit vectors, sketches, cell (NO_CELL: none), scope (layer
    and category) and embedding model as small integer codes; ``head`` (the first HEAD
    coordinates, then the length of the others as one more column) bounds a similarity in one
    product: head_a · head_b ≥ a · b (Cauchy–Schwarz on the coordinates past HEAD)."""

    unit: Floats
    words: Words
    cells: Ints
    scopes: Ints
    models: Ints
    head: Floats

    @classmethod
    def of(cls, vectors: Floats, cells: Ints, scopes: Ints, models: Ints) -> Rows:
        u = unit(vectors)
        head = np.empty((len(u), min(HEAD, u.shape[1]) + 1), dtype=np.float32)
        head[:, :-1] = u[:, :HEAD]
        head[:, -1] = lengths(u[:, HEAD:])
        return cls(u, sketches(vectors), cells, scopes, models, head)

    def __len__(self) -> int:
        return len(self.cells)


def nearest_cells(rows: Rows, centroids: Floats, probes: int) -> tuple[Ints, Ints]:
    """Each row's ``probes`` nearest cells by cosine distance (cells are centroid positions),
    and the rows whose choice is uncertain (a tie within MARGIN at the cut, or a zero row);
    ``_ROWS_AT_ONCE`` rows at a time, so the distances never hold rows × cells at once."""
    n, k = len(rows), len(centroids)
    if k == 0:
        return np.zeros((n, 0), dtype=np.int64), np.zeros(0, dtype=np.int64)
    if probes >= k:
        return np.broadcast_to(np.arange(k, dtype=np.int64), (n, k)).copy(), \
            np.flatnonzero(lengths(rows.head) < 0.5)
    centres = unit(centroids)
    chosen = np.empty((n, probes), dtype=np.int64)
    uncertain = np.empty(n, dtype=bool)
    for start in range(0, n, _ROWS_AT_ONCE):
        distance = 1.0 - rows.unit[start:start + _ROWS_AT_ONCE] @ centres.T
        # the probes-th and next nearest land in place: the cut and what follows it are
        # read from two columns, not gathered from all the cells (a third of the time)
        part = np.argpartition(distance, (probes - 1, probes), axis=1)
        chosen[start:start + len(distance)] = part[:, :probes]
        edge = np.take_along_axis(distance, part[:, probes - 1:probes + 1], axis=1)
        uncertain[start:start + len(distance)] = edge[:, 1] - edge[:, 0] < MARGIN
    uncertain |= lengths(rows.head) < 0.5  # a zero row
    return chosen, np.flatnonzero(uncertain).astype(np.int64)


@dataclass
class Band:
    """What pgvector must still rank for the memories :func:`nearest_cells` left uncertain:
    per memory (``rows``, positions), the cells surely among its probes (``sure``: fewer than
    ``probes`` others are within MARGIN below them) and the cells that may or may not be
    (``band``), with how many of those it takes (``slots``). Only a tie's few cells are
    measured again, not all √n of them: the one-by-one ranking of every centroid grew as
    n² (uncertain memories ∝ n·√n, √n cells each)."""

    rows: Ints
    sure: list[Ints]
    band: list[Ints]
    slots: Ints


def probe_band(rows: Rows, centroids: Floats, uncertain: Ints, probes: int) -> Band:
    """The uncertain memories' sure and undecided cells (positions): a cell is sure when
    fewer than ``probes`` cells are within MARGIN below it (none can pass it in pgvector's
    arithmetic), out when ``probes`` cells are more than MARGIN below it, undecided
    otherwise; pgvector's distances then take the best ``slots`` of the undecided."""
    if len(uncertain) == 0:
        empty = np.zeros(0, np.int64)
        return Band(empty, [], [], empty)
    distance = 1.0 - rows.unit[uncertain] @ unit(centroids).T
    order = np.argsort(distance, axis=1, kind="stable")
    ranked = np.take_along_axis(distance, order, axis=1)
    sure: list[Ints] = []
    band: list[Ints] = []
    slots = np.empty(len(uncertain), dtype=np.int64)
    for n in range(len(uncertain)):
        line = ranked[n]
        below_up = np.searchsorted(line, line + MARGIN, side="left")  # cells < d + MARGIN
        below_down = np.searchsorted(line, line - MARGIN, side="left")  # cells < d − MARGIN
        is_sure = below_up <= probes  # itself and at most probes − 1 others
        is_out = below_down >= probes
        sure.append(order[n][is_sure])
        band.append(order[n][~is_sure & ~is_out])
        slots[n] = probes - int(is_sure.sum())
    return Band(uncertain, sure, band, slots)


@dataclass
class Probers:
    """Which searched rows read each cell (every one reads the rows in NO_CELL); ``scoped``
    keeps, per (cell, scope), those of one scope — worked out once a run, as a pass's few
    canonical rows meet the same cells' probers again and again."""

    by_cell: dict[int, Ints]
    everyone: Ints
    scoped: dict[tuple[int, int], Ints] = field(default_factory=dict)

    @classmethod
    def of(cls, probes: Ints) -> Probers:
        n, p = probes.shape
        rows = np.repeat(np.arange(n, dtype=np.int64), p)
        cells = probes.reshape(-1)
        keep = cells >= 0
        rows, cells = rows[keep], cells[keep]
        order = np.lexsort((rows, cells))
        rows, cells = rows[order], cells[order]
        bounds = np.flatnonzero(np.diff(cells)) + 1
        by_cell = {int(cells[s]): rows[s:e]
                   for s, e in zip(np.r_[0, bounds], np.r_[bounds, len(cells)], strict=True)
                   if e > s}
        return cls(by_cell, np.arange(n, dtype=np.int64))

    def of_cell(self, cell: int) -> Ints:
        if cell == NO_CELL:
            return self.everyone
        return self.by_cell.get(cell, np.zeros(0, np.int64))

    def of_scope(self, cell: int, scope: int, scopes: Ints) -> Ints:
        """The probers of ``cell`` whose scope (``scopes``: the searched rows') is ``scope``:
        the only ones a row of that cell and scope can be near."""
        key = (cell, scope)
        got = self.scoped.get(key)
        if got is None:
            rows = self.of_cell(cell)
            got = self.scoped[key] = rows[scopes[rows] == scope]
        return got


@dataclass
class Found:
    """Directed pairs (searched row, target row) that pass the predicate; ``sure`` is False
    where the similarity is within MARGIN of θ (pgvector decides those)."""

    a: Ints
    b: Ints
    sure: npt.NDArray[np.bool_]


def near_pairs(searched: Rows, probers: Probers, targets: Rows, *, similarity: float,
               max_hamming: int, same: bool) -> Found:
    """Every (a, b), a searched and b a target, that today's search of ``a`` finds (see the
    module's docstring); ``same``: the targets are the searched rows (a ≠ b).

    Per target cell and scope (only rows of one scope can be near: with the bench's five
    categories that is a fifth of the products of a whole cell's), one product of the
    ``head`` columns of the memories of that scope probing the cell with its rows': by
    Cauchy–Schwarz a pair's similarity is at most that product (the leading HEAD coordinates'
    product plus the product of the two rows' remaining lengths, the last column), so a pair
    whose bound is below θ cannot be near and is dropped without its full product (for
    unrelated 512-d vectors nearly all of them); the few left are computed in full, then the
    Hamming bound and the model are checked. A quarter of the multiply-adds of a full product,
    one BLAS call and one comparison a block. The few rows a pass writes (``same`` False) go
    through :func:`few_pairs` instead."""
    if not same:
        return few_pairs(searched, probers, targets, similarity=similarity,
                         max_hamming=max_hamming)
    order = np.lexsort((targets.scopes, targets.cells))
    cells, scopes = targets.cells[order], targets.scopes[order]
    bounds = np.flatnonzero((np.diff(cells) != 0) | (np.diff(scopes) != 0)) + 1
    out_a: list[Ints] = []
    out_b: list[Ints] = []
    out_sure: list[npt.NDArray[np.bool_]] = []
    floor = np.float32(similarity - MARGIN - _SLACK)
    a_cell, a_cell_scopes, at_cell = np.zeros(0, np.int64), np.zeros(0, np.int64), None
    for s, e in zip(np.r_[0, bounds], np.r_[bounds, len(order)], strict=True):
        if e <= s:
            continue
        b_rows = order[s:e]
        cell = int(cells[s])
        if cell != at_cell:  # a cell's probers, and their scopes, gathered once a cell
            at_cell, a_cell = cell, probers.of_cell(cell)
            a_cell_scopes = searched.scopes[a_cell]
        a_all = a_cell[a_cell_scopes == scopes[s]]
        if not len(a_all):
            continue
        b_head = np.ascontiguousarray(targets.head[b_rows].T)
        step = max(1, _BLOCK // len(b_rows))
        for start in range(0, len(a_all), step):
            part = a_all[start:start + step]
            ai, bj = np.nonzero(searched.head[part] @ b_head >= floor)
            if not len(ai):
                continue
            a, b = part[ai], b_rows[bj]
            apart = a != b  # a row meets itself (bound 1): dropped after the product
            a, b = a[apart], b[apart]
            sim = np.einsum("ij,ij->i", searched.unit[a], targets.unit[b])
            bits = np.bitwise_count(searched.words[a] ^ targets.words[b]).sum(
                axis=1, dtype=np.int64)
            ok = (sim >= similarity - MARGIN) & (bits <= max_hamming) & \
                (searched.models[a] == targets.models[b])
            out_a.append(a[ok])
            out_b.append(b[ok])
            out_sure.append(sim[ok] >= similarity + MARGIN)
    if not out_a:
        empty = np.zeros(0, np.int64)
        return Found(empty, empty, np.zeros(0, bool))
    return Found(np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_sure))


def few_pairs(searched: Rows, probers: Probers, targets: Rows, *, similarity: float,
              max_hamming: int) -> Found:
    """:func:`near_pairs` for a few targets that are not searched rows (a pass's ~50 canonical
    rows against the user's memories), as one gather: every target's candidates are the
    probers of its cell and scope (:meth:`Probers.of_scope`, worked out once a run), the
    sketches' Hamming bound and the model — exact, integer tests of the predicate — leave a
    handful, and only those are multiplied in full. The per-cell products of
    :func:`near_pairs` spent ~20 ms of CPU a pass here (a cell's probers of every scope
    gathered and bounded for one or two rows); the same pairs, the same ``sure``."""
    a_parts: list[Ints] = []
    b_parts: list[Ints] = []
    for n in range(len(targets)):
        a_all = probers.of_scope(int(targets.cells[n]), int(targets.scopes[n]),
                                 searched.scopes)
        a_parts.append(a_all)
        b_parts.append(np.full(len(a_all), n, dtype=np.int64))
    if not a_parts:
        empty = np.zeros(0, np.int64)
        return Found(empty, empty, np.zeros(0, bool))
    a, b = np.concatenate(a_parts), np.concatenate(b_parts)
    bits = np.bitwise_count(searched.words[a] ^ targets.words[b]).sum(axis=1, dtype=np.int64)
    keep = (bits <= max_hamming) & (searched.models[a] == targets.models[b])
    a, b = a[keep], b[keep]
    sim = np.einsum("ij,ij->i", searched.unit[a], targets.unit[b])
    ok = sim >= similarity - MARGIN
    return Found(a[ok], b[ok], sim[ok] >= similarity + MARGIN)
