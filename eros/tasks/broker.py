"""The broker half of the Celery configuration: Redis (the embedded default) or RabbitMQ.

Which one follows from the settings: BROKER_URL when set (``amqp://…`` for RabbitMQ), else
REDIS_URL. Results, the global rate limiter and beat's heartbeat stay on REDIS_URL either way.

**Redis** (kombu's virtual transport): a message a worker reserved but did not ack is handed
out again after ``visibility_timeout`` (EROS_VISIBILITY_TIMEOUT_SECS), counted from the
reservation; countdowns and ETAs are held unacked by the worker, so the longest backoff must
stay well below it. kombu's Redis channel caps its connection pool (BROKER_MAX_CONNECTIONS).

**RabbitMQ**: each eros queue is a *quorum* queue (replicated, durable, its messages survive a
broker restart), published with publisher confirms (``confirm_publish``: a publish returns only
once the broker has the message, and a refusal raises instead of vanishing). An unacked message
goes back to its queue when the consumer's connection closes (a killed worker, a restart) — no
visibility timeout. Quorum queues have no global QoS: Celery detects them
(``worker_detect_quorum_queues``) and sets a per-consumer prefetch of concurrency × multiplier
(1 here) on *each* queue the worker consumes, and that prefetch is static (Celery cannot raise
it for a held ETA message). So a countdown (a retry's backoff) must not be held by the worker:
Celery's *native delayed delivery* parks it in the broker's ``celery_delayed_*`` queues
instead, which needs topic exchanges — the eros queues use topic exchanges on RabbitMQ for it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from kombu.entity import Exchange, Queue

from eros.settings import Settings

#: the Redis broker's connections per worker process, above any pool's concurrency
BROKER_MAX_CONNECTIONS = 1024
#: RabbitMQ's queue type for the eros queues
QUORUM = {"x-queue-type": "quorum"}


def queue_names(settings: Settings) -> tuple[str, ...]:
    return (settings.eros_claim_queue, settings.eros_classify_queue,
            settings.eros_consolidate_queue, settings.eros_recall_queue)


def task_queues(settings: Settings) -> tuple[Queue, ...]:
    """Each queue with its own exchange and key: sharing the default ones would bind every
    queue to one routing key and deliver each message several times. On RabbitMQ the queues
    are quorum queues behind topic exchanges (native delayed delivery needs topic)."""
    if settings.broker_is_amqp:
        return tuple(Queue(q, Exchange(q, type="topic", durable=True), routing_key=q,
                           durable=True, queue_arguments=dict(QUORUM))
                     for q in queue_names(settings))
    return tuple(Queue(q, Exchange(q, type="direct"), routing_key=q)
                 for q in queue_names(settings))


def broker_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings that depend on the broker."""
    redis_transport = {"visibility_timeout": settings.eros_visibility_timeout_secs}
    common: dict[str, Any] = {
        "broker_url": settings.require_broker_url(),
        "broker_connection_retry_on_startup": True,
        "result_backend": settings.require_redis_url(),
        "result_backend_transport_options": redis_transport,
        "task_queues": task_queues(settings),
    }
    if settings.broker_is_amqp:
        return {
            **common,
            "broker_transport_options": {"confirm_publish": True},
            # any queue declared beyond ours (a route to a new name) is a quorum queue too
            "task_default_queue_type": "quorum",
            "task_create_missing_queue_type": "quorum",
            "worker_detect_quorum_queues": True,
            "broker_native_delayed_delivery_queue_type": "quorum",
        }
    # kombu's Redis channel caps its connection pool at 10 and raises MaxConnectionsError past
    # it instead of waiting: a gevent worker acking 128 tasks at once ran out, lost the acks and
    # terminated the tasks (drain bench). Connections open on demand, so a prefork
    # worker still uses one or two.
    return {**common,
            "broker_transport_options": {**redis_transport,
                                         "max_connections": BROKER_MAX_CONNECTIONS}}


def consumer_transport_options(settings: Settings, consumed: Collection[str]) -> dict[str, Any]:
    """What a worker that consumes ``consumed`` changes in the broker's transport options:
    on Redis, a worker that consumes the classify queue alone keeps no unacked bookkeeping
    in the broker (kombu's ``ack_emulation`` off).

    Why: kombu's Redis ack emulation copies every message it hands out into a hash and a
    sorted set (one MULTI/EXEC round trip on delivery) and removes it on the ack (another),
    so that a message whose worker vanished is handed out again once EROS_VISIBILITY_TIMEOUT_SECS
    has passed. A classify message needs neither: its session is claimed in PostgreSQL, and a
    claim not finished within DREAMING_CLAIM_STALE_SECS (less than half the visibility timeout,
    Settings checks it) is re-claimed and sent again by the claim tick — the rescue that always
    came first. The two round trips were ~7% of a gevent classify worker's CPU in a drain
    (bench/RESULTS.md, issue 34). A warm shutdown still hands the prefetched messages back (kombu
    puts them on the queue again when the channel closes); a killed worker's wait for the
    stale-claim rescue, as before. Any other queue (claim, erasure, recall, consolidation) keeps
    the broker's redelivery; RabbitMQ is unchanged."""
    if settings.broker_is_amqp or set(consumed) != {settings.eros_classify_queue}:
        return {}
    return {"ack_emulation": False}


def broker_countdown(settings: Settings, countdown: float | None) -> float | None:
    """A retry countdown the broker can carry. RabbitMQ's native delayed delivery counts whole
    seconds and Celery (5.7) raises ValueError for 0 < countdown < 1 on a quorum queue
    (``int(countdown)`` becomes 0): round up to the next whole second there."""
    if countdown is None or countdown <= 0 or not settings.broker_is_amqp:
        return countdown
    return float(math.ceil(countdown))
