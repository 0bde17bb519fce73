"""Issue 16, hole 8: two overlapping claimers never pass DREAMING_MAX_IN_FLIGHT together."""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from eros.memory.db import repo
from testkit.data import bulk_idle_sessions
from tests.integration.test_turn_races import _in_thread, _wait_until


def test_a_second_claimer_counts_the_first_ones_uncommitted_claims(engine: Engine) -> None:
    with engine.begin() as conn:
        bulk_idle_sessions(conn, 20)
    args = {"ceiling": 6, "batch": 5, "idle_secs": 1800, "stale_secs": 600}

    first = engine.connect()
    first.begin()
    mine, _ = repo.claim_within_ceiling(first, **args)  # 5 claimed, not yet committed
    assert len(mine) == 5

    thread, done, out, pid = _in_thread(engine, lambda c: repo.claim_within_ceiling(c, **args))
    state = _wait_until(engine, pid, done)
    first.commit()
    first.close()
    thread.join(30)
    theirs, seen = out[0]  # type: ignore[misc]
    assert state == "waiting", "the second claimer counted before the first one committed"
    assert seen == 5 and len(theirs) == 1
    with engine.connect() as conn:
        assert repo.count_in_flight(conn, stale_secs=600) == 6


def test_claimers_in_many_threads_stop_at_the_ceiling(engine: Engine) -> None:
    with engine.begin() as conn:
        bulk_idle_sessions(conn, 200)
    barrier = threading.Barrier(6)
    got: list[int] = []

    def claimer() -> None:
        barrier.wait()
        with engine.begin() as conn:
            claims, _ = repo.claim_within_ceiling(conn, ceiling=25, batch=10, idle_secs=1800,
                                                  stale_secs=600)
        got.append(len(claims))

    threads = [threading.Thread(target=claimer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(got) == 25
