"""``eros turns backfill`` (issue 31 item 1): the turns of sessions classified before
classification indexed them — resumable, idempotent, screened and labelled as classify does,
never a turn a forget took out or one its classification did not read. Real PostgreSQL, real
Redis for the global limits, the real voyageai SDK against the fake server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline
from eros.dreaming.services.turn_backfill import backfill
from eros.guard.services.guard_model import forget_models
from eros.privacy.db import consent_sql
from eros.privacy.services.forget import forget_memory, forget_message, forget_user
from eros.providers.ratelimit import Limits, RedisLimiter
from eros.settings import Settings
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Reply
from tests.integration.test_classify_turns import ATTACK, CHURCH, SPOKEN, TOKYO, add_turns
from tests.support.classify import classify_session, fake_pipeline


@pytest.fixture(autouse=True)
def fresh_process_cache() -> None:
    forget_models()


@pytest.fixture
def pipeline(engine: Engine, provider_settings: Callable[..., Settings]) -> Pipeline:
    settings = provider_settings(llm_timeout_secs=20, embedding_timeout_secs=5)
    return fake_pipeline(settings, engine)


def _before_this_change(engine: Engine) -> None:
    """The sessions as classification left them before it indexed turns: no turn rows."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM engine.memory_turns"))


def _indexed(engine: Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        return {r.content: r for r in conn.execute(text(
            "SELECT m.content, t.* FROM engine.memory_turns t"
            " JOIN engine.chat_messages m ON m.seq = t.seq"))}


def _reply(*memories: dict[str, Any]) -> Reply:
    return Reply(json.dumps({"memories": list(memories)}))


def test_the_backfill_resumes_where_it_stopped_and_never_indexes_twice(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer,
        voyage: FakeVoyageServer) -> None:
    user = uuid.uuid4()
    with engine.begin() as conn:
        first = add_turns(conn, [("user", TOKYO, "text"), ("assistant", "Nice!", "text"),
                                 ("user", "my knee hurts after the run", "text"),
                                 ("user", "export my chats?", "product_qa")], user_id=user)
        second = add_turns(conn, [("user", SPOKEN, "voice"), ("user", ATTACK, "text"),
                                  ("user", "the garden is full of tulips", "text")],
                           user_id=user)
    llm.script_replies([_reply({"content": "Has a sore knee", "category": "fact",
                                "sources": [3], "sensitivity": "health"}), _reply()])
    classify_session(pipeline, first)
    classify_session(pipeline, second)
    before = {k: (r.sensitivity, r.status, r.said_at) for k, r in _indexed(engine).items()}
    _before_this_change(engine)
    with engine.begin() as conn:  # a turn said after the classification: not read yet
        conn.execute(text("INSERT INTO engine.chat_messages (session_id, role, content)"
                          " VALUES (:s, 'user', 'a new turn, not read yet')"), {"s": first})
    settings = pipeline.settings
    calls = voyage.request_count

    part = backfill(settings, engine, pipeline.embedder, limit=3, batch=2)
    assert (part.scanned, part.indexed, part.done, part.batches) == (3, 3, False, 2)
    assert part.embedding_requests == 2 and voyage.request_count == calls + 2
    rest = backfill(settings, engine, pipeline.embedder, batch=2)
    assert rest.done and rest.scanned == 2 and rest.indexed == 1
    assert rest.dropped == {"addresses_ai": 1}
    # what classify itself wrote, to the label, the status and the date
    assert {k: (r.sensitivity, r.status, r.said_at)
            for k, r in _indexed(engine).items()} == before
    assert _indexed(engine)["my knee hurts after the run"].sensitivity == "health"
    assert rest.progress is not None and rest.progress["total_indexed"] == 4

    calls = voyage.request_count
    again = backfill(settings, engine, pipeline.embedder)
    assert (again.scanned, again.indexed, again.done) == (0, 0, True)
    restarted = backfill(settings, engine, pipeline.embedder, restart=True)
    assert restarted.done and restarted.indexed == 0
    assert restarted.scanned == 1  # the rule-rejected turn is judged again, never written
    assert voyage.request_count == calls and len(_indexed(engine)) == 4


def test_the_backfill_never_brings_back_a_forgotten_or_withheld_turn(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer) -> None:
    user, gone = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        sid = add_turns(conn, [("user", TOKYO, "text"), ("user", CHURCH, "text"),
                               ("user", "the garden is full of tulips", "text"),
                               ("user", "my knee hurts after the run", "text")], user_id=user)
        other = add_turns(conn, [("user", "I sing in a choir", "text")], user_id=gone)
    llm.script_replies([_reply({"content": "Moved to Tokyo", "category": "event",
                                "sources": [1]}), _reply()])
    classify_session(pipeline, sid)
    classify_session(pipeline, other)
    _before_this_change(engine)
    with engine.connect() as conn:
        tokyo = conn.execute(text("SELECT id FROM engine.companion_memories"
                                  " WHERE content = 'Moved to Tokyo'")).scalar_one()
        garden = conn.execute(text("SELECT id FROM engine.chat_messages WHERE content ="
                                   " 'the garden is full of tulips'")).scalar_one()
    forget_memory(engine, tokyo)        # its source turn is tombstoned
    forget_message(engine, garden)      # the message is gone
    forget_user(engine, gone)           # read through its last turn, floor there
    with engine.begin() as conn:
        consent_sql.withhold(conn, user, ["beliefs"])  # CHURCH's own label
    report = backfill(pipeline.settings, engine, pipeline.embedder)
    assert set(_indexed(engine)) == {"my knee hurts after the run"}
    assert report.withheld == 1 and report.done


def test_a_dry_run_writes_nothing_not_even_the_cursor(
        pipeline: Pipeline, engine: Engine, llm: FakeLLMServer) -> None:
    with engine.begin() as conn:
        sid = add_turns(conn, [("user", TOKYO, "text")])
    classify_session(pipeline, sid)
    _before_this_change(engine)
    report = backfill(pipeline.settings, engine, pipeline.embedder, dry_run=True)
    assert report.statuses == {"current": 1} and report.indexed == 0
    assert report.embedding_requests == 1 and report.progress is None
    assert _indexed(engine) == {}


def test_the_backfill_waits_for_the_global_embedding_budget(
        pipeline: Pipeline, engine: Engine, redis_url: str) -> None:
    """Each batch is charged to EMBEDDING_TOKENS_PER_MINUTE before its request: a batch past
    the budget waits (Throttled) — here the wait is recorded, then the bucket is refilled."""
    with engine.begin() as conn:
        sid = add_turns(conn, [("user", f"a line about the garden, number {i}", "text")
                               for i in range(6)])
    classify_session(pipeline, sid)
    _before_this_change(engine)
    client = redis.Redis.from_url(redis_url)
    limiter = RedisLimiter(client, {"embedding": Limits(tokens_per_minute=600,
                                                        burst_secs=2)})  # 20 tokens
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        for key in client.scan_iter("*embedding*"):  # the minute passes at once
            client.delete(key)

    report = backfill(pipeline.settings, engine, pipeline.embedder, batch=2, limiter=limiter,
                      sleep=wait)
    assert (report.indexed, report.batches, report.embedding_requests) == (6, 3, 3)
    assert len(waits) >= 2 and all(w > 0 for w in waits)
