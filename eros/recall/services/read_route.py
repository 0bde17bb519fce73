"""Where a recall reads: the streaming read replica (DATABASE_REPLICA_URL) when it is set,
answering and caught up, else the primary (docs/operations.md, "Production topology").

A recall is read-only and tolerates a little staleness (a memory written a second ago may be
missed), so it can leave the primary to the writers. Its first transaction on the replica
measures the replay lag (one extra round trip); above RECALL_MAX_REPLICA_LAG_MS the recall
reads the primary instead. A replica that cannot be reached, or drops a connection mid-recall,
is skipped for :data:`REPLICA_RETRY_SECS` by every recall of this process and the failed step
is rerun on the primary. Each recall served by the primary while a replica is configured adds
one to ``eros_recall_replica_fallbacks_total{reason}``: ``lag``, ``down`` or ``conflict`` (the
replica cancelled the query for a conflict with recovery). A statement timeout is not a
replica failure: it is the recall's own budget and is raised as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal, TypeVar

import psycopg
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from eros.db.engine import get_replica_engine, safe_url
from eros.db.replica_sql import replica_lag_ms
from eros.ops import metrics
from eros.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
Source = Literal["primary", "replica"]
Reason = Literal["lag", "down", "conflict"]

#: after a replica failure, recalls of this process read the primary for this long before
#: trying the replica again (one failed connection attempt per period, not one per recall).
REPLICA_RETRY_SECS = 5.0

_down_until: dict[str, float] = {}
_down_lock = threading.Lock()


class ReadRoute:
    """The database one recall reads, chosen at its first transaction and kept for the rest."""

    def __init__(self, primary: Engine, settings: Settings,
                 replica: Engine | None = None) -> None:
        self.primary = primary
        self._settings = settings
        self._replica = replica if replica is not None else get_replica_engine(settings)
        self._decided = self._replica is None
        #: ``replica`` once a transaction of this recall ran there.
        self.source: Source = "primary"
        #: why this recall read the primary although a replica is configured.
        self.fallback: Reason | None = None

    def run(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one read transaction on the chosen database."""
        replica = self._replica
        if replica is not None and (not self._decided or self.source == "replica"):
            if not self._decided and _is_down(replica):
                self._fall_back("down")
            else:
                try:
                    with replica.connect() as conn, conn.begin():
                        if self._decided or self._caught_up(conn):
                            self.source = "replica"
                            return work(conn)
                except DBAPIError as err:
                    reason = _failure(err)
                    if reason is None:
                        raise
                    if reason == "down":
                        _mark_down(replica)
                    self.source = "primary"
                    self._fall_back(reason)
        with self.primary.connect() as conn, conn.begin():
            return work(conn)

    def _caught_up(self, conn: Connection) -> bool:
        self._decided = True
        lag = replica_lag_ms(conn, self._settings.recall_replica_heartbeat_secs)
        if lag <= self._settings.recall_max_replica_lag_ms:
            return True
        self._fall_back("lag")
        return False

    def _fall_back(self, reason: Reason) -> None:
        if self.fallback is None:
            self.fallback = reason
            metrics.record_replica_fallback(reason)
        self._decided = True


def _failure(err: DBAPIError) -> Reason | None:
    """A replica failure the primary can stand in for, or None (raise it)."""
    orig = err.orig
    if isinstance(orig, psycopg.errors.SerializationFailure):
        return "conflict"  # canceling statement due to conflict with recovery
    if isinstance(orig, psycopg.errors.QueryCanceled):
        return None  # the recall's own statement timeout
    if err.connection_invalidated or isinstance(orig, psycopg.OperationalError):
        return "down"
    return None


def _is_down(engine: Engine) -> bool:
    with _down_lock:
        return _down_until.get(str(engine.url), 0.0) > time.monotonic()


def _mark_down(engine: Engine) -> None:
    """Skip the replica for a while and drop its pooled connections (all dead or doubtful)."""
    with _down_lock:
        _down_until[str(engine.url)] = time.monotonic() + REPLICA_RETRY_SECS
    engine.dispose()
    log.warning("recall: read replica %s unavailable; reading the primary for %.0fs",
                safe_url(str(engine.url)), REPLICA_RETRY_SECS)


def forget_failures() -> None:
    """Try the replica at the next recall again (tests, and after an operator's fix)."""
    with _down_lock:
        _down_until.clear()
