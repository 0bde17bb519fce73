"""Forgetting a whole conversation (issue 32, ``eros forget --session`` /
``eros.forget_session``): the session's messages and runs go, every memory learned from it
alone goes (with lineage), a memory another session also supports stays with the session's
share of its sources trimmed, a memory merged into or superseded by one that goes comes
back, a canonical the model rewrote from the session goes; recorded with scope ``session``.
Real PostgreSQL; the state consolidation leaves is written as rows (its own tests cover how
it gets there), and replays run through the real SDKs against the fakes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, text

from eros.dreaming.services.classify import classify, start_attempt
from eros.memory.db import repo
from eros.privacy.db import erasure_sql
from eros.privacy.services.forget import forget_session
from eros.settings import Settings
from testkit.data import add_session, mem_line
from tests.support.classify import fake_pipeline
from tests.support.privacy import rows_mentioning


def _seqs(conn: Connection, sid: uuid.UUID) -> list[int]:
    return list(conn.execute(text("SELECT seq FROM engine.chat_messages WHERE session_id = :s"
                                  " ORDER BY seq"), {"s": sid}).scalars())


def _memory(conn: Connection, user: uuid.UUID, sid: uuid.UUID | None, content: str,
            seqs: list[int], *, status: str = "current", replaced_by: uuid.UUID | None = None,
            metadata: dict[str, Any] | None = None) -> uuid.UUID:
    return conn.execute(text(
        "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
        " source_seqs, status, replaced_by, replaced_at, metadata) VALUES (:s, :u, :c, 'fact',"
        " :q, :st, CAST(:r AS uuid), CASE WHEN CAST(:r AS uuid) IS NULL THEN NULL ELSE now() END,"
        " CAST(:m AS jsonb))"
        " RETURNING id"),
        {"s": sid, "u": user, "c": content, "q": seqs, "st": status, "r": replaced_by,
         "m": json.dumps(metadata or {})}).scalar_one()


def test_a_session_forget_takes_what_came_from_it_alone(
        engine: Engine, provider_settings: Callable[..., Settings]) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        s = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                               mem_line("fact", 0.6, "Likes jazz"),
                               mem_line("fact", 0.6, "Has a cat"),
                               mem_line("fact", 0.6, "Plays chess")], user_id=user)
        t = add_session(conn, [mem_line("fact", 0.6, "Likes jazz"),
                               mem_line("fact", 0.6, "Has a cat"),
                               mem_line("fact", 0.6, "Plays chess weekly"),
                               mem_line("fact", 0.6, "Likes tea")], user_id=user)
        conn.execute(text("UPDATE engine.chat_sessions SET classified_at = now(),"
                          " classified_through_seq = last_seq WHERE user_id = :u"), {"u": user})
        s_q, t_q = _seqs(conn, s), _seqs(conn, t)
        shanghai = _memory(conn, user, s, "Lives in Shanghai", [s_q[0]])
        # jazz: T's copy kept, S's merged into it — T's copy stays, trimmed to its own turn
        jazz = _memory(conn, user, t, "Likes jazz", [s_q[1], t_q[0]])
        jazz_s = _memory(conn, user, s, "Likes jazz", [s_q[1]], status="merged",
                         replaced_by=jazz)
        # cat: S's copy kept, T's merged into it — S's goes, T's comes back
        cat = _memory(conn, user, s, "Has a cat", [s_q[2], t_q[1]])
        cat_t = _memory(conn, user, t, "Has a cat", [t_q[1]], status="merged",
                        replaced_by=cat)
        # chess: a canonical the model rewrote from both (members of S deleted by retention)
        chess = _memory(conn, user, None, "Plays chess every week", [s_q[3], t_q[2]],
                        metadata={"consolidated_from": []})
        chess_t = _memory(conn, user, t, "Plays chess weekly", [t_q[2]],
                          status="superseded", replaced_by=chess)
        tea = _memory(conn, user, t, "Likes tea", [t_q[3]])
        conn.execute(text("INSERT INTO engine.memory_history (user_id, action, result_id,"
                          " source_ids) VALUES (:u, 'merge', :r, :s)"),
                     {"u": user, "r": jazz, "s": [jazz_s]})
        conn.execute(text("INSERT INTO engine.classification_runs (session_id, user_id,"
                          " attempt, outcome) VALUES (:s, :u, 1, 'ok')"), {"s": s, "u": user})

    counts = forget_session(engine, s, task_id="task-s")
    assert {k: counts[k] for k in ("messages", "memories", "history", "restored", "trimmed",
                                   "runs", "sessions_marked_read")} == {
        "messages": 4, "memories": 4, "history": 1, "restored": 2, "trimmed": 1, "runs": 1,
        "sessions_marked_read": 1}
    with engine.connect() as conn:
        left = {r.id: (r.status, r.source_seqs, r.backlog) for r in conn.execute(text(
            "SELECT m.id, m.status, m.source_seqs, b.memory_id IS NOT NULL AS backlog"
            " FROM engine.companion_memories m LEFT JOIN engine.consolidation_backlog b"
            " ON b.memory_id = m.id WHERE m.user_id = :u"), {"u": user})}
        session = conn.execute(text("SELECT outcome, erased_through_seq = last_seq AS floor"
                                    " FROM engine.chat_sessions WHERE id = :s"),
                               {"s": s}).one()
        logged = erasure_sql.list_erasures(conn, user)
    assert {k: v[:2] for k, v in left.items()} == {
        jazz: ("current", [t_q[0]]), cat_t: ("current", [t_q[1]]),
        chess_t: ("current", [t_q[2]]), tea: ("current", [t_q[3]])}
    assert left[cat_t][2] and left[chess_t][2]  # back in the consolidation backlog
    assert rows_mentioning(engine, [shanghai, jazz_s, cat, chess]) == {}
    assert tuple(session) == ("forgotten", True)
    assert rows_mentioning(engine, [s]) == {"chat_sessions": 1}  # ids and times only
    assert [(r["scope"], r["session_id"], r["task_id"], r["id"]) for r in logged] == [
        ("session", s, "task-s", counts["erasure_id"])]
    # idempotent: again, nothing more goes
    again = forget_session(engine, s)
    assert (again["messages"], again["memories"], again["trimmed"]) == (0, 0, 0)
    assert forget_session(engine, uuid.uuid4())["memories"] == 0  # an unknown session

    # a forced re-run of the forgotten session reads nothing; of the other, nothing of S's
    settings = provider_settings()
    pipeline = fake_pipeline(settings, engine)
    for sid in (s, t):
        with engine.begin() as conn:
            claim = repo.claim_one(conn, sid, stale_secs=600, force=True)
        assert claim is not None
        attempt = start_attempt(pipeline, sid, claim.token)
        assert attempt is not None
        classify(pipeline, attempt)
    with engine.connect() as conn:
        contents = set(conn.execute(text("SELECT content FROM engine.companion_memories"
                                         " WHERE user_id = :u"), {"u": user}).scalars())
    assert "Lives in Shanghai" not in contents and "Plays chess" not in contents
