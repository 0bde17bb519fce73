"""The Celery application factory: broker, queues, routing, delivery guarantees, beat.

Kept apart from ``eros.worker`` (which builds the app from the environment at import, as
``celery -A eros.worker`` needs) so the configuration can be built from any Settings. The
settings travel with the app (``app.eros_settings``): every task reads them from its app.
"""

from __future__ import annotations

from celery import Celery

from eros.core.green import green_process
from eros.core.names import (
    ALLOW_SENSITIVE_TASK,
    CLAIM_TASK,
    CLASSIFY_TASK,
    CLUSTER_TASK,
    CONSOLIDATE_TASK,
    FIND_CONSOLIDATION_TASK,
    FORGET_MEMORY_TASK,
    FORGET_MESSAGE_TASK,
    FORGET_SESSION_TASK,
    FORGET_USER_TASK,
    RECALL_TASK,
    REEMBED_TASK,
    RELABEL_TASK,
    RETENTION_TASK,
    SCREEN_UNSCREENED_TASK,
)
from eros.settings import HARD_LIMIT_FRACTION, SOFT_LIMIT_FRACTION, Settings
from eros.tasks.broker import BROKER_MAX_CONNECTIONS, broker_config
from eros.tasks.schedule import beat_schedule

__all__ = ["BROKER_MAX_CONNECTIONS", "create_app"]


def create_app(settings: Settings) -> Celery:
    """The Celery app, configured for late acks and at-least-once delivery with idempotent
    tasks (the claim token and the idempotency key make a second delivery write nothing).
    The broker (Redis or RabbitMQ) is configured by :mod:`eros.tasks.broker`."""
    app = Celery("eros")
    app.eros_settings = settings
    stale = settings.dreaming_claim_stale_secs
    app.conf.update(
        **broker_config(settings),
        # only eros.recall keeps a result (for callers that wait on it); the pipeline's tasks
        # record their outcomes in PostgreSQL instead
        task_ignore_result=True,
        result_expires=settings.eros_result_expires_secs,
        # on a gevent worker a per-thread backend is per-greenlet, and the pool runs every
        # task in a new greenlet: the tracer built a Redis result backend (URL parsing, a
        # connection pool, a result consumer) for each task, ignored results included.
        # Its Redis client is safe to share.
        result_backend_thread_safe=green_process(),
        # a recall message carries the query text: it expires if not run in time (every sender
        # using this app gets the expiry; others pass expires= themselves, docs/operations.md)
        task_annotations={RECALL_TASK: {"expires": settings.eros_recall_message_expires_secs}},
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=False,  # the stale-claim rescue re-runs it instead
        # A gevent worker runs Celery's blocking loop: while its prefetch is full it waits up
        # to 2 s on the broker with no fetch registered, so with a prefetch of exactly its
        # concurrency every freed slot idled until that wait ended (a third of 128 slots in
        # a drain). With 2 it holds the next message while the pool is full (the pool's spawn
        # blocks on it), and a freed slot starts at once. Prefork and threads use the event
        # loop, which fetches as soon as an ack frees the prefetch: 1 there.
        worker_prefetch_multiplier=2 if green_process() else 1,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        task_default_queue=settings.eros_classify_queue,
        task_routes={CLAIM_TASK: {"queue": settings.eros_claim_queue},
                     CLASSIFY_TASK: {"queue": settings.eros_classify_queue},
                     # the finder's cost follows the consolidation backlog: off the claim
                     # queue, with the passes it enqueues
                     FIND_CONSOLIDATION_TASK: {"queue": settings.eros_consolidate_queue},
                     CONSOLIDATE_TASK: {"queue": settings.eros_consolidate_queue},
                     # background work like consolidation (beat sends the finder run to the
                     # claim queue, so a backlog here never delays it)
                     CLUSTER_TASK: {"queue": settings.eros_consolidate_queue},
                     REEMBED_TASK: {"queue": settings.eros_consolidate_queue},
                     RETENTION_TASK: {"queue": settings.eros_consolidate_queue},
                     SCREEN_UNSCREENED_TASK: {"queue": settings.eros_consolidate_queue},
                     # a caller waits on recall: never behind slow LLM calls
                     RECALL_TASK: {"queue": settings.eros_recall_queue},
                     # erasure is short database work: never behind LLM calls
                     FORGET_USER_TASK: {"queue": settings.eros_claim_queue},
                     FORGET_MEMORY_TASK: {"queue": settings.eros_claim_queue},
                     FORGET_MESSAGE_TASK: {"queue": settings.eros_claim_queue},
                     FORGET_SESSION_TASK: {"queue": settings.eros_claim_queue},
                     ALLOW_SENSITIVE_TASK: {"queue": settings.eros_claim_queue},
                     # a scan of every memory: background work
                     RELABEL_TASK: {"queue": settings.eros_consolidate_queue}},
        # The hard limit kills an attempt before its claim can go stale and be re-taken.
        task_soft_time_limit=int(stale * SOFT_LIMIT_FRACTION),
        task_time_limit=int(stale * HARD_LIMIT_FRACTION),
        beat_schedule={} if settings.dreaming_disabled else beat_schedule(settings),
        timezone="UTC",
        worker_hijack_root_logger=True,
        # beat records a heartbeat each loop for `eros health --beat`
        beat_scheduler="eros.tasks.beat:HeartbeatScheduler",
        beat_max_loop_interval=_beat_loop_secs(settings),
    )
    return app


def _beat_loop_secs(settings: Settings) -> float:
    """Beat wakes at least this often: for its Redis heartbeat, and every
    RECALL_REPLICA_HEARTBEAT_SECS for the replica heartbeat when a replica is configured."""
    loop = float(min(30, settings.dreaming_tick_secs))
    if settings.replica_heartbeat_on:
        loop = min(loop, settings.recall_replica_heartbeat_secs)
    return loop
