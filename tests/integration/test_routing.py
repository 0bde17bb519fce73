"""Each task lands in exactly one queue (a shared routing key would deliver it twice)."""

from __future__ import annotations

import redis

from eros.core.names import (
    ALLOW_SENSITIVE_TASK,
    CLAIM_TASK,
    CLASSIFY_TASK,
    FORGET_MEMORY_TASK,
    FORGET_MESSAGE_TASK,
    FORGET_SESSION_TASK,
    FORGET_USER_TASK,
    RELABEL_TASK,
)
from eros.ops.metrics import queue_depths
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
    # the gauge the dashboard and KEDA read counts the same messages
    assert queue_depths(settings) == {"eros.claim": 1, "eros.classify": 2,
                                      "eros.consolidate": 0, "eros.recall": 0}


def test_erasure_tasks_go_to_the_claim_queue_and_keep_a_short_result(redis_url: str) -> None:
    """Short database work, never behind LLM calls; results (counts) expire quickly."""
    settings = load_settings(redis_url=redis_url, eros_result_expires_secs=45)
    app = create_app(settings)
    app.send_task(FORGET_USER_TASK, args=["00000000-0000-0000-0000-000000000001"])
    app.send_task(FORGET_MEMORY_TASK, args=["00000000-0000-0000-0000-000000000002"])
    app.send_task(FORGET_MESSAGE_TASK, args=["00000000-0000-0000-0000-000000000003"])
    app.send_task(FORGET_SESSION_TASK, args=["00000000-0000-0000-0000-000000000004"])
    app.send_task(ALLOW_SENSITIVE_TASK, args=["00000000-0000-0000-0000-000000000005", "all"])
    app.send_task(RELABEL_TASK)  # a scan of every memory: background, with consolidation
    client = redis.Redis.from_url(settings.redis_client_url())
    assert client.llen(settings.eros_claim_queue) == 5
    assert client.llen(settings.eros_consolidate_queue) == 1
    assert client.llen(settings.eros_classify_queue) == 0
    assert app.conf.result_expires == 45
