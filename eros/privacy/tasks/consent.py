"""Consent tasks: ``eros.allow_sensitive`` lifts a user's withdrawal of a
special-category label (recorded by ``forget --sensitive``), ``eros.relabel_sensitivity``
labels memories written without a label (before migration 0018), resumably, with the
offline labeller or the model. Contract: names
and JSON arguments; results are ids, labels and counts, never text. Both are idempotent."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import ALLOW_SENSITIVE_TASK, RELABEL_TASK
from eros.core.outcomes import task_result
from eros.core.sensitivity import OFFLINE_LABELLER, RELABEL_BATCH, SENSITIVITY_LABELS
from eros.errors import ConfigError, PermanentError, TransientError
from eros.privacy.services import consent
from eros.privacy.tasks import purge
from eros.providers.ratelimit import make_limiter
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.worker")


@shared_task(base=ErosTask, bind=True, name=ALLOW_SENSITIVE_TASK, ignore_result=False)
def allow_sensitive(self: ErosTask, user_id: str, label: str) -> dict[str, Any]:
    """Store memories with ``label`` (one of the labels, or ``"all"``) for the user again."""
    try:
        uid = uuid.UUID(str(user_id))
    except ValueError:
        uid = None
    if uid is None or not isinstance(label, str) or (
            label != "all" and label not in SENSITIVITY_LABELS):
        log.error("allow_sensitive: user_id must be a UUID and label a label or 'all'")
        return task_result("invalid_argument")
    try:
        result = consent.allow_sensitive(self.resources.engine, uid, label)
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs={"user_id": user_id, "label": label})
        return task_result("error", error=describe_database_error(err))
    return task_result("allowed", user_id=str(uid), **result)


@shared_task(base=ErosTask, bind=True, name=RELABEL_TASK, ignore_result=False)
def relabel_sensitivity(self: ErosTask, batch: int = RELABEL_BATCH,
                        max_batches: int | None = None,
                        labeller: str = OFFLINE_LABELLER) -> dict[str, Any]:
    """Label unlabelled memories, then the indexed turns, from the labeller's stored cursors
    on: ``offline`` (cue words) or ``model`` (DREAMING_MODEL through the global LLM limits, at
    most 20 memories or turns a call); ``max_batches`` bounds one run (send it again to go
    on: it resumes). A transient provider error is retried (the cursor keeps what was
    written)."""
    kwargs = {"batch": batch, "max_batches": max_batches, "labeller": labeller}
    settings = self.settings
    try:
        llm = limiter = None
        if labeller == consent.MODEL:
            llm, limiter = self.resources.providers[0], make_limiter(settings)
        result = consent.relabel(self.resources.engine, batch=batch, max_batches=max_batches,
                                 labeller=labeller,  # type: ignore[arg-type]
                                 settings=settings, llm=llm, limiter=limiter,
                                 after_erasure=lambda erasure_id: purge.purge_after_erasure(
                                     self.app, self.resources.engine, erasure_id))
    except ConfigError as err:
        log.error("relabel_sensitivity: %s", err)
        return task_result("error", error=str(err))
    except TransientError as err:
        countdown = max(settings.dreaming_retry_backoff_secs, err.retry_after or 0.0)
        log.warning("relabel_sensitivity: transient %s error; again in %.0fs", err.provider,
                    countdown)
        raise self.retry(args=(), kwargs=kwargs, countdown=countdown, exc=err) from None
    except PermanentError as err:
        log.error("relabel_sensitivity: permanent %s error (status %s); stopped",
                  err.provider, err.status)
        return task_result("permanent_error", status=err.status)
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs=kwargs)
        return task_result("error", error=describe_database_error(err))
    return task_result("relabelled", labeller=labeller, **result)
