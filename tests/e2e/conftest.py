"""End-to-end fixtures: fake provider APIs, real worker and beat processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
