"""The eros.recall task through a real worker, for callers that prefer the queue."""

from __future__ import annotations

import uuid

import pytest
from celery import Celery
from sqlalchemy import Engine

from tests.e2e.conftest import Starter
from tests.support.data import add_session, mem_line
from tests.support.workers import wait_until

pytestmark = pytest.mark.e2e


def test_recall_task_returns_ranked_memories_and_the_prompt(
        engine: Engine, start_worker: Starter, start_beat, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    user = uuid.uuid4()
    with engine.begin() as conn:
        add_session(conn, [mem_line("preference", 0.4, "Likes jazz"),
                           mem_line("fact", 0.7, "Lives in Tokyo")], user_id=user)
    start_worker("w1", concurrency=2)
    start_beat()

    def classified() -> bool:
        with engine.connect() as conn:
            return bool(conn.exec_driver_sql(
                "SELECT count(*) FROM engine.companion_memories").scalar_one() == 2)
    wait_until(classified, timeout=60, message="memories written")
    client = Celery(broker=redis_url, backend=redis_url)
    result = client.send_task("eros.recall", args=[str(user), "where does she live"],
                              kwargs={"labels": "en", "strategy": "grouped"},
                              queue="eros.recall")
    payload = result.get(timeout=60)
    contents = {m["content"] for m in payload["memories"]}
    assert contents == {"Likes jazz", "Lives in Tokyo"}
    assert "Lives in Tokyo" in payload["prompt"]
    # the default strategy (RECALL_STRATEGY=fused, issue 31) through the same task: one
    # ranked list saying what each item is
    fused = client.send_task("eros.recall", args=[str(user), "where does she live"],
                             kwargs={"labels": "en"}, queue="eros.recall").get(timeout=60)
    assert fused["strategy"] == "fused" and fused["budget"] == 1000
    assert {i["kind"] for i in fused["items"]} <= {"memory", "turn"}
    # each fact as a memory, or as the user's own turn it came from (classification indexes
    # the turns, issue 31: a memory whose turn ranks above it adds nothing and is left out)
    said = [m["content"] for m in fused["memories"]] + [t["content"] for t in fused["turns"]]
    for fact in ("Likes jazz", "Lives in Tokyo"):
        assert any(fact in s for s in said), fact
    assert "Lives in Tokyo" in fused["prompt"]


def test_recall_task_leaves_out_the_turns_a_labelled_memory_cites(
        engine: Engine, start_worker: Starter, redis_url: str) -> None:
    """Issue 31 item 4 through a real worker: ``include_sensitive: false`` returns neither the
    crisis memory nor the turn it cites (the turn row carries no label of its own), nor that
    turn as a quote; ``true`` returns the turn as the memory's quote, marked."""
    from datetime import timedelta

    from sqlalchemy import text

    from eros.providers.offline.hashing import hash_embedding
    from eros.recall.db import turns_sql

    user = uuid.uuid4()
    said = ["some days I want to hurt myself", "I like jazz a lot"]
    with engine.begin() as conn:
        sid = add_session(conn, [("user", s) for s in said], user_id=user,
                          idle_for=timedelta(minutes=1))
        rows = conn.execute(text("SELECT seq, sent_at FROM engine.chat_messages"
                                 " WHERE session_id = :s ORDER BY seq"), {"s": sid}).all()
        turns_sql.write_turns(conn, [turns_sql.TurnRow(
            r.seq, sid, user, None, r.sent_at, hash_embedding(s, 512), "any")
            for r, s in zip(rows, said, strict=True)])
        conn.execute(text(
            "INSERT INTO engine.companion_memories (session_id, user_id, content, category,"
            " embedding, source_seqs, sensitivity) VALUES (:s, :u, 'has thought of self-harm',"
            " 'emotion', CAST(:v AS vector), :seqs, 'crisis')"),
            {"s": sid, "u": user, "v": str(hash_embedding("self-harm", 512)),
             "seqs": [rows[0].seq]})
    start_worker("w1", concurrency=1)
    client = Celery(broker=redis_url, backend=redis_url)

    def ask(sensitive: bool) -> dict:  # type: ignore[type-arg]
        return client.send_task(  # type: ignore[no-any-return]
            "eros.recall", args=[str(user), "how is she feeling"],
            kwargs={"labels": "en", "strategy": "fused", "include_sensitive": sensitive},
            queue="eros.recall").get(timeout=60)

    hidden = ask(False)
    assert hidden["memories"] == [] and [t["content"] for t in hidden["turns"]] == [said[1]]
    assert "hurt myself" not in hidden["prompt"]
    shown = ask(True)
    assert [m["quotes"] for m in shown["memories"]] == [[rows[0].seq]]
    assert "hurt myself" in shown["prompt"] and "CRISIS" in shown["prompt"]
