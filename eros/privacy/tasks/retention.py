"""The retention task ``eros.apply_retention`` (beat, every RETENTION_INTERVAL_SECS, only
when MESSAGE_RETENTION_DAYS or HISTORY_RETENTION_DAYS is set; no arguments). Idempotent: a
retry or a redelivery deletes what is still due."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import RETENTION_TASK
from eros.core.outcomes import task_result
from eros.privacy.services import retention
from eros.tasks.base import ErosTask, describe_database_error


@shared_task(base=ErosTask, bind=True, name=RETENTION_TASK)
def apply_retention(self: ErosTask) -> dict[str, Any]:
    """Delete what is past its retention; rows deleted by table."""
    try:
        return retention.apply(self.resources.engine, self.settings)
    except DBAPIError as err:
        self.retry_database(err, args=(), kwargs={})
        return task_result("database_error", error=describe_database_error(err))
