"""The replica heartbeat is written by the real beat process (issue 32): with
DATABASE_REPLICA_URL in beat's environment, ``engine.replica_heartbeat`` on the primary
(DATABASE_URL) moves every RECALL_REPLICA_HEARTBEAT_SECS; without it beat writes none — so a
deployment that leaves the variable out of beat's environment has recall read the primary
(a replica with no replayed heartbeat counts as lagging) — and with it but without
DATABASE_URL beat refuses to start, naming the variable. How recall reads the heartbeat on a
real replica is ``tests/integration/test_replica.py``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
import redis
from sqlalchemy import Engine, text

from eros.core.names import BEAT_HEARTBEAT_KEY
from testkit.workers import BeatProcess, wait_until

pytestmark = pytest.mark.e2e


def _beats(engine: Engine) -> list[datetime]:
    with engine.connect() as conn:
        return list(conn.execute(text(
            "SELECT beat_at FROM engine.replica_heartbeat")).scalars())


def test_beat_writes_the_replica_heartbeat_only_with_a_replica_configured(
        engine: Engine, redis_url: str, db_url: str,
        start_beat: Callable[..., BeatProcess]) -> None:
    client = redis.Redis.from_url(redis_url)
    client.delete(BEAT_HEARTBEAT_KEY)
    # no DATABASE_REPLICA_URL: beat runs (its Redis heartbeat moves) but writes no row
    plain = start_beat("plain")
    wait_until(lambda: client.get(BEAT_HEARTBEAT_KEY) is not None, timeout=60,
               message="beat's Redis heartbeat")
    first = client.get(BEAT_HEARTBEAT_KEY)
    wait_until(lambda: client.get(BEAT_HEARTBEAT_KEY) != first, timeout=60,
               message="a second beat loop")
    assert _beats(engine) == []
    plain.stop()

    # with it (here naming the primary itself: beat only writes to DATABASE_URL), the
    # heartbeat is written and keeps moving, at the shipped default period (1 s)
    start_beat("replicated", DATABASE_REPLICA_URL=db_url)
    wait_until(lambda: len(_beats(engine)) == 1, timeout=60, message="the replica heartbeat")
    seen = _beats(engine)[0]
    wait_until(lambda: _beats(engine)[0] > seen, timeout=30, message="a later heartbeat")
    seen = _beats(engine)[0]
    wait_until(lambda: _beats(engine)[0] > seen, timeout=30, message="and another")


def test_beat_with_a_replica_but_no_database_url_refuses_to_start(
        redis_url: str, db_url: str, start_beat: Callable[..., BeatProcess]) -> None:
    beat = start_beat("no-primary", DATABASE_REPLICA_URL=db_url, DATABASE_URL="")
    assert beat.proc.wait(timeout=60) != 0
    log = beat.log_path.read_text()
    assert "DATABASE_URL is not set" in log, log[-2000:]
