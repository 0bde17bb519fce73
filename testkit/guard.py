"""The memory guard's meaning layer for tests, with the shipped defaults (issue 30).

- e5: its model ships in the package (``eros/data/guard/multilingual-e5-small-q4.json``);
  :func:`e5_meaning_model` is that model.
- the fake Voyage server: the test run's template database is seeded once
  (:func:`seed_template`, through the same :func:`~eros.guard.services.guard_training.ensure_model`
  a worker runs at start-up) with the model trained on the fake server's vectors for the
  default EMBEDDING_MODEL, so every cloned database has it, as a migrated production database
  does, and no test process embeds the bank. The fake's hash vectors carry no meaning: that
  model is ``unusable`` (the layer judges nothing, rules and secrets still run). The fitted
  model is kept in pytest's cache between runs (2–4 s of CPU otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine

from eros.guard.core.guard_meaning import MeaningModel, load_bank, load_shipped
from eros.guard.db import guard_sql
from eros.guard.services.guard_training import ensure_model
from eros.providers.base import Embeddings, InputType
from eros.providers.offline.e5 import E5_MODEL_NAME
from eros.settings import load_settings
from testkit.fakes.voyage_server import hash_embedding

#: what the fake Voyage server answers for (Settings.embedding_model's default)
FAKE_VOYAGE_MODEL = "voyage-3.5-lite"


def e5_meaning_model(config: pytest.Config | None = None) -> MeaningModel:
    """e5's shipped model (what every worker on the offline e5 embedder uses)."""
    model = load_shipped(E5_MODEL_NAME, load_bank().digest)
    assert model is not None, "run scripts/ship_guard_model.py: the shipped model is stale"
    return model


class FakeVoyageVectors:
    """The fake Voyage server's vectors, in-process (the same function the server answers
    with), under the model name a worker with the fake server records."""

    offline = False

    def __init__(self, dim: int = 512, name: str = FAKE_VOYAGE_MODEL) -> None:
        self.dim, self.name = dim, name

    def embed(self, texts: Sequence[str], *, input_type: InputType) -> Embeddings:
        return Embeddings([hash_embedding(t, self.dim) for t in texts],
                          sum(max(1, len(t) // 4) for t in texts), self.name)


def seed_template(url: str, config: pytest.Config | None) -> None:
    """Train (or take from pytest's cache) the fake Voyage server's model into the template."""
    bank = load_bank()
    key = f"eros/guard-meaning/{FAKE_VOYAGE_MODEL}/{bank.digest}"
    # no cache under `-p no:cacheprovider` (the chaos tier): the template trains every run
    cache = getattr(config, "cache", None)
    cached = cache.get(key, None) if cache is not None else None
    engine = create_engine(url, pool_size=1)
    try:
        if cached:
            fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                      for k, v in cached.items()}
            seed(engine, MeaningModel(**fields), FAKE_VOYAGE_MODEL)
            return
        settings = load_settings(database_url=url, memory_guard_classifier="auto")
        ensure_model(settings, engine, FakeVoyageVectors())
        if cache is not None:
            with engine.connect() as conn:
                model = guard_sql.load_classifier(conn, FAKE_VOYAGE_MODEL, bank.digest)
            assert model is not None
            cache.set(key, asdict(model))
    finally:
        engine.dispose()


def seed(engine: Engine, model: MeaningModel, embedding_model: str = E5_MODEL_NAME) -> None:
    with engine.begin() as conn:
        guard_sql.save_classifier(conn, embedding_model, load_bank().digest, model)
