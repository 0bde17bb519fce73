"""The pipeline's gauges, read from the database at scrape time: the backlog, work in flight,
dead letters, and the guard's meaning layer (a scrape never crashes the worker)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)


class DatabaseGauges:
    """Backlog, oldest idle age, in flight and dead letters, read at scrape time."""

    def __init__(self, engine: Any, settings: Any) -> None:
        self._engine = engine
        self._settings = settings

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from eros.memory.db.queries import backlog_snapshot

        try:
            with self._engine.connect() as conn:
                snap = backlog_snapshot(conn, idle_secs=self._settings.dreaming_idle_secs,
                                        stale_secs=self._settings.dreaming_claim_stale_secs)
        except Exception as err:  # a scrape must not crash the worker
            log.warning("metrics: database gauges unavailable: %s", type(err).__name__)
            return
        yield GaugeMetricFamily("eros_backlog_sessions", "Idle sessions waiting to be claimed",
                                value=snap.eligible)
        yield GaugeMetricFamily("eros_backlog_oldest_age_seconds",
                                "Seconds since the oldest eligible session went idle",
                                value=snap.oldest_idle_secs)
        yield GaugeMetricFamily("eros_in_flight_sessions", "Claimed sessions not yet finished",
                                value=snap.in_flight)
        yield GaugeMetricFamily("eros_dead_lettered_sessions", "Sessions in the dead letter",
                                value=snap.dead_letters)
        yield from _guard_gauges(self._engine, self._settings)


def _guard_gauges(engine: Any, settings: Any) -> Iterator[Any]:
    """``eros_guard_meaning_layer{state}``: 1 for the meaning layer's state, 0 for the others,
    and ``eros_guard_unscreened_memories``: what waits for its model."""
    from prometheus_client.core import GaugeMetricFamily

    from eros.guard.db.guard_sql import count_unscreened
    from eros.guard.services.guard_layer import STATES, embedder_name, resolve

    try:
        with engine.connect() as conn:
            state, _, _ = resolve(settings, conn, embedder_name(settings))
            unscreened = count_unscreened(conn)
    except Exception as err:  # a scrape must not crash the worker
        log.warning("metrics: guard gauges unavailable: %s", type(err).__name__)
        return
    family = GaugeMetricFamily("eros_guard_meaning_layer",
                               "The memory guard's meaning layer: 1 for its state",
                               labels=["state"])
    for name in STATES:
        family.add_metric([name], 1.0 if name == state else 0.0)
    yield family
    yield GaugeMetricFamily("eros_guard_unscreened_memories",
                            "Memories waiting for the meaning layer's model (never recalled)",
                            value=unscreened)
