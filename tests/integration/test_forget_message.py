"""Erasing one chat message erases the memories derived from it (issue 24): the memories whose
sources hold its seq, with their lineage, through forget_memory's path; a classify that read
the message and has not written yet commits nothing (the fake model holds its reply until the
forget has committed). Real PostgreSQL, the real SDKs against the fakes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

from eros.consolidation.services.consolidate import consolidate
from eros.dreaming.services.classify import Pipeline
from eros.privacy.services.forget import forget_message
from eros.settings import Settings
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, Reply
from tests.integration.test_provenance_consolidate import _add, _answer, _axis
from tests.support.classify import classify_held, classify_session, fake_consolidator, fake_pipeline
from tests.support.privacy import rows_mentioning


@pytest.fixture
def settings(provider_settings: Callable[..., Settings]) -> Any:
    return provider_settings(
        llm_timeout_secs=20, embedding_timeout_secs=5, consolidation_similarity=0.85,
        consolidation_min_near_dup_share=0.2)


@pytest.fixture
def pipeline(settings: Any, engine: Engine) -> Pipeline:
    return fake_pipeline(settings, engine)


def _messages(engine: Engine, sid: uuid.UUID) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(text("SELECT id, seq, content FROM engine.chat_messages"
                                 " WHERE session_id = :s ORDER BY seq"), {"s": sid}).all()


def _contents(engine: Engine, user: uuid.UUID) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(text("SELECT content FROM engine.companion_memories"
                                        " WHERE user_id = :u"), {"u": user}).scalars())


def _main(counts: dict[str, Any]) -> tuple[int, int, int, int]:
    return (counts["messages"], counts["memories"], counts["history"],
            counts["claims_released"])


def test_erasing_a_message_erases_what_cites_it_and_nothing_else(pipeline: Pipeline,
                                                                 engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Lyon"),
                                 mem_line("preference", 0.4, "Likes jazz"),
                                 ("assistant", "Nice")], user_id=user)
    assert classify_session(pipeline, sid).memories_written == 2
    lyon, jazz, nice = _messages(engine, sid)
    counts = forget_message(engine, lyon.id)
    assert _main(counts) == (1, 1, 0, 0)
    assert _contents(engine, user) == ["Likes jazz"]
    assert [m.id for m in _messages(engine, sid)] == [jazz.id, nice.id]
    assert rows_mentioning(engine, [lyon.id]) == {}
    with engine.connect() as conn:  # recorded in the erasure log: ids and counts only
        log = conn.execute(text("SELECT scope, user_id, status, counts FROM engine.erasure_log"
                                " WHERE id = :i"), {"i": counts["erasure_id"]}).one()
    assert (log.scope, log.user_id, log.status) == ("message", user, "done")
    assert log.counts["messages"] == 1 and log.counts["memories"] == 1
    # idempotent; an unknown message removes nothing
    assert _main(forget_message(engine, lyon.id)) == (0, 0, 0, 0)
    assert _main(forget_message(engine, uuid.uuid4())) == (0, 0, 0, 0)
    assert _contents(engine, user) == ["Likes jazz"]


def test_a_canonical_memory_and_its_lineage_go_with_a_member_s_message(
        pipeline: Pipeline, settings: Any, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "I live in Lyon"), ("user", "I moved to Paris"),
                                 ("user", "I have a cat")], user_id=user)
    lyon, paris, cat = _messages(engine, sid)
    _add(engine, user, "Lives in Lyon", _axis(0), [lyon.seq], days_ago=9)
    _add(engine, user, "Moved to Paris", _axis(0, 1, cos=0.9), [paris.seq], days_ago=2)
    _add(engine, user, "Has a cat", _axis(4), [cat.seq], days_ago=2)
    llm.script_replies([Reply(json.dumps({"clusters": [
        _answer(1, "Moved from Lyon to Paris", [2], [1])]}))])
    c = fake_consolidator(settings, engine)
    assert consolidate(c, user).canonical_written == 1
    # erasing the Lyon turn erases the canonical memory (its sources hold Lyon's seq) and,
    # through forget_memory's lineage, the members it merged or superseded, with the history
    counts = forget_message(engine, lyon.id)
    assert (counts["messages"], counts["memories"], counts["history"]) == (1, 3, 2)
    assert _contents(engine, user) == ["Has a cat"]
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.memory_history"
                                 " WHERE user_id = :u"), {"u": user}).scalar() == 0


def test_memories_written_before_provenance_go_when_their_window_covered_the_message(
        engine: Engine) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [("user", "a"), ("user", "b"), ("user", "c")], user_id=user)
    a, b, c = _messages(engine, sid)
    with engine.begin() as conn:
        for content, window in (("from a-b", [a.seq, b.seq]), ("from c", [c.seq, c.seq])):
            conn.execute(text(
                "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
                " metadata) VALUES (:s, :u, :c, 'fact', CAST(:m AS jsonb))"),
                {"s": sid, "u": user, "c": content, "m": json.dumps({"source_seq": window})})
    assert forget_message(engine, b.id)["memories"] == 1
    assert _contents(engine, user) == ["from c"]


def test_a_classify_that_read_the_message_commits_nothing_and_the_session_is_redone(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.7, "Lives in Lyon"),
                                 mem_line("preference", 0.4, "Likes jazz")], user_id=user)
    lyon, _ = _messages(engine, sid)
    with classify_held(pipeline, llm, sid) as out:  # the model has the message in its transcript
        counts = forget_message(engine, lyon.id)  # committed before the model answers
    assert counts["claims_released"] == 1 and counts["messages"] == 1
    assert out[0].outcome == "claim_lost" and _contents(engine, user) == []
    # the session is claimable again: its next extraction reads what is left
    llm.set_responder(None)
    report = classify_session(pipeline, sid)
    assert report.memories_written == 1 and "Lyon" not in report.transcript
    assert _contents(engine, user) == ["Likes jazz"]
