"""Migration 0029 (turn cells and centred sketches) on a database with turns: the turns of a
user clustered already are placed in their nearest cell, every sketch is kept (no centre yet),
the trigger sketches and places what is written after, and the downgrade gives back the
generated sketch."""

from __future__ import annotations

import uuid

from alembic import command
from sqlalchemy import create_engine, text

from testkit.services import TemplateDatabases, alembic_config

BEFORE, THIS = "0028", "0029"


def _vec(i: int) -> str:
    v = [0.0] * 512
    v[i] = 1.0
    v[i + 1] = 0.5
    return str(v)


def test_0029_places_existing_turns_keeps_sketches_and_downgrades(
        templates: TemplateDatabases) -> None:
    url = templates.empty()
    config = alembic_config(url)
    command.upgrade(config, BEFORE)
    engine = create_engine(url)
    clustered, plain, sid = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        for cell, axis in ((0, 0), (1, 10)):
            conn.execute(text("INSERT INTO engine.memory_cells (user_id, cell, centroid, size)"
                              " VALUES (:u, :c, CAST(:v AS vector), 1)"),
                         {"u": clustered, "c": cell, "v": _vec(axis)})
        for user in (clustered, plain):
            s = uuid.uuid4() if user == plain else sid
            conn.execute(text("INSERT INTO engine.chat_sessions (id, user_id, last_active_at)"
                              " VALUES (:s, :u, now())"), {"s": s, "u": user})
            conn.execute(text(
                "INSERT INTO engine.chat_messages (session_id, role, content)"
                " SELECT :s, 'user', 't' || g FROM generate_series(1, 2) g"), {"s": s})
            conn.execute(text(
                "INSERT INTO engine.memory_turns (seq, session_id, user_id, said_at, embedding,"
                " embedding_model) SELECT m.seq, m.session_id, :u, now(),"
                " CAST(CASE WHEN m.content = 't1' THEN :a ELSE :b END AS halfvec), 'm1'"
                " FROM engine.chat_messages m WHERE m.session_id = :s"),
                {"s": s, "u": user, "a": _vec(0), "b": _vec(10)})
    command.upgrade(config, THIS)
    same = ("SELECT bool_and(embedding_bq = CAST(binary_quantize(embedding) AS bit(512)))"
            " FROM engine.memory_turns")
    with engine.begin() as conn:
        placed = conn.execute(text(
            "SELECT t.user_id, m.content, t.cell FROM engine.memory_turns t"
            " JOIN engine.chat_messages m ON m.seq = t.seq ORDER BY t.seq")).all()
        assert [(r.user_id, r.content, r.cell) for r in placed] == [
            (clustered, "t1", 0), (clustered, "t2", 1), (plain, "t1", -1), (plain, "t2", -1)]
        assert conn.execute(text(same)).scalar_one()
        conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                          " VALUES (:s, 'user', 't3')"), {"s": sid})
        conn.execute(text(
            "INSERT INTO engine.memory_turns (seq, session_id, user_id, said_at, embedding,"
            " embedding_model) SELECT max(seq), :s, :u, now(), CAST(:b AS halfvec), 'm1'"
            " FROM engine.chat_messages"), {"s": sid, "u": clustered, "b": _vec(10)})
        assert conn.execute(text("SELECT cell FROM engine.memory_turns ORDER BY seq DESC"
                                 " LIMIT 1")).scalar_one() == 1
        assert conn.execute(text(same)).scalar_one()
    command.downgrade(config, BEFORE)
    with engine.connect() as conn:
        assert conn.execute(text(same)).scalar_one()
        generated = conn.execute(text(
            "SELECT attgenerated FROM pg_attribute WHERE attrelid ="
            " 'engine.memory_turns'::regclass AND attname = 'embedding_bq'")).scalar_one()
        assert generated == "s"
        assert conn.execute(text("SELECT count(*) FROM pg_trigger WHERE tgrelid ="
                                 " 'engine.memory_turns'::regclass AND NOT tgisinternal"
                                 )).scalar_one() == 0
    command.upgrade(config, "head")
    engine.dispose()
    templates.drop(url)
