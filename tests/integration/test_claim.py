"""The SKIP LOCKED claim against a real PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

from sqlalchemy import Engine, text

from eros.memory.db import repo
from testkit.data import add_session, bulk_idle_sessions


def test_eight_concurrent_claimers_claim_each_of_5000_exactly_once(engine: Engine) -> None:
    with engine.begin() as conn:
        expected = set(bulk_idle_sessions(conn, 5000))
    claimed: list[list[uuid.UUID]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def claimer(index: int) -> None:
        try:
            barrier.wait()
            while True:
                with engine.begin() as conn:
                    got = repo.claim_idle(conn, idle_secs=1800, stale_secs=600, batch=37)
                if not got:
                    return
                claimed[index].extend(c.session_id for c in got)
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    flat = [sid for part in claimed for sid in part]
    assert len(flat) == len(set(flat)) == 5000
    assert set(flat) == expected
    assert sum(1 for part in claimed if part) >= 2  # the work really was shared


def test_claim_respects_idle_stale_classified_and_dead_letters(engine: Engine) -> None:
    with engine.begin() as conn:
        idle = add_session(conn, [("user", "hi")])
        active = add_session(conn, [("user", "hi")], idle_for=timedelta(minutes=5))
        done = add_session(conn, [("user", "hi")])
        fresh_claim = add_session(conn, [("user", "hi")])
        stale_claim = add_session(conn, [("user", "hi")])
        dead = add_session(conn, [("user", "hi")])
        backoff = add_session(conn, [("user", "hi")])
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now() WHERE id = :i"),
                     {"i": done})
        conn.execute(text("UPDATE engine.chat_sessions SET classification_claimed_at = now()"
                          " - interval '1 minute' WHERE id = :i"), {"i": fresh_claim})
        conn.execute(text("UPDATE engine.chat_sessions SET classification_claimed_at = now()"
                          " - interval '11 minutes' WHERE id = :i"), {"i": stale_claim})
        conn.execute(text("UPDATE engine.chat_sessions SET dead_lettered_at = now() WHERE id = :i"),
                     {"i": dead})
        conn.execute(text("UPDATE engine.chat_sessions SET next_attempt_at = now()"
                          " + interval '5 minutes' WHERE id = :i"), {"i": backoff})
        got = repo.claim_idle(conn, idle_secs=1800, stale_secs=600, batch=100)
    assert {c.session_id for c in got} == {idle, stale_claim}
    assert active not in {c.session_id for c in got}
    assert len({c.token for c in got}) == 2


def test_claim_query_uses_the_partial_index(engine: Engine) -> None:
    with engine.begin() as conn:
        bulk_idle_sessions(conn, 3000)
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now()"
                          " WHERE random() < 0.95"))
        conn.execute(text("ANALYZE engine.chat_sessions"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))  # tiny table: make intent visible
        plan = "\n".join(r[0] for r in conn.execute(text(
            "EXPLAIN " + str(repo.CLAIM_IDLE.text)),
            {"idle_secs": 1800, "stale_secs": 600, "batch": 100}))
    assert "ix_chat_sessions_claimable" in plan


def test_claim_one_skips_claimed_and_classified_unless_forced(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "hi")])
        first = repo.claim_one(conn, sid, stale_secs=600)
        assert first is not None
        assert repo.claim_one(conn, sid, stale_secs=600) is None
        forced = repo.claim_one(conn, sid, stale_secs=600, force=True)
        assert forced is not None and forced.token != first.token
        # the first token is dead: it cannot start an attempt any more
        assert repo.begin_attempt(conn, sid, first.token) is None
        assert repo.begin_attempt(conn, sid, forced.token) is not None
        assert repo.claim_one(conn, uuid.uuid4(), stale_secs=600) is None
