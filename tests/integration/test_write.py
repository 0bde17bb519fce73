"""The all-or-nothing write, idempotency, resumed sessions, ordering and session deletion."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from eros.memory.core.claims import MemoryRow, Outcome
from eros.memory.db import repo
from testkit.data import add_messages, add_session, ago
from tests.support.classify import claim_and_begin, finish

VEC = [1.0] + [0.0] * 511


def _row(content: str, importance: float | None = 0.5) -> MemoryRow:
    return MemoryRow(content, "fact", importance, {"k": "v"}, VEC)


def _last(engine: Engine, sid) -> int:  # type: ignore[no-untyped-def]
    """The watermark covering every turn so far (seqs are global, with gaps)."""
    with engine.connect() as conn:
        return repo.read_new_turns(conn, sid, after_seq=0)[1]


def _state(engine: Engine, sid):  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        session = conn.execute(text("SELECT * FROM engine.chat_sessions WHERE id = :i"),
                               {"i": sid}).one()
        count = conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                  " WHERE session_id = :i"), {"i": sid}).scalar_one()
    return session, count


def test_failure_mid_write_leaves_nothing(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a"), ("user", "b")])
    attempt = claim_and_begin(engine, sid)
    bad = [_row("ok one"), MemoryRow("bad", "fact", 0.5, {}, [1.0] * 3)]  # wrong vector size
    with pytest.raises(Exception), engine.begin() as conn:  # noqa: B017 - DB error class varies
        finish(conn, attempt, Outcome("memories"), through_seq=_last(engine, sid),
                    memories=bad)
    session, count = _state(engine, sid)
    assert session.classified_at is None and count == 0
    assert session.claim_token == attempt.claim.token  # still ours, can be retried
    with engine.begin() as conn:
        written = finish(conn, attempt, Outcome("memories"), through_seq=_last(engine, sid),
                              memories=[_row("ok one")])
    assert written == 1
    session, count = _state(engine, sid)
    assert session.classified_at is not None and count == 1 and session.claim_token is None


def test_a_check_constraint_violation_rolls_back_the_stamp(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a")])
    attempt = claim_and_begin(engine, sid)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        finish(conn, attempt, Outcome("memories"), through_seq=_last(engine, sid),
                    memories=[_row("fine"), _row("too important", importance=7.0)])
    session, count = _state(engine, sid)
    assert (session.classified_at, count) == (None, 0)


def test_duplicate_or_stale_writer_writes_nothing(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a")])
    first = claim_and_begin(engine, sid)
    with engine.begin() as conn:
        # another worker took the session over (force), so `first` is stale
        taker = repo.claim_one(conn, sid, stale_secs=600, force=True)
        assert taker is not None
        assert finish(conn, first, Outcome("memories"), through_seq=_last(engine, sid),
                           memories=[_row("x")]) is None
    _, count = _state(engine, sid)
    assert count == 0
    with engine.begin() as conn:
        second = repo.begin_attempt(conn, sid, taker.token)
        assert second is not None
        assert finish(conn, second, Outcome("memories"), through_seq=_last(engine, sid),
                           memories=[_row("x")]) == 1
        # a redelivery of the same task: its token was cleared by the stamp
        assert finish(conn, second, Outcome("memories"), through_seq=_last(engine, sid),
                           memories=[_row("x")]) is None
    with engine.begin() as conn:  # and even a forced re-run of the same extraction adds nothing
        again = repo.claim_one(conn, sid, stale_secs=600, force=True)
        assert again is not None
        third = repo.begin_attempt(conn, sid, again.token)
        assert third is not None
        assert finish(conn, third, Outcome("memories"), through_seq=_last(engine, sid),
                           memories=[_row("X.")]) == 0
    _, count = _state(engine, sid)
    assert count == 1


def test_resumed_session_becomes_eligible_and_only_new_turns_are_read(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "old one"), ("assistant", "ok"), ("user", "old two")])
    attempt = claim_and_begin(engine, sid)
    with engine.begin() as conn:
        through = max(t.seq for t in repo.load_turns(conn, sid, after_seq=0))
        finish(conn, attempt, Outcome("no_memories"), through_seq=through)
        assert repo.claim_idle(conn, idle_secs=1800, stale_secs=600, batch=10) == []
        add_messages(conn, sid, [("user", "new turn")], last=ago(hours=1))
    session, _ = _state(engine, sid)
    assert session.classified_at is None and session.classified_through_seq == through
    with engine.begin() as conn:
        claims = repo.claim_idle(conn, idle_secs=1800, stale_secs=600, batch=10)
        assert [c.session_id for c in claims] == [sid]
        again = repo.begin_attempt(conn, sid, claims[0].token)
        assert again is not None
        turns = repo.load_turns(conn, sid, after_seq=again.through_seq)
    assert [t.content for t in turns] == ["new turn"]


def test_turns_arriving_during_classification_keep_the_session_open(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "first")])
    attempt = claim_and_begin(engine, sid)
    with engine.begin() as conn:
        through = max(t.seq for t in repo.load_turns(conn, sid, after_seq=0))
        add_messages(conn, sid, [("user", "late")], last=ago(hours=1))
        finish(conn, attempt, Outcome("no_memories"), through_seq=through)
    session, _ = _state(engine, sid)
    assert session.classified_at is None and session.outcome == "no_memories"


def test_turns_sharing_a_timestamp_keep_insertion_order(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn)
        conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content, sent_at)"
                          " SELECT :s, 'user', 'turn ' || g, now() - interval '2 hours'"
                          " FROM generate_series(1, 50) g ORDER BY g"), {"s": sid})
        turns = repo.load_turns(conn, sid, after_seq=0)
    assert [t.content for t in turns] == [f"turn {i}" for i in range(1, 51)]


def test_deleting_a_session_keeps_its_profile_memories(engine: Engine) -> None:
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a")])
    attempt = claim_and_begin(engine, sid)
    with engine.begin() as conn:
        finish(conn, attempt, Outcome("memories"), through_seq=_last(engine, sid),
                    memories=[_row("keep me")])
        conn.execute(text("DELETE FROM engine.chat_sessions WHERE id = :i"), {"i": sid})
        rows = conn.execute(text("SELECT content, session_id, user_id"
                                 " FROM engine.companion_memories")).all()
    assert [(r.content, r.session_id) for r in rows] == [("keep me", None)]
    assert rows[0].user_id == attempt.claim.user_id
