"""A turn committed while a session is being classified is never skipped (issue 16, holes 1-2).

Two connections, explicit ordering: the product's transaction is held open with the turn
written, the worker's statement is started, and the test waits until PostgreSQL reports the
worker (or the second writer) waiting on the session row's lock before letting the first
transaction commit.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Connection, Engine, text

from eros.memory.core.claims import MemoryRow, Outcome
from eros.memory.db import repo
from testkit.data import add_session, ago
from tests.support.classify import claim_and_begin, finish

VEC = [1.0] + [0.0] * 511
TURN = text("INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
            " VALUES (:sid, 'user', :content, COALESCE(:sent_at, now()))")


def _pid(conn: Connection) -> int:
    return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _wait_until(engine: Engine, pid: int, done: threading.Event) -> str:
    """Until backend ``pid`` waits on a lock ("waiting") or its work is over ("done")."""
    deadline = time.monotonic() + 30
    with engine.connect() as watch:
        while time.monotonic() < deadline:
            if done.is_set():
                return "done"
            state = watch.execute(text("SELECT wait_event_type FROM pg_stat_activity"
                                       " WHERE pid = :p"), {"p": pid}).scalar()
            if state == "Lock":
                return "waiting"
            watch.rollback()
            time.sleep(0.005)
    raise AssertionError(f"backend {pid} neither waited on a lock nor finished")


def _in_thread(engine: Engine, work: Callable[[Connection], object]
               ) -> tuple[threading.Thread, threading.Event, list[object], int]:
    """Run ``work`` in its own transaction on its own connection; returns its backend pid."""
    conn = engine.connect()
    pid = _pid(conn)
    conn.rollback()
    done = threading.Event()
    out: list[object] = []

    def run() -> None:
        try:
            with conn.begin():
                out.append(work(conn))
        except BaseException as err:  # surfaced by the caller
            out.append(err)
        finally:
            conn.close()
            done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done, out, pid


def _session(engine: Engine, sid: uuid.UUID):  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return conn.execute(text("SELECT * FROM engine.chat_sessions WHERE id = :i"),
                            {"i": sid}).one()


def test_a_turn_committed_while_finish_waits_leaves_the_session_open(engine: Engine) -> None:
    """Hole 1: FINISH waits for the turn's row lock and must see the turn once it has."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one"), ("user", "two")])
    attempt = claim_and_begin(engine, sid)
    with engine.connect() as conn:
        turns, through = repo.read_new_turns(conn, sid, after_seq=attempt.through_seq)
    assert len(turns) == 2

    product = engine.connect()
    product.begin()
    product.execute(TURN, {"sid": sid, "content": "three", "sent_at": None})  # held open

    def stamp(conn: Connection) -> object:
        return finish(conn, attempt, Outcome("memories"), through_seq=through,
                           memories=[MemoryRow("likes tea", "preference", 0.5, {}, VEC)])

    thread, done, out, pid = _in_thread(engine, stamp)
    assert _wait_until(engine, pid, done) == "waiting"  # FINISH is behind the turn's lock
    product.commit()
    product.close()
    thread.join(30)
    assert out == [1]

    session = _session(engine, sid)
    assert session.classified_at is None, "stamped through a turn it never read"
    assert session.classified_through_seq == through
    with engine.connect() as conn:
        rest, _ = repo.read_new_turns(conn, sid, after_seq=session.classified_through_seq)
    assert [t.content for t in rest] == ["three"]


def test_turns_committing_out_of_order_never_fall_below_the_watermark(engine: Engine) -> None:
    """Hole 2: a turn written first (with a past sent_at) and committed after a later turn."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one")], idle_for=timedelta(seconds=0))
    attempt = claim_and_begin(engine, sid)

    first = engine.connect()
    first.begin()
    first.execute(TURN, {"sid": sid, "content": "late", "sent_at": ago(minutes=5)})

    second_thread, second_done, second_out, second_pid = _in_thread(
        engine, lambda c: c.execute(TURN, {"sid": sid, "content": "second", "sent_at": None}))
    _wait_until(engine, second_pid, second_done)  # committed (old code) or queued (fixed)

    with engine.connect() as conn:  # the worker reads between the two commits
        turns, through = repo.read_new_turns(conn, sid, after_seq=attempt.through_seq)
    read = {t.content for t in turns}
    first.commit()
    first.close()
    second_thread.join(30)
    assert not any(isinstance(o, BaseException) for o in second_out)

    with engine.begin() as conn:
        assert finish(conn, attempt, Outcome("no_memories"), through_seq=through) == 0
    session = _session(engine, sid)
    with engine.connect() as conn:
        below = conn.execute(text(
            "SELECT content FROM engine.chat_messages WHERE session_id = :i AND seq <= :w"),
            {"i": sid, "w": session.classified_through_seq}).scalars().all()
    assert set(below) <= read, f"watermark passed turns never read: {set(below) - read}"
    assert session.classified_at is None  # "late" and "second" are still to be read


def test_memory_count_is_rows_written_not_candidates(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "one")])
    rows = [MemoryRow("likes tea", "preference", 0.5, {}, VEC),
            MemoryRow("Likes tea.", "preference", 0.5, {}, VEC)]  # same dedup key
    attempt = claim_and_begin(engine, sid)
    with engine.begin() as conn:
        through = repo.read_new_turns(conn, sid, after_seq=0)[1]
        assert finish(conn, attempt, Outcome("memories"), through_seq=through,
                           memories=rows) == 1
    assert _session(engine, sid).memory_count == 1


def test_the_trigger_keeps_last_seq_at_the_newest_turn(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a"), ("assistant", "b"), ("user", "c")])
        seqs = conn.execute(text("SELECT seq FROM engine.chat_messages WHERE session_id = :i"),
                            {"i": sid}).scalars().all()
    assert _session(engine, sid).last_seq == max(seqs)
