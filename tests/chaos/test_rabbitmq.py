"""The chaos drain with RabbitMQ as the broker (BROKER_URL=amqp://…, quorum queues, publisher
confirms), against the machine's RabbitMQ in a vhost of its own: 1,000 sessions, RabbitMQ
restarted mid-drain (``stop_app``/``start_app``) and then a worker SIGKILLed. Every session
must be classified exactly once — none dead-lettered, no duplicate memory, no claim stuck.
Skipped, with the reason, where 127.0.0.1:5672 does not answer."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from eros.cli._common import check_brokers
from eros.core.names import CLAIM_TASK, CLASSIFY_TASK
from eros.ops import health
from eros.ops.metrics import queue_depths
from eros.settings import load_settings
from eros.tasks.app import create_app
from testkit.chaos.harness import Servers, run
from testkit.chaos.scenarios import broker_restart_sigkill
from testkit.data import add_session, mem_line
from testkit.fakes import FakeLLMServer, FakeVoyageServer, Fault
from testkit.rabbit import RabbitVhost, unavailable_reason
from testkit.workers import BeatProcess, WorkerProcess, wait_until, worker_env
from tests.chaos.test_chaos import RESULTS

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

EROS_QUEUES = ("eros.claim", "eros.classify", "eros.consolidate", "eros.recall")


def test_rabbitmq_restart_and_sigkill_classify_every_session_once(servers: Servers) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    rabbit = RabbitVhost("eros-chaos")
    try:
        # 2,000 sessions: each rabbitmqctl call boots an Erlang VM, and on a slow machine the
        # restart took most of a 1,000-session drain
        result = run("rabbitmq-restart-sigkill", broker_restart_sigkill, servers,
                     sessions=2000, workers=3, rabbit=rabbit)
        queues = rabbit.queues()
    finally:
        rabbit.close()
    RESULTS.append(result)
    # the disruptions really happened, against RabbitMQ
    assert any(e.startswith("rabbitmq restarted") for e in result.events), result
    assert any(e.startswith("SIGKILL") for e in result.events), result
    # the eros queues were declared as quorum queues (they survive the restart)
    assert {q: queues[q]["type"] for q in EROS_QUEUES if q in queues} == {
        q: "quorum" for q in EROS_QUEUES if q in queues}, queues
    assert "eros.classify" in queues and "eros.claim" in queues, queues
    # every session classified exactly once: none lost, none dead-lettered, nothing twice
    assert result.classified == result.sessions, result
    assert result.dead_lettered == 0, result
    assert result.lost == result.duplicates == result.wrong == result.twice == 0, result
    assert result.stuck == 0, result


def test_a_sub_second_retry_countdown_goes_through_rabbitmq_delayed_delivery(
        engine: Engine, db_url: str, redis_url: str, llm: FakeLLMServer,
        voyage: FakeVoyageServer, tmp_path: Path) -> None:
    """A retry's countdown is parked in RabbitMQ's delayed-delivery queues (never held by the
    worker, whose quorum-queue prefetch is static), in whole seconds: Celery raises ValueError
    for 0 < countdown < 1 there, which would have failed the task and stranded its claim. On a
    gevent worker, the classify kind of the Kubernetes manifests."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with engine.begin() as conn:
        sid = add_session(conn, [mem_line("fact", 0.5, "rabbit retry memory")])
    llm.script([Fault.status(503)])  # the first attempt fails: one retry with a countdown
    rabbit = RabbitVhost("eros-retry")
    env = worker_env(db_url, redis_url, llm.url, voyage.url, BROKER_URL=rabbit.url,
                     DREAMING_TICK_SECS="1", PROVIDER_MAX_RETRIES="0",
                     DREAMING_RETRY_BACKOFF_SECS="0.2", DREAMING_RETRY_BACKOFF_MAX_SECS="0.5",
                     DREAMING_CLAIM_STALE_SECS="120", LLM_TIMEOUT_SECS="3",
                     EMBEDDING_TIMEOUT_SECS="2")
    # the classify worker kind of deploy/kubernetes/classify.yaml: gevent over py-amqp
    worker = WorkerProcess(env, name="rw1", concurrency=16, pool="gevent", log_dir=tmp_path)
    beat = None
    try:
        worker.wait_ready(timeout=90)
        beat = BeatProcess(env, log_dir=tmp_path)

        def runs() -> list[str]:
            with engine.connect() as conn:
                return list(conn.execute(text(
                    "SELECT outcome FROM engine.classification_runs WHERE session_id = :s"
                    " ORDER BY attempt, id"), {"s": sid}).scalars())

        wait_until(lambda: "memories" in runs(), timeout=60, message="the retried session")
        queues = rabbit.queues()
        # the liveness probe of the manifests: Celery's remote-control ping, through RabbitMQ
        probe = subprocess.run([sys.executable, "-m", "eros", "health", "--json", "--worker",
                                f"rw1@{socket.gethostname()}"], env=env, capture_output=True,
                               text=True, timeout=120)
    finally:
        if beat is not None:
            beat.stop()
        worker.stop()
        rabbit.close()
    assert runs() == ["retrying", "memories"]
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert {c["name"]: c["ok"] for c in json.loads(probe.stdout)["checks"]} == {
        "database": True, "broker": True, "worker": True}
    assert "countdown must be a positive number" not in worker.log()
    # the retry travelled through the broker's delayed-delivery queues (quorum as well)
    assert queues.get("celery_delayed_0", {}).get("type") == "quorum", queues


def test_the_machines_rabbitmq_passes_health_and_reports_queue_depths(redis_url: str) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    rabbit = RabbitVhost("eros-health")
    try:
        settings = load_settings(redis_url=redis_url, broker_url=rabbit.url)
        check = health.broker(settings)
        check_brokers(settings)
        before = queue_depths(settings)  # no queue declared yet: zeros, not an error
        app = create_app(settings)
        for n in range(3):
            app.send_task(CLASSIFY_TASK, args=[f"00000000-0000-0000-0000-00000000000{n}"])
        app.send_task(CLAIM_TASK)
        after = queue_depths(settings)
        queues = rabbit.queues()
    finally:
        rabbit.close()
    assert check.ok, check.detail
    assert rabbit.vhost in check.detail and "guest:guest" not in check.detail
    assert before == dict.fromkeys(EROS_QUEUES, 0)
    # published with confirms, so counted at once; the gauge reads the ready messages
    assert after == {"eros.claim": 1, "eros.classify": 3, "eros.consolidate": 0,
                     "eros.recall": 0}, after
    assert queues["eros.classify"]["type"] == "quorum"
