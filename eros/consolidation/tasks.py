"""The consolidation tasks: ``eros.find_consolidation_candidates`` (beat) and
``eros.consolidate_user`` (one per user due). Contract: names and JSON arguments.

Thin like the classify tasks: decode the argument, call the service, turn errors into retries
or records. The attempt counter lives in ``consolidation_state`` (a redelivery resets Celery's
own retry count, the database's survives); the retry countdown comes from the base task's
policy, so the longest backoff stays below the broker's visibility timeout exactly as for
classification.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.exc import DBAPIError

from eros.consolidation.core.consolidation_reply import load_consolidation_prompt
from eros.consolidation.services.consolidate import (
    Consolidator,
    defer_for_guard,
    record_failure,
    start_pass,
)
from eros.consolidation.services.consolidation_bulk import combined, first_pass
from eros.consolidation.services.consolidation_finder import find_and_claim
from eros.core.names import CONSOLIDATE_TASK, FIND_CONSOLIDATION_TASK
from eros.core.outcomes import ConsolidationOutcome, task_result
from eros.core.retry import decide
from eros.errors import PermanentError, TransientError
from eros.ops import metrics
from eros.providers import make_providers
from eros.settings import SOFT_LIMIT_FRACTION
from eros.tasks.base import ErosTask, Resources, describe_database_error

log = logging.getLogger("eros.consolidation")


def make_consolidator(resources: Resources) -> Consolidator:
    """Consolidation: its own model (CONSOLIDATION_MODEL), the same embedder (one per worker
    process, shared by its tasks)."""
    settings = resources.settings
    llm, _ = make_providers(settings.model_copy(
        update={"dreaming_model": settings.consolidation_model_name}))
    return Consolidator(settings, resources.engine, llm, resources.embedder,
                        load_consolidation_prompt())


@shared_task(base=ErosTask, bind=True, name=FIND_CONSOLIDATION_TASK)
def find_consolidation_candidates(self: ErosTask, batch: int | None = None) -> int:
    """Claim the users due for a pass and fan out one ``eros.consolidate_user`` each."""
    settings = self.settings
    if settings.dreaming_disabled:
        log.info("dreaming disabled (DREAMING_DISABLED); not looking for consolidation work")
        return 0
    try:
        result = find_and_claim(self.resources.engine, settings, batch=batch)
    except DBAPIError as err:
        self.retry_database(err)
        return 0  # logged; the next finder run tries again
    for user_id in result.claimed:
        consolidate_user.apply_async(args=[str(user_id)],
                                     queue=settings.eros_consolidate_queue)
    log.info("consolidation finder: measured %d users, %d below threshold, enqueued %d, "
             "%d left for the next run", result.measured, result.below_threshold,
             len(result.claimed), result.over_batch)
    return len(result.claimed)


@shared_task(base=ErosTask, bind=True, name=CONSOLIDATE_TASK)
def consolidate_user(self: ErosTask, user_id: str) -> dict[str, Any]:
    """One consolidation pass for one user (JSON argument: the user id as a string)."""
    try:
        uid = uuid.UUID(str(user_id))
    except ValueError:
        log.error("consolidate_user: %r is not a user UUID", user_id)
        return task_result("invalid_argument", user_id=user_id)
    settings = self.settings
    c = self.resources.shared(make_consolidator)
    attempt = 1
    try:
        if defer_for_guard(c, uid):
            return task_result("guard_pending", user_id=user_id)
        started = start_pass(c, uid)
        if started is None:
            return task_result("no_memories", user_id=user_id)
        attempt = started
        if attempt > settings.consolidation_max_attempts:
            record_failure(c, uid, "gave_up", f"attempt cap reached ({attempt - 1} attempts)")
            return task_result("gave_up", user_id=user_id)
        # a large backlog (a first pass) is worked through chunk after chunk in this task,
        # its neighbours read once in bulk, for at most half the soft time limit; otherwise
        # one pass, as before. Either way the claim stays while a backlog is left.
        report = combined(first_pass(c, uid, budget_secs=settings.dreaming_claim_stale_secs
                                     * SOFT_LIMIT_FRACTION / 2))
    except (TransientError, SoftTimeLimitExceeded) as err:
        if isinstance(err, SoftTimeLimitExceeded):
            err = TransientError("pass exceeded its soft time limit", provider="worker")
        decision = decide(self.policy(settings.consolidation_max_attempts), attempt,
                          err.retry_after)
        if not decision.retry:
            record_failure(c, uid, "gave_up", f"{decision.reason}; last: {err}")
            return task_result("gave_up", user_id=user_id, error=str(err))
        record_failure(c, uid, "retrying", str(err), keep_claim=True)
        log.warning("user %s: transient %s error (%s); retry in %.1fs, %s", uid, err.provider,
                    err, decision.countdown, decision.reason)
        raise self.retry(args=[user_id], countdown=decision.countdown, exc=err) from None
    except PermanentError as err:
        record_failure(c, uid, "permanent_error", str(err))
        log.error("user %s: permanent %s error: %s", uid, err.provider, err)
        return task_result("permanent_error", user_id=user_id, error=str(err))
    except DBAPIError as err:
        self.retry_database(err)
        error = f"database error: {describe_database_error(err)}"
        record_failure(c, uid, "permanent_error", error)
        return task_result("permanent_error", user_id=user_id, error=error)
    _observe(report.outcome, report.merged, report.superseded, report.share_before,
             report.share_after)
    more = report.backlog and report.compared > 0 and \
        report.outcome in ("consolidated", "nothing_to_do")
    if more:  # the next chunk of a backlog: the pass kept the claim for it
        consolidate_user.apply_async(args=[user_id], queue=settings.eros_consolidate_queue)
    return task_result(report.outcome, user_id=user_id, merged=report.merged,
                       superseded=report.superseded, llm_calls=report.llm_calls,
                       share_before=report.share_before, share_after=report.share_after,
                       compared=report.compared, backlog=report.backlog, next_chunk=more)


def _observe(outcome: ConsolidationOutcome, merged: int, superseded: int, before: float | None,
             after: float | None) -> None:
    """Prometheus: runs by outcome, memories merged/superseded, share before and after."""
    metrics.registry().CONSOLIDATION_RUNS.labels(outcome).inc()
    if merged:
        metrics.registry().CONSOLIDATED.labels("merged").inc(merged)
    if superseded:
        metrics.registry().CONSOLIDATED.labels("superseded").inc(superseded)
    for when, share in (("before", before), ("after", after)):
        if share is not None:
            metrics.registry().NEAR_DUP_SHARE.labels(when).observe(share)
