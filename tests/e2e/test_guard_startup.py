"""A cold fleet on a fresh database (issue 30): the guard's meaning model is trained by exactly
one starting worker, before it consumes, never inside a task; the sessions drain with one
embedding call each."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from eros.guard.core.guard_meaning import load_bank
from eros.guard.services.guard_training import BANK_BATCH
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer
from testkit.workers import BeatProcess, WorkerProcess, wait_until

pytestmark = pytest.mark.e2e


def test_two_workers_starting_at_once_train_once_and_the_drain_pays_one_call_per_session(
        engine: Engine, stack_env: dict[str, str], tmp_path: Path, voyage: FakeVoyageServer,
        llm: FakeLLMServer, start_beat: Callable[..., BeatProcess]) -> None:
    with engine.begin() as conn:  # a fresh deployment: no model for the live embedder yet
        conn.execute(text("DELETE FROM engine.guard_classifiers"))
        sessions = [add_session(conn, [mem_line("fact", 0.5, f"Plays the cello, take {n}")])
                    for n in range(4)]
    workers = [WorkerProcess(stack_env, name=f"g{n}", concurrency=1, log_dir=tmp_path)
               for n in range(2)]
    try:
        for worker in workers:
            worker.wait_ready(timeout=120)
        training = math.ceil(len(load_bank().exemplars) / BANK_BATCH)
        assert voyage.request_count == training  # one worker trained; the other found it
        logs = [w.log() for w in workers]
        assert sum(log.count("meaning layer trained") for log in logs) == 1
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM engine.guard_classifiers"
                                     " WHERE embedding_tokens > 0")).scalar_one() == 1
        start_beat()

        def drained() -> bool:
            with engine.connect() as conn:
                return conn.execute(text(
                    "SELECT count(*) FROM engine.chat_sessions WHERE classified_at IS NULL"
                )).scalar_one() == 0
        wait_until(drained, timeout=120, message="drain")
        assert voyage.request_count == training + len(sessions)
        with engine.connect() as conn:
            statuses = conn.execute(text("SELECT status, count(*) FROM"
                                         " engine.companion_memories GROUP BY status")).all()
        assert dict(statuses) == {"current": len(sessions)}
        assert all("Plays the cello" not in log for log in (w.log() for w in workers))
    finally:
        for worker in workers:
            worker.stop()
