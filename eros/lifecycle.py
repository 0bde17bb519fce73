"""The worker's life cycle (Celery signals): start-up checks, logging, per-process resources
and metrics. Connected when :mod:`eros.worker` imports this module."""

from __future__ import annotations

import gc
import logging
import os
from typing import Any

from celery import signals
from sqlalchemy.exc import DBAPIError

from eros.db.engine import check_database, dispose_all, get_engine
from eros.dreaming.services.gauges import DatabaseGauges
from eros.errors import ErosError
from eros.ops import logs, metrics
from eros.providers import make_providers
from eros.settings import Settings
from eros.tasks.base import forget_resources
from eros.tasks.broker import consumer_transport_options

log = logging.getLogger("eros.worker")


def _settings(sender: Any) -> Settings:
    """The settings of the app a signal came from (a worker or beat)."""
    app = getattr(sender, "app", None)
    settings = getattr(app, "eros_settings", None)
    if settings is None:
        from eros.settings import get_settings

        settings = get_settings()
    return settings


@signals.worker_process_init.connect
def _after_fork(**_: Any) -> None:
    """Pools and clients are per process: drop anything inherited from the parent (the
    database pools, the task resources and the embedding SDK's per-thread HTTP session)."""
    from eros.providers.embeddings import forget_inherited_sessions

    dispose_all()
    forget_resources()
    forget_inherited_sessions()
    # what the child inherited lives as long as it does: out of the collector's sight (a full
    # collection would walk it, and write to every page it sits on, unsharing them)
    gc.freeze()


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _structured_logs(logger: logging.Logger, **_: Any) -> None:
    from eros.settings import get_settings

    settings = get_settings()
    logs.install(logger, settings.eros_log_format, settings.eros_log_level,
                 settings.eros_log_third_party)


@signals.worker_init.connect
def _start_checks(sender: Any = None, **_: Any) -> None:
    """Refuse to start against an unreachable or unmigrated database, or a vector column of
    another size than EMBEDDING_DIM: failing loudly at start beats failing every task."""
    settings = _settings(sender)
    try:
        check_database(get_engine(settings), settings)
    except ErosError as err:
        log.critical("eros worker cannot start: %s", err)
        raise SystemExit(f"eros: error: {err}") from None
    # Building the providers here announces them in the log once, and imports the provider
    # SDKs before the pool forks, so children inherit them. Otherwise every prefork child
    # imports openai and voyageai on its first task (about 1.5 s of CPU each): a 16-process
    # pool on 2 cores spends its first ~15 s importing (measured by bench/drain_bench.py).
    make_providers(settings)
    # the SDKs are imported now: hold their loggers at WARNING again in case importing one
    # raised its level (openai reads OPENAI_LOG at import)
    logs.pin_third_party(settings.eros_log_third_party)
    if settings.eros_metrics_port:
        metrics.serve(settings.eros_metrics_port, DatabaseGauges(get_engine(settings), settings),
                      metrics.BrokerGauges(settings))


@signals.celeryd_after_setup.connect
def _train_guard(instance: Any = None, **_: Any) -> None:
    """The guard's meaning model for a live embedder, made before this worker consumes
    (after the logging is set up and before the pool forks or the consumer starts):
    the first worker of the fleet trains it under the training lock; the others find it
    stored, or being trained (they start without the layer: candidates wait ``unscreened``
    until it exists). Shipped for e5: nothing happens. A failure is logged and the worker
    starts anyway (``eros guard train`` or the next worker tries again)."""
    from eros.guard.services.guard_training import ensure_model
    from eros.providers import make_embedder
    from eros.providers.ratelimit import make_limiter

    settings = _settings(instance)
    try:
        report = ensure_model(settings, get_engine(settings), make_embedder(settings),
                              limiter=make_limiter(settings))
    except (ErosError, DBAPIError) as err:
        log.warning("memory guard meaning layer not trained at start-up (%s); candidates wait "
                    "unscreened until `eros guard train` or another worker makes it",
                    type(err).__name__)
        return
    if report.outcome == "busy":
        log.info("memory guard meaning layer: another process is training it; starting "
                 "without it (candidates wait unscreened until it is stored)")


@signals.celeryd_after_setup.connect
def _consumer_options(instance: Any = None, **_: Any) -> None:
    """The broker options that depend on the queues this worker consumes
    (:func:`eros.tasks.broker.consumer_transport_options`), applied after ``--queues`` and
    before the consumer connects (the connection reads them when it is made, and again on a
    reconnect)."""
    app = getattr(instance, "app", None)
    if app is None:
        return
    consumed = app.amqp.queues.consume_from or {}
    options = consumer_transport_options(_settings(instance), consumed)
    if not options:
        return
    app.conf.broker_transport_options = {**app.conf.broker_transport_options, **options}
    log.info("classify queue only: no unacked bookkeeping in Redis (a lost message's session "
             "is re-claimed when its claim goes stale)")


@signals.worker_before_create_process.connect
@signals.worker_ready.connect
def _freeze_start_up_objects(**_: Any) -> None:
    """Move what the worker built to start (imports, settings, the app, the pipeline, the
    guard's rules and models: ~240k objects) out of the cyclic collector's generations, before
    the prefork pool forks a child and once the worker is ready.

    Why: the tasks' own objects reach the oldest generation too (a gevent worker keeps 128
    tasks alive for seconds), and every time they add up to a quarter of it Python walks
    every object in it again — the start-up ones each time, though they never become
    garbage. A drain's full collections were a large part of a gevent worker's CPU (bench/
    RESULTS.md, issue 34). Celery also collects fully before every fork (its issue 2927): a
    4-process pool's start spent about a fifth of its CPU walking them, and frozen, the
    children share their pages (the ``gc.freeze()``-before-fork Python's documentation
    recommends). Frozen objects are still freed by reference counting; only a start-up object
    left in a garbage cycle later would stay allocated."""
    gc.collect()
    gc.freeze()


@signals.worker_process_shutdown.connect
def _forget_process(pid: int | None = None, **_: Any) -> None:
    metrics.process_exited(pid or os.getpid())
