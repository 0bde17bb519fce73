"""Issue 16, holes 3 and 6: no paid call is repeated because a later slot was full; the
buckets refill from Redis's clock and a request larger than a bucket pays in full."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis
from sqlalchemy import Engine

from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.db import repo
from eros.prompts import load_prompt
from eros.providers.embeddings import VoyageEmbedder
from eros.providers.llm import OpenRouterChat
from eros.providers.ratelimit import Limits, RedisLimiter, Throttled
from eros.settings import Settings, load_settings
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer


def _client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(load_settings(redis_url=redis_url).redis_client_url())


def test_a_full_embedding_slot_throttles_before_the_llm_is_paid(
        engine: Engine, redis_url: str, llm: FakeLLMServer,
        provider_settings: Callable[..., Settings]) -> None:
    settings = provider_settings(llm_timeout_secs=2, embedding_timeout_secs=2)
    limits = {"llm": Limits(max_concurrency=4), "embedding": Limits(max_concurrency=1)}
    limiter = RedisLimiter(_client(redis_url), limits)
    pipeline = Pipeline(settings, engine, OpenRouterChat(settings), VoyageEmbedder(settings),
                        load_prompt(), limiter)
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "lives in Lyon")])
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, sid, claim.token)
    assert attempt is not None

    other = RedisLimiter(_client(redis_url), limits)
    with other.slot("embedding"), pytest.raises(Throttled):  # another worker is embedding
        classify(pipeline, attempt)
    assert llm.request_count == 0, "the LLM was paid for a run that then gave up"

    report = classify(pipeline, attempt)  # the slot is free again: one paid call in all
    assert report.memories_written == 1 and llm.request_count == 1


def test_a_request_larger_than_the_bucket_goes_into_debt(redis_url: str) -> None:
    limiter = RedisLimiter(_client(redis_url),
                           {"llm": Limits(tokens_per_minute=6000, burst_secs=1)})  # 100 tokens
    limiter.reserve("llm", tokens=300)  # from a full bucket: granted, 200 tokens in debt
    with pytest.raises(Throttled) as info:
        limiter.reserve("llm", tokens=1)
    assert info.value.wait >= 1.9  # 201 tokens at 100 a second, not 0.01 s


def test_a_debt_charge_never_raises_and_is_waited_off(redis_url: str) -> None:
    limiter = RedisLimiter(_client(redis_url), {"llm": Limits(requests_per_minute=60,
                                                              burst_secs=1)})  # 1 request
    limiter.reserve("llm", tokens=0)
    limiter.reserve("llm", tokens=0, debt=True)  # a paid reply's follow-up
    with pytest.raises(Throttled) as info:
        limiter.reserve("llm", tokens=0)
    assert info.value.wait > 1.0


def test_a_replica_whose_clock_runs_ahead_does_not_freeze_refill(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"llm": Limits(requests_per_minute=600, burst_secs=0.2)}  # 2 at once, 10/s
    ahead = RedisLimiter(_client(redis_url), limits)
    normal = RedisLimiter(_client(redis_url), limits)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # this replica's clock: +1 h
    ahead.reserve("llm", tokens=0)
    ahead.reserve("llm", tokens=0)
    monkeypatch.setattr(time, "time", real)
    with pytest.raises(Throttled) as info:
        normal.reserve("llm", tokens=0)
    time.sleep(info.value.wait + 0.05)
    normal.reserve("llm", tokens=0)  # refilled, as Redis's clock says


def test_both_budgets_are_charged_together_or_not_at_all(redis_url: str) -> None:
    limits = {"llm": Limits(requests_per_minute=600, burst_secs=1),  # 10 requests
              "embedding": Limits(requests_per_minute=60, burst_secs=1)}  # 1 request
    limiter = RedisLimiter(_client(redis_url), limits)
    limiter.reserve_all({"llm": 0, "embedding": 0})
    with pytest.raises(Throttled):
        limiter.reserve_all({"llm": 0, "embedding": 0})  # embedding short: llm not charged
    for _ in range(9):
        limiter.reserve("llm", tokens=0)  # the 9 llm requests left are all still there
    with pytest.raises(Throttled):
        limiter.reserve("llm", tokens=0)
