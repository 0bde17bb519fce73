"""The global limits against a real Redis, shared by independent limiter instances."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from eros.providers.ratelimit import Limits, RedisLimiter, Throttled, make_limiter
from eros.settings import load_settings


def _client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(load_settings(redis_url=redis_url).redis_client_url())


def test_requests_per_minute_is_shared_across_replicas(redis_url: str) -> None:
    limits = {"llm": Limits(requests_per_minute=120, burst_secs=2)}  # 4 at once, 2/s after
    replicas = [RedisLimiter(_client(redis_url), limits) for _ in range(3)]
    granted = 0
    waits = []
    for i in range(9):
        try:
            replicas[i % 3].reserve("llm", tokens=0)
            granted += 1
        except Throttled as err:
            waits.append(err.wait)
    assert granted == 4
    assert waits and all(0 < w <= 0.6 for w in waits)
    time.sleep(0.6)  # refill: about one more request
    replicas[0].reserve("llm", tokens=0)


def test_tokens_and_requests_are_charged_together_or_not_at_all(redis_url: str) -> None:
    limiter = RedisLimiter(_client(redis_url),
                           {"llm": Limits(requests_per_minute=600, tokens_per_minute=6000,
                                          burst_secs=1)})  # 10 requests, 100 tokens per burst
    limiter.reserve("llm", tokens=80)
    with pytest.raises(Throttled) as info:
        limiter.reserve("llm", tokens=80)  # tokens short; the request must not be charged
    assert 0.1 < info.value.wait <= 0.7
    for _ in range(9):
        limiter.reserve("llm", tokens=0)  # all 9 remaining requests still there
    with pytest.raises(Throttled):
        limiter.reserve("llm", tokens=0)


def test_concurrency_slots_bound_calls_across_threads(redis_url: str) -> None:
    limits = {"embedding": Limits(max_concurrency=2, lease_secs=30)}
    peak = 0
    active = 0
    lock = threading.Lock()
    throttled = 0

    def call() -> None:
        nonlocal peak, active, throttled
        limiter = RedisLimiter(_client(redis_url), limits, slot_wait_secs=5)
        try:
            with limiter.slot("embedding"):
                with lock:
                    active += 1
                    peak = max(peak, active)
                time.sleep(0.2)
                with lock:
                    active -= 1
        except Throttled:
            with lock:
                throttled += 1

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 2 and throttled == 0


def test_a_dead_holders_slot_expires_with_its_lease(redis_url: str) -> None:
    client = _client(redis_url)
    limiter = RedisLimiter(client, {"llm": Limits(max_concurrency=1, lease_secs=0.5)})
    holder = limiter.slot("llm")
    holder.__enter__()  # never released: the process "died"
    with pytest.raises(Throttled), limiter.slot("llm"):
        pass
    time.sleep(0.6)
    with limiter.slot("llm"):
        pass


def test_no_limits_configured_means_no_redis_round_trips() -> None:
    limiter = make_limiter(load_settings(redis_url="redis://127.0.0.1:1/0"))
    limiter.reserve("llm", tokens=10**9)  # would fail to connect if it asked Redis
    with limiter.slot("llm"):
        pass
