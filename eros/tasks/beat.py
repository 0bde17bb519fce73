"""Celery beat's scheduler with a heartbeat, so ``eros health --beat`` can tell a live beat
from a dead one even while no worker runs the ticks it sends — and, when a read replica is
configured (DATABASE_REPLICA_URL), the replica heartbeat: ``engine.replica_heartbeat`` on the
primary updated every RECALL_REPLICA_HEARTBEAT_SECS, whose replayed age tells recall how far
behind a replica is even when its WAL receiver is disconnected."""

from __future__ import annotations

import logging
import time
from typing import Any

import redis
from celery.beat import PersistentScheduler
from sqlalchemy.exc import DBAPIError

from eros.core.names import BEAT_HEARTBEAT_KEY
from eros.db import replica_sql
from eros.db.engine import get_engine

log = logging.getLogger(__name__)


class HeartbeatScheduler(PersistentScheduler):  # type: ignore[misc]
    """PersistentScheduler that records ``time.time()`` in Redis on every loop."""

    _client: redis.Redis | None = None
    _replica_beat_at: float = 0.0

    def setup_schedule(self) -> None:
        """Celery's set-up, then the replica heartbeat's start-up check: it is written to the
        primary, so DATABASE_URL is required when it is on (a ConfigError naming it)."""
        super().setup_schedule()
        settings = self.app.eros_settings
        if settings.replica_heartbeat_on:
            settings.require_database_url()
            log.info("replica heartbeat: engine.replica_heartbeat on the primary every %gs"
                     " (DATABASE_REPLICA_URL is set)", settings.recall_replica_heartbeat_secs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        interval: float = super().tick(*args, **kwargs)
        self._replica_heartbeat()
        try:
            if self._client is None:
                self._client = redis.Redis.from_url(self.app.eros_settings.redis_client_url(),
                                                    socket_timeout=2, socket_connect_timeout=2)
            self._client.set(BEAT_HEARTBEAT_KEY, f"{time.time():.3f}", ex=3600)
        except redis.RedisError as err:  # the broker may be restarting; beat carries on
            log.warning("beat heartbeat not recorded: %s", type(err).__name__)
            self._client = None
        return interval

    def _replica_heartbeat(self) -> None:
        """Update ``engine.replica_heartbeat`` on the primary when one is due (two beats
        running both write: harmless, one row)."""
        settings = self.app.eros_settings
        every = settings.recall_replica_heartbeat_secs
        now = time.monotonic()
        if not settings.replica_heartbeat_on or now - self._replica_beat_at < every:
            return
        self._replica_beat_at = now
        try:
            with get_engine(settings).begin() as conn:
                replica_sql.beat(conn)
        except DBAPIError as err:  # the primary may be restarting; recall then reads it anyway
            log.warning("replica heartbeat not recorded: %s", type(err).__name__)
