"""The bulk cells search (eros/consolidation/core/consolidation_search.py) against the predicate
spelled out
row by row: same scope and model, target in one of the memory's probed cells or in no cell,
sketches within the Hamming bound, similarity ≥ θ — and what it cannot rank for certain is
reported as uncertain instead of guessed."""

from __future__ import annotations

import numpy as np

from eros.consolidation.core.consolidation_search import (
    MARGIN,
    NO_CELL,
    Probers,
    Rows,
    few_pairs,
    near_pairs,
    nearest_cells,
    probe_band,
    unit,
)

DIM = 256  # more than HEAD: the bounding product is exercised


def _corpus(seed: int, n: int = 400, cells: int = 9) -> tuple[Rows, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, DIM)).astype(np.float32)
    twins = rng.integers(0, n, n // 3)
    base[: n // 3] = base[twins] + 0.25 * rng.standard_normal((n // 3, DIM)).astype(np.float32)
    centroids = rng.standard_normal((cells, DIM)).astype(np.float32)
    cell = np.argmax(unit(base) @ unit(centroids).T, axis=1).astype(np.int64)
    cell[rng.random(n) < 0.05] = NO_CELL  # written after the clustering
    rows = Rows.of(base, cell, rng.integers(0, 3, n).astype(np.int64),
                   (rng.random(n) < 0.1).astype(np.int64))
    return rows, base, centroids


def _brute(rows: Rows, probes: np.ndarray, similarity: float, hamming: int) -> set[tuple[int,
                                                                                           int]]:
    out = set()
    sim = rows.unit @ rows.unit.T
    for a in range(len(rows)):
        for b in range(len(rows)):
            if a == b or rows.scopes[a] != rows.scopes[b] or rows.models[a] != rows.models[b]:
                continue
            if rows.cells[b] != NO_CELL and rows.cells[b] not in probes[a]:
                continue
            bits = int(np.bitwise_count(rows.words[a] ^ rows.words[b]).sum())
            if bits <= hamming and sim[a, b] >= similarity:
                out.add((a, b))
    return out


def test_the_bulk_search_finds_exactly_the_pairs_of_the_per_memory_predicate() -> None:
    for seed, probes_n, similarity, hamming in ((1, 2, 0.85, 20), (2, 4, 0.6, 26),
                                                (3, 1, 0.9, 64)):
        rows, _, centroids = _corpus(seed)
        probes, uncertain = nearest_cells(rows, centroids, probes_n)
        found = near_pairs(rows, Probers.of(probes), rows, similarity=similarity,
                           max_hamming=hamming, same=True)
        got = set(zip(found.a.tolist(), found.b.tolist(), strict=True))
        expected = _brute(rows, probes, similarity, hamming)
        assert len(expected) > 20
        sure = {p for p, ok in zip(got, found.sure.tolist(), strict=True) if ok}
        # nothing missed; anything extra is within rounding of θ and marked for pgvector
        assert expected <= got
        assert sure <= expected
        sims = rows.unit @ rows.unit.T
        assert all(abs(sims[a, b] - similarity) < MARGIN for a, b in got - sure)
        assert len(uncertain) < len(rows) // 10


def test_targets_apart_from_the_searched_rows_are_found_from_every_prober() -> None:
    rows, base, centroids = _corpus(4)
    probes, _ = nearest_cells(rows, centroids, 3)
    probers = Probers.of(probes)
    late = Rows.of(base[:50], rows.cells[:50], rows.scopes[:50], rows.models[:50])
    found = near_pairs(rows, probers, late, similarity=0.85, max_hamming=20, same=False)
    got = set(zip(found.a.tolist(), found.b.tolist(), strict=True))
    expected = {(a, b) for a, b in _brute(rows, probes, 0.85, 20) if b < 50}
    # a target equal to a searched row meets itself here (same=False): nothing else differs
    assert {p for p in got if p[0] != p[1]} == expected


def test_a_passs_few_rows_meet_the_same_pairs_with_the_same_certainty() -> None:
    """few_pairs (a pass's canonical rows, one gather) against the per-cell products of the
    whole search: the same directed pairs and the same ``sure`` flags, pair for pair, and the
    same again from its per-(cell, scope) probers kept from the first call."""
    for seed, probes_n in ((6, 2), (7, 4)):
        rows, base, centroids = _corpus(seed)
        probes, _ = nearest_cells(rows, centroids, probes_n)
        whole = near_pairs(rows, Probers.of(probes), rows, similarity=0.8, max_hamming=40,
                           same=True)
        expected = {(a, b): s for a, b, s in zip(whole.a.tolist(), whole.b.tolist(),
                                                 whole.sure.tolist(), strict=True) if b < 60}
        assert len(expected) > 10
        late = Rows.of(base[:60], rows.cells[:60], rows.scopes[:60], rows.models[:60])
        probers = Probers.of(probes)
        for _ in range(2):
            found = few_pairs(rows, probers, late, similarity=0.8, max_hamming=40)
            got = {(a, b): s for a, b, s in zip(found.a.tolist(), found.b.tolist(),
                                                found.sure.tolist(), strict=True) if a != b}
            assert got == expected
        assert probers.scoped


def test_a_tie_at_the_probe_cut_is_reported_uncertain_not_guessed() -> None:
    rng = np.random.default_rng(5)
    centroids = rng.standard_normal((6, DIM)).astype(np.float32)
    centroids[3] = centroids[2]  # two cells equally near every vector
    vectors = rng.standard_normal((50, DIM)).astype(np.float32)
    vectors[0] = centroids[2] + 0.01 * rng.standard_normal(DIM).astype(np.float32)
    vectors[1] = 0.0
    rows = Rows.of(vectors, np.zeros(50, np.int64), np.zeros(50, np.int64),
                   np.zeros(50, np.int64))
    _, uncertain = nearest_cells(rows, centroids, 1)
    assert {0, 1} <= set(uncertain.tolist())
    chosen, uncertain = nearest_cells(Rows.of(vectors[2:], *(np.zeros(48, np.int64),) * 3),
                                      centroids, 6)  # every cell: no cut
    assert len(uncertain) == 0 and chosen.shape == (48, 6)


def test_a_ties_few_undecided_cells_ranked_exactly_give_the_probes_of_ranking_them_all() -> None:
    """probe_band: for memories whose probe cut is a near-tie, the sure cells plus the best
    ``slots`` undecided cells by another arithmetic's distances (float64 here, pgvector's in
    the pass) are exactly that arithmetic's nearest ``probes`` cells, and only a few cells
    of each are left to measure."""
    rng = np.random.default_rng(8)
    centroids = rng.standard_normal((40, DIM)).astype(np.float32)
    near = rng.integers(0, 40, 300)  # twin centroids: a tie at every odd cut
    centroids[20:] = centroids[:20] + 1e-6 * rng.standard_normal((20, DIM)).astype(np.float32)
    vectors = centroids[near] + 0.6 * rng.standard_normal((300, DIM)).astype(np.float32)
    rows = Rows.of(vectors, *(np.zeros(300, np.int64),) * 3)
    for probes_n in (1, 3, 7):
        _, uncertain = nearest_cells(rows, centroids, probes_n)
        assert len(uncertain) > 20
        band = probe_band(rows, centroids, uncertain, probes_n)
        exact = 1.0 - unit(vectors.astype(np.float64)) @ unit(centroids.astype(np.float64)).T
        for r, sure, undecided, slots in zip(band.rows, band.sure, band.band,
                                             band.slots.tolist(), strict=True):
            best = undecided[np.argsort(exact[r, undecided], kind="stable")[:slots]]
            want = set(np.argsort(exact[r], kind="stable")[:probes_n].tolist())
            assert set(sure.tolist()) | set(best.tolist()) == want
            assert len(undecided) < 10
