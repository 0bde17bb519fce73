"""Real beat and worker processes: the finder enqueues a due user, a transient model error is
retried with backoff, the pass commits once, and later ticks find nothing more to do."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text

from testkit.fakes import FakeLLMServer, Fault, Reply
from testkit.workers import BeatProcess, wait_until
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e


def _vector(cos: float) -> str:
    vec = [0.0] * 512
    vec[0], vec[1] = cos, (1 - cos * cos) ** 0.5
    return str(vec)


def _state(engine: Engine, user: uuid.UUID) -> Any:
    with engine.connect() as conn:
        return conn.execute(text("SELECT * FROM engine.consolidation_state WHERE user_id = :u"),
                            {"u": user}).first()


def test_beat_finds_the_user_and_a_transient_error_is_retried(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    user, now = uuid.uuid4(), datetime.now(UTC)
    with engine.begin() as conn:
        for content, cos, days in (("Lives in Shanghai", 1.0, 400), ("Moved to Tokyo", 0.9, 7)):
            conn.execute(text(
                "INSERT INTO engine.companion_memories (user_id, content, category, embedding,"
                " created_at) VALUES (:u, :c, 'fact', :e, :t)"),
                {"u": user, "c": content, "e": _vector(cos), "t": now - timedelta(days=days)})
    answer = {"clusters": [{"cluster": 1, "canonical": {"content": "Moved to Tokyo",
                                                        "category": "fact", "importance": 0.8},
                            "duplicates": [2], "superseded": [1]}]}
    llm.set_responder(lambda _: Reply(json.dumps(answer)))
    llm.script([Fault.status(503)])
    start_worker("w1", concurrency=2, CONSOLIDATION_INTERVAL_SECS="1")
    start_beat(CONSOLIDATION_INTERVAL_SECS="1")
    wait_until(lambda: (s := _state(engine, user)) is not None
               and s.last_outcome == "consolidated", timeout=60, message="consolidation")
    state = _state(engine, user)
    assert (state.attempts, state.superseded_total, state.claimed_at) == (0, 1, None)
    with engine.connect() as conn:
        rows = dict(conn.execute(text("SELECT content, status FROM engine.companion_memories"
                                      " WHERE user_id = :u"), {"u": user}).all())
    assert rows == {"Lives in Shanghai": "superseded", "Moved to Tokyo": "current"}
    time.sleep(3)  # three more finder ticks: nothing new, so nothing enqueued
    assert llm.request_count == 2  # the 503 and the retry that succeeded
