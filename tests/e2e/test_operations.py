"""Operations with real processes: backpressure, global rate limit, metrics, logs, health."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, text

from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer
from testkit.redis_process import free_port
from testkit.workers import BeatProcess, wait_until
from tests.e2e.conftest import Starter

pytestmark = pytest.mark.e2e


def _seed(engine: Engine, count: int, tag: str) -> list[str]:
    contents = []
    with engine.begin() as conn:
        for n in range(count):
            content = f"{tag} secret memory {n}"
            contents.append(content)
            add_session(conn, [mem_line("fact", 0.5, content)])
    return contents


def _unfinished(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                     " WHERE classified_at IS NULL")).scalar_one())


def test_claim_tops_up_to_the_in_flight_ceiling(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    _seed(engine, 30, "bp")
    llm.set_latency(0.4)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            with engine.connect() as conn:
                claimed = conn.execute(text("SELECT count(*) FROM engine.chat_sessions"
                                            " WHERE claim_token IS NOT NULL")).scalar_one()
            peak = max(peak, claimed)
            done.wait(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        start_worker("w1", concurrency=6, DREAMING_MAX_IN_FLIGHT="4")
        start_beat(DREAMING_MAX_IN_FLIGHT="4")
        wait_until(lambda: _unfinished(engine) == 0, timeout=120, message="drain")
    finally:
        done.set()
        sampler.join()
    assert 1 <= peak <= 4


def test_global_rate_limit_spaces_llm_calls_without_spending_attempts(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        llm: FakeLLMServer) -> None:
    _seed(engine, 10, "rl")
    limits = {"LLM_REQUESTS_PER_MINUTE": "120", "RATE_LIMIT_BURST_SECS": "1",
              "DREAMING_MAX_ATTEMPTS": "2"}  # bucket of 2, 2 per second, shared
    start_worker("w1", concurrency=4, **limits)
    start_worker("w2", concurrency=4, **limits)
    start_beat(**limits)
    wait_until(lambda: _unfinished(engine) == 0, timeout=120, message="rate-limited drain")
    times = sorted(r.received_at for r in llm.requests)
    assert len(times) == 10
    assert times[-1] - times[0] >= 3.0  # (10 - 2 burst) / 2 per second = 4 s, minus jitter
    for i in range(len(times)):
        in_window = [t for t in times if times[i] <= t < times[i] + 1.0]
        assert len(in_window) <= 4
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT outcome, count(*) FROM engine.chat_sessions"
                                 " GROUP BY outcome")).all()
    assert dict(rows) == {"memories": 10}  # nobody was dead-lettered by waiting


def test_metrics_json_logs_and_health_probes(
        engine: Engine, start_worker: Starter, start_beat: Callable[..., BeatProcess],
        stack_env: dict[str, str]) -> None:
    contents = _seed(engine, 5, "obs")
    port = free_port()
    worker = start_worker("w1", concurrency=2, EROS_METRICS_PORT=str(port))
    start_beat()
    wait_until(lambda: _unfinished(engine) == 0, timeout=60, message="drain")

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    wait_until(lambda: 'eros_classify_outcomes_total{outcome="memories"} 5.0' in scrape(),
               timeout=20, message="outcome counter")
    body = scrape()
    for name in ("eros_backlog_sessions 0.0", "eros_in_flight_sessions 0.0",
                 "eros_llm_latency_seconds_count", "eros_embedding_latency_seconds_count",
                 'eros_tokens_total{kind="prompt"}', "eros_claimed_sessions_total 5.0",
                 "eros_memories_written_total 5.0", "eros_dead_lettered_sessions 0.0"):
        assert name in body, name

    events = [json.loads(line) for line in worker.log().splitlines() if line.startswith("{")]
    classified = [e for e in events if e["event"].startswith("session classified")]
    assert len(classified) == 5
    assert all(e.get("session_id") and e.get("task_id") for e in classified)
    log_text = worker.log()
    assert not any(c in log_text for c in contents)  # no message contents in the logs

    env = {**stack_env}
    probe = subprocess.run([sys.executable, "-m", "eros", "health", "--worker", "any",
                            "--beat", "--json"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    report = json.loads(probe.stdout)
    assert report["ok"] and {c["name"] for c in report["checks"]} == {
        "database", "broker", "worker", "beat"}
    dead = subprocess.run([sys.executable, "-m", "eros", "health", "--worker",
                           "nobody@nowhere"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert dead.returncode == 1 and "FAIL worker" in dead.stdout
