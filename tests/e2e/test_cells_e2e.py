"""Recall cells through real processes: beat runs the finder of ``eros.cluster_memories``, the
worker enqueues and runs one task per due user, and a recall then probes the cells."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import Engine, text

from eros.recall import recall_by_vector
from eros.settings import load_settings
from testkit.workers import wait_until
from tests.e2e.conftest import Starter
from tests.support.memories import copy_rows, random_unit

pytestmark = pytest.mark.e2e


def _load(db_url: str, user: uuid.UUID, n: int, seed: int) -> None:
    vectors = random_unit(np.random.default_rng(seed), n)
    now = datetime.now(UTC)
    copy_rows(db_url, ((user, None, f"m {i}", "fact", 0.5, now, vectors[i]) for i in range(n)))


def test_beat_clusters_the_users_that_are_due(engine: Engine, db_url: str, start_worker: Starter,
                                              start_beat) -> None:  # type: ignore[no-untyped-def]
    heavy, light = uuid.uuid4(), uuid.uuid4()
    _load(db_url, heavy, 900, seed=1)
    _load(db_url, light, 300, seed=2)
    env = {"RECALL_CELL_MIN_ROWS": "500", "RECALL_CELL_INTERVAL_SECS": "1"}
    start_worker("w1", concurrency=2, **env)
    start_beat(**env)

    def cells(user: uuid.UUID) -> int:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM engine.memory_cells"
                                         " WHERE user_id = :u"), {"u": user}).scalar_one())
    wait_until(lambda: cells(heavy) > 0, timeout=60, message="the heavy user clustered")
    assert cells(heavy) == 30  # ≈ √900
    assert cells(light) == 0
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.memory_sketches"
                                 " WHERE user_id = :u AND cell IS NULL"),
                            {"u": heavy}).scalar_one() == 0
    result = recall_by_vector(engine, heavy, random_unit(np.random.default_rng(3), 1)[0].tolist(),
                              strategy="decay", settings=load_settings(
                                  embedding_dim=512, recall_exact_scan_below=100))
    assert result.plan == "cells" and len(result.memories) == 10
