"""The broker half of the Celery configuration: Redis by default, RabbitMQ with BROKER_URL."""

from __future__ import annotations

import pytest

from eros.errors import ConfigError
from eros.settings import load_settings
from eros.tasks.app import create_app
from eros.tasks.broker import (
    BROKER_MAX_CONNECTIONS,
    broker_countdown,
    consumer_transport_options,
)

REDIS = "redis://127.0.0.1:6399/0"
AMQP = "amqp://guest:guest@127.0.0.1:5672/eros"


def test_redis_stays_the_default_broker() -> None:
    settings = load_settings(redis_url=REDIS, broker_url=None)
    conf = create_app(settings).conf
    assert conf.broker_url == REDIS and conf.result_backend == REDIS
    assert conf.broker_transport_options == {
        "visibility_timeout": settings.eros_visibility_timeout_secs,
        "max_connections": BROKER_MAX_CONNECTIONS}
    assert {q.exchange.type for q in conf.task_queues} == {"direct"}
    assert all(not q.queue_arguments for q in conf.task_queues)
    assert not settings.broker_is_amqp


def test_broker_url_makes_rabbitmq_the_broker_with_quorum_queues_and_confirms() -> None:
    settings = load_settings(redis_url=REDIS, broker_url=AMQP)
    conf = create_app(settings).conf
    assert conf.broker_url == AMQP
    assert conf.result_backend == REDIS  # results (eros.recall) stay on Redis
    assert conf.broker_transport_options == {"confirm_publish": True}
    queues = {q.name: q for q in conf.task_queues}
    assert set(queues) == {"eros.claim", "eros.classify", "eros.consolidate", "eros.recall"}
    for name, q in queues.items():
        assert q.queue_arguments == {"x-queue-type": "quorum"}, name
        assert q.durable and q.exchange.durable
        # native delayed delivery binds only topic exchanges
        assert q.exchange.type == "topic" and q.exchange.name == name == q.routing_key
    assert conf.task_default_queue_type == "quorum"
    assert conf.task_acks_late and conf.worker_prefetch_multiplier == 1
    assert conf.worker_detect_quorum_queues
    assert settings.broker_is_amqp


def test_rabbitmq_needs_redis_for_results() -> None:
    settings = load_settings(redis_url=None, broker_url=AMQP)
    with pytest.raises(ConfigError, match="REDIS_URL"):
        create_app(settings)


@pytest.mark.parametrize("url", ["http://x", "postgresql://x/y", "kafka://x"])
def test_broker_url_scheme_is_checked_at_start_up(url: str) -> None:
    with pytest.raises(ConfigError, match="BROKER_URL"):
        load_settings(broker_url=url)


def test_broker_url_is_not_in_the_settings_repr() -> None:
    assert "guest:guest" not in repr(load_settings(redis_url=REDIS, broker_url=AMQP))


@pytest.mark.parametrize("given,on_rabbit,on_redis", [
    (None, None, None), (0.2, 1.0, 0.2), (1.0, 1.0, 1.0), (1.4, 2.0, 1.4), (0, 0, 0)])
def test_countdowns_are_whole_seconds_on_rabbitmq(given: float | None, on_rabbit: float | None,
                                                  on_redis: float | None) -> None:
    rabbit = load_settings(redis_url=REDIS, broker_url=AMQP)
    redis = load_settings(redis_url=REDIS, broker_url=None)
    assert broker_countdown(rabbit, given) == on_rabbit
    assert broker_countdown(redis, given) == on_redis


def test_only_a_classify_only_consumer_on_redis_drops_the_unacked_bookkeeping() -> None:
    """The classify queue's messages are backed by claims in PostgreSQL (a lost one is
    re-claimed when its claim goes stale); every other queue keeps the broker's redelivery,
    and RabbitMQ is left as it is."""
    redis_settings = load_settings(redis_url=REDIS, broker_url=None)
    classify = redis_settings.eros_classify_queue
    assert consumer_transport_options(redis_settings, {classify}) == {"ack_emulation": False}
    for consumed in ({classify, redis_settings.eros_claim_queue},
                     {redis_settings.eros_recall_queue}, set()):
        assert consumer_transport_options(redis_settings, consumed) == {}, consumed
    rabbit = load_settings(redis_url=REDIS, broker_url=AMQP)
    assert consumer_transport_options(rabbit, {rabbit.eros_classify_queue}) == {}
