"""Issue 16, hole 5: statements, lock waits and idle transactions are bounded per use."""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from eros.db.engine import get_engine, make_engine
from eros.memory.core.claims import Outcome
from eros.memory.db import repo
from eros.recall.services.recall import recall_by_vector
from eros.settings import load_settings
from eros.tasks.base import is_database_transient
from testkit.data import add_session
from tests.support.classify import finish


def _sqlstate(err: DBAPIError) -> str | None:
    return getattr(err.orig, "sqlstate", None)


def test_worker_connections_carry_the_configured_timeouts(db_url: str) -> None:
    settings = load_settings(database_url=db_url, database_statement_timeout_ms=300,
                             database_lock_timeout_ms=150,
                             database_idle_in_transaction_timeout_ms=4000)
    engine = get_engine(settings)
    with engine.connect() as conn:
        shown = [conn.execute(text(f"SHOW {name}")).scalar_one() for name in
                 ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")]
        conn.rollback()
        with pytest.raises(DBAPIError) as info:
            conn.execute(text("SELECT pg_sleep(30)"))
    assert shown == ["300ms", "150ms", "4s"]
    assert _sqlstate(info.value) == "57014"  # query_canceled: recorded, not retried
    assert not is_database_transient(info.value)
    engine.dispose()


def test_finish_behind_a_held_turn_gives_up_at_the_lock_timeout(engine: Engine,
                                                                 db_url: str) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "hi")])
        claim = repo.claim_one(conn, sid, stale_secs=600)
        assert claim is not None
        attempt = repo.begin_attempt(conn, sid, claim.token)
        assert attempt is not None
    bounded = get_engine(load_settings(database_url=db_url, database_lock_timeout_ms=200))
    with engine.connect() as product:
        product.begin()
        product.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                             " VALUES (:s, 'user', 'typing')"), {"s": sid})  # row lock held
        with pytest.raises(DBAPIError) as info, bounded.begin() as conn:
            finish(conn, attempt, Outcome("empty"), through_seq=attempt.through_seq)
        product.rollback()
    assert _sqlstate(info.value) == "55P03"
    assert is_database_transient(info.value)  # retried with backoff, the claim kept
    bounded.dispose()


def test_recall_is_bounded_by_its_own_statement_timeout(db_url: str) -> None:
    engine = make_engine(db_url)  # no connection-level limits: recall's own applies
    settings = load_settings(database_url=db_url, recall_statement_timeout_ms=200,
                             database_lock_timeout_ms=0)
    released = threading.Event()
    ddl = engine.connect()
    ddl.begin()
    ddl.execute(text("LOCK TABLE engine.companion_memories IN ACCESS EXCLUSIVE MODE"))
    pid = ddl.execute(text("SELECT pg_backend_pid()")).scalar_one()

    def release() -> None:  # without a bound recall would wait for the lock forever
        released.set()
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})

    timer = threading.Timer(20, release)
    timer.start()
    try:
        with pytest.raises(DBAPIError) as info:
            recall_by_vector(engine, uuid.uuid4(), [1.0] + [0.0] * 511, settings=settings)
    finally:
        timer.cancel()
        ddl.invalidate()
        ddl.close()
    assert _sqlstate(info.value) == "57014"
    assert not released.is_set()
    engine.dispose()
