"""Prometheus metrics of the worker system.

Prefork pool processes update counters and histograms in prometheus-client's multiprocess mode
(files in ``PROMETHEUS_MULTIPROC_DIR``, a directory the worker prepares when it starts); the
worker's main process serves them, together with gauges read from the database at scrape time
(backlog, in flight, dead letters), on ``EROS_METRICS_PORT``. Importing this module has no
side effect: the metric objects are built on first use (:func:`registry`), each declared
with its type in :class:`Registry`. The broker's queue depths
(``eros_queue_messages``) are read from Redis or RabbitMQ at scrape time as well.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import Counter, Histogram

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 60, 120)
#: recall runs on every chat turn: milliseconds matter
RECALL_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


def prepare_multiprocess_dir() -> None:
    """Choose prometheus-client's multiprocess mode for this process and its children: it
    must happen before prometheus_client is first imported, so a worker calls it at start-up
    (never at import) and every pool process forked later inherits the directory."""
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="eros-metrics-")


@dataclass(frozen=True)
class Registry:
    """Every metric of the worker system, declared once with its type."""

    CLAIMED: Counter
    CLAIM_TICKS: Counter
    CLAIM_BATCH: Histogram
    OUTCOMES: Counter
    RETRIES: Counter
    DEAD_LETTERS: Counter
    THROTTLED: Counter
    LLM_LATENCY: Histogram
    EMBED_LATENCY: Histogram
    TOKENS: Counter
    COST: Counter
    MEMORIES: Counter
    SENSITIVE: Counter
    WITHHELD: Counter
    GUARD_DROPPED: Counter
    TURNS_INDEXED: Counter
    CONSOLIDATION_RUNS: Counter
    CONSOLIDATED: Counter
    ERASURES: Counter
    ERASURES_FAILED: Counter
    TASKS_REJECTED: Counter
    RELABEL_UNREADABLE: Counter
    RETENTION_DELETED: Counter
    NEAR_DUP_SHARE: Histogram
    REPLICA_FALLBACKS: Counter
    RECALL_LATENCY: Histogram


_built: list[Registry] = []
_building = threading.Lock()


def registry() -> Registry:
    """The metric objects, built once on first use (importing prometheus_client then, after
    the worker has chosen its mode); the lock makes the first use safe under the threads and
    gevent pools, where two tasks may start at the same moment."""
    if not _built:
        with _building:
            if not _built:
                _built.append(_build())
    return _built[0]


def _build() -> Registry:
    from prometheus_client import Counter, Histogram

    return Registry(
        CLAIMED=Counter("eros_claimed_sessions", "Sessions claimed by claim ticks"),
        CLAIM_TICKS=Counter("eros_claim_ticks", "Claim ticks run", ["result"]),
        CLAIM_BATCH=Histogram("eros_claimed_per_tick", "Sessions claimed per tick",
                              buckets=(0, 1, 5, 10, 25, 50, 100, 250, 500, 1000)),
        OUTCOMES=Counter("eros_classify_outcomes", "Classification attempts by outcome",
                         ["outcome"]),
        RETRIES=Counter("eros_retries", "Transient failures retried", ["provider"]),
        DEAD_LETTERS=Counter("eros_dead_letters", "Sessions dead-lettered"),
        THROTTLED=Counter("eros_throttled", "Tasks rescheduled by a global provider limit",
                          ["resource"]),
        LLM_LATENCY=Histogram("eros_llm_latency_seconds", "LLM call latency",
                              buckets=LATENCY_BUCKETS),
        EMBED_LATENCY=Histogram("eros_embedding_latency_seconds", "Embedding call latency",
                                buckets=LATENCY_BUCKETS),
        TOKENS=Counter("eros_tokens", "Tokens used", ["kind"]),
        COST=Counter("eros_cost_usd", "Estimated provider cost in US dollars"),
        MEMORIES=Counter("eros_memories_written", "Memories written"),
        SENSITIVE=Counter("eros_sensitive_memories_written",
                          "Memories written with a special-category label, by label",
                          ["label"]),
        WITHHELD=Counter("eros_sensitive_withheld",
                         "Candidates dropped at extraction: their label is withheld by "
                         "the user (forget --sensitive), by label", ["label"]),
        GUARD_DROPPED=Counter("eros_guard_dropped",
                              "Memories dropped by the memory guard (docs/security.md)",
                              ["stage", "reason"]),
        TURNS_INDEXED=Counter("eros_turns_indexed",
                              "User turns written to the turns recall layer, by "
                              "what wrote them (classify, backfill) and status", ["source",
                                                                                "status"]),
        CONSOLIDATION_RUNS=Counter("eros_consolidation_runs",
                                   "Consolidation passes by outcome", ["outcome"]),
        CONSOLIDATED=Counter("eros_consolidated_memories", "Memories merged or superseded",
                             ["action"]),
        ERASURES=Counter("eros_erasures", "Erasures done (engine.erasure_log)", ["scope"]),
        ERASURES_FAILED=Counter("eros_erasures_failed",
                                "Erasures that failed for good (status 'failed' in"
                                " engine.erasure_log)", ["scope"]),
        TASKS_REJECTED=Counter("eros_tasks_rejected",
                               "Task messages refused for their arguments (dead-lettered in"
                               " engine.rejected_tasks)", ["task"]),
        RELABEL_UNREADABLE=Counter("eros_relabel_unreadable",
                                   "Memories the model labeller left unlabelled: their"
                                   " entry in its reply could not be read"),
        RETENTION_DELETED=Counter("eros_retention_deleted",
                                  "Rows deleted by the retention task", ["table"]),
        NEAR_DUP_SHARE=Histogram("eros_near_duplicate_share",
                                 "Near-duplicate share of a consolidated user's memories",
                                 ["when"], buckets=(0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1)),
        REPLICA_FALLBACKS=Counter("eros_recall_replica_fallbacks",
                                  "Recalls that read the primary although a read replica "
                                  "is configured (lag, down, conflict)", ["reason"]),
        RECALL_LATENCY=Histogram("eros_recall_latency_seconds",
                                 "Recall latency (database search and ranking) by plan",
                                 ["plan", "strategy"], buckets=RECALL_BUCKETS),
    )


def all_metrics() -> list[Any]:
    """Every metric object this module exports (building them if needed)."""
    built = registry()
    return [getattr(built, name) for name in built.__dataclass_fields__]


def record_outcome(outcome: str, *, memories: int = 0, prompt_tokens: int = 0,
                   completion_tokens: int = 0, embedding_tokens: int = 0,
                   cost: float = 0.0) -> None:
    m = registry()
    m.OUTCOMES.labels(outcome).inc()
    if memories:
        m.MEMORIES.inc(memories)
    for kind, value in (("prompt", prompt_tokens), ("completion", completion_tokens),
                        ("embedding", embedding_tokens)):
        if value:
            m.TOKENS.labels(kind).inc(value)
    if cost:
        m.COST.inc(cost)


def record_spend(*, embedding_tokens: int = 0, prompt_tokens: int = 0,
                 completion_tokens: int = 0, cost: float = 0.0) -> None:
    """Provider spend outside a classification (the guard's training, the model relabel):
    tokens and cost only."""
    m = registry()
    for kind, value in (("prompt", prompt_tokens), ("completion", completion_tokens),
                        ("embedding", embedding_tokens)):
        if value:
            m.TOKENS.labels(kind).inc(value)
    if cost:
        m.COST.inc(cost)


def record_relabel_unreadable(count: int) -> None:
    """Memories the model labeller could not read a label for (never their text)."""
    if count:
        registry().RELABEL_UNREADABLE.inc(count)


def record_sensitive(labels: dict[str, int]) -> None:
    """Count memories written with a special-category label, by label (never their text)."""
    for label, count in labels.items():
        if count:
            registry().SENSITIVE.labels(label).inc(count)


def record_withheld(labels: dict[str, int]) -> None:
    """Count candidates dropped because the user withheld their label (never their text)."""
    for label, count in labels.items():
        if count:
            registry().WITHHELD.labels(label).inc(count)


def record_guard_drops(stage: str, reasons: dict[str, int]) -> None:
    """Count the guard's drops by stage (``extract``/``consolidate``) and reason code."""
    for reason, count in reasons.items():
        if count:
            registry().GUARD_DROPPED.labels(stage, reason).inc(count)


def record_turns_indexed(source: str, statuses: dict[str, int]) -> None:
    """Count turn rows written (a re-run's re-indexed turns count again), by status."""
    for status, count in statuses.items():
        if count:
            registry().TURNS_INDEXED.labels(source, status).inc(count)


def record_replica_fallback(reason: str) -> None:
    """A recall read the primary instead of DATABASE_REPLICA_URL, and why."""
    registry().REPLICA_FALLBACKS.labels(reason).inc()


def record_recall(plan: str, strategy: str, seconds: float) -> None:
    """One recall's latency, labelled by the search plan and the ranking strategy."""
    registry().RECALL_LATENCY.labels(plan, strategy).observe(seconds)


def record_erasure(scope: str, *, failed: bool = False) -> None:
    """Count an erasure that ended (``eros_erasures_total`` / ``eros_erasures_failed_total``)."""
    (registry().ERASURES_FAILED if failed else registry().ERASURES).labels(scope).inc()


def record_retention(deleted: dict[str, int]) -> None:
    """Count what a retention pass deleted, by table."""
    for table, count in deleted.items():
        if count:
            registry().RETENTION_DELETED.labels(table).inc(count)


class BrokerGauges:
    """Messages ready in each eros queue, read from the broker at scrape time: ``LLEN`` on
    Redis, a passive ``queue.declare`` on RabbitMQ (ready messages; unacked ones are the
    workers' and not counted by either)."""

    def __init__(self, settings: Any) -> None:
        self._settings = settings

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            depths = queue_depths(self._settings)
        except Exception as err:  # a scrape must not crash the worker
            log.warning("metrics: broker queue depths unavailable: %s", type(err).__name__)
            return
        family = GaugeMetricFamily("eros_queue_messages",
                                   "Messages waiting in an eros queue of the broker",
                                   labels=["queue"])
        for queue, depth in depths.items():
            family.add_metric([queue], depth)
        yield family


def queue_depths(settings: Any) -> dict[str, int]:
    """Ready messages per eros queue (a queue not declared yet counts 0)."""
    queues = (settings.eros_claim_queue, settings.eros_classify_queue,
              settings.eros_consolidate_queue, settings.eros_recall_queue)
    if settings.broker_is_amqp:
        from amqp.exceptions import NotFound  # type: ignore[import-untyped]
        from kombu.connection import Connection

        depths: dict[str, int] = {}
        with Connection(settings.broker_url, connect_timeout=3) as conn:  # type: ignore[no-untyped-call]
            for queue in queues:
                channel = conn.channel()
                try:
                    depths[queue] = int(channel.queue_declare(queue, passive=True).message_count)
                except NotFound:  # the broker closes the channel on a missing queue
                    depths[queue] = 0
                finally:
                    channel.close()
        return depths
    import redis

    client = redis.Redis.from_url(settings.redis_client_url() if not settings.broker_url
                                  else settings.broker_url.replace("redis+socket://", "unix://"),
                                  socket_timeout=3, socket_connect_timeout=3)
    try:
        return {queue: int(client.llen(queue)) for queue in queues}
    finally:
        client.close()


def serve(port: int, *collectors: Any) -> None:
    """Serve this host's worker metrics (all pool processes) on ``port``, with ``collectors``
    read at scrape time (the features' gauges: the ops layer knows none of them)."""
    prepare_multiprocess_dir()
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    for collector in collectors:
        registry.register(collector)
    start_http_server(port, registry=registry)
    log.info("metrics on :%d/metrics", port)


def process_exited(pid: int) -> None:
    """Forget a dead pool process's live gauges (counters stay summed)."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
