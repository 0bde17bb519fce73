"""The re-embedding task ``eros.reembed_memories`` (``eros reembed`` in a worker).

It works in slices of at most half the soft time limit and sends itself again while rows are
left, so a long re-embed never runs into the time limits and a killed worker loses at most
the batch in flight (progress is in the rows). One run at a time: a message arriving while
another run holds the lock just ends.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import REEMBED_TASK
from eros.core.outcomes import task_result
from eros.errors import PermanentError, TransientError
from eros.providers import make_embedder
from eros.providers.ratelimit import make_limiter
from eros.recall.services.reembed import ReembedBusy, Reembedder
from eros.settings import SOFT_LIMIT_FRACTION
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.reembed")


@shared_task(base=ErosTask, bind=True, name=REEMBED_TASK)
def reembed_memories(self: ErosTask, model: str | None = None) -> dict[str, Any]:
    """Re-embed memories not on ``model`` (default EMBEDDING_MODEL) at EMBEDDING_DIM."""
    settings = self.settings
    embedder = make_embedder(settings, model=model)
    worker = Reembedder(settings, self.resources.engine, embedder, make_limiter(settings))
    budget = settings.dreaming_claim_stale_secs * SOFT_LIMIT_FRACTION / 2
    try:
        report = worker.run(max_seconds=budget)
    except ReembedBusy:
        log.info("re-embed: another run holds the lock; this message ends")
        return task_result("busy")
    except TransientError as err:
        countdown = max(settings.dreaming_retry_backoff_secs, err.retry_after or 0.0)
        log.warning("re-embed: transient %s error; again in %.0fs", err.provider, countdown)
        raise self.retry(kwargs={"model": model}, countdown=countdown, exc=err) from None
    except PermanentError as err:
        log.error("re-embed: permanent %s error (status %s); stopped", err.provider, err.status)
        return task_result("permanent_error", status=err.status)
    except DBAPIError as err:
        self.retry_database(err, kwargs={"model": model})
        return task_result("database_error", error=describe_database_error(err))
    if not report.finished:
        reembed_memories.apply_async(kwargs={"model": model},
                                     queue=settings.eros_consolidate_queue)
    return task_result("finished" if report.finished else "continued", model=report.model,
                       done=report.done, batches=report.batches)
