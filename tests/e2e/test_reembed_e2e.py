"""The eros.reembed_memories task through a real worker: it works in slices and re-sends
itself until every memory is on the new model."""

from __future__ import annotations

import re

import pytest
from celery import Celery
from sqlalchemy import Engine, text

from testkit.fakes import FakeVoyageServer
from testkit.workers import wait_until
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e


def test_reembed_task_moves_every_row_in_slices(engine: Engine, start_worker: Starter,
                                                redis_url: str, voyage: FakeVoyageServer
                                                ) -> None:
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
            " embedding_model) SELECT gen_random_uuid(), 'memory ' || g, 'fact',"
            " CAST(array_fill(CAST(1 AS real), ARRAY[512]) AS vector), 'voyage-3.5-lite'"
            " FROM generate_series(1, 120) g"))
    voyage.set_latency(1.0)  # 12 requests of 10: longer than one slice (7 s at stale 20 s)
    worker = start_worker("w1", concurrency=1, REEMBED_BATCH="10")
    client = Celery(broker=redis_url, backend=redis_url)
    client.send_task("eros.reembed_memories", kwargs={"model": "voyage-4-lite"},
                     queue="eros.consolidate")

    def moved() -> int:
        with engine.connect() as conn:
            return int(conn.execute(text(
                "SELECT count(*) FROM engine.companion_memories"
                " WHERE embedding_model = 'voyage-4-lite'")).scalar_one())
    wait_until(lambda: moved() == 120, timeout=120, message="every row re-embedded")
    log = worker.log()
    # the first slice re-sent the task: more than one message was received
    assert len(re.findall(r"eros\.reembed_memories\[[0-9a-f-]+\] received", log)) >= 2
    assert "memory 1" not in log  # no memory text in the worker's log
