"""End-to-end fixtures: fake provider APIs, real worker and beat processes."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text

from eros.providers.offline.hashing import hash_embedding
from eros.recall.db import turns_sql
from testkit.data import add_session
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.workers import BeatProcess, WorkerProcess, worker_env


@pytest.fixture
def stack_env(db_url: str, redis_url: str, llm: FakeLLMServer,
              voyage: FakeVoyageServer) -> dict[str, str]:
    """Short windows so stale-claim rescue and retries happen within a test's time."""
    return worker_env(db_url, redis_url, llm.url, voyage.url,
                      DREAMING_TICK_SECS="1", DREAMING_BATCH="50",
                      DREAMING_CLAIM_STALE_SECS="20", LLM_TIMEOUT_SECS="3",
                      EMBEDDING_TIMEOUT_SECS="2", PROVIDER_MAX_RETRIES="0",
                      DREAMING_RETRY_BACKOFF_SECS="0.5", DREAMING_RETRY_BACKOFF_MAX_SECS="2",
                      EROS_VISIBILITY_TIMEOUT_SECS="90")


Starter = Callable[..., WorkerProcess]


@pytest.fixture
def start_worker(stack_env: dict[str, str], tmp_path: Path) -> Iterator[Starter]:
    started: list[WorkerProcess] = []

    def start(name: str = "w1", concurrency: int = 4, loglevel: str = "INFO",
              **env: str) -> WorkerProcess:
        worker = WorkerProcess({**stack_env, **env}, name=name, concurrency=concurrency,
                               log_dir=tmp_path, loglevel=loglevel)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def start_beat(stack_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., BeatProcess]]:
    started: list[BeatProcess] = []

    def start(name: str = "beat", loglevel: str = "INFO", **env: str) -> BeatProcess:
        beat = BeatProcess({**stack_env, **env}, log_dir=tmp_path, name=name, loglevel=loglevel)
        started.append(beat)
        return beat

    yield start
    for beat in started:
        beat.stop()


def session_with_turns(conn: Connection, said: Sequence[str],
                       user: uuid.UUID) -> tuple[uuid.UUID, list[Any]]:
    """A session of the user's turns ``said`` (the last a minute ago), each indexed as a turn
    (the 512-d hash embedding, model ``any``): the session's id and its turns' rows (seq,
    sent_at), in order."""
    sid = add_session(conn, [("user", s) for s in said], user_id=user,
                      idle_for=timedelta(minutes=1))
    rows = conn.execute(text("SELECT seq, sent_at FROM engine.chat_messages"
                             " WHERE session_id = :s ORDER BY seq"), {"s": sid}).all()
    turns_sql.write_turns(conn, [turns_sql.TurnRow(
        r.seq, sid, user, None, r.sent_at, hash_embedding(s, 512), "any")
        for r, s in zip(rows, said, strict=True)])
    return sid, list(rows)
