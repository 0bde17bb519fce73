"""Global provider limits shared by every replica through Redis.

Two small atomic Lua scripts: a token bucket per resource (requests per minute and tokens per
minute, checked and charged together) and a leased semaphore for provider concurrency (a
killed worker's slot expires with its lease). A caller that would have to wait gets
:class:`Throttled` with the wait, so the Celery task is rescheduled instead of holding a slot.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol

import redis

from eros.errors import ErosError
from eros.settings import Settings

# Redis's own clock, so every replica refills from one time, whatever its own clock says.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: bucket keys. ARGV: force (1 = charge without checking), then (capacity, per_ms_rate,
# cost) per key. Grants all or nothing; returns 0 when granted, else ms until every bucket
# could pay. A cost above the capacity is granted from a full bucket and leaves it in debt
# (a negative level that refills like any other), so a large request pays in full.
_BUCKETS = _NOW + """
local force = tonumber(ARGV[1]) == 1
local wait = 0
local state = {}
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[2 + (i - 1) * 3])
  local rate = tonumber(ARGV[3 + (i - 1) * 3])
  local cost = tonumber(ARGV[4 + (i - 1) * 3])
  local v = redis.call('HMGET', key, 'level', 'ts')
  local level = tonumber(v[1]) or cap
  local ts = tonumber(v[2]) or now
  level = math.min(cap, level + math.max(0, now - ts) * rate)
  state[i] = {level, cost}
  local need = math.min(cost, cap)
  if level < need then
    wait = math.max(wait, math.ceil((need - level) / rate))
  end
end
if wait > 0 and not force then return wait end
for i, key in ipairs(KEYS) do
  local cap = tonumber(ARGV[2 + (i - 1) * 3])
  local rate = tonumber(ARGV[3 + (i - 1) * 3])
  local level = state[i][1] - state[i][2]
  redis.call('HSET', key, 'level', level, 'ts', now)
  redis.call('PEXPIRE', key, math.ceil((cap - math.min(level, 0)) / rate) + 60000)
end
return 0
"""

# KEYS: the semaphores' sorted sets. ARGV: holder, then (limit, lease_ms) per key.
# All or nothing: a caller holds every slot it needs before it spends anything.
_ACQUIRE = _NOW + """
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[2 + (i - 1) * 2]) then return 0 end
end
for i, key in ipairs(KEYS) do
  local lease = tonumber(ARGV[3 + (i - 1) * 2])
  redis.call('ZADD', key, now + lease, ARGV[1])
  redis.call('PEXPIRE', key, lease * 2)
end
return 1
"""


class Throttled(ErosError):
    """A global provider limit is reached; come back after ``wait`` seconds (not a failure)."""

    def __init__(self, resource: str, wait: float) -> None:
        super().__init__(f"{resource} limit reached; retry in {wait:.2f}s")
        self.resource = resource
        self.wait = wait

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Throttled, (self.resource, self.wait))


@dataclass(frozen=True)
class Limits:
    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    max_concurrency: int = 0
    lease_secs: float = 120.0
    burst_secs: float = 10.0

    @property
    def active(self) -> bool:
        return bool(self.requests_per_minute or self.tokens_per_minute or self.max_concurrency)


class Limiter(Protocol):
    """Reserve request/token budget before a call; hold a concurrency slot during it."""

    def reserve(self, resource: str, *, tokens: int, debt: bool = False) -> None: ...

    def reserve_all(self, tokens: dict[str, int]) -> None: ...

    def slot(self, resource: str) -> AbstractContextManager[None]: ...

    def slots(self, *resources: str) -> AbstractContextManager[None]: ...


class NoLimits:
    """Used when no limit is configured: nothing to ask Redis."""

    def reserve(self, resource: str, *, tokens: int, debt: bool = False) -> None:
        return None

    def reserve_all(self, tokens: dict[str, int]) -> None:
        return None

    @contextmanager
    def slot(self, resource: str) -> Iterator[None]:
        yield

    @contextmanager
    def slots(self, *resources: str) -> Iterator[None]:
        yield


class RedisLimiter:
    """Limits per resource name (``llm``, ``embedding``) enforced across all replicas."""

    def __init__(self, client: redis.Redis, limits: dict[str, Limits], *,
                 prefix: str = "eros:limit", slot_wait_secs: float = 0.0) -> None:
        self._redis = client
        self._limits = limits
        self._prefix = prefix
        self._slot_wait = slot_wait_secs
        self._buckets = client.register_script(_BUCKETS)
        self._acquire = client.register_script(_ACQUIRE)

    def reserve(self, resource: str, *, tokens: int, debt: bool = False) -> None:
        """Charge one request and ``tokens`` tokens, or raise Throttled with the wait.

        ``debt=True`` charges without checking, for a call already committed to (the paid
        reply's follow-up): the bucket goes negative and later callers wait it off.
        """
        self._charge({resource: tokens}, debt=debt)

    def reserve_all(self, tokens: dict[str, int]) -> None:
        """Charge one request and its tokens on every named resource in one atomic step, or
        none of them (raises Throttled with the longest wait)."""
        self._charge(tokens, debt=False)

    def _charge(self, tokens: dict[str, int], *, debt: bool) -> None:
        keys: list[str] = []
        args: list[float] = [1 if debt else 0]
        for resource, count in tokens.items():
            limits = self._limits.get(resource)
            if limits is None:
                continue
            for kind, per_minute, cost in (("requests", limits.requests_per_minute, 1),
                                           ("tokens", limits.tokens_per_minute, count)):
                if per_minute:
                    keys.append(f"{self._prefix}:{resource}:{kind}")
                    capacity = max(1.0, per_minute * limits.burst_secs / 60.0)
                    args += [capacity, per_minute / 60000.0, max(0, cost)]
        if not keys:
            return
        wait_ms = int(self._buckets(keys=keys, args=args))
        if wait_ms > 0:
            raise Throttled(f"{'+'.join(tokens)} rate", wait_ms / 1000.0)

    def slot(self, resource: str) -> AbstractContextManager[None]:
        """Hold one of ``max_concurrency`` provider slots for the duration of a call."""
        return self.slots(resource)

    @contextmanager
    def slots(self, *resources: str) -> Iterator[None]:
        """Hold a slot of every named resource at once, taken together or not at all, so a
        run never finds the second one full after paying for the first call."""
        wanted = [(r, lim) for r in resources
                  if (lim := self._limits.get(r)) is not None and lim.max_concurrency]
        if not wanted:
            yield
            return
        keys = [f"{self._prefix}:{r}:slots" for r, _ in wanted]
        holder = uuid.uuid4().hex
        args: list[str | int] = [holder]
        for _, lim in wanted:
            args += [lim.max_concurrency, int(lim.lease_secs * 1000)]
        deadline = time.monotonic() + self._slot_wait
        while not int(self._acquire(keys=keys, args=args)):
            if time.monotonic() >= deadline:
                raise Throttled(f"{'+'.join(r for r, _ in wanted)} concurrency", 1.0)
            time.sleep(0.05)
        try:
            yield
        finally:
            for key in keys:
                self._redis.zrem(key, holder)


def make_limiter(settings: Settings) -> RedisLimiter | NoLimits:
    """A Redis-backed limiter when any provider limit is configured, else a no-op."""
    attempts = settings.provider_max_retries + 1
    burst = settings.rate_limit_burst_secs
    limits = {
        "llm": Limits(settings.llm_requests_per_minute, settings.llm_tokens_per_minute,
                      settings.llm_max_concurrency,
                      settings.llm_timeout_secs * attempts * 2 + 30, burst),
        "embedding": Limits(settings.embedding_requests_per_minute,
                            settings.embedding_tokens_per_minute,
                            settings.embedding_max_concurrency,
                            settings.embedding_timeout_secs * attempts + 30, burst),
    }
    if not any(limit.active for limit in limits.values()):
        return NoLimits()
    client = redis.Redis.from_url(settings.redis_client_url(), socket_timeout=5,
                                  socket_connect_timeout=5)
    return RedisLimiter(client, limits, slot_wait_secs=settings.rate_limit_slot_wait_secs)
