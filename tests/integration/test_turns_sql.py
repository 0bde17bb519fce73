"""The turns recall layer's table and SQL (issue 31, 0025): an idempotent upsert, the nearest
current turns of one user and persona with their text read from ``chat_messages``, labels and
statuses honoured, and a deleted message taking its vector with it. Real PostgreSQL."""

from __future__ import annotations

import math
import uuid
from typing import Any

from sqlalchemy import Engine, text

from eros.db.schema import EMBEDDING_DIM
from eros.recall.db import turns_sql
from eros.recall.db.turns_sql import TurnRow
from testkit.data import add_session


def _axis(i: int, tilt: float = 0.0) -> list[float]:
    """A unit vector near axis ``i`` (``tilt`` moves it toward axis ``i + 1``)."""
    v = [0.0] * EMBEDDING_DIM
    v[i] = math.cos(tilt)
    v[i + 1] = math.sin(tilt)
    return v


def _user_turns(engine: Engine, sid: uuid.UUID) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(text(
            "SELECT m.seq, m.sent_at, s.user_id, s.instance_id FROM engine.chat_messages m"
            " JOIN engine.chat_sessions s ON s.id = m.session_id"
            " WHERE m.session_id = :s AND m.role = 'user' ORDER BY m.seq"), {"s": sid}).all()


def _rows(engine: Engine, sid: uuid.UUID, vectors: list[list[float]], **kw: Any) -> list[TurnRow]:
    return [TurnRow(seq=r.seq, session_id=sid, user_id=r.user_id, instance_id=r.instance_id,
                    said_at=r.sent_at, embedding=v, embedding_model="m1", **kw)
            for r, v in zip(_user_turns(engine, sid), vectors, strict=True)]


def test_write_is_idempotent_and_nearest_reads_the_products_text(engine: Engine) -> None:
    user, persona, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I adopted a cat named Miso"), ("assistant", "Lovely!"),
                                 ("user", "Work has been stressful"), ("user", "I run on Sundays")],
                          user_id=user, instance_id=persona)
        other_sid = add_session(conn, [("user", "a turn said to another persona")],
                                user_id=user, instance_id=other)
    rows = _rows(engine, sid, [_axis(0), _axis(2), _axis(4)])
    with engine.begin() as conn:
        assert turns_sql.write_turns(conn, rows) == 3
        assert turns_sql.write_turns(conn, rows) == 3  # a re-run replaces, never duplicates
        turns_sql.write_turns(conn, _rows(engine, other_sid, [_axis(0)]))
        assert turns_sql.count_turns(conn, user) == 4
    with engine.connect() as conn:
        got = turns_sql.nearest_turns(conn, user, persona, _axis(2, 0.1), 2, True)
        stored = conn.execute(text(
            "SELECT pg_typeof(embedding)::text AS typ, said_at, embedding_bq IS NOT NULL AS bq"
            " FROM engine.memory_turns WHERE seq = :s"), {"s": rows[1].seq}).one()
    # the two others are orthogonal to the query: a tie, broken by seq
    assert [t.content for t in got] == ["Work has been stressful", "I adopted a cat named Miso"]
    assert got[0].seq == rows[1].seq and got[0].session_id == sid
    assert got[0].said_at == rows[1].said_at and got[0].distance < got[1].distance
    assert abs(got[0].distance - (1 - math.cos(0.1))) < 1e-3  # half precision, exact rerank
    assert (stored.typ, stored.bq) == ("halfvec", True)
    # the other persona's turn, identical to the query's nearest, is never in this scope
    assert all(t.session_id == sid for t in
               turns_sql.nearest_turns(engine.connect(), user, persona, _axis(0), 10, True))


def test_labels_statuses_and_the_products_delete(engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "plain"), ("user", "labelled"), ("user", "rejected"),
                                 ("user", "unscreened")], user_id=user)
    rows = _rows(engine, sid, [_axis(0, 0.01 * i) for i in range(4)])
    rows[1] = TurnRow(**{**rows[1].__dict__, "sensitivity": "health"})
    rows[2] = TurnRow(**{**rows[2].__dict__, "status": "quarantined"})
    rows[3] = TurnRow(**{**rows[3].__dict__, "status": "unscreened"})
    with engine.begin() as conn:
        turns_sql.write_turns(conn, rows)
    with engine.connect() as conn:
        everything = turns_sql.nearest_turns(conn, user, None, _axis(0), 10, True)
        plain = turns_sql.nearest_turns(conn, user, None, _axis(0), 10, False)
    assert [(t.content, t.sensitivity) for t in everything] == [("plain", None),
                                                                ("labelled", "health")]
    assert [t.content for t in plain] == ["plain"]
    with engine.begin() as conn:  # the product deletes a message: its vector goes with it
        conn.execute(text("DELETE FROM engine.chat_messages WHERE seq = :s"), {"s": rows[0].seq})
        assert turns_sql.count_turns(conn, user) == 3
        # a write naming a message deleted meanwhile skips it instead of failing
        assert turns_sql.write_turns(conn, rows) == 3


def test_erasure_helpers(engine: Engine) -> None:
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        a = add_session(conn, [("user", "a1"), ("user", "a2")], user_id=user)
        b = add_session(conn, [("user", "b1"), ("user", "b2")], user_id=user, instance_id=persona)
    ra = _rows(engine, a, [_axis(0), _axis(1)])
    rb = _rows(engine, b, [_axis(0), _axis(1)], sensitivity="beliefs")
    with engine.begin() as conn:
        turns_sql.write_turns(conn, ra + rb)
        assert turns_sql.delete_turns_for_seqs(conn, [ra[0].seq]) == 1
        assert turns_sql.delete_turns_labelled(conn, user, "health") == 0
        assert turns_sql.delete_turns_labelled(conn, user, "beliefs") == 2
        turns_sql.write_turns(conn, rb)
        assert turns_sql.delete_turns_for_user(conn, user, instance_id=persona) == 2
        assert turns_sql.delete_turns_for_session(conn, a) == 1
        turns_sql.write_turns(conn, ra + rb)
        assert turns_sql.delete_turns_for_user(conn, user) == 4
        assert turns_sql.count_turns(conn) == 0


def test_model_filter_and_voice_turns(engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "old model"), ("user", "new model")], user_id=user)
        conn.execute(text("UPDATE engine.chat_messages SET channel = 'voice',"
                          " content = '[laughs] new model' WHERE session_id = :s"
                          " AND content = 'new model'"), {"s": sid})
    rows = _rows(engine, sid, [_axis(0), _axis(0, 0.2)])
    rows[1] = TurnRow(**{**rows[1].__dict__, "embedding_model": "m2"})
    with engine.begin() as conn:
        turns_sql.write_turns(conn, rows)
    with engine.connect() as conn:
        got = turns_sql.nearest_turns(conn, user, None, _axis(0), 5, False, embedding_model="m2")
    assert [(t.content, t.channel) for t in got] == [("new model", "voice")]
