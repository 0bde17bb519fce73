"""Health and start-up checks with BROKER_URL: the RabbitMQ broker is checked beside the Redis
that keeps results, failures name BROKER_URL, and no password is printed. (The check against
the machine's RabbitMQ is in tests/chaos/test_rabbitmq.py: the chaos tier, which runs beside
this one, restarts that server.)"""

from __future__ import annotations

import socket

import pytest

from eros.cli._common import check_broker, check_brokers
from eros.errors import ServiceUnavailable
from eros.ops import health
from eros.settings import load_settings


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_rabbitmq_fails_health_and_start_up_naming_broker_url(
        redis_url: str) -> None:
    dead = f"amqp://eros:s3cret@127.0.0.1:{_closed_port()}/eros"
    settings = load_settings(redis_url=redis_url, broker_url=dead)
    check = health.broker(settings)
    assert not check.ok and "127.0.0.1" in check.detail and "s3cret" not in check.detail
    with pytest.raises(ServiceUnavailable, match="BROKER_URL") as caught:
        check_brokers(settings)
    assert "s3cret" not in str(caught.value)
    with pytest.raises(ServiceUnavailable, match="BROKER_URL"):
        check_broker(dead, timeout=1, variable="BROKER_URL")
