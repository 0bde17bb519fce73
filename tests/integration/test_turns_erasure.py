"""Every erasure path takes the turn vectors with it (issue 31 item 4, 0025): user, persona,
memory (its source turns), message, sensitive label, session — counted as ``indexed_turns``
in the erasure's counts. Real PostgreSQL, the real services."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine, text

from eros.privacy.services import forget
from eros.recall.db import turns_sql
from eros.recall.db.turns_sql import TurnRow
from testkit.data import add_session
from tests.integration.test_turns_sql import _axis


def _index(engine: Engine, sid: uuid.UUID, sensitivity: str | None = None) -> list[int]:
    with engine.begin() as conn:
        rows = conn.execute(text(
            "SELECT m.seq, m.sent_at, s.user_id, s.instance_id FROM engine.chat_messages m"
            " JOIN engine.chat_sessions s ON s.id = m.session_id"
            " WHERE m.session_id = :s ORDER BY m.seq"), {"s": sid}).all()
        turns_sql.write_turns(conn, [
            TurnRow(seq=r.seq, session_id=sid, user_id=r.user_id, instance_id=r.instance_id,
                    said_at=r.sent_at, embedding=_axis(i), embedding_model="m",
                    sensitivity=sensitivity) for i, r in enumerate(rows)])
    return [r.seq for r in rows]


def _memory(engine: Engine, sid: uuid.UUID, user: uuid.UUID, seqs: list[int],
            sensitivity: str | None = None) -> uuid.UUID:
    with engine.begin() as conn:
        return conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
            " embedding, source_seqs, sensitivity) VALUES (:s, :u, 'a fact', 'fact',"
            " CAST(:v AS vector), CAST(:seqs AS bigint[]), :l) RETURNING id"),
            {"s": sid, "u": user, "v": str(_axis(0)), "seqs": seqs,
             "l": sensitivity}).scalar_one()


def _left(engine: Engine, seqs: list[int]) -> list[int]:
    with engine.connect() as conn:
        return [r.seq for r in conn.execute(text(
            "SELECT seq FROM engine.memory_turns WHERE seq = ANY(:s) ORDER BY seq"),
            {"s": seqs})]


def _two_sessions(engine: Engine, **kw: Any) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID,
                                                     list[int], list[int]]:
    user, persona = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        a = add_session(conn, [("user", "a1"), ("user", "a2")], user_id=user)
        b = add_session(conn, [("user", "b1"), ("user", "b2")], user_id=user,
                        instance_id=persona)
    return user, persona, a, _index(engine, a, **kw), _index(engine, b)


def test_user_and_persona_forgets_remove_indexed_turns(engine: Engine) -> None:
    user, persona, _a, sa, sb = _two_sessions(engine)
    assert forget.forget_user(engine, user, instance_id=persona)["indexed_turns"] == 2
    assert _left(engine, sa + sb) == sa
    assert forget.forget_user(engine, user)["indexed_turns"] == 2
    assert _left(engine, sa + sb) == []


def test_memory_and_message_forgets_remove_their_turns(engine: Engine) -> None:
    user, _persona, a, sa, sb = _two_sessions(engine)
    memory = _memory(engine, a, user, [sa[0]])
    assert forget.forget_memory(engine, memory)["indexed_turns"] == 1
    assert _left(engine, sa + sb) == [sa[1], *sb]
    with engine.connect() as conn:
        message = conn.execute(text("SELECT id FROM engine.chat_messages WHERE seq = :s"),
                               {"s": sb[0]}).scalar_one()
    forget.forget_message(engine, message)
    assert _left(engine, sa + sb) == [sa[1], sb[1]]


def test_sensitive_and_session_forgets_remove_indexed_turns(engine: Engine) -> None:
    user, _persona, a, sa, sb = _two_sessions(engine, sensitivity="health")
    cited = _memory(engine, a, user, [sb[1]], sensitivity="health")
    counts = forget.forget_sensitive(engine, user, "health")
    # the labelled session's two turns, and the turn the labelled memory cites
    assert counts["indexed_turns"] == 3 and cited
    assert _left(engine, sa + sb) == [sb[0]]
    with engine.connect() as conn:
        b = conn.execute(text("SELECT session_id FROM engine.memory_turns WHERE seq = :s"),
                         {"s": sb[0]}).scalar_one()
    assert forget.forget_session(engine, b)["indexed_turns"] == 1
    assert _left(engine, sa + sb) == []


def test_the_export_says_which_turns_are_indexed(engine: Engine) -> None:
    import io
    import json

    from eros.privacy.services.export import export_user
    user, _persona, _a, sa, sb = _two_sessions(engine, sensitivity="health")
    out = io.StringIO()
    export_user(engine, user, out)
    doc = json.loads(out.getvalue())
    turns = doc["indexed_turns"]
    assert [t["seq"] for t in turns] == sa + sb
    assert [t["sensitivity"] for t in turns] == ["health", "health", None, None]
    assert all(set(t) >= {"session_id", "said_at", "status", "embedding_model"} for t in turns)
    assert all("embedding" not in t and "embedding_bq" not in t for t in turns)
