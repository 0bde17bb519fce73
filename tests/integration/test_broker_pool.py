"""The broker channel's Redis pool admits a green pool's concurrency: kombu's default caps it at
10 and raises MaxConnectionsError past that instead of waiting, which lost a gevent worker's
acks at 128 in flight (drain bench, issue 17)."""

from __future__ import annotations

from eros.settings import load_settings
from eros.tasks.app import BROKER_MAX_CONNECTIONS, create_app


def test_the_broker_pool_admits_hundreds_of_concurrent_checkouts(redis_url: str) -> None:
    app = create_app(load_settings(redis_url=redis_url))
    assert app.conf.broker_transport_options["max_connections"] == BROKER_MAX_CONNECTIONS
    with app.connection_for_write() as conn:
        pool = conn.default_channel.pool
        held = [pool.get_connection() for _ in range(300)]  # 11th raises at kombu's default
        try:
            assert len(held) == 300
        finally:
            for c in held:
                pool.release(c)
