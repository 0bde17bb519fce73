"""Celery beat's scheduler with a heartbeat, so ``eros health --beat`` can tell a live beat
from a dead one even while no worker runs the ticks it sends."""

from __future__ import annotations

import logging
import time
from typing import Any

import redis
from celery.beat import PersistentScheduler

from eros.core.names import BEAT_HEARTBEAT_KEY

log = logging.getLogger(__name__)


class HeartbeatScheduler(PersistentScheduler):  # type: ignore[misc]
    """PersistentScheduler that records ``time.time()`` in Redis on every loop."""

    _client: redis.Redis | None = None

    def tick(self, *args: Any, **kwargs: Any) -> float:
        interval: float = super().tick(*args, **kwargs)
        try:
            if self._client is None:
                self._client = redis.Redis.from_url(self.app.eros_settings.redis_client_url(),
                                                    socket_timeout=2, socket_connect_timeout=2)
            self._client.set(BEAT_HEARTBEAT_KEY, f"{time.time():.3f}", ex=3600)
        except redis.RedisError as err:  # the broker may be restarting; beat carries on
            log.warning("beat heartbeat not recorded: %s", type(err).__name__)
            self._client = None
        return interval
