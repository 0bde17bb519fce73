"""The erasure tasks (issue 14): ``eros.forget_user`` and ``eros.forget_memory``. Contract:
names and JSON arguments. Both keep their result (counts and ids, never text) so the product
can confirm the erasure; both are idempotent, so a redelivery or a retry is harmless.

Every erasure is recorded in ``engine.erasure_log`` (issue 26): ``done`` with its counts in
the erasure's own transaction, or ``failed`` with an error code when it cannot succeed. A
transient database error (lock timeout, serialization failure, deadlock, dropped connection)
is retried for as long as it lasts, the retry carrying every argument by name whatever form
the message used (``args=[user]``, ``kwargs={"user_id": …}``, ``instance_id``/``sessions``
either way); anything else is recorded ``failed`` and counted in
``eros_erasures_failed_total``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import FORGET_MEMORY_TASK, FORGET_USER_TASK
from eros.services import erasure, forget
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.worker")


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _run(task: ErosTask, request: erasure.Request, body: Callable[[], dict[str, Any]],
         retry_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run one erasure: retry a transient database error with every argument by name (and no
    positional ones); record anything else as failed."""
    try:
        return body()
    except DBAPIError as err:
        task.retry_database(err, args=(), kwargs=retry_kwargs)  # raises Retry if transient
        erasure_id = erasure.record_failed(task.resources.engine, request, err)
        return {"outcome": "error", "error": describe_database_error(err),
                "erasure_id": erasure_id}
    except Exception as err:
        erasure.record_failed(task.resources.engine, request, err)
        raise


@shared_task(base=ErosTask, bind=True, name=FORGET_USER_TASK, ignore_result=False)
def forget_user(self: ErosTask, user_id: str, instance_id: str | None = None,
                sessions: bool = False) -> dict[str, Any]:
    """Forget a user (``instance_id`` null) or one relationship; counts of what was removed."""
    uid = _uuid(user_id)
    iid = _uuid(instance_id) if instance_id is not None else None
    if uid is None or (instance_id is not None and iid is None):
        log.error("forget_user: user_id/instance_id must be UUIDs")
        return {"outcome": "invalid_argument"}
    request = forget.user_request(uid, instance_id=iid, task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_user(
        self.resources.engine, uid, instance_id=iid, sessions=bool(sessions), request=request),
        {"user_id": user_id, "instance_id": instance_id, "sessions": sessions})
    if result.get("outcome") == "error":
        return result
    return {"outcome": "forgotten", "user_id": str(uid),
            "instance_id": str(iid) if iid else None, **result}


@shared_task(base=ErosTask, bind=True, name=FORGET_MEMORY_TASK, ignore_result=False)
def forget_memory(self: ErosTask, memory_id: str) -> dict[str, Any]:
    """Forget one memory, its lineage and what was derived from it; counts of what was
    removed."""
    mid = _uuid(memory_id)
    if mid is None:
        log.error("forget_memory: memory_id must be a UUID")
        return {"outcome": "invalid_argument"}
    request = forget.memory_request(mid, task_id=self.request.id)
    result = _run(self, request, lambda: forget.forget_memory(
        self.resources.engine, mid, request=request), {"memory_id": memory_id})
    if result.get("outcome") == "error":
        return result
    return {"outcome": "forgotten", "memory_id": str(mid), **result}
