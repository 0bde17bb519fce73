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
                              kwargs={"labels": "en"}, queue="eros.recall")
    payload = result.get(timeout=60)
    contents = {m["content"] for m in payload["memories"]}
    assert contents == {"Likes jazz", "Lives in Tokyo"}
    assert "Lives in Tokyo" in payload["prompt"]
    # the fused strategy through the same task: one ranked list saying what each item is
    fused = client.send_task("eros.recall", args=[str(user), "where does she live"],
                             kwargs={"labels": "en", "strategy": "fused"},
                             queue="eros.recall").get(timeout=60)
    assert fused["strategy"] == "fused" and fused["budget"] == 1000
    assert {i["kind"] for i in fused["items"]} <= {"memory", "turn"}
    assert {m["content"] for m in fused["memories"]} == {"Likes jazz", "Lives in Tokyo"}
    assert "Lives in Tokyo" in fused["prompt"]
