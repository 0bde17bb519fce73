"""Channels (which turns extraction reads, voice tags stripped) and archived sessions, against
a real PostgreSQL and the real SDKs with the fake APIs (issue 18)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from eros.dreaming.services.classify import Pipeline, classify, start_attempt
from eros.memory.db import repo
from eros.settings import Settings, load_settings
from testkit.data import add_session, bulk_idle_sessions
from testkit.fakes import FakeLLMServer
from tests.support.classify import classify_session, fake_pipeline

Turn = tuple[str, str, str]  # (role, channel, content)


@pytest.fixture
def pipeline(engine: Engine, provider_settings: Callable[..., Settings]) -> Pipeline:
    settings = provider_settings(llm_timeout_secs=2, embedding_timeout_secs=2)
    return fake_pipeline(settings, engine)


def _session(engine: Engine, turns: list[Turn]) -> uuid.UUID:
    """A session written the way the product writes channels: plain INSERTs."""
    with engine.begin() as conn:
        sid = add_session(conn)
        start = datetime.now(UTC) - timedelta(hours=3)
        conn.execute(text(
            "INSERT INTO engine.chat_messages (session_id, role, channel, content, sent_at)"
            " VALUES (:s, :r, :c, :t, :at)"),
            [{"s": sid, "r": r, "c": c, "t": t, "at": start + timedelta(minutes=i)}
             for i, (r, c, t) in enumerate(turns)])
    return sid


def _classify(pipeline: Pipeline, sid: uuid.UUID) -> str:
    return classify_session(pipeline, sid).outcome


def test_voice_read_without_tags_product_qa_never_sent(pipeline: Pipeline,
                                                         llm: FakeLLMServer) -> None:
    sid = _session(pipeline.engine, [
        ("user", "text", "MEM fact 0.7 Lives in Lyon"),
        ("user", "voice", '[laughs] I finally <break time="1s"/> passed my driving test '
                          "(sighs) *whispers* don't tell anyone"),
        ("assistant", "voice", "(warmly) Congratulations! [giggles]"),
        ("user", "voice", "[笑] 我搬到东京了（叹气），*小声* 其实有点想家【哭腔】"),
        ("user", "product_qa", "How do I cancel my subscription? My card is 4111-1111"),
        ("assistant", "product_qa", "Go to Settings > Billing."),
    ])
    assert _classify(pipeline, sid) == "memories"
    sent = llm.requests[0].body["messages"][1]["content"]
    assert "user: I finally passed my driving test don't tell anyone" in sent
    assert "assistant: Congratulations!" in sent
    assert "user: 我搬到东京了，其实有点想家" in sent
    for gone in ("laughs", "break", "sighs", "whispers", "giggles", "warmly", "笑]", "叹气",
                 "小声", "哭腔", "subscription", "4111", "Billing"):
        assert gone not in sent
    with pipeline.engine.connect() as conn:
        row = conn.execute(text("SELECT classified_at, outcome FROM engine.chat_sessions"
                                " WHERE id = :s"), {"s": sid}).one()
    # the unread product_qa turns after the last read one do not hold the session open
    assert row.classified_at is not None and row.outcome == "memories"


def test_a_session_with_nothing_readable_is_empty_without_a_call(pipeline: Pipeline,
                                                                 llm: FakeLLMServer) -> None:
    sid = _session(pipeline.engine, [("user", "product_qa", "MEM fact 0.9 where is my invoice"),
                                     ("assistant", "product_qa", "Here it is.")])
    assert _classify(pipeline, sid) == "empty"
    assert llm.request_count == 0


def test_dreaming_channels_decides_what_is_read(pipeline: Pipeline, llm: FakeLLMServer,
                                               db_url: str) -> None:
    settings = load_settings(**{**pipeline.settings.model_dump(), "dreaming_channels": "text"})
    text_only = Pipeline(settings, pipeline.engine, pipeline.llm, pipeline.embedder,
                         pipeline.prompt)
    sid = _session(pipeline.engine, [("user", "voice", "MEM fact 0.7 Lives in Oslo")])
    assert _classify(text_only, sid) == "empty"
    assert llm.request_count == 0


def test_channel_setting_is_validated() -> None:
    assert load_settings(dreaming_channels=" Text, voice ,text").channels == {"text", "voice"}
    for bad in ("", " , ", "text,bad channel"):
        with pytest.raises(Exception, match="DREAMING_CHANNELS"):
            load_settings(dreaming_channels=bad)


def test_an_archived_session_is_never_claimed(engine: Engine) -> None:
    with engine.begin() as conn:
        archived = add_session(conn, [("user", "hi")], idle_for=timedelta(hours=5))
        stale = add_session(conn, [("user", "hi")], idle_for=timedelta(hours=4))
        live = add_session(conn, [("user", "hi")])
        conn.execute(text("UPDATE engine.chat_sessions SET archived_at = now()"
                          " WHERE id = ANY(:ids)"), {"ids": [archived, stale]})
        # even a stale claim on an archived session is not taken over
        conn.execute(text("UPDATE engine.chat_sessions SET classification_claimed_at = now()"
                          " - interval '1 hour', claim_token = gen_random_uuid()"
                          " WHERE id = :i"), {"i": stale})
        got = repo.claim_idle(conn, idle_secs=1800, stale_secs=600, batch=100)
        assert [c.session_id for c in got] == [live]
        assert repo.claim_one(conn, archived, stale_secs=600) is None
        assert repo.claim_one(conn, archived, stale_secs=600, force=True) is None


def test_archived_sessions_are_not_in_the_claim_index(engine: Engine) -> None:
    """The claim reads O(batch) index entries: 3000 archived sessions older than every open
    one are not even visited (not skipped one by one by a filter)."""
    with engine.begin() as conn:
        archived = bulk_idle_sessions(conn, 3000, idle_secs=90_000)
        conn.execute(text("UPDATE engine.chat_sessions SET archived_at = now()"
                          " WHERE id = ANY(:ids)"), {"ids": archived})
        bulk_idle_sessions(conn, 200)
        conn.execute(text("ANALYZE engine.chat_sessions"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        plan = conn.execute(text("EXPLAIN (ANALYZE, FORMAT JSON) " + str(repo.CLAIM_IDLE.text)),
                            {"idle_secs": 1800, "stale_secs": 600, "batch": 10}).scalar_one()
        conn.rollback()
    nodes = list(_nodes(plan[0]["Plan"] if isinstance(plan, list) else json.loads(plan)))
    scans = [n for n in nodes if n.get("Index Name") == "ix_chat_sessions_claimable"]
    assert scans, "the claim is not served by ix_chat_sessions_claimable"
    assert all(n.get("Rows Removed by Filter", 0) == 0 for n in scans)
    assert all(n["Actual Rows"] <= 10 for n in scans)


def _nodes(node: dict[str, object]):  # type: ignore[no-untyped-def]
    yield node
    for child in node.get("Plans", []):  # type: ignore[attr-defined]
        yield from _nodes(child)


def test_a_session_archived_in_flight_gets_nothing_written(pipeline: Pipeline,
                                                           llm: FakeLLMServer) -> None:
    """Archived between the claim and the write (a relationship being forgotten meanwhile):
    the late write finds archived_at set and writes nothing; a later attempt does not start."""
    sid = _session(pipeline.engine, [("user", "text", "MEM event 0.6 Our song is Moon River")])
    with pipeline.engine.begin() as conn:
        claim = repo.claim_one(conn, sid, stale_secs=600)
    assert claim is not None
    attempt = start_attempt(pipeline, claim.session_id, claim.token)
    assert attempt is not None
    with pipeline.engine.begin() as conn:  # the product archives it while the model runs
        conn.execute(text("UPDATE engine.chat_sessions SET archived_at = now() WHERE id = :s"),
                     {"s": sid})
    assert classify(pipeline, attempt).outcome == "claim_lost"
    assert llm.request_count == 1
    with pipeline.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM engine.companion_memories"
                                 " WHERE session_id = :s"), {"s": sid}).scalar_one() == 0
    assert start_attempt(pipeline, claim.session_id, claim.token) is None
