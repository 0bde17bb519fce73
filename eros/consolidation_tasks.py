"""The consolidation tasks (``eros.find_consolidation_candidates``, ``eros.consolidate_user``),
registered on the app of :mod:`eros.worker`, which imports this module at its end.

Thin like the classify tasks: decode the argument, call the service, turn errors into retries
or records. The attempt counter lives in ``consolidation_state`` (a redelivery resets Celery's
own retry count, the database's survives), and the retry countdown comes from
:func:`eros.core.retry.decide`, so the longest backoff stays below the broker's visibility
timeout exactly as for classification.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import DBAPIError, OperationalError

from eros import metrics
from eros.celery_app import CONSOLIDATE_TASK, FIND_CONSOLIDATION_TASK
from eros.core.consolidation_reply import load_consolidation_prompt
from eros.core.retry import RetryPolicy, compute_backoff, decide
from eros.db.engine import get_engine
from eros.errors import PermanentError, TransientError
from eros.providers import make_providers
from eros.service.consolidate import Consolidator, consolidate, record_failure, start_pass
from eros.service.consolidation_finder import find_and_claim
from eros.worker import app, settings

log = logging.getLogger("eros.consolidation")
_consolidators: dict[int, Consolidator] = {}


def consolidator() -> Consolidator:
    """Per process (keyed by pid, so a forked child builds its own pools and clients)."""
    pid = os.getpid()
    if pid not in _consolidators:
        llm_settings = settings.model_copy(
            update={"dreaming_model": settings.consolidation_model_name})
        llm, embedder = make_providers(llm_settings)
        _consolidators[pid] = Consolidator(settings, get_engine(settings), llm, embedder,
                                           load_consolidation_prompt())
    return _consolidators[pid]


def _policy() -> RetryPolicy:
    return RetryPolicy(settings.dreaming_retry_backoff_secs,
                       settings.dreaming_retry_backoff_max_secs,
                       settings.consolidation_max_attempts)


@app.task(name=FIND_CONSOLIDATION_TASK, ignore_result=True)
def find_consolidation_candidates(batch: int | None = None) -> int:
    """Claim the users due for a pass and fan out one ``eros.consolidate_user`` each."""
    if settings.dreaming_disabled:
        log.info("dreaming disabled (DREAMING_DISABLED); not looking for consolidation work")
        return 0
    result = find_and_claim(consolidator().engine, settings, batch=batch)
    for user_id in result.claimed:
        consolidate_user.apply_async(args=[str(user_id)],
                                     queue=settings.eros_consolidate_queue)
    log.info("consolidation finder: measured %d users, %d below threshold, enqueued %d, "
             "%d left for the next run", result.measured, result.below_threshold,
             len(result.claimed), result.over_batch)
    return len(result.claimed)


@app.task(name=CONSOLIDATE_TASK, bind=True, ignore_result=True, max_retries=None)
def consolidate_user(self: Task, user_id: str) -> dict[str, Any]:
    """One consolidation pass for one user (JSON argument: the user id as a string)."""
    try:
        uid = uuid.UUID(str(user_id))
    except ValueError:
        log.error("consolidate_user: %r is not a user UUID", user_id)
        return {"user_id": user_id, "outcome": "invalid_argument"}
    c = consolidator()
    attempt = 1
    try:
        attempt = start_pass(c, uid)
        if attempt > settings.consolidation_max_attempts:
            record_failure(c, uid, "gave_up", f"attempt cap reached ({attempt - 1} attempts)")
            return {"user_id": user_id, "outcome": "gave_up"}
        report = consolidate(c, uid)
    except (TransientError, SoftTimeLimitExceeded) as err:
        if isinstance(err, SoftTimeLimitExceeded):
            err = TransientError("pass exceeded its soft time limit", provider="worker")
        decision = decide(_policy(), attempt, err.retry_after)
        if not decision.retry:
            record_failure(c, uid, "gave_up", f"{decision.reason}; last: {err}")
            return {"user_id": user_id, "outcome": "gave_up", "error": str(err)}
        record_failure(c, uid, "retrying", str(err), keep_claim=True)
        log.warning("user %s: transient %s error (%s); retry in %.1fs, %s", uid, err.provider,
                    err, decision.countdown, decision.reason)
        raise self.retry(args=[user_id], countdown=decision.countdown, exc=err) from None
    except PermanentError as err:
        record_failure(c, uid, "permanent_error", str(err))
        log.error("user %s: permanent %s error: %s", uid, err.provider, err)
        return {"user_id": user_id, "outcome": "permanent_error", "error": str(err)}
    except (OperationalError, DBAPIError) as err:
        countdown = compute_backoff(1, base=settings.dreaming_retry_backoff_secs,
                                    cap=settings.dreaming_retry_backoff_max_secs)
        log.warning("user %s: database error (%s); retry in %.1fs", uid, type(err).__name__,
                    countdown)
        raise self.retry(args=[user_id], countdown=countdown,
                         exc=TransientError(f"database error: {type(err).__name__}",
                                            provider="database")) from None
    _observe(report.outcome, report.merged, report.superseded, report.share_before,
             report.share_after)
    return {"user_id": user_id, "outcome": report.outcome, "merged": report.merged,
            "superseded": report.superseded, "llm_calls": report.llm_calls,
            "share_before": report.share_before, "share_after": report.share_after}


def _observe(outcome: str, merged: int, superseded: int, before: float | None,
             after: float | None) -> None:
    """Prometheus: runs by outcome, memories merged/superseded, share before and after."""
    metrics.CONSOLIDATION_RUNS.labels(outcome).inc()
    if merged:
        metrics.CONSOLIDATED.labels("merged").inc(merged)
    if superseded:
        metrics.CONSOLIDATED.labels("superseded").inc(superseded)
    for when, share in (("before", before), ("after", after)):
        if share is not None:
            metrics.NEAR_DUP_SHARE.labels(when).observe(share)
