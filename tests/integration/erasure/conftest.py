"""The erasure tests (a user's, a persona's, a memory's forget, and every replay after it) run
on the same fakes, with the same timeouts and near-duplicate threshold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine

from eros.consolidation.services.consolidate import Consolidator
from eros.dreaming.services.classify import Pipeline
from eros.settings import Settings
from tests.support.classify import fake_consolidator, fake_pipeline


@pytest.fixture
def settings(provider_settings: Callable[..., Settings]) -> Any:
    return provider_settings(
        llm_timeout_secs=20, embedding_timeout_secs=5, consolidation_similarity=0.85)


@pytest.fixture
def pipeline(settings: Any, engine: Engine) -> Pipeline:
    return fake_pipeline(settings, engine)


@pytest.fixture
def c(settings: Any, engine: Engine) -> Consolidator:
    return fake_consolidator(settings, engine)
