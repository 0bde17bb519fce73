"""Liveness and readiness checks for workers and beat, usable as container probes."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

import redis
from sqlalchemy import text

from eros.core.names import BEAT_HEARTBEAT_KEY
from eros.db.engine import get_engine, safe_url
from eros.settings import Settings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


def database(settings: Settings) -> Check:
    """Reachable and migrated (the claim reads ``engine.chat_sessions``)."""
    url = settings.require_database_url()
    try:
        with get_engine(settings).connect() as conn:
            conn.execute(text("SELECT 1 FROM engine.chat_sessions LIMIT 1"))
    except Exception as err:
        first = str(getattr(err, "orig", None) or err).strip().splitlines()[0][:200]
        return Check("database", False, f"{safe_url(url)}: {first}")
    return Check("database", True, safe_url(url))


def broker(settings: Settings) -> Check:
    """The Celery broker answers: REDIS_URL's Redis, or BROKER_URL's RabbitMQ (then the Redis
    that keeps results and rate limits as well)."""
    try:
        client = redis.Redis.from_url(settings.redis_client_url(), socket_timeout=3,
                                      socket_connect_timeout=3)
        client.ping()
    except redis.RedisError as err:
        return Check("broker", False, f"{safe_url(settings.require_redis_url())}: {err}")
    if not settings.broker_url:
        return Check("broker", True, safe_url(settings.require_redis_url()))
    from kombu.connection import Connection

    try:
        with Connection(settings.broker_url, connect_timeout=3) as conn:  # type: ignore[no-untyped-call]
            conn.ensure_connection(max_retries=1, timeout=3)
    except Exception as err:  # kombu raises OperationalError, socket and AMQP errors
        detail = str(err).strip() or type(err).__name__
        return Check("broker", False, f"{safe_url(settings.broker_url)}: {detail[:200]}")
    return Check("broker", True, f"{safe_url(settings.broker_url)} (results: "
                                 f"{safe_url(settings.require_redis_url())})")


def beat(settings: Settings, *, max_age: float | None = None) -> Check:
    """Beat is alive if its scheduler loop wrote a heartbeat recently."""
    limit = max_age or 3 * min(30, settings.dreaming_tick_secs) + 10
    try:
        client = redis.Redis.from_url(settings.redis_client_url(), socket_timeout=3,
                                      socket_connect_timeout=3)
        raw = client.get(BEAT_HEARTBEAT_KEY)
    except redis.RedisError as err:
        return Check("beat", False, f"broker unreachable: {err}")
    if raw is None:
        return Check("beat", False, "no beat heartbeat recorded")
    age = time.time() - float(raw)
    ok = age <= limit
    return Check("beat", ok, f"last loop {age:.1f}s ago (limit {limit:.0f}s)",
                 {"age_secs": round(age, 1)})


def worker(app: Any, *, name: str | None = None, timeout: float = 3.0) -> Check:
    """A worker of ``app`` (the Celery app) answers Celery's remote-control ping (``name``
    defaults to any worker)."""
    destination = [name] if name else None
    try:
        replies = app.control.ping(destination=destination, timeout=timeout)
    except Exception as err:
        return Check("worker", False, f"ping failed: {type(err).__name__}: {err}")
    names = sorted(n for reply in replies for n in reply)
    if not names:
        who = name or "any worker"
        return Check("worker", False, f"no reply from {who} within {timeout:.0f}s")
    return Check("worker", True, ", ".join(names), {"workers": names})


def default_worker_name() -> str:
    """Celery's default node name on this host."""
    return f"celery@{socket.gethostname()}"
