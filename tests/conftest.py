"""Shared fixtures: real PostgreSQL + pgvector, real Redis, cloned template databases."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, create_engine

import eros  # noqa: F401 - before anything imports numpy: the shipped BLAS thread defaults
from eros.consolidation.services.consolidate import Consolidator
from eros.settings import Settings, load_settings
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.guard import seed_template
from testkit.services import (
    TemplateDatabases,
    postgres_server,
    redis_server,
    without_fsync,
)
from tests.support.classify import fake_consolidator

# Tests must never reach a real provider or an operator's database by accident.
for _name in ("OPENROUTER_API_KEY", "VOYAGE_API_KEY", "DATABASE_URL", "REDIS_URL",
              "EROS_PROVIDERS", "DREAMING_BEAT_SCHEDULE"):
    os.environ.pop(_name, None)
os.environ.setdefault("EMBEDDING_DIM", "512")
# The guard's meaning layer runs with the shipped defaults (issue 30): e5's model ships in the
# package, and the template database holds the one trained for the fake Voyage server's
# vectors (testkit/guard.py), so no test process embeds the exemplar bank.


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    with postgres_server() as url:
        if not os.environ.get("EROS_TEST_DATABASE_URL"):
            without_fsync(url)
        yield url


@pytest.fixture(scope="session")
def templates(pg_server_url: str, request: pytest.FixtureRequest) -> Iterator[TemplateDatabases]:
    tpl = TemplateDatabases(pg_server_url, seed=lambda url: seed_template(url, request.config),
                            ahead=2)
    yield tpl
    tpl.close()


@pytest.fixture
def db_url(templates: TemplateDatabases) -> Iterator[str]:
    """A freshly migrated database of its own for this test."""
    url = templates.clone()
    yield url
    templates.drop(url)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = create_engine(db_url, pool_size=10, max_overflow=10)
    yield eng
    eng.dispose()


@pytest.fixture(scope="module")
def engine_module(templates: TemplateDatabases) -> Iterator[Engine]:
    """One database for the whole module (a replay that runs once, tests that read its
    result): migrated like :func:`db_url`'s, dropped after the module's last test."""
    url = templates.clone()
    eng = create_engine(url)
    yield eng
    eng.dispose()
    templates.drop(url)


@pytest.fixture(scope="session")
def redis_base() -> Iterator[str]:
    with redis_server() as url:
        yield url


_redis_dbs = itertools.cycle(range(1, 16))


@pytest.fixture
def redis_url(redis_base: str) -> Iterator[str]:
    """A flushed Redis database number of its own (1–15) for this test."""
    if redis_base.startswith("redis+socket://"):
        url = redis_base + f"?virtual_host={next(_redis_dbs)}"
    else:
        url = f"{redis_base}/{next(_redis_dbs)}"
    client = redis.Redis.from_url(url.replace("redis+socket://", "unix://"))
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    """A local server speaking the OpenAI chat-completions wire format."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def voyage() -> Iterator[FakeVoyageServer]:
    """A local server speaking the Voyage embeddings wire format."""
    with FakeVoyageServer() as server:
        yield server


@pytest.fixture
def provider_settings(db_url: str, llm: FakeLLMServer,
                      request: pytest.FixtureRequest) -> Callable[..., Settings]:
    """Settings for this test's database and its fake providers: OpenRouter (the ``llm``
    server) and Voyage (the ``voyage`` server; with ``voyage=False`` none, so the offline
    embedder), with no provider retries. ``provider_settings(**overrides)`` adds the test's own
    values (any setting, these included)."""

    def make(*, voyage: bool = True, **overrides: Any) -> Settings:
        values: dict[str, Any] = {"database_url": db_url, "openrouter_api_key": "k",
                                  "openrouter_base_url": llm.url, "provider_max_retries": 0}
        if voyage:
            server: FakeVoyageServer = request.getfixturevalue("voyage")
            values.update(voyage_api_key="k", voyage_base_url=server.url)
        return load_settings(**{**values, **overrides})

    return make


@pytest.fixture
def consolidator(engine: Engine, provider_settings: Callable[..., Settings]) -> Consolidator:
    """A consolidator on the fake providers: near duplicates from cosine 0.85, a pass from a
    near-duplicate share of 0.2, two-second provider timeouts."""
    settings = provider_settings(
        llm_timeout_secs=2, embedding_timeout_secs=2, consolidation_similarity=0.85,
        consolidation_min_near_dup_share=0.2)
    return fake_consolidator(settings, engine)
