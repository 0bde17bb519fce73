"""The one-statement attempt (issue 34) against writers that hold the session row's lock.

The attempt's statement takes its snapshot before it waits for the row lock, so what a writer
commits meanwhile is not in its snapshot: a turn must then stay above the watermark (and the
session open), and a tombstone must still apply — it is read from the locked row. Ordering as
in test_turn_races: the writer's transaction is held open, the attempt is started, and the
test waits until PostgreSQL reports the attempt waiting on a lock before committing.
"""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import Connection, Engine, text

from eros.memory.core.claims import Attempt, Outcome
from eros.memory.db import repo
from testkit.data import add_session
from tests.integration.test_turn_races import TURN, _pid, _session, _wait_until
from tests.support.classify import finish


def _claim(engine: Engine, sid: uuid.UUID) -> uuid.UUID:
    with engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    return claim.token


def _attempt_in_thread(engine: Engine, sid: uuid.UUID, token: uuid.UUID
                       ) -> tuple[threading.Thread, threading.Event, list[Attempt | None], int]:
    """``begin_attempt(read_turns=True)`` on an AUTOCOMMIT connection, as start_attempt runs it."""
    conn = engine.connect()
    pid = _pid(conn)
    conn.rollback()
    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
    done = threading.Event()
    out: list[Attempt | None] = []

    def run() -> None:
        try:
            out.append(repo.begin_attempt(conn, sid, token, read_turns=True))
        finally:
            conn.close()
            done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done, out, pid


def _held(engine: Engine, statement: str, params: dict[str, object]) -> Connection:
    conn = engine.connect()
    conn.begin()
    conn.execute(text(statement), params)
    return conn


def test_a_turn_committed_while_the_attempt_waits_stays_above_the_watermark(
        engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one"), ("user", "two")])
    token = _claim(engine, sid)
    product = engine.connect()
    product.begin()
    product.execute(TURN, {"sid": sid, "content": "three", "sent_at": None})  # row lock held

    thread, done, out, pid = _attempt_in_thread(engine, sid, token)
    assert _wait_until(engine, pid, done) == "waiting"
    product.commit()
    product.close()
    thread.join(30)
    attempt = out[0]
    assert attempt is not None and attempt.turns is not None
    turns, through = attempt.turns
    assert [t.content for t in turns] == ["one", "two"]
    assert through == max(t.seq for t in turns), "the watermark covers a turn it never read"

    with engine.begin() as conn:
        assert finish(conn, attempt, Outcome("no_memories"), through_seq=through) == 0
    session = _session(engine, sid)
    assert session.classified_at is None  # "three" is still to be read
    with engine.connect() as conn:
        rest, _ = repo.read_new_turns(conn, sid, after_seq=session.classified_through_seq)
    assert [t.content for t in rest] == ["three"]


def test_a_tombstone_committed_while_the_attempt_waits_is_applied(engine: Engine) -> None:
    """Issue 26's guarantee through the single statement: the turn is still in the attempt's
    snapshot, but the tombstone comes from the row the attempt locked."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "keep"), ("user", "erase me")])
        erased = conn.execute(text("SELECT seq FROM engine.chat_messages WHERE session_id = :i"
                                   " AND content = 'erase me'"), {"i": sid}).scalar_one()
    token = _claim(engine, sid)
    forget = _held(engine, "UPDATE engine.chat_sessions SET erased_seqs = ARRAY[:seq]::bigint[]"
                           " WHERE id = :i", {"seq": erased, "i": sid})

    thread, done, out, pid = _attempt_in_thread(engine, sid, token)
    assert _wait_until(engine, pid, done) == "waiting"
    forget.commit()
    forget.close()
    thread.join(30)
    attempt = out[0]
    assert attempt is not None and attempt.turns is not None
    assert [t.content for t in attempt.turns[0]] == ["keep"]


def test_a_claim_fenced_while_the_attempt_waits_starts_nothing(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one")])
    token = _claim(engine, sid)
    fence = _held(engine, "UPDATE engine.chat_sessions SET claim_token = NULL WHERE id = :i",
                  {"i": sid})

    thread, done, out, pid = _attempt_in_thread(engine, sid, token)
    assert _wait_until(engine, pid, done) == "waiting"
    fence.commit()
    fence.close()
    thread.join(30)
    assert out == [None]
    assert _session(engine, sid).attempts == 0


def test_an_attempt_without_new_turns_keeps_the_watermark(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one")])
        conn.execute(text("UPDATE engine.chat_sessions SET classified_through_seq = last_seq"
                          " WHERE id = :i"), {"i": sid})
        last = conn.execute(text("SELECT last_seq FROM engine.chat_sessions WHERE id = :i"),
                            {"i": sid}).scalar_one()
    token = _claim(engine, sid)
    with engine.connect() as conn:
        attempt = repo.begin_attempt(conn, sid, token, read_turns=True)
        conn.commit()
    assert attempt is not None and attempt.turns == ((), last)
    assert (attempt.attempt, attempt.through_seq) == (1, last)
