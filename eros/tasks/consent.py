"""Consent tasks (issue 32): ``eros.allow_sensitive`` lifts a user's withdrawal of a
special-category label (recorded by ``forget --sensitive``), ``eros.relabel_sensitivity``
labels memories written without a label (before migration 0018), resumably. Contract: names
and JSON arguments; results are ids, labels and counts, never text. Both are idempotent."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import ALLOW_SENSITIVE_TASK, RELABEL_TASK
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.services import consent
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
        return {"outcome": "invalid_argument"}
    try:
        result = consent.allow_sensitive(self.resources.engine, uid, label)
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs={"user_id": user_id, "label": label})
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "allowed", "user_id": str(uid), **result}


@shared_task(base=ErosTask, bind=True, name=RELABEL_TASK, ignore_result=False)
def relabel_sensitivity(self: ErosTask, batch: int = 1000,
                        max_batches: int | None = None) -> dict[str, Any]:
    """Label unlabelled memories with the offline labeller from the stored cursor on;
    ``max_batches`` bounds one run (send it again to go on: it resumes)."""
    if (not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= 100_000
            or (max_batches is not None and (not isinstance(max_batches, int)
                                             or isinstance(max_batches, bool)
                                             or max_batches < 1))):
        log.error("relabel_sensitivity: batch must be 1..100000, max_batches >= 1 or null")
        return {"outcome": "invalid_argument"}
    try:
        result = consent.relabel(self.resources.engine, batch=batch, max_batches=max_batches)
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs={"batch": batch, "max_batches": max_batches})
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "relabelled", **result}
