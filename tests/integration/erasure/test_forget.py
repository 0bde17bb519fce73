"""Erasure (issue 14) in-process: real PostgreSQL + pgvector, the real openai/voyageai SDKs
against the local fakes. Each race is forced: the fake model holds its reply until the forget
has committed, or a third connection holds the writer inside its transaction until the forget
is seen waiting on it. Afterwards every table of schema engine is scanned for the ids."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

from eros.consolidation.services.consolidate import Consolidator, consolidate, start_pass
from eros.consolidation.services.consolidation_report import ConsolidationReport
from eros.dreaming.services.classify import Pipeline, Report, classify, start_attempt
from eros.memory.core.claims import Attempt
from eros.memory.db import repo
from eros.privacy.db import forget_sql
from eros.privacy.services.forget import forget_memory, forget_user
from eros.recall import recall_by_vector
from eros.recall.db import cells_sql
from eros.recall.services import recall_cells
from testkit.data import add_messages, add_session, ago, mem_line
from testkit.fakes import FakeLLMServer, Reply
from tests.integration.test_consolidate import add, answer, axis
from tests.integration.test_recall_cells import CELLS, load, topic_vectors
from tests.support.privacy import rows_mentioning, wait_for_lock_wait


def _claim(pipeline: Pipeline, sid: uuid.UUID) -> Attempt:
    with pipeline.engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, claim.session_id, claim.token)
    assert attempt is not None
    return attempt


def _count(engine: Engine, sql: str, **params: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def _memories(engine: Engine, user: uuid.UUID) -> int:
    return _count(engine, "SELECT count(*) FROM engine.companion_memories WHERE user_id = :u",
                  u=user)


def _user_with_everything(pipeline: Pipeline, c: Consolidator) -> tuple[uuid.UUID, uuid.UUID]:
    """A user with classified sessions, merged memories (history), state and a cell."""
    engine = pipeline.engine
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai"),
                                 ("assistant", "Nice city")], user_id=user)
    assert classify(pipeline, _claim(pipeline, sid)).memories_written == 1
    add(engine, user, "lives in shanghai", axis(0), days_ago=2)
    add(engine, user, "Lives in Shanghai!", axis(0), days_ago=1)
    assert start_pass(c, user) == 1
    assert consolidate(c, user).merged >= 1
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO engine.memory_cells (user_id, cell, centroid)"
                          " VALUES (:u, 0, :v)"), {"u": user, "v": str(axis(0))})
    return user, sid


def test_forget_user_removes_every_derived_row_and_later_turns_are_learned(
        pipeline: Pipeline, c: Consolidator, engine: Engine) -> None:
    user, sid = _user_with_everything(pipeline, c)
    other, _ = _user_with_everything(pipeline, c)
    other_before = rows_mentioning(engine, [other])
    counts = forget_user(engine, user)
    assert counts["memories"] == 3 and counts["history"] >= 1
    assert counts["cells"] == 1 and counts["consolidation_state"] == 1
    assert counts["sessions_marked_read"] == 1 and counts["runs"] >= 1
    # only the session (and its messages) still name the user; nothing else does
    assert rows_mentioning(engine, [user]) == {"chat_sessions": 1}
    assert rows_mentioning(engine, [other]) == other_before
    with engine.connect() as conn:
        s = conn.execute(text("SELECT * FROM engine.chat_sessions WHERE id = :i"),
                         {"i": sid}).one()
        top = conn.execute(text("SELECT max(seq) FROM engine.chat_messages"
                                " WHERE session_id = :i"), {"i": sid}).scalar()
    assert s.classified_at is not None and s.classified_through_seq == top
    assert s.claim_token is None and s.last_error is None and s.outcome == "forgotten"
    # forgetting again removes nothing more
    again = forget_user(engine, user)
    assert again["memories"] == again["history"] == again["cells"] == 0
    # a turn after the forget is learned as usual, and only it
    with engine.begin() as conn:
        add_messages(conn, sid, [mem_line("preference", 0.5, "Likes jazz")], last=ago(hours=1))
        conn.execute(text("UPDATE engine.chat_sessions SET last_active_at = :t WHERE id = :i"),
                     {"t": ago(hours=1), "i": sid})
        claims = repo.claim_idle(conn, idle_secs=60, stale_secs=600, batch=10)
    assert [cl.session_id for cl in claims] == [sid]
    attempt = start_attempt(pipeline, sid, claims[0].token)
    assert attempt is not None
    report = classify(pipeline, attempt)
    assert report.memories_written == 1 and "Shanghai" not in report.transcript
    counts = forget_user(engine, user, sessions=True)
    assert counts["sessions_deleted"] == 1 and counts["messages"] == 3
    assert rows_mentioning(engine, [user]) == {}


def _hold_reply(llm: FakeLLMServer, reply: Reply | None = None
                ) -> tuple[threading.Event, threading.Event]:
    """The fake model answers only after ``release`` is set; ``asked`` says it was called."""
    asked, release = threading.Event(), threading.Event()
    default = llm._responder  # the echo responder

    def held(request: dict[str, Any]) -> Reply:
        asked.set()
        assert release.wait(30)
        return reply if reply is not None else default(request)

    llm.set_responder(held)
    return asked, release


def _in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn(*args)))
    thread.start()
    return thread, out


def test_forget_committed_while_classify_waits_for_the_model(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")], user_id=user)
    attempt = _claim(pipeline, sid)
    asked, release = _hold_reply(llm)
    thread, out = _in_thread(classify, pipeline, attempt)
    assert asked.wait(20)
    forget_user(engine, user, sessions=True)  # committed before the model answers
    release.set()
    thread.join(30)
    report: Report = out[0]
    assert report.outcome == "claim_lost" and report.memories_written == 0
    assert rows_mentioning(engine, [user, sid]) == {}


def test_forget_waits_for_a_classify_that_is_writing_and_removes_what_it_wrote(
        pipeline: Pipeline, engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Shanghai")], user_id=user)
    attempt = _claim(pipeline, sid)
    with engine.connect() as blocker:
        # holds classify inside its one finishing statement (dreaming/db/finish_sql.py): the
        # session's row locked by its fence, its turns' message locks (FOR KEY SHARE) waiting
        blocker.execute(text("SELECT 1 FROM engine.chat_messages WHERE session_id = :s"
                             " FOR UPDATE"), {"s": sid})
        writer, out = _in_thread(classify, pipeline, attempt)
        wait_for_lock_wait(engine, "WITH fence AS")
        forgetter, counts = _in_thread(lambda: forget_user(engine, user))
        wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions")
        blocker.rollback()
    writer.join(30)
    forgetter.join(30)
    assert out[0].memories_written == 1  # committed first …
    assert counts[0]["memories"] == 1  # … and removed by the forget that waited for it
    assert rows_mentioning(engine, [user]) == {"chat_sessions": 1}


def _jazz_user(engine: Engine) -> uuid.UUID:
    user = uuid.uuid4()
    add(engine, user, "Likes jazz", axis(2), days_ago=20, category="preference")
    add(engine, user, "Enjoys jazz music", axis(2, 3, 0.95), days_ago=5, category="preference")
    return user


JAZZ = Reply(json.dumps({"clusters": [answer(1, "Loves jazz", [1, 2],
                                             category="preference")]}))


def test_forget_committed_while_consolidation_waits_for_the_model(
        c: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = _jazz_user(engine)
    asked, release = _hold_reply(llm, JAZZ)
    assert start_pass(c, user) == 1
    thread, out = _in_thread(consolidate, c, user)
    assert asked.wait(20)
    forget_user(engine, user)
    release.set()
    thread.join(30)
    report: ConsolidationReport = out[0]
    assert report.outcome == "claim_lost" and report.canonical_written == 0
    assert rows_mentioning(engine, [user]) == {}
    # a pass queued before the forget and started after it does nothing either
    assert start_pass(c, user) is None
    assert rows_mentioning(engine, [user]) == {}


def test_forget_waits_for_a_consolidation_that_is_writing(
        c: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = _jazz_user(engine)
    llm.set_responder(lambda _: JAZZ)
    assert start_pass(c, user) == 1
    with engine.connect() as blocker:
        # holds the pass inside its write: canonical row inserted, history waits
        blocker.execute(text("LOCK TABLE engine.memory_history IN EXCLUSIVE MODE"))
        writer, out = _in_thread(consolidate, c, user)
        wait_for_lock_wait(engine, "INSERT INTO engine.memory_history")
        forgetter, counts = _in_thread(lambda: forget_user(engine, user))
        wait_for_lock_wait(engine, "SELECT pg_advisory_xact_lock")
        blocker.rollback()
    writer.join(30)
    forgetter.join(30)
    assert out[0].canonical_written == 1
    assert counts[0]["memories"] == 3 and counts[0]["history"] == 1
    assert rows_mentioning(engine, [user]) == {}


def test_forget_a_relationship_keeps_the_profile_and_other_personas(
        pipeline: Pipeline, engine: Engine) -> None:
    user, persona, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        s1 = add_session(conn, [("user", "hi")], user_id=user, instance_id=persona)
        s2 = add_session(conn, [("user", "hey")], user_id=user, instance_id=other)
        for inst, content in ((None, "Lives in Shanghai"), (persona, "We joked about cats"),
                              (other, "We talked about work")):
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, instance_id, content,"
                " category, embedding) VALUES (:u, :i, :c, 'event', :e)"),
                {"u": user, "i": inst, "c": content, "e": str(axis(1))})
    counts = forget_user(engine, user, instance_id=persona)
    assert counts["memories"] == 1 and counts["sessions_marked_read"] == 1
    with engine.connect() as conn:
        left = sorted(conn.execute(text("SELECT content FROM engine.companion_memories"
                                        " WHERE user_id = :u"), {"u": user}).scalars())
        read = dict(conn.execute(text("SELECT id, classified_at IS NOT NULL FROM"
                                      " engine.chat_sessions WHERE user_id = :u"),
                                 {"u": user}).all())
    assert left == ["Lives in Shanghai", "We talked about work"]
    assert read == {s1: True, s2: False}
    assert forget_user(engine, user, instance_id=persona, sessions=True)["sessions_deleted"] == 1
    assert rows_mentioning(engine, [persona]) == {}


def test_forget_one_memory_takes_its_lineage_and_nothing_else(
        c: Consolidator, engine: Engine, llm: FakeLLMServer) -> None:
    user = _jazz_user(engine)
    kept = add(engine, user, "Has a cat", axis(5), days_ago=3)
    llm.set_responder(lambda _: JAZZ)
    assert start_pass(c, user) == 1
    assert consolidate(c, user).canonical_written == 1
    with engine.connect() as conn:
        ids = {r.id: r.status for r in conn.execute(text(
            "SELECT id, status FROM engine.companion_memories WHERE user_id = :u"), {"u": user})}
    canonical = next(i for i, st in ids.items() if st == "current" and i != kept)
    merged = [i for i, st in ids.items() if st == "merged"]
    assert len(merged) == 2
    # forgetting a merged source takes the canonical row that says the same thing, and its
    # other sources
    counts = forget_memory(engine, merged[0])
    assert (counts["memories"], counts["history"], counts["derived"]) == (3, 1, 0)
    assert rows_mentioning(engine, [canonical, *merged]) == {}
    result = recall_by_vector(engine, user, axis(2), strategy="grouped", settings=c.settings,
                              include_replaced=True)
    assert [m.content for m in result.memories] == ["Has a cat"]
    again = forget_memory(engine, merged[0])
    assert (again["memories"], again["history"]) == (0, 0)


def test_a_clustering_pass_that_read_before_the_forget_writes_no_cells(
        engine: Engine, db_url: str) -> None:
    user = uuid.uuid4()
    load(db_url, user, topic_vectors(np.random.default_rng(3), 400, 4)[0])
    with engine.connect() as blocker:
        # the blocker holds the user's cells lock: the pass reads, clusters, then waits for it
        cells_sql.lock_user(blocker, user, "0")
        thread, out = _in_thread(recall_cells.cluster_user, engine, CELLS, user)
        wait_for_lock_wait(engine, "SELECT set_config('lock_timeout'")
        # the forget runs and commits in the blocker's session (the advisory lock is
        # re-entrant there) — after the pass's read, before its write
        forget_sql.forget_user(blocker, user)
        blocker.commit()
    thread.join(30)
    assert out[0].outcome == "dropped" and out[0].cells == 0
    assert rows_mentioning(engine, [user]) == {}


def test_a_turn_committing_while_the_forget_waits_counts_as_read(engine: Engine) -> None:
    """A turn written before the forget committed is never extracted later."""
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "first")], user_id=user)
    with engine.connect() as writer:
        # the chat product's insert: its trigger holds the session row until it commits
        seq = writer.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, content)"
            " VALUES (:s, 'user', 'said just before the forget') RETURNING seq"),
            {"s": sid}).scalar_one()
        forgetter, _ = _in_thread(lambda: forget_user(engine, user))
        wait_for_lock_wait(engine, "SELECT id FROM engine.chat_sessions")
        writer.commit()
    forgetter.join(30)
    with engine.connect() as conn:
        s = conn.execute(text("SELECT classified_at, classified_through_seq FROM"
                              " engine.chat_sessions WHERE id = :i"), {"i": sid}).one()
        claims = repo.claim_idle(conn, idle_secs=0, stale_secs=600, batch=10)
    assert s.classified_through_seq == seq and s.classified_at is not None
    assert claims == []
