"""Issue 16, hole 7: the cells are ranked over all of a user's layers; a persona whose rows lie
in none of the probed cells must still get the K rows it has."""

from __future__ import annotations

import uuid

import numpy as np
from sqlalchemy import Engine

from eros.recall.services import recall_cells
from tests.integration.test_recall import contents
from tests.integration.test_recall_cells import CELLS, EXACT, ask, load, topic_vectors


def test_a_persona_far_from_the_probed_cells_still_gets_k(engine: Engine, db_url: str) -> None:
    user, persona = uuid.uuid4(), uuid.uuid4()
    rng = np.random.default_rng(16)
    load(db_url, user, topic_vectors(rng, 6_000, 30)[0])  # profile: topic 0 is the query's
    far, topic = topic_vectors(np.random.default_rng(17), 600, 2)
    load(db_url, user, far[topic == 1][:150], instance=persona, label="p")  # away from it
    recall_cells.cluster_user(engine, CELLS, user)
    for strategy, k in (("decay", 10), ("composite", 7), ("grouped", 2)):
        got = ask(engine, user, CELLS, strategy=strategy, k=k, scope="relationship",
                  instance_id=persona)
        truth = ask(engine, user, EXACT, strategy=strategy, k=k, scope="relationship",
                    instance_id=persona)
        assert len(truth.memories) >= k
        assert len(got.memories) == len(truth.memories), (strategy, got.plan)
        assert all(c.startswith("p ") for c in contents(got))
