"""Each task lands in exactly one queue (a shared routing key would deliver it twice)."""

from __future__ import annotations

import redis

from eros.core.names import CLAIM_TASK, CLASSIFY_TASK
from eros.settings import load_settings
from eros.tasks.app import create_app


def test_claim_and_classify_messages_land_in_one_queue_each(redis_url: str) -> None:
    settings = load_settings(redis_url=redis_url)
    app = create_app(settings)
    app.send_task(CLASSIFY_TASK, args=["00000000-0000-0000-0000-000000000001"])
    app.send_task(CLASSIFY_TASK, args=["00000000-0000-0000-0000-000000000002"],
                  queue=settings.eros_classify_queue)
    app.send_task(CLAIM_TASK)
    client = redis.Redis.from_url(settings.redis_client_url())
    assert client.llen(settings.eros_classify_queue) == 2
    assert client.llen(settings.eros_claim_queue) == 1
