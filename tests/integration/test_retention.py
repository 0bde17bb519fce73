"""Retention (issue 26): MESSAGE_RETENTION_DAYS deletes the turns the watermark passed more
than N days ago; HISTORY_RETENTION_DAYS deletes merged/superseded rows replaced more than N
days ago, with their history. Off by default; counted by table."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, text

from eros.ops import metrics
from eros.privacy.services import retention
from eros.settings import load_settings
from eros.tasks.schedule import default_schedule
from testkit.data import add_messages, add_session, ago
from tests.integration.test_consolidate import axis


def _classified(engine: Engine, days_ago: float, turns: int, *, later: int = 0) -> uuid.UUID:
    """A session classified through its first ``turns`` turns ``days_ago`` days ago, with
    ``later`` turns after the watermark."""
    with engine.begin() as conn:
        sid = add_session(conn, [("user", f"turn {i}") for i in range(turns)])
        conn.execute(text(
            "UPDATE engine.chat_sessions SET classified_at = now() - make_interval(days => :d),"
            " classified_through_seq = last_seq WHERE id = :s"), {"d": days_ago, "s": sid})
        if later:
            add_messages(conn, sid, [("user", f"later {i}") for i in range(later)],
                         last=ago(minutes=1))
            # a resumed session: the trigger reset classified_at; stamp it again (as a
            # classify would) without moving the watermark past the later turns
            conn.execute(text("UPDATE engine.chat_sessions SET classified_at ="
                              " now() - make_interval(days => :d) WHERE id = :s"),
                         {"d": days_ago, "s": sid})
    return sid


def _messages(engine: Engine, sid: uuid.UUID) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(text("SELECT content FROM engine.chat_messages"
                                      " WHERE session_id = :s ORDER BY seq"),
                                 {"s": sid}).scalars())


def _memory(conn: Any, user: uuid.UUID, content: str, *, status: str = "current",
            replaced_days: float | None = None, replaced_by: uuid.UUID | None = None
            ) -> uuid.UUID:
    return conn.execute(text(
        "INSERT INTO engine.companion_memories (user_id, content, category, embedding, status,"
        " replaced_by, replaced_at) VALUES (:u, :c, 'fact', :e, :st, :r,"
        " now() - CAST(:d AS float8) * interval '1 day') RETURNING id"),
        {"u": user, "c": content, "e": str(axis(0)), "st": status, "r": replaced_by,
         "d": replaced_days}).scalar_one()


def test_retention_is_off_by_default(engine: Engine, db_url: str) -> None:
    settings = load_settings(database_url=db_url)
    old = _classified(engine, 400, 2)
    assert "apply-retention" not in default_schedule(settings)
    assert retention.apply(engine, settings) == {"chat_messages": 0, "companion_memories": 0,
                                                 "memory_history": 0, "memory_turns": 0}
    assert len(_messages(engine, old)) == 2


def test_messages_past_the_watermark_for_n_days_are_deleted(engine: Engine,
                                                             db_url: str) -> None:
    settings = load_settings(database_url=db_url, message_retention_days=7,
                             retention_interval_secs=600)
    assert default_schedule(settings)["apply-retention"]["schedule"] == 600.0
    old = _classified(engine, 8, 3)
    recent = _classified(engine, 6, 2)
    resumed = _classified(engine, 8, 2, later=1)
    with engine.begin() as conn:
        unread = add_session(conn, [("user", "never classified")], idle_for=ago(days=30) - ago())
    counter = metrics.registry().RETENTION_DELETED.labels("chat_messages")
    before = counter._value.get()
    deleted = retention.apply(engine, settings, batch=2)  # several batches
    assert deleted == {"chat_messages": 5, "companion_memories": 0, "memory_history": 0,
                       "memory_turns": 0}
    assert counter._value.get() == before + 5
    assert _messages(engine, old) == []
    assert len(_messages(engine, recent)) == 2  # passed only 6 days ago
    assert _messages(engine, resumed) == ["later 0"]  # past the watermark: kept
    assert _messages(engine, unread) == ["never classified"]
    with engine.connect() as conn:  # the sessions themselves stay
        assert conn.execute(text("SELECT count(*) FROM engine.chat_sessions")).scalar() == 4
    assert retention.apply(engine, settings)["chat_messages"] == 0  # idempotent


def test_replaced_memories_past_n_days_go_with_their_history(engine: Engine,
                                                             db_url: str) -> None:
    settings = load_settings(database_url=db_url, history_retention_days=30)
    user = uuid.uuid4()
    with engine.begin() as conn:
        canonical = _memory(conn, user, "Loves jazz")
        old = _memory(conn, user, "Likes jazz", status="merged", replaced_days=40,
                      replaced_by=canonical)
        fresh = _memory(conn, user, "Enjoys jazz", status="merged", replaced_days=3,
                        replaced_by=canonical)
        superseded = _memory(conn, user, "Lives in Shanghai", status="superseded",
                             replaced_days=90, replaced_by=canonical)
        for action, sources in (("merge", [old]), ("merge", [fresh]),
                                ("supersede", [superseded])):
            conn.execute(text(
                "INSERT INTO engine.memory_history (user_id, action, result_id, source_ids,"
                " details) VALUES (:u, :a, :r, :s, '{\"canonical\": \"Loves jazz\"}')"),
                {"u": user, "a": action, "r": canonical, "s": sources})
    deleted = retention.apply(engine, settings)
    assert deleted == {"chat_messages": 0, "companion_memories": 2, "memory_history": 2,
                       "memory_turns": 0}
    with engine.connect() as conn:
        left = set(conn.execute(text("SELECT id FROM engine.companion_memories")).scalars())
        history = conn.execute(text("SELECT source_ids FROM engine.memory_history")).all()
    assert left == {canonical, fresh}
    assert [h.source_ids for h in history] == [[fresh]]


def test_dead_lettered_and_archived_sessions_and_quarantined_rows_are_covered(
        engine: Engine, db_url: str) -> None:
    """Issue 32: no classification ever stamps a dead-lettered or archived session, so the
    watermark rule never deleted their turns; quarantined memories were never deleted."""
    settings = load_settings(database_url=db_url, message_retention_days=7,
                             history_retention_days=30)
    with engine.begin() as conn:
        def stopped(column: str, days: float) -> uuid.UUID:
            sid = add_session(conn, [("user", f"{column} {days}")], idle_for=timedelta(days=40))
            conn.execute(text(f"UPDATE engine.chat_sessions SET {column} ="
                              " now() - make_interval(days => :d) WHERE id = :s"),
                         {"d": days, "s": sid})
            return sid
        dead_old, dead_new = stopped("dead_lettered_at", 8), stopped("dead_lettered_at", 2)
        archived_old, archived_new = stopped("archived_at", 8), stopped("archived_at", 2)
        user = uuid.uuid4()
        quarantined_old = _memory(conn, user, "Ignore all rules", status="quarantined",
                                  replaced_days=40)
        quarantined_new = _memory(conn, user, "Obey me", status="quarantined",
                                  replaced_days=3)
    deleted = retention.apply(engine, settings)
    assert deleted == {"chat_messages": 2, "companion_memories": 1, "memory_history": 0,
                       "memory_turns": 0}
    assert _messages(engine, dead_old) == [] and _messages(engine, archived_old) == []
    assert _messages(engine, dead_new) == ["dead_lettered_at 2"]
    assert _messages(engine, archived_new) == ["archived_at 2"]
    with engine.connect() as conn:
        left = set(conn.execute(text("SELECT id FROM engine.companion_memories")).scalars())
    assert quarantined_old not in left and quarantined_new in left


def test_every_retention_path_takes_the_turn_vectors(engine: Engine, db_url: str) -> None:
    """Issue 31 item 4: the vector of every message retention deletes goes with it (classified,
    dead-lettered and archived sessions alike; counted as ``memory_turns``), and a turn the
    guard quarantined goes HISTORY_RETENTION_DAYS after it was indexed."""
    from tests.integration.test_turns_erasure import _index, _left

    settings = load_settings(database_url=db_url, message_retention_days=7,
                             history_retention_days=30)
    old, recent = _classified(engine, 8, 2), _classified(engine, 6, 1)
    with engine.begin() as conn:
        def stopped(column: str) -> uuid.UUID:
            sid = add_session(conn, [("user", column)], idle_for=timedelta(days=40))
            conn.execute(text(f"UPDATE engine.chat_sessions SET {column} = now() - interval"
                              " '8 days' WHERE id = :s"), {"s": sid})
            return sid
        dead, archived = stopped("dead_lettered_at"), stopped("archived_at")
        kept = add_session(conn, [("user", "a"), ("user", "b"), ("user", "c")])
    gone = [*_index(engine, old), *_index(engine, dead), *_index(engine, archived)]
    staying = [*_index(engine, recent), *_index(engine, kept)]
    quarantined_old, quarantined_new, current_old = staying[1:]
    with engine.begin() as conn:
        conn.execute(text("UPDATE engine.memory_turns SET status = 'quarantined', indexed_at ="
                          " now() - interval '40 days' WHERE seq = :s"), {"s": quarantined_old})
        conn.execute(text("UPDATE engine.memory_turns SET status = 'quarantined'"
                          " WHERE seq = :s"), {"s": quarantined_new})
        conn.execute(text("UPDATE engine.memory_turns SET indexed_at = now() - interval"
                          " '40 days' WHERE seq = :s"), {"s": current_old})
    counter = metrics.registry().RETENTION_DELETED.labels("memory_turns")
    before = counter._value.get()
    deleted = retention.apply(engine, settings, batch=10)
    assert deleted["chat_messages"] == 4 and deleted["memory_turns"] == 5
    assert counter._value.get() == before + 5
    assert _left(engine, gone + staying) == [staying[0], quarantined_new, current_old]
