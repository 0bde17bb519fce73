"""The erasure tasks (issue 14): ``eros.forget_user`` and ``eros.forget_memory``. Contract:
names and JSON arguments. Both keep their result (counts and ids, never text) so the product
can confirm the erasure; both are idempotent, so a redelivery or a retry is harmless."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import DBAPIError

from eros.core.names import FORGET_MEMORY_TASK, FORGET_USER_TASK
from eros.core.sensitivity import SENSITIVITY_LABELS
from eros.services import forget
from eros.tasks.base import ErosTask, describe_database_error

log = logging.getLogger("eros.worker")


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


@shared_task(base=ErosTask, bind=True, name=FORGET_USER_TASK, ignore_result=False)
def forget_user(self: ErosTask, user_id: str, instance_id: str | None = None,
                sessions: bool = False, sensitive: bool | str | None = None) -> dict[str, Any]:
    """Forget a user (``instance_id`` null) or one relationship; counts of what was removed.
    ``sensitive``: only the user's memories with a special-category label — ``true`` (or
    ``"all"``) for every label, a label (``"health"``, ``"crisis"``, …) for one (issue 26)."""
    uid = _uuid(user_id)
    iid = _uuid(instance_id) if instance_id is not None else None
    if uid is None or (instance_id is not None and iid is None):
        log.error("forget_user: user_id/instance_id must be UUIDs")
        return {"outcome": "invalid_argument"}
    label = _sensitive_label(sensitive)
    if label == "invalid" or (label is not None and (iid is not None or sessions)):
        log.error("forget_user: sensitive must be true, 'all' or a label, without "
                  "instance_id or sessions")
        return {"outcome": "invalid_argument"}
    try:
        if label is not None:
            counts = forget.forget_sensitive(self.resources.engine, uid,
                                             None if label == "all" else label)
            return {"outcome": "forgotten", "user_id": str(uid), "sensitive": label,
                    **counts}
        counts = forget.forget_user(self.resources.engine, uid, instance_id=iid,
                                    sessions=bool(sessions))
    except DBAPIError as err:
        self.retry_database(err, kwargs={"instance_id": instance_id, "sessions": sessions,
                                         "sensitive": sensitive})
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "forgotten", "user_id": str(uid),
            "instance_id": str(iid) if iid else None, **counts}


def _sensitive_label(value: bool | str | None) -> str | None:
    """None (not a sensitive erasure), ``all``, a label, or ``invalid``."""
    if value is None or value is False:
        return None
    if value is True:
        return "all"
    label = str(value).strip().lower()
    return label if label == "all" or label in SENSITIVITY_LABELS else "invalid"


@shared_task(base=ErosTask, bind=True, name=FORGET_MEMORY_TASK, ignore_result=False)
def forget_memory(self: ErosTask, memory_id: str) -> dict[str, Any]:
    """Forget one memory and its lineage; counts of what was removed."""
    mid = _uuid(memory_id)
    if mid is None:
        log.error("forget_memory: memory_id must be a UUID")
        return {"outcome": "invalid_argument"}
    try:
        counts = forget.forget_memory(self.resources.engine, mid)
    except DBAPIError as err:
        self.retry_database(err)
        return {"outcome": "error", "error": describe_database_error(err)}
    return {"outcome": "forgotten", "memory_id": str(mid), **counts}
