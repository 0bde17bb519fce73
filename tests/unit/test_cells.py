"""The pure core of recall cells: how many cells, how many to probe, spherical k-means."""

from __future__ import annotations

import numpy as np
import pytest

from eros.recall.core.cells import (
    MAX_CELLS,
    MIN_CELLS,
    cell_count,
    normalise,
    probe_count,
    spherical_kmeans,
)


def test_cell_count_is_about_the_square_root_within_bounds() -> None:
    assert cell_count(10_000) == 100
    assert cell_count(50_000) == 224
    assert cell_count(3) == MIN_CELLS
    assert cell_count(10**9) == MAX_CELLS


@pytest.mark.parametrize(("cells", "share", "want"),
                         [(100, 0.2, 20), (224, 0.2, 45), (3, 0.01, 1), (10, 1.0, 10)])
def test_probe_count_rounds_up_and_reads_at_least_one(cells: int, share: float,
                                                      want: int) -> None:
    assert probe_count(cells, share) == want


def _blobs(rng: np.random.Generator, per: int, topics: int, dim: int = 64
           ) -> tuple[np.ndarray, np.ndarray]:
    centres = normalise(rng.standard_normal((topics, dim)))
    label = np.repeat(np.arange(topics), per)
    return normalise(centres[label] + 0.05 * rng.standard_normal((len(label), dim))), label


def test_well_separated_topics_each_get_their_own_cells() -> None:
    rng = np.random.default_rng(1)
    vectors, label = _blobs(rng, 200, 8)
    result = spherical_kmeans(vectors, 16, seed=3)
    assert result.centroids.shape == (16, 64)
    assert np.allclose(np.linalg.norm(result.centroids, axis=1), 1.0, atol=1e-5)
    assert int(result.sizes.sum()) == len(vectors) and (result.sizes > 0).all()
    # a cell never mixes topics: each holds rows of exactly one
    for cell in range(16):
        assert len(set(label[result.assignment == cell].tolist())) == 1
    # and each row sits in the cell whose centroid is nearest
    assert (result.assignment == np.argmax(vectors @ result.centroids.T, axis=1)).all()


def test_deterministic_for_a_seed_and_fewer_rows_than_cells() -> None:
    vectors, _ = _blobs(np.random.default_rng(2), 50, 4)
    a = spherical_kmeans(vectors, 10, seed=7)
    b = spherical_kmeans(vectors, 10, seed=7)
    assert (a.assignment == b.assignment).all() and np.array_equal(a.centroids, b.centroids)
    tiny = spherical_kmeans(vectors[:3], 10)
    assert len(tiny.centroids) == 3 and sorted(tiny.assignment.tolist()) == [0, 1, 2]
    with pytest.raises(ValueError, match="zero vectors"):
        spherical_kmeans(np.zeros((0, 8)), 4)


def test_normalise_keeps_zero_rows_zero() -> None:
    out = normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])
